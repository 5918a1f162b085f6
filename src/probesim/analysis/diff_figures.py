"""What a change does to one workload, simulated: the same runs on both sides, under two seeds,
the figures side by side and a verdict per figure.

The runs are the tuner's (tune/objective.py ``plan``): the stress suite of ``probesim check
--stress`` (each workload alone behind its own Services: baseline, a surge of twice and three
times the traffic, a start twice as slow, a dependency that hangs, one pod answering 500, a 2 s
pause, CPU limited to the request), the app profile's slowest start and longest pause when no
scenario says what the app does, the user's scenario when one is given, and a pod that hangs for
good; plus the suite's two rollouts (the same version, and one that never becomes Ready). Each
side runs with its own objects: the workload, the Services that select it, its HPA, the Istio
rules naming its Services; the behaviour, traffic and dependencies are the scenario's (or the
default load model's), the same on both sides.

The figures are the tuner's (tune/figures.py): failed requests, needless restarts (in runs
where nothing a restart cures is scripted), readiness flaps, each summed over the runs and per
run; how long the hung pod keeps traffic and how long until all replicas are Ready again; time
to Ready; probe load; and how long the rollout takes.

**Noise.** Every run is simulated under two seeds (the scenario's and the next) on each side.
A figure is *worse* when the after side's best seed is worse than the before side's worst by
more than the figure's noise band (BANDS), *better* the other way round, and otherwise *the
same within the noise*. Runs that draw nothing random give the same figure under both seeds;
those that do (latency distributions, error percentages) give a spread, which the comparison
takes in whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from probesim.analysis.own_scenario import nearest_services, own_scenario
from probesim.analysis.stress import ROLLOUTS, base_scenario, stress_scenario
from probesim.kube.selectors import selects
from probesim.manifests.generated import istio_hosts
from probesim.manifests.kubernetes import Objects
from probesim.mesh.istio import DestinationRule, VirtualService
from probesim.mesh.load import istio_objects
from probesim.model.kubernetes import HorizontalPodAutoscaler, Service, Workload
from probesim.model.scenario import Scenario
from probesim.model.traffic import Traffic
from probesim.runs import with_seed
from probesim.tune.figures import DETECTION_CAP_MS, Figures, RunFigures
from probesim.tune.inputs import TuneInputs
from probesim.tune.objective import Executor, Run, measured, plan, summed
from probesim.tune.space import Space

Verdict = Literal["better", "worse", "same", "n/a"]
SEEDS = 2


@dataclass(frozen=True)
class Band:
    """How far apart two values must be to differ beyond the noise: more than ``absolute`` and
    more than ``relative`` of the better one."""

    absolute: float
    relative: float = 0.0

    def width(self, v: float) -> float:
        return max(self.absolute, self.relative * abs(v))

    def said(self, unit: str) -> str:
        parts = [] if not self.absolute else [f"{self.absolute:g}{unit}"]
        if self.relative:
            parts.append(f"{100 * self.relative:g} %")
        return " and ".join(parts) if parts else "any difference"


COUNT_BAND = Band(2, 0.10)  # failed requests
EVENT_BAND = Band(0)  # restarts, flaps: each one counts
SECONDS_BAND = Band(1, 0.10)  # a step of the simulation, and a tenth
LOAD_BAND = Band(0.001)  # probe load: arithmetic on the periods, no noise
# figure → (unit, band, what it says), in the order a table shows them.
FIGURES: dict[str, tuple[str, Band, str]] = {
    "failed requests": ("", COUNT_BAND, "requests that failed, over the runs"),
    "needless restarts": ("", EVENT_BAND, "container restarts in runs where nothing a restart cures happens"),
    "readiness flaps": ("", EVENT_BAND, "pods leaving the Service after all were first Ready"),
    "hung pod in service": (" s", SECONDS_BAND, "a pod that hangs for good: how long it keeps traffic"),
    "replicas back after a hang": (" s", SECONDS_BAND, "until all replicas are Ready again after it hangs"),
    "time to Ready": (" s", SECONDS_BAND, "a new pod, from its app answering to Ready"),
    "probe load": (" /s per pod", LOAD_BAND, "readiness and liveness probes per second per pod"),
    "rollout duration": (" s", SECONDS_BAND, "a rolling update of the same version, start to done"),
}
PER_RUN = ("failed requests", "needless restarts", "readiness flaps")


def noise_line(seeds: Sequence[int]) -> str:
    """The noise band as a report says it."""
    bands = {
        "failed requests": COUNT_BAND.said(""),
        "restarts and flaps": EVENT_BAND.said(""),
        "times": SECONDS_BAND.said(" s"),
        "probe load": LOAD_BAND.said("/s"),
    }
    said = "; ".join(f"{k} {v}" for k, v in bands.items())
    return (
        f"Each run simulated under seeds {' and '.join(map(str, seeds))} on both sides. A figure is worse "
        f"(or better) when the after side's best seed is worse (better) than the before side's worst by more "
        f"than its noise band — {said} — and otherwise the same within the noise."
    )


def verdict(before: Sequence[float | None], after: Sequence[float | None], band: Band) -> Verdict:
    """Lower is better; None is never (an infinite time). ``n/a`` when a side has no value."""
    if not before or not after:
        return "n/a"
    b = [math.inf if v is None else v for v in before]
    a = [math.inf if v is None else v for v in after]

    def beyond(x: float, y: float) -> bool:  # x worse than y by more than the band
        if math.isinf(y):
            return False
        return math.isinf(x) or x > y + band.width(y)

    if beyond(min(a), max(b)):
        return "worse"
    if beyond(min(b), max(a)):
        return "better"
    return "same"


@dataclass(frozen=True)
class Figure:
    name: str  # a key of FIGURES
    run: str  # "" for the figure of all runs, else the run's label ("stress traffic-x3")
    before: tuple[float | None, ...]  # one a seed; None: never (a time); () when not run
    after: tuple[float | None, ...]
    verdict: Verdict

    @property
    def unit(self) -> str:
        return FIGURES[self.name][0]

    @property
    def band(self) -> Band:
        return FIGURES[self.name][1]

    def to_json(self) -> dict[str, Any]:
        return {
            "figure": self.name,
            "run": self.run or None,
            "unit": self.unit.strip() or None,
            "before": list(self.before),
            "after": list(self.after),
            "verdict": self.verdict,
            "noiseBand": {"absolute": self.band.absolute, "relative": self.band.relative},
        }


@dataclass(frozen=True)
class SideInput:
    """One side of one workload, as simulated: the workload, its Services, the DestinationRule
    the hung pod's clients eject by, and the scenario its runs come from."""

    workload: Workload
    services: tuple[Service, ...]
    rule: DestinationRule | None
    given: Scenario
    user: bool  # the scenario is the user's (its own run is one of the runs)

    def fingerprint(self) -> str:
        """What the simulation reads of this side: two sides alike simulate alike."""
        doc = self.given.to_doc()
        doc["workloads"] = [self.workload.model_dump(mode="json", by_alias=True, exclude_none=True)]
        return json.dumps(doc, sort_keys=True)


