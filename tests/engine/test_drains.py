"""``kubectl drain`` and PodDisruptionBudgets, with the upstream timings:

- kubectl's drain (staging/src/k8s.io/kubectl/pkg/drain/drain.go ``evictPods``): every pod of
  the node evicted at once, a 429 retried after ``EvictErrorRetryDelay`` (5 s, set in
  pkg/cmd/drain/drain.go), an evicted pod waited for by ``waitForDelete`` polling every 1 s,
  ``--timeout`` checked before each attempt ("global timeout reached");
- the Eviction API (pkg/registry/core/pod/storage/eviction.go ``Create``): 429 "Cannot evict pod
  as it would violate the pod's disruption budget." while disruptionsAllowed is 0, the
  unhealthy-pod rule (IfHealthyBudget: a not-Ready pod evicted when currentHealthy ≥
  desiredHealthy > 0; AlwaysAllow: always), 500 for a pod two budgets select;
- the disruption controller (pkg/controller/disruption/disruption.go ``getExpectedPodCount``,
  ``countHealthyPods``): desiredHealthy from the scale, percents rounded up, disruptionsAllowed
  = max(0, currentHealthy − desiredHealthy).

The common case: 3 replicas, readiness every 5 s, Ready at 0 s; the pods spread one a node over
3 nodes (web-1 on node-2), or over 2 nodes web-0 and web-2 on node-1.
"""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.kube.disruption import Status, desired_healthy, evict, scaled
from probesim.results import Result
from tests.builders import accounted, scenario, series, times

