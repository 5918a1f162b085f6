"""The verdicts of the stress suite (analysis/stress.py): the thresholds a stress's run is judged
against, a stress's result, and how a run is judged: after the start-up ramp (the faults), or from
a rolling update's start on (the rollouts). The node stresses' verdicts are node_stresses.py's.

The ramp ends the first time all replicas were Ready, or at ``warmUp``: failed requests and the
lowest ready fraction count from then on, restarts over the whole run, and a workload that never
has all replicas Ready fails. A fault that fails requests itself is judged on restarts and
readiness only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from probesim.cost import DEFAULT_MAX_COST
from probesim.kube.rolling import rolling_update
from probesim.model.duration import format_ms, parse_ms
from probesim.model.kubernetes import Workload
from probesim.results.result import CAUSES, Result


@dataclass(frozen=True)
class StressThresholds:
    max_error_percent: float = 1.0
    max_restarts: int = 0
    min_ready_fraction: float = 0.5
    warm_up_ms: int | None = None  # judged from then on instead of from all replicas Ready

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StressThresholds:
        warm = d.get("warmUp")
        return cls(
            max_error_percent=float(d.get("maxErrorPercent", cls.max_error_percent)),
            max_restarts=int(d.get("maxRestarts", cls.max_restarts)),
            min_ready_fraction=float(d.get("minReadyFraction", cls.min_ready_fraction)),
            warm_up_ms=parse_ms(warm) if warm is not None else None,
        )


@dataclass(frozen=True)
class StressResult:
    index: int  # the workload's position among the manifests' workloads
    workload: str  # Deployment/frontend
    namespace: str
    stress: str
    error_percent: float
    restarts: int
    min_ready_fraction: float
    no_endpoint_s: float
    verdict: str  # pass | fail | skipped
    why: str = ""
    ramp_ms: int | None = None  # when all replicas were first Ready (the judged span starts)

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "namespace": self.namespace,
            "stress": self.stress,
            "errorPercent": round(self.error_percent, 2),
            "restarts": self.restarts,
            "minReadyFraction": round(self.min_ready_fraction, 3),
            "noEndpointSeconds": self.no_endpoint_s,
            "rampSeconds": None if self.ramp_ms is None else self.ramp_ms / 1000,
            "verdict": self.verdict,
            "why": self.why,
        }


def too_costly(cost: Any) -> str:
    """Why a stress is not run: its estimated cost (``cost``, a probesim.cost estimate)."""
    return (
        f"too costly to simulate: {cost.explain()}, more than {DEFAULT_MAX_COST:,} "
        "(probesim run's --max-cost default)"
    )


def request_counts(r: Result, judged: Any) -> tuple[int, int]:
    """Requests answered and failed over the ``judged`` steps."""
    ok = failed = 0
    for route in r.routes:
        ok += int(r.series[f"route.{route.name}.ok"][judged].sum())
        failed += sum(int(r.series[f"route.{route.name}.{c}"][judged].sum()) for c in CAUSES)
    return ok, failed


def error_percent(r: Result, judged: Any) -> float:
    """Failed requests as a percentage of those answered, over the ``judged`` steps."""
    ok, failed = request_counts(r, judged)
    return 100.0 * failed / (ok + failed) if ok + failed else 0.0


def judge_after_ramp(
    index: int,
    shown: str,
    namespace: str,
    stress: str,
    r: Result,
    w: Workload,
    th: StressThresholds,
    errors_judged: bool = True,
    pause: tuple[int, int] | None = None,
) -> StressResult:
    """A fault's run, judged after the start-up ramp (``errors_judged``: False for a fault that
    fails requests itself, judged on restarts and readiness only). ``pause``: the span (from, to,
    in ms) every replica is paused at once, whose failed requests are the pause's own, not the
    settings': reported, judged without them."""
    summary = r.workload(w.name)
    ready = r.series[f"workload.{w.name}.ready"]
    desired = np.maximum(r.series[f"workload.{w.name}.desired"], 1)
    ramp = summary.all_ready_ms if th.warm_up_ms is None else th.warm_up_ms
    judged = r.time_ms >= (ramp if ramp is not None else r.duration_ms)
    errors = error_percent(r, judged)
    own = errors
    if pause is not None:
        own = error_percent(r, judged & ((r.time_ms < pause[0]) | (r.time_ms >= pause[1])))
    min_ready = float((ready[judged] / desired[judged]).min()) if judged.any() else 0.0
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    why = []
    if ramp is None:
        why.append(f"never had all {w.spec.replicas} replicas Ready in {format_ms(r.duration_ms)}")
    after = f" after the start-up ramp ({format_ms(ramp)})" if ramp else ""
    if own > th.max_error_percent and errors_judged and ramp is not None:
        beside = " beside the pause's own" if pause is not None and own != errors else ""
        why.append(f"errors {own:.1f} % > {th.max_error_percent:g} %{after}{beside}")
    if summary.total_restarts > th.max_restarts:
        why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
    if ramp is not None and min_ready < th.min_ready_fraction:
        why.append(f"ready fell to {100 * min_ready:.0f} % < {100 * th.min_ready_fraction:.0f} %{after}")
    verdict = "fail" if why else "pass"
    if pause is not None and errors > th.max_error_percent >= own and errors_judged and ramp is not None:
        why.append(f"the {errors:.1f} % failed include the {format_ms(pause[1] - pause[0])} pause's own, "
                   f"with every replica paused at once (no setting serves them): judged without them, "
                   f"{own:.1f} %")  # fmt: skip
    return StressResult(
        index,
        shown,
        namespace,
        stress,
        errors,
        summary.total_restarts,
        min_ready,
        gap,
        verdict,
        "; ".join(why),
        ramp,
    )


