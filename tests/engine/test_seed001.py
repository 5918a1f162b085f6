"""Seed 001: the self-amplifying probe loop under a surge, and the way out (issue 3)."""

from __future__ import annotations

import numpy as np

from probesim.engine import simulate
from probesim.results import Result
from tests.builders import builtin

SURGE_FROM = 4 * 60_000  # the ramp starts at 4 min


load = builtin


def surge(r: Result, key: str) -> np.ndarray:
    return r.series[f"workload.web.{key}"][r.time_ms >= SURGE_FROM]


def lagged_ratio(r: Result, lag_s: int = 60) -> float:
    """min over the surge of ready / desired, desired taken as the lowest of the last minute:
    a pod the HPA asks for needs up to a minute to be scheduled, started and probed."""
    ready, desired = r.series["workload.web.ready"], r.series["workload.web.desired"]
    lagged = np.array([desired[max(0, k - lag_s) : k + 1].min() for k in range(desired.size)])
    sel = r.time_ms >= SURGE_FROM
    return float((ready[sel] / lagged[sel]).min())


def test_default_probe_fields_turn_a_surge_into_a_collapse() -> None:
    r = simulate(load("gke-surge-defaults"))
    desired, ready = surge(r, "desired"), surge(r, "ready")
    assert desired.max() >= 15  # the HPA asks for more pods...
    assert (ready / desired).min() <= 0.4  # ...while ready falls (10 → 4 → 3 in the talk)
    assert r.workload("web").total_restarts >= 10  # restarted tens of times
    assert r.route("/").error_rate > 0.05
    assert (
        r.events_for(reason="Killing")[0].message == "Container app failed liveness probe, will be restarted"
    )
    assert any("context deadline exceeded" in e.message for e in r.events_for(reason="Unhealthy"))


def test_tuned_probes_keep_ready_with_desired() -> None:
    r = simulate(load("gke-surge-tuned"))
    assert r.workload("web").total_restarts == 0
    assert lagged_ratio(r) >= 0.8
    assert r.route("/").error_rate < 0.01


def test_the_loop_disappears_when_probes_are_served_apart() -> None:
    sc = load("gke-surge-defaults")
    app = sc.spec.behavior["web"].containers["app"]
    apart = app.model_copy(update={"capacity": app.capacity.model_copy(update={"probes": "separate"})})
    web = sc.spec.behavior["web"].model_copy(update={"containers": {"app": apart}})
    r = simulate(sc.model_copy(update={"spec": sc.spec.model_copy(update={"behavior": {"web": web}})}))
    assert r.workload("web").total_restarts == 0
    assert lagged_ratio(r) >= 0.8
