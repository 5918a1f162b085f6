"""kube-scheduler's rules that decide where a pod runs, as probesim applies them when a scenario
gives its nodes (spec.cluster.nodes): the filters in the default profile's order, the scores and
their weights, and the FailedScheduling message as the scheduler writes it. Pure: the engine
(engine/nodes.py) hands in the nodes, the pods' shapes and how many of each run where.

Filters, per node, the first that fails giving the node's reason (the framework stops at the
first failing plugin, pkg/scheduler/framework/runtime/framework.go RunFilterPlugins), in the
order of the default plugin set (pkg/scheduler/apis/config/v1/default_plugins.go):

- TaintToleration: a NoSchedule or NoExecute taint the pod does not tolerate
  ("node(s) had untolerated taint {key: value}");
- NodeAffinity: nodeSelector and requiredDuringScheduling node affinity
  ("node(s) didn't match Pod's node affinity/selector");
- NodeResourcesFit: pods, CPU and memory requests against what is allocatable less what the
  pods bound there request ("Too many pods", "Insufficient cpu", "Insufficient memory");
- PodTopologySpread: DoNotSchedule constraints, the skew against the domain with the fewest
  matching pods ("node(s) didn't match pod topology spread constraints", "… (missing required
  label)");
- InterPodAffinity: required pod affinity, the pod's required anti-affinity, and the anti-affinity
  of the pods already there ("node(s) didn't match pod affinity rules", "node(s) didn't match pod
  anti-affinity rules", "node(s) didn't satisfy existing pods anti-affinity rules").

Scores on the nodes that pass, each plugin's normalized to 0-100 and weighted as the default
profile weighs it: TaintToleration ×3 (PreferNoSchedule taints), NodeAffinity ×2 (preferred
terms), PodTopologySpread ×2 (ScheduleAnyway constraints, or the system defaults: hostname maxSkew
3 and zone maxSkew 5 over the pods of the same workload), InterPodAffinity ×2 (preferred terms),
NodeResourcesFit ×1 (LeastAllocated over the non-zero requests: 100m CPU and 200Mi for a
container that requests none) and NodeResourcesBalancedAllocation ×1. The highest total wins; a
tie goes to the node listed first (the real scheduler picks one of the tied nodes at random).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.model.kubernetes import (
    LabelSelector,
    PodAffinityTerm,
    PodSpec,
    Toleration,
    TopologySpreadConstraint,
)

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
TEMPLATE_HASH = "pod-template-hash"

# schedutil.DefaultMilliCPURequest and DefaultMemoryRequest (pkg/scheduler/util/pod_resources.go):
# what scoring counts for a container that requests no CPU or memory.
DEFAULT_CPU_M = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
MAX_SCORE = 100  # framework.MaxNodeScore
# The default profile's score weights (default_plugins.go).
WEIGHTS = {"taint": 3, "affinity": 2, "spread": 2, "interpod": 2, "fit": 1, "balanced": 1}
# podtopologyspread's systemDefaultConstraints (plugin.go), for a pod that sets none.
SYSTEM_SPREAD = ((HOSTNAME, 3), (ZONE, 5))

# Filter reasons, as the plugins word them.
UNTOLERATED = "node(s) had untolerated taint {{{key}: {value}}}"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
NO_CPU = "Insufficient cpu"
NO_MEMORY = "Insufficient memory"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = SPREAD + " (missing required label)"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
# Preemption's word for a node: where evicting lower-priority pods could not help (the filter
# said UnschedulableAndUnresolvable), and where it found none to evict (every pod here has
# priority 0, so none is lower).
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
UNRESOLVABLE_PREFIXES = ("node(s) had untolerated taint", NODE_AFFINITY, SPREAD_LABEL, AFFINITY)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


def tolerates(t: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint`` (staging/src/k8s.io/api/core/v1/toleration.go): an empty
    effect matches every effect, an empty key (with Exists) every key; Equal compares values."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    return True if t.operator == "Exists" else t.value == taint.value


def untolerated(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: Sequence[str]
) -> Taint | None:
    """``FindMatchingUntoleratedTaint``: the first taint of ``effects`` no toleration matches."""
    for taint in taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def with_default_tolerations(
    tolerations: Sequence[Toleration], unreachable_s: int = 300, not_ready_s: int = 300
) -> tuple[Toleration, ...]:
    """The DefaultTolerationSeconds admission plugin
    (plugin/pkg/admission/defaulttolerationseconds/admission.go): a pod with no NoExecute
    toleration of node.kubernetes.io/not-ready or /unreachable (an empty key or effect counts)
    gets one (kube-apiserver --default-not-ready-toleration-seconds and
    --default-unreachable-toleration-seconds, 300 each by default)."""
    out = list(tolerations)
    for key, seconds in ((NOT_READY, not_ready_s), (UNREACHABLE, unreachable_s)):
        if not any(t.key in ("", key) and t.effect in ("", "NoExecute") for t in tolerations):
            out.append(Toleration(key=key, operator="Exists", effect="NoExecute", tolerationSeconds=seconds))
    return tuple(out)


def min_toleration_ms(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int | None:
    """How long a pod stays on a node with these NoExecute ``taints`` before the taint eviction
    controller deletes it (pkg/controller/tainteviction/taint_eviction.go processPodOnNode and
    getMinTolerationTime): 0 when a taint is not tolerated or a matching toleration's seconds are
    0 or less, the least tolerationSeconds of the matching tolerations, None (forever) when none of
    them sets any."""
    used: list[Toleration] = []
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0
        used += matching
    if not used:
        return 0
    secs = [t.toleration_seconds for t in used if t.toleration_seconds is not None]
    if not secs:
        return None
    return 0 if min(secs) <= 0 else min(secs) * 1000


def _requests(spec: PodSpec, of: Callable[[object], int]) -> int:
    """``resource.PodRequests`` (component-helpers/resource/helpers.go): the app containers and
    the sidecars (restartable init containers) summed, against the largest of what each regular
    init container needs with the sidecars started before it."""
    total = sum(of(c) for c in spec.containers)
    sidecars = 0
    init = 0
    for c in spec.init_containers:
        if c.restart_policy == "Always":
            total += of(c)
            sidecars += of(c)
            init = max(init, sidecars)
        else:
            init = max(init, of(c) + sidecars)
    return max(total, init)


def _cpu(c: object, nonzero: bool = False) -> int:
    r = c.resources  # type: ignore[attr-defined]
    v = r.requests.cpu if r.requests.cpu is not None else r.limits.cpu  # the API defaults it to the limit
    return (DEFAULT_CPU_M if nonzero else 0) if v is None else int(v)


def _memory(c: object, nonzero: bool = False) -> int:
    r = c.resources  # type: ignore[attr-defined]
    v = r.requests.memory if r.requests.memory is not None else r.limits.memory
    return (DEFAULT_MEMORY if nonzero else 0) if v is None else int(v)


def pod_requests(spec: PodSpec) -> tuple[int, int]:
    """The pod's CPU (millicores) and memory (bytes) requests, as NodeResourcesFit sums them."""
    return _requests(spec, _cpu), _requests(spec, _memory)


