"""A GKE node pool surge upgrade (cloud.google.com/kubernetes-engine/docs/concepts/
node-pool-upgrade-strategies, "Surge upgrades"; the API's UpgradeSettings: "(maxUnavailable +
maxSurge) determines the level of parallelism"): with maxSurge a new node is created first, the
old one cordoned, drained (PodDisruptionBudgets respected for up to an hour) and deleted; with
maxUnavailable the old one goes first and its replacement is created after. The drain's
evictions follow engine/drains.py (kubectl's 5 s retry, eviction.go's budget check).

The common case: 3 nodes, 3 replicas one a node (web-i on node-(i+1)), an app that answers 20 s
after it starts, readiness every 5 s, a budget of maxUnavailable 1, the upgrade at 60 s, new
nodes Ready 60 s after their creation (nodeStartup's default).
"""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.results import Result
from tests.builders import accounted, scenario, series, times

READINESS = {"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}}


def pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


def run(
    budget: dict[str, Any] | None = None,
    duration: str = "6m",
    more: tuple[dict[str, Any], ...] = (),
    **upgrade: Any,
) -> Result:
    return simulate(
        scenario(
            probes=READINESS,
            replicas=3,
            duration=duration,
            behavior={"start": "20s"},
            traffic=[{"path": "/", "rate": 30}],
            manifests=[pdb(**budget)] if budget is not None else [],
            spec={
                "actions": [{"kind": "nodePoolUpgrade", "at": "60s", **upgrade}, *more],
                "cluster": {"nodes": {"count": 3}},
            },
        )
    )


def test_surge_one_node_at_a_time() -> None:
    """maxSurge 1, maxUnavailable 0: node-4 created at 60 s, Ready at 120 s; node-1 cordoned and
    drained then (web-0 evicted: the budget allows 1), web-0 gone at the 121 s poll, node-1
    deleted and node-5 created at 121 s; and so on, 61 s a node; the pool done at 243 s."""
    r = run({"maxUnavailable": 1})
    assert times(r, "CreatingNode") == [60, 121, 182]
    assert [e.object for e in r.events_for(None, "CreatingNode")] == [
        "node/node-4",
        "node/node-5",
        "node/node-6",
    ]
    assert times(r, "NodeReady") == [120, 181, 242]
    assert times(r, "Cordon") == [120, 181, 242]
    assert times(r, "Killing") == [120, 181, 242]
    assert times(r, "RemovingNode") == [121, 182, 243]
    assert times(r, "NodePoolUpgraded") == [243]
    # Each replacement goes to the one new node that is not cordoned.
    assert [n.pods for n in r.nodes] == [["web-0"], ["web-1"], ["web-2"], ["web-3"], ["web-4"], ["web-5"]]
    assert series(r, "node.node-4.ready")[119:122] == [0, 1, 1]
    assert series(r, "node.node-1.ready")[120:122] == [1, 0]
    # A node counts as not Ready only while it exists.
    assert [n.not_ready_ms for n in r.nodes] == [0] * 6
    # One replica down at a time, for as long as its replacement takes to be Ready (20 s).
    ready = series(r, "workload.web.ready")
    assert min(ready[20:]) == 2 and sum(1 for x in ready[20:] if x == 2) == 60
    accounted(r)


def test_max_unavailable_drains_before_creating() -> None:
    """maxSurge 0, maxUnavailable 1: node-1 drained at 60 s (web-3 goes to an old node), deleted
    at 61 s, node-4 created then and Ready at 121 s; node-2 is drained then: web-1 goes at once,
    web-3 (landed there) waits for the budget until web-4 is Ready at 141 s (the 146 s retry)."""
    r = run({"maxUnavailable": 1}, maxSurge=0, maxUnavailable=1)
    assert times(r, "Cordon") == [60, 121, 207]
    assert times(r, "RemovingNode") == [61, 147, 233]
    assert times(r, "CreatingNode") == [61, 147, 233]
    assert times(r, "EvictionRefused", "pod/web-3") == [121, 126, 131, 136, 141]
    assert times(r, "Killing", "pod/web-3") == [146]
    assert times(r, "NodePoolUpgraded") == [293]


def test_a_budget_that_allows_nothing_holds_each_node_for_the_drain_timeout() -> None:
    """minAvailable 3 of 3: every eviction refused; GKE goes on after its drain timeout (2 m
    here, 1 h by default): the attempt at 240 s finds it passed, node-1 is deleted with web-0."""
    r = run({"minAvailable": 3}, duration="8m", drainTimeout="2m")
    assert times(r, "DrainFailed") == [240, 420]
    assert times(r, "Killing", "pod/web-0") == [240] and times(r, "RemovingNode") == [240, 420]
    assert times(r, "EvictionRefused", "pod/web-0") == [120 + 5 * i for i in range(24)]


@pytest.mark.parametrize(
    ("upgrade", "field", "says"),
    [
        ({"maxSurge": 0, "maxUnavailable": 0}, "maxSurge", "cannot both be 0"),
        ({"maxSurge": -1}, "maxSurge", "greater than or equal to 0"),
    ],
)
def test_bad_upgrades_are_clear_errors(upgrade: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InputError) as e:
        scenario(spec={"actions": [{"kind": "nodePoolUpgrade", "at": "5s", **upgrade}],
                       "cluster": {"nodes": {"count": 2}}})  # fmt: skip
    assert field in str(e.value) and says in str(e.value)


def test_one_upgrade_and_the_nodes_it_needs() -> None:
    up = {"kind": "nodePoolUpgrade", "at": "5s"}
    with pytest.raises(InputError) as e:
        scenario(spec={"actions": [up, {**up, "at": "9s"}], "cluster": {"nodes": {"count": 2}}})
    assert "give one nodePoolUpgrade" in str(e.value)
    with pytest.raises(InputError) as e:
        scenario(spec={"actions": [up]})
    assert "nodePoolUpgrade needs the cluster's nodes" in str(e.value)


def test_draining_a_node_the_upgrade_removed_is_not_found() -> None:
    r = run({"maxUnavailable": 1}, more=({"kind": "drain", "node": "node-1", "at": "5m"},))
    (e,) = r.events_for("node/node-1", "NotFound")
    assert (e.time_ms, e.message) == (300_000, 'Error from server (NotFound): nodes "node-1" not found')
    assert times(r, "Cordon", "node/node-1") == [120]
