"""Rules on what a node's loss or drain does to a workload: PodDisruptionBudgets that block every
drain or guard nothing, replicas that can all land on one node or one zone, multi-replica
workloads no budget guards, and budgets a rollout goes past (the budgets are read by
analysis/budgets.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from probesim.analysis.budgets import Budget
from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.patch import flow, nest
from probesim.kube.rolling import rolling_update
from probesim.manifests.yamlsrc import get_path
from probesim.model.kubernetes import ScaledObject, Workload
from probesim.model.placement import TopologySpreadConstraint
from probesim.profiles import Membership, Resolved

rule = REGISTRY.rule

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
# Kinds whose pods a drain evicts and that keep a count of replicas (a DaemonSet's pods are left
# on the node by kubectl drain --ignore-daemonsets; a Job's run to completion).
REPLICATED = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController")


def quietest_replicas(ctx: Context, w: Workload) -> tuple[int, str]:
    """The replicas a budget and the scheduler see at the quietest time: the scaler's minimum
    when an HPA or KEDA ScaledObject scales the workload, else spec.replicas; and how to say it."""
    s = ctx.objects.scaler_of(w)
    if isinstance(s, ScaledObject):
        n, at = s.spec.min_replica_count, " at its ScaledObject's minimum"
    elif s is not None:
        n, at = s.spec.min_replicas, " at its HPA's minimum"
    else:
        n, at = w.spec.replicas, ""
    return n, (f"{n} replica" if n == 1 else f"{n} replicas") + at


def _guarded(ctx: Context) -> list[tuple[Workload, int, str]]:
    """The workloads a budget or the scheduler's spreading is about: built-in kinds with replicas,
    each with its replicas and how they are said."""
    out = []
    for w in ctx.objects.workloads:
        if w.kind in REPLICATED and id(w) not in ctx.objects.custom:
            n, said = quietest_replicas(ctx, w)
            out.append((w, n, said))
    return out


def _selected(ctx: Context, b: Budget) -> list[tuple[Workload, int, str]]:
    return [(w, n, said) for w, n, said in _guarded(ctx) if b.selects(w)]


@dataclass(frozen=True)
class App:
    """What the advice assumes a workload's replicas are to each other: the membership of its
    containers' profile (profiles/catalog.yaml), with the profile and its evidence."""

    membership: Membership
    resolved: Resolved | None

    @property
    def name(self) -> str:
        return self.resolved.profile.name if self.resolved is not None and self.resolved.known else ""

    def said(self, n: int) -> str:
        """The assumption in words, for a finding's message: what the app is, from what in the
        manifest, and what that means for ``n`` replicas."""
        r = self.resolved
        if r is None or not r.known:
            return ("assumed: interchangeable replicas, any of which may go (an app probesim does not "
                    "know: .probesim.yaml → profiles names its family otherwise)")  # fmt: skip
        who = f"{r.profile.name} ({'; '.join(r.evidence)})" if r.evidence else r.profile.name
        if self.membership == "quorum":
            what = f"a quorum system, of {n} members {quorum(n)} must be up for it to write"
        elif self.membership == "primary":
            what = "one primary takes the writes"
        else:
            what = "interchangeable replicas, any of which may go"
        when = r.profile.membership_when if self.membership == r.profile.membership else ""
        return f"assumed: {who}, {what}" + (f" ({when})" if when else "")


def quorum(n: int) -> int:
    """The majority a Raft, Zab or Paxos group of ``n`` members needs to elect and to write."""
    return n // 2 + 1


def app_of(ctx: Context, workloads: Iterable[Workload]) -> App:
    """What the pods of ``workloads`` are, from the profiles check already resolved for their
    containers (Context.targets): the first container whose family keeps a quorum or a primary,
    else the first app container's (a sidecar or an exporter does not make an etcd interchangeable)."""
    ws = {id(w) for w in workloads}
    profiles = [t.profile for t in ctx.targets
                if id(t.workload) in ws and t.group == "containers" and t.profile is not None]  # fmt: skip
    for r in profiles:
        if r.profile.membership != "independent":
            return App(r.profile.membership, r)
    return App("independent", profiles[0] if profiles else None)


