"""Scenario files → ``Scenario``: the scenario document, the Kubernetes objects it names
(files relative to it, inline objects, or further documents of the same file), and the
cross-checks that need both (names, ordinals, the time grid)."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from pathlib import Path

from pydantic import ValidationError

from probesim.errors import InputError, InputWarning
from probesim.kube.hooks import container_hook
from probesim.manifests import kubernetes as k8s
from probesim.manifests.actions import check_actions
from probesim.manifests.durations import durations
from probesim.manifests.errors import field_path, from_validation
from probesim.manifests.yamlsrc import Doc, Path_, load_docs, read_text
from probesim.model.duration import format_ms
from probesim.model.judged import unknown_name
from probesim.model.kubernetes import HorizontalPodAutoscaler, Service, Workload
from probesim.model.scenario import (
    API_VERSION,
    ContainerBehavior,
    DeletePod,
    Scenario,
    ScenarioFile,
    ScenarioSpec,
    WorkloadBehavior,
)
from probesim.model.threshold import parse as parse_threshold
from probesim.overrides import Applied, Override, apply_to_manifests, apply_to_scenario, attribute

MAX_TEXT = 4096  # characters in a key or value of the scenario document
MAX_SERIES_BYTES = 10_000_000
MAX_SERIES_SECONDS = 366 * 24 * 3600.0  # a year; longer than any run the cost limit allows
MAX_RATE = 1e9  # as the scenario's Rate fields


def load_scenario(
    path: str, extra_manifests: Sequence[str] = (), overrides: Sequence[Override] = ()
) -> Scenario:
    """Load a scenario file (``-``: standard input), adding the Kubernetes objects of
    ``extra_manifests`` (files, or ``-`` for ``helm template … |``), with ``overrides``
    (``--set``) applied before anything is validated."""
    text, shown = read_text(path)
    base = Path(path).parent if path != "-" else Path.cwd()
    return scenario_from_text(
        text, shown, base_dir=base, extra_manifests=extra_manifests, overrides=overrides
    )


def scenario_from_text(
    text: str,
    file: str,
    base_dir: Path,
    extra_manifests: Sequence[str] = (),
    overrides: Sequence[Override] = (),
) -> Scenario:
    applied: list[Applied] = []
    try:
        return _from_text(text, file, base_dir, extra_manifests, overrides, applied)
    except InputError as e:
        raise attribute(e, applied) from None


def _from_text(
    text: str,
    file: str,
    base_dir: Path,
    extra_manifests: Sequence[str],
    overrides: Sequence[Override],
    applied: list[Applied],
) -> Scenario:
    docs = list(load_docs(text, file))
    heads = [d for d in docs if isinstance(d.data, dict) and d.data.get("kind") == "Scenario"]
    if not heads:
        raise InputError(
            f"no Scenario document (apiVersion: {API_VERSION}, kind: Scenario); "
            "see docs/scenarios.md or `probesim scenarios`",
            file=file,
        )
    if len(heads) > 1:
        raise InputError("more than one Scenario document", file=file, line=heads[1].line)
    head = heads[0]
    applied += apply_to_scenario(head, overrides)
    _check_text_sizes(head, head.data, ())
    try:
        sf = ScenarioFile.model_validate(head.data)
    except ValidationError as e:
        raise from_validation(e, head, (), "Scenario", head.data) from None

    kube_docs: list[Doc] = []
    listed: dict[str, int] = {}
    for i, entry in enumerate(sf.manifests):
        if isinstance(entry, str):
            target = base_dir / entry
            if not _is_file(target):
                raise InputError(
                    f"manifest file {str(target)!r} not found",
                    file=file,
                    line=head.line_of(("manifests", i)),
                    obj="Scenario",
                    field=f"manifests[{i}]",
                )
            real = os.path.realpath(target)
            if real in listed:  # read once: its objects would all be defined twice
                raise InputError(
                    f"manifest file {str(target)!r} is already listed (manifests[{listed[real]}])",
                    file=file, line=head.line_of(("manifests", i)), obj="Scenario", field=f"manifests[{i}]",
                )  # fmt: skip
            listed[real] = i
            kube_docs.extend(load_docs(*read_text(str(target))))
        else:
            kube_docs.append(
                Doc(
                    file,
                    head.data["manifests"][i],
                    head.line_of(("manifests", i)),
                    _sub_lines(head, ("manifests", i)),
                )
            )
    sf = _with_series(sf, head, base_dir)
    kube_docs.extend(d for d in docs if d is not head)
    if "-" in extra_manifests and file == "<stdin>":
        raise InputError("standard input holds the scenario already; give manifests as files", file=file)
    for m in extra_manifests:
        kube_docs.extend(load_docs(*read_text(m)))
    applied += apply_to_manifests(kube_docs, overrides)
    objects = k8s.parse(kube_docs, unique=True)
    workloads, hpas = _simulated(objects)
    for sv in objects.services:
        check_service_name(sv.name, kube_docs)
    from probesim.mesh.load import istio_objects, say_unsimulated_destinations

    rules, vss = istio_objects(objects)
    vs_docs = [(doc, base) for doc, base, data in objects.istio if data["kind"] == "VirtualService"]
    for v, (doc, base) in zip(vss, vs_docs, strict=True):
        say_unsimulated_destinations(v, doc, base, {sv.name for sv in objects.services}, rules)
    scenario = Scenario(
        name=sf.metadata.name,
        description=sf.metadata.description,
        spec=sf.spec,
        workloads=tuple(workloads),
        services=tuple(objects.services),
        autoscalers=tuple(hpas),
        disruptionBudgets=tuple(objects.pdbs),
        destinationRules=tuple(rules),
        virtualServices=tuple(vss),
        namespaceLabels=objects.namespace_labels,
    )
    _cross_check(scenario, head)
    _say_hook_assumptions(scenario, head)
    return scenario


def _say_hook_assumptions(s: Scenario, head: Doc) -> None:
    """Say, once per container and behaviour, what probesim assumes of a preStop hook whose
    length neither the manifest (a sleep action, an exec 'sleep N') nor the scenario's
    ``preStop`` behaviour gives, and that a tcpSocket hook is one the kubelet fails at once."""
    said: set[str] = set()
    for w in s.workloads:
        wb = s.behavior(w.name)
        sidecars = [c for c in w.pod_spec.init_containers if c.restart_policy == "Always"]
        for c in (*sidecars, *w.pod_spec.containers):
            h = c.lifecycle.pre_stop if c.lifecycle is not None else None
            if h is None:
                continue
            where = f"{head.file}: {w.kind} {w.name}: container {c.name}: preStop"
            if h.tcp_socket is not None:
                said.add(
                    f"{where}: a tcpSocket hook is kept by Kubernetes for old manifests but never run: the "
                    "kubelet fails it at once (FailedPreStopHook event) and sends SIGTERM; use sleep, exec "
                    "or httpGet"
                )
                continue
            behaviors = [wb.containers.get(c.name, ContainerBehavior())]
            behaviors += [ov.containers[c.name] for ov in wb.pods if c.name in ov.containers]
            for b in behaviors:
                hook = container_hook(c, b)
                if hook.assumed is not None:
                    kind = " ".join(h.exec.command) if h.exec is not None else "httpGet"
                    said.add(
                        f"{where} ({kind}): how long it runs is not known: {hook.assumed}; set "
                        f"spec.behavior.{w.name}.containers.{c.name}.preStop to its length"
                    )
    for msg in sorted(said):
        warnings.warn(InputWarning(msg), stacklevel=3)


def scenario_manifest_docs(path: str) -> tuple[list[Doc], list[str]]:
    """What a scenario file holds for ``probesim check``: the Kubernetes documents written in it
    (inline ``manifests`` entries and further documents), and the manifest files it names
    (resolved beside it)."""
    text, shown = read_text(path)
    base_dir = Path(path).parent if path != "-" else Path.cwd()
    inline: list[Doc] = []
    files: list[str] = []
    for doc in load_docs(text, shown):
        if not (isinstance(doc.data, dict) and doc.data.get("kind") == "Scenario"):
            inline.append(doc)
            continue
        entries = doc.data.get("manifests")
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, str):
                files.append(str(base_dir / entry))
            elif isinstance(entry, dict):
                sub = _sub_lines(doc, ("manifests", i))
                inline.append(Doc(shown, entry, doc.line_of(("manifests", i)), sub))
    return inline, files


def _simulated(objects: k8s.Objects) -> tuple[list[Workload], list[HorizontalPodAutoscaler]]:
    """The workloads and HPAs the engine simulates; the others, and HPA metrics it does not
    simulate, are said once as warnings. An HPA with no CPU utilization target at all is valid
    (the API server accepts it) but not simulated: it is left out, and its target keeps the
    replicas its manifest gives."""
    others = [w for w in objects.workloads if w.kind not in k8s.SIMULATED_KINDS]
    if others:
        names = ", ".join(f"{w.kind} {w.name}" for w in others)
        warnings.warn(InputWarning(f"not simulated (probesim check lints them): {names}"), stacklevel=2)
    hpas = []
    for h in objects.hpas:
        ignored = objects.unsimulated_metrics.get(h.name)
        if ignored and len(ignored) == len(h.spec.metrics):
            ref = h.spec.scale_target_ref
            warnings.warn(
                InputWarning(
                    f"HorizontalPodAutoscaler {h.name} not simulated: it scales on {', '.join(ignored)}, "
                    f"and probesim simulates CPU utilization targets only; {ref.kind} {ref.name} keeps "
                    "its replicas"
                ),
                stacklevel=2,
            )
            continue
        hpas.append(h)
        if ignored:
            warnings.warn(
                InputWarning(
                    f"HorizontalPodAutoscaler {h.name}: simulated on CPU only; ignored: {', '.join(ignored)}"
                ),
                stacklevel=2,
            )
    return [w for w in objects.workloads if w.kind in k8s.SIMULATED_KINDS], hpas


def _with_series(sf: ScenarioFile, head: Doc, base_dir: Path) -> ScenarioFile:
    """Read each traffic ``series`` CSV (seconds,rate per row) into the traffic's points."""
    traffic = list(sf.spec.traffic)
    for i, t in enumerate(traffic):
        if t.series is None:
            continue
        path = base_dir / t.series
        if not _is_file(path):
            raise InputError(f"series file {str(path)!r} not found", file=head.file,
                             line=head.line_of(("spec", "traffic", i, "series")), obj="Scenario",
                             field=f"spec.traffic[{i}].series")  # fmt: skip
        points = _series_points(path)
        if not points:
            raise InputError("no 'seconds,rate' rows", file=str(path))
        traffic[i] = t.model_copy(update={"points": tuple(points)})
    return sf.model_copy(update={"spec": sf.spec.model_copy(update={"traffic": tuple(traffic)})})


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; a name the system refuses (too long) is none."""
    try:
        return path.is_file()
    except OSError:
        return False


def _series_points(path: Path) -> list[tuple[int, float]]:
    """The (ms, rate) rows of a series CSV; every bad row is an error naming its line."""
    shown = str(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=shown) from None
    if len(data) > MAX_SERIES_BYTES:
        raise InputError(f"larger than {MAX_SERIES_BYTES // 1_000_000} MB", file=shown)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("not UTF-8 text", file=shown, line=data[: e.start].count(b"\n") + 1) from None
    points: list[tuple[int, float]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        cells = [c.strip() for c in line.split(",")]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            sec, rate = float(cells[0]), float(cells[1])
        except (ValueError, IndexError):
            if n == 1:
                continue  # a header row
            raise InputError("expected 'seconds,rate' (two numbers)", file=shown, line=n) from None
        # float() takes inf and nan, which no comparison below would catch.
        if not (math.isfinite(sec) and math.isfinite(rate)):
            raise InputError("seconds and rate must be finite numbers (not inf or nan)", file=shown, line=n)
        if not 0 <= sec <= MAX_SERIES_SECONDS or not 0 <= rate <= MAX_RATE:
            raise InputError(
                f"seconds must be 0 to {MAX_SERIES_SECONDS:g} and rate 0 to {MAX_RATE:g}", file=shown, line=n
            )
        if points and sec * 1000 < points[-1][0]:
            raise InputError("times must not go back", file=shown, line=n)
        points.append((round(sec * 1000), rate))
    return points


def check_service_name(name: str, docs: Sequence[Doc]) -> None:
    """A Service's name is a DNS label (its DNS name is <name>.<namespace>.svc), as the API
    server checks; ObjectMeta has checked it is a subdomain."""
    if len(name) <= 63 and "." not in name:
        return
    where = next(
        (
            (d.file, d.line_of((*base, "metadata", "name")))
            for d in docs
            for base, item in _objects_of(d)
            if isinstance(item, dict)
            and item.get("kind") == "Service"
            and isinstance(item.get("metadata"), dict)
            and item["metadata"].get("name") == name
        ),
        (None, None),
    )
    raise InputError(
        "a Service name must be an RFC 1123 label of at most 63 characters: a-z, 0-9 and '-' (no '.')",
        file=where[0], line=where[1], obj=f"Service {name}", field="metadata.name",
    )  # fmt: skip


def _objects_of(doc: Doc) -> list[tuple[Path_, object]]:
    """The objects of a document: itself, or the items of a List."""
    data = doc.data
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list):
        return [(("items", i), item) for i, item in enumerate(data["items"])]
    return [((), data)]


def _check_text_sizes(head: Doc, node: object, path: Path_) -> None:
    """No key or string of the scenario document (its inline manifests aside) is longer than
    MAX_TEXT: nothing a scenario says needs more, and parsing giant values costs."""
    if path == ("manifests",):
        return
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        sub = (*path, key)
        for text in (key, value):
            if isinstance(text, str) and len(text) > MAX_TEXT:
                raise InputError(
                    f"{len(text)} characters; at most {MAX_TEXT} in a scenario",
                    file=head.file, line=head.line_of(sub), obj="Scenario", field=field_path(sub),
                )  # fmt: skip
        _check_text_sizes(head, value, sub)


def _sub_lines(doc: Doc, prefix: Path_) -> dict[Path_, int]:
    n = len(prefix)
    return {p[n:]: ln for p, ln in doc.lines.items() if p[:n] == prefix}


def _cross_check(s: Scenario, head: Doc) -> None:
    def fail(path: Path_, msg: str) -> InputError:
        return InputError(
            msg, file=head.file, line=head.line_of(path), obj="Scenario", field=field_path(path)
        )

    spec = s.spec
    if not s.workloads:
        raise fail(("manifests",), "no Deployment, StatefulSet, ReplicaSet or Pod among the manifests")
    step = spec.step
    if step <= 0 or 1000 % step:
        raise fail(("spec", "step"), f"step {format_ms(step)} must divide 1s (e.g. 1s, 500ms, 100ms, 10ms)")
    for path, ms in durations(spec):
        if ms % step:
            raise fail(
                path,
                f"{format_ms(ms)} is not a multiple of the step ({format_ms(step)}); set a finer spec.step",
            )
    if spec.duration <= 0:
        raise fail(("spec", "duration"), "must be longer than 0s")
    names = {w.name: w for w in s.workloads}
    for wname, wb in spec.behavior.items():
        if wname not in names:
            raise fail(("spec", "behavior", wname), f"no workload named {wname!r}; known: {', '.join(names)}")
        w = names[wname]
        cnames = [c.name for c in (*w.pod_spec.init_containers, *w.pod_spec.containers)]
        for cname in wb.containers:
            if cname not in cnames:
                raise fail(
                    ("spec", "behavior", wname, "containers", cname),
                    f"{w.kind} {wname} has no container {cname!r}; containers: {', '.join(cnames)}",
                )
        for i, ov in enumerate(wb.pods):
            for j, o in enumerate(ov.ordinals):
                if o >= w.spec.replicas:
                    raise fail(
                        ("spec", "behavior", wname, "pods", i, "ordinals", j),
                        f"ordinal {o} is out of range: {wname} has {w.spec.replicas} replicas (0-based)",
                    )
            for cname in ov.containers:
                if cname not in cnames:
                    raise fail(
                        ("spec", "behavior", wname, "pods", i, "containers", cname),
                        f"{w.kind} {wname} has no container {cname!r}",
                    )
        _check_calls(wname, wb, spec, {sv.name: sv for sv in s.services}, fail)
        gates = {g.condition_type for g in w.pod_spec.readiness_gates}
        for g in wb.readiness_gates:
            if g not in gates:
                raise fail(
                    ("spec", "behavior", wname, "readinessGates", g),
                    f"{wname} declares no readiness gate {g!r}",
                )
    deleted: set[str] = set()
    for i, a in enumerate(spec.actions):
        if not isinstance(a, DeletePod):
            continue
        if not _is_pod(s, a.pod):
            pods = (n for w in s.workloads for n in _pod_names(w))
            known = ", ".join(islice(pods, 20)) + (
                ", …" if sum(w.spec.replicas for w in s.workloads) > 20 else ""
            )
            raise fail(("spec", "actions", i, "pod"), f"no pod {a.pod!r} when the run starts; pods: {known}")
        if a.pod in deleted and not _stateful(s, a.pod):
            raise fail(
                ("spec", "actions", i, "pod"), f"pod {a.pod!r} is already deleted by an earlier action"
            )
        deleted.add(a.pod)
    check_actions(s, head, fail, lambda name: _is_pod(s, name))
    for h in s.autoscalers:
        ref = h.spec.scale_target_ref
        target = next((w for w in s.workloads if w.name == ref.name and w.kind == ref.kind), None)
        if target is None or target.kind not in ("Deployment", "ReplicaSet", "ReplicationController"):
            raise InputError(
                f"scaleTargetRef {ref.kind}/{ref.name} is not a Deployment or ReplicaSet of this scenario",
                file=head.file, obj=f"HorizontalPodAutoscaler {h.name}", field="spec.scaleTargetRef",
            )  # fmt: skip
    svc_names = {sv.name: sv for sv in s.services}
    for i, t in enumerate(spec.traffic):
        if t.service is None:
            if len(svc_names) != 1:
                raise fail(
                    ("spec", "traffic", i),
                    f"name the target with 'service' ({len(svc_names)} Services found)",
                )
            svc = s.services[0]
        elif t.service not in svc_names:
            raise fail(
                ("spec", "traffic", i, "service"), f"no Service {t.service!r}; known: {', '.join(svc_names)}"
            )
        else:
            svc = svc_names[t.service]
        if t.port is not None and not any(t.port in (p.port, p.name) for p in svc.spec.ports):
            raise fail(("spec", "traffic", i, "port"), f"Service {svc.name} has no port {t.port!r}")
        if t.stop is not None and t.stop <= t.start:
            raise fail(("spec", "traffic", i, "stop"), "stop must come after start")
    for i, line in enumerate(spec.thresholds):
        problem = unknown_name(parse_threshold(line), s)
        if problem is not None:
            raise fail(("spec", "thresholds", i), problem)


def _check_calls(
    wname: str,
    wb: WorkloadBehavior,
    spec: ScenarioSpec,
    services: dict[str, Service],
    fail: Callable[[Path_, str], InputError],
) -> None:
    """Every dependency a route calls is one of ``spec.dependencies``; every Service it calls is
    one of the scenario's, with the port named."""
    defined = ", ".join(repr(d) for d in spec.dependencies) or "none"
    base: Path_ = ("spec", "behavior", wname)
    groups = [((*base, "containers"), wb.containers)]
    groups += [((*base, "pods", i, "containers"), ov.containers) for i, ov in enumerate(wb.pods)]
    for gpath, containers in groups:
        for cname, cb in containers.items():
            for rpath, cost in cb.routes.items():
                for j, call in enumerate(cost.calls):
                    where = (*gpath, cname, "routes", rpath, "calls", j)
                    if call.dependency is not None and call.dependency not in spec.dependencies:
                        raise fail(
                            (*where, "dependency"),
                            f"route {rpath!r} calls dependency {call.dependency!r}, which "
                            f"spec.dependencies does not define (defined: {defined})",
                        )
                    if call.service is None:
                        continue
                    svc = services.get(call.service)
                    if svc is None:
                        known = ", ".join(services) or "none"
                        raise fail(
                            (*where, "service"),
                            f"route {rpath!r} calls Service {call.service!r}, which the manifests do "
                            f"not define (Services: {known})",
                        )
                    if call.port is not None and not any(
                        call.port in (p.port, p.name) for p in svc.spec.ports
                    ):
                        ports = ", ".join(str(p.name or p.port) for p in svc.spec.ports)
                        raise fail(
                            (*where, "port"), f"Service {svc.name} has no port {call.port!r} (ports: {ports})"
                        )


def _pod_names(w: Workload) -> Iterator[str]:
    """``pod_names_of``, one at a time: a workload may ask for two billion replicas."""
    if w.kind == "Pod":
        yield w.name
    else:
        yield from (f"{w.name}-{i}" for i in range(w.spec.replicas))


def _stateful(s: Scenario, name: str) -> bool:
    """Whether ``name`` is a StatefulSet's pod: its replacement keeps the name, so it may be
    deleted again (each time the pod of that name that exists then)."""
    w = _pod_owner(s, name)
    return w is not None and w.kind == "StatefulSet"


def _is_pod(s: Scenario, name: str) -> bool:
    """Whether ``name`` is one of the pods the run starts with (see ``pod_names_of``)."""
    return _pod_owner(s, name) is not None


def _pod_owner(s: Scenario, name: str) -> Workload | None:
    """The workload whose pod ``name`` is when the run starts, if any."""
    for w in s.workloads:
        if w.kind == "Pod":
            if name == w.name:
                return w
            continue
        ordinal = name.removeprefix(f"{w.name}-")
        digits = ordinal != name and ordinal.isascii() and ordinal.isdigit()
        if digits and str(int(ordinal)) == ordinal and int(ordinal) < w.spec.replicas:
            return w
    return None
