"""``probesim run`` on Kubernetes manifests: whether run's arguments are a scenario or manifests,
and the scenario generated for manifests (what ``--print-scenario`` prints).

Arguments are manifests when there are several, when one is a directory, or when a file (or
``-``, standard input) holds no ``kind: Scenario`` document; an argument that is no path is a
built-in scenario's name. Files and directories are read as ``probesim check`` reads them
(Helm charts and kustomizations noted, not read).

The generated scenario holds every simulated workload (Deployment, StatefulSet, ReplicaSet,
ReplicationController, Pod) that a Service of its namespace selects, with:

- behaviour: the default load model (kube/load_model.py): a healthy app whose containers
  answer at once, or after ``--start`` for every container; a request costs a fixed 5 ms of CPU;
- traffic: one constant route per Service, named after it, from 0 s to the end: ``--rate``
  requests per second, or the default load model's rate (half the CPU request at that cost) for
  each replica of the workloads whose traffic goes through it (a workload several Services
  select takes its traffic through the first, in file order);
- duration: five minutes, or ``--duration``; the step is 1 s unless a time needs a finer one.

The objects it runs are copied into the scenario (``manifests``, as read), with the Services
selecting them, the HorizontalPodAutoscalers scaling them, the DestinationRules and
VirtualServices naming their Services and their Namespaces: the printed file runs alone, also
when the manifests came from standard input, and editing it never touches the user's files.
Everything else is listed as skipped, with why.
"""

from __future__ import annotations

import io
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from probesim import __version__
from probesim.errors import InputError, InputWarning
from probesim.kube.load_model import default_rate, workload_behavior
from probesim.kube.selectors import selects
from probesim.manifests import kubernetes as k8s
from probesim.manifests.kubernetes import SIMULATED_KINDS, Origin, Skipped
from probesim.manifests.scenario import MAX_RATE, check_service_name, scenario_from_text
from probesim.manifests.variants import Variant, one_only, split
from probesim.manifests.yamlsrc import Doc, Path_, get_path, load_docs, read_text
from probesim.mesh.load import istio_objects
from probesim.model.duration import format_ms, parse_ms
from probesim.model.kubernetes import HorizontalPodAutoscaler, ScaledObject, Service, Workload
from probesim.model.scenario import API_VERSION, Scenario
from probesim.safe import NAME_LIMIT, cut, visible

if TYPE_CHECKING:
    from probesim.overrides import Override

DURATION_MS = 5 * 60_000
STEPS_MS = (1000, 500, 100, 50, 10, 5, 1)  # the steps tried, coarsest first (each divides 1 s)
SIMULATED = "Deployments, StatefulSets, ReplicaSets, ReplicationControllers and Pods"


@dataclass(frozen=True)
class Options:
    """What the user may set on the command line (None: the default)."""

    start_ms: int | None = None
    rate: float | None = None
    duration_ms: int = DURATION_MS


@dataclass
class Route:
    """One generated traffic route: a Service, and the rate of the workloads whose traffic goes
    through it."""

    service: Service
    rate: float = 0.0


@dataclass
class Generated:
    """The scenario generated from manifests: its text, what it runs and what it read past."""

    text: str
    shown: str  # how errors in it name it
    skipped: list[Skipped]
    options: Options
    variant: Variant | None = None  # the folder it was generated for, when the input holds variants

    def load(self, overrides: Sequence[Override] = ()) -> tuple[Scenario, list[str]]:
        """The scenario, as ``probesim run`` loads the printed file, and the input warnings said
        while loading it."""
        extra: dict[str, Any] = {"overrides": tuple(overrides)} if overrides else {}
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", InputWarning)
            try:
                sc = scenario_from_text(self.text, self.shown, Path.cwd(), **extra)
            except InputError as e:
                if e.file == self.shown:
                    e.message += " (--print-scenario prints the generated scenario)"
                raise
        said_once = dict.fromkeys(str(w.message) for w in said if issubclass(w.category, InputWarning))
        return sc, list(said_once)

    def heading(self) -> str:
        """How a report heads this scenario's section: its variant's folder and the common
        paths read with it."""
        if self.variant is None:
            return self.shown
        v = self.variant
        return f"variant {v.folder}/" + (f" (with {', '.join(v.common)})" if v.common else "")

    def lines(self, sc: Scenario) -> list[str]:
        """What the loaded scenario ``sc`` runs (--set may have changed it), a line per route
        and workload, for a person (on stderr)."""
        out = [f"a generated scenario ({format_ms(sc.spec.duration)}; --print-scenario prints it):"]
        for t in sc.spec.traffic:
            svc = sc.service_for(t)
            rate = f"{t.rate:g}" if t.rate is not None else "?"
            for i, w in enumerate(x for x in sc.workloads if selects(svc, x)):
                traffic = f"Service {svc.name}: {rate} requests/s" if i == 0 else " " * 4
                out.append(f"  {traffic} → {w.kind} {w.name} ({_replicas(w)}), {self._start(sc, w)}")
        return [visible(line, 1000) for line in out]

    def _start(self, sc: Scenario, w: Workload) -> str:
        """When the workload's apps answer, and where that comes from."""
        given = sc.behavior(w.name).containers
        starts = {c.name: given[c.name].start if c.name in given else 0 for c in w.pod_spec.containers}
        if len(set(starts.values())) > 1:
            return "its apps answer after " + ", ".join(f"{n}: {format_ms(ms)}" for n, ms in starts.items())
        ms = next(iter(starts.values()), 0)
        why = " (--start)" if self.options.start_ms is not None and ms == self.options.start_ms else ""
        return f"the app answers after {format_ms(ms)}{why}" if ms else "the app answers at once"


