"""The node stresses of probesim check --stress: the node holding the most of a workload's
replicas crashes at 2m (node-down), or its zone (zone-down); the figures follow the node lifecycle
controller (pkg/controller/nodelifecycle/node_lifecycle_controller.go: Unknown at the first
monitor pass, every nodeMonitorPeriod 5 s, after the last lease renewal + nodeMonitorGracePeriod
50 s; the unreachable NoExecute taint at the next pass) and the taint eviction controller
(pkg/controller/tainteviction: the pod evicted after its toleration, 300 s from the
DefaultTolerationSeconds admission plugin), then the ReplicaSet's replacement on another node."""

from __future__ import annotations

from pathlib import Path

from probesim.analysis.node_stresses import DEFAULT_NODES_SAID
from probesim.analysis.stress import base_scenario, run_one, stress_scenario
from probesim.analysis.stress_verdicts import StressResult, StressThresholds
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


# node-drain: a GKE node pool upgrade at 2m (maxSurge 1, maxUnavailable 0) through the workload's
# PodDisruptionBudget. Each old node: a new node created, Ready 60 s later, then the old one
# cordoned and drained as kubectl drain does (pkg/drain/drain.go evictPods: an eviction refused with
# 429 tried again after EvictErrorRetryDelay 5 s; waitForDelete polling every 1 s), then deleted.
BUDGET = """---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web}}
spec: {{{budget}, selector: {{matchLabels: {{app: web}}}}}}
"""
# Warm pods (the three that ran before the upgrade) start at once; a replacement takes 60 s, and
# the liveness probe (first at 10 s, every 10 s, 3 failures) kills it at 30 s, before it answers.
SLOW = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  duration: 5m
  behavior:
    web:
      containers: {app: {start: 60s}}
      pods: [{ordinals: [0, 1, 2], containers: {app: {start: 0s}}}]
  traffic: [{service: web, path: /, rate: 30, start: 30s}]
"""
LIVENESS = "          livenessProbe: {httpGet: {path: /ready, port: http}, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 3}\n"


def drained(budget: str, slow: bool = False) -> StressResult:
    text = manifest() + BUDGET.format(budget=budget)
    if slow:
        text = text.replace("          resources:", LIVENESS + "          resources:")
    objs = k8s.parse(load_docs(text, "m.yaml"))
    w = objs.workloads[0]
    scenario = SLOW if slow else SCENARIO.format(nodes="")
    sc = scenario_from_text(scenario + "---\n" + text, "s.yaml", Path("."))
    sc_stress, not_run = stress_scenario(base_scenario(w, objs.services, sc), w, "node-drain")
    return run_one((0, "Deployment/web", "default", "node-drain", sc_stress, StressThresholds(), not_run))


def test_node_drain_through_a_budget_of_one_completes_exact_figures() -> None:
    r = drained("maxUnavailable: 1")
    # node-4 created at 2m, Ready at 3m: node-1 cordoned, web-0 evicted (the budget allows 1),
    # gone by waitForDelete's poll at 3m1s, node-1 deleted and node-5 created; the same for node-2
    # (4m1s → 4m2s) and node-3 (5m2s → 5m3s). Each replacement is Ready 10 s after its start: one
    # replica of three down at a time, nothing failed (the endpoints drop the evicted pod first).
    assert (r.verdict, r.restarts, round(r.min_ready_fraction, 3), r.error_percent) == ("pass", 0, 0.667, 0.0)
    assert r.why == (
        "a node pool upgrade (maxSurge 1, maxUnavailable 0) from 2m: 3 of the 3 nodes holding replicas "
        "drained; every node replaced at 5m3s (3m3s); 0 of 14400 requests failed from its start; "
        f"on {DEFAULT_NODES_SAID}"
    )


def test_node_drain_stalls_on_a_budget_of_every_pod() -> None:
    # minAvailable 100 %: disruptionsAllowed 0 with every replica Ready (the disruption controller's
    # updatePdbStatus); every eviction of web-0 answers 429 from 3m, tried again every 5 s to the
    # run's end at 10m (84 refusals), and node-1 is never drained.
    r = drained("minAvailable: 100%")
    assert (r.verdict, r.restarts, r.min_ready_fraction) == ("fail", 0, 1.0)
    assert r.why.startswith(
        "the upgrade stalled: 84 evictions refused from 3m to the run's end by PodDisruptionBudget web: "
        "it allows no eviction even with every replica Ready (PS035) (GKE deletes the node with its pods "
        "after an hour); a node pool upgrade (maxSurge 1, maxUnavailable 0) from 2m: 0 of the 3 nodes "
        "holding replicas drained; 0 of 14400"
    )


def test_node_drain_a_slow_replacement_killed_by_liveness_fails() -> None:
    # web-3 replaces web-0 at 3m and needs 60 s to start; liveness (initialDelaySeconds 10,
    # periodSeconds 10, failureThreshold 3: prober_manager's worker, the third failure kills) kills it
    # at 3m30s, then 4m10s, 4m50s, 5m30s, 6m10s, 6m50s and 8m50s: 7 kills, 6 restarts by the run's
    # end (the 7th is waiting out its CrashLoopBackOff).
    # The budget (maxUnavailable 1) then refuses web-1's eviction from 4m1s, when node-5 is Ready.
    r = drained("maxUnavailable: 1", slow=True)
    assert (r.verdict, r.restarts) == ("fail", 6)
    assert r.why.startswith(
        "the upgrade stalled: 72 evictions refused from 4m1s to the run's end by PodDisruptionBudget web: "
        "a replacement was never Ready, so it allowed no further eviction (GKE deletes the node with its "
        "pods after an hour); 6 restarts > 0; replacement pod web-3 killed by its liveness probe 7 times "
        "(a liveness that acts before the app has started: a startupProbe covers the start); a node pool "
        "upgrade (maxSurge 1, maxUnavailable 0) from 2m: 1 of the 3 nodes holding replicas drained"
    )


def test_node_drain_skips_one_replica() -> None:
    one = stressed("node-drain", replicas=1)
    assert (one.verdict, one.why) == (
        "skipped",
        "one replica: its eviction is an outage whatever the settings",
    )


def test_node_drain_rerun_by_probesim_run_carries_the_budget() -> None:
    # The finding's fix (probesim run --workload --stress node-drain) simulates the very scenario
    # check did: the budget goes with it, or the rerun would not stall.
    from probesim.analysis.rerun import stress_scenario_of

    objs = k8s.parse(load_docs(manifest() + BUDGET.format(budget="minAvailable: 100%"), "m.yaml"))
    sc = stress_scenario_of(objs, None, "Deployment/web", "node-drain")
    assert [b.name for b in sc.disruption_budgets] == ["web"]
    assert [(a.kind, a.at) for a in sc.spec.actions] == [("nodePoolUpgrade", 120_000)]
    assert sc.spec.duration == 600_000
