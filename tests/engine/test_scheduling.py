"""Where the scheduler puts pods when the scenario gives its nodes: the default profile's filters
in order and their reasons (pkg/scheduler/framework/plugins: tainttoleration, nodeaffinity,
noderesources/fit.go, podtopologyspread/filtering.go, interpodaffinity/filtering.go), the
FailedScheduling message as FitError.Error and DefaultPreemption word it, the scores that break
ties, and pending pods placed once something changes."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.results import Result
from tests.builders import scenario, series, times

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SELECT = {"matchLabels": {"app": "web"}}


def place(
    nodes: Any,
    *,
    replicas: int = 3,
    pod_spec: dict[str, Any] | None = None,
    requests: dict[str, Any] | None = None,
    actions: list[dict[str, Any]] | None = None,
    duration: str = "5s",
    kind: str = "Deployment",
) -> Result:
    container: dict[str, Any] = {"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}]}
    if requests is not None:
        container["resources"] = {"requests": requests}
    return simulate(
        scenario(
            replicas=replicas,
            duration=duration,
            kind=kind,
            containers=[container],
            pod_spec=pod_spec,
            workload_spec={"serviceName": "web"} if kind == "StatefulSet" else None,
            spec={"cluster": {"nodes": nodes}, "actions": actions or []},
        )
    )


def where(r: Result) -> dict[str, list[str]]:
    """Each node's pods at the end of the run."""
    return {n.name: n.pods_at_end for n in r.nodes}


def failed(r: Result, pod: str) -> list[str]:
    return [e.message for e in r.events_for(f"pod/{pod}", "FailedScheduling")]


def test_insufficient_cpu_leaves_pods_pending_with_the_schedulers_message() -> None:
    """NodeResourcesFit: 600m against 1 CPU allocatable fits once per node; the fourth pod fits
    nowhere, and preemption finds no victim (every pod has priority 0)."""
    r = place({"count": 3, "cpu": 1}, replicas=4, requests={"cpu": "600m"})
    assert where(r) == {"node-1": ["web-0"], "node-2": ["web-1"], "node-3": ["web-2"]}
    assert failed(r, "web-3") == [
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod."
    ]
    (e,) = r.events_for("pod/web-3", "FailedScheduling")
    assert (e.type, e.source, e.time_ms) == ("Warning", "default-scheduler", 0)
    assert r.pending == ["web-3"]
    assert r.events_for("pod/web-3", "Started") == []
    assert series(r, "workload.web.ready")[-1] == 3


def test_memory_and_too_many_pods_reasons_are_counted_per_node() -> None:
    """Each reason a node gives counts: 2 nodes short of memory, 1 full (maxPods)."""
    nodes = [
        {"name": "a1", "memory": "1Gi"},
        {"name": "a2", "memory": "1Gi"},
        {"name": "a3", "memory": "64Gi", "pods": 1},
    ]
    r = place(nodes, replicas=2, requests={"memory": "2Gi"})
    assert failed(r, "web-1") == [
        "0/3 nodes are available: 1 Too many pods, 2 Insufficient memory. preemption: 0/3 nodes are "
        "available: 3 No preemption victims found for incoming pod."
    ]


def test_required_anti_affinity_on_hostname() -> None:
    """One replica per node: the fourth finds every node holding one ('didn't match pod
    anti-affinity rules', resolvable by preemption in principle, so 'No preemption victims')."""
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": SELECT, "topologyKey": HOST}]}}  # fmt: skip
    r = place({"count": 3}, replicas=4, pod_spec={"affinity": anti})
    assert sorted(p for pods in where(r).values() for p in pods) == ["web-0", "web-1", "web-2"]
    assert failed(r, "web-3") == [
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes "
        "are available: 3 No preemption victims found for incoming pod."
    ]


def test_topology_spread_on_zones_do_not_schedule() -> None:
    """maxSkew 1 over zones a (node-1, node-2) and b (node-3): the skew never passes 1, so zone b's
    single node takes every other pod; the least allocated node of a zone wins within it."""
    spread = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": SELECT}
    ]
    nodes = [
        {"name": "node-1", "zone": "a"},
        {"name": "node-2", "zone": "a"},
        {"name": "node-3", "zone": "b"},
    ]
    r = place(nodes, replicas=4, pod_spec={"topologySpreadConstraints": spread})
    assert where(r) == {"node-1": ["web-0"], "node-2": ["web-2"], "node-3": ["web-1", "web-3"]}


