"""The node stresses of the stress suite (analysis/stress.py), for workloads of two replicas or
more, run 10 minutes on the scenario's nodes or a default cluster: ``node-down`` and ``zone-down``
crash the busiest node or its zone at the stress's event time (node_stress; judge_node);
``node-drain`` upgrades the node pool from then on as GKE does by default, each node drained in
turn through the PodDisruptionBudgets that select the workload (node_stress; judge_drain), and
fails on an upgrade that does not complete (a budget that allows no eviction stalls it), errors,
the lowest ready fraction or restarts.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import numpy as np

from probesim.analysis.stress_verdicts import (
    StressResult,
    StressThresholds,
    error_percent,
    request_counts,
    too_costly,
)
from probesim.cost import DEFAULT_MAX_COST, run_cost
from probesim.engine import simulate
from probesim.model.disruption import PodDisruptionBudget
from probesim.model.duration import format_ms, parse_ms
from probesim.model.kubernetes import Workload
from probesim.model.quantities import parse_cpu
from probesim.model.scenario import Scenario
from probesim.results.result import Result

# The cluster a node stress gives a workload whose scenario gives no nodes: three nodes in three
# zones, each with room for every replica (so that losing one never leaves a replacement Pending
# for want of room: the stress is about the workload, not the cluster's size).
DEFAULT_NODES = {"count": 3, "zones": ["a", "b", "c"]}
DEFAULT_LABEL = "probesim.dev/stress-default-node"  # marks them, to say so in the verdict
DEFAULT_NODES_SAID = (
    "3 nodes in zones a, b, c, each with room for every replica (no spec.cluster.nodes given)"
)
NODE_DURATION_MS = 10 * 60_000
_PLACED_MS = 2_000  # the pre-run that finds where the replicas are: placement is at once


def with_nodes(doc: dict[str, Any], w: Workload) -> bool:
    """Give ``doc`` (a stress scenario) the default cluster when it has no nodes; whether it did."""
    cluster = doc["spec"].setdefault("cluster", {})
    if cluster.get("nodes") is not None:
        return False
    n = max(w.spec.replicas, 1)
    cpu = sum(c.resources.requests.cpu or 0 for c in w.pod_spec.containers) * n
    mem = sum(c.resources.requests.memory or 0 for c in w.pod_spec.containers) * n
    node_cpu = parse_cpu(cluster.get("nodeCpu", 4))
    # The well-known labels a node has, and those the pods select (nodeSelector): they fit.
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **(w.pod_spec.node_selector or {}),
        DEFAULT_LABEL: "true",
    }
    cluster["nodes"] = {**DEFAULT_NODES, "cpu": f"{max(cpu, node_cpu)}m", "memory": max(mem, 16 * 2**30),
                        "labels": labels}  # fmt: skip
    return True


def busiest_node(doc: dict[str, Any], w: Workload) -> tuple[str, str | None, int]:
    """The node holding the most of ``w``'s replicas once they are placed (the first listed of a
    tie), its zone and how many: from a short run of the scenario without its traffic or actions
    (once for both node stresses of a workload)."""
    pre = copy.deepcopy(doc)
    pre["spec"].update({"duration": f"{_PLACED_MS}ms", "traffic": [], "actions": []})
    return _busiest(json.dumps(pre, sort_keys=True), f"{w.name}-")


@functools.lru_cache(maxsize=64)
def _busiest(pre: str, prefix: str) -> tuple[str, str | None, int]:
    r = simulate(Scenario.model_validate(json.loads(pre)))
    counts = [(sum(p.startswith(prefix) for p in n.pods_at_end), -i, n) for i, n in enumerate(r.nodes)]
    most, _, node = max(counts, key=lambda c: (c[0], c[1]))
    return node.name, node.zone, most


class NotApplied(Exception):
    """A stress that does not apply to this workload, and why (said in its verdict)."""


def node_stress(doc: dict[str, Any], w: Workload, stress: str, at_ms: int) -> Scenario | None:
    """``doc`` (the workload alone, as analysis/stress.py makes it) under a node stress at ``at_ms``:
    the workload's busiest node crashes (``node-down``), or every node of its zone (``zone-down``:
    only when the nodes have two zones or more, and the zone more nodes than that one: else it is
    node-down again), or the node pool is upgraded (``node-drain``). None when it does not apply;
    NotApplied, with why, when it is not run: a workload of one replica (its node's loss is an
    outage whatever its settings) or a run too costly."""
    if w.spec.replicas < 2:
        lost = "eviction" if stress == "node-drain" else "node's loss"
        raise NotApplied(f"one replica: its {lost} is an outage whatever the settings")
    with_nodes(doc, w)
    # Long enough to see the replacements: the node controller notices after its grace (about
    # 50 s), the pods are evicted DefaultTolerationSeconds (300 s) after the NoExecute taint.
    doc["spec"]["duration"] = f"{max(parse_ms(doc['spec']['duration']), NODE_DURATION_MS) // 1000}s"
    if stress == "node-drain":
        return _pool_upgrade(doc, at_ms)
    # The run's cost, checked before the pre-run that finds the node (as stress_scenario checks
    # every stress's): a node's failure costs the same whichever node it is.
    probe = copy.deepcopy(doc)
    first = Scenario.model_validate(probe).spec.cluster.node_list() or []
    probe["spec"].setdefault("actions", []).append({"kind": "nodeDown", "node": first[0].name, "at": "0s"})
    cost = run_cost(Scenario.model_validate(probe))
    if cost.units > DEFAULT_MAX_COST:
        raise NotApplied(too_costly(cost))
    node, zone, _ = busiest_node(doc, w)
    if stress == "zone-down":
        sc = Scenario.model_validate(doc)
        zones = {n.zone for n in sc.spec.cluster.node_list() or () if n.zone is not None}
        if zone is None or len(zones) < 2:
            return None
        if sum(n.zone == zone for n in sc.spec.cluster.node_list() or ()) == 1:
            raise NotApplied(f"zone {zone} holds only node {node}, the node node-down crashes")
        action: dict[str, Any] = {"kind": "zoneDown", "zone": zone, "at": f"{at_ms}ms"}
    else:
        action = {"kind": "nodeDown", "node": node, "at": f"{at_ms}ms"}
    doc["spec"].setdefault("actions", []).append(action)
    return Scenario.model_validate(doc)


# A node pool upgrade rather than kubectl drains at set times: it drains each node only once the
# last is done (so a budget that stalls one drain stalls the whole upgrade, as it does on GKE),
# and its surge node gives the evicted pods room (the stress is about the budget and the app's
# start-up, not the cluster's size). GKE's defaults: maxSurge 1, maxUnavailable 0, a new node
# Ready after about a minute, the budgets respected for an hour.
UPGRADE_PER_NODE_MS = 2 * 60_000  # the run's length per node, after the upgrade's start


def _pool_upgrade(doc: dict[str, Any], at_ms: int) -> Scenario:
    """``node-drain``: every node of the pool upgraded from ``at_ms`` on, one at a time."""
    n = len(Scenario.model_validate(doc).spec.cluster.node_list() or ())
    spec = doc["spec"]
    length = max(NODE_DURATION_MS, at_ms + n * UPGRADE_PER_NODE_MS)
    spec["duration"] = f"{max(parse_ms(spec['duration']), length) // 1000}s"
    action = {"kind": "nodePoolUpgrade", "at": f"{at_ms}ms", "maxSurge": 1, "maxUnavailable": 0}
    spec.setdefault("actions", []).append(action)
    sc = Scenario.model_validate(doc)
    cost = run_cost(sc)
    if cost.units > DEFAULT_MAX_COST:
        raise NotApplied(too_costly(cost))
    return sc


def guards(b: PodDisruptionBudget, w: Workload) -> bool:
    """Whether budget ``b`` selects ``w``'s pods (its namespace; a null selector selects none, an
    empty one every pod of the namespace, as policy/v1 has it)."""
    sel = b.spec.selector
    labels = w.spec.template.metadata.labels
    return b.metadata.namespace == w.metadata.namespace and sel is not None and sel.matches(labels)


def judge_node(
    index: int, shown: str, namespace: str, stress: str, r: Result, sc: Scenario, th: StressThresholds
) -> StressResult:
    """A node's or a zone's failure, judged from it on. The requests sent to the lost pods fail
    until the node lifecycle controller notices (its grace period): no probe can see a dead node,
    so those errors are reported, not judged (a mesh's outlier detection is what shortens them).
    Judged: whether capacity holds — the lowest ready fraction after the failure against
    minReadyFraction (every replica on the lost node or zone takes it to 0) — whether every
    replica is Ready again by the run's end (replacements placed and started elsewhere), and
    restarts."""
    w = sc.workloads[0]
    fault = next(a for a in sc.spec.actions if getattr(a, "kind", "") in ("nodeDown", "zoneDown"))
    nodes = sc.spec.cluster.node_list() or []
    lost_nodes = [n.name for n in nodes if n.name == getattr(fault, "node", None)
                  or (n.zone is not None and n.zone == getattr(fault, "zone", None))]  # fmt: skip
    prefix = f"{w.name}-"
    lost = sum(p.startswith(prefix) for n in r.nodes if n.name in lost_nodes for p in n.pods)
    summary = r.workload(w.name)
    judged = r.time_ms >= fault.at
    errors = error_percent(r, judged)
    ready = r.series[f"workload.{w.name}.ready"]
    desired = np.maximum(r.series[f"workload.{w.name}.desired"], 1)
    frac = ready[judged] / desired[judged]
    min_ready = float(frac.min()) if judged.any() else 0.0
    # When the controller noticed: the first lost node's Ready condition no longer True.
    down = [r.series[f"node.{n}.ready"] for n in lost_nodes if f"node.{n}.ready" in r.series]
    unknown = np.flatnonzero(judged & (np.min(down, axis=0) < 1)) if down else np.array([], int)
    noticed = int(r.time_ms[unknown[0]]) if unknown.size else None
    full = np.flatnonzero(judged & (ready >= desired))
    after_dip = (
        full[full > np.argmax(judged & (ready < desired))] if (judged & (ready < desired)).any() else full
    )
    back = int(r.time_ms[after_dip[0]]) if after_dip.size else None
    what = f"node {lost_nodes[0]}" if fault.kind == "nodeDown" else f"zone {fault.zone}"  # type: ignore[union-attr]
    of = f"{w.spec.replicas} replica" + ("" if w.spec.replicas == 1 else "s")
    said = [f"{what} ({lost} of {of}) crashed at {format_ms(fault.at)}"]
    until = r.time_ms < (noticed if noticed is not None else r.duration_ms + 1)
    ok, failed = request_counts(r, judged & until)
    if noticed is not None:
        said.append(f"the node controller noticed at {format_ms(noticed)}")
    else:
        said.append("the node controller did not notice by the run's end")
    said.append(f"{failed} of {ok + failed} requests failed meanwhile")
    if lost and back is not None:
        said.append(f"all {w.spec.replicas} Ready again at {format_ms(back)}")
    if any(n.labels.get(DEFAULT_LABEL) for n in nodes):
        said.append(f"on {DEFAULT_NODES_SAID}")
    if summary.all_ready_ms is None or summary.all_ready_ms > fault.at:  # the baseline says why
        return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, 0.0,
                            "skipped", f"never had all {w.spec.replicas} replicas Ready before the failure "
                            "(see the baseline)", int(fault.at))  # fmt: skip
    why = []
    if w.spec.replicas > 1:
        if min_ready < th.min_ready_fraction:
            why.append(f"ready fell to {100 * min_ready:.0f} % < {100 * th.min_ready_fraction:.0f} %")
        if ready[-1] < desired[-1] and w.kind == "StatefulSet":  # what a StatefulSet does: said
            said.append(
                f"{int(ready[-1])} of {int(desired[-1])} Ready at the run's end: a StatefulSet replaces "
                "a pod of an unreachable node only once that node is deleted or back"
            )
        elif ready[-1] < desired[-1]:
            why.append(f"only {int(ready[-1])} of {int(desired[-1])} replicas Ready at the run's end")
    if summary.total_restarts > th.max_restarts:
        why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    verdict = "fail" if why else "pass"
    return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, gap,
                        verdict, "; ".join([*why, *said]), int(fault.at))  # fmt: skip


def judge_drain(
    index: int, shown: str, namespace: str, stress: str, r: Result, sc: Scenario, th: StressThresholds
) -> StressResult:
    """A node pool upgrade, judged from its start: whether it completes (every node drained and
    replaced by the run's end; a budget that allows no eviction stalls it), failed requests, the
    lowest ready fraction, restarts (a replacement killed by liveness before it has started is the
    classic) and how long the upgrade took."""
    w = sc.workloads[0]
    at = int(next(a for a in sc.spec.actions if getattr(a, "kind", "") == "nodePoolUpgrade").at)
    summary = r.workload(w.name)
    judged = r.time_ms >= at
    errors = error_percent(r, judged)
    ok, failed = request_counts(r, judged)
    ready = r.series[f"workload.{w.name}.ready"]
    desired = np.maximum(r.series[f"workload.{w.name}.desired"], 1)
    min_ready = float((ready[judged] / desired[judged]).min()) if judged.any() else 0.0
    nodes = sc.spec.cluster.node_list() or []
    prefix = f"{w.name}-"
    held = [n.name for n in r.nodes if n.name in {x.name for x in nodes} and any(p.startswith(prefix)
            for p in n.pods)]  # fmt: skip
    drained = {e.object.removeprefix("node/") for e in r.events if e.reason == "Drained" and e.time_ms >= at}
    done = next((e.time_ms for e in r.events if e.reason == "NodePoolUpgraded"), None)
    refused = [e for e in r.events if e.reason == "EvictionRefused" and e.object.startswith(f"pod/{prefix}")]
    count = sum(n in drained for n in held)
    said = [f"a node pool upgrade (maxSurge 1, maxUnavailable 0) from {format_ms(at)}: "
            f"{count} of the {len(held)} nodes holding replicas drained"]  # fmt: skip
    if done is not None:
        said.append(f"every node replaced at {format_ms(done)} ({format_ms(done - at)})")
    said.append(f"{failed} of {ok + failed} requests failed from its start")
    if any(n.labels.get(DEFAULT_LABEL) for n in nodes):
        said.append(f"on {DEFAULT_NODES_SAID}")
    if summary.all_ready_ms is None or summary.all_ready_ms > at:  # the baseline says why
        return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, 0.0,
                            "skipped", f"never had all {w.spec.replicas} replicas Ready before the upgrade "
                            "(see the baseline)", at)  # fmt: skip
    why = []
    if done is None:
        left = format_ms(r.duration_ms - at)
        if refused:
            budgets = ", ".join(b.name for b in sc.disruption_budgets if guards(b, w))
            steps = np.searchsorted(r.time_ms, [e.time_ms for e in refused])
            steps = np.minimum(steps, r.time_ms.size - 1)
            # Refused with every replica Ready: the budget itself allows no eviction (PS035); else
            # it waits for a replacement that is not Ready.
            because = ("it allows no eviction even with every replica Ready (PS035)"
                       if (ready[steps] >= desired[steps]).any()
                       else "a replacement was never Ready, so it allowed no further eviction")  # fmt: skip
            why.append(f"the upgrade stalled: {len(refused)} evictions refused from "
                       f"{format_ms(refused[0].time_ms)} to the run's end by PodDisruptionBudget {budgets}: "
                       f"{because} (GKE deletes the node with its pods after an hour)")  # fmt: skip
        else:
            why.append(f"the upgrade did not complete in {left}")
    if errors > th.max_error_percent:
        why.append(f"errors {errors:.1f} % > {th.max_error_percent:g} % from its start")
    if min_ready < th.min_ready_fraction:
        why.append(f"ready fell to {100 * min_ready:.0f} % < {100 * th.min_ready_fraction:.0f} %")
    if summary.total_restarts > th.max_restarts:
        why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
        # The classic: a replacement (a pod first started during the upgrade) killed by liveness.
        before = {e.object for e in r.events if e.reason == "Started" and e.time_ms < at}
        killed = [e.object for e in r.events if e.reason == "Killing" and e.time_ms >= at
                  and "liveness" in e.message and e.object not in before]  # fmt: skip
        for pod in dict.fromkeys(killed):
            name, times = pod.removeprefix("pod/"), killed.count(pod)
            why.append(f"replacement pod {name} killed by its liveness probe {times} times (a liveness "
                       "that acts before the app has started: a startupProbe covers the start)")  # fmt: skip
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    verdict = "fail" if why else "pass"
    return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, gap,
                        verdict, "; ".join([*why, *said]), at)  # fmt: skip
