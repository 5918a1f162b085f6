"""The stress suite: each workload behind a Service, simulated under built-in stresses, with a
verdict per stress against thresholds. Runs fan out over local processes.

Without a scenario, the workload gets a default load model: its app starts in 10 s, takes 10
requests per second per replica on "/", and each costs half its CPU request over that rate
(50 % utilization at base load). A scenario's behaviour and traffic replace those defaults.
"""

from __future__ import annotations

import copy
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from probesim.engine import simulate
from probesim.model.duration import parse_ms
from probesim.model.kubernetes import Service, Workload
from probesim.model.scenario import Scenario

STRESSES = (
    "baseline",
    "traffic-x2",
    "traffic-x3",
    "start-x2",
    "dependency-hangs",
    "one-pod-500",
    "stop-the-world-2s",
    "cpu-limit-at-request",
)
DURATION_MS = 5 * 60_000
EVENT_AT_MS = 2 * 60_000


@dataclass(frozen=True)
class StressThresholds:
    max_error_percent: float = 1.0
    max_restarts: int = 0
    min_ready_fraction: float = 0.5

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StressThresholds:
        return cls(
            max_error_percent=float(d.get("maxErrorPercent", cls.max_error_percent)),
            max_restarts=int(d.get("maxRestarts", cls.max_restarts)),
            min_ready_fraction=float(d.get("minReadyFraction", cls.min_ready_fraction)),
        )


@dataclass(frozen=True)
class StressResult:
    workload: str
    stress: str
    error_percent: float
    restarts: int
    min_ready_fraction: float
    no_endpoint_s: float
    verdict: str  # pass | fail | skipped
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "stress": self.stress,
            "errorPercent": round(self.error_percent, 2),
            "restarts": self.restarts,
            "minReadyFraction": round(self.min_ready_fraction, 3),
            "noEndpointSeconds": self.no_endpoint_s,
            "verdict": self.verdict,
            "why": self.why,
        }


def base_scenario(w: Workload, services: list[Service], given: Scenario | None) -> dict[str, Any]:
    """The workload alone (as a Scenario document), with the given scenario's behaviour and
    traffic, or the defaults."""
    if given is not None and given.spec.traffic:
        doc = given.model_dump(mode="json", by_alias=True, exclude_none=True)
        doc["spec"].update(duration=f"{max(DURATION_MS, given.spec.duration) // 1000}s", actions=[])
        return doc
    containers = {}
    for c in w.pod_spec.containers:
        request = (c.resources.requests.cpu or c.resources.limits.cpu or 100) / 1000
        containers[c.name] = {"start": "10s", "routes": {"/": {"cpu": f"{50 * request:g}ms"}}}
    return {
        "name": f"{w.name}-stress",
        "spec": {
            "duration": f"{DURATION_MS // 1000}s",
            "behavior": {w.name: {"containers": containers}},
            "traffic": [
                {
                    "service": services[0].name,
                    "path": "/",
                    "rate": 10.0 * max(w.spec.replicas, 1),
                    "start": "1m",
                }
            ],
        },
        "workloads": [w.model_dump(mode="json", by_alias=True, exclude_none=True)],
        "services": [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in services],
    }


def apply(base: dict[str, Any], w: Workload, stress: str) -> Scenario | None:
    """The base scenario under one stress; None when the stress does not apply."""
    doc = copy.deepcopy(base)
    spec = doc["spec"]
    containers = spec.setdefault("behavior", {}).setdefault(w.name, {}).setdefault("containers", {})
    for c in w.pod_spec.containers:
        containers.setdefault(c.name, {})
    if stress in ("traffic-x2", "traffic-x3"):
        k = 2.0 if stress.endswith("2") else 3.0
        for t in spec.get("traffic", []):
            for key in ("rate", "startRate"):
                if t.get(key) is not None:
                    t[key] *= k
            for st in t.get("stages", []):
                st["target"] *= k
    elif stress == "start-x2":
        for b in containers.values():
            b["start"] = f"{2 * parse_ms(b.get('start', '0s'))}ms"
    elif stress == "dependency-hangs":
        if not spec.get("dependencies"):
            return None
        for d in spec["dependencies"].values():
            d.setdefault("faults", []).append({"delay": "1h", "percent": 50})
    elif stress == "one-pod-500":
        paths = {t.get("path", "/"): 500 for t in spec.get("traffic", [])}
        bad = {n: {**b, "paths": {**b.get("paths", {}), **paths}} for n, b in containers.items()}
        spec["behavior"][w.name].setdefault("pods", []).append({"ordinals": [0], "containers": bad})
    elif stress == "stop-the-world-2s":
        for b in containers.values():
            b.setdefault("episodes", []).append({"kind": "hang", "at": f"{EVENT_AT_MS}ms", "for": "2s"})
    elif stress == "cpu-limit-at-request":
        wdoc = next(x for x in doc["workloads"] if x["metadata"]["name"] == w.name)
        pod = wdoc["spec"]["template"]["spec"]
        if not any((c.get("resources", {}).get("requests") or {}).get("cpu") for c in pod["containers"]):
            return None
        for c in pod["containers"]:
            res = c.setdefault("resources", {})
            cpu = (res.get("requests") or {}).get("cpu")
            if cpu is not None:
                res.setdefault("limits", {})["cpu"] = cpu
    elif stress != "baseline":
        raise ValueError(stress)
    return Scenario.model_validate(doc)


def run_one(args: tuple[str, str, Scenario | None, StressThresholds]) -> StressResult:
    name, stress, sc, th = args
    if sc is None:
        return StressResult(name, stress, 0.0, 0, 1.0, 0.0, "skipped", "does not apply to this workload")
    r = simulate(sc)
    done = sum(x.ok + x.failed_total for x in r.routes)
    errors = 100.0 * sum(x.failed_total for x in r.routes) / done if done else 0.0
    w = r.workload(name)
    ready = r.series[f"workload.{name}.ready"] / max(w.replicas, 1)
    active = r.time_ms >= 60_000
    min_ready = float(ready[active].min()) if active.any() else 1.0
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    why = []
    if errors > th.max_error_percent:
        why.append(f"errors {errors:.1f} % > {th.max_error_percent:g} %")
    if w.total_restarts > th.max_restarts:
        why.append(f"{w.total_restarts} restarts > {th.max_restarts}")
    if min_ready < th.min_ready_fraction:
        why.append(f"ready fell to {100 * min_ready:.0f} % < {100 * th.min_ready_fraction:.0f} %")
    return StressResult(
        name, stress, errors, w.total_restarts, min_ready, gap, "fail" if why else "pass", "; ".join(why)
    )


def stress_suite(
    workloads: list[Workload],
    services: list[Service],
    given: Scenario | None,
    th: StressThresholds,
    processes: int | None = None,
) -> list[StressResult]:
    jobs = []
    for w in workloads:
        selected = [
            s
            for s in services
            if s.spec.selector and all(w.pod_labels.get(k) == v for k, v in s.spec.selector.items())
        ]
        if not selected:
            continue
        base = base_scenario(w, selected, given)
        jobs += [(w.name, stress, apply(base, w, stress), th) for stress in STRESSES]
    workers = processes or min(len(jobs), os.cpu_count() or 1) or 1
    if workers <= 1 or len(jobs) <= 1:
        return [run_one(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_one, jobs))
