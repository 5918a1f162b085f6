"""The API server's checks of the fields probesim reads that pydantic's models do not make:
label selectors (operators, values, a selector matching its template), a pod spec's
containers, and each probe's handler and timings (pkg/apis/core/validation,
pkg/apis/apps/validation; docs/manifests.md lists each with its upstream function)."""

from __future__ import annotations

from typing import Any

from probesim.manifests.errors import error_at
from probesim.manifests.yamlsrc import Doc, Path_
from probesim.model.kubernetes import Probe, ProbeType, Workload
from probesim.model.selectors import LabelSelector

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

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


def check_selector(
    doc: Doc, base: Path_, obj: str, sel: LabelSelector, labels: dict[str, str], kind: str
) -> None:
    """ValidateDeploymentSpec's (and the other controllers') selector checks: matchLabels and
    matchExpressions (ValidateLabelSelectorRequirement), not empty, matching the template."""
    for i, r in enumerate(sel.match_expressions):
        path: Path_ = ("spec", "selector", "matchExpressions", i)
        if r.operator not in OPERATORS:
            msg = f"{r.operator!r} is not a valid selector operator (In, NotIn, Exists, DoesNotExist)"
            raise error_at(doc, base, (*path, "operator"), obj, msg)
        if r.operator in ("In", "NotIn") and not r.values:
            raise error_at(
                doc, base, (*path, "values"), obj, "must be specified when `operator` is 'In' or 'NotIn'"
            )
        if r.operator in ("Exists", "DoesNotExist") and r.values:
            raise error_at(doc, base, (*path, "values"), obj,
                       "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")  # fmt: skip
    if sel.empty:
        raise error_at(doc, base, ("spec", "selector"), obj, f"empty selector is invalid for {kind.lower()}")
    if not sel.matches(labels):
        raise error_at(doc, base, ("spec", "selector"), obj,
                   "selector does not match template labels (spec.template.metadata.labels)")  # fmt: skip


def check_pod_spec(doc: Doc, abs_path: Path_, spec: dict[str, Any], obj: str) -> None:
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
                    raise error_at(
                        doc, (*abs_path, group, i), (k,), obj, "unknown field in a container"
                    ) from None
            n = c.get("name")
            if isinstance(n, str):
                if n in seen:
                    raise error_at(doc, abs_path, (group, i, "name"), obj, f'duplicate container name "{n}"')
                seen.add(n)


def check_probes(doc: Doc, base: Path_, spec_path: Path_, w: Workload, obj: str) -> None:
    """Each container's probes, then its preStop hook (``check_lifecycle``)."""
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
                        raise error_at(doc, base, (*spec_path, group, i, fname), obj, msg)
                    _check_probe(doc, base, (*spec_path, group, i, fname), p, kind, obj)
    check_lifecycle(doc, base, spec_path, w, obj)
    check_scheduling(doc, base, spec_path, w, obj)


def check_scheduling(doc: Doc, base: Path_, spec_path: Path_, w: Workload, obj: str) -> None:
    """The label selectors of the pod's affinity terms and topology spread constraints, as
    ValidateLabelSelector checks them (the models check the rest: operators of node selectors,
    tolerations, maxSkew, minDomains)."""
    spec = w.pod_spec
    selectors: list[tuple[Path_, LabelSelector | None]] = []
    aff = spec.affinity
    for kind, pa in (("podAffinity", aff.pod_affinity if aff else None),
                     ("podAntiAffinity", aff.pod_anti_affinity if aff else None)):  # fmt: skip
        if pa is None:
            continue
        at: Path_ = (*spec_path, "affinity", kind)
        for i, term in enumerate(pa.required_during_scheduling_ignored_during_execution):
            path: Path_ = (*at, "requiredDuringSchedulingIgnoredDuringExecution", i)
            selectors += [((*path, "labelSelector"), term.label_selector)]
            selectors += [((*path, "namespaceSelector"), term.namespace_selector)]
        for i, wt in enumerate(pa.preferred_during_scheduling_ignored_during_execution):
            path = (*at, "preferredDuringSchedulingIgnoredDuringExecution", i, "podAffinityTerm")
            selectors += [((*path, "labelSelector"), wt.pod_affinity_term.label_selector)]
            selectors += [((*path, "namespaceSelector"), wt.pod_affinity_term.namespace_selector)]
    for i, c in enumerate(spec.topology_spread_constraints or ()):
        selectors += [((*spec_path, "topologySpreadConstraints", i, "labelSelector"), c.label_selector)]
    for path, sel in selectors:
        if sel is not None:
            _check_expressions(doc, base, path, sel, obj)