def side_input(objects: Objects, w: Workload, user: Scenario | None, rate: float | None = None) -> SideInput:
    """``w`` with this side's Services, HPA and Istio rules, in the user's scenario (its objects
    of those names replaced) or alone, in the scenario of its own check --stress runs it in
    (own_scenario: of a workload read in several variants, the objects of its folder; a
    VirtualService that routes elsewhere too left out). When the scenario sends its Services
    nothing, they get ``rate`` requests per second from 1m on (the before side's default load,
    kube/load_model.py: both sides judged under the same load, a change of replicas or CPU
    request too); None: this side's own default load."""
    services = nearest_services(objects, w, [s for s in objects.services if selects(s, w)])
    names = {s.name for s in services}
    if user is not None:
        scaler = objects.scaler_of(w)
        hpa = scaler if isinstance(scaler, HorizontalPodAutoscaler) else None
        rules, vss = istio_objects(Objects(istio=[x for x in objects.istio if istio_hosts(x[2]) & names]))
        given = _substituted(user, w, services, hpa, rules, vss)
    else:
        given, _left = own_scenario(objects, w, services)
    sent = any(given.services and given.service_for(t).name in names for t in given.spec.traffic)
    if services and rate is not None and not sent:
        load = Traffic.model_validate({"service": services[0].name, "path": "/", "rate": rate, "start": "1m"})
        given = given.model_copy(
            update={"spec": given.spec.model_copy(update={"traffic": (*given.spec.traffic, load)})}
        )
    rule = next((r for r in given.destination_rules if r.spec.host.split(".")[0] in names), None)
    return SideInput(w, tuple(services), rule, given, user is not None)


