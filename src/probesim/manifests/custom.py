"""Custom resources read as workloads (issue 40): an Argo Rollout (its pod template, or the
Deployment its ``spec.workloadRef`` names), a Knative Service or Configuration (its revision
template, with Knative's defaults: container names, the user port, the readiness probe
queue-proxy runs), and any custom resource with a standard pod template at ``spec.template``;
and KEDA's ScaledObject, the scaler of its target, read as an HPA is.

Their pod templates are checked as the API server checks a pod's (the pods their controllers
make are refused else); their other fields only as far as probesim reads them."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from probesim.manifests.errors import error_at, validate
from probesim.manifests.validation import check_pod_spec, check_probes, check_selector
from probesim.manifests.yamlsrc import Doc, Path_, get_path
from probesim.model.base import NonNegInt32, OpenModel
from probesim.model.kubernetes import HANDLERS, ObjectMeta, PodTemplate, ScaledObject, Workload
from probesim.model.selectors import LabelSelector

ARGO = "argoproj.io"
KNATIVE = "serving.knative.dev"
KEDA = "keda.sh"
KNATIVE_KINDS = ("Service", "Configuration")  # both hold a revision template at spec.template
KNATIVE_PORT = 8080  # Knative's DefaultUserPort: the serving container's port when it declares none
KNATIVE_CONTAINER = "user-container"  # Knative's UserContainerName default
TEMPLATE_SPEC: Path_ = ("spec", "template", "spec")


class _Counts(OpenModel):
    """What probesim reads of a Rollout's (or another custom resource's) spec besides its
    template."""

    replicas: NonNegInt32 = 1
    min_ready_seconds: NonNegInt32 = 0
    selector: LabelSelector | None = None


@dataclass(frozen=True)
class WorkloadRef:
    """A Rollout whose pods are another object's template (``spec.workloadRef``, a Deployment by
    Argo's convention, usually scaled to 0): read once every object is, as it may come later."""

    doc: Doc
    base: Path_
    obj: str
    meta: ObjectMeta
    counts: _Counts
    kind: str
    name: str

    @property
    def line(self) -> int:
        return self.doc.line_of(self.base)


def has_pod_template(data: dict[str, Any]) -> bool:
    """A standard pod template at ``spec.template``: ``spec.template.spec.containers`` a list."""
    return isinstance(get_path(data, (*TEMPLATE_SPEC, "containers")), list)