def _check_expressions(doc: Doc, base: Path_, path: Path_, sel: LabelSelector, obj: str) -> None:
    for i, r in enumerate(sel.match_expressions):
        at: Path_ = (*path, "matchExpressions", i)
        if r.operator not in OPERATORS:
            msg = f"{r.operator!r} is not a valid selector operator (In, NotIn, Exists, DoesNotExist)"
            raise error_at(doc, base, (*at, "operator"), obj, msg)
        if r.operator in ("In", "NotIn") and not r.values:
            msg = "must be specified when `operator` is 'In' or 'NotIn'"
            raise error_at(doc, base, (*at, "values"), obj, msg)
        if r.operator in ("Exists", "DoesNotExist") and r.values:
            msg = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            raise error_at(doc, base, (*at, "values"), obj, msg)


def check_lifecycle(doc: Doc, base: Path_, spec_path: Path_, w: Workload, obj: str) -> None:
    """validateLifecycle's checks of each container's preStop hook: exactly one handler
    (validateHandler), an exec command, and a sleep of 0 to terminationGracePeriodSeconds seconds
    (validateSleepAction, with zero allowed as since Kubernetes 1.32's
    PodLifecycleSleepActionAllowZero)."""
    grace = w.pod_spec.termination_grace_period_seconds
    for group, containers in (
        ("initContainers", w.pod_spec.init_containers),
        ("containers", w.pod_spec.containers),
    ):
        for i, c in enumerate(containers):
            h = c.lifecycle.pre_stop if c.lifecycle is not None else None
            if h is None:
                continue
            path: Path_ = (*spec_path, group, i, "lifecycle", "preStop")
            if not h.kinds:
                msg = "must specify a handler type (one of exec, httpGet, sleep)"
                raise error_at(doc, base, path, obj, msg)
            if len(h.kinds) > 1:
                msg = f"may not specify more than 1 handler type (got {', '.join(h.kinds)})"
                raise error_at(doc, base, path, obj, msg)
            if h.exec is not None and not h.exec.command:
                msg = "required value: an exec hook needs a command"
                raise error_at(doc, base, (*path, "exec", "command"), obj, msg)
            if h.sleep is not None and not 0 <= h.sleep.seconds <= grace:
                msg = (
                    f"must be non-negative and less than terminationGracePeriodSeconds ({grace}) "
                    f"(got {h.sleep.seconds})"
                )
                raise error_at(doc, base, (*path, "sleep", "seconds"), obj, msg)


def _check_probe(doc: Doc, base: Path_, path: Path_, p: Probe, kind: ProbeType, obj: str) -> None:
    handlers = [h for h in ("exec", "http_get", "tcp_socket", "grpc") if getattr(p, h) is not None]
    if not handlers:
        raise error_at(
            doc, base, path, obj, "must specify a handler type (one of exec, httpGet, tcpSocket, grpc)"
        )
    if len(handlers) > 1:
        raise error_at(doc, base, path, obj, "may not specify more than 1 handler type")
    for fname, value, minimum in (
        ("initialDelaySeconds", p.initial_delay_seconds, 0),
        ("timeoutSeconds", p.timeout_seconds, 1),
        ("periodSeconds", p.period_seconds, 1),
        ("successThreshold", p.success_threshold, 1),
        ("failureThreshold", p.failure_threshold, 1),
    ):
        if value < minimum:
            raise error_at(
                doc, base, (*path, fname), obj, f"must be greater than or equal to {minimum} (got {value})"
            )
    if kind != "readiness" and p.success_threshold != 1:
        raise error_at(
            doc,
            base,
            (*path, "successThreshold"),
            obj,
            f"must be 1 for {kind} probes (got {p.success_threshold})",
        )
    if p.termination_grace_period_seconds is not None:
        if kind == "readiness":
            raise error_at(
                doc,
                base,
                (*path, "terminationGracePeriodSeconds"),
                obj,
                "must not be set for readinessProbes",
            )
        if p.termination_grace_period_seconds < 1:
            raise error_at(
                doc,
                base,
                (*path, "terminationGracePeriodSeconds"),
                obj,
                f"must be greater than 0 (got {p.termination_grace_period_seconds})",
            )
    if p.exec is not None and not p.exec.command:
        raise error_at(
            doc, base, (*path, "exec", "command"), obj, "required value: an exec probe needs a command"
        )
