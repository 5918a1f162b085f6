"""A GKE node pool upgrade run for real by the lab (issue 45 §4), beside the simulation: 3 pods on
3 nodes (one per zone) behind a Service, a PodDisruptionBudget of maxUnavailable 1, the pool
upgraded at 2 s with maxSurge 1 and new nodes Ready 5 s after their creation (GKE's is a minute
or more: shrunk so that the run stays short, the mechanism is the same). The lab takes every
decision from the engine's code (engine/pool_upgrade.py's PoolUpgrades, over engine/drains.py and
kube/disruption.py) and carries it out on the pods' processes:

- GKE's surge upgrade (cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies,
  "Surge upgrades"): node-4 is created at 2 s and Ready at 7 s; node-1 is then cordoned and
  drained, and deleted once drained; node-5 is created for node-2 at once, and so on;
- the drain asks the Eviction API for each pod (staging/src/k8s.io/kubectl/pkg/drain/drain.go
  evictPods): with 3 Ready replicas and maxUnavailable 1, disruptionsAllowed is 1
  (pkg/controller/disruption/disruption.go updatePdbStatus), the pod is evicted at once and its
  process gets SIGTERM; waitForDelete polls every 1 s (drain.go): the pod is seen gone 1 s later;
- its ReplicaSet replaces it at once; the scheduler binds the replacement to the new node (the old
  one is cordoned: NodeUnschedulable; the new one is the emptiest: LeastAllocated); the
  replacement's app starts in 1.5 s and its readiness probe (every 1 s) finds it Ready 2 s after.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from probesim.engine import simulate
from probesim.lab.compare import compare
from probesim.lab.orchestrator import run_lab
from probesim.manifests.scenario import load_scenario
from probesim.model.scenario import Scenario
from probesim.results import Result
from tests.builders import http, scenario
from tests.lab.procs import alive, at, children_left, descendants, node_of, wait_until

CLUSTER: dict[str, Any] = {"nodes": {"count": 3, "zones": ["a", "b", "c"]}}
UPGRADE = [{"kind": "nodePoolUpgrade", "at": "2s", "maxSurge": 1, "nodeStartup": "5s"}]
BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
}
SLOTS = [
    # (created, old node, new node, evicted pod, its replacement)
    (2_000, "node-1", "node-4", "web-0", "web-3"),
    (8_000, "node-2", "node-5", "web-1", "web-4"),
    (14_000, "node-3", "node-6", "web-2", "web-5"),
]
STARTUP_MS = 5_000
# How far the lab's times may fall from the simulated ones where real processes decide them:
# the replacement's start, its first probe and the lab's loop (every 50 ms) take a little real
# time, more on a busy machine. An evicted pod is seen gone by the drain's next 1 s poll: on time
# when its process exited within the second, which a SIGTERMed test app does (the default
# action, no handler), one poll late (1 s) at worst.
LATE_MS = 600
POLL_MS = 1_000


def upgrade_scenario() -> Scenario:
    """20 requests a second, 1 s client timeout; readiness every second; the first pods warm,
    each replacement's app answering 1.5 s after its start."""
    return scenario(
        replicas=3,
        probes={"readinessProbe": http(periodSeconds=1)},
        behavior={"start": "1500ms"},
        overrides=[{"ordinals": [0, 1, 2], "containers": {"app": {"start": "0s"}}}],
        duration="23s",
        step="500ms",
        traffic=[{"path": "/", "rate": 20, "timeout": "1s"}],
        manifests=[BUDGET],
        spec={"actions": UPGRADE, "cluster": CLUSTER},
    )


NODE_REASONS = ("CreatingNode", "NodeReady", "Cordon", "Drained", "RemovingNode", "NodePoolUpgraded")


def node_story(r: Result) -> list[tuple[str, str]]:
    """The upgrade's node events and evictions in order, without their times."""
    keep = (*NODE_REASONS, "EvictingPod", "PodEvicted")
    return [(e.object, e.reason) for e in r.events if e.reason in keep]