def _replicas(w: Workload) -> str:
    return "1 pod" if w.kind == "Pod" else f"{w.spec.replicas} replica{'s' if w.spec.replicas != 1 else ''}"


def holds_scenario(text: str, shown: str) -> bool:
    """Whether a YAML text holds a probesim Scenario document. Text that does not parse is
    taken for a scenario when it names one, so that the scenario loader reports the error."""
    if "Scenario" not in text:
        return False
    try:
        return any(
            isinstance(d.data, dict) and d.data.get("kind") == "Scenario" for d in load_docs(text, shown)
        )
    except InputError:
        return True


def _is_dir(path: str) -> bool:
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def _is_file(path: str) -> bool:
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def are_manifests(targets: Sequence[str]) -> bool:
    """Whether run's arguments are Kubernetes manifests rather than one scenario (a file, '-'
    or a built-in name). Standard input, once read to see what it holds, is put back for the
    loader that reads it next."""
    found: list[str] = []
    for t in targets:
        if t == "-":
            text, shown = read_text("-")
            sys.stdin = io.StringIO(text)
        elif _is_file(t):
            text, shown = read_text(t)
        else:
            continue
        if holds_scenario(text, shown):
            found.append(shown)
    if len(targets) == 1:
        return not found and (_is_dir(targets[0]) or targets[0] == "-" or _is_file(targets[0]))
    if found:
        raise InputError(
            "a scenario runs alone: give its file only, and more manifests with -m (or list them in "
            "its manifests)",
            file=found[0],
        )
    return True


def from_arguments(
    targets: Sequence[str],
    manifests: Sequence[str],
    start: str | None,
    rate: float | None,
    duration: str | None,
    print_scenario: bool,
    command: str = "run",
) -> list[Generated] | None:
    """``probesim run``'s arguments: the generated scenarios when they are manifests (with
    ``-m`` files added; one, or one per variant), None when they name a scenario. The options
    that shape a generated scenario are refused with a scenario, which says all of that itself."""
    if not are_manifests(targets):
        given = {"--start": start, "--rate": rate, "--duration": duration, "--print-scenario": print_scenario}
        named = [k for k, v in given.items() if v not in (None, False)]
        if named:
            raise InputError(
                f"{', '.join(named)} shape{'s' if len(named) == 1 else ''} the scenario probesim run "
                f"generates from Kubernetes manifests; {targets[0]} is a scenario: change its spec instead",
                field=named[0],
            )
        return None
    options = Options(
        start_ms=None if start is None else _option_ms(start, "--start", 0),
        rate=rate,
        duration_ms=DURATION_MS if duration is None else _option_ms(duration, "--duration", 1),
    )
    return generate_all([*targets, *manifests], options, command)


def _option_ms(text: str, option: str, least: int) -> int:
    """A duration option in milliseconds (scenario units: 20s, 1m30s, 500ms)."""
    try:
        ms = parse_ms(text)
    except ValueError as e:
        raise InputError(str(e), field=option) from None
    if ms < least:
        raise InputError(f"must be at least {format_ms(least)}", field=option)
    return ms


def generate(paths: Sequence[str], options: Options, command: str = "run") -> Generated:
    """The default scenario for the manifests in ``paths`` (files, directories, '-'); input of
    several variants is refused, naming them (``command`` takes one)."""
    found = generate_all(paths, options, command)
    if len(found) > 1:
        variants = [g.variant for g in found if g.variant is not None]
        raise one_only(variants, command, f"probesim {command} takes one")
    return found[0]


