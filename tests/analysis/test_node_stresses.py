"""The node stresses of probesim check --stress: the node holding the most of a workload's
replicas crashes at 2m (node-down), or its zone (zone-down); the figures follow the node lifecycle
controller (pkg/controller/nodelifecycle/node_lifecycle_controller.go: Unknown at the first
monitor pass, every nodeMonitorPeriod 5 s, after the last lease renewal + nodeMonitorGracePeriod
50 s; the unreachable NoExecute taint at the next pass) and the taint eviction controller
(pkg/controller/tainteviction: the pod evicted after its toleration, 300 s from the
DefaultTolerationSeconds admission plugin), then the ReplicaSet's replacement on another node."""

from __future__ import annotations

from pathlib import Path

from probesim.analysis.stress import (
    DEFAULT_NODES_SAID,
    StressResult,
    StressThresholds,
    base_scenario,
    run_one,
    stress_scenario,
)
from probesim.manifests import kubernetes as k8s
from probesim.manifests.scenario import scenario_from_text
from probesim.manifests.yamlsrc import load_docs


def manifest(replicas: int = 3, cpu: str = "500m") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: app
          image: example/web
          ports: [{{name: http, containerPort: 8080}}]
          readinessProbe: {{httpGet: {{path: /ready, port: http}}, periodSeconds: 5}}
          resources: {{requests: {{cpu: {cpu}}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec: {{selector: {{app: web}}, ports: [{{port: 80, targetPort: http}}]}}
"""


# The app starts in 10 s and serves 30 req/s from 30 s on; NODES is spec.cluster.nodes.
SCENARIO = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {{name: s}}
spec:
  duration: 5m
  {nodes}
  behavior:
    web: {{containers: {{app: {{start: 10s}}}}}}
  traffic: [{{service: web, path: /, rate: 30, start: 30s}}]
"""


def stressed(stress: str, nodes: str = "", replicas: int = 3) -> StressResult:
    text = manifest(replicas)
    objs = k8s.parse(load_docs(text, "m.yaml"))
    w = objs.workloads[0]
    sc = scenario_from_text(SCENARIO.format(nodes=nodes) + "---\n" + text, "s.yaml", Path("."))
    sc_stress, not_run = stress_scenario(base_scenario(w, objs.services, sc), w, stress)
    return run_one((0, "Deployment/web", "default", stress, sc_stress, StressThresholds(), not_run))


def test_node_down_on_the_default_cluster_exact_figures() -> None:
    r = stressed("node-down")
    # Spread by the scheduler's default spreading, one replica a node: node-1 (the first of a tie)
    # crashes at 2m; its last lease renewal at 1m50s, + 50 s grace: Unknown at the pass at 2m45s,
    # the pod NotReady then (endpoints drop it); a third of 30 req/s failed for those 45 s (450 of
    # 1350); tainted at 2m50s, evicted 300 s later (7m50s), the replacement on node-2 Ready once
    # its app answers, 10 s after it starts (8m).
    assert (r.verdict, r.restarts, round(r.min_ready_fraction, 3)) == ("pass", 0, 0.667)
    assert r.why == (
        "node node-1 (1 of 3 replicas) crashed at 2m; the node controller noticed at 2m45s; 450 of 1350 "
        f"requests failed meanwhile; all 3 Ready again at 8m; on {DEFAULT_NODES_SAID}"
    )


def test_zone_down_takes_the_zone_of_the_busiest_node() -> None:
    # The default cluster has one node a zone: its zone-down is node-down again, not run twice.
    r = stressed("zone-down")
    assert (r.verdict, r.why) == ("skipped", "zone a holds only node node-1, the node node-down crashes")
    # Six nodes in three zones: node-1 (a), node-2 (b), node-3 (c) take the replicas, zone a also
    # holds node-4; both fail at once, one replica lost, noticed as one node is.
    r = stressed("zone-down", "cluster: {nodes: {count: 6, zones: [a, b, c]}}")
    assert r.verdict == "pass"
    assert r.why == (
        "zone a (1 of 3 replicas) crashed at 2m; the node controller noticed at 2m45s; 450 of 1350 "
        "requests failed meanwhile; all 3 Ready again at 8m"
    )


# The user's nodes: only node-1 has room for the replicas (500m each), so all three land on it.
PACKED = "cluster: {nodes: [{name: node-1, zone: a, cpu: 4}, {name: node-2, zone: b, cpu: 200m}, {name: node-3, zone: c, cpu: 200m}]}"


def test_replicas_packed_on_one_node_lose_all_capacity() -> None:
    # What PS037 warns of: the node holding every replica crashes; from 2m45s no pod is Ready, and
    # no other node has room for a replacement: capacity never comes back.
    r = stressed("node-down", PACKED)
    assert (r.verdict, r.min_ready_fraction) == ("fail", 0.0)
    assert r.why.startswith(
        "ready fell to 0 % < 50 %; only 0 of 3 replicas Ready at the run's end; node node-1 (3 of 3 "
        "replicas) crashed at 2m; the node controller noticed at 2m45s; 1350 of 1350 requests failed meanwhile"
    )
    assert "default" not in r.why  # the user's nodes: no default cluster said


def test_zone_down_needs_zones_and_one_replica_is_not_judged() -> None:
    r = stressed("zone-down", "cluster: {nodes: {count: 3}}")
    assert (r.verdict, r.why) == ("skipped", "the scenario's nodes are in fewer than two zones")
    one = stressed("node-down", replicas=1)
    assert (one.verdict, one.why) == (
        "skipped",
        "one replica: its node's loss is an outage whatever the settings",
    )
