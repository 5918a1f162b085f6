"""Kubernetes YAML → probesim model: kinds, API defaults, and the API server's validation of
the fields probesim reads (reference/kubelet.md §1.1), with errors that name file and line.
This module tells each document's kind, reads past the kinds probesim does not read, and holds
what was read (Objects); each built-in kind is read by manifests/builtin_kinds.py, each custom
resource by manifests/custom.py."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probesim.errors import InputError
from probesim.manifests import custom
from probesim.manifests.builtin_kinds import read_hpa, read_pdb, read_service, read_workload
from probesim.manifests.custom import WorkloadRef
from probesim.manifests.errors import error_at
from probesim.manifests.yamlsrc import Doc, Path_, get_path
from probesim.model.disruption import PodDisruptionBudget
from probesim.model.kubernetes import (
    GENERATED,
    HorizontalPodAutoscaler,
    ScaledObject,
    Service,
    Workload,
)

Read = Workload | Service | HorizontalPodAutoscaler | ScaledObject | PodDisruptionBudget

# Kinds with a pod template, and the API versions that serve them (older ones are read too:
# their fields are the same, so their probes and ports lint the same way).
WORKLOAD_VERSIONS: dict[str, tuple[str, ...]] = {
    "Deployment": ("apps/v1", "apps/v1beta2", "apps/v1beta1", "extensions/v1beta1"),
    "ReplicaSet": ("apps/v1", "apps/v1beta2", "extensions/v1beta1"),
    "StatefulSet": ("apps/v1", "apps/v1beta2", "apps/v1beta1"),
    "DaemonSet": ("apps/v1", "apps/v1beta2", "extensions/v1beta1"),
    "ReplicationController": ("v1",),
    "Job": ("batch/v1",),
    "CronJob": ("batch/v1", "batch/v1beta1", "batch/v2alpha1"),
    "Pod": ("v1",),
}
# Kinds probesim reads (a document of one of them without apiVersion is an error, not another file).
READ_KINDS = frozenset({*WORKLOAD_VERSIONS, "Service", "HorizontalPodAutoscaler"})
SIMULATED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController", "Pod")
HPA_VERSIONS = ("autoscaling/v2", "autoscaling/v1", "autoscaling/v2beta2", "autoscaling/v2beta1")
# Built-in API groups whose kinds are all known here: any other kind in them is a typo (the API
# server answers "no matches for kind"). Other groups' kinds are skipped, not judged.
KNOWN_GROUP_KINDS: dict[str, frozenset[str]] = {
    "": frozenset({
        "Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace",
        "Node", "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate",
        "ReplicationController", "ResourceQuota", "Secret", "Service", "ServiceAccount",
    }),
    "apps": frozenset({"ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet"}),
    "batch": frozenset({"Job", "CronJob"}),
    "autoscaling": frozenset({"HorizontalPodAutoscaler", "Scale"}),
    "policy": frozenset({"PodDisruptionBudget", "Eviction", "PodSecurityPolicy"}),
    "extensions": frozenset({
        "Deployment", "ReplicaSet", "DaemonSet", "Ingress", "NetworkPolicy", "PodSecurityPolicy",
    }),
}  # fmt: skip
ISTIO_READ = ("DestinationRule", "VirtualService")


@dataclass(frozen=True)
class Origin:
    """Where an object was read: its document, where it starts in it (``("items", 3)`` in a
    List), and where its pod spec is inside it (workloads only). A Rollout whose pods are a
    Deployment's template (``spec.workloadRef``) is read from that Deployment (its containers'
    lines, where a fix goes); ``declared`` is then where the Rollout itself is."""

    doc: Doc
    base: Path_
    spec_path: Path_ = ()
    declared: tuple[Doc, Path_] | None = None

    @property
    def where(self) -> tuple[Doc, Path_]:
        """The object's own document and where it starts in it."""
        return self.declared or (self.doc, self.base)


@dataclass(frozen=True)
class Skipped:
    """An object (or a whole file, when ``kind`` is empty) that probesim read past, and why."""

    kind: str
    name: str | None
    namespace: str | None
    file: str
    line: int | None
    why: str

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        return f"{self.kind} {self.name} ({where})" if self.kind else f"{where} ({self.why})"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind or None,
            "name": self.name,
            "namespace": self.namespace,
            "file": self.file,
            "line": self.line,
            "why": self.why,
        }