def generate_all(paths: Sequence[str], options: Options, command: str = "run") -> list[Generated]:
    """The default scenario for the manifests in ``paths``, or one per variant when they hold
    several (manifests/variants.py): the same object with other content in another folder."""
    # Here, not at the top: a scenario file's run imports this module only to see that it is
    # no manifest, and check's rules and stress suite cost it about 0.08 s of start-up.
    from probesim.manifests.discovery import read_manifests

    docs, inputs = read_manifests(list(dict.fromkeys(paths)))
    variants = split(docs, k8s.parse(docs), command)
    if variants is None:
        return [_generate(paths, docs, inputs.skipped, inputs.charts, options)]
    out = []
    for v in variants:
        files = set(v.files)
        others = {d.file for d in docs} - files
        notes = [s for s in inputs.skipped if s.file not in others]
        out.append(_generate(v.paths, list(v.docs), notes, inputs.charts, options, v))
    return out


def variants_of(paths: Sequence[str], command: str) -> list[Variant] | None:
    """The variants the manifests in ``paths`` hold (None: no object has two contents); the
    one-line refusal when they are not variants of complete folders."""
    from probesim.manifests.discovery import read_manifests

    docs, _inputs = read_manifests(list(dict.fromkeys(paths)))
    return split(docs, k8s.parse(docs), command)


def _generate(
    paths: Sequence[str],
    docs: list[Doc],
    notes: list[Skipped],
    charts: list[str],
    options: Options,
    variant: Variant | None = None,
) -> Generated:
    from probesim.manifests.discovery import Inputs, nothing_found

    objects = k8s.parse(docs, unique=True)  # errors name the user's file and line
    skipped = notes + objects.skipped
    if not any(s.kind for s in skipped) and not (objects.workloads or objects.services or objects.istio):
        if charts:
            chart = charts[0]
            raise InputError(
                f"{chart} is an unrendered Helm chart: run `helm template {chart} | probesim run -`"
            )
        e = nothing_found(list(paths), Inputs(skipped=notes, charts=charts))
        e.message += f"; nor a probesim Scenario ({API_VERSION}, kind: Scenario)"
        raise e
    sel = _Selection(objects, skipped)
    run, routes = sel.workloads()
    if not run:
        raise InputError(_nothing_to_run(paths, objects, skipped))
    services = sel.services(run, routes)
    for s in services:
        check_service_name(s.name, docs)
    hpas = sel.hpas(run)
    istio = sel.istio(services)
    istio_objects(k8s.Objects(istio=istio))  # errors name the user's file and line
    kept: list[Workload | Service | HorizontalPodAutoscaler] = [*run, *services, *hpas]
    manifests = [_raw(objects.origin(x)) for x in kept]
    manifests += [data for _doc, _base, data in istio]
    manifests += _namespaces(docs, {w.metadata.namespace for w in run})
    if options.rate is not None:
        for r in routes:
            r.rate = options.rate
    shown = _shown(paths)
    written = _scenario(_name(paths), shown, manifests, run, services, routes, options)
    text = _header(shown, skipped) + yaml.safe_dump(written, sort_keys=False, allow_unicode=True, width=100)
    return Generated(text, f"<scenario generated from {shown}>", skipped, options, variant)


