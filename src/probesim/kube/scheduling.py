"""kube-scheduler's rules that decide where a pod runs, as probesim applies them when a scenario
gives its nodes (spec.cluster.nodes): the filters in the default profile's order, the scores and
their weights, and the FailedScheduling message as the scheduler writes it. Pure: the engine
(engine/nodes.py) hands in the nodes, the pods' shapes (kube/pod_shapes.py) and how many of
each run where; taints and tolerations are kube/taints.py's.

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
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from probesim.kube.pod_shapes import HOSTNAME, NodeFacts, PodShape, Spread, Term
from probesim.kube.taints import CORDONED, Taint, tolerates, untolerated

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

MAX_SCORE = 100  # framework.MaxNodeScore
# The default profile's score weights (default_plugins.go).
WEIGHTS = {"taint": 3, "affinity": 2, "spread": 2, "interpod": 2, "fit": 1, "balanced": 1}

# Filter reasons, as the plugins word them.
UNSCHEDULABLE = "node(s) were unschedulable"  # nodeunschedulable.ErrReasonUnschedulable
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
UNRESOLVABLE_PREFIXES = (
    UNSCHEDULABLE,
    "node(s) had untolerated taint",
    NODE_AFFINITY,
    SPREAD_LABEL,
    AFFINITY,
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
    cordoned: list[bool] | None = None  # spec.unschedulable (kubectl cordon), per node
    present: list[bool] | None = None  # per node: whether it exists now (None: every one)


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
        self._repels: list[list[tuple[Term, int]]] = [[] for _ in shapes]
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
        if placed.present is not None:
            # Nodes that do not exist (yet, or any more) are not in the scheduler's snapshot.
            here = [n for n, p in enumerate(placed.present) if p]
            feasible = [n for n in here if not reasons[n]]
            if not feasible:
                return Decision(None, fit_error([reasons[n] for n in here]))
        else:
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
        open_ = np.ones(len(nodes), bool) if placed.present is None else np.array(placed.present, bool)

        def reject(mask: B, why: str) -> None:
            for n in np.flatnonzero(mask & open_).tolist():
                reasons[n].append(why)
            open_[mask] = False

        if placed.cordoned is not None and any(placed.cordoned):
            # NodeUnschedulable, the default profile's first filter: a cordoned node takes only
            # pods that tolerate node.kubernetes.io/unschedulable:NoSchedule.
            spare = any(tolerates(x, CORDONED) for x in pod.tolerations)
            for n, off in enumerate(placed.cordoned):
                if off and not spare and open_[n]:
                    reasons[n].append(UNSCHEDULABLE)
                    open_[n] = False
        for n, taints in enumerate(placed.taints):
            if not open_[n]:
                continue
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

    def _eligible(self, g: int, c: Spread, placed: Placed) -> B:
        """The nodes whose pods spreading counts: with the constraint's key, matching the pod's
        node selection (nodeAffinityPolicy Honor) and, with nodeTaintsPolicy Honor, whose taints
        it tolerates."""
        ids, _ = self.domains(c.key)
        ok = ids >= 0
        if placed.present is not None:
            ok &= np.array(placed.present, bool)
        if c.honor_affinity:
            ok &= self._fits[g]
        if c.honor_taints:
            tol = self.shapes[g].tolerations
            ok &= np.array(
                [untolerated(t, tol, ("NoSchedule", "NoExecute")) is None for t in placed.taints], bool
            )
        return ok

    def _domain_counts(self, g: int, c: Spread, placed: Placed) -> I64:
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
