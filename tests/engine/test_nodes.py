"""Nodes that fail and come back, with the control plane's real timings: the node lifecycle
controller (pkg/controller/nodelifecycle/node_lifecycle_controller.go), the taint eviction
controller (pkg/controller/tainteviction/taint_eviction.go), the DefaultTolerationSeconds
admission plugin, and what the ReplicaSet and StatefulSet controllers do with a pod stuck
Terminating on a node nothing hears from.

The common case: 3 replicas on 3 nodes (one per zone), 30 requests a second from 0 s, node-2
(web-1's) fails at 60 s. The kubelet renews its Lease every 10 s: its last renewal is at 50 s,
which the controller's pass at 50 s sees (probeTimestamp 50 s). Its passes run every 5 s
(--node-monitor-period); the first one strictly after probeTimestamp + --node-monitor-grace-period
(50 s since v1.32) is at 105 s: Ready Unknown, NodeNotReady, MarkPodsNotReady.
"""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.results import Result
from tests.builders import accounted, scenario, series, times

READINESS = {"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}}
NODES: dict[str, Any] = {"count": 3, "zones": ["a", "b", "c"]}


def run(
    actions: list[dict[str, Any]],
    *,
    kind: str = "Deployment",
    nodes: dict[str, Any] | list[dict[str, Any]] | None = None,
    cluster: dict[str, Any] | None = None,
    duration: str = "8m",
    pod_spec: dict[str, Any] | None = None,
    replicas: int = 3,
    rate: float = 30,
) -> Result:
    workload_spec = {"serviceName": "web"} if kind == "StatefulSet" else None
    return simulate(
        scenario(
            probes=READINESS,
            kind=kind,
            replicas=replicas,
            duration=duration,
            traffic=[{"path": "/", "rate": rate}] if rate else [],
            pod_spec=pod_spec,
            workload_spec=workload_spec,
            spec={
                "actions": actions,
                "cluster": {"nodes": NODES if nodes is None else nodes, **(cluster or {})},
            },
        )
    )


def node_of(r: Result, pod: str) -> str:
    """The node a pod was scheduled to, from its Scheduled event."""
    (e,) = r.events_for(f"pod/{pod}", "Scheduled")
    return e.message.rsplit(" ", 1)[1]


DOWN = [{"kind": "nodeDown", "node": "node-2", "at": "60s"}]


def test_replicas_spread_one_per_node_by_default() -> None:
    """LeastAllocated over the non-zero requests (100m, 200Mi a container) and the system default
    spreading (podtopologyspread's systemDefaultConstraints) put 3 replicas on 3 nodes."""
    r = run([], duration="10s")
    assert [node_of(r, f"web-{i}") for i in range(3)] == ["node-1", "node-2", "node-3"]
    assert (
        r.events_for("pod/web-1", "Scheduled")[0].message == "Successfully assigned default/web-1 to node-2"
    )
    assert [n.pods for n in r.nodes] == [["web-0"], ["web-1"], ["web-2"]]
    assert series(r, "node.node-2.pods") == [1] * 10 and series(r, "node.node-2.ready") == [1] * 10


def test_without_nodes_one_implicit_node_and_no_node_series() -> None:
    """No spec.cluster.nodes: every pod on node-1, as before nodes existed; no node series or summary."""
    r = simulate(scenario(probes=READINESS, replicas=3, duration="10s"))
    assert {node_of(r, f"web-{i}") for i in range(3)} == {"node-1"}
    assert not [k for k in r.series if k.startswith("node.")]
    assert r.nodes == [] and "nodes" not in r.to_json()["summary"]


def test_node_lifecycle_grace_then_pods_not_ready_then_endpoints() -> None:
    """tryUpdateNodeHealth: Ready Unknown at the first pass after probeTimestamp (50 s) + 50 s,
    i.e. 105 s; the same pass records NodeNotReady and runs MarkPodsNotReady ("Node is not ready"
    on the pod). Until then web-1 stays Ready and an endpoint: a third of the requests go to a host
    that answers nothing, 45 s × 30/s / 3 = 450 of them; after it, none."""
    r = run(DOWN)
    assert times(r, "NodeNotReady", "node/node-2") == [105]
    (e,) = r.events_for("node/node-2", "NodeNotReady")
    assert (e.message, e.source, e.type) == (
        "Node node-2 status is now: NodeNotReady",
        "node-controller",
        "Normal",
    )
    (p,) = r.events_for("pod/web-1", "NodeNotReady")
    assert (p.time_ms, p.message, p.type, p.source) == (
        105_000,
        "Node is not ready",
        "Warning",
        "node-controller",
    )
    assert times(r, "PodNotReady", "pod/web-1") == [105]
    ready = series(r, "service.web.ready")
    assert ready[104] == 3 and ready[105] == 2
    assert series(r, "node.node-2.ready")[104:106] == [1, 0]
    route = r.route("/")
    assert route.failed == {**dict.fromkeys(route.failed, 0), "not_answering": 450}
    na = series(r, "route./.not_answering")
    assert sum(na[60:105]) == 450 and sum(na[105:]) == 0
    accounted(r)


def test_grace_period_of_older_releases() -> None:
    """--node-monitor-grace-period 40 s (the default before v1.32): Unknown at 95 s, 350 failed."""
    r = run(DOWN, cluster={"nodeMonitorGracePeriod": "40s"})
    assert times(r, "NodeNotReady", "node/node-2") == [95]
    assert r.route("/").failed_total == 350


def test_noexecute_taint_next_pass_and_eviction_after_300s_replicaset_replaces() -> None:
    """processTaintBaseEviction reads the condition the pass observed: the pass after 105 s finds
    it Unknown and queues node-2 for node.kubernetes.io/unreachable:NoExecute (110 s, the zone's
    first token). The pods tolerate it 300 s (DefaultTolerationSeconds): the taint eviction
    controller deletes web-1 at 410 s. On a node nothing hears from the pod stays Terminating; the
    ReplicaSet counts only active pods and replaces it at once, on another node."""
    r = run(DOWN)
    assert times(r, "NodeTainted", "node/node-2") == [110]
    (e,) = r.events_for("pod/web-1", "TaintManagerEviction")
    assert (e.time_ms, e.message, e.source) == (
        410_000,
        "Marking for deletion Pod default/web-1",
        "taint-eviction-controller",
    )
    assert times(r, "Scheduled", "pod/web-3") == [410]
    assert node_of(r, "web-3") in ("node-1", "node-3")
    node2 = r.nodes[1]
    assert node2.pods_at_end == ["web-1"] and node2.terminating == ["web-1"]
    assert node2.not_ready_ms == (480 - 105) * 1000
    ready = series(r, "workload.web.ready")
    assert ready[409] == 2 and ready[410] == 3  # (web-3 has no start delay: Ready as it starts)
    assert series(r, "workload.web.current")[-1] == 3  # web-1 Terminating: not counted
    accounted(r)


def test_statefulset_does_not_replace_a_pod_stuck_terminating() -> None:
    """The StatefulSet controller creates web-1 again only once the old web-1 is gone: on a failed
    node it never goes, so the set stays one replica short from 105 s to the end — the classic
    outage. The node coming back (a crash: its kubelet boots, finds web-1 deleted and removes it)
    lets it create web-1 at once."""
    r = run(DOWN, kind="StatefulSet")
    assert times(r, "TaintManagerEviction", "pod/web-1") == [410]
    assert times(r, "Scheduled", "pod/web-1") == [1]  # never again
    assert min(series(r, "workload.web.ready")[105:]) == 2 and series(r, "workload.web.ready")[-1] == 2
    back = run([*DOWN, {"kind": "nodeUp", "node": "node-2", "at": "7m"}], kind="StatefulSet")
    assert times(back, "Scheduled", "pod/web-1") == [1, 420]
    assert series(back, "workload.web.ready")[-1] == 3
    accounted(back)


def test_a_pods_own_toleration_seconds() -> None:
    """A toleration of the unreachable taint stops DefaultTolerationSeconds adding one: 30 s
    evicts at 110 + 30 s; one without tolerationSeconds tolerates it forever."""
    tol = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    r = run(DOWN, pod_spec={"tolerations": [{**tol, "tolerationSeconds": 30}]})
    assert times(r, "TaintManagerEviction", "pod/web-1") == [140]
    forever = run(DOWN, pod_spec={"tolerations": [tol]})
    assert forever.events_for("pod/web-1", "TaintManagerEviction") == []
    quick = run(DOWN, cluster={"defaultUnreachableToleration": "60s"})
    assert times(quick, "TaintManagerEviction", "pod/web-1") == [170]


def test_node_back_before_eviction_cancels_it_and_restarts_its_containers() -> None:
    """A crashed node back at 3 m: its kubelet starts (NodeReady), the containers died with the
    machine and start anew (a restart, SandboxChanged); the controller's next pass (3 m) removes
    the NoExecute taint and the taint eviction controller cancels web-1's deletion."""
    r = run([*DOWN, {"kind": "nodeUp", "node": "node-2", "at": "3m"}])
    assert times(r, "NodeReady", "node/node-2") == [180]
    assert times(r, "SandboxChanged", "pod/web-1") == [180]
    (c,) = r.events_for("pod/web-1", "TaintManagerEviction")
    assert (c.time_ms, c.message) == (180_000, "Cancelling deletion of Pod default/web-1")
    assert r.workload("web").restarts == {"web-0": 0, "web-1": 1, "web-2": 0}
    assert times(r, "Started", "pod/web-1") == [0, 180.1]  # after containerRestartDelay
    assert times(r, "PodReady", "pod/web-1") == [0, 181]
    assert "web-3" not in r.workload("web").restarts
    accounted(r)


def test_node_back_before_the_grace_is_never_noticed() -> None:
    """Back at 90 s, before the controller noticed: no NodeNotReady, the pods never marked; a
    crash still restarted the containers, and nothing answered in between (30 s × 10/s)."""
    r = run([*DOWN, {"kind": "nodeUp", "node": "node-2", "at": "90s"}])
    assert r.events_for("node/node-2", "NodeNotReady") == []
    assert r.events_for("node/node-2", "NodeReady") == []
    assert r.workload("web").restarts["web-1"] == 1
    assert r.route("/").failed["not_answering"] == 300


def test_partition_keeps_the_processes_and_stops_the_deleted_pod_when_back() -> None:
    """A partition looks the same to the control plane, but the node's processes and kubelet run
    on: back at 7 m no container restarted; the kubelet learns then that web-1 was deleted at
    410 s and stops it with its grace period (Killing); the ReplicaSet's web-3 runs elsewhere."""
    r = run([{**DOWN[0], "mode": "partition"}, {"kind": "nodeUp", "node": "node-2", "at": "7m"}])
    assert times(r, "NodeNotReady", "node/node-2") == [105]
    assert times(r, "TaintManagerEviction", "pod/web-1") == [410]
    assert times(r, "Killing", "pod/web-1") == [420]
    assert r.workload("web").restarts["web-1"] == 0
    assert r.nodes[1].pods_at_end == []
    assert r.events_for("node/node-2", "Starting") == []
    accounted(r)


def test_zone_down_taints_one_node_every_ten_seconds() -> None:
    """Zone b's three nodes fail at once: all Unknown at 105 s; the zone's tainting queue takes one
    node per token of --node-eviction-rate (0.1/s, burst 1): 110, 120, 130 s, so the pods go at
    410, 420, 430 s (zone a stays healthy: zone b is fully disrupted, tainted at the healthy rate)."""
    nodes = {"count": 6, "zones": ["a", "b"]}
    r = run([{"kind": "zoneDown", "zone": "b", "at": "60s"}], nodes=nodes, replicas=6, rate=0)
    assert [node_of(r, f"web-{i}") for i in range(6)] == [f"node-{i}" for i in range(1, 7)]
    assert [times(r, "NodeTainted", f"node/node-{i}") for i in (2, 4, 6)] == [[110], [120], [130]]
    assert [times(r, "TaintManagerEviction", f"pod/web-{i}") for i in (1, 3, 5)] == [[410], [420], [430]]


def test_every_zone_down_evicts_nothing() -> None:
    """Every node of every zone not Ready: handleDisruption's master disruption mode stops all
    tainting — the pods are marked not Ready, never evicted."""
    nodes = [{"name": "node-1", "zone": "a"}, {"name": "node-2", "zone": "a"}]
    r = run([{"kind": "zoneDown", "zone": "a", "at": "60s"}], nodes=nodes, replicas=2, rate=0)
    assert times(r, "NodeNotReady", "node/node-1") == [105]
    assert r.events_for(reason="NodeTainted") == [] and r.events_for(reason="TaintManagerEviction") == []
    assert series(r, "workload.web.ready")[-1] == 0


def test_a_partially_disrupted_small_zone_stops_tainting() -> None:
    """Three of four nodes of a zone down: partial disruption (more than 2, at least 55 %) of a
    zone of at most 50 nodes: ReducedQPSFunc gives 0, no node is tainted while another zone is
    healthy."""
    nodes = [{"name": f"node-{i}", "zone": "a"} for i in range(1, 5)] + [{"name": "node-5", "zone": "b"}]
    acts = [{"kind": "nodeDown", "node": f"node-{i}", "at": "60s"} for i in (1, 2, 3)]
    r = run(acts, nodes=nodes, replicas=5, rate=0)
    assert len(r.events_for(reason="NodeNotReady", obj="node/node-1")) == 1
    assert r.events_for(reason="NodeTainted") == []


@pytest.mark.parametrize("step", ["1s", "500ms"])
def test_timings_do_not_depend_on_the_step(step: str) -> None:
    r = simulate(
        scenario(
            probes=READINESS, replicas=3, duration="7m", step=step,
            spec={"actions": DOWN, "cluster": {"nodes": NODES}},
        )
    )  # fmt: skip
    assert times(r, "NodeNotReady", "node/node-2") == [105]
    assert times(r, "TaintManagerEviction", "pod/web-1") == [410]
