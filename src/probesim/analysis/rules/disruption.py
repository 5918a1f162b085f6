"""Rules on what a node's loss or drain does to a workload: PodDisruptionBudgets that block every
drain or guard nothing, replicas that can all land on one node or one zone, multi-replica
workloads no budget guards, and budgets a rollout goes past (the budgets are read by
analysis/budgets.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from probesim.analysis.budgets import Budget
from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.patch import flow, nest
from probesim.kube.rolling import rolling_update
from probesim.manifests.yamlsrc import get_path
from probesim.model.kubernetes import ScaledObject, Workload

rule = REGISTRY.rule

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
# Kinds whose pods a drain evicts and that keep a count of replicas (a DaemonSet's pods are left
# on the node by kubectl drain --ignore-daemonsets; a Job's run to completion).
REPLICATED = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController")


def _replicas(ctx: Context, w: Workload) -> tuple[int, str]:
    """The replicas a budget and the scheduler see at the quietest time: the scaler's minimum
    when an HPA or KEDA ScaledObject scales the workload, else spec.replicas; and how to say it."""
    s = ctx.objects.scaler_of(w)
    if isinstance(s, ScaledObject):
        return s.spec.min_replica_count, f"{s.spec.min_replica_count} replicas at its ScaledObject's minimum"
    if s is not None:
        return s.spec.min_replicas, f"{s.spec.min_replicas} replicas at its HPA's minimum"
    n = w.spec.replicas
    return n, f"{n} replica" if n == 1 else f"{n} replicas"


def _guarded(ctx: Context) -> list[tuple[Workload, int, str]]:
    """The workloads a budget or the scheduler's spreading is about: built-in kinds with replicas,
    each with its replicas and how they are said."""
    out = []
    for w in ctx.objects.workloads:
        if w.kind in REPLICATED and id(w) not in ctx.objects.custom:
            n, said = _replicas(ctx, w)
            out.append((w, n, said))
    return out


def _selected(ctx: Context, b: Budget) -> list[tuple[Workload, int, str]]:
    return [(w, n, said) for w, n, said in _guarded(ctx) if b.selects(w)]


def _budget_finding(
    ctx: Context, rule_id: str, b: Budget, rel: tuple[str, ...], message: str,
    patch: dict[str, Any] | None = None, note: str = "", fix: str = "",
) -> Finding:  # fmt: skip
    f = ctx.raw_finding(rule_id, b.doc, b.base, b.obj, rel, message, b.namespace, patch, note)
    return f if patch else _with_fix(f, fix)


def _with_fix(f: Finding, fix: str) -> Finding:
    return replace(f, fix=fix, patch=None)


def _workload_finding(
    ctx: Context, rule_id: str, w: Workload, rel: tuple[str, ...], message: str,
    patch: dict[str, Any] | None = None, note: str = "", fix: str = "",
) -> Finding:  # fmt: skip
    o = ctx.objects.origin(w)
    f = ctx.raw_finding(rule_id, o.doc, o.base, f"{w.kind}/{w.name}", rel, message, w.metadata.namespace,
                        patch, note)  # fmt: skip
    return f if patch else _with_fix(f, fix)


@rule(
    id="PS035",
    name="disruption-budget-blocks-eviction",
    severity="warning",
    title="A PodDisruptionBudget never allows an eviction: every drain of its pods' nodes stalls.",
    why="kubectl drain, the cluster autoscaler and a node pool upgrade evict pods through the "
    "Eviction API, which refuses an eviction the budget does not allow (429, retried by kubectl "
    "every 5 s). The disruption controller allows currentHealthy − desiredHealthy disruptions, "
    "desiredHealthy being minAvailable, or replicas − maxUnavailable (a percentage of either "
    "rounds up). With maxUnavailable 0 (or 0 %), or minAvailable at or above the replicas (100 %, "
    "or 2 of 2), that is 0 even with every pod healthy: no drain of a node running one of these "
    "pods ever finishes. A node pool upgrade then waits — GKE respects a budget for up to 1 hour "
    "per node and then evicts the pods anyway — and a manual drain hangs until someone deletes the "
    "pods by hand, with no budget at all then. The replicas judged are the HPA's or ScaledObject's "
    "minimum when one scales the workload.",
    fix="Set maxUnavailable: 1 (and remove minAvailable): one pod at a time may be evicted, so a "
    "drain moves on as soon as the evicted pod's replacement is Ready elsewhere, while the other "
    "replicas keep serving; unlike minAvailable it stays right when the replicas change. A "
    "workload of one replica is down while a drain moves it whatever its budget: run two.",
)  # fmt: skip
def budget_blocks_eviction(ctx: Context) -> Iterator[Finding]:
    for b in ctx.budgets:
        selected = _selected(ctx, b)
        expected = sum(n for _, n, _ in selected)
        rel = ("spec", b.set_field)
        if b.max_unavailable is not None:
            # 0 or 0 %: none at any scale; a percentage that rounds up to 1 is not 0
            if b.allowed(max(expected, 1)) > 0 or b.max_unavailable not in (0, "0%"):
                continue
            why = f"maxUnavailable {b.max_unavailable} allows no eviction at any replica count"
        else:
            if not selected or b.allowed(expected) > 0:
                continue
            desired = b.desired_healthy(expected)
            whose = ", ".join(f"{w.kind} {w.name} ({said})" for w, _, said in selected)
            how = f"minAvailable {b.min_available}" + (f" (= {desired})" if isinstance(b.value, str) else "")
            why = f"{how} keeps every pod of {whose}: no eviction is ever allowed"
        single = len(selected) == 1 and expected == 1
        note = "one pod at a time may be evicted: drains move on while the others serve"
        if single:
            note = "a drain can move the pod; with one replica it is down meanwhile: run two"
        msg = f"{why}, so every drain of a node running one of its pods (kubectl drain, a node pool "
        msg += "upgrade) stalls"
        patch: dict[str, Any] = {"spec": {"maxUnavailable": 1}}
        if b.min_available is not None:
            patch["spec"]["minAvailable"] = None
        yield _budget_finding(ctx, "PS035", b, rel, msg, patch, note)


@rule(
    id="PS036",
    name="disruption-budget-selects-nothing",
    severity="warning",
    title="A PodDisruptionBudget's selector matches no workload's pods in its namespace.",
    why="A budget guards the pods its selector matches, in its own namespace, and nothing else: a "
    "selector that matches none of the pod templates (a label renamed in the Deployment but not in "
    "the budget, a budget in another namespace, a policy/v1 budget with no selector) protects no "
    "pod, and drains and node upgrades evict the workload's pods as if there were no budget. Only "
    "reported when the manifests hold workloads of that namespace and no custom resource probesim "
    "does not read (a budget for pods defined elsewhere, or run by an operator's object such as the "
    "Prometheus Operator's Alertmanager, is not judged).",
    fix="Set spec.selector.matchLabels to the labels of the pod template it should guard (the "
    "workload's own spec.selector), in the workload's namespace.",
)  # fmt: skip
def budget_selects_nothing(ctx: Context) -> Iterator[Finding]:
    for b in ctx.budgets:
        here = [w for w in ctx.objects.workloads if w.metadata.namespace == b.namespace]
        if not here or any(b.selects(w) for w in here):
            continue
        if any(s.why.startswith("custom resource") and (s.namespace or "default") == b.namespace
               for s in ctx.objects.skipped):  # fmt: skip
            continue  # an operator's object (a Prometheus Operator Alertmanager, …) may run the pods
        sel = get_path(b.doc.data, (*b.base, "spec", "selector"))
        said = "no selector" if sel is None else f"selector {flow(sel)}"
        msg = (f"{said} matches the pods of no workload of namespace {b.namespace} ({len(here)} here): "
               "it guards nothing, and drains evict those pods unguarded")  # fmt: skip
        # The workload it is named after, if exactly one is: its selector is the fix.
        stem = b.name.removesuffix("-pdb").removesuffix("-budget")
        named = [w for w in here if w.kind in REPLICATED and w.name in (b.name, stem)]
        fix = "set spec.selector.matchLabels to the pod template labels of the workload it guards"
        if len(named) != 1:
            yield _budget_finding(ctx, "PS036", b, ("spec", "selector"), msg, fix=fix)
            continue
        w = named[0]
        labels = _pod_selector(w)
        old = sel.get("matchLabels") if isinstance(sel, dict) else None
        match = {**{k: None for k in (old if isinstance(old, dict) else {}) if k not in labels}, **labels}
        new: dict[str, Any] = {"matchLabels": match}
        if isinstance(sel, dict) and "matchExpressions" in sel:
            new["matchExpressions"] = None
        note = f"the pods of {w.kind} {w.name}, which the budget is named after"
        yield _budget_finding(ctx, "PS036", b, ("spec", "selector"), msg, {"spec": {"selector": new}}, note)


def _pod_selector(w: Workload) -> dict[str, str]:
    """The labels that select ``w``'s pods: its own selector's matchLabels when that is all it
    has, else its pod template's labels."""
    sel = w.spec.selector
    if sel is not None and sel.match_labels and not sel.match_expressions:
        return dict(sel.match_labels)
    return dict(w.pod_labels)