@dataclass
class Objects:
    """What a set of manifests holds, in file order."""

    workloads: list[Workload] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    istio: list[tuple[Doc, Path_, dict[str, Any]]] = field(
        default_factory=list
    )  # DestinationRule, VirtualService
    skipped: list[Skipped] = field(default_factory=list)
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # Namespace → labels
    # HPA name → its metrics probesim does not simulate ("Pods metric vllm:num_requests_waiting")
    unsimulated_metrics: dict[str, list[str]] = field(default_factory=dict)
    scaled_objects: list[ScaledObject] = field(default_factory=list)  # KEDA's
    # Workloads read from custom resources (a Rollout's or a Knative Service's own template),
    # by id: a fix is a JSON merge patch (the API server has no strategic merge for them).
    custom: set[int] = field(default_factory=set)
    # A Rollout (by id) whose pods are this Deployment's template (spec.workloadRef).
    template_of: dict[int, Workload] = field(default_factory=dict)
    _origins: dict[int, Origin] = field(default_factory=dict)
    _refs: list[WorkloadRef] = field(default_factory=list)

    def origin(self, obj: Read) -> Origin:
        return self._origins[id(obj)]

    def _add(self, obj: Read, origin: Origin) -> None:
        self._origins[id(obj)] = origin

    def drop(self, obj: Read) -> None:
        """Forget ``obj`` (the last object read: a copy of one read before)."""
        for group in (self.workloads, self.services, self.hpas, self.scaled_objects, self.pdbs):
            if group and group[-1] is obj:
                group.pop()
        self._origins.pop(id(obj), None)
        self.custom.discard(id(obj))

    def scaler_of(self, w: Workload) -> HorizontalPodAutoscaler | ScaledObject | None:
        """The HPA or KEDA ScaledObject whose target is ``w`` (its kind and name, in its
        namespace)."""
        scalers: list[HorizontalPodAutoscaler | ScaledObject] = [*self.hpas, *self.scaled_objects]
        for s in scalers:
            ref = s.spec.scale_target_ref
            if (ref.kind, ref.name, s.metadata.namespace) == (w.kind, w.name, w.metadata.namespace):
                return s
        return None


def obj_key(kind: str, namespace: str, name: str) -> str:
    """How objects are identified: kind, namespace and name (``Deployment/monitoring/grafana``)."""
    return f"{kind}/{namespace}/{name}"


def _group(api: str) -> str | None:
    """The API group of an apiVersion ('' for core v1); None when it is not Kubernetes-shaped."""
    if "/" not in api:
        return "" if api == "v1" else None
    return api.split("/", 1)[0]