class _Selection:
    """What of the manifests' objects the generated scenario runs; the others go to ``skipped``,
    each with why."""

    def __init__(self, objects: k8s.Objects, skipped: list[Skipped]) -> None:
        self.objects = objects
        self.skipped = skipped

    def skip(self, obj: Workload | Service | HorizontalPodAutoscaler | ScaledObject, why: str) -> None:
        o = self.objects.origin(obj)
        meta = obj.metadata
        self.skipped.append(
            Skipped(obj.kind, meta.name, meta.namespace, o.doc.file, o.doc.line_of(o.base), why)
        )

    def workloads(self) -> tuple[list[Workload], list[Route]]:
        """The simulated workloads a Service with a TCP port selects, one name each (a scenario
        names workloads and Services by name), and a route per Service their traffic goes through
        (each workload's first)."""
        routes: dict[str, Route] = {}
        run: dict[str, Workload] = {}
        for w in self.objects.workloads:
            behind = [s for s in self.objects.services if selects(s, w) and _tcp_port(s) is not None]
            route = routes.get(behind[0].name) if behind else None
            if w.kind not in SIMULATED_KINDS:
                cr = id(w) in self.objects.custom or id(w) in self.objects.template_of
                what = "custom resource, " if cr else ""
                self.skip(
                    w, f"{what}not simulated: probesim run simulates {SIMULATED} (probesim check lints it)"
                )
            elif not behind:
                self.skip(w, "no Service with a TCP port selects its pods: nothing to send it")
            elif w.name in run:
                first = run[w.name]
                self.skip(w, f"{first.kind} {first.name} ({first.metadata.namespace}) has its name: a "
                             "scenario names workloads by name")  # fmt: skip
            elif route is not None and route.service is not behind[0]:
                ns = route.service.metadata.namespace
                self.skip(w, f"its Service {behind[0].name} has the name of one in namespace {ns}: a "
                             "scenario names Services by name")  # fmt: skip
            else:
                run[w.name] = w
                route = routes.setdefault(behind[0].name, Route(behind[0]))
                route.rate = min(route.rate + default_rate(w), MAX_RATE)
        return list(run.values()), list(routes.values())

    def services(self, run: list[Workload], routes: list[Route]) -> list[Service]:
        """The routes' Services and the others selecting a workload run (one per name)."""
        out: dict[str, Service] = {r.service.name: r.service for r in routes}
        for s in self.objects.services:
            if s.name not in out and any(selects(s, w) for w in run):
                out[s.name] = s
            elif out.get(s.name) is not s:
                self.skip(s, "selects no workload run here, or has the name of a Service run")
        return [s for s in self.objects.services if out.get(s.name) is s]

    def hpas(self, run: list[Workload]) -> list[HorizontalPodAutoscaler]:
        """The HPAs scaling a workload run on a metric probesim simulates (KEDA's ScaledObjects
        are said not simulated)."""
        for so in self.objects.scaled_objects:
            to = so.spec.scale_target_ref
            self.skip(so, f"a KEDA ScaledObject (scales {to.kind} {to.name}): not simulated, its target "
                          "keeps its replicas; probesim simulates HPAs on CPU utilization")  # fmt: skip
        out = []
        for h in self.objects.hpas:
            ref = h.spec.scale_target_ref
            target = next((w for w in run if (w.kind, w.name) == (ref.kind, ref.name)), None)
            ignored = self.objects.unsimulated_metrics.get(h.name, [])
            if target is None or target.metadata.namespace != h.metadata.namespace:
                self.skip(h, f"scales {ref.kind} {ref.name}, which is not run here")
            elif ignored and len(ignored) == len(h.spec.metrics):
                self.skip(
                    h, f"scales on {', '.join(ignored)} only: probesim simulates CPU utilization targets"
                )
            else:
                out.append(h)
        return out

    def istio(self, services: list[Service]) -> list[tuple[Doc, Path_, dict[str, Any]]]:
        """The DestinationRules and VirtualServices naming a Service run."""
        hosts = {s.name for s in services}
        out = []
        for doc, base, data in self.objects.istio:
            if istio_hosts(data) & hosts:
                out.append((doc, base, data))
                continue
            raw_meta = data.get("metadata")
            meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
            name, ns = str(meta.get("name")), str(meta.get("namespace"))
            why = "names no Service run here"
            self.skipped.append(Skipped(str(data.get("kind")), name, ns, doc.file, doc.line_of(base), why))
        return out


def _tcp_port(s: Service) -> int | None:
    """The Service port HTTP traffic goes to: its first TCP port (None without one)."""
    return next((p.port for p in s.spec.ports if p.protocol == "TCP"), None)


def _route(r: Route) -> dict[str, Any]:
    """A route as the scenario writes it: to the Service's first TCP port (the default is its
    first port, UDP for some)."""
    out: dict[str, Any] = {"name": r.service.name, "service": r.service.name, "rate": r.rate}
    port = _tcp_port(r.service)
    if r.service.spec.ports and port != r.service.spec.ports[0].port:
        out["port"] = port
    return out


def istio_hosts(data: dict[str, Any]) -> set[str]:
    """The short names of the Services a DestinationRule or VirtualService names."""
    raw_spec = data.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    hosts = spec.get("hosts") if data.get("kind") == "VirtualService" else [spec.get("host")]
    return {h.split(".")[0] for h in hosts or [] if isinstance(h, str)}