def _spreads(w: Workload, key: str) -> bool:
    """Whether a topologySpreadConstraint or a pod anti-affinity term (required or preferred)
    on ``key`` spreads ``w``'s pods."""
    ps = w.pod_spec
    if any(c.topology_key == key for c in ps.topology_spread_constraints or ()):
        return True
    anti = ps.affinity.pod_anti_affinity if ps.affinity is not None else None
    if anti is None:
        return False
    preferred = anti.preferred_during_scheduling_ignored_during_execution
    terms = [
        *anti.required_during_scheduling_ignored_during_execution,
        *(t.pod_affinity_term for t in preferred),
    ]
    return any(t.topology_key == key for t in terms)


def _zoned(ctx: Context) -> list[str]:
    """The zones of the scenario's nodes (spec.cluster.nodes), when it has two or more."""
    nodes = ctx.scenario.spec.cluster.node_list() if ctx.scenario is not None else None
    zones = sorted({n.zone for n in nodes or () if n.zone is not None})
    return zones if len(zones) > 1 else []


def _spread_patch(ctx: Context, w: Workload) -> tuple[dict[str, Any], str]:
    """The patch that spreads ``w``'s pods over nodes (and zones, when the scenario has zones):
    the constraints it has and one per key it lacks, maxSkew 1, ScheduleAnyway. One patch for
    both rules, so that their fixes never ask for two values of one list."""
    o = ctx.objects.origin(w)
    pod = get_path(o.doc.data, (*o.base, *o.spec_path))
    raw = pod.get("topologySpreadConstraints") if isinstance(pod, dict) else None
    have = list(raw) if isinstance(raw, list) else []
    keys = [HOSTNAME] + ([ZONE] if _zoned(ctx) else [])
    labels = _pod_selector(w)
    add = [
        {"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": labels}}
        for k in keys if not _spreads(w, k)
    ]  # fmt: skip
    patch = nest(tuple(str(k) for k in o.spec_path), {"topologySpreadConstraints": [*have, *add]})
    note = ("ScheduleAnyway: a replica is never left Pending for want of a spread node (a drain's "
            "cordoned node, a full one), yet this constraint outweighs the default spreading")  # fmt: skip
    return patch, note