def test_a_pool_upgrade_of_3_nodes_agrees_with_the_simulation(busy: int) -> None:
    sc = upgrade_scenario()
    sim = simulate(sc)
    for created, old, new, pod, repl in SLOTS:
        ready = created + STARTUP_MS
        assert at(sim, f"node/{new}", "CreatingNode") == [created]
        assert at(sim, f"node/{new}", "NodeReady") == [ready]
        assert at(sim, f"node/{old}", "Cordon") == [ready]
        assert at(sim, f"pod/{pod}", "EvictingPod") == [ready] and at(sim, f"pod/{pod}", "Killing") == [ready]
        assert at(sim, f"pod/{pod}", "PodEvicted") == [ready + POLL_MS]
        assert at(sim, f"node/{old}", "RemovingNode") == [ready + POLL_MS]
        assert node_of(sim, repl) == new
        assert at(sim, f"pod/{repl}", "PodReady") == [ready + 2_000]  # probes at +0, +1 s fail
    assert at(sim, "nodepool/default", "NodePoolUpgraded") == [20_000]
    assert sim.route("/").failed_total == 0

    started = time.monotonic()
    lab = run_lab(sc)
    assert time.monotonic() - started < 75

    # The same story, in the same order: each node created, Ready, the old one cordoned, its pod
    # evicted, the old node drained and removed, the next begun; the upgrade's end.
    assert node_story(lab) == node_story(sim)
    assert [node_of(lab, f"web-{i}") for i in range(6)] == [
        "node-1", "node-2", "node-3", "node-4", "node-5", "node-6"
    ]  # fmt: skip
    # The engine's decisions at the simulated times, shifted only by the polls that found an
    # evicted pod's process not yet gone (each drain's own lateness: 0 or one poll).
    shift = 0
    for created, old, new, pod, repl in SLOTS:
        ready = created + shift + STARTUP_MS
        assert at(lab, f"node/{new}", "CreatingNode") == [created + shift]
        assert at(lab, f"node/{new}", "NodeReady") == [ready]
        assert at(lab, f"node/{old}", "Cordon") == [ready]
        assert at(lab, f"pod/{pod}", "EvictingPod") == [ready]
        assert at(lab, f"pod/{pod}", "EvictionRefused") == []
        (evicted,) = at(lab, f"pod/{pod}", "PodEvicted")
        assert evicted in (ready + POLL_MS, ready + 2 * POLL_MS)
        assert at(lab, f"node/{old}", "Drained") == [evicted] and at(lab, f"node/{old}", "RemovingNode") == [
            evicted
        ]
        # ... carried out on real processes: the pod SIGTERMed, its replacement Ready, each
        # within LATE_MS of the simulated time.
        (killing,) = at(lab, f"pod/{pod}", "Killing")
        assert ready <= killing <= ready + LATE_MS
        (repl_ready,) = at(lab, f"pod/{repl}", "PodReady")
        assert ready + 2_000 <= repl_ready <= ready + 2_000 + LATE_MS
        shift += evicted - (ready + POLL_MS)
    assert shift <= POLL_MS, "more than one drain's poll found its pod's process not yet gone"
    assert lab.route("/").failed_total <= 2  # compare's slack on counts

    rows = {(r["object"], r["reason"]): r for r in compare(sim, lab)}
    for _, old, new, pod, repl in SLOTS:
        for key in [
            (f"node/{new}", "CreatingNode"),
            (f"node/{new}", "NodeReady"),
            (f"node/{old}", "Cordon"),
            (f"node/{old}", "RemovingNode"),
            (f"node/{old}", "Drained"),
            (f"pod/{pod}", "EvictingPod"),
            (f"pod/{pod}", "PodEvicted"),
            (f"pod/{repl}", "PodReady"),
            (f"pod/{repl}", "node"),
        ]:
            assert rows[key]["agree"] is True, rows[key]
    assert rows[("nodepool/default", "NodePoolUpgraded")]["agree"] is True
    assert rows[("route//", "failed requests")]["agree"] is True
    assert children_left() == [busy]  # the lab's every process gone


def test_interrupted_in_the_middle_of_a_pool_upgrade_the_lab_leaves_no_process_behind(tmp_path: Path) -> None:
    """Ctrl-C while node-1's pod is being evicted (its app ignores SIGTERM and has a 60 s grace
    period: the drain waits on it) with node-3 created and web-2 on it: every process goes,
    nothing left behind."""
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
            "metadata": {"name": "pool-upgrade-interrupted"},
            "spec": {
                "duration": "80s",
                "traffic": [{"rate": 10, "timeout": "1s"}],
                "cluster": {"nodes": {"count": 2}},
                "actions": [{"kind": "nodePoolUpgrade", "at": "1s", "nodeStartup": "1s"}],
                "behavior": {"web": {"containers": {"app": {"ignoresSigterm": True}}}},
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"terminationGracePeriodSeconds": 60, "containers": [container]},
                },
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
    sim = simulate(load_scenario(str(spec)))
    # node-1's pod is evicted at 2 s and holds the drain until its grace period ends: SIGKILL at
    # 62 s, gone the step after, seen gone by the drain's poll at 63 s.
    assert at(sim, "pod/web-0", "EvictingPod") == [2_000]
    assert at(sim, "pod/web-0", "PodEvicted") == [63_000]
    probesim = Path(sys.executable).parent / "probesim"
    proc = subprocess.Popen(
        [str(probesim), "lab", str(spec)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    seen: set[tuple[int, int]] = set()

    def apps() -> int:
        mine = descendants(proc.pid)
        seen.update(mine)
        return len(mine)

    try:
        # The 2 pods' apps and their replacements' (loaded ahead) are up: the run is about to
        # start; 10 s later it is in the middle of the upgrade (node-1's drain waits until 63 s).
        assert wait_until(lambda: apps() >= 4, 40), "the lab's processes did not start within 40 s"
        wait_until(lambda: apps() < 0, 10)  # (10 s, recording every process seen)
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pid, _ in alive(seen):
            os.kill(pid, signal.SIGKILL)
    assert not alive(seen), f"left behind: {alive(seen)}"