def _items(doc: Doc, data: Any) -> Iterable[tuple[Path_, Any]]:
    """The objects of a document: itself, or the items of a List / ``<Kind>List`` (items that
    leave out apiVersion and kind take them from the list, as typed lists do)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind.endswith("List") and "items" in data:
        if not isinstance(data["items"], list | None):
            raise error_at(doc, (), ("items",), kind, "must be a list of objects")
        item_kind = kind.removesuffix("List")
        for i, item in enumerate(data.get("items") or []):
            if isinstance(item, dict) and item_kind:
                fill = {"apiVersion": data.get("apiVersion"), "kind": item_kind}
                item = {**{k: v for k, v in fill.items() if k not in item and v}, **item}
            yield ("items", i), item
    else:
        yield (), data


def parse(
    docs: Iterable[Doc], unique: bool = False, errors: list[InputError] | None = None, once: bool = False
) -> Objects:
    """The objects of ``docs``. ``unique``: two objects of one kind, namespace and name are an
    error (a scenario names workloads by name); ``probesim check`` lints both instead. With
    ``errors``, an invalid object (or List) is noted there and the others still read. With
    ``unique`` or ``once``, an object given twice with the same content is read once."""
    out = Objects()
    seen: dict[str, Origin] = {}
    for doc in docs:
        try:
            items = list(_items(doc, doc.data))
        except InputError as e:
            if errors is None:
                raise
            errors.append(e)
            continue
        for base, data in items:
            try:
                model = _parse_object(doc, base, data, out)
            except InputError as e:
                if errors is None:
                    raise
                errors.append(e)
                continue
            if model is None:
                continue
            # The API group tells a Knative Service from a Service of the same name.
            group = _group(str(data.get("apiVersion"))) or ""
            key = group + ":" + obj_key(model.kind, model.metadata.namespace, model.metadata.name)
            if (unique or once) and key in seen and _same(seen[key], doc, base):
                out.drop(model)  # the same object given twice (a printed scenario and its folder)
                continue
            # A custom resource's workload is never simulated, so never named by a scenario: two of
            # one name are linted both (a tutorial's two versions of a Knative Service).
            if unique and key in seen and id(model) not in out.custom:
                raise _twice(seen[key], doc, base, f"{model.kind} {model.metadata.name}")
            seen.setdefault(key, out.origin(model))
    _resolve_refs(out, unique or once, errors)
    return out


def _resolve_refs(out: Objects, once: bool, errors: list[InputError] | None) -> None:
    """Each Rollout whose pods are another object's template (spec.workloadRef), read from that
    object: found by kind and name in the Rollout's namespace (in the Rollout's file, else its
    folder, else anywhere). The object, a Deployment Argo's convention scales to 0, is then not
    linted on its own unless it runs pods itself (replicas above 0)."""
    done: dict[str, Origin] = {}
    for ref in out._refs:
        ns = ref.meta.namespace
        key = obj_key("Rollout", ns, ref.meta.name)
        if once and key in done and _same(done[key], ref.doc, ref.base):
            continue
        found = [
            w for w in out.workloads if (w.kind, w.name, w.metadata.namespace) == (ref.kind, ref.name, ns)
        ]
        here = Path(ref.doc.file)
        near = sorted(found, key=lambda w: (Path(out.origin(w).doc.file) != here,
                                            Path(out.origin(w).doc.file).parent != here.parent))  # fmt: skip
        if not near:
            why = (f"spec.workloadRef names {ref.kind} {ref.name}, which is not among the manifests: "
                   "its pod template is not linted")  # fmt: skip
            out.skipped.append(Skipped("Rollout", ref.meta.name, ns, ref.doc.file, ref.line, why))
            continue
        target = near[0]
        try:
            rollout = custom.resolve(ref, target)
        except InputError as e:
            if errors is None:
                raise
            errors.append(e)
            continue
        o = out.origin(target)
        origin = Origin(o.doc, o.base, o.spec_path, (ref.doc, ref.base))
        done.setdefault(key, origin)
        out.workloads.append(rollout)
        out._add(rollout, origin)
        out.template_of[id(rollout)] = target
        if target.spec.replicas == 0 and target in out.workloads:
            out.workloads.remove(target)
            why = (f"its pod template is Rollout {ref.meta.name}'s (spec.workloadRef), linted as the "
                   "Rollout; it runs no pods itself (replicas: 0)")  # fmt: skip
            out.skipped.append(Skipped(target.kind, target.name, ns, o.doc.file, o.doc.line_of(o.base), why))


def _same(first: Origin, doc: Doc, base: Path_) -> bool:
    """Whether an object at ``base`` in ``doc`` has the content of ``first``."""
    return bool(content(first.doc, first.base) == content(doc, base))


def content(doc: Doc, base: Path_) -> Any:
    """The object at ``base`` in ``doc`` as the API server would read it, to compare two: null
    fields left out; a List's item filled with its apiVersion and kind."""
    return _pruned(_filled(doc, base))


def _filled(doc: Doc, base: Path_) -> Any:
    data = get_path(doc.data, base)
    if base and isinstance(doc.data, dict) and isinstance(data, dict):
        fill = {
            "apiVersion": doc.data.get("apiVersion"),
            "kind": str(doc.data.get("kind", "")).removesuffix("List"),
        }
        data = {**{k: v for k, v in fill.items() if k not in data and v}, **data}
    return data


def _twice(first: Origin, doc: Doc, base: Path_, obj: str) -> InputError:
    """Two objects of one kind and name: in one file a mistake; in two files two variants (a base
    and its overlay, two environments), which a run takes one at a time."""
    d = first.doc
    if d.file == doc.file or doc.file.startswith("<"):
        return error_at(doc, base, ("metadata", "name"), obj, f"defined twice (first in {d.file}:{d.line})")
    folder = os.path.dirname(doc.file) or "."
    return InputError(
        f"{obj} is defined in {d.file}:{d.line_of(first.base)} and {doc.file}:{doc.line_of(base)}, "
        f"with different content (two variants?): run one at a time, e.g. probesim run {folder}/"
    )


