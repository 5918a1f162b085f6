"""What ``probesim tune`` reads: manifests (files, directories, '-'), an optional scenario, and
the workload to tune, with where it came from (a Helm chart's ``# Source:`` line)."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probesim.errors import InputError, InputWarning
from probesim.kube.selectors import selects
from probesim.manifests import kubernetes as k8s
from probesim.manifests.discovery import read_manifests
from probesim.manifests.scenario import scenario_from_text, scenario_manifest_docs
from probesim.manifests.yamlsrc import Doc, load_docs, read_text
from probesim.mesh.istio import DestinationRule
from probesim.model.kubernetes import Service, Workload
from probesim.model.scenario import API_VERSION, Scenario
from probesim.profiles import ProfileCorrection

# Without a scenario the manifests run alone: only the stress suite judges them.
_BARE = f"apiVersion: {API_VERSION}\nkind: Scenario\nmetadata: {{name: tune}}\nspec: {{duration: 5m}}\n"


@dataclass
class TuneInputs:
    scenario: Scenario  # the user's scenario with the manifests, or the manifests alone
    given: bool  # whether the user gave a scenario (its run is an objective too)
    workload: Workload
    services: list[Service]
    rule: DestinationRule | None  # the DestinationRule for its Service, if any
    source: str | None = None  # helm's "# Source: chart/templates/x.yaml"
    where: str = ""  # file:line of the workload
    # file:line of each probe field of each container ("app", "livenessProbe"), else the container's
    probe_lines: dict[tuple[str, str], str] = field(default_factory=dict)
    # Probes the tuner adds (container → probe field → handler and timings): a readiness probe
    # where a Service sends a container traffic and it has none, as check's fix adds it.
    added: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # What each container's app profile says, for the search space (space.Space.app).
    app: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The checks check's fixes give existing probes (container → probe field → handler): the
    # app's own liveness endpoint for one on a dependency (PS016, PS006), the grpc probe for a TCP
    # check of a gRPC port (PS034). The tuner's patch makes them (space.Space.handlers).
    handlers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # Per container, what the readiness probe the tuner adds cannot see (a TCP check: a hang),
    # said beside the recommendation so that its figures are not read as that probe's doing.
    caveats: dict[str, str] = field(default_factory=dict)
    charts: list[str] = field(default_factory=list)  # unrendered chart folders among the inputs
    # .probesim.yaml → profiles: the user's corrections of what probesim worked out of the app,
    # as check takes them (its fixes, its stresses' start and pause).
    corrections: tuple[ProfileCorrection, ...] = ()
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def with_objects(self, workload: Workload, rule: DestinationRule | None) -> Scenario:
        """The scenario with ``workload`` (and ``rule``) in place of the current ones."""
        workloads = tuple(workload if w.name == workload.name else w for w in self.scenario.workloads)
        rules = tuple(
            rule if rule is not None and r is self.rule else r for r in self.scenario.destination_rules
        )
        return self.scenario.model_copy(update={"workloads": workloads, "destination_rules": rules})


@contextlib.contextmanager
def _replayed_stdin() -> Iterator[None]:
    """Standard input read once and given again to every later reader (the manifests are read
    twice: once for where each object is, once into the scenario)."""
    text = sys.stdin.read()
    saved = sys.stdin
    try:
        sys.stdin = _Replay(text)
        yield
    finally:
        sys.stdin = saved


class _Replay(io.StringIO):
    def read(self, size: int | None = -1) -> str:
        self.seek(0)
        return super().read(size)


def load(
    paths: Sequence[str],
    scenario: str | None,
    workload: str | None,
    corrections: Sequence[ProfileCorrection] = (),
) -> TuneInputs:
    """The inputs of a tune run; every problem is an InputError naming what to give.
    ``corrections``: .probesim.yaml's profile corrections."""
    if not paths and scenario is None:
        raise InputError("give manifest files, directories or '-' (see probesim tune --help)")
    if scenario == "-" and "-" in paths:
        raise InputError("standard input cannot hold both the scenario and the manifests")
    with _replayed_stdin() if "-" in [*paths, scenario] else contextlib.nullcontext():
        return _load(list(paths), scenario, workload, tuple(corrections))