def _spec(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> dict[str, Any]:
    spec = data.get("spec")
    if not isinstance(spec, dict):
        raise error_at(doc, base, ("spec",), obj, "required field is missing")
    return spec


def _template(doc: Doc, base: Path_, template: Any, obj: str) -> PodTemplate:
    """``spec.template``, checked as a pod's template."""
    if not isinstance(template, dict):
        raise error_at(doc, base, ("spec", "template"), obj, "required field is missing")
    if isinstance(template.get("spec"), dict):
        check_pod_spec(doc, (*base, *TEMPLATE_SPEC), template["spec"], obj)
    tmpl: PodTemplate = validate(PodTemplate, doc, base, template, obj, ("spec", "template"))
    return tmpl


def _counts(doc: Doc, base: Path_, spec: dict[str, Any], obj: str) -> _Counts:
    fields = {k: spec[k] for k in ("replicas", "minReadySeconds", "selector") if k in spec}
    counts: _Counts = validate(_Counts, doc, base, fields, obj, ("spec",))
    return counts


def _workload(kind: str, meta: ObjectMeta, counts: _Counts, template: PodTemplate) -> Workload:
    shaped = {
        "replicas": counts.replicas,
        "minReadySeconds": counts.min_ready_seconds,
        "selector": counts.selector or LabelSelector(matchLabels=template.metadata.labels),
        "template": template,
    }
    return Workload.model_validate({"kind": kind, "metadata": meta, "spec": shaped})


def _always(doc: Doc, base: Path_, w: Workload, obj: str) -> None:
    if w.pod_spec.restart_policy != "Always":
        msg = f'unsupported value "{w.pod_spec.restart_policy}": a {w.kind} template supports only "Always"'
        raise error_at(doc, base, (*TEMPLATE_SPEC, "restartPolicy"), obj, msg)


def read_rollout(
    doc: Doc, base: Path_, data: dict[str, Any], obj: str
) -> tuple[Workload, Path_] | WorkloadRef:
    """An Argo Rollout (argoproj.io/v1alpha1): its pod template at ``spec.template``, or the
    object its ``spec.workloadRef`` names (resolved by ``resolve``). Its strategy (canary,
    blueGreen) is not read: the rollout rules and stresses judge Deployments' and StatefulSets'
    rolling updates."""
    spec = _spec(doc, base, data, obj)
    meta: ObjectMeta = validate(ObjectMeta, doc, base, data.get("metadata"), obj, ("metadata",))
    counts = _counts(doc, base, spec, obj)
    ref = spec.get("workloadRef")
    if ref is not None:
        if not isinstance(ref, dict):
            msg = "must be an object naming a Deployment (apiVersion, kind, name)"
            raise error_at(doc, base, ("spec", "workloadRef"), obj, msg)
        if spec.get("template") is not None:
            msg = "must be empty for a workload reference rollout (spec.workloadRef names the template)"
            raise error_at(doc, base, ("spec", "template"), obj, msg)
        for key in ("kind", "name"):
            if not isinstance(ref.get(key), str) or not ref[key]:
                raise error_at(doc, base, ("spec", "workloadRef", key), obj, "required field is missing")
        return WorkloadRef(doc, base, obj, meta, counts, ref["kind"], ref["name"])
    if spec.get("template") is None:
        raise error_at(
            doc, base, ("spec", "template"), obj, "required field is missing (or spec.workloadRef)"
        )
    template = _template(doc, base, spec.get("template"), obj)
    if counts.selector is not None:
        check_selector(doc, base, obj, counts.selector, template.metadata.labels, "Rollout")
    w = _workload("Rollout", meta, counts, template)
    _always(doc, base, w, obj)
    check_probes(doc, base, TEMPLATE_SPEC, w, obj)
    return w, TEMPLATE_SPEC


def resolve(ref: WorkloadRef, target: Workload) -> Workload:
    """The Rollout of ``ref``, its pods ``target``'s template."""
    template = target.spec.template
    if ref.counts.selector is not None:
        check_selector(ref.doc, ref.base, ref.obj, ref.counts.selector, template.metadata.labels, "Rollout")
    return _workload("Rollout", ref.meta, ref.counts, template)


def read_knative(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> tuple[Workload, Path_]:
    """A Knative Service or Configuration (serving.knative.dev/v1): its revision template at
    ``spec.template``, as Knative defaults it (``knative_defaults``). Its pods carry Knative's
    labels (serving.knative.dev/service, …/configuration); it runs one replica (or its
    ``autoscaling.knative.dev/min-scale``), as the autoscaler starts a revision."""
    spec = _spec(doc, base, data, obj)
    template = spec.get("template")
    if not isinstance(template, dict):
        raise error_at(doc, base, ("spec", "template"), obj, "required field is missing")
    pod = template.get("spec")
    if not isinstance(pod, dict):
        raise error_at(doc, base, TEMPLATE_SPEC, obj, "required field is missing")
    meta: ObjectMeta = validate(ObjectMeta, doc, base, data.get("metadata"), obj, ("metadata",))
    raw_meta = template.get("metadata")
    tmeta = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    labels = tmeta.get("labels")
    own = {f"{KNATIVE}/configuration": meta.name}
    if data["kind"] == "Service":
        own[f"{KNATIVE}/service"] = meta.name
    tmeta["labels"] = {**(labels if isinstance(labels, dict) else {}), **own}
    tmpl = _template(doc, base, {**template, "metadata": tmeta, "spec": knative_defaults(pod)}, obj)
    scale = tmpl.metadata.annotations.get(
        "autoscaling.knative.dev/min-scale"
    ) or tmpl.metadata.annotations.get("autoscaling.knative.dev/minScale")
    replicas = (
        int(scale)
        if scale is not None and scale.isascii() and scale.isdigit() and 0 < int(scale) < 2**31
        else 1
    )
    w = _workload(data["kind"], meta, _Counts(replicas=replicas), tmpl)
    _always(doc, base, w, obj)
    check_probes(doc, base, TEMPLATE_SPEC, w, obj)
    return w, TEMPLATE_SPEC


def knative_defaults(pod: dict[str, Any]) -> dict[str, Any]:
    """A revision's pod spec as Knative defaults it (RevisionSpec.SetDefaults, and the revision
    reconciler's pod): a container without a name is ``user-container`` (``user-container-<i>``
    when there are several); the serving container — the only one, or the one declaring a port —
    listens on its declared port, else 8080 (``user-port``); its probes' handlers without a port
    probe that port; and without a readiness probe (or one without a handler) it gets Knative's
    default, a TCP probe of that port, which queue-proxy runs."""
    out = copy.deepcopy(pod)
    containers = out.get("containers")
    if not isinstance(containers, list) or not containers:
        return out
    many = len(containers) > 1
    for i, c in enumerate(containers):
        if isinstance(c, dict) and not c.get("name"):
            c["name"] = f"{KNATIVE_CONTAINER}-{i}" if many else KNATIVE_CONTAINER
    serving = next(
        (c for c in containers if isinstance(c, dict) and (not many or c.get("ports"))),
        None,
    )
    if serving is None:
        return out
    ports = serving.get("ports")
    first = ports[0] if isinstance(ports, list) and ports and isinstance(ports[0], dict) else None
    port = first.get("containerPort") if first is not None else KNATIVE_PORT
    if ports is None or ports == []:  # (ports of another shape are left for validation to refuse)
        serving["ports"] = [{"name": "user-port", "containerPort": KNATIVE_PORT}]
    for key in ("readinessProbe", "livenessProbe", "startupProbe"):
        probe = serving.get(key)
        if not isinstance(probe, dict):
            continue
        for handler in ("httpGet", "tcpSocket"):
            h = probe.get(handler)
            if isinstance(h, dict) and h.get("port") in (None, 0, ""):
                probe[handler] = {**h, "port": port}
    ready = serving.get("readinessProbe")
    if ready is None or (isinstance(ready, dict) and not any(k in ready for k in HANDLERS)):
        serving["readinessProbe"] = {**(ready or {}), "tcpSocket": {"port": port}}
    return out


def read_custom(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> tuple[Workload, Path_]:
    """A custom resource with a standard pod template at ``spec.template`` (an OpenKruise
    CloneSet, …): its pods are that template's, ``spec.replicas`` of them (1 when it has none)."""
    spec = _spec(doc, base, data, obj)
    template = _template(doc, base, spec.get("template"), obj)
    meta: ObjectMeta = validate(ObjectMeta, doc, base, data.get("metadata"), obj, ("metadata",))
    # Only the fields whose meaning is the usual one are read: a number of replicas, seconds.
    fields = {
        k: v
        for k in ("replicas", "minReadySeconds")
        if isinstance(v := spec.get(k), int) and not isinstance(v, bool) and 0 <= v < 2**31
    }
    counts: _Counts = validate(_Counts, doc, base, fields, obj, ("spec",))
    w = _workload(data["kind"], meta, counts, template)
    check_probes(doc, base, TEMPLATE_SPEC, w, obj)
    return w, TEMPLATE_SPEC


def read_scaled_object(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> ScaledObject:
    """A KEDA ScaledObject (keda.sh/v1alpha1): its target (``spec.scaleTargetRef``, a Deployment
    unless it says), ``minReplicaCount`` (0) and ``maxReplicaCount`` (100), checked as KEDA's
    webhook checks them."""
    so: ScaledObject = validate(ScaledObject, doc, base, data, obj)
    if so.spec.min_replica_count > so.spec.max_replica_count:
        msg = f"must be greater than or equal to minReplicaCount ({so.spec.min_replica_count})"
        raise error_at(doc, base, ("spec", "maxReplicaCount"), obj, msg)
    return so