def _finding(
    ctx: Context, rule_id: str, where: Budget | Workload, rel: tuple[str, ...], message: str,
    patch: dict[str, Any] | None = None, note: str = "", fix: str = "", app: App | None = None,
) -> Finding:  # fmt: skip
    """A finding on a budget or a workload; its fix a JSON merge patch said with ``note``, else
    the text ``fix``; with what it assumed about the app, when the advice depends on it."""
    if isinstance(where, Budget):
        doc, base, obj, ns = where.doc, where.base, where.obj, where.namespace
    else:
        o = ctx.objects.origin(where)
        doc, base, obj, ns = o.doc, o.base, f"{where.kind}/{where.name}", where.metadata.namespace
    f = ctx.raw_finding(rule_id, doc, base, obj, rel, message, ns, patch, note)
    if not patch:
        f = replace(f, fix=fix, patch=None)
    return replace(f, assumed=app.resolved) if app is not None and app.resolved is not None else f


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
    fix="It depends on what the replicas are to each other, which the message says it assumed (the "
    "app's profile, from its image, probes, environment or command; .probesim.yaml → profiles "
    "corrects it). Interchangeable replicas: set maxUnavailable: 1 (and remove minAvailable): one pod "
    "at a time may be evicted, so a drain moves on as soon as the evicted pod's replacement is Ready "
    "elsewhere, while the other replicas keep serving; unlike minAvailable it stays right when the "
    "replicas change (a workload of one replica is down while a drain moves it whatever its budget: "
    "run two). A quorum system (etcd, ZooKeeper, a MongoDB replica set, …): maxUnavailable: 1 too, "
    "which Kubernetes' docs give for it: one member at a time leaves N − 1 of N up, at least the "
    "quorum of N//2 + 1 from 3 members on (with 2, any eviction loses the quorum: run 3). A single "
    "instance of a stateful app, or a store with one primary (PostgreSQL, MySQL, Redis): the budget "
    "may be deliberate — Kubernetes' docs give maxUnavailable 0 as a solution for a single-instance "
    "stateful app, with an agreement that the cluster operator asks its owners before a drain — so "
    "no patch is given: keep it if that agreement exists, else remove it and accept the downtime of "
    "a drain (one pod), or set maxUnavailable: 1 where a failover manager promotes a replica.",
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
        msg = f"{why}, so every drain of a node running one of its pods (kubectl drain, a node pool "
        msg += "upgrade) stalls"
        app = app_of(ctx, (w for w, _, _ in selected))
        if selected:
            msg += f" — {app.said(expected)}"
        patch: dict[str, Any] = {"spec": {"maxUnavailable": 1}}
        if b.min_available is not None:
            patch["spec"]["minAvailable"] = None
        note, fix = _blocking_advice(app, expected)
        yield _finding(ctx, "PS035", b, rel, msg, patch if note else None, note, fix, app=app)