def _load(
    paths: list[str], scenario: str | None, workload: str | None, corrections: tuple[ProfileCorrection, ...]
) -> TuneInputs:
    docs: list[Doc] = []
    files: list[str] = []
    charts: list[str] = []
    if paths:
        docs, found = read_manifests(paths)
        passed = {s.file for s in found.skipped if not s.kind}
        files = [f for f in found.files if f not in passed]
        charts = found.charts
    read = k8s.parse(docs).workloads
    if scenario is None and not any(w.kind in k8s.SIMULATED_KINDS for w in read):
        raise _nothing_to_tune(read)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        if scenario is None:
            sc = scenario_from_text(_BARE, "<tune>", Path.cwd(), files)
        else:
            text, shown = read_text(scenario)
            base = Path(scenario).parent if scenario != "-" else Path.cwd()
            sc = scenario_from_text(text, shown, base, files)
            inline, named = scenario_manifest_docs(scenario) if scenario != "-" else ([], [])
            docs += inline
            for f in named:
                docs += list(load_docs(*read_text(f)))
    said_once = list(dict.fromkeys(str(w.message) for w in said if issubclass(w.category, InputWarning)))
    w = _pick(sc, workload)
    services = [s for s in sc.services if selects(s, w)]
    names = {s.name for s in services}
    rules = [r for r in sc.destination_rules if r.spec.host.split(".")[0] in names]
    out = TuneInputs(
        sc,
        scenario is not None,
        w,
        services,
        rules[0] if rules else None,
        charts=charts,
        corrections=corrections,
    )
    out.warnings = said_once
    if len(rules) > 1:
        out.notes.append(
            f"several DestinationRules name {w.name}'s Service; tuning the first, {rules[0].metadata.name}"
        )
    objects = k8s.parse(docs)
    for ow in objects.workloads:
        if (ow.kind, ow.metadata.namespace, ow.name) == (w.kind, w.metadata.namespace, w.name):
            o = objects.origin(ow)
            out.source = o.doc.source
            out.where = f"{o.doc.file}:{o.doc.line_of(o.base)}"
            out.added, out.app, missing, out.caveats = _missing_probes(objects, ow, sc, corrections)
            out.notes += missing
            out.handlers = _handler_fixes(objects, ow, sc, corrections)
            for i, c in enumerate(ow.pod_spec.containers):
                at = (*o.base, *o.spec_path, "containers", i)
                for name in ("readinessProbe", "livenessProbe", "startupProbe"):
                    out.probe_lines[(c.name, name)] = f"{o.doc.file}:{o.doc.line_of((*at, name))}"
    return out


# The timings of a liveness probe the tuner adds, before the search moves them: the API's period,
# three failures (the policy), a timeout an exec probe can fork in.
ADDED_LIVENESS = {"initialDelaySeconds": 0, "periodSeconds": 10, "failureThreshold": 3, "successThreshold": 1}