@rule(
    id="PS037",
    name="replicas-on-one-node",
    severity="warning",
    title="Nothing keeps a multi-replica workload's pods off a single node: one node's loss takes them all.",
    why="Without a topologySpreadConstraint or a pod anti-affinity on kubernetes.io/hostname, only "
    "the scheduler's default spreading separates the replicas — kube-scheduler's system default "
    "PodTopologySpread constraints, maxSkew 3 per node and 5 per zone, whenUnsatisfiable "
    "ScheduleAnyway: a score, not a rule. When the other nodes are full, cordoned for an upgrade or "
    "just added, the replicas land together, and the crash of that node (or its drain, with no "
    "budget) takes every replica at once: no pod serves until the node controller notices (about "
    "50 s) and the replacements start elsewhere. probesim check --stress shows it (the node-failure "
    "stress crashes the node holding the most replicas). Reported for Deployments, StatefulSets "
    "and ReplicaSets with 2 replicas or more (an HPA's or ScaledObject's minimum).",
    fix="Add a topologySpreadConstraint on kubernetes.io/hostname with maxSkew 1 and whenUnsatisfiable: "
    "ScheduleAnyway: it weighs far more than the default spreading yet never leaves a replacement "
    "Pending when no other node has room (DoNotSchedule would, with the cordoned node of a drain "
    "still counted as a domain unless nodeTaintsPolicy is Honor; choose it, with nodeTaintsPolicy: "
    "Honor, only when replicas apart matter more than replicas running).",
)  # fmt: skip
def replicas_on_one_node(ctx: Context) -> Iterator[Finding]:
    for w, n, said in _guarded(ctx):
        if n < 2 or _spreads(w, HOSTNAME):
            continue
        msg = (f"{said} with no topologySpreadConstraint or pod anti-affinity on {HOSTNAME}: the "
               "scheduler's default spreading is only a preference, so they can all land on one node, "
               "and its failure takes every replica at once")  # fmt: skip
        patch, note = _spread_patch(ctx, w)
        yield _workload_finding(ctx, "PS037", w, ("spec", "template", "spec"), msg, patch, note)