def _blocking_advice(app: App, n: int) -> tuple[str, str]:
    """What to do with a budget that allows no eviction of ``n`` pods of ``app``: (why, "") for
    the maxUnavailable 1 patch; or, where that patch could break an agreement or the app's
    quorum, ("", the choices in words) (Kubernetes' "Specifying a Disruption Budget for your
    Application", "Think about how your application reacts to disruptions")."""
    name = app.name
    if n == 1 and app.membership != "independent":
        # "Single-instance Stateful Application": no budget (Solution 1) or maxUnavailable 0 and
        # an agreement that the cluster operator asks first (Solution 2); both are legitimate.
        return "", ("this budget may be deliberate: keep it if its owners agreed that drains wait for them "
                    "(they prepare for the downtime, delete the budget, and recreate it after the drain: "
                    "Kubernetes' advice for a single-instance stateful app); else delete it and accept "
                    f"that {name} is down while a drain moves its pod (with one pod, maxUnavailable: 1 is "
                    "the same as no budget)")  # fmt: skip
    if app.membership == "primary":
        return "", ("this budget may be deliberate: keep it if its owners agreed that drains wait for them "
                    "(they move the primary first, then delete or loosen the budget); else set "
                    "maxUnavailable: 1 (and remove minAvailable), which is safe only where something "
                    "promotes a replica when the primary is evicted (Patroni, an operator, Sentinel): "
                    f"without that, {name}'s writes stop until the primary's pod is back")  # fmt: skip
    if app.membership == "quorum" and n < 3:
        return "", (f"run 3 members, then set maxUnavailable: 1 (and remove minAvailable): with {n} the "
                    f"quorum is {quorum(n)}, so one eviction stops {name}'s writes, and this budget is what "
                    "keeps drains from doing it")  # fmt: skip
    if app.membership == "quorum":
        why = (f"one member at a time: {n - 1} of {n} stay up, above the quorum of {quorum(n)} that {name} "
               "needs to write, and a member that is down already blocks the next eviction")  # fmt: skip
        return why, ""
    if n == 1:
        return "a drain can move the pod; with one replica it is down meanwhile: run two", ""
    return "one pod at a time may be evicted: drains move on while the others serve", ""


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
            yield _finding(ctx, "PS036", b, ("spec", "selector"), msg, fix=fix)
            continue
        w = named[0]
        labels = _pod_selector(w)
        old = sel.get("matchLabels") if isinstance(sel, dict) else None
        match = {**{k: None for k in (old if isinstance(old, dict) else {}) if k not in labels}, **labels}
        new: dict[str, Any] = {"matchLabels": match}
        if isinstance(sel, dict) and "matchExpressions" in sel:
            new["matchExpressions"] = None
        note = f"the pods of {w.kind} {w.name}, which the budget is named after"
        yield _finding(ctx, "PS036", b, ("spec", "selector"), msg, {"spec": {"selector": new}}, note)


def _pod_selector(w: Workload) -> dict[str, str]:
    """The labels that select ``w``'s pods: its own selector's matchLabels when that is all it
    has, else its pod template's labels."""
    sel = w.spec.selector
    if sel is not None and sel.match_labels and not sel.match_expressions:
        return dict(sel.match_labels)
    return dict(w.pod_labels)


def _spreads(w: Workload, key: str, hard: bool = False) -> bool:
    """Whether a topologySpreadConstraint or a pod anti-affinity term (required or preferred)
    on ``key`` spreads ``w``'s pods; with ``hard``, only a rule that never puts two together: a
    required term, or DoNotSchedule with maxSkew 1 counting tainted nodes (nodeTaintsPolicy Ignore,
    the default: with Honor a drain's cordoned node is no domain, and skew 2 − 1 is allowed)."""
    ps = w.pod_spec

    def counts(c: TopologySpreadConstraint) -> bool:
        strict = (
            c.when_unsatisfiable == "DoNotSchedule" and c.max_skew == 1 and c.node_taints_policy == "Ignore"
        )
        return c.topology_key == key and (strict or not hard)

    if any(counts(c) for c in ps.topology_spread_constraints or ()):
        return True
    anti = ps.affinity.pod_anti_affinity if ps.affinity is not None else None
    if anti is None:
        return False
    terms = list(anti.required_during_scheduling_ignored_during_execution)
    if not hard:
        terms += [t.pod_affinity_term for t in anti.preferred_during_scheduling_ignored_during_execution]
    return any(t.topology_key == key for t in terms)


def _zoned(ctx: Context) -> list[str]:
    """The zones of the scenario's nodes (spec.cluster.nodes), when it has two or more."""
    nodes = ctx.scenario.spec.cluster.node_list() if ctx.scenario is not None else None
    zones = sorted({n.zone for n in nodes or () if n.zone is not None})
    return zones if len(zones) > 1 else []


