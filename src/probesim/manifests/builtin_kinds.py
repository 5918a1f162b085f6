"""The built-in kinds probesim reads, one document at a time, checked as the API server checks
them (with errors that name file and line): the workloads (Deployment, ReplicaSet, StatefulSet,
DaemonSet, ReplicationController, Job, CronJob and a bare Pod, each as a Workload), Services,
HorizontalPodAutoscalers and PodDisruptionBudgets. Which document is which kind, and every
other kind, is manifests/kubernetes.py's; custom resources are manifests/custom.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probesim.kube.disruption import percent_error
from probesim.manifests.errors import error_at, validate
from probesim.manifests.validation import OPERATORS, check_pod_spec, check_probes, check_selector
from probesim.manifests.yamlsrc import Doc, Path_, get_path
from probesim.model.base import NonNegInt32, OpenModel
from probesim.model.disruption import PodDisruptionBudget
from probesim.model.kubernetes import (
    HorizontalPodAutoscaler,
    ObjectMeta,
    PodSpec,
    PodTemplate,
    Service,
    Workload,
)
from probesim.model.selectors import LabelSelector

# Before apps/v1 a missing selector defaulted to the template's labels.
SELECTOR_DEFAULTED = {"extensions/v1beta1", "apps/v1beta1"}


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


def read_pdb(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> PodDisruptionBudget:
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


def read_hpa(
    doc: Doc, base: Path_, data: dict[str, Any], obj: str
) -> tuple[HorizontalPodAutoscaler, list[str]]:
    """An HPA, and the metrics it scales on that probesim does not simulate (all but CPU
    utilization), each said as "<type> metric <name>"."""
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
    return h, ignored


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


def read_service(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> Service:
    """A Service, checked as ValidateService checks the fields probesim reads."""
    s: Service = validate(Service, doc, base, data, obj)
    # ValidateService: ports are required unless the Service is headless (type ClusterIP and
    # clusterIP None: DNS names the pods, no port is proxied) or an ExternalName.
    if s.spec.type != "ExternalName" and not s.spec.headless and not s.spec.ports:
        raise error_at(doc, base, ("spec", "ports"), obj, "required value: a Service needs at least one port")
    return s