@rule(
    id="PS038",
    name="replicas-in-one-zone",
    severity="info",
    title="Nothing keeps a multi-replica workload's pods off a single zone, in a cluster with zones.",
    why="With nodes in several zones (the scenario's spec.cluster.nodes), the scheduler's system "
    "default spreading over topology.kubernetes.io/zone is maxSkew 5 with ScheduleAnyway: a score, "
    "so under pressure (a zone with more free room, an upgrade that cordons nodes) the replicas "
    "gather in one zone, and a zone outage takes them all. Info: the default spreading usually "
    "separates them; only a constraint makes it sure. Only judged with a scenario that gives nodes "
    "in two zones or more.",
    fix="Add a topologySpreadConstraint on topology.kubernetes.io/zone with maxSkew 1 and "
    "whenUnsatisfiable: ScheduleAnyway (DoNotSchedule leaves replicas Pending while a zone is down "
    "or full).",
)  # fmt: skip
def replicas_in_one_zone(ctx: Context) -> Iterator[Finding]:
    zones = _zoned(ctx)
    if not zones:
        return
    for w, n, said in _guarded(ctx):
        if n < 2 or _spreads(w, ZONE):
            continue
        msg = (f"{said} with nothing spreading them over zones ({', '.join(zones)}): a zone outage can take "
               "every replica at once")  # fmt: skip
        patch, note = _spread_patch(ctx, w)
        yield _workload_finding(ctx, "PS038", w, ("spec", "template", "spec"), msg, patch, note)


@rule(
    id="PS039",
    name="no-disruption-budget",
    severity="info",
    title="A multi-replica workload has no PodDisruptionBudget: a drain may evict all its pods at once.",
    why="kubectl drain evicts every pod of its node at once, and a node pool upgrade drains several "
    "nodes at a time (GKE's surge upgrade: maxSurge + maxUnavailable nodes); the cluster autoscaler "
    "removes nodes too. With no budget nothing stops the replicas on those nodes going together, "
    "before their replacements are Ready elsewhere. kube-score (pod-disruption-budget) and "
    "Polaris (missingPodDisruptionBudget) report the same. Info: a budget costs nothing, but only "
    "voluntary evictions honour it.",
    fix="Add a PodDisruptionBudget (policy/v1) with maxUnavailable: 1 and the workload's pod "
    "selector.",
)  # fmt: skip
def no_disruption_budget(ctx: Context) -> Iterator[Finding]:
    for w, n, said in _guarded(ctx):
        if n < 2 or any(b.selects(w) for b in ctx.budgets):
            continue
        labels = _pod_selector(w)
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": w.name, "namespace": w.metadata.namespace},
               "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}}  # fmt: skip
        msg = f"{said} and no PodDisruptionBudget: a drain or node upgrade may evict them all at once"
        fix = f"add {flow(pdb)} (one pod at a time: the others serve while its replacement starts)"
        yield _workload_finding(ctx, "PS039", w, ("spec", "replicas"), msg, fix=fix)


@rule(
    id="PS040",
    name="rollout-exceeds-disruption-budget",
    severity="info",
    title="A Deployment's rolling update takes down more pods than its PodDisruptionBudget allows.",
    why="A PodDisruptionBudget limits evictions (drains, node upgrades, the cluster autoscaler) and "
    "nothing else: the Deployment controller never reads it, and a rollout takes down up to "
    "maxUnavailable pods (rounded down; maxSurge adds new ones first). When that is more than the "
    "budget allows (replicas − minAvailable, or its maxUnavailable), every rollout goes below the "
    "floor the budget was written to keep — which users often assume it protects. And while the "
    "rollout runs, its pods being replaced count as unhealthy, so a drain at the same time is "
    "refused. Info: which one is right is the owner's call; they should agree.",
    fix="Set the Deployment's rollingUpdate.maxUnavailable to what the budget allows (0 with maxSurge "
    "1 when it allows none), or loosen the budget if the rollout's floor is the one you mean.",
)  # fmt: skip
def rollout_exceeds_budget(ctx: Context) -> Iterator[Finding]:
    for b in ctx.budgets:
        selected = _selected(ctx, b)
        expected = sum(n for _, n, _ in selected)
        for w, _, _ in selected:
            ro = rolling_update(w)
            if w.kind != "Deployment" or ro is None or ro.replicas < 1:
                continue
            allowed = b.allowed(expected)
            if ro.unavailable <= allowed:
                continue
            msg = (f"a rollout ({ro.knob}) takes down up to {ro.unavailable} of {ro.replicas} pods at once, "
                   f"but {b.obj} ({b.set_field} {b.value}) allows {allowed}: a budget limits evictions, "
                   "not rollouts, so every rollout goes below the floor the budget keeps")  # fmt: skip
            ru: dict[str, Any] = {"maxUnavailable": allowed}
            if allowed == 0 or ro.unavailable == ro.replicas:  # PS032's fix when none would serve
                ru["maxUnavailable"] = 0
                ru["maxSurge"] = max(ro.surge, 1)
            kept = ro.replicas - ru["maxUnavailable"]
            note = f"a rollout keeps {kept} of {ro.replicas} pods serving, as the budget does"
            patch = {"spec": {"strategy": {"rollingUpdate": ru}}}
            yield _workload_finding(ctx, "PS040", w, ("spec", "strategy"), msg, patch, note)