def _substituted(
    sc: Scenario,
    w: Workload,
    services: list[Service],
    hpa: HorizontalPodAutoscaler | None,
    rules: list[DestinationRule],
    vss: list[VirtualService],
) -> Scenario:
    """The user's scenario with this side's objects in place of its own of the same names (a
    scenario names workloads and Services by name)."""
    names = {s.name for s in services}
    workloads = [x for x in sc.workloads if x.name != w.name]
    kept_hpas = [
        h
        for h in sc.autoscalers
        if (h.spec.scale_target_ref.kind, h.spec.scale_target_ref.name) != (w.kind, w.name)
    ]
    return sc.model_copy(
        update={
            "workloads": (w, *workloads),
            "services": (*(s for s in sc.services if s.name not in names), *services),
            "autoscalers": (*kept_hpas, *([hpa] if hpa is not None else [])),
            "destination_rules": (
                *(r for r in sc.destination_rules if r.spec.host.split(".")[0] not in names),
                *rules,
            ),
            "virtual_services": (
                *(v for v in sc.virtual_services if not {h.split(".")[0] for h in v.spec.hosts} & names),
                *vss,
            ),
        }
    )


def runs_of(side: SideInput, seed: int) -> list[Run]:
    """The runs of one side under one seed (the module's docstring lists them)."""
    given = with_seed(side.given, seed)
    w = side.workload
    inputs = TuneInputs(given, side.user, w, list(side.services), side.rule)
    space = Space(w, side.rule)
    runs = plan(inputs, space, space.current())
    first = runs[0]
    base = base_scenario(w, list(side.services), given)
    for stress in ROLLOUTS:
        sc, _why = stress_scenario(base, w, stress)
        if sc is not None:
            # A release that never becomes Ready may be restarted by a liveness probe on the
            # same check, by design: its restarts are not needless.
            count = first.count_restarts and stress == "rollout"
            load = {"app_start_ms": first.app_start_ms, "probe_rps": first.probe_rps,
                    "probe_cpu_m": first.probe_cpu_m, "ready_phase_ms": first.ready_phase_ms,
                    "serves": first.serves}  # fmt: skip
            runs.append(Run(f"stress {stress}", "stress", sc, w.name, 0, count, **load))  # type: ignore[arg-type]
    return runs


@dataclass
class Measured:
    """One side of one workload under each seed: its runs' figures (tune.figures.Figures)."""

    figures: list[Figures] = field(default_factory=list)


def measure(
    pairs: Sequence[tuple[SideInput, SideInput]], seeds: Sequence[int], executor: Executor
) -> list[tuple[Measured, Measured]]:
    """Both sides of each workload under each seed, every run handed to ``executor`` at once
    (the runs that are alike on both sides simulated once)."""
    groups: list[list[Run]] = []
    for before, after in pairs:
        for side in (before, after):
            for seed in seeds:
                groups.append(runs_of(side, seed))
    flat = [r for g in groups for r in g]
    got = measured(flat, executor) if flat else []
    out: list[Measured] = []
    at = 0
    for g in groups:
        if not out or len(out[-1].figures) == len(seeds):
            out.append(Measured())
        out[-1].figures.append(summed(g, got[at : at + len(g)]))
        at += len(g)
    return [(out[i], out[i + 1]) for i in range(0, len(out), 2)]


