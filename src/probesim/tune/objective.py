"""The tuner's objectives: what one setting costs, simulated.

A setting is judged on the figures an SRE weighs, each to be minimised:

- **failed requests**, summed over the stress suite (``probesim check --stress``'s stresses,
  each workload alone behind its Services) and, when one is given, the user's scenario;
- **needless restarts and readiness flaps** of the tuned workload in those same runs: none of
  them scripts a process that only a restart cures, so every restart there is one a probe caused
  for nothing (when the scenario scripts deadlocks or crashes for the workload, which the stresses
  run too, restarts are left out of the count), and every flap takes a pod that could answer
  slowly out of the Service (an emptied Service refuses every request: no gain). Without a
  scenario that says what the app does, the app's profile adds two such runs: its slowest start
  and, when longer than the suite's 2 s, its longest pause (:func:`profile_stresses`);
- **hung pod out of service**: the tuner scripts a deadlock — pod 0's containers hang for good
  after the start-up ramp, while traffic runs; a restart cures it — and measures how long until
  the pod is out of service: it leaves the Service's endpoints (NotReady), a probe kills its
  container, or every client's sidecar has ejected it. The hang falls at the worst moment for
  the probe that takes the pod out (readiness, else liveness): the step after one of its checks
  passed, the first at or after a set age (:func:`_worst_moment`). A hang at a fixed age would
  be the best moment for a period that divides it and a worse one for another: the figure would
  follow the arithmetic of the age, not the setting;
- **replicas back**: how long until the workload has all its replicas Ready again after such a
  hang, at the worst moment for the liveness probe (the one that cures it). Only a restart cures
  a deadlock, so a setting whose liveness never acts scores the cap here however fast readiness
  takes the pod out: liveness is priced for what it cures, not only for the restarts it costs;
- **time to Ready**: how long after its app answers a new pod becomes Ready (what every
  rollout and scale-up waits for): in the stress suite's baseline, each first pod from its own
  containers' start (a StatefulSet's ordered start is its pods' turn, not probe delay), and at
  the probes' worst phase — the app answering just after a check, so the pod waits a whole
  period of its startup probe, else of readiness, and a period more for each further success
  readiness needs (:func:`ready_phase_ms`).
  The baseline's app answers at one moment, which may fall just before a check: read alone, a
  readiness every 28 s would be "Ready at once";
- **probe load**: probe requests per second per pod once started (readiness and liveness,
  every container; a startup probe stops once it passes), and the CPU they cost at the app's
  cost for the probe's path (``probe_cpu_m``, reported beside it).

Times are capped at ``DETECTION_CAP_MS`` (never scores the cap).

Each run is an independent simulation, so the runs of one setting fan out over an executor
(local processes or a Dask cluster) and are summed in a fixed order: the figures do not depend on
where they ran.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Protocol, TypeVar

from probesim.analysis.stress import EVENT_AT_MS, LATER_STRESSES, STRESSES, base_scenario, stress_scenario
from probesim.engine import simulate
from probesim.engine.warm import WarmUp, together
from probesim.kube.load_model import app_profiles
from probesim.model.duration import parse_ms
from probesim.model.kubernetes import Workload, pod_names_of
from probesim.model.scenario import ContainerBehavior, Scenario
from probesim.tune.figures import DETECTION_CAP_MS, Figures, RunFigures, RunKind
from probesim.tune.inputs import TuneInputs
from probesim.tune.patch import patched_rule, patched_workload
from probesim.tune.space import Setting, Space
from probesim.tune.stresses import BLIPS_LABEL, blip_stress, profile_stresses

HANG_AT_MS = 2 * 60_000  # at least; later when the app starts slower than a minute


@dataclass(frozen=True)
class Run:
    label: str  # "stress baseline", "scenario", "hung pod"
    kind: RunKind
    scenario: Scenario
    workload: str
    hang_at_ms: int = 0
    count_restarts: bool = True
    hosts: tuple[tuple[str, str], ...] = ()  # sidecar upstream address → pod (hung run, with a mesh)
    clients: int = 0  # client sidecars that could eject it (hung run, with a mesh)
    app_start_ms: int = 0  # when the slowest container's app answers (baseline: time to Ready)
    probe_rps: float = 0.0  # the setting's probe load (on every run, read from the first)
    probe_cpu_m: float = 0.0
    ready_phase_ms: int = 0  # the setting's worst phase to Ready (ready_phase_ms; on every run)
    serves: bool = True  # a Service selects the workload (a worker's hung pod is in no Service)
    # The runs with a warm_until go on from one warm-up (engine/warm.py): the first of them's
    # scenario simulated up to then (the stress baseline's, until its stresses' event).
    warm_until: int = 0


def probe_load(w: Workload, behavior: dict[str, Any]) -> tuple[float, float]:
    """Probe requests per second per pod once started (readiness and liveness of every
    container), and the CPU they cost in millicores, at the behaviour's cost for each probe's
    path (``behavior``: the workload's, as a scenario writes it)."""
    rps = cpu = 0.0
    containers = behavior.get("containers", {})
    for c in w.pod_spec.containers:
        b = ContainerBehavior.model_validate(containers.get(c.name, {}))
        for p in (c.readiness_probe, c.liveness_probe):
            if p is None:
                continue
            rate = 1 / p.period_seconds
            rps += rate
            path = p.http_get.path if p.http_get is not None else "exec" if p.exec is not None else "grpc"
            cpu += rate * b.cost(path).cpu
    return round(rps, 4), round(cpu, 3)


def ready_phase_ms(w: Workload) -> int:
    """The longest a new pod of ``w`` waits for Ready after its app answers, from its probes'
    phase alone: the app answering just after a check, so its probe sees it a whole period later.
    That probe is the startup probe where there is one (readiness is held back until it passes,
    then run at once: the kubelet triggers a readiness check when a pod that is not Ready syncs),
    else readiness's next check; each further success readiness needs (successThreshold) is a
    period more. A container with neither probe is Ready as soon as it runs."""
    worst = 0
    for c in w.pod_spec.containers:
        s, r = c.startup_probe, c.readiness_probe
        wait = s.period_seconds if s is not None else 0
        if r is not None:
            wait += r.period_seconds * (r.success_threshold - (1 if s is not None else 0))
        worst = max(worst, wait * 1000)
    return worst


T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs ``fn`` over ``items``. Every item is handed out when ``map`` returns (the results
    may still be coming: they are read in order from what it returned), so the caller can do
    other work while they run."""

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterable[R]: ...


class Serial:
    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(x) for x in items]


def scripts_restarts(sc: Scenario, workload: str) -> bool:
    """Whether the scenario scripts deadlocks or crashes for the workload (restarts are due)."""
    wb = sc.spec.behavior.get(workload)
    if wb is None:
        return False
    behaviors = [*wb.containers.values(), *(b for ov in wb.pods for b in ov.containers.values())]
    return any(e.kind in ("deadlock", "crash") for b in behaviors for e in b.episodes)


def plan(inputs: TuneInputs, space: Space, setting: Setting) -> list[Run]:
    """The runs that judge ``setting``: the stress suite, the scenario (if given), the hung pod."""
    current = space.current()
    w = patched_workload(inputs.workload, current, setting)
    rule = patched_rule(inputs.rule, current, setting) if inputs.rule is not None else None
    given = inputs.with_objects(w, rule)
    # The app's behaviour comes from the current manifests (the default load model reads no field
    # a setting changes: the patched manifests run as simulated here); without a scenario that
    # says what the app does, it starts in its profile's typical time, as in check --stress.
    says = inputs.given and inputs.workload.name in inputs.scenario.spec.behavior
    app = None if says else app_profiles(inputs.workload, inputs.corrections)
    base = base_scenario(inputs.workload, inputs.services, given, app=app)
    base["workloads"] = [w.model_dump(mode="json", by_alias=True, exclude_none=True)]
    # The stresses run the scenario's behaviour for the workload: its scripted crashes too.
    needless = not scripts_restarts(given, w.name)
    behavior = base["spec"].get("behavior", {}).get(w.name, {})
    rps, cpu = probe_load(w, behavior)
    start = max(
        (parse_ms(str(b.get("start", "0s"))) for b in behavior.get("containers", {}).values()), default=0
    )
    load = {"probe_rps": rps, "probe_cpu_m": cpu, "app_start_ms": start, "ready_phase_ms": ready_phase_ms(w),
            "serves": bool(inputs.services)}  # fmt: skip
    runs = []
    for stress in STRESSES:
        sc, _why = stress_scenario(base, w, stress)
        if sc is not None:
            warm = EVENT_AT_MS if stress in ("baseline", *LATER_STRESSES) else 0
            run = Run(f"stress {stress}", "stress", sc, w.name, 0, needless, **load, warm_until=warm)  # type: ignore[arg-type]
            runs.append(run)
    if rule is not None:
        blips = blip_stress(base, w)
        if blips is not None:
            runs.append(Run(BLIPS_LABEL, "stress", blips, w.name, 0, needless, **load))  # type: ignore[arg-type]
    if w.name not in (inputs.scenario.spec.behavior if inputs.given else {}):
        for label, sc in profile_stresses(base, inputs.workload, inputs.corrections):
            runs.append(Run(label, "stress", sc, w.name, 0, needless, **load))  # type: ignore[arg-type]
    if inputs.given:
        runs.append(Run("scenario", "scenario", given, w.name, 0, needless, **load))  # type: ignore[arg-type]
    hung = _hung(base, w.name, [c.name for c in w.pod_spec.containers], rule is not None)
    runs.append(replace(hung, **load))  # type: ignore[arg-type]
    return runs


def _hung(base: dict[str, Any], workload: str, containers: list[str], mesh: bool) -> Run:
    """The stress suite's base scenario with pod 0 deadlocked for good once it has started."""
    doc = copy.deepcopy(base)
    spec = doc["spec"]
    wb = spec.setdefault("behavior", {}).setdefault(workload, {})
    behaviors = wb.setdefault("containers", {})
    mine = {c: copy.deepcopy(behaviors.get(c, {})) for c in containers}
    for ov in wb.get("pods", []):  # the last override naming pod 0's container is the one it runs
        if 0 in ov["ordinals"]:
            mine.update(copy.deepcopy(ov["containers"]))
    slowest = max((parse_ms(str(b.get("start", "0s"))) for b in mine.values()), default=0)
    hang_at = max(HANG_AT_MS, slowest + 60_000)
    hang_at -= hang_at % 1000
    for b in mine.values():
        # At a container age, not a scenario time: a deadlock scripted ``at`` a time holds every
        # container instance from then on, which no restart cures; one ``after`` an age is what
        # a restart cures (the fresh process runs that long again before it deadlocks anew, past
        # the figures read here). Pod 0's container starts at 0 s: it hangs at ``hang_at``.
        b["episodes"] = [*b.get("episodes", []), {"kind": "deadlock", "after": f"{hang_at}ms"}]
    wb["pods"] = [*wb.get("pods", []), {"ordinals": [0], "containers": mine}]
    spec["duration"] = f"{(hang_at + DETECTION_CAP_MS) // 1000}s"
    sc = Scenario.model_validate(doc)
    hosts: tuple[tuple[str, str], ...] = ()
    if mesh:
        from probesim.lab.compare import simulated_hosts

        hosts = tuple(sorted(simulated_hosts(sc).items()))
    clients = max((t.clients for t in sc.spec.traffic), default=0) if mesh else 0
    return Run("hung pod", "hung", sc, workload, hang_at, False, hosts, clients)


PHASE_MS = 75_000  # after the scripted hang: enough for any probe's first failure (period + timeout)


def measure(run: Run, from_start: bool = False) -> RunFigures:
    """One run simulated and read (a top-level function: it runs in worker processes). The hung
    run is simulated up to the scripted hang once (a warm-up: engine/warm.py) and goes on from
    there three times: just past the hang, to read when pod 0's probes tick; then with the hang
    at the worst moment for readiness (the run's figures) and for liveness (the time until all
    replicas are Ready again); the time out of service is the later of the two. Each is
    ``simulate``'s Result of that scenario, to the bit (``from_start``: each simulated so)."""
    if run.kind != "hung":
        return _read(run, simulate(run.scenario))
    go_on = _simulated if from_start else WarmUp(run.scenario, run.hang_at_ms).result
    first = go_on(run.scenario.cut_to(run.hang_at_ms + PHASE_MS), False)
    moved = (_worst_moment(run, first, "readiness"), _worst_moment(run, first, "liveness"))
    runs = _distinct_moments(moved)
    return _hung_figures(moved, [_read(m, go_on(m.scenario, m is runs[-1])) for m in runs])


def measure_all(runs: tuple[Run, ...], from_start: bool = False) -> list[RunFigures]:
    """``measure`` of each run (in worker processes): runs with a ``warm_until`` go on from one
    warm-up of the first's scenario (it goes on last, from the warm-up's own state)."""
    if len(runs) == 1 or not runs[0].warm_until or from_start:
        return [measure(r, from_start) for r in runs]
    results = together([r.scenario for r in runs], runs[0].warm_until)
    return [_read(r, x) for r, x in zip(runs, results, strict=True)]


def _simulated(scenario: Scenario, last: bool) -> Any:
    """``simulate(scenario)``, as a warm-up's ``result`` is called."""
    return simulate(scenario)


def _distinct_moments(moved: tuple[Run, Run]) -> list[Run]:
    """The runs to simulate for the two moments: one when both moved the hang to the same time
    (the same scenario)."""
    out, back = moved
    return [out] if back.hang_at_ms == out.hang_at_ms else [out, back]


def _hung_figures(moved: tuple[Run, Run], figs: list[RunFigures]) -> RunFigures:
    """The hung run's figures from its runs at the worst moments (``_distinct_moments``'s order)."""
    fig = figs[0]
    if len(figs) == 1:
        return fig
    other = figs[1]
    # Out of service by whichever probe acts first: the later of the two runs' times (each
    # probe's worst moment may be the other's lucky one).
    ds = (fig.detection_ms, other.detection_ms)
    detection = None if None in ds else max(d for d in ds if d is not None)
    return replace(
        fig, detection_ms=detection, recovery_ms=other.recovery_ms, recovery_hang_at_ms=moved[1].hang_at_ms
    )


def _read(run: Run, r: Any) -> RunFigures:
    ws = r.workload(run.workload)
    offered = sum(x.offered for x in r.routes)
    failed = sum(x.failed_total for x in r.routes)
    # Of them, those of the start-up ramp (before every replica behind a route was first Ready),
    # said apart: they count (a readiness delay that keeps the first pods out costs requests),
    # and the report shows how many of a setting's failures its first start made.
    ramp = sum(x.ramp.failed_total for x in r.routes if x.ramp is not None and x.steady is not None)
    ready_from = ws.all_ready_ms if ws.all_ready_ms is not None else r.duration_ms
    pods = {f"pod/{p}" for p in ws.restarts}
    # A pod being deleted (a rollout replacing it, a scale-down) leaves the Service for good: no flap.
    deleted = {
        e.object: e.time_ms
        for e in reversed(r.events)
        if e.reason == "Killing" and e.object in pods and e.message.startswith("Stopping container")
    }
    flaps = sum(
        1
        for e in r.events
        if e.reason == "PodNotReady"
        and e.object in pods
        and e.time_ms > ready_from
        and e.time_ms < deleted.get(e.object, r.duration_ms + 1)
    )
    short = _short_ms(r.events, pods, ready_from, r.duration_ms)
    detection = recovery = None
    if run.kind == "hung":
        w = next(x for x in run.scenario.workloads if x.name == run.workload)
        pod = f"pod/{pod_names_of(w)[0]}"
        detection = _out_of_service(r.events, pod, run.hang_at_ms, dict(run.hosts), run.clients)
        recovery = _all_ready_again(r, run.workload, pod, run.hang_at_ms, w.spec.replicas)
    restarts = ws.total_restarts
    counted = restarts if run.count_restarts else 0
    hung = run.kind == "hung"
    rollout = next((x for x in r.rollouts if x.workload == run.workload), None)
    return RunFigures(
        run.label, run.kind, offered, failed, restarts, counted, flaps, detection, recovery, ws.all_ready_ms,
        run.hang_at_ms if hung else None, run.hang_at_ms if hung else None, _first_ready(r.events, pods),
        ramp, short,
        None if rollout is None else rollout.outcome,
        None if rollout is None or rollout.end_ms is None else rollout.end_ms - rollout.start_ms,
    )  # fmt: skip


def _short_ms(events: Sequence[Any], pods: set[str], since: int, end: int) -> int:
    """How long after ``since`` (every replica first Ready) fewer of ``pods`` were Ready than
    there are: the union of their NotReady spells."""
    out = dict.fromkeys(pods, 0)  # the pod's NotReady since (0: Ready)
    down: list[tuple[int, int]] = []
    for e in events:
        if e.object not in pods or e.time_ms <= since:
            continue
        if e.reason == "PodNotReady" and not out[e.object]:
            out[e.object] = e.time_ms
        elif e.reason == "PodReady" and out[e.object]:
            down.append((out[e.object], e.time_ms))
            out[e.object] = 0
    down += [(t, end) for t in out.values() if t]
    total, reach = 0, since
    for a, b in sorted(down):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _first_ready(events: Sequence[Any], pods: set[str]) -> int | None:
    """The slowest of ``pods`` to its first Ready, from its containers' first start (None: one
    never was Ready): each pod from its own start, so the ordered start of a StatefulSet's
    pods, each created when the one before is Ready, is not counted as probe delay."""
    started: dict[str, int] = {}
    ready: dict[str, int] = {}
    for e in events:
        if e.object not in pods or e.object in ready:
            continue
        if e.reason == "Started":
            started.setdefault(e.object, e.time_ms)
        elif e.reason == "PodReady":
            ready[e.object] = e.time_ms - started.get(e.object, 0)
    return max(ready.values()) if len(ready) == len(pods) and pods else None


ProbeKind = Literal["readiness", "liveness"]
# How the kubelet's prober says a check timed out (HTTP, exec, gRPC): a check on the hung process.
TIMED_OUT = ("context deadline exceeded", "timed out after", "did not complete within")


def _worst_moment(run: Run, r: Any, kind: ProbeKind) -> Run:
    """The hung run with pod 0's hang moved to the worst moment at or after it for its ``kind``
    probe (readiness: the one that takes it out of service; liveness: the one that cures it),
    else the other: the step after a check that passed, so the hang is missed until the next
    tick, a full period later. That check's tick is read from ``r`` (the run simulated past the
    hang): the probe's first timed-out check after the hang, less its timeout. ``run`` itself when it
    already hung there, or there is no single such probe (several containers' probes tick apart)
    or no failure of it to read the tick from."""
    w = next(x for x in run.scenario.workloads if x.name == run.workload)
    ready = [c.readiness_probe for c in w.pod_spec.containers if c.readiness_probe is not None]
    live = [c.liveness_probe for c in w.pod_spec.containers if c.liveness_probe is not None]
    first, other = (ready, live) if kind == "readiness" else (live, ready)
    probes, which = (first, kind) if first else (other, "liveness" if kind == "readiness" else "readiness")
    if len(probes) != 1:
        return run
    pod = f"pod/{pod_names_of(w)[0]}"
    fails = [
        e.time_ms
        for e in r.events
        if e.object == pod
        and e.reason == "Unhealthy"
        and e.time_ms > run.hang_at_ms
        and e.message.startswith(f"{which.capitalize()} probe failed")
        and any(said in e.message for said in TIMED_OUT)
    ]
    if not fails:
        return run
    at = fails[0] - probes[0].timeout_seconds * 1000 + run.scenario.spec.step
    if at <= run.hang_at_ms:
        return run
    doc = run.scenario.to_doc()
    for b in doc["spec"]["behavior"][run.workload]["pods"][-1]["containers"].values():
        b["episodes"][-1]["after"] = f"{at}ms"  # the deadlock _hung scripted
    doc["spec"]["duration"] = f"{at + DETECTION_CAP_MS}ms"
    return replace(run, scenario=Scenario.model_validate(doc), hang_at_ms=at)


def _all_ready_again(r: Any, workload: str, pod: str, at: int, replicas: int) -> int | None:
    """Time from ``at`` until the workload has all its replicas Ready again once the hung
    ``pod``'s container was killed (a deadlock has no other cure); None: never within the run."""
    kills = [
        e.time_ms
        for e in r.events
        if e.time_ms >= at and e.object == pod and e.reason == "Killing" and "probe" in e.message
    ]
    if not kills:
        return None
    ready = r.series[f"workload.{workload}.ready"]
    back = (r.time_ms >= min(kills)) & (ready >= replicas)
    return int(r.time_ms[back.argmax()]) - at if back.any() else None


def _out_of_service(
    events: Sequence[Any], pod: str, at: int, hosts: dict[str, str], clients: int
) -> int | None:
    """Time from ``at`` until ``pod`` left the endpoints, was killed, or was ejected by every
    client sidecar; None when none happened before the run ended."""
    import json

    times = [
        e.time_ms
        for e in events
        if e.time_ms >= at
        and e.object == pod
        and (e.reason == "PodNotReady" or (e.reason == "Killing" and "probe" in e.message))
    ]
    ejected: dict[str, int] = {}
    for e in events:
        if e.reason != "OutlierEject" or e.time_ms < at:
            continue
        try:
            url = json.loads(e.message).get("upstream_url")
        except ValueError:
            continue
        if hosts.get(url) == pod.removeprefix("pod/"):
            ejected.setdefault(e.object, e.time_ms)
    if clients and len(ejected) >= clients:
        times.append(max(ejected.values()))
    return min(times) - at if times else None


def _same(run: Run) -> tuple[Any, ...]:
    """What a run's figures depend on: all of it but its label (a stress may give the same
    scenario as another: twice a start of 0 s is the baseline's)."""
    rest = tuple(getattr(run, f.name) for f in fields(run) if f.name not in ("label", "scenario"))
    return (json.dumps(run.scenario.to_doc()), *rest)


def _steps(runs: tuple[Run, ...]) -> int:
    """About how many steps ``measure_all`` simulates for ``runs`` (the hung run: its warm-up,
    the phase past the hang and a worst moment; a warm-up's runs: it once, then each's rest)."""
    if runs[0].kind == "hung":
        return runs[0].hang_at_ms + PHASE_MS + DETECTION_CAP_MS
    until = runs[0].warm_until if len(runs) > 1 else 0
    return until + sum(r.scenario.spec.duration - until for r in runs)


def _longest_first(tasks: Sequence[tuple[Run, ...]]) -> list[int]:
    """The order to hand ``tasks`` to the workers: the longest first, so that the last to
    finish is a short one (ties in the tasks' order)."""
    return sorted(range(len(tasks)), key=lambda i: (-_steps(tasks[i]), i))


def measured(
    runs: Sequence[Run], executor: Executor, meanwhile: Callable[[], object] | None = None
) -> list[RunFigures]:
    """``measure`` of each run, in the runs' order, simulated over the executor: the runs that
    share a warm-up (``warm_until``) together, each other run alone; a run that is another but
    for its label is simulated once. The figures are ``measure``'s: each is a deterministic
    simulation, wherever and in whatever order it runs. ``meanwhile`` is called once every run
    is handed out, before the results are read: the caller's own work while the workers
    simulate."""
    keys = [_same(r) for r in runs]
    index: dict[tuple[Any, ...], int] = {}
    distinct: list[Run] = []
    for k, r in zip(keys, runs, strict=True):
        if k not in index:
            index[k] = len(distinct)
            distinct.append(r)
    warmed = tuple(r for r in distinct if r.warm_until)
    tasks = [(r,) for r in distinct if not r.warm_until] + ([warmed] if warmed else [])
    order = _longest_first(tasks)
    got = executor.map(measure_all, [tasks[i] for i in order])
    if meanwhile is not None:
        meanwhile()
    figs: dict[int, RunFigures] = {}
    for i, fs in zip(order, got, strict=True):
        figs.update((id(r), f) for r, f in zip(tasks[i], fs, strict=True))
    return [replace(figs[id(distinct[index[k]])], label=r.label) for k, r in zip(keys, runs, strict=True)]


def evaluate(
    runs: Sequence[Run], executor: Executor, meanwhile: Callable[[], object] | None = None
) -> Figures:
    """The figures of one setting from its runs (summed in the runs' order); ``meanwhile`` as
    ``measured`` calls it."""
    return summed(runs, measured(runs, executor, meanwhile))


def summed(runs: Sequence[Run], got: Sequence[RunFigures]) -> Figures:
    """The figures of one setting from its runs and what ``measured`` read of each (in the runs'
    order): probesim diff measures the runs of several settings at once, and sums each's."""
    got = list(got)
    hung = [x for x in got if x.kind == "hung"]
    detection = hung[0].detection_ms if hung else None
    recovery = hung[0].recovery_ms if hung else None
    judged = [x for x in got if x.kind != "hung"]
    base = next((x for x in got if x.label == "stress baseline"), None)
    first = runs[0] if runs else None
    ready = None
    if base is not None and base.ready_ms is not None and first is not None:
        ready = max(base.ready_ms - first.app_start_ms, first.ready_phase_ms, 0)
    cap = DETECTION_CAP_MS
    serves = first.serves if first is not None else True
    if not serves:  # a worker is in no Service: its hung pod is never "out of service" later
        detection = 0
    return Figures(
        failed=sum(x.failed for x in judged),
        restarts=sum(x.counted_restarts for x in judged),
        detection_s=(cap if detection is None else detection) / 1000,
        detected=detection is not None,
        flaps=sum(x.flaps for x in judged),
        runs=tuple(got),
        recovery_s=(cap if recovery is None else min(recovery, cap)) / 1000,
        ready_s=(cap if ready is None else min(ready, cap)) / 1000,
        probe_rps=first.probe_rps if first is not None else 0.0,
        probe_cpu_m=first.probe_cpu_m if first is not None else 0.0,
        serves=serves,
    )
