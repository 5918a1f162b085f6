"""Telemetry of a known behaviour, written as a cluster's tools write it: Prometheus API answers
to fit's queries (the app's request histogram, cAdvisor's CPU, kube-state-metrics' ready and
restarts), ``kubectl get pods -o json`` and k6's ``--out json`` lines.

The behaviour is the capacity model's (docs/scenarios.md): a request costs ``cpu`` of CPU and
``wall`` of waiting, its CPU stretched by 1/(1 - ρ), spread log-normally (mean 1, log-sd ``sigma``);
the containers' CPU is an idle floor plus what the requests use, with seeded noise."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

T0 = 1_764_000_000.0  # the period's start (Unix s)
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)  # OTel's

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: shop/web:1.4
          ports: [{containerPort: 8080, name: http}]
          resources: {requests: {cpu: 500m}, limits: {cpu: "1"}}
          readinessProbe:
            httpGet: {path: /healthz, port: http}
            periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
"""


@dataclass(frozen=True)
class Truth:
    start_s: float = 20.0
    cpu_s: float = 0.020
    wall_s: float = 0.030
    sigma: float = 0.3
    idle_cores: float = 0.05
    error_share: float = 0.0
    pods: int = 3
    cores_per_pod: float = 1.0
    minutes: int = 30
    step_s: float = 15.0
    probe_wall_s: float | None = None  # the readiness probe's path waits this (prober series)
    throttle_peak: float = 0.0  # throttled share of CFS periods at the peak load (cAdvisor series)
    replicas: int | None = None  # the Deployment's replica series (kube-state-metrics)


PROBE_CPU_S = 0.001  # the probe path's CPU, as the generated scenario costs any path ('*')


def _matrix(series: list[tuple[dict[str, str], list[float]]], times: list[float]) -> dict[str, object]:
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": labels,
                    "values": [[t, repr(float(v))] for t, v in zip(times, values, strict=True)],
                }
                for labels, values in series
            ],
        },
    }


def _cdf(x: float, mean: float, sigma: float) -> float:
    return NormalDist().cdf((math.log(x / mean) + sigma**2 / 2) / sigma)


def write_saved(folder: Path, truth: Truth, seed: int = 7) -> dict[str, float]:
    """The answers to fit's queries over the period, ``<name>.json`` each; the per-sample rates
    and CPU utilization returned for the test to reason with."""
    rng = np.random.default_rng(seed)
    n = int(truth.minutes * 60 / truth.step_s)
    times = [T0 + i * truth.step_s for i in range(n)]
    rate = 30 + 20 * np.sin(np.arange(n) / n * 4 * math.pi)  # 10 to 50 requests/s over all pods
    cpu = truth.idle_cores + rate * truth.cpu_s + rng.normal(0, 0.005, n)
    rho = np.clip(cpu / (truth.pods * truth.cores_per_pod), 0, 0.95)
    # Throttled in a share of periods growing with the load; a throttled request waits half a
    # 100 ms period, as the capacity model has it.
    throttled = truth.throttle_peak * (rate - rate.min()) / (rate.max() - rate.min())
    mean = truth.wall_s + truth.cpu_s / (1 - rho) + throttled * 0.05
    route = {"http_route": "/api"}
    buckets = [
        ({**route, "le": repr(le)}, [r * _cdf(le, m, truth.sigma) for r, m in zip(rate, mean, strict=True)])
        for le in BUCKETS
    ] + [({**route, "le": "+Inf"}, list(rate))]
    answers = {
        "requests": [(route, list(rate))],
        "errors": [(route, list(rate * truth.error_share))],
        "latency_sum": [(route, list(rate * mean))],
        "buckets": buckets,
        "cpu": [({}, list(cpu))],
        "ready": [({}, [float(truth.pods)] * n)],
        "restarts": [({}, [0.0] * n)],
    }
    if truth.throttle_peak:
        periods = np.full(n, 10.0 * truth.pods)  # each pod ran in every 100 ms period
        answers["cfs_periods"] = [({}, list(periods))]
        answers["throttled_periods"] = [({}, list(periods * throttled))]
    if truth.probe_wall_s is not None:
        probe_mean = truth.probe_wall_s + PROBE_CPU_S / (1 - rho) + throttled * 0.05
        runs = np.full(n, float(truth.pods))  # a readiness probe a second on each pod
        kind = {"probe_type": "Readiness"}
        answers["probe_runs"] = [(kind, list(runs))]
        answers["probe_seconds"] = [(kind, list(runs * probe_mean))]
    if truth.replicas is not None:
        for name in ("replicas", "replicas_desired", "replicas_available"):
            answers[name] = [({}, [float(truth.replicas)] * n)]
        answers["replicas_unavailable"] = [({}, [float(truth.replicas - truth.pods)] * n)]
    folder.mkdir(parents=True, exist_ok=True)
    for name, series in answers.items():
        (folder / f"{name}.json").write_text(json.dumps(_matrix(series, times)), encoding="utf-8")
    return {"max_rho": float(rho.max())}


def _rfc3339(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_pods(path: Path, truth: Truth, ready_after: tuple[float, ...] | None = None) -> None:
    """kubectl get pods -o json: each pod's container started, and Ready at the first readiness
    probe (every second from its start) after the app answers."""
    items = []
    for i in range(truth.pods):
        started = T0 - 600 + 37 * i
        after = ready_after[i] if ready_after else math.floor(truth.start_s) + 1
        items.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-5d4588bb9d-{'abc'[i]}x{i}k", "namespace": "shop"},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": _rfc3339(started + after)}],
                "containerStatuses": [{
                    "name": "app", "ready": True, "restartCount": 0, "started": True,
                    "state": {"running": {"startedAt": _rfc3339(started)}},
                }],
            },
        })  # fmt: skip
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