def _never(v: float, cap_s: float = DETECTION_CAP_MS / 1000) -> float | None:
    return None if v >= cap_s else v


NEVER_READY = "stress rollout-never-ready"


def _whole(f: Figures, name: str, common: set[str]) -> float | None:
    """A figure of all of one side's runs under one seed; the counts over the runs of
    ``common``, those both sides ran (a stress that applies to one side only, as one pod of two
    answering 500 after a change to two replicas, is compared on its own row)."""
    runs = [r for r in f.runs if r.label in common and r.kind != "hung"]
    if name == "failed requests":
        return float(sum(r.failed for r in runs))
    if name == "needless restarts":
        return float(sum(r.counted_restarts for r in runs))
    if name == "readiness flaps":  # a release that never becomes Ready flaps by design
        return float(sum(r.flaps for r in runs if r.label != NEVER_READY))
    if name == "hung pod in service":
        return f.detection_s if f.detected else None
    if name == "replicas back after a hang":
        return _never(f.recovery_s)
    if name == "time to Ready":
        return _never(f.ready_s)
    if name == "probe load":
        return f.probe_rps
    raise ValueError(name)


def _of_run(r: RunFigures, name: str) -> float:
    if name == "failed requests":
        return float(r.failed)
    if name == "needless restarts":
        return float(r.counted_restarts)
    return float(r.flaps)


def _rollout(f: Figures) -> tuple[bool, float | None]:
    """Whether a side's runs rolled out, and how long the same version's rollout took (None: it
    did not complete)."""
    r = next((x for x in f.runs if x.label == "stress rollout"), None)
    if r is None or r.rollout is None:
        return False, None
    return True, (r.rollout_ms / 1000 if r.rollout_ms is not None else None)


def figures(before: Measured, after: Measured) -> list[Figure]:
    """The figures of both sides, the figures of all runs first (FIGURES' order), then each
    run's (PER_RUN) in the runs' order."""
    out = []
    ran = [{r.label for r in f.runs} for f in (*before.figures, *after.figures)]
    common = set.intersection(*ran) if ran else set()
    for name in FIGURES:
        if name == "rollout duration":
            b = [_rollout(f) for f in before.figures]
            a = [_rollout(f) for f in after.figures]
            if not any(x for x, _ in b) and not any(x for x, _ in a):
                continue
            bv = tuple(v for done, v in b if done)
            av = tuple(v for done, v in a if done)
        elif name == "hung pod in service" and not any(f.serves for f in (*before.figures, *after.figures)):
            continue  # a worker: no Service sends it traffic, so no time in service
        else:
            bv = tuple(_whole(f, name, common) for f in before.figures)
            av = tuple(_whole(f, name, common) for f in after.figures)
        out.append(Figure(name, "", bv, av, verdict(bv, av, FIGURES[name][1])))
    labels = list(dict.fromkeys(r.label for m in (before, after) for f in m.figures[:1] for r in f.runs))
    for label in labels:
        b_runs = [next((r for r in f.runs if r.label == label), None) for f in before.figures]
        a_runs = [next((r for r in f.runs if r.label == label), None) for f in after.figures]
        if any(r is not None and r.kind == "hung" for r in (*b_runs, *a_runs)):
            continue  # its figures are the hung pod's, above
        for name in PER_RUN:
            if name == "readiness flaps" and label == NEVER_READY:
                continue
            bv = tuple(_of_run(r, name) for r in b_runs if r is not None)
            av = tuple(_of_run(r, name) for r in a_runs if r is not None)
            out.append(Figure(name, label, bv, av, verdict(bv, av, FIGURES[name][1])))
    return out