READINESS = {"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}}
REFUSED = "Cannot evict pod as it would violate the pod's disruption budget."


def pdb(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def run(
    actions: list[dict[str, Any]],
    budgets: list[dict[str, Any]] = (),  # type: ignore[assignment]
    *,
    nodes: int = 3,
    duration: str = "3m",
    behavior: dict[str, Any] | None = None,
    overrides: list[dict[str, Any]] | None = None,
    kind: str = "Deployment",
    replicas: int = 3,
) -> Result:
    return simulate(
        scenario(
            probes=READINESS,
            kind=kind,
            replicas=replicas,
            duration=duration,
            behavior=behavior,
            overrides=overrides,
            traffic=[{"path": "/", "rate": 30}],
            manifests=list(budgets),
            spec={"actions": actions, "cluster": {"nodes": {"count": nodes}}},
        )
    )


def drain(node: str, at: str = "60s", **opts: Any) -> dict[str, Any]:
    return {"kind": "drain", "node": node, "at": at, **opts}


def test_a_budget_of_every_replica_stalls_the_drain_retrying_every_5s() -> None:
    """minAvailable 3 of 3: disruptionsAllowed 0, every eviction refused (429), kubectl tries again
    5 s later (EvictErrorRetryDelay) for as long as it runs; the pod is never touched."""
    r = run([drain("node-2")], [pdb(minAvailable=3)])
    assert times(r, "Cordon") == [60] and times(r, "NodeNotSchedulable", "node/node-2") == [60]
    attempts = [60 + 5 * i for i in range(24)]  # 60 s, 65 s, … 175 s (the run ends at 180 s)
    assert times(r, "EvictingPod", "pod/web-1") == attempts
    assert times(r, "EvictionRefused", "pod/web-1") == attempts
    (e,) = r.events_for("pod/web-1", "EvictionRefused")[:1]
    assert e.message == f'error when evicting pods/"web-1" -n "default" (will retry after 5s): {REFUSED}'
    assert times(r, "Killing", "pod/web-1") == [] and times(r, "Drained") == []
    assert series(r, "pdb.web.allowed")[30:] == [0] * 150
    assert series(r, "pdb.web.healthy")[30:] == [3] * 150


@pytest.mark.parametrize(("selector", "held"), [({}, True), (None, False)])
def test_an_empty_selector_guards_every_pod_of_its_namespace(
    selector: dict[str, Any] | None, held: bool
) -> None:
    """policy/v1: an empty selector ({}) selects every pod of the budget's namespace — in the
    disruption controller and, since kubernetes/kubernetes#119732, the Eviction API ("Fix to
    honor PDB with an empty selector"); a null one selects none. minAvailable 3 of 3 holds the
    drain with {}; with no selector nothing guards web-1, evicted at once."""
    budget = pdb(minAvailable=3)
    budget["spec"]["selector"] = selector
    r = run([drain("node-2")], [budget])
    assert (times(r, "EvictionRefused", "pod/web-1")[:2] == [60, 65]) is held
    assert (times(r, "Killing", "pod/web-1") == [60]) is not held


def test_a_stalled_drain_gives_up_at_its_timeout() -> None:
    """--timeout 90s: the attempt at 150 s (the first at or after 60 s + 90 s) finds the global
    timeout reached (evictPods' ctx.Done()); the drain fails, the node stays cordoned."""
    r = run([drain("node-2", timeout="90s")], [pdb(minAvailable=3)])
    assert times(r, "EvictionRefused", "pod/web-1") == [60 + 5 * i for i in range(18)]  # to 145 s
    (e,) = r.events_for("pod/web-1", "EvictionFailed")
    assert (e.time_ms, e.message) == (
        150_000,
        'error when evicting pods/"web-1" -n "default": global timeout reached: 1m30s',
    )
    (d,) = r.events_for("node/node-2", "DrainFailed")
    assert d.time_ms == 150_000 and d.message.startswith('unable to drain node "node-2" due to error: ')
    assert times(r, "EvictingPod", "pod/web-1")[-1] == 150


def test_max_unavailable_1_evicts_one_pod_at_a_time_after_its_replacement_is_ready() -> None:
    """2 nodes: web-0 and web-2 on node-1. maxUnavailable 1 of 3: desiredHealthy 2, one allowed.
    At 60 s web-0 is evicted (allowed 1 → 0), web-2 refused; web-3 replaces web-0 on node-2 (the
    cordoned node-1 is unschedulable), its app answers after 20 s, Ready at 80 s; the retry at
    85 s evicts web-2; waitForDelete sees each gone at its next 1 s poll; drained at 86 s."""
    r = run([drain("node-1")], [pdb(maxUnavailable=1)], nodes=2, behavior={"start": "20s"})
    assert times(r, "Killing", "pod/web-0") == [60]
    assert times(r, "EvictionRefused", "pod/web-2") == [60, 65, 70, 75, 80]
    assert times(r, "Killing", "pod/web-2") == [85]
    assert times(r, "PodReady", "pod/web-3") == [80]
    assert r.events_for("pod/web-3", "Scheduled")[0].message.endswith("to node-2")
    assert r.events_for("pod/web-4", "Scheduled")[0].message.endswith("to node-2")
    assert times(r, "PodEvicted") == [61, 86]
    assert times(r, "Drained", "node/node-1") == [86]
    allowed = series(r, "pdb.web.allowed")
    assert allowed[59:62] == [1, 0, 0] and allowed[79:86] == [0, 1, 1, 1, 1, 1, 0]
    assert min(series(r, "pdb.web.healthy")[20:]) == 2  # never below desiredHealthy
    accounted(r)


UNREADY_1 = [{"ordinals": [1], "containers": {"app": {"paths": {"/healthz": 500}}}}]


@pytest.mark.parametrize(
    ("spec", "evicted"),
    [
        # currentHealthy 2 < desiredHealthy 3: IfHealthyBudget goes on to checkAndDecrement (0: 429).
        ({"minAvailable": 3}, False),
        # AlwaysAllow: a not-Ready pod is evicted whatever the budget.
        ({"minAvailable": 3, "unhealthyPodEvictionPolicy": "AlwaysAllow"}, True),
        # currentHealthy 2 ≥ desiredHealthy 2 > 0: the unhealthy pod goes though none is allowed.
        ({"minAvailable": 2}, True),
        ({"minAvailable": 2, "unhealthyPodEvictionPolicy": "IfHealthyBudget"}, True),
    ],
)
def test_unhealthy_pod_eviction_policy(spec: dict[str, Any], evicted: bool) -> None:
    """web-1 never Ready (its /healthz answers 500): what the Eviction API does with it."""
    r = run([drain("node-2")], [pdb(**spec)], duration="90s", overrides=UNREADY_1)
    assert series(r, "pdb.web.healthy")[59] == 2 and series(r, "pdb.web.allowed")[59] == 0
    if evicted:
        assert times(r, "Killing", "pod/web-1") == [60] and times(r, "Drained") == [61]
    else:
        assert times(r, "EvictionRefused", "pod/web-1") == [60, 65, 70, 75, 80, 85]


def test_a_ready_pod_is_refused_where_an_unready_one_goes() -> None:
    """minAvailable 2 with web-1 not Ready: draining node-1 (web-0, Ready) is refused."""
    r = run([drain("node-1")], [pdb(minAvailable=2)], duration="70s", overrides=UNREADY_1)
    assert times(r, "EvictionRefused", "pod/web-0") == [60, 65]


@pytest.mark.parametrize(
    ("spec", "allowed"),
    [
        ({"maxUnavailable": "50%"}, 2),  # ceil(1.5) = 2 unavailable: desiredHealthy 1
        ({"minAvailable": "50%"}, 1),  # ceil(1.5) = 2 desired healthy
        ({"maxUnavailable": "34%"}, 2),  # ceil(1.02) = 2
        ({"minAvailable": "34%"}, 1),  # ceil(1.02) = 2
        ({"maxUnavailable": "0%"}, 0),
        ({"minAvailable": "100%"}, 0),
        ({"minAvailable": 0}, 3),
        ({"maxUnavailable": 5}, 3),  # desiredHealthy max(0, 3 − 5) = 0
    ],
)
def test_percents_round_up_as_the_disruption_controller_does(spec: dict[str, Any], allowed: int) -> None:
    r = run([], [pdb(**spec)], duration="30s")
    assert series(r, "pdb.web.allowed")[-1] == allowed and series(r, "pdb.web.healthy")[-1] == 3


def test_scaled_and_desired_healthy() -> None:
    # intstr.GetScaledValueFromIntOrPercent(…, roundUp true), as getExpectedPodCount calls it.
    assert [scaled("50%", n, True) for n in (1, 2, 3, 5)] == [1, 1, 2, 3]
    assert [scaled("50%", n, False) for n in (1, 2, 3, 5)] == [0, 1, 1, 2]
    assert desired_healthy(None, "25%", 5) == 3  # 5 − ceil(1.25)
    assert desired_healthy("25%", None, 5) == 2
    assert desired_healthy(4, None, 3) == 4  # an integer minAvailable: itself, whatever the scale


def test_eviction_api_decisions() -> None:
    """eviction.go Create, branch by branch."""
    ok, met, short = Status(3, 2), Status(2, 2), Status(1, 2)
    assert evict(False, False, True, [(short, False)]).code == 201  # Pending: canIgnorePDB
    assert evict(True, True, True, [(short, False)]).code == 201  # already being deleted
    assert evict(True, False, True, []).code == 201
    assert evict(True, False, True, [(ok, False), (ok, False)]).code == 500
    assert evict(True, False, True, [(ok, False)]).code == 201
    assert evict(True, False, True, [(met, False)]).code == 429
    assert evict(True, False, False, [(met, False)]).code == 201  # unhealthy, budget met
    assert evict(True, False, False, [(Status(0, 0), False)]).code == 429  # desiredHealthy 0: no
    assert evict(True, False, False, [(short, True)]).code == 201  # AlwaysAllow


def test_two_budgets_over_a_pod_fail_its_eviction() -> None:
    r = run([drain("node-2")], [pdb("a", maxUnavailable=1), pdb("b", maxUnavailable=1)], duration="70s")
    (e,) = r.events_for("pod/web-1", "EvictionFailed")
    assert e.time_ms == 60_000 and e.message.endswith(
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )
    assert times(r, "DrainFailed") == [60] and times(r, "Killing", "pod/web-1") == []


def test_without_a_budget_every_pod_goes_at_once_with_the_drain_grace_period() -> None:
    r = run([drain("node-1", gracePeriod="3s")], nodes=2, duration="70s",
            behavior={"ignoresSigterm": True})  # fmt: skip
    assert times(r, "Killing", "pod/web-0") == [60] and times(r, "Killing", "pod/web-2") == [60]
    # --grace-period 3s in place of the pods' 30 s: SIGKILL at 63 s; the pods leave the API once
    # their kubelet reports the containers gone, which the poll at 64 s sees.
    assert times(r, "PodEvicted") == [64, 64] and times(r, "Drained") == [64]


def test_a_bare_pod_stops_the_drain_unless_forced() -> None:
    r = run([drain("node-1")], kind="Pod", nodes=1, duration="70s")
    (e,) = r.events_for("node/node-1", "DrainRefused")
    assert e.message == ('unable to drain node "node-1" due to error: cannot delete Pods that declare no '
                         "controller (use --force to override): default/web")  # fmt: skip
    assert times(r, "Killing") == []
    r = run([drain("node-1", force=True)], kind="Pod", nodes=1, duration="70s")
    assert times(r, "Killing", "pod/web") == [60] and times(r, "Drained") == [61]


def test_a_cordoned_node_takes_no_pod_until_uncordoned() -> None:
    """NodeUnschedulable (the default profile's first filter, UnschedulableAndUnresolvable)."""
    r = run([drain("node-1"), {"kind": "uncordon", "node": "node-1", "at": "90s"}], nodes=1, replicas=1,
            duration="100s")  # fmt: skip
    (e,) = r.events_for("pod/web-1", "FailedScheduling")
    assert e.time_ms == 60_000
    assert e.message == (
        "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    )
    assert times(r, "NodeSchedulable", "node/node-1") == [90] and times(r, "Scheduled", "pod/web-1") == [90]


@pytest.mark.parametrize(
    ("spec", "field", "says"),
    [
        ({"minAvailable": 1, "maxUnavailable": 1}, "spec.maxUnavailable", "cannot be both set"),
        ({}, "spec", "give minAvailable or maxUnavailable"),
        ({"minAvailable": "50"}, "spec.minAvailable", "a valid percent string must be a numeric string"),
        ({"maxUnavailable": "150%"}, "spec.maxUnavailable", "must not be greater than 100%"),
        ({"maxUnavailable": -1}, "spec.maxUnavailable", "must be greater than or equal to 0"),
        ({"minAvailable": 2**31}, "spec.minAvailable", "must be at most 2147483647"),
        (
            {"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"},
            "unhealthyPodEvictionPolicy",
            "AlwaysAllow",
        ),
    ],
)
def test_bad_budgets_are_clear_errors(spec: dict[str, Any], field: str, says: str) -> None:
    body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}  # fmt: skip
    with pytest.raises(InputError) as e:
        scenario(manifests=[body])
    msg = str(e.value)
    assert field in msg and says in msg and "PodDisruptionBudget web" in msg


def test_a_drain_names_a_node_of_the_cluster() -> None:
    with pytest.raises(InputError) as e:
        scenario(spec={"actions": [drain("node-9")], "cluster": {"nodes": {"count": 2}}})
    assert "spec.actions[0].node" in str(e.value) and "no node 'node-9'" in str(e.value)
    with pytest.raises(InputError) as e:
        scenario(spec={"actions": [drain("node-1")]})
    assert "drain needs the cluster's nodes" in str(e.value)