def _nothing_to_run(paths: Sequence[str], objects: k8s.Objects, skipped: list[Skipped]) -> str:
    """Why there is nothing to run, saying what was found."""
    counts: dict[str, int] = {}
    for s in skipped:
        if s.kind:
            label = f"{s.kind} (custom resource)" if s.why.startswith("custom resource") else s.kind
            counts[label] = counts.get(label, 0) + 1
    found = ", ".join(f"{n} {k}" for k, n in counts.items()) or "no Kubernetes object"
    if not objects.services:
        found += ", no Service"
    return (
        f"nothing to run in {_shown(paths)}: found {found}. probesim run simulates {SIMULATED} that a "
        "Service selects (probesim check lints the rest); write a scenario to run a workload without one"
    )


def _raw(o: Origin) -> dict[str, Any]:
    """An object as written, an item of a List with the List's apiVersion and kind when it leaves
    them out (as the manifest reader takes them)."""
    data = get_path(o.doc.data, o.base)
    assert isinstance(data, dict)
    if o.base and isinstance(o.doc.data, dict):
        kind = str(o.doc.data.get("kind", "")).removesuffix("List")
        fill = {"apiVersion": o.doc.data.get("apiVersion"), "kind": kind}
        data = {**{k: v for k, v in fill.items() if k not in data and v}, **data}
    return data


def _namespaces(docs: list[Doc], names: set[str]) -> list[dict[str, Any]]:
    """The Namespace objects of ``names`` among the manifests (their labels turn on Istio)."""
    out = []
    for d in docs:
        data = d.data
        items = data.get("items") if isinstance(data, dict) and data.get("kind") == "List" else [data]
        for item in items if isinstance(items, list) else []:
            meta = item.get("metadata") if isinstance(item, dict) else None
            # A stream may hold scalar or list documents: only mappings are objects.
            if isinstance(meta, dict) and item.get("kind") == "Namespace" and meta.get("name") in names:
                out.append(item)
    return out


def _shown(paths: Sequence[str]) -> str:
    """The inputs as messages and the scenario's description name them (cut: a scenario's
    texts are bounded)."""
    return cut(", ".join("standard input" if p == "-" else p for p in paths), NAME_LIMIT)


def _name(paths: Sequence[str]) -> str:
    """The scenario's name: the first input's (a folder's or file's name), 'stdin' for '-'."""
    p = paths[0]
    if p == "-":
        return "stdin"
    path = Path(p)
    return (
        path.resolve().name if path.name in ("", ".", "..") else path.stem if path.is_file() else path.name
    ) or "k8s"


def _step(times: list[int]) -> int:
    return next(s for s in STEPS_MS if all(t % s == 0 for t in times))


def _scenario(
    name: str,
    shown: str,
    manifests: list[dict[str, Any]],
    run: list[Workload],
    services: list[Service],
    routes: list[Route],
    o: Options,
) -> dict[str, Any]:
    start = format_ms(o.start_ms) if o.start_ms is not None else None
    spec: dict[str, Any] = {"duration": format_ms(o.duration_ms)}
    step = _step([o.duration_ms, *([o.start_ms] if o.start_ms is not None else [])])
    if step != 1000:
        spec["step"] = format_ms(step)
    spec["behavior"] = {
        w.name: workload_behavior(w, [s for s in services if selects(s, w)], start) for w in run
    }
    spec["traffic"] = [_route(r) for r in routes]
    how = f"start after {start} (--start)" if start is not None else "answer at once"
    rate = (
        f"{o.rate:g} requests/s (--rate)"
        if o.rate is not None
        else "100 requests/s per core of CPU request per replica (5 ms of CPU each)"
    )
    description = (
        f"Generated by probesim run from {shown}: each workload behind a Service, healthy; its containers "
        f"{how}; constant traffic to each Service, {rate}."
    )
    return {
        "apiVersion": API_VERSION,
        "kind": "Scenario",
        "metadata": {"name": name, "description": description},
        "manifests": manifests,
        "spec": spec,
    }


def _header(shown: str, skipped: list[Skipped]) -> str:
    """The comment on top of the printed scenario: where it comes from and what was read past."""
    lines = [
        f"Generated by probesim {__version__} (probesim run {shown} --print-scenario).",
        "Edit it and run it with: probesim run FILE (docs/scenarios.md, 'Generated scenarios').",
        "The objects it runs are copied below (manifests); editing them here leaves your files as they are.",
    ]
    if skipped:
        lines.append("Not run:")
        for s in skipped:
            lines.append(f"  {s} {s.why}" if s.kind else f"  {s}")
    return "".join(f"# {visible(line, 1000)}\n" for line in lines)