def nonzero_requests(spec: PodSpec) -> tuple[int, int]:
    """The same with 100m and 200Mi for each container that requests none
    (``GetNonzeroRequestForResource``: what the scores count, so that such pods still spread)."""
    return (
        _requests(spec, lambda c: _cpu(c, True)),
        _requests(spec, lambda c: _memory(c, True)),
    )


@dataclass
class NodeFacts:
    """A node as the scheduler reads it: its name, labels (hostname and zone among them) and
    allocatable CPU, memory and pods, and the taints it was given."""

    name: str
    labels: dict[str, str]
    cpu_m: int
    memory: int
    pods: int
    taints: tuple[Taint, ...] = ()


@dataclass
class _Term:
    """A pod (anti-)affinity term resolved: which pod groups it selects, its topology key."""

    selects: B
    key: str
    weight: int = 0


@dataclass
class _Spread:
    key: str
    max_skew: int
    hard: bool
    selects: B
    self_match: bool
    min_domains: int | None = None
    honor_affinity: bool = True
    honor_taints: bool = False


@dataclass
class PodShape:
    """What the scheduler reads of one group of alike pods (a workload revision): their labels
    and namespace, requests, tolerations (with the admission defaults), node selection, spread
    constraints and pod (anti-)affinity, each selector resolved over the groups."""

    namespace: str
    labels: dict[str, str]
    cpu_m: int
    memory: int
    nonzero_cpu_m: int
    nonzero_memory: int
    tolerations: tuple[Toleration, ...]
    spec: PodSpec
    spreads: list[_Spread] = field(default_factory=list)
    affinity: list[_Term] = field(default_factory=list)
    anti: list[_Term] = field(default_factory=list)
    preferred: list[_Term] = field(default_factory=list)  # weight negative for anti-affinity

    def fits_node(self, node: NodeFacts) -> bool:
        """NodeAffinity's filter: nodeSelector, and one of the required terms (if any)."""
        if any(node.labels.get(k) != v for k, v in (self.spec.node_selector or {}).items()):
            return False
        na = self.spec.affinity.node_affinity if self.spec.affinity else None
        req = na.required_during_scheduling_ignored_during_execution if na else None
        return req is None or req.matches(node.labels, node.name)

    def preferred_node(self, node: NodeFacts) -> int:
        na = self.spec.affinity.node_affinity if self.spec.affinity else None
        if na is None:
            return 0
        return sum(
            p.weight
            for p in na.preferred_during_scheduling_ignored_during_execution
            if p.preference.matches(node.labels, node.name)
        )


