"""The rolling-update, readiness and load model, and the rule on a rollout's capacity (PS032)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from probesim.analysis.context import Context, Target
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.patch import apply, container_patch
from probesim.analysis.rules.timing import plan
from probesim.engine.capacity import probe_cost
from probesim.engine.controllers.deployment import DeploymentState
from probesim.engine.controllers.statefulset import max_unavailable as sts_max_unavailable
from probesim.kube.load_model import default_rate, workload_behavior
from probesim.kube.selectors import selects
from probesim.model.duration import format_ms
from probesim.model.kubernetes import Container, Probe, Workload
from probesim.model.scenario import Cluster, ContainerBehavior, Deadlock, Errors, Hang, Traffic, generic

rule = REGISTRY.rule

# -- rollouts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rolling:
    """What a rolling update takes away (the controllers' rounding, engine/controllers)."""

    replicas: int
    unavailable: int  # pods the controller may take down at once
    surge: int  # pods it may add above replicas (0 for a StatefulSet)
    knob: str  # the field, for messages

    @property
    def wave(self) -> int:
        """The first new pods counted Ready together, each of which lets an old pod go: maxSurge
        of them, or the pods taken down when there is no surge."""
        return self.surge or self.unavailable


def rolling_update(w: Workload, replicas: int | None = None) -> Rolling | None:
    """The workload's rolling update (with ``replicas`` instead of its own, if given), or None
    when it has none (Recreate, OnDelete, a partition above every ordinal, other kinds)."""
    n = w.spec.replicas if replicas is None else replicas
    if w.kind == "Deployment":
        strategy = w.spec.strategy
        ru = strategy.rolling_update if strategy is not None else None
        if strategy is None or strategy.type != "RollingUpdate" or ru is None or n == 0:
            return None
        d = DeploymentState(w.name, n, 0, "RollingUpdate", ru.max_surge, ru.max_unavailable)
        knob = f"maxSurge {ru.max_surge}, maxUnavailable {ru.max_unavailable}"
        return Rolling(n, d.max_unavailable_n(), d.max_surge_n(), knob)
    if w.kind == "StatefulSet":
        us = w.spec.update_strategy
        sru = us.rolling_update if us is not None else None
        if us is None or us.type != "RollingUpdate" or n == 0 or (sru is not None and sru.partition >= n):
            return None
        v = sru.max_unavailable if sru is not None else None
        knob = "one pod at a time" if v is None else f"maxUnavailable {v}"
        return Rolling(n, min(sts_max_unavailable(v, n), n), 0, knob)
    return None


def _ready_after(b: ContainerBehavior, target: str, http: bool) -> float:
    """When (ms after the container starts) ``target`` — an HTTP path, or a probe's behaviour key —
    first answers with success and keeps doing so: after ``start`` (at once when a
    ``startingStatus`` below 400 is answered meanwhile), past the ``errors`` and ``hang``
    episodes anchored ``after`` a start that cover it then; never (inf) when it fails for good."""
    if b.paths.get(target, b.paths.get(generic(target), 200)) >= 400:
        return math.inf
    t = 0.0 if b.starting_status is not None and b.starting_status < 400 else float(b.start)
    moved = True
    while moved:
        moved = False
        for e in b.episodes:
            if e.after is None or e.after > t:
                continue
            if (
                isinstance(e, Errors)
                and e.status >= 400
                and (e.paths is None or target in e.paths or generic(target) in e.paths)
            ):
                end = math.inf if e.for_ is None else e.after + e.for_
            elif isinstance(e, Hang) and (http or not e.accepts_tcp):
                end = e.after + e.for_
            elif isinstance(e, Deadlock) and (http or not e.accepts_tcp):
                end = math.inf
            else:
                continue
            if end > t:
                t, moved = end, True
    return t


def _probe_key(p: Probe) -> tuple[str, bool]:
    """A probe's behaviour key (as the engine looks it up) and whether it needs an HTTP answer."""
    if p.http_get is not None:
        return p.http_get.path, True
    if p.exec is not None:
        return "exec:" + " ".join(p.exec.command), True
    if p.grpc is not None:
        return "grpc:" + (p.grpc.service or ""), True
    return "tcp", False  # a tcpSocket probe passes once the app listens


def _earliest_ready(c: Container, b: ContainerBehavior) -> float:
    """The earliest a new container can be Ready (ms after it starts): at once without a
    readiness probe (kubelet: Ready when running); else when its check first passes, not before
    initialDelaySeconds (kubelet.md §2.2.15; readiness is probed as soon as it can be, §2.1.5),
    after a startup probe's earliest success, plus successThreshold − 1 periods."""
    p = c.readiness_probe
    if p is None:
        return 0.0
    gate = 0.0
    s = c.startup_probe
    if s is not None:
        key, http = _probe_key(s)
        gate = max(s.initial_delay_seconds * 1000, _ready_after(b, key, http))
    key, http = _probe_key(p)
    first = max(gate, p.initial_delay_seconds * 1000, _ready_after(b, key, http))
    return first + (p.success_threshold - 1) * p.period_seconds * 1000


@dataclass(frozen=True)
class _Load:
    """The load on the workload's pods: requests per second and what serving them takes."""

    rate: float  # requests per second to the workload's Services, at their peak (spikes aside)
    cpu_s: float  # CPU seconds those requests need per second
    busy_s: float  # worker-seconds they hold per second (CPU and wall time)
    per_replica: bool  # the default load model: the load grows with the replicas
    replicas: int  # the replicas it was computed for
    paths: tuple[str, ...]  # the paths requested

    def utilization(self, serving: int, cores: float, workers: float, replicas: int | None = None) -> float:
        """The busiest resource's use when ``serving`` pods take the load of ``replicas``."""
        if self.rate == 0:
            return 0.0
        if serving <= 0:
            return math.inf
        k = (replicas or self.replicas) / self.replicas if self.per_replica else 1.0
        cpu = self.cpu_s / (serving * cores) if cores > 0 else 0.0
        return k * max(cpu, self.busy_s / (serving * workers))


def _peak(tr: Traffic) -> float:
    """A route's highest sustained rate: rates change linearly between stage targets and hold
    between a series' rows, so the peak is one of them (spikes, brief, aside)."""
    return max([tr.rate or 0.0, tr.start_rate, *(st.target for st in tr.stages), *(r for _, r in tr.points)])


def _load(ctx: Context, t: Target, b: ContainerBehavior) -> _Load:
    """The scenario's traffic to the workload's Services (each route at its peak), or the default
    load model's (kube/load_model.py) when the scenario sends them none or there is none: as
    the stress suite loads a workload."""
    sc = ctx.scenario
    routes = [
        (tr.path, _peak(tr))
        for tr in (sc.spec.traffic if sc is not None and sc.services else ())
        if selects(sc.service_for(tr), t.workload)  # type: ignore[union-attr]
    ]
    declared = bool(routes)
    if not declared:
        routes = [("/", default_rate(t.workload))]
    cpu = busy = 0.0
    for path, rate in routes:
        cost = probe_cost(b, path)
        cpu += rate * cost.cpu / 1000
        busy += rate * (cost.cpu + cost.wall) / 1000
    paths = tuple(dict.fromkeys(p for p, _ in routes))
    return _Load(sum(r for _, r in routes), cpu, busy, not declared, max(t.workload.spec.replicas, 1), paths)


def _behavior(ctx: Context, t: Target) -> ContainerBehavior:
    """What the app does: the scenario's behaviour for the workload, or the default load model's
    (its app answers at once: kube/load_model.py), as the stress suite has it."""
    if ctx.scenario is not None and t.workload.name in ctx.scenario.spec.behavior:
        return t.behavior or ContainerBehavior()
    raw = workload_behavior(t.workload, t.services)["containers"].get(t.container.name, {})
    return ContainerBehavior.model_validate(raw)


def _pct(u: float) -> str:
    return "no pod is left to serve them" if math.isinf(u) else f"{100 * u:.0f} % of what they can serve"


def _pods(n: int) -> str:
    return f"{n} pod" if n == 1 else f"{n} pods"


@rule(
    id="PS032",
    name="rollout-capacity",
    severity="warning",
    title="A rolling update leaves too few pods to serve the load, or counts new pods Ready before they "
    "serve.",
    why="During a rolling update the controller takes maxUnavailable pods away (a Deployment's rounds "
    "down, its maxSurge up, and 1 when both round to 0: ResolveFenceposts; a StatefulSet one pod "
    "at a time, its maxUnavailable rounded down, at least 1), and the survivors take their load: "
    "replicas − maxUnavailable pods must serve what all of them served. And it removes an old pod "
    "for each new one that is Ready (reconcileOldReplicaSets keeps replicas − maxUnavailable "
    "available, Ready for minReadySeconds; a StatefulSet moves on once the new pod is Ready). A new "
    "pod whose readiness can pass before the app serves the traffic's paths — no readiness probe "
    "and an app that takes time to start, or a check that answers while the app still fails its "
    "requests (from the scenario's behaviour: the earliest its check can pass — not before "
    "initialDelaySeconds, nor a startup probe's earliest success, plus successThreshold − 1 "
    "periods — is before the traffic's paths answer, past start and warm-up error episodes) — "
    "gets its share of requests and fails them during every rollout, and the first new "
    "pods counted Ready (maxSurge of them, or maxUnavailable without surge) each let a warm pod go: "
    "replicas − maxUnavailable − that many serve meanwhile (more are lost if the warm-up outlasts "
    "the next pods' start). The load is the scenario's traffic to the workload's Services (each "
    "route at its peak sustained rate), or the default load model's (100 requests per second per "
    "core of CPU request per replica, 5 ms of CPU each: half the request; see docs/scenarios.md) "
    "when it sends none; a "
    "pod serves what its CPU limit (the node's CPU without one) and workers allow at its route "
    "costs; the survivors are short when they would need 100 % of that or more (route costs only: "
    "probes and dependency calls' waits are not counted). With the default load model an app "
    "answers at once, so only capacity is judged. A workload overloaded with "
    "every pod serving is not reported here, nor Recreate and OnDelete strategies (no rolling "
    "update).",
    fix="Make readiness pass only once the app serves (a path that needs what requests need, or "
    "initialDelaySeconds past the warm-up); keep capacity with maxUnavailable: 0 and maxSurge: 1 "
    "(a pod more instead of one less), or more replicas.",
)  # fmt: skip
def rollout_capacity(ctx: Context) -> Iterator[Finding]:
    node = (ctx.scenario.spec.cluster if ctx.scenario is not None else Cluster()).node_cpu
    for t in ctx.targets:
        w = t.workload
        ro = rolling_update(w)
        if not t.serves or ro is None:
            continue
        b = _behavior(ctx, t)
        load = _load(ctx, t, b)
        serve = max(_ready_after(b, p, True) for p in load.paths)
        if load.rate == 0 or math.isinf(serve):
            continue
        cores = (t.container.resources.limits.cpu or node) / 1000
        workers = float(b.capacity.workers or math.inf)
        if load.utilization(ro.replicas, cores, workers) >= 1:
            continue
        ready = _earliest_ready(t.container, b)
        cold = ready < serve
        # Cold new pods cost capacity too when they count as available before they serve.
        early = cold and ready + w.spec.min_ready_seconds * 1000 < serve
        serving = max(0, ro.replicas - ro.unavailable - (ro.wave if early else 0))
        during = load.utilization(serving, cores, workers)
        if not cold and during < 1:
            continue
        where = f"a rollout ({ro.knob})"
        rel: tuple[str, ...] = ()
        patch: dict[str, Any] = {}
        notes: list[str] = []
        if cold:
            path = max(load.paths, key=lambda p: _ready_after(b, p, True))
            rp = t.container.readiness_probe
            msg = (f"new pods can be Ready {format_ms(int(ready))} after they start, {path} answers from "
                   f"{format_ms(int(serve))}: {where} sends them requests they fail")  # fmt: skip
            extra = (rp.success_threshold - 1) * rp.period_seconds * 1000 if rp is not None else 0
            delay = -(-(int(serve) - extra) // 1000)
            pl = plan(ctx, t)
            change = pl.change("readiness")
            if rp is not None and rp.http_get is not None and not probe_cost(b, path).calls:
                # readiness on the path the traffic needs passes exactly when the app serves it
                change.setdefault("readinessProbe", {})["httpGet"] = {"path": path}
                alt = f"or readinessProbe.initialDelaySeconds: {delay}"
            else:
                change.setdefault("readinessProbe", {})["initialDelaySeconds"] = delay
                alt = ""
            rel = ("readinessProbe",) if rp is not None else ()
            patch = container_patch(tuple(str(k) for k in t.spec_path), t.group, t.container.name, change)
            notes.append(f"readiness not before {path} answers{'; ' + alt if alt else ''}; {pl.note(change)}")
            if during >= 1:
                msg += f"; meanwhile {serving} of {_pods(ro.replicas)} serving, at {_pct(during)}"
        else:
            rate = f"{load.rate:g} req/s"
            msg = f"{where} leaves {serving} of {_pods(ro.replicas)} to serve {rate}: {_pct(during)}"
        if load.utilization(ro.replicas - ro.unavailable, cores, workers) >= 1:  # even with warm pods
            more, note = _more_capacity(w, ro, load, cores, workers)
            patch = apply(patch, more)
            notes.append(note)
        yield ctx.finding("PS032", t, msg, rel, patch=patch, note="; ".join(notes))


def _more_capacity(
    w: Workload, ro: Rolling, load: _Load, cores: float, workers: float
) -> tuple[dict[str, Any], str]:
    """The patch that keeps capacity through a rollout, and why: a Deployment surges a pod
    instead of taking one down; a StatefulSet of one replica (a single instance, which cannot
    stay up through its own replacement) is updated OnDelete, when you choose; a larger one gets
    the replicas whose survivors can carry the load."""
    more: tuple[int, str] | None = None
    for n in range(ro.replicas + 1, ro.replicas + 1001):  # bounded: 100 % unavailable never fits
        rn = rolling_update(w, n)
        if rn is None:
            continue
        u = load.utilization(n - rn.unavailable, cores, workers, n)
        if u < 1:
            more = n, f"{n - rn.unavailable} serving during a rollout, at {100 * u:.0f} %"
            break
    if w.kind == "Deployment":
        u = load.utilization(ro.replicas, cores, workers)
        surge = {"rollingUpdate": {"maxSurge": max(ro.surge, 1), "maxUnavailable": 0}}
        note = f"{_pods(ro.replicas)} serving throughout, at {100 * u:.0f} %"
        if more is not None:
            note += f"; or replicas: {more[0]} ({more[1]})"
        return {"spec": {"strategy": surge}}, note
    if ro.replicas == 1:
        strategy = {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}
        note = (f"a single instance is down while it is replaced: with OnDelete it restarts when you delete "
                f"pod {w.name}-0, in a window you choose")  # fmt: skip
        return {"spec": strategy}, note
    if more is None:
        return {}, ""
    return {"spec": {"replicas": more[0]}}, f"{more[1]}, if the app can run that many"