def _missing_probes(
    objects: k8s.Objects, w: Workload, sc: Scenario, corrections: tuple[ProfileCorrection, ...] = ()
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, Any]], list[str], dict[str, str]]:
    """The probes the tuner adds to ``w``, each with its handler and timings, by container: the
    readiness probe check's fix adds (PS001: a container a Service sends traffic to, with no
    readiness probe), and liveness on the app's own liveness endpoint where its profile knows one
    and says a restart cures a wedge; what each container's app profile says: its slowest start
    (the scenario's when it says what the app does) and the check a startup probe added to it
    makes; for a serving container left with no liveness, why; and for a readiness probe added
    as a TCP check, what it cannot see (:func:`tcp_caveat`)."""
    from probesim.analysis.context import Context
    from probesim.analysis.rules.handlers import profile_handler, readiness_handler, serves_nothing
    from probesim.analysis.rules.plan import plan
    from probesim.analysis.rules.timing import slowest_start_ms, startup_handler, wants_readiness

    ctx = Context(objects, sc if w.name in sc.spec.behavior else None, corrections=corrections)
    added: dict[str, dict[str, dict[str, Any]]] = {}
    app: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    caveats: dict[str, str] = {}
    for t in ctx.targets:
        if t.workload is not w or t.group != "containers":
            continue
        if wants_readiness(t):
            probe = plan(ctx, t).change("readiness").get("readinessProbe")
            if probe is not None:
                added.setdefault(t.container.name, {})["readinessProbe"] = probe
                if "tcpSocket" in probe:
                    chosen = readiness_handler(t)
                    known = t.profile.profile.name if t.profile is not None and t.profile.known else None
                    caveats[t.container.name] = tcp_caveat(chosen[1] if chosen is not None else "", known)
        hints: dict[str, Any] = {"startMs": slowest_start_ms(t)}
        if t.container.liveness_probe is not None:
            hints["startupHandler"] = startup_handler(t)[0]
        elif t.serves and not serves_nothing(t):
            prof = t.profile
            own = profile_handler(t, "liveness", t.serves[0][2])
            name = prof.profile.name if prof is not None and prof.known else "an app probesim does not know"
            if prof is not None and not prof.profile.restart_cures:
                notes.append(f"{t.container.name}: no liveness probe added — a restart of {name} loses more "
                             "than it cures (its recovery, an election)")  # fmt: skip
            elif own is not None:
                exec_ = "exec" in own[0]
                probe = {**own[0], **ADDED_LIVENESS, "timeoutSeconds": 5 if exec_ else 1}
                added.setdefault(t.container.name, {})["livenessProbe"] = probe
                hints["startupHandler"] = startup_handler(t)[0] if t.container.startup_probe else own[0]
            else:
                ready = added.get(t.container.name, {}).get("readinessProbe") or (
                    t.raw.get("readinessProbe") if isinstance(t.raw.get("readinessProbe"), dict) else {}
                )
                fate = (
                    "a hung pod stays in the Service and is never restarted"
                    if "tcpSocket" in (ready or {}) or not ready
                    else "a hung pod is taken out of the Service by readiness but never restarted"
                )
                notes.append(
                    f"{t.container.name}: no liveness probe added — probesim knows no endpoint of {name} "
                    f"that answers only while the process works, and a TCP check does not see a deadlock: "
                    f"{fate}. Serve a /healthz that checks only the process and probe it (then probesim "
                    "tune times it)"
                )
        app[t.container.name] = hints
    return added, app, notes, caveats


def tcp_caveat(check_note: str, app: str | None) -> str:
    """What a readiness probe added as a TCP check cannot see, in the words of check's PS001 fix
    (``check_note``: the note check gives its choice of handler, as readiness_handler says it;
    ``app``: the app's profile name, None for an app probesim does not know). A TCP check only
    opens a connection: a hung process whose port still accepts connections passes it
    (Kubernetes' e2e suite keeps a server answering 500 alive behind a TCP probe), so the hung
    pod's figures in the table are not this probe's doing."""
    said = f"; {check_note}" if check_note else ""
    whose = app if app is not None else "an app probesim does not know"
    better = (
        "a check in its own protocol (its client's ping as an exec probe) sees more"
        if app is not None
        else "if the app serves a health path, probe it with httpGet (or name the app's family in "
        ".probesim.yaml → profiles) and tune again"
    )
    return (
        f"a TCP check, as check's PS001 fix adds it for {whose}: it sees the port closed, not a hang — "
        "a hung pod whose port still accepts connections stays in the Service (the table's 'hung pod "
        f"out of service after'){said}. {better[0].upper()}{better[1:]}"
    )


# Check's rules whose fix changes a probe's check (its handler), which the tuner applies.
HANDLER_FIX_RULES = ("PS006", "PS016", "PS034")