def _spread_patch(ctx: Context, w: Workload, app: App, n: int) -> tuple[dict[str, Any], str]:
    """The patch that spreads ``w``'s pods over nodes (and zones, when the scenario has zones):
    for a quorum system, a required pod anti-affinity on the hostname; else a
    topologySpreadConstraint, maxSkew 1, ScheduleAnyway, per key nothing spreads over (zones
    always so: a hard rule there leaves members Pending while a zone is down). One patch for both
    rules, so that their fixes never ask for two values of one list."""
    o = ctx.objects.origin(w)
    pod = get_path(o.doc.data, (*o.base, *o.spec_path))
    pod = pod if isinstance(pod, dict) else {}
    labels = _pod_selector(w)
    spec: dict[str, Any] = {}
    notes: list[str] = []
    soft = [HOSTNAME] + ([ZONE] if _zoned(ctx) else [])
    if app.membership == "quorum" and not _spreads(w, HOSTNAME, hard=True):
        soft.remove(HOSTNAME)
        anti = get_path(
            pod, ("affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
        )
        term = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": labels}}
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    *(anti if isinstance(anti, list) else []),
                    term,
                ]
            }
        }
        notes.append(
            "required: no two members ever share a node, so a node's loss takes one and the quorum stays; "
            "the cost: a drained member stays Pending until a node with no member has room (a pool "
            f"upgrade's new node, or its own node uncordoned: with {n} members on exactly {n} nodes, a "
            "kubectl drain leaves it Pending until the uncordon, and a maxUnavailable 1 budget allows no "
            "other eviction meanwhile), and members beyond the nodes never start"
        )  # fmt: skip
    raw = pod.get("topologySpreadConstraints")
    have = list(raw) if isinstance(raw, list) else []
    add = [
        {"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": labels}}
        for k in soft if not _spreads(w, k)
    ]  # fmt: skip
    if add:
        spec["topologySpreadConstraints"] = [*have, *add]
        notes.append(
            "ScheduleAnyway: a replica is never left Pending for want of a spread node (a drain's "
            "cordoned node, a full one), yet this constraint outweighs the default spreading"
        )  # fmt: skip
    patch = nest(tuple(str(k) for k in o.spec_path), spec)
    return patch, "; ".join(notes)


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
    "and ReplicaSets with 2 replicas or more (an HPA's or ScaledObject's minimum). For a quorum "
    "system (the app's profile: etcd, ZooKeeper, …) only a rule the scheduler never breaks counts — "
    "a required pod anti-affinity, or a constraint with DoNotSchedule, maxSkew 1 and the default "
    "nodeTaintsPolicy (Ignore) — since members on one node "
    "can take the quorum with it (2 of 3, 3 of 5).",
    fix="Interchangeable replicas: add a topologySpreadConstraint on kubernetes.io/hostname with maxSkew "
    "1 and whenUnsatisfiable: ScheduleAnyway: it weighs far more than the default spreading yet never "
    "leaves a replacement Pending when no other node has room (DoNotSchedule would, with the cordoned "
    "node of a drain still counted as a domain unless nodeTaintsPolicy is Honor). A quorum system: a "
    "required pod anti-affinity on kubernetes.io/hostname, so that no two members ever share a node; "
    "its cost, said with the fix: a drained member stays Pending until a node with no member has room "
    "(a pool upgrade's new node, or its own node uncordoned — with 3 members on exactly 3 nodes a "
    "kubectl drain leaves it Pending until the uncordon, while a maxUnavailable 1 budget refuses "
    "any other eviction, which is what keeps the quorum), and members beyond the node count never "
    "start. Not DoNotSchedule with nodeTaintsPolicy: Honor: a cordoned node is then no domain, so the "
    "drained member may go next to another (skew 2 − 1 = 1 is allowed).",
)  # fmt: skip
def replicas_on_one_node(ctx: Context) -> Iterator[Finding]:
    for w, n, said in _guarded(ctx):
        if n < 2:
            continue
        app = app_of(ctx, [w])
        if app.membership == "quorum":
            if _spreads(w, HOSTNAME, hard=True):
                continue
            k = max(2, n - quorum(n) + 1)  # members on one node that leave fewer than the quorum
            has = ("its spreading there is only a preference" if _spreads(w, HOSTNAME)
                   else "the scheduler's default spreading is only a preference")  # fmt: skip
            msg = (f"{said} with no required pod anti-affinity on {HOSTNAME}: {has}, so {k} of the {n} "
                   f"members can land on one node, and its failure takes the quorum ({quorum(n)} of {n}) "
                   f"and every write with it — {app.said(n)}")  # fmt: skip
        else:
            if _spreads(w, HOSTNAME):
                continue
            msg = (f"{said} with no topologySpreadConstraint or pod anti-affinity on {HOSTNAME}: the "
                   "scheduler's default spreading is only a preference, so they can all land on one node, "
                   f"and its failure takes every replica at once — {app.said(n)}")  # fmt: skip
        patch, note = _spread_patch(ctx, w, app, n)
        yield _finding(ctx, "PS037", w, ("spec", "template", "spec"), msg, patch, note, app=app)


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
    "or full) — for a quorum system too, whose patch also holds PS037's required anti-affinity on "
    "the hostname, so that the two rules' fixes are one.",
)  # fmt: skip
def replicas_in_one_zone(ctx: Context) -> Iterator[Finding]:
    zones = _zoned(ctx)
    if not zones:
        return
    for w, n, said in _guarded(ctx):
        if n < 2 or _spreads(w, ZONE):
            continue
        app = app_of(ctx, [w])
        msg = (f"{said} with nothing spreading them over zones ({', '.join(zones)}): a zone outage can take "
               f"every replica at once — {app.said(n)}")  # fmt: skip
        patch, note = _spread_patch(ctx, w, app, n)
        yield _finding(ctx, "PS038", w, ("spec", "template", "spec"), msg, patch, note, app=app)


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
    "selector; why 1 depends on the app, said with the fix: interchangeable replicas serve while "
    "one is replaced; a quorum system keeps N − 1 of N members, its quorum from 3 members on (with 2, "
    "run 3 first); a store with one primary loses writes while the primary is evicted, until something "
    "promotes a replica. Jobs are not judged: a Job's pods run to completion, and Kubernetes' advice "
    "for a restartable batch Job is no budget.",
)  # fmt: skip
def no_disruption_budget(ctx: Context) -> Iterator[Finding]:
    # Only replicated kinds are judged (REPLICATED): a Job's pods run to completion, and for a
    # restartable batch Job Kubernetes' advice is no budget at all.
    for w, n, said in _guarded(ctx):
        if n < 2 or any(b.selects(w) for b in ctx.budgets):
            continue
        app = app_of(ctx, [w])
        labels = _pod_selector(w)
        pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": w.name, "namespace": w.metadata.namespace},
               "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}}  # fmt: skip
        msg = (f"{said} and no PodDisruptionBudget: a drain or node upgrade may evict them all at once "
               f"— {app.said(n)}")  # fmt: skip
        name = app.name
        if app.membership == "quorum" and n < 3:
            fix = (f"run 3 members and add {flow(pdb)}: with {n} the quorum is {quorum(n)}, so any "
                   f"eviction stops {name}'s writes")  # fmt: skip
        elif app.membership == "quorum":
            fix = (f"add {flow(pdb)} (one member at a time: {n - 1} of {n} stay up, above the quorum of "
                   f"{quorum(n)} that {name} needs to write)")  # fmt: skip
        elif app.membership == "primary":
            fix = (f"add {flow(pdb)} (one pod at a time; when it is the primary, writes wait until "
                   "something promotes a replica (Patroni, an operator, Sentinel) "
                   "or it is back)")  # fmt: skip
        else:
            fix = f"add {flow(pdb)} (one pod at a time: the others serve while its replacement starts)"
        yield _finding(ctx, "PS039", w, ("spec", "replicas"), msg, fix=fix, app=app)


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
            yield _finding(ctx, "PS040", w, ("spec", "strategy"), msg, patch, note)
