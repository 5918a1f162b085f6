"""Kubernetes YAML → probesim model: kinds, API defaults, and the API server's validation of
the fields probesim reads (reference/kubelet.md §1.1), with errors that name file and line."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probesim.errors import InputError
from probesim.kube.disruption import percent_error
from probesim.manifests import custom
from probesim.manifests.custom import WorkloadRef
from probesim.manifests.errors import error_at, validate
from probesim.manifests.validation import OPERATORS, check_pod_spec, check_probes, check_selector
from probesim.manifests.yamlsrc import Doc, Path_, get_path
from probesim.model.base import NonNegInt32, OpenModel
from probesim.model.disruption import PodDisruptionBudget
from probesim.model.kubernetes import (
    GENERATED,
    HorizontalPodAutoscaler,
    ObjectMeta,
    PodSpec,
    PodTemplate,
    ScaledObject,
    Service,
    Workload,
)
from probesim.model.selectors import LabelSelector

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
# Before apps/v1 a missing selector defaulted to the template's labels.
SELECTOR_DEFAULTED = {"extensions/v1beta1", "apps/v1beta1"}
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
        s = _service(doc, base, _pruned(data), obj)
        out.services.append(s)
        out._add(s, Origin(doc, base))
        return s
    if kind == "HorizontalPodAutoscaler" and api in HPA_VERSIONS:
        h = _hpa(doc, base, _pruned(data), obj, out)
        out.hpas.append(h)
        out._add(h, Origin(doc, base))
        return h
    if kind == "PodDisruptionBudget" and api == "policy/v1":
        b = _pdb(doc, base, _pruned(data), obj)
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


class _Counts(OpenModel):
    """The replica-like fields of the kinds whose spec is not a Deployment's."""

    replicas: NonNegInt32 = 1  # ReplicationController
    parallelism: NonNegInt32 = 1  # Job
    min_ready_seconds: NonNegInt32 = 0
    selector: dict[str, str] | None = None  # ReplicationController: a plain label map


