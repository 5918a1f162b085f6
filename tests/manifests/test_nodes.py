"""spec.cluster.nodes and the node actions read and checked: each bad value one clear error at
its line (what is allowed), never a traceback."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.errors import InputError
from tests.builders import scenario

NODES = {"count": 3, "zones": ["a", "b", "c"]}


def fails(spec: dict[str, Any], pod_spec: dict[str, Any] | None = None) -> str:
    with pytest.raises(InputError) as e:
        scenario(spec=spec, pod_spec=pod_spec)
    return str(e.value)


def test_a_node_action_needs_the_nodes() -> None:
    msg = fails({"actions": [{"kind": "nodeDown", "node": "node-1", "at": "5s"}]})
    assert "spec.actions[0].kind" in msg
    assert "nodeDown needs the cluster's nodes: give spec.cluster.nodes" in msg


@pytest.mark.parametrize(
    ("actions", "field", "says"),
    [
        ([{"kind": "nodeDown", "node": "node-9", "at": "5s"}], "spec.actions[0].node",
         "no node 'node-9' in spec.cluster.nodes (node-1, node-2, node-3)"),
        ([{"kind": "zoneDown", "zone": "x", "at": "5s"}], "spec.actions[0].zone",
         "no zone 'x' among spec.cluster.nodes (zones: a, b, c)"),
        ([{"kind": "nodeDown", "node": "node-1", "at": "5s"}, {"kind": "nodeDown", "node": "node-1", "at": "9s"}],
         "spec.actions[1].node", "node-1 is already down at 9s (spec.actions[0] took it down): give a nodeUp first"),
        ([{"kind": "nodeUp", "node": "node-1", "at": "5s"}], "spec.actions[0].node",
         "node-1 is not down at 5s: a nodeUp follows a nodeDown or zoneDown of it"),
        ([{"kind": "zoneUp", "zone": "a", "at": "5s"}], "spec.actions[0].zone", "no node of zone a is down at 5s"),
        ([{"kind": "nodeDown", "node": "node-1", "at": "5s", "mode": "melt"}], "mode", "crash"),
        ([{"kind": "nodeDown", "node": "node-1", "at": "1500ms"}], "spec.actions[0].at",
         "1.5s is not a multiple of the step (1s)"),
    ],
)  # fmt: skip
def test_bad_node_actions(actions: list[dict[str, Any]], field: str, says: str) -> None:
    msg = fails({"cluster": {"nodes": NODES}, "actions": actions})
    assert field in msg and says in msg


def test_a_zone_down_then_its_node_up_is_in_order() -> None:
    acts = [{"kind": "zoneDown", "zone": "b", "at": "5s"}, {"kind": "nodeUp", "node": "node-2", "at": "9s"}]
    sc = scenario(spec={"cluster": {"nodes": NODES}, "actions": acts})
    assert [a.kind for a in sc.spec.actions] == ["zoneDown", "nodeUp"]


@pytest.mark.parametrize(
    ("cluster", "says"),
    [
        ({"nodes": [{"name": "n1"}, {"name": "n1"}]}, "a second node named 'n1'; node names are unique"),
        ({"nodes": []}, "give at least one node"),
        ({"nodes": {"count": 0}}, "greater than or equal to 1"),
        (
            {"nodes": {"count": 2, "zones": ["Zone A!"]}},
            "spec.cluster.nodes.zones[0]: a zone is a label value",
        ),
        ({"nodes": [{"name": "Node_1"}]}, "spec.cluster.nodes[0].name: a node name is a lowercase RFC 1123"),
        ({"nodes": "three"}, "give a pool ({count: 3, zones: [a, b, c]}) or a list of nodes"),
        ({"nodes": {"count": 2, "memory": "lots"}}, "invalid memory quantity"),
        ({"nodes": {"count": 2, "taints": [{"key": "k", "effect": "Sometimes"}]}}, "effect"),
        ({"nodes": {"count": 2}, "nodeMonitorGracePeriod": "1500ms"}, "spec.cluster.nodeMonitorGracePeriod"),
    ],
)
def test_bad_nodes(cluster: dict[str, Any], says: str) -> None:
    assert says in fails({"cluster": cluster})


def test_node_name_must_be_a_node() -> None:
    msg = fails({"cluster": {"nodes": NODES}}, pod_spec={"nodeName": "elsewhere"})
    assert "sets spec.nodeName 'elsewhere', which is not one of spec.cluster.nodes" in msg


def test_a_pool_and_a_list_dump_back_the_same() -> None:
    """What a scenario's dump writes of its nodes (memory as a quantity) reads back the same."""
    from probesim.model.cluster import Cluster

    for nodes in (
        {"count": 2, "zones": ["a"], "cpu": "1500m", "memory": "3Gi"},
        [{"name": "n1", "zone": "a", "taints": [{"key": "k", "effect": "NoSchedule"}]}],
    ):
        cluster = scenario(spec={"cluster": {"nodes": nodes}}).spec.cluster
        dumped = cluster.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert Cluster.model_validate(dumped) == cluster
