"""Kubernetes YAML → probesim model: kinds, API defaults, and the API server's validation of
the fields probesim reads (reference/kubelet.md §1.1), with errors that name file and line."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from probesim.errors import InputError
from probesim.manifests.errors import field_path, from_validation
from probesim.manifests.yamlsrc import Doc, Path_
from probesim.model.kubernetes import (
    Container,
    HorizontalPodAutoscaler,
    ObjectMeta,
    PodSpec,
    Probe,
    ProbeType,
    Service,
    Workload,
)

WORKLOAD_KINDS = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "Pod": "v1"}
# Built-in kinds probesim reads past (reported as skipped); a misspelt built-in kind is an error.
BUILTIN_GROUPS = {
    "v1",
    "apps/v1",
    "batch/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "policy/v1",
    "networking.k8s.io/v1",
    "rbac.authorization.k8s.io/v1",
}
SKIPPED_BUILTIN_KINDS = {
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Namespace",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "Endpoints",
    "LimitRange",
    "ResourceQuota",
    "DaemonSet",
    "Job",
    "CronJob",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
    "Ingress",
    "IngressClass",
    "NetworkPolicy",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "ControllerRevision",
}
CONTAINER_FIELDS = {
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
}
PROBE_FIELDS = ("startupProbe", "readinessProbe", "livenessProbe")


@dataclass
class Objects:
    """What a set of manifests holds, in file order."""

    workloads: list[Workload] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)
    istio: list[tuple[Doc, Path_, dict[str, Any]]] = field(
        default_factory=list
    )  # DestinationRule, VirtualService
    skipped: list[str] = field(default_factory=list)  # "ConfigMap app-config (file:line)"
    origins: dict[str, tuple[Doc, Path_]] = field(default_factory=dict)  # "Kind/name" → where
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # Namespace → labels


def _items(doc: Doc) -> Iterable[tuple[Path_, Any]]:
    data = doc.data
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
        for i, item in enumerate(data["items"]):
            yield ("items", i), item
    else:
        yield (), data


def parse(docs: Iterable[Doc]) -> Objects:
    out = Objects()
    for doc in docs:
        for base, data in _items(doc):
            _parse_object(doc, base, data, out)
    return out


def _err(doc: Doc, base: Path_, rel: Path_, obj: str | None, msg: str) -> InputError:
    return InputError(
        msg, file=doc.file, line=doc.line_of((*base, *rel)), obj=obj, field=field_path(rel) or None
    )


def _parse_object(doc: Doc, base: Path_, data: Any, out: Objects) -> None:
    if not isinstance(data, dict):
        raise _err(doc, base, (), None, "expected a Kubernetes object (a mapping with apiVersion and kind)")
    kind, api = data.get("kind"), data.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise _err(doc, base, ("kind",), None, "missing 'kind'")
    if not isinstance(api, str) or not api:
        raise _err(doc, base, ("apiVersion",), None, f"{kind}: missing 'apiVersion'")
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    obj = f"{kind} {name}" if isinstance(name, str) else kind
    if kind == "HorizontalPodAutoscaler" and api in ("autoscaling/v2", "autoscaling/v1"):
        hpa = _hpa(doc, base, data, obj)
        key = f"{kind}/{hpa.name}"
        if key in out.origins:
            raise _err(doc, base, ("metadata", "name"), obj, "defined twice")
        out.origins[key] = (doc, base)
        out.hpas.append(hpa)
    elif kind in WORKLOAD_KINDS or kind == "Service":
        want = WORKLOAD_KINDS.get(kind, "v1")
        if api != want:
            raise _err(doc, base, ("apiVersion",), obj, f"{kind} is served as apiVersion {want}, not {api!r}")
        model: Workload | Service = (
            _workload(doc, base, data, obj) if kind in WORKLOAD_KINDS else _service(doc, base, data, obj)
        )
        key = f"{kind}/{model.name}"
        if key in out.origins:
            first, _ = out.origins[key]
            raise _err(
                doc, base, ("metadata", "name"), obj, f"defined twice (first in {first.file}:{first.line})"
            )
        out.origins[key] = (doc, base)
        (out.services if isinstance(model, Service) else out.workloads).append(model)  # type: ignore[arg-type]
    elif kind in SKIPPED_BUILTIN_KINDS or api not in BUILTIN_GROUPS:
        if api.startswith("networking.istio.io/") and kind in ("DestinationRule", "VirtualService"):
            out.istio.append((doc, base, data))
        if kind == "Namespace" and api == "v1" and isinstance(name, str):
            labels = meta.get("labels") if isinstance(meta, dict) else None
            if isinstance(labels, dict):  # for Istio's injection label
                out.namespace_labels[name] = {str(k): str(v) for k, v in labels.items()}
        out.skipped.append(f"{obj} ({doc.file}:{doc.line_of(base)})")
    else:
        known = ", ".join(sorted([*WORKLOAD_KINDS, "Service", *SKIPPED_BUILTIN_KINDS]))
        raise _err(doc, base, ("kind",), obj, f"unknown kind {kind!r} for {api}; known kinds: {known}")


def _validate(model: type[Any], doc: Doc, base: Path_, data: Any, obj: str, prefix: Path_ = ()) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise from_validation(e, doc, base, obj, data, prefix) from None


def _workload(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> Workload:
    kind = data["kind"]
    if kind == "Pod":
        # A bare Pod is a workload of one pod; its spec is the template's spec.
        pod_spec = data.get("spec")
        if not isinstance(pod_spec, dict):
            raise _err(doc, base, ("spec",), obj, "required field is missing")
        _check_pod_spec(doc, (*base, "spec"), pod_spec, obj)
        meta = _validate(ObjectMeta, doc, base, data.get("metadata"), obj, ("metadata",))
        spec_model = _validate(PodSpec, doc, base, pod_spec, obj, ("spec",))
        extra = set(data) - {"apiVersion", "kind", "metadata", "spec", "status"}
        if extra:
            raise _err(doc, base, (sorted(extra)[0],), obj, "unknown field")
        shaped = {"replicas": 1, "template": {"metadata": {"labels": meta.labels}, "spec": spec_model}}
        w = Workload.model_validate({"kind": "Pod", "metadata": meta, "spec": shaped})
        spec_path: Path_ = ("spec",)
    else:
        spec = data.get("spec")
        if not isinstance(spec, dict):
            raise _err(doc, base, ("spec",), obj, "required field is missing")
        template = spec.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            _check_pod_spec(doc, (*base, "spec", "template", "spec"), template["spec"], obj)
        w = _validate(Workload, doc, base, data, obj)
        spec_path = ("spec", "template", "spec")
        if w.spec.selector is None:
            raise _err(
                doc, base, ("spec", "selector"), obj, "required field is missing (apps/v1 needs a selector)"
            )
        labels = w.pod_labels
        sel = w.spec.selector.match_labels
        if not sel or any(labels.get(k) != v for k, v in sel.items()):
            raise _err(
                doc,
                base,
                ("spec", "selector"),
                obj,
                "selector does not match template labels (spec.template.metadata.labels)",
            )
        ru = w.spec.strategy.rolling_update if w.spec.strategy else None
        if ru is not None and ru.max_surge in (0, "0%") and ru.max_unavailable in (0, "0%"):
            raise _err(
                doc,
                base,
                ("spec", "strategy", "rollingUpdate", "maxUnavailable"),
                obj,
                "may not be 0 when maxSurge is 0",
            )
        if w.pod_spec.restart_policy != "Always":
            raise _err(
                doc,
                base,
                (*spec_path, "restartPolicy"),
                obj,
                f'unsupported value "{w.pod_spec.restart_policy}": a {kind} template supports only "Always"',
            )
    _check_probes(doc, base, spec_path, w, obj)
    return w


def _check_pod_spec(doc: Doc, abs_path: Path_, spec: dict[str, Any], obj: str) -> None:
    """Checks pydantic cannot express: unknown container fields, unique container names."""
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        items = spec.get(group)
        if not isinstance(items, list):
            continue
        for i, c in enumerate(items):
            if not isinstance(c, dict):
                continue
            for k in c:
                if k not in CONTAINER_FIELDS:
                    raise _err(
                        doc, (*abs_path, group, i), (k,), obj, "unknown field in a container"
                    ) from None
            n = c.get("name")
            if isinstance(n, str):
                if n in seen:
                    raise _err(doc, abs_path, (group, i, "name"), obj, f'duplicate container name "{n}"')
                seen.add(n)


def _check_probes(doc: Doc, base: Path_, spec_path: Path_, w: Workload, obj: str) -> None:
    for group, containers in (
        ("initContainers", w.pod_spec.init_containers),
        ("containers", w.pod_spec.containers),
    ):
        for i, c in enumerate(containers):
            for fname in PROBE_FIELDS:
                kind: ProbeType = fname.removesuffix("Probe")  # type: ignore[assignment]
                p = c.probe(kind)
                if p is not None:
                    if group == "initContainers" and c.restart_policy != "Always":
                        msg = "probes are allowed only on sidecar init containers (restartPolicy: Always)"
                        raise _err(doc, base, (*spec_path, group, i, fname), obj, msg)
                    _check_probe(doc, base, (*spec_path, group, i, fname), p, kind, obj)


def _check_probe(doc: Doc, base: Path_, path: Path_, p: Probe, kind: ProbeType, obj: str) -> None:
    handlers = [h for h in ("exec", "http_get", "tcp_socket", "grpc") if getattr(p, h) is not None]
    if not handlers:
        raise _err(
            doc, base, path, obj, "must specify a handler type (one of exec, httpGet, tcpSocket, grpc)"
        )
    if len(handlers) > 1:
        raise _err(doc, base, path, obj, "may not specify more than 1 handler type")
    for fname, value, minimum in (
        ("initialDelaySeconds", p.initial_delay_seconds, 0),
        ("timeoutSeconds", p.timeout_seconds, 1),
        ("periodSeconds", p.period_seconds, 1),
        ("successThreshold", p.success_threshold, 1),
        ("failureThreshold", p.failure_threshold, 1),
    ):
        if value < minimum:
            raise _err(
                doc, base, (*path, fname), obj, f"must be greater than or equal to {minimum} (got {value})"
            )
    if kind != "readiness" and p.success_threshold != 1:
        raise _err(
            doc,
            base,
            (*path, "successThreshold"),
            obj,
            f"must be 1 for {kind} probes (got {p.success_threshold})",
        )
    if p.termination_grace_period_seconds is not None:
        if kind == "readiness":
            raise _err(
                doc,
                base,
                (*path, "terminationGracePeriodSeconds"),
                obj,
                "must not be set for readinessProbes",
            )
        if p.termination_grace_period_seconds < 1:
            raise _err(
                doc,
                base,
                (*path, "terminationGracePeriodSeconds"),
                obj,
                f"must be greater than 0 (got {p.termination_grace_period_seconds})",
            )
    if p.exec is not None and not p.exec.command:
        raise _err(
            doc, base, (*path, "exec", "command"), obj, "required value: an exec probe needs a command"
        )


def _hpa(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> HorizontalPodAutoscaler:
    h: HorizontalPodAutoscaler = _validate(HorizontalPodAutoscaler, doc, base, data, obj)
    if h.spec.min_replicas > h.spec.max_replicas:
        raise _err(doc, base, ("spec", "minReplicas"), obj, "must be less than or equal to maxReplicas")
    for i, m in enumerate(h.spec.metrics):
        r = m.resource
        if m.type != "Resource" or r is None or r.name != "cpu" or r.target.type != "Utilization":
            raise _err(
                doc,
                base,
                ("spec", "metrics", i),
                obj,
                "probesim simulates CPU utilization targets only "
                "(type: Resource, name: cpu, target.type: Utilization)",
            )
        if r.target.average_utilization is None:
            raise _err(
                doc, base, ("spec", "metrics", i, "resource", "target"), obj, "averageUtilization is required"
            )
    return h


def _service(doc: Doc, base: Path_, data: dict[str, Any], obj: str) -> Service:
    s: Service = _validate(Service, doc, base, data, obj)
    if s.spec.type != "ExternalName" and not s.spec.ports:
        raise _err(doc, base, ("spec", "ports"), obj, "required value: a Service needs at least one port")
    return s


def container_port(c: Container, port: int | str) -> int | None:
    """The number a probe or Service port refers to in ``c``; None when a name is not declared."""
    if isinstance(port, int):
        return port
    for cp in c.ports:
        if cp.name == port:
            return cp.container_port
    return None
