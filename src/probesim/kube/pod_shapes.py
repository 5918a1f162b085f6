"""What the scheduler reads of a pod, per group of alike pods (a workload revision): requests
(resource.PodRequests, and the non-zero ones the scores use), tolerations with the admission
defaults, node selection, spread constraints (the system defaults when it sets none) and pod
(anti-)affinity terms, each selector resolved over the groups; and the nodes' facts
(NodeFacts). kube/scheduling.py decides with them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.kube.taints import Taint, with_default_tolerations
from probesim.model.kubernetes import PodSpec
from probesim.model.placement import PodAffinityTerm, Toleration, TopologySpreadConstraint
from probesim.model.selectors import LabelSelector

B = npt.NDArray[np.bool_]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
TEMPLATE_HASH = "pod-template-hash"
# schedutil.DefaultMilliCPURequest and DefaultMemoryRequest (pkg/scheduler/util/pod_resources.go):
# what scoring counts for a container that requests no CPU or memory.
DEFAULT_CPU_M = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
# podtopologyspread's systemDefaultConstraints (plugin.go), for a pod that sets none.
SYSTEM_SPREAD = ((HOSTNAME, 3), (ZONE, 5))


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
class Term:
    """A pod (anti-)affinity term resolved: which pod groups it selects, its topology key."""

    selects: B
    key: str
    weight: int = 0


@dataclass
class Spread:
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
    spreads: list[Spread] = field(default_factory=list)
    affinity: list[Term] = field(default_factory=list)
    anti: list[Term] = field(default_factory=list)
    preferred: list[Term] = field(default_factory=list)  # weight negative for anti-affinity

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
) -> Spread:
    """A topology spread constraint resolved over the pod groups: its selector, ANDed with the
    pod's own values of matchLabelKeys (pod-template-hash: the same ReplicaSet, ``same_revision``),
    within the pod's namespace."""
    extra = {k: pod.labels[k] for k in c.match_label_keys if k in pod.labels}
    hits = np.array([selects(c.label_selector, lab) and all(lab.get(k) == v for k, v in extra.items())
                     for lab in group_labels], bool)  # fmt: skip
    if TEMPLATE_HASH in c.match_label_keys:
        hits &= same_revision
    return Spread(
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
                    shape.spreads.append(Spread(key, skew, False, default, True))
        aff = spec.affinity
        for pa, required, sign in (
            (aff.pod_affinity if aff else None, shape.affinity, 1),
            (aff.pod_anti_affinity if aff else None, shape.anti, -1),
        ):
            if pa is None:
                continue
            for term in pa.required_during_scheduling_ignored_during_execution:
                sel = _term_selects(term, gr.namespace, groups, namespace_labels)
                required.append(Term(sel, term.topology_key))
            for wt in pa.preferred_during_scheduling_ignored_during_execution:
                t = wt.pod_affinity_term
                sel = _term_selects(t, gr.namespace, groups, namespace_labels)
                shape.preferred.append(Term(sel, t.topology_key, sign * wt.weight))
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