def _pruned(data: Any) -> Any:
    """``data`` without null-valued keys: the API server reads ``annotations:`` left empty (null)
    as not set."""
    if isinstance(data, dict):
        return {k: _pruned(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_pruned(v) for v in data]
    return data


def _skip(out: Objects, doc: Doc, base: Path_, kind: str, meta: Any, why: str) -> None:
    name = meta.get("name") if isinstance(meta, dict) else None
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    out.skipped.append(
        Skipped(kind, str(name) if name is not None else None, str(ns) if ns is not None else None,
                doc.file, doc.line_of(base), why)
    )  # fmt: skip


def _parse_object(doc: Doc, base: Path_, data: Any, out: Objects) -> Read | None:
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not data.get("kind"):
        _skip(out, doc, base, "", None, "not a Kubernetes object (no kind)")
        return None
    kind = data["kind"]
    api = data.get("apiVersion")
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not name and isinstance(meta, dict) and isinstance(meta.get("generateName"), str):
        name = meta["generateName"] + GENERATED
    obj = f"{kind} {name}" if isinstance(name, str) else kind
    reads = kind in WORKLOAD_VERSIONS or kind in ("Service", "HorizontalPodAutoscaler")
    if not isinstance(api, str) or not api:
        if reads:
            raise error_at(doc, base, ("apiVersion",), obj, "required field is missing")
        _skip(out, doc, base, kind, meta, "no apiVersion: not a Kubernetes object")
        return None
    group = _group(api)
    if group is None or (group and "." not in group and group not in KNOWN_GROUP_KINDS):
        _skip(out, doc, base, kind, meta, f"apiVersion {api} is not a Kubernetes API group")
        return None
    known = KNOWN_GROUP_KINDS.get(group)
    served = {**WORKLOAD_VERSIONS, "Service": ("v1",), "HorizontalPodAutoscaler": HPA_VERSIONS}.get(kind)
    if known is not None and served is not None and api not in served:
        raise error_at(
            doc, base, ("apiVersion",), obj, f"{kind} is served as apiVersion {served[0]}, not {api!r}"
        )
    if known is not None and kind not in known:
        near = difflib.get_close_matches(kind, sorted(known), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else f"; {api} serves: {', '.join(sorted(known))}"
        raise error_at(doc, base, ("kind",), obj, f"unknown kind {kind!r} for {api}{hint}")
    if kind in WORKLOAD_VERSIONS and api in WORKLOAD_VERSIONS[kind]:
        w, spec_path = read_workload(doc, base, _pruned(data), obj)
        out.workloads.append(w)
        out._add(w, Origin(doc, base, spec_path))
        return w
    if kind == "Service" and api == "v1":
        s = read_service(doc, base, _pruned(data), obj)
        out.services.append(s)
        out._add(s, Origin(doc, base))
        return s
    if kind == "HorizontalPodAutoscaler" and api in HPA_VERSIONS:
        h, ignored = read_hpa(doc, base, _pruned(data), obj)
        if ignored:
            out.unsimulated_metrics[h.name] = ignored
        out.hpas.append(h)
        out._add(h, Origin(doc, base))
        return h
    if kind == "PodDisruptionBudget" and api == "policy/v1":
        b = read_pdb(doc, base, _pruned(data), obj)
        out.pdbs.append(b)
        out._add(b, Origin(doc, base))
        return b
    if group.startswith("networking.istio.io") and kind in ISTIO_READ:
        out.istio.append((doc, base, data))
        return None
    if group == custom.KEDA and kind == "ScaledObject":
        so = custom.read_scaled_object(doc, base, _pruned(data), obj)
        out.scaled_objects.append(so)
        out._add(so, Origin(doc, base))
        return so
    read: tuple[Workload, Path_] | WorkloadRef | None = None
    if group == custom.ARGO and kind == "Rollout":
        read = custom.read_rollout(doc, base, _pruned(data), obj)
    elif group == custom.KNATIVE and kind in custom.KNATIVE_KINDS:
        read = custom.read_knative(doc, base, _pruned(data), obj)
    elif known is None and group != "apiextensions.k8s.io" and custom.has_pod_template(data):
        read = custom.read_custom(doc, base, _pruned(data), obj)
    if isinstance(read, WorkloadRef):
        out._refs.append(read)
        return None
    if read is not None:
        w, spec_path = read
        out.workloads.append(w)
        out._add(w, Origin(doc, base, spec_path))
        out.custom.add(id(w))
        return w
    if kind == "Namespace" and api == "v1" and isinstance(name, str):
        labels = meta.get("labels") if isinstance(meta, dict) else None
        if isinstance(labels, dict):  # for Istio's injection label
            out.namespace_labels[name] = {str(k): str(v) for k, v in labels.items()}
    if known is not None:
        why = "holds no pod template or probe"
    elif group == "apiextensions.k8s.io":
        why = "a custom resource definition"
    elif group.endswith("k8s.io"):
        why = "holds no pod template or probe"
    else:
        why = f"custom resource ({group}) with no pod template at spec.template"
    _skip(out, doc, base, kind, meta, why)
    return None