def read_workload(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> tuple[Workload, Path_]:
    """A workload and the path of its pod spec inside ``data``."""
    kind = data["kind"]
    if kind == "Pod":
        # A bare Pod is a workload of one pod; its spec is the template's spec.
        pod_spec = data.get("spec")
        if not isinstance(pod_spec, dict):
            raise error_at(doc, base, ("spec",), obj, "required field is missing")
        check_pod_spec(doc, (*base, "spec"), pod_spec, obj)
        meta = validate(ObjectMeta, doc, base, data.get("metadata"), obj, ("metadata",))
        spec_model = validate(PodSpec, doc, base, pod_spec, obj, ("spec",))
        extra = set(data) - {"apiVersion", "kind", "metadata", "spec", "status"}
        if extra:
            raise error_at(doc, base, (sorted(extra)[0],), obj, "unknown field")
        shaped = {"replicas": 1, "template": {"metadata": {"labels": meta.labels}, "spec": spec_model}}
        w = Workload.model_validate({"kind": "Pod", "metadata": meta, "spec": shaped})
        spec_path: Path_ = ("spec",)
        check_probes(doc, base, spec_path, w, obj)
        return w, spec_path
    spec = data.get("spec")
    if not isinstance(spec, dict):
        raise error_at(doc, base, ("spec",), obj, "required field is missing")
    if kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        tmpl_path: Path_ = ("spec", "template")
        template = spec.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            check_pod_spec(doc, (*base, *tmpl_path, "spec"), template["spec"], obj)
        if spec.get("selector") is None and data.get("apiVersion") in SELECTOR_DEFAULTED:
            labels = template.get("metadata", {}).get("labels") if isinstance(template, dict) else None
            data = {**data, "spec": {**spec, "selector": {"matchLabels": labels or {}}}}
        w = validate(Workload, doc, base, data, obj)
        if w.spec.selector is None:
            msg = f"required field is missing ({data.get('apiVersion')} needs a selector)"
            folder = Path(doc.file).parent
            if any(
                (folder / k).is_file() for k in ("kustomization.yaml", "kustomization.yml", "Kustomization")
            ):
                msg += (
                    f"; a kustomize base? give probesim what it builds: kubectl kustomize {folder}"
                    " | probesim check - (or probesim run -)"
                )
            raise error_at(doc, base, ("spec", "selector"), obj, msg)
        check_selector(doc, base, obj, w.spec.selector, w.pod_labels, kind)
    else:  # ReplicationController, Job, CronJob: reshaped as a workload of their pod template
        if kind == "CronJob":
            job = spec.get("jobTemplate")
            job_spec = job.get("spec") if isinstance(job, dict) else None
            if not isinstance(job_spec, dict):
                raise error_at(doc, base, ("spec", "jobTemplate", "spec"), obj, "required field is missing")
            counts_path: Path_ = ("spec", "jobTemplate", "spec")
            counts_data = job_spec
        else:
            counts_path, counts_data = ("spec",), spec
        tmpl_path = (*counts_path, "template")
        template = counts_data.get("template")
        if not isinstance(template, dict):
            raise error_at(doc, base, tmpl_path, obj, "required field is missing")
        if isinstance(template.get("spec"), dict):
            check_pod_spec(doc, (*base, *tmpl_path, "spec"), template["spec"], obj)
        meta = validate(ObjectMeta, doc, base, data.get("metadata"), obj, ("metadata",))
        tmpl = validate(PodTemplate, doc, base, template, obj, tmpl_path)
        # A Job's selector is a LabelSelector the API server generates (or checks, with
        # manualSelector); only a ReplicationController's is a label map probesim reads.
        read = (
            ("replicas", "minReadySeconds", "selector")
            if kind == "ReplicationController"
            else ("parallelism", "minReadySeconds")
        )
        fields = {k: counts_data[k] for k in read if k in counts_data}
        counts = validate(_Counts, doc, base, fields, obj, counts_path)
        if kind == "ReplicationController":
            # An RC's selector is a label map, defaulted to the template's labels.
            sel = counts.selector if counts.selector else tmpl.metadata.labels
            check_selector(doc, base, obj, LabelSelector(matchLabels=sel), tmpl.metadata.labels, kind)
            replicas = counts.replicas
        else:
            sel, replicas = tmpl.metadata.labels, counts.parallelism
        shaped = {
            "replicas": replicas,
            "minReadySeconds": counts.min_ready_seconds,
            "selector": {"matchLabels": sel},
            "template": tmpl,
        }
        w = Workload.model_validate({"kind": kind, "metadata": meta, "spec": shaped})
    spec_path = (*tmpl_path, "spec")
    ru = w.spec.strategy.rolling_update if w.spec.strategy else None
    if ru is not None and ru.max_surge in (0, "0%") and ru.max_unavailable in (0, "0%"):
        raise error_at(doc, base, ("spec", "strategy", "rollingUpdate", "maxUnavailable"), obj,
                   "may not be 0 when maxSurge is 0")  # fmt: skip
    allowed = ("OnFailure", "Never") if kind in ("Job", "CronJob") else ("Always",)
    if w.pod_spec.restart_policy not in allowed:
        shown = " or ".join(f'"{a}"' for a in allowed)
        msg = f'unsupported value "{w.pod_spec.restart_policy}": a {kind} template supports only {shown}'
        raise error_at(doc, base, (*spec_path, "restartPolicy"), obj, msg)
    check_probes(doc, base, spec_path, w, obj)
    return w, spec_path


def _pdb(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> PodDisruptionBudget:
    """A PodDisruptionBudget, checked as the API server's ValidatePodDisruptionBudgetSpec does
    (one of minAvailable and maxUnavailable, each a count or a percent of at most 100%), and one
    that gives neither refused: it would guard nothing."""
    b: PodDisruptionBudget = validate(PodDisruptionBudget, doc, base, data, obj)
    spec = b.spec
    if spec.min_available is not None and spec.max_unavailable is not None:
        raise error_at(doc, base, ("spec", "maxUnavailable"), obj,
                       "minAvailable and maxUnavailable cannot be both set: give one")  # fmt: skip
    if spec.min_available is None and spec.max_unavailable is None:
        raise error_at(doc, base, ("spec",), obj, "give minAvailable or maxUnavailable (a count such as 2 "
                       "or a percent such as '50%'): without either the budget guards nothing")  # fmt: skip
    for name, value in (("minAvailable", spec.min_available), ("maxUnavailable", spec.max_unavailable)):
        why = percent_error(value) if value is not None else None
        if why is not None:
            raise error_at(doc, base, ("spec", name), obj, why)
    for i, r in enumerate(spec.selector.match_expressions if spec.selector is not None else ()):
        if r.operator not in OPERATORS:
            msg = f"{r.operator!r} is not a valid selector operator (In, NotIn, Exists, DoesNotExist)"
            raise error_at(doc, base, ("spec", "selector", "matchExpressions", i, "operator"), obj, msg)
    return b


def _hpa(doc: Doc, base: Path_, data: dict[str, Any], obj: str, out: Objects) -> HorizontalPodAutoscaler:
    if data.get("apiVersion") == "autoscaling/v2beta1":
        data = _v2beta1_metrics(data)
    h: HorizontalPodAutoscaler = validate(HorizontalPodAutoscaler, doc, base, data, obj)
    if h.spec.min_replicas > h.spec.max_replicas:
        msg = "must be greater than or equal to `minReplicas`"
        raise error_at(doc, base, ("spec", "maxReplicas"), obj, msg)
    ignored = []
    for i, m in enumerate(h.spec.metrics):
        r = m.resource
        if m.type == "Resource" and r is not None and r.name == "cpu" and r.target.type == "Utilization":
            if r.target.average_utilization is None:
                raise error_at(doc, base, ("spec", "metrics", i, "resource", "target"), obj,
                           "averageUtilization is required for target.type Utilization")  # fmt: skip
            continue
        raw = get_path(data, ("spec", "metrics", i))
        detail = get_path(raw, (m.type[0].lower() + m.type[1:],)) if isinstance(raw, dict) else None
        what = (get_path(detail, ("metric", "name")) or get_path(detail, ("name",))) if detail else None
        ignored.append(f"{m.type} metric{f' {what}' if what else ''}")
    if ignored:
        out.unsimulated_metrics[h.name] = ignored
    return h


def _v2beta1_metrics(data: dict[str, Any]) -> dict[str, Any]:
    """autoscaling/v2beta1 wrote a resource target as ``targetAverageUtilization``; read it as v2's
    ``target``."""
    spec = data.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("metrics"), list):
        return data
    metrics = []
    for m in spec["metrics"]:
        r = m.get("resource") if isinstance(m, dict) else None
        if isinstance(r, dict) and "target" not in r:
            target: dict[str, Any] = {"type": "AverageValue"}
            if "targetAverageUtilization" in r:
                target = {"type": "Utilization", "averageUtilization": r["targetAverageUtilization"]}
            rest = {k: v for k, v in r.items() if not k.startswith("targetAverage")}
            m = {**m, "resource": {**rest, "target": target}}
        metrics.append(m)
    return {**data, "spec": {**spec, "metrics": metrics}}


def _service(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> Service:
    s: Service = validate(Service, doc, base, data, obj)
    # ValidateService: ports are required unless the Service is headless (type ClusterIP and
    # clusterIP None: DNS names the pods, no port is proxied) or an ExternalName.
    if s.spec.type != "ExternalName" and not s.spec.headless and not s.spec.ports:
        raise error_at(doc, base, ("spec", "ports"), obj, "required value: a Service needs at least one port")
    return s
