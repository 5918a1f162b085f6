"""Invariants under random drains and node pool upgrades (hypothesis): nodes drained, alone or
several at once, with a timeout or not, uncordoned or not, the pool upgraded (surge or not), under
a PodDisruptionBudget (counts and percents, either unhealthy-pod policy), while the controllers
replace what is evicted:

- no eviction takes a budget below its desiredHealthy (eviction.go checkAndDecrement): the app
  here never fails a probe, so a budget's healthy count only falls by an eviction, and it never
  falls below min(what it was, desiredHealthy);
- no request is lost from the books.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probesim.engine import simulate
from probesim.kube.disruption import desired_healthy
from tests.builders import accounted, scenario, series


@st.composite
def drained(draw: st.DrawFn) -> tuple[Any, int, int | str | None, int | str | None]:
    n_nodes = draw(st.integers(1, 4))
    replicas = draw(st.integers(1, 5))
    duration = draw(st.integers(30, 200))
    actions: list[dict[str, Any]] = []
    for i in range(1, n_nodes + 1):
        if not draw(st.booleans()):
            continue
        at = draw(st.integers(0, duration))
        act: dict[str, Any] = {"kind": "drain", "node": f"node-{i}", "at": f"{at}s"}
        if draw(st.booleans()):
            act["timeout"] = f"{draw(st.integers(1, 60))}s"
        actions.append(act)
        if draw(st.booleans()):
            actions.append(
                {"kind": "uncordon", "node": f"node-{i}", "at": f"{draw(st.integers(at, at + 60))}s"}
            )
    if draw(st.booleans()):
        # A pool upgrade: its drain timeout (1 h) is beyond the run, so no node is removed with
        # its pods still there (which GKE does then, budget or not).
        actions.append({
            "kind": "nodePoolUpgrade",
            "at": f"{draw(st.integers(0, duration))}s",
            "maxSurge": draw(st.integers(0, 2)),
            "maxUnavailable": draw(st.integers(1, 2)) if draw(st.booleans()) else 0,
            "nodeStartup": draw(st.sampled_from(["0s", "10s", "60s"])),
        })  # fmt: skip
        if actions[-1]["maxSurge"] + actions[-1]["maxUnavailable"] == 0:
            actions[-1]["maxSurge"] = 1
    value = st.one_of(st.integers(0, 6), st.sampled_from(["0%", "25%", "34%", "50%", "67%", "100%"]))
    min_available = max_unavailable = None
    if draw(st.booleans()):
        min_available = draw(value)
    else:
        max_unavailable = draw(value)
    budget: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}}
    budget["minAvailable" if min_available is not None else "maxUnavailable"] = (
        min_available if min_available is not None else max_unavailable
    )
    if draw(st.booleans()):
        budget["unhealthyPodEvictionPolicy"] = draw(st.sampled_from(["IfHealthyBudget", "AlwaysAllow"]))
    manifests = [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                  "spec": budget}]  # fmt: skip
    kind = draw(st.sampled_from(["Deployment", "StatefulSet"]))
    probe = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": draw(st.sampled_from([1, 5]))}
    behavior = {
        "start": draw(st.sampled_from(["0s", "3s", "20s"])),
        "shutdown": draw(st.sampled_from(["0s", "2s"])),
    }
    sc = scenario(
        kind=kind,
        probes={"readinessProbe": probe},
        behavior=behavior,
        replicas=replicas,
        traffic=[{"path": "/", "rate": draw(st.sampled_from([3, 40])), "keepAlive": draw(st.booleans())}],
        duration=f"{duration}s",
        workload_spec={"serviceName": "web"} if kind == "StatefulSet" else None,
        manifests=manifests,
        spec={"cluster": {"nodes": {"count": n_nodes}}, "actions": actions, "seed": draw(st.integers(0, 50))},
    )
    return sc, replicas, min_available, max_unavailable


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drained())
def test_no_drain_violates_a_budget_and_no_request_is_lost(case: Any) -> None:
    sc, replicas, min_available, max_unavailable = case
    r = simulate(sc)
    accounted(r)
    desired = desired_healthy(min_available, max_unavailable, replicas)
    healthy = series(r, "pdb.web.healthy")
    for before, now in pairwise(healthy):
        assert now >= min(before, desired), (healthy, desired)
    allowed = series(r, "pdb.web.allowed")
    assert all(a == max(0, h - desired) for a, h in zip(allowed, healthy, strict=True))
    times = [e.time_ms for e in r.events]
    assert times == sorted(times)