def test_topology_spread_on_a_key_a_node_lacks() -> None:
    """A node without the constraint's key fails it as 'missing required label', which preemption
    cannot help."""
    spread = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": SELECT}
    ]
    r = place({"count": 2}, replicas=1, pod_spec={"topologySpreadConstraints": spread})
    assert failed(r, "web-0") == [
        "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints (missing "
        "required label). preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    ]


def test_node_selector_to_a_zone_and_the_mixed_message() -> None:
    """nodeSelector on zone b: the other zones' nodes fail NodeAffinity (unresolvable), b's own
    runs out of CPU."""
    nodes = {"count": 3, "zones": ["a", "b", "c"], "cpu": 1}
    r = place(nodes, replicas=2, requests={"cpu": "600m"}, pod_spec={"nodeSelector": {ZONE: "b"}})
    assert where(r)["node-2"] == ["web-0"]
    assert failed(r, "web-1") == [
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption "
        "is not helpful for scheduling."
    ]


def test_required_node_affinity_and_preferred_terms() -> None:
    """Required node affinity to zones a or b (In); a preferred term toward b outweighs the least
    allocated node until b is fuller."""
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["b"]}]}}],
    }}  # fmt: skip
    r = place({"count": 3, "zones": ["a", "b", "c"]}, replicas=2, pod_spec={"affinity": affinity})
    assert where(r)["node-3"] == [] and where(r)["node-2"] == ["web-0", "web-1"]


def test_a_node_taint_and_a_toleration() -> None:
    """A NoSchedule taint keeps pods off unless they tolerate it."""
    nodes = [{"name": "gpu", "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}]
    r = place(nodes, replicas=1)
    assert failed(r, "web-0") == [
        "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}. preemption: 0/1 nodes are "
        "available: 1 Preemption is not helpful for scheduling."
    ]
    tol = {"tolerations": [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]}
    assert where(place(nodes, replicas=1, pod_spec=tol)) == {"gpu": ["web-0"]}


def test_node_name_binds_without_the_scheduler() -> None:
    r = place({"count": 3}, replicas=2, pod_spec={"nodeName": "node-3"})
    assert where(r)["node-3"] == ["web-0", "web-1"]
    assert r.events_for(reason="Scheduled") == []
    assert times(r, "Started", "pod/web-0") == [0]


def test_a_pending_pod_is_placed_when_the_node_it_needs_is_back() -> None:
    """Two nodes, one replica per node (required anti-affinity). node-2 crashes; its pod is evicted
    at 410 s; the replacement fits nowhere: node-1 holds a replica, node-2 carries the unreachable
    taint. At 7 m the node is back: its kubelet removes the deleted pod and reports Ready (the
    NoSchedule taint goes with the condition), and the scheduler, retrying on that change, places
    the pending pod there."""
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": SELECT, "topologyKey": HOST}]}}  # fmt: skip
    acts = [
        {"kind": "nodeDown", "node": "node-2", "at": "60s"},
        {"kind": "nodeUp", "node": "node-2", "at": "7m"},
    ]
    r = place(
        {"count": 2, "zones": ["a", "b"]},
        replicas=2,
        pod_spec={"affinity": anti},
        actions=acts,
        duration="8m",
    )
    assert failed(r, "web-2") == [
        "0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated "
        "taint {node.kubernetes.io/unreachable: }. preemption: 0/2 nodes are available: 1 No preemption "
        "victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    ]
    assert times(r, "FailedScheduling", "pod/web-2") == [410]
    assert times(r, "Scheduled", "pod/web-2") == [420]
    assert where(r) == {"node-1": ["web-0"], "node-2": ["web-2"]}


def test_a_statefulsets_pods_spread_too() -> None:
    r = place({"count": 2}, replicas=4, kind="StatefulSet")
    assert where(r) == {"node-1": ["web-0", "web-2"], "node-2": ["web-1", "web-3"]}


@pytest.mark.parametrize(
    ("pod_spec", "field", "says"),
    [
        ({"tolerations": [{"operator": "Equal", "value": "x"}]}, "tolerations", "operator must be Exists"),
        ({"tolerations": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]}, "tolerations",
         "effect must be 'NoExecute' when `tolerationSeconds` is set"),
        ({"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
         "maxSkew", "greater than or equal to 1"),
        ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In"}]}]}}}}, "matchExpressions",
         "values must be specified"),
        ({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}, "topologyKey": HOST}]}}},
         "operator", "'Near' is not a valid selector operator"),
    ],
)  # fmt: skip
def test_bad_scheduling_fields_are_clear_errors(pod_spec: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InputError) as e:
        scenario(pod_spec=pod_spec)
    assert field in str(e.value) and says in str(e.value)


def test_bad_memory_is_a_clear_error() -> None:
    c = {"name": "app", "image": "app:1", "resources": {"requests": {"memory": "2 gigs"}}}
    with pytest.raises(InputError) as e:
        scenario(containers=[c])
    assert "memory" in str(e.value) and "invalid memory quantity" in str(e.value)
