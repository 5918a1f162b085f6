"""Node faults run for real by the lab (issue 45 §4), beside the simulation: 3 pods on 3 nodes
(one per zone) behind a Service, node-2 (web-1's) crashes at 11 s. The node lifecycle
controller's timings are shrunk so that a run stays short, and the lab takes them from the same
code as the engine (engine/nodes.py over kube/node_lifecycle.py):

- the kubelet renews its Lease every 10 s (pkg/kubelet/nodelease: renewInterval 0.25 × 40 s): its
  last renewal is at 10 s, which the pass at 10 s sees (probeTimestamp 10 s);
- monitorNodeHealth every nodeMonitorPeriod (1 s here); the first pass strictly after
  probeTimestamp + nodeMonitorGracePeriod (4 s here) sets Ready Unknown and runs MarkPodsNotReady
  (node_lifecycle_controller.go tryUpdateNodeHealth, controller_utils.go MarkPodsNotReady): 15 s;
- the next pass queues the node for the unreachable NoExecute taint (processTaintBaseEviction),
  tainted at once by a full token bucket (doNoExecuteTaintingPass): 16 s;
- the taint eviction controller deletes the pod when its toleration runs out
  (taint_eviction.go processPodOnNode; DefaultTolerationSeconds, 3 s here): 19 s; its ReplicaSet
  replaces it at once, on node-1 (node-2 has the NoSchedule taint; LeastAllocated ties go to the
  first node).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.lab.compare import compare, phase_bounds, simulated_hosts
from probesim.lab.headroom import judge
from probesim.lab.headroom_demand import Demand
from probesim.lab.headroom_monitor import Monitor, netstat
from probesim.lab.orchestrator import run_lab
from probesim.model.scenario import Scenario
from probesim.results import Event, Result
from tests.builders import http, scenario
from tests.lab.procs import alive, at, children_left, descendants, failed_sent, node_of, wait_until

CLUSTER: dict[str, Any] = {
    "nodes": {"count": 3, "zones": ["a", "b", "c"]},
    "nodeMonitorPeriod": "1s",
    "nodeMonitorGracePeriod": "4s",
    "defaultUnreachableToleration": "3s",
}
DOWN = [{"kind": "nodeDown", "node": "node-2", "at": "11s"}]
# How far the lab's times may fall from the simulated ones: its loop looks every 50 ms, and a
# busy machine delays it; the replacement's start and first probe take a little real time.
LATE_MS = 500


def crash_scenario(**kw: Any) -> Scenario:
    """20 requests a second with a 1 s client timeout; readiness every second."""
    return scenario(
        replicas=3,
        probes={"readinessProbe": http(periodSeconds=1)},
        duration="24s",
        traffic=[{"path": "/", "rate": 20, "timeout": "1s"}],
        spec={"actions": DOWN, "cluster": CLUSTER},
        **kw,
    )


def test_a_crashed_node_in_the_lab_agrees_with_the_simulation(busy: int) -> None:
    sc = crash_scenario()
    sim = simulate(sc)
    # Simulated: the timings above, and a third of the requests sent over 11-15 s lost.
    assert [node_of(sim, f"web-{i}") for i in range(4)] == ["node-1", "node-2", "node-3", "node-1"]
    assert at(sim, "node/node-2", "NodeDown") == [11_000]
    assert at(sim, "node/node-2", "NodeNotReady") == [15_000]
    assert at(sim, "pod/web-1", "PodNotReady") == [15_000]
    assert at(sim, "node/node-2", "NodeTainted") == [16_000]
    assert at(sim, "pod/web-1", "TaintManagerEviction") == [19_000]
    assert at(sim, "pod/web-3", "PodReady") == [19_000]
    assert sim.route("/").failed["not_answering"] == 27  # 80 sent over 11-15 s, every third to web-1
    assert phase_bounds(sim, 24_000) == [
        (0, 11_000, "start"),
        (11_000, 15_000, "NodeDown"),
        (15_000, 19_000, "NodeNotReady"),
        (19_000, 24_000, "TaintManagerEviction"),
    ]

    started = time.monotonic()
    lab = run_lab(sc)
    assert time.monotonic() - started < 60

    # The same pods on the same nodes, the replacement on node-1.
    assert [node_of(lab, f"web-{i}") for i in range(4)] == ["node-1", "node-2", "node-3", "node-1"]
    # The control plane's decisions at the simulated times (the same code decides them)...
    assert at(lab, "node/node-2", "NodeDown") == [11_000]
    assert at(lab, "node/node-2", "NodeNotReady") == [15_000]
    assert at(lab, "node/node-2", "NodeTainted") == [16_000]
    assert at(lab, "pod/web-1", "TaintManagerEviction") == [19_000]
    # ... carried out on real processes, each when the lab did it: web-1 out of the endpoints
    # (its PodNotReady) within LATE_MS of 15 s, the replacement Ready within a second of 19 s.
    (not_ready,) = at(lab, "pod/web-1", "PodNotReady")
    assert 15_000 <= not_ready <= 15_000 + LATE_MS
    (ready,) = at(lab, "pod/web-3", "PodReady")
    assert 19_000 <= ready <= 20_000
    # web-1 never answered again: no PodReady of its after its first, never a restart, and it
    # stays Terminating (its node never came back): Started once.
    assert len(at(lab, "pod/web-1", "PodReady")) == 1 and len(at(lab, "pod/web-1", "Started")) == 1
    # The requests lost before the node controller noticed: the stopped processes answer nothing,
    # each client times out (the simulation's not_answering), ±10 % of the simulated 27.
    lost = failed_sent(lab, 11_000, 15_000)
    assert abs(lost - 27) <= 3, lost
    assert lab.route("/").failed["timeout"] >= 24
    assert failed_sent(lab, 15_000 + LATE_MS, 24_000) == 0  # none once the endpoints dropped it

    rows = {(r["object"], r["reason"]): r for r in compare(sim, lab)}
    for key in [
        ("node/node-2", "NodeNotReady"),
        ("pod/web-1", "PodNotReady"),
        ("pod/web-1", "TaintManagerEviction"),
        ("pod/web-3", "PodReady"),
        ("pod/web-3", "node"),
        ("route//", "failed, sent 11-15s (from NodeDown)"),
        ("route//", "failed, sent 19-24s (from TaintManagerEviction)"),
    ]:
        assert rows[key]["agree"] is True, rows[key]
    assert children_left() == [busy]  # the lab's every process gone


def back_scenario(mode: str) -> Scenario:
    """node-2 fails at 11 s (crash or partition) and is back at 13 s, before the node controller
    notices (15 s)."""
    back = [{**DOWN[0], "mode": mode}, {"kind": "nodeUp", "node": "node-2", "at": "13s"}]
    return scenario(
        replicas=3,
        probes={"readinessProbe": http(periodSeconds=1)},
        duration="18s",
        traffic=[{"path": "/", "rate": 20, "timeout": "1s"}],
        spec={"actions": back, "cluster": CLUSTER},
    )


def test_a_partitioned_node_back_goes_on_where_it_stopped(busy: int) -> None:
    """Partition semantics (node_faults.py _node_up): the pod's processes go on (SIGCONT), never
    restarted nor marked not Ready; what was sent to it while cut off failed, nothing after."""
    sc = back_scenario("partition")
    sim = simulate(sc)
    assert at(sim, "node/node-2", "NodeUp") == [13_000]
    assert at(sim, "pod/web-1", "PodNotReady") == [] and at(sim, "node/node-2", "NodeNotReady") == []
    assert sim.route("/").failed["not_answering"] == 14  # 40 sent over 11-13 s, every third to web-1

    lab = run_lab(sc)

    assert at(lab, "node/node-2", "NodePartitioned") == [11_000]
    assert at(lab, "node/node-2", "NodeUp") == [13_000]
    assert at(lab, "pod/web-1", "PodNotReady") == [] and len(at(lab, "pod/web-1", "Started")) == 1
    assert abs(failed_sent(lab, 11_000, 13_000) - 14) <= 2
    assert failed_sent(lab, 13_000 + LATE_MS, 18_000) == 0
    assert children_left() == [busy]


def test_a_crashed_node_back_restarts_its_pods_containers(busy: int) -> None:
    """Crash semantics: the kubelet starts anew (Starting), the pod's sandbox changed, its old
    process killed and a new container started; Ready again once its probe passes (the
    simulation: started after containerRestartDelay, 13.1 s, Ready at its next probe, 14 s)."""
    sc = back_scenario("crash")
    sim = simulate(sc)
    assert at(sim, "pod/web-1", "SandboxChanged") == [13_000]
    assert at(sim, "pod/web-1", "Started") == [0, 13_100]
    assert at(sim, "pod/web-1", "PodReady") == [0, 14_000]

    lab = run_lab(sc)

    assert at(lab, "node/node-2", "Starting") == [13_000]
    assert at(lab, "pod/web-1", "SandboxChanged") == [13_000]
    _, again = at(lab, "pod/web-1", "Started")
    assert 13_100 <= again <= 13_100 + LATE_MS  # a new test app, loaded ahead
    (_, ready) = at(lab, "pod/web-1", "PodReady")
    assert abs(ready - 14_000) <= 1000
    assert lab.workloads[0].restarts["web-1"] == 1
    assert failed_sent(lab, 14_000 + LATE_MS, 18_000) == 0
    assert children_left() == [busy]


def mesh_scenario() -> Scenario:
    """A client sidecar with outlier detection (5 consecutive 5xx, 1 s interval, no retries) in
    front of the same 3 pods; Istio's 10 s connect timeout. node-2 crashes at 11 s; the grace is
    14 s here, so that the node controller notices only at 25 s (probeTimestamp 10 s + 14 s)."""
    rule = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": "web"},
        "spec": {
            "host": "web",
            "trafficPolicy": {
                "loadBalancer": {"simple": "ROUND_ROBIN"},
                "outlierDetection": {
                    "consecutive5xxErrors": 5,
                    "interval": "1s",
                    "baseEjectionTime": "30s",
                    "maxEjectionPercent": 50,
                },
            },
        },
    }
    no_retries = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": "web"},
        "spec": {
            "hosts": ["web"],
            "http": [{"route": [{"destination": {"host": "web"}}], "retries": {"attempts": 0}}],
        },
    }
    return scenario(
        replicas=3,
        probes={"readinessProbe": http(periodSeconds=1)},
        duration="28s",
        traffic=[{"path": "/", "rate": 30, "clients": 1, "timeout": "15s"}],
        manifests=[rule, no_retries],
        spec={"actions": DOWN, "cluster": {**CLUSTER, "nodeMonitorGracePeriod": "14s"}},
    )


def enforced(r: Result) -> list[Event]:
    return [e for e in r.events if e.reason == "OutlierEject" and '"enforced":true' in e.message]


def test_the_client_sidecar_ejects_the_dead_host_in_the_lab_as_simulated(busy: int) -> None:
    """A dead host answers no SYN: the sidecar's first request to web-1 after the crash hangs on
    the connection it kept alive, the next one opens a new connection, and the requests waiting
    for it fail with its 10 s connect timeout (503 UF), five in a row: web-1 ejected then —
    before the node controller notices at 25 s. In the lab the stopped app's backlog is shrunk
    to nothing (its one queued slot the lab's own), so its new connections get no answer either."""
    sc = mesh_scenario()
    sim = simulate(sc)
    (eject,) = enforced(sim)
    assert at(sim, "pod/web-1", "PodNotReady") == [25_000]
    assert 21_000 <= eject.time_ms < 21_500  # the first new connection (~11.1 s) + 10 s
    assert '"CONSECUTIVE_5XX"' in eject.message

    lab = run_lab(sc)

    hosts = {**simulated_hosts(sc), **lab.hosts}
    got = enforced(lab)
    # The client saw what the simulation's did: 503 connect failures, a dead host's (no answer).
    assert lab.route("/").failed["not_answering"] > 0 and lab.route("/").failed["restarting"] == 0
    assert got, "the lab's sidecar never ejected the dead host"
    assert '"CONSECUTIVE_5XX"' in got[0].message
    assert lab.hosts.get(str(json.loads(got[0].message)["upstream_url"])) == "web-1"
    assert abs(got[0].time_ms - eject.time_ms) <= 1000, (got[0].time_ms, eject.time_ms)
    rows = {(r["object"], r["reason"]): r for r in compare(sim, lab, 1000, hosts)}
    assert rows[("sidecar/client-0 → pod/web-1", "OutlierEject")]["agree"] is True
    assert at(lab, "node/node-2", "NodeNotReady") == [25_000]
    assert children_left() == [busy]


def test_interrupted_while_a_node_is_down_the_lab_leaves_no_process_behind(tmp_path: Path) -> None:
    """Ctrl-C while node-2's pod is stopped (SIGSTOP): it is continued and killed with the rest,
    nothing left behind (not even a stopped process)."""
    labels = {"app": "web"}
    container = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1},
    }
    docs = [
        {
            "apiVersion": "probesim.dev/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "node-down-stopped"},
            "spec": {
                "duration": "60s",
                "traffic": [{"rate": 10, "timeout": "1s"}],
                "cluster": {"nodes": {"count": 2}},
                "actions": [{"kind": "nodeDown", "node": "node-2", "at": "2s"}],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
        },
    ]
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    probesim = Path(sys.executable).parent / "probesim"
    proc = subprocess.Popen(
        [str(probesim), "lab", str(spec)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    seen: set[tuple[int, int]] = set()

    def stopped_one() -> bool:
        mine = descendants(proc.pid)
        seen.update(mine)
        return any(_state(pid) == "T" for pid, _ in mine)

    try:
        assert wait_until(stopped_one, 40), "no pod process was stopped within 40 s"
        assert sum(1 for pid, _ in seen if _state(pid) == "T") == 1  # node-2's pod's app only
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pid, _ in alive(seen):
            os.kill(pid, signal.SIGKILL)
    assert not alive(seen), f"left behind: {alive(seen)}"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def test_a_statefulset_on_nodes_is_refused_in_one_line() -> None:
    before = children_left()  # (this module's busy process, when a test before started it)
    sts = scenario(
        kind="StatefulSet", workload_spec={"serviceName": "web"}, spec={"cluster": CLUSTER, "actions": DOWN}
    )
    with pytest.raises(InputError) as e:
        run_lab(sts)
    assert "\n" not in str(e.value)
    assert "StatefulSet web: the lab runs the pods of Deployments on several nodes only" in str(e.value)
    assert children_left() == before


def test_a_dead_hosts_dropped_syns_are_not_taken_for_the_labs_overflows() -> None:
    """The SYNs a down node's shrunk accept queue drops are the scenario's (lab.nodes counts them
    while any queue is shrunk): left out of the accept-queue overflows that make a run not
    faithful; what else overflowed still counts."""
    m = Monitor(dict)
    m.net0 = {"ListenOverflows": 0, "ListenDrops": 0}
    now = netstat()
    if not now:
        pytest.skip("no /proc/net/netstat here")
    m.dead_hosts = {k: v - 5 for k, v in now.items()}  # all but 5 of each were the dead hosts'
    h = judge(m, 1.0, 1024, Demand(), {}, {})
    assert h.listen_overflows >= 5 and h.listen_drops >= 5  # (others on this machine may add some)
    m.dead_hosts = {k: v + 10**9 for k, v in now.items()}
    h = judge(m, 1.0, 1024, Demand(), {}, {})
    assert (h.listen_overflows, h.listen_drops) == (0, 0)
    assert not any("accept queues overflowed" in n for n in h.notes)


def test_the_labs_client_sidecar_connects_with_the_destination_rules_connect_timeout() -> None:
    """node-failure-outlier's DestinationRule sets connectionPool.tcp.connectTimeout 1s: the
    lab's client sidecar (the translation of probesim envoy-config) gives up a connection to the
    dead host after 1 s, as the simulation's does (engine/sidecar/route.py), so that outlier
    detection counts its 503s as fast; Istio sets the cluster's connect_timeout from it
    (pilot/pkg/networking/core/cluster_traffic_policy.go applyConnectionPool). Without a rule:
    Istio's default, 10 s."""
    from probesim.mesh.envoy import Translator
    from tests.builders import builtin

    sc = builtin("node-failure-outlier")
    tr = Translator(list(sc.destination_rules), list(sc.virtual_services), list(sc.services), {})
    clusters = tr.bootstrap(10000)["static_resources"]["clusters"]
    assert [c["connect_timeout"] for c in clusters] == ["1s"]
    plain = builtin("node-failure")
    tr = Translator([], [], list(plain.services), {})
    assert [c["connect_timeout"] for c in tr.bootstrap(10000)["static_resources"]["clusters"]] == ["10s"]