def judge_rollout(
    index: int, shown: str, namespace: str, stress: str, r: Result, w: Workload, th: StressThresholds
) -> StressResult:
    """A rollout stress, judged from the rollout's start to the run's end (new pods still warming
    up after ``kubectl rollout status`` says done count): failed requests, the fewest available
    replicas against the controller's floor (replicas − maxUnavailable, as it rounds), and for a
    release that behaves as the last one, restarts and whether it completed; a release that never
    becomes Ready must stall, the old pods serving on."""
    summary = r.workload(w.name)
    ro = rolling_update(w)
    assert ro is not None
    floor = ro.replicas - ro.unavailable
    rec = next((x for x in r.rollouts if x.workload == w.name), None)
    if rec is None:
        return StressResult(
            index, shown, namespace, stress, 0.0, 0, 1.0, 0.0, "skipped", "no rollout started"
        )
    judged = r.time_ms >= rec.start_ms
    errors = error_percent(r, judged)
    ready = r.series[f"workload.{w.name}.ready"][judged]
    min_ready = float(ready.min()) / max(ro.replicas, 1) if judged.any() else 0.0
    at = f"from the rollout at {format_ms(rec.start_ms)} on"
    why = []
    if summary.all_ready_ms is None or summary.all_ready_ms > rec.start_ms:
        why.append(f"never had all {w.spec.replicas} replicas Ready before the rollout")
    # A StatefulSet of one replica is down while its pod is replaced, whatever its settings: the
    # errors of that outage are not the settings' failure (the restarts and completion still are).
    single = w.kind == "StatefulSet" and ro.replicas == 1
    if errors > th.max_error_percent and not single:
        why.append(f"errors {errors:.1f} % > {th.max_error_percent:g} % {at}")
    if rec.min_available < floor:
        why.append(f"available fell to {rec.min_available} < {floor} (replicas − maxUnavailable) during it")
    if stress == "rollout":
        if summary.total_restarts > th.max_restarts:
            why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
        if rec.outcome != "complete":
            why.append(f"the rollout did not complete in {format_ms(r.duration_ms - rec.start_ms)}")
    elif rec.outcome == "complete":
        why.append("a release that never becomes Ready rolled out to every replica")
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    verdict = "fail" if why else "pass"
    if single and stress == "rollout-never-ready" and not why:
        verdict = "skipped"
        why = ["a single instance is down while its pod is replaced: a release that never becomes Ready "
               "is an outage whatever the settings"]  # fmt: skip
    restarts = summary.total_restarts
    return StressResult(
        index,
        shown,
        namespace,
        stress,
        errors,
        restarts,
        min_ready,
        gap,
        verdict,
        "; ".join(why),
        rec.start_ms,
    )
