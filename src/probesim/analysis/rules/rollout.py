"""The rule on a rollout's capacity (PS032), over the rolling-update and readiness models of
kube/ and the load the workload's pods carry."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from probesim.analysis.context import Context, Target
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.patch import apply, container_patch
from probesim.analysis.rules.disruption import quietest_replicas
from probesim.analysis.rules.plan import plan
from probesim.kube.load_model import workload_behavior
from probesim.kube.readiness import earliest_ready, ready_after
from probesim.kube.rolling import Rolling, rolling_update
from probesim.kube.selectors import selects
from probesim.model.cluster import Cluster
from probesim.model.duration import format_ms
from probesim.model.kubernetes import Workload
from probesim.model.scenario import ContainerBehavior
from probesim.model.traffic import Traffic

rule = REGISTRY.rule

# -- rollouts ---------------------------------------------------------------------------------


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
    """The scenario's traffic to the workload's Services (each route at its peak); none when the
    scenario sends them none or there is no scenario (a rate of 0 on ``/``: no load is invented)."""
    sc = ctx.scenario
    routes = [
        (tr.path, _peak(tr))
        for tr in (sc.spec.traffic if sc is not None and sc.services else ())
        if selects(sc.service_for(tr), t.workload)  # type: ignore[union-attr]
    ]
    declared = bool(routes)
    if not declared:  # no load is invented: the paths only, to judge a cold new pod
        routes = [("/", 0.0)]
    cpu = busy = 0.0
    for path, rate in routes:
        cost = b.cost(path)
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
    "route at its peak sustained rate); without a scenario's traffic no load is assumed, and only "
    "a new pod counted Ready before it serves is judged (which needs the scenario's behaviour); a "
    "pod serves what its CPU limit (the node's CPU without one) and workers allow at its route "
    "costs; the survivors are short when they would need 100 % of that or more (route costs only: "
    "probes and dependency calls' waits are not counted). Without a load, a Deployment whose "
    "rollout leaves no pod serving is reported (any request then fails), and a StatefulSet of one "
    "replica is not: a single instance cannot stay up through its own replacement, which no "
    "strategy changes. A workload overloaded with "
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
        # An autoscaled workload rolls out at the replicas its autoscaler holds: at least its
        # minimum (as the disruption rules judge it), not the manifest's spec.replicas.
        scaled = ctx.objects.scaler_of(w) is not None
        n, said = quietest_replicas(ctx, w) if scaled else (w.spec.replicas, "")
        ro = rolling_update(w, n)
        if not t.serves or ro is None:
            continue
        b = _behavior(ctx, t)
        load = _load(ctx, t, b)
        serve = max(ready_after(b, p, True) for p in load.paths)
        if math.isinf(serve):
            continue
        cores = (t.container.resources.limits.cpu or node) / 1000
        workers = float(b.capacity.workers or math.inf)
        if load.utilization(ro.replicas, cores, workers) >= 1:
            continue
        ready = earliest_ready(t.container, b)
        cold = ready < serve
        # Cold new pods cost capacity too when they count as available before they serve.
        early = cold and ready + w.spec.min_ready_seconds * 1000 < serve
        serving = max(0, ro.replicas - ro.unavailable - (ro.wave if early else 0))
        during = load.utilization(serving, cores, workers)
        if load.rate == 0:  # no load known: only a Deployment left with no pod is sure to fail
            # (a StatefulSet of one replica cannot be rolled any other way: not reported)
            during = math.inf if serving == 0 and w.kind == "Deployment" else 0.0
        if not cold and during < 1:
            continue
        where = f"a rollout ({ro.knob}{', ' + said if said else ''})"
        rel: tuple[str, ...] = ()
        patch: dict[str, Any] = {}
        notes: list[str] = []
        if cold:
            path = max(load.paths, key=lambda p: ready_after(b, p, True))
            rp = t.container.readiness_probe
            msg = (f"new pods can be Ready {format_ms(int(ready))} after they start, {path} answers from "
                   f"{format_ms(int(serve))}: {where} sends them requests they fail")  # fmt: skip
            extra = (rp.success_threshold - 1) * rp.period_seconds * 1000 if rp is not None else 0
            delay = -(-(int(serve) - extra) // 1000)
            pl = plan(ctx, t)
            change = pl.change("readiness")
            if rp is not None and rp.http_get is not None and not b.cost(path).calls:
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
        elif load.rate == 0:
            msg = f"{where} leaves {serving} of {_pods(ro.replicas)}: the Service has no endpoint until "
            msg += "the new pod is Ready"
        else:
            rate = f"{load.rate:g} req/s"
            msg = f"{where} leaves {serving} of {_pods(ro.replicas)} to serve {rate}: {_pct(during)}"
        if load.rate == 0 and ro.replicas - ro.unavailable == 0 and w.kind == "Deployment":
            surge = {"rollingUpdate": {"maxSurge": max(ro.surge, 1), "maxUnavailable": 0}}
            patch = apply(patch, {"spec": {"strategy": surge}})
            notes.append(f"{_pods(ro.replicas)} serving throughout: a new pod is Ready before one goes")
        elif load.rate > 0 and load.utilization(ro.replicas - ro.unavailable, cores, workers) >= 1:
            more, note = _more_capacity(w, ro, load, cores, workers)  # even with warm pods
            patch = apply(patch, more)
            notes.append(note)
        if not patch:  # nothing to patch (a single instance): what to weigh, in words
            yield ctx.finding("PS032", t, msg, rel, fix="; ".join(n for n in notes if n))
            continue
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
    if ro.replicas == 1:  # a rollout of a single instance is a short outage: say so, change nothing
        note = (
            f"a single instance is down while pod {w.name}-0 is replaced: every rollout is an outage "
            "as long as the new pod takes to be Ready; if that is not acceptable, run a second "
            "replica where the app supports it (a PodDisruptionBudget guards drains, not rollouts)"
        )
        return {}, note
    if more is None:
        return {}, ""
    return {"spec": {"replicas": more[0]}}, f"{more[1]}, if the app can run that many"