@dataclass
class Placed:
    """Where the pods are now: per node and pod group, those bound and not yet removed
    (``bound``, terminating ones included: they hold their resources and count for inter-pod
    affinity, as the scheduler's cache has them) and those of them not terminating (``active``:
    what spreading counts, countPodsMatchSelector skipping a pod with a deletionTimestamp); per
    node the requests of its pods (``cpu_m``, ``memory``, ``pods``, and the non-zero ones the
    scores use) and its taints now."""

    bound: I64  # nodes × groups
    active: I64
    cpu_m: list[int]
    memory: list[int]
    pods: list[int]
    nonzero_cpu_m: list[int]
    nonzero_memory: list[int]
    taints: list[tuple[Taint, ...]]


@dataclass(frozen=True)
class Decision:
    node: int | None  # the node chosen; None: none fits
    message: str = ""  # FailedScheduling's, when none fits


class Scheduler:
    """The scheduler over fixed nodes and pod groups (``shapes``); ``decide`` places one pod."""

    def __init__(self, nodes: list[NodeFacts], shapes: list[PodShape]) -> None:
        self.nodes = nodes
        self.shapes = shapes
        self._dom: dict[str, tuple[I64, int]] = {}
        self._fits = [np.array([s.fits_node(n) for n in nodes], bool) for s in shapes]
        self._preferred = [[s.preferred_node(n) for n in nodes] for s in shapes]
        # Per group, the groups whose required anti-affinity terms select it: (term, group).
        self._repels: list[list[tuple[_Term, int]]] = [[] for _ in shapes]
        for g, other in enumerate(shapes):
            for term in other.anti:
                for h in np.flatnonzero(term.selects).tolist():
                    self._repels[h].append((term, g))

    def domains(self, key: str) -> tuple[I64, int]:
        """Each node's domain of ``key`` (an index; -1 without the label) and how many there are."""
        got = self._dom.get(key)
        if got is None:
            values: dict[str, int] = {}
            ids = np.array(
                [values.setdefault(n.labels[key], len(values)) if key in n.labels else -1
                 for n in self.nodes],
                np.int64,
            )  # fmt: skip
            got = self._dom[key] = (ids, len(values))
        return got

    def _occupied(self, selects: B, key: str, bound: I64) -> B:
        """Per node: whether a pod of the selected groups is bound in its domain of ``key``."""
        ids, k = self.domains(key)
        per_node = bound[:, selects].sum(axis=1)
        has = ids >= 0
        per_dom = np.bincount(ids[has], weights=per_node[has], minlength=k)
        return has & (per_dom[np.maximum(ids, 0)] > 0)

    def decide(self, g: int, placed: Placed) -> Decision:
        """Where a pod of group ``g`` goes now (pkg/scheduler/schedule_one.go schedulePod: the
        filters, then the scores of the nodes that passed)."""
        reasons = self._filter(g, placed)
        feasible = [n for n, why in enumerate(reasons) if not why]
        if not feasible:
            return Decision(None, fit_error(reasons))
        if len(feasible) == 1:
            return Decision(feasible[0])
        total = self._scores(g, feasible, placed)
        return Decision(feasible[total.index(max(total))])

    # -- filters ---------------------------------------------------------------------------

    def _filter(self, g: int, placed: Placed) -> list[list[str]]:
        """Each node's reasons (none: it fits), from the first plugin that rejects it."""
        pod = self.shapes[g]
        nodes = self.nodes
        reasons: list[list[str]] = [[] for _ in nodes]
        open_ = np.ones(len(nodes), bool)

        def reject(mask: B, why: str) -> None:
            for n in np.flatnonzero(mask & open_).tolist():
                reasons[n].append(why)
            open_[mask] = False

        for n, taints in enumerate(placed.taints):
            taint = untolerated(taints, pod.tolerations, ("NoSchedule", "NoExecute")) if taints else None
            if taint is not None:
                reasons[n].append(UNTOLERATED.format(key=taint.key, value=taint.value))
                open_[n] = False
        reject(~self._fits[g], NODE_AFFINITY)
        fit = np.zeros(len(nodes), bool)
        for n in np.flatnonzero(open_).tolist():
            node = nodes[n]
            why = []
            if placed.pods[n] + 1 > node.pods:
                why.append(TOO_MANY_PODS)
            if pod.cpu_m > 0 and pod.cpu_m > node.cpu_m - placed.cpu_m[n]:
                why.append(NO_CPU)
            if pod.memory > 0 and pod.memory > node.memory - placed.memory[n]:
                why.append(NO_MEMORY)
            if why:
                reasons[n] += why
                fit[n] = True
        open_ &= ~fit
        for c in pod.spreads:
            if not c.hard or not open_.any():
                continue
            ids, k = self.domains(c.key)
            reject(ids < 0, SPREAD_LABEL)
            if k == 0:
                continue
            counts = self._domain_counts(g, c, placed)
            floor = int(counts[counts >= 0].min()) if (counts >= 0).any() else 0
            if c.min_domains is not None and int((counts >= 0).sum()) < c.min_domains:
                floor = 0
            here = np.where(ids >= 0, np.maximum(counts[np.maximum(ids, 0)], 0), 0)
            reject((ids >= 0) & (here + int(c.self_match) - floor > c.max_skew), SPREAD)
        for term in pod.affinity:
            if not open_.any():
                break
            ids, _ = self.domains(term.key)
            ok = self._occupied(term.selects, term.key, placed.bound)
            if not placed.bound[:, term.selects].any() and bool(term.selects[g]):
                ok = ids >= 0  # the first of its kind: any node with the key
            reject(~ok, AFFINITY)
        for term in pod.anti:
            if open_.any():
                reject(self._occupied(term.selects, term.key, placed.bound), ANTI_AFFINITY)
        for term, owner in self._repels[g]:
            if not open_.any():
                break
            mine = np.zeros(len(self.shapes), bool)
            mine[owner] = True
            reject(self._occupied(mine, term.key, placed.bound), EXISTING_ANTI)
        return reasons

    def _eligible(self, g: int, c: _Spread, placed: Placed) -> B:
        """The nodes whose pods spreading counts: with the constraint's key, matching the pod's
        node selection (nodeAffinityPolicy Honor) and, with nodeTaintsPolicy Honor, whose taints
        it tolerates."""
        ids, _ = self.domains(c.key)
        ok = ids >= 0
        if c.honor_affinity:
            ok &= self._fits[g]
        if c.honor_taints:
            tol = self.shapes[g].tolerations
            ok &= np.array(
                [untolerated(t, tol, ("NoSchedule", "NoExecute")) is None for t in placed.taints], bool
            )
        return ok

    def _domain_counts(self, g: int, c: _Spread, placed: Placed) -> I64:
        """Matching pods (not terminating) per domain of ``c.key`` over the eligible nodes; -1 for
        a domain with no eligible node (not one of the constraint's domains)."""
        ids, k = self.domains(c.key)
        ok = self._eligible(g, c, placed)
        per_node = placed.active[:, c.selects].sum(axis=1)
        counts = np.bincount(ids[ok], weights=per_node[ok], minlength=k).astype(np.int64)
        seen = np.bincount(ids[ok], minlength=k) > 0
        return np.where(seen, counts, -1)

    # -- scores ----------------------------------------------------------------------------

    def _scores(self, g: int, feasible: list[int], placed: Placed) -> list[int]:
        pod = self.shapes[g]
        total = [0] * len(feasible)

        def add(weight: int, scores: list[int]) -> None:
            for i, s in enumerate(scores):
                total[i] += weight * s

        # TaintToleration: untolerated PreferNoSchedule taints, fewer is better.
        prefer = [
            sum(
                1
                for t in placed.taints[n]
                if t.effect == "PreferNoSchedule" and not any(tolerates(x, t) for x in pod.tolerations)
            )
            for n in feasible
        ]
        add(WEIGHTS["taint"], _normalize(prefer, reverse=True))
        add(WEIGHTS["affinity"], _normalize([self._preferred[g][n] for n in feasible]))
        add(WEIGHTS["spread"], self._spread_scores(g, feasible, placed))
        add(WEIGHTS["interpod"], self._interpod_scores(g, feasible, placed))
        fit, balanced = [], []
        for n in feasible:
            node = self.nodes[n]
            cpu = placed.nonzero_cpu_m[n] + pod.nonzero_cpu_m
            mem = placed.nonzero_memory[n] + pod.nonzero_memory
            fit.append((_least(cpu, node.cpu_m) + _least(mem, node.memory)) // 2)
            balanced.append(_balanced(cpu, node.cpu_m, mem, node.memory))
        add(WEIGHTS["fit"], fit)
        add(WEIGHTS["balanced"], balanced)
        return total

    def _spread_scores(self, g: int, feasible: list[int], placed: Placed) -> list[int]:
        """PodTopologySpread's score (podtopologyspread/scoring.go): per node and ScheduleAnyway
        constraint, the matching pods of its domain × log(domains + 2) + maxSkew - 1, rounded;
        normalized as 100 × (max + min - score) / max, a node without a key 0."""
        soft = [c for c in self.shapes[g].spreads if not c.hard]
        if not soft:
            return [0] * len(feasible)
        ignored = [any(self.domains(c.key)[0][n] < 0 for c in soft) for n in feasible]
        kept = [n for n, ig in zip(feasible, ignored, strict=True) if not ig]
        raw = [0.0] * len(feasible)
        for c in soft:
            ids, _ = self.domains(c.key)
            size = len(kept) if c.key == HOSTNAME else len({int(ids[n]) for n in kept})
            weight = math.log(size + 2)
            counts = self._domain_counts(g, c, placed)
            for i, n in enumerate(feasible):
                if ignored[i]:
                    continue
                if c.key == HOSTNAME:
                    cnt = int(placed.active[n, c.selects].sum())
                else:
                    cnt = max(int(counts[ids[n]]), 0)
                raw[i] += cnt * weight + (c.max_skew - 1)
        scores = [round(r) for r in raw]
        live = [s for s, ig in zip(scores, ignored, strict=True) if not ig]
        lo, hi = (min(live), max(live)) if live else (0, 0)
        out = []
        for s, ig in zip(scores, ignored, strict=True):
            if ig:
                out.append(0)
            elif hi == 0:
                out.append(MAX_SCORE)
            else:
                out.append(MAX_SCORE * (hi + lo - s) // hi)
        return out

    def _interpod_scores(self, g: int, feasible: list[int], placed: Placed) -> list[int]:
        """InterPodAffinity's score from the pod's preferred terms: each selected pod in the
        node's domain adds the term's weight (anti-affinity takes it away); min-max normalized."""
        pod = self.shapes[g]
        if not pod.preferred:
            return [0] * len(feasible)
        raw = [0] * len(feasible)
        for term in pod.preferred:
            ids, k = self.domains(term.key)
            has = ids >= 0
            per_node = placed.bound[:, term.selects].sum(axis=1)
            per_dom = np.bincount(ids[has], weights=per_node[has], minlength=k)
            for i, n in enumerate(feasible):
                if ids[n] >= 0:
                    raw[i] += term.weight * int(per_dom[ids[n]])
        lo, hi = min(raw), max(raw)
        return [int(MAX_SCORE * (s - lo) / (hi - lo)) if hi > lo else 0 for s in raw]


def _normalize(scores: list[int], reverse: bool = False) -> list[int]:
    """``helper.DefaultNormalizeScore``: to 0-100 by the highest (reversed: fewer is better)."""
    top = max(scores, default=0)
    if top == 0:
        return [MAX_SCORE if reverse else 0 for _ in scores]
    out = [MAX_SCORE * s // top for s in scores]
    return [MAX_SCORE - s for s in out] if reverse else out


def _least(requested: int, capacity: int) -> int:
    """``leastRequestedScore``: the share left free, 0-100."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_SCORE // capacity


def _balanced(cpu: int, cpu_cap: int, mem: int, mem_cap: int) -> int:
    """NodeResourcesBalancedAllocation: 100 × (1 - the two fractions' standard deviation)."""
    f = [min(a / c, 1.0) for a, c in ((cpu, cpu_cap), (mem, mem_cap)) if c > 0]
    std = abs(f[0] - f[1]) / 2 if len(f) == 2 else 0.0
    return int((1 - std) * MAX_SCORE)


def fit_error(reasons: list[list[str]]) -> str:
    """``FitError.Error`` (pkg/scheduler/framework/types.go) with DefaultPreemption's post-filter
    message: '0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3
    No preemption victims found for incoming pod.' — each histogram sorted as strings."""
    n = len(reasons)
    hist: dict[str, int] = {}
    for why in reasons:
        for r in why:
            hist[r] = hist.get(r, 0) + 1
    first = ", ".join(sorted(f"{v} {k}" for k, v in hist.items()))
    pre: dict[str, int] = {}
    for why in reasons:
        word = NOT_HELPFUL if any(r.startswith(UNRESOLVABLE_PREFIXES) for r in why) else NO_VICTIMS
        pre[word] = pre.get(word, 0) + 1
    second = ", ".join(sorted(f"{v} {k}" for k, v in pre.items()))
    return f"0/{n} nodes are available: {first}. preemption: 0/{n} nodes are available: {second}."


def selects(sel: LabelSelector | None, labels: dict[str, str]) -> bool:
    """A term's or constraint's labelSelector: a missing one selects nothing
    (metav1.LabelSelectorAsSelector of nil is labels.Nothing()), an empty one everything."""
    return sel is not None and sel.matches(labels)


def term_namespaces(
    term: PodAffinityTerm, own: str, namespace_labels: dict[str, dict[str, str]]
) -> Callable[[str], bool]:
    """Which namespaces a pod affinity term looks in: ``namespaces`` and those ``namespaceSelector``
    matches (an empty selector: all), else the pod's own."""
    names = set(term.namespaces)
    sel = term.namespace_selector
    if sel is None and not names:
        return lambda ns: ns == own
    if sel is not None and sel.empty:
        return lambda ns: True

    def within(ns: str) -> bool:
        if ns in names:
            return True
        labels = {"kubernetes.io/metadata.name": ns, **namespace_labels.get(ns, {})}
        return sel is not None and sel.matches(labels)

    return within


def spread_of(
    c: TopologySpreadConstraint, pod: PodShape, group_labels: list[dict[str, str]], same_revision: B
) -> _Spread:
    """A topology spread constraint resolved over the pod groups: its selector, ANDed with the
    pod's own values of matchLabelKeys (pod-template-hash: the same ReplicaSet, ``same_revision``),
    within the pod's namespace."""
    extra = {k: pod.labels[k] for k in c.match_label_keys if k in pod.labels}
    hits = np.array([selects(c.label_selector, lab) and all(lab.get(k) == v for k, v in extra.items())
                     for lab in group_labels], bool)  # fmt: skip
    if TEMPLATE_HASH in c.match_label_keys:
        hits &= same_revision
    return _Spread(
        key=c.topology_key,
        max_skew=c.max_skew,
        hard=c.when_unsatisfiable == "DoNotSchedule",
        selects=hits,
        self_match=selects(c.label_selector, pod.labels),
        min_domains=c.min_domains,
        honor_affinity=c.node_affinity_policy == "Honor",
        honor_taints=c.node_taints_policy == "Honor",
    )


@dataclass
class Group:
    """A pod group as the engine knows it: a workload revision's pods (``workload`` and
    ``revision`` index it), their namespace, labels and spec, and what owns them: ``kind`` and
    the owner's selector (a Deployment's pods are its ReplicaSet's, whose selector has the
    template hash: the same revision)."""

    workload: int
    revision: int
    kind: str
    namespace: str
    labels: dict[str, str]
    spec: PodSpec
    selector: LabelSelector | None


def shapes_of(
    groups: list[Group],
    services: list[tuple[str, dict[str, str]]],
    unreachable_toleration_s: int,
    namespace_labels: dict[str, dict[str, str]],
) -> list[PodShape]:
    """Every group's PodShape: requests, tolerations with DefaultTolerationSeconds' (kube-apiserver
    adds them at admission: not-ready and unreachable, ``unreachable_toleration_s`` for the latter,
    300 for the former), spread constraints (the system defaults when it sets none), and its pod
    (anti-)affinity terms, every selector resolved over the groups. ``services``: each Service's
    namespace and selector (the system default spreading's selector takes those that select the
    pod)."""
    labels = [gr.labels for gr in groups]
    spaces = [gr.namespace for gr in groups]
    out: list[PodShape] = []
    for gr in groups:
        spec = gr.spec
        cpu, mem = pod_requests(spec)
        nz_cpu, nz_mem = nonzero_requests(spec)
        tolerations = with_default_tolerations(spec.tolerations or (), unreachable_toleration_s)
        shape = PodShape(
            namespace=gr.namespace, labels=gr.labels, cpu_m=cpu, memory=mem, nonzero_cpu_m=nz_cpu,
            nonzero_memory=nz_mem, tolerations=tolerations, spec=spec,
        )  # fmt: skip
        same_ns = np.array([ns == gr.namespace for ns in spaces], bool)
        same_rev = np.array([o.workload == gr.workload and o.revision == gr.revision for o in groups], bool)
        for c in spec.topology_spread_constraints or ():
            sp = spread_of(c, shape, labels, same_rev)
            sp.selects &= same_ns
            shape.spreads.append(sp)
        if not spec.topology_spread_constraints:
            default = _default_selects(gr, groups, services, same_ns, same_rev)
            if default is not None:
                for key, skew in SYSTEM_SPREAD:
                    shape.spreads.append(_Spread(key, skew, False, default, True))
        aff = spec.affinity
        for pa, required, sign in (
            (aff.pod_affinity if aff else None, shape.affinity, 1),
            (aff.pod_anti_affinity if aff else None, shape.anti, -1),
        ):
            if pa is None:
                continue
            for term in pa.required_during_scheduling_ignored_during_execution:
                sel = _term_selects(term, gr.namespace, groups, namespace_labels)
                required.append(_Term(sel, term.topology_key))
            for wt in pa.preferred_during_scheduling_ignored_during_execution:
                t = wt.pod_affinity_term
                sel = _term_selects(t, gr.namespace, groups, namespace_labels)
                shape.preferred.append(_Term(sel, t.topology_key, sign * wt.weight))
        out.append(shape)
    return out


def _term_selects(
    term: PodAffinityTerm, own: str, groups: list[Group], namespace_labels: dict[str, dict[str, str]]
) -> B:
    within = term_namespaces(term, own, namespace_labels)
    return np.array([selects(term.label_selector, g.labels) and within(g.namespace) for g in groups], bool)


def _default_selects(
    gr: Group, groups: list[Group], services: list[tuple[str, dict[str, str]]], same_ns: B, same_rev: B
) -> B | None:
    """``helper.DefaultSelector`` (pkg/scheduler/framework/plugins/helper/spread.go): the pods
    every Service selecting this pod selects, and its controller's (a Deployment's ReplicaSet:
    the same revision; a StatefulSet's, ReplicaSet's or ReplicationController's selector); None
    when that is nothing (a bare Pod no Service selects): no default spreading."""
    merged: dict[str, str] = {}
    for ns, sel in services:
        if ns == gr.namespace and sel and all(gr.labels.get(k) == v for k, v in sel.items()):
            merged.update(sel)
    owned = gr.kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController")
    if not merged and not owned:
        return None
    hits: B = same_ns & np.array([all(g.labels.get(k) == v for k, v in merged.items()) for g in groups], bool)
    if gr.kind == "Deployment":
        hits &= same_rev
    elif owned:
        own = gr.selector
        hits &= np.array(
            [g.workload == gr.workload or (own is not None and own.matches(g.labels)) for g in groups], bool
        )
    return hits