def _handler_fixes(
    objects: k8s.Objects, w: Workload, sc: Scenario, corrections: tuple[ProfileCorrection, ...] = ()
) -> dict[str, dict[str, dict[str, Any]]]:
    """The handler each probe of ``w`` gets from check's fixes of its handler (HANDLER_FIX_RULES:
    every such finding's patch applied), where it differs from the probe's own."""
    from probesim.analysis.context import Context
    from probesim.analysis.findings import REGISTRY
    from probesim.analysis.patch import apply
    from probesim.manifests.kubernetes import obj_key
    from probesim.tune.space import handler

    ctx = Context(objects, sc if w.name in sc.spec.behavior else None, corrections=corrections)
    key = obj_key(w.kind, w.metadata.namespace, w.name)
    raw: Any = w.model_dump(mode="json", by_alias=True, exclude_none=True)
    patches = [
        f.patch
        for rid in HANDLER_FIX_RULES
        for f in REGISTRY.checks[rid](ctx)
        if f.key == key and f.patch is not None and f.patch_type == "strategic"
    ]
    for patch in patches:  # the model keeps every kind in a Deployment's shape (a Pod's too)
        spec = patch.get("spec", {})
        raw = apply(raw, patch if "template" in spec else {"spec": {"template": {"spec": spec}}})
    fixed = Workload.model_validate(raw)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for before, after in zip(w.pod_spec.containers, fixed.pod_spec.containers, strict=True):
        for kind in ("readiness", "liveness", "startup"):
            a, b = before.probe(kind), after.probe(kind)
            if a is not None and b is not None and handler(a) != handler(b):
                out.setdefault(before.name, {})[f"{kind}Probe"] = handler(b)
    return out


def _pick(sc: Scenario, name: str | None) -> Workload:
    """The workload to tune: the one named, or the only simulated workload behind a Service
    (with probes, or without: the tuner adds the readiness probe check's fix adds)."""
    tunable = [w for w in sc.workloads if any(selects(s, w) for s in sc.services)]
    with_probes = [
        w
        for w in tunable
        if any(c.readiness_probe or c.liveness_probe or c.startup_probe for c in w.pod_spec.containers)
    ]
    if name is None and with_probes:
        tunable = with_probes
    if name is not None:
        found = [w for w in sc.workloads if w.name == name]
        if not found:
            known = ", ".join(w.name for w in sc.workloads) or "none"
            raise InputError(f"no workload named {name!r} (workloads: {known})", field="--workload")
        if found[0] not in tunable and not _worker_probes(found[0]):  # a worker with no probe
            raise InputError(
                f"nothing to tune in {name!r}: no Service selects its pods, so it needs no readiness probe "
                "(nothing sends it traffic), and it has no liveness probe; it needs one only where a restart "
                "cures a wedge, on a check the app provides (an exec command or a health port): add one and "
                "probesim tune times it",
                field="--workload",
            )
        return found[0]
    if not tunable:  # no Service: a worker's liveness (and startup) probes are tuned
        tunable = [w for w in sc.workloads if _worker_probes(w)]
    if not tunable:
        raise _nothing_to_tune(list(sc.workloads))
    if len(tunable) > 1:
        names = ", ".join(w.name for w in tunable)
        raise InputError(f"several workloads could be tuned ({names}): choose one with --workload")
    return tunable[0]


def _worker_probes(w: Workload) -> bool:
    """Whether ``w`` has a liveness or startup probe to tune (a worker's: no Service sends it
    traffic, so it needs no readiness probe)."""
    return any(c.liveness_probe or c.startup_probe for c in w.pod_spec.containers)


def _nothing_to_tune(seen: list[Workload]) -> InputError:
    found = ", ".join(f"{w.kind} {w.name}" for w in seen) or "none"
    other = sorted({w.kind for w in seen if w.kind not in k8s.SIMULATED_KINDS})
    why = ""
    if other:  # a DaemonSet (one pod per node), a Job: not simulated, so not tuned
        why = (
            f"; {' and '.join(other)} workloads are not simulated, so not tuned (probesim check judges them)"
        )
    return InputError(
        "no workload to tune: the tuner needs a Deployment, StatefulSet, ReplicaSet, "
        "ReplicationController or Pod with a Service selecting its pods, or a liveness probe (a worker's) "
        f"(found: {found}){why}"
    )
