"""The lab run's figures: samples taken every 50 ms while it runs (each workload's ready,
restarted and available pods, the requests failed so far) and the run's ``Result`` built from
them, the events and the routes' loads, in the shape the simulation's has (so that
``lab.compare`` compares them figure by figure)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from probesim.lab.limits import routes_to
from probesim.lab.pods import HOST, Pod
from probesim.lab.rollout import LabDeployment
from probesim.lab.service_proxy import ServiceProxy
from probesim.lab.traffic import TrafficRunner
from probesim.model.kubernetes import Workload, pod_names_of
from probesim.model.scenario import Scenario
from probesim.results import CAUSES, Event, Result, RouteSummary, WorkloadSummary

STEP_MS = 50


@dataclass
class Samples:
    """The workload's figures at each sample: time, ready pods, restarts, available pods."""

    workload: Workload
    rows: list[tuple[int, int, int, int]] = field(default_factory=list)
    all_ready: int | None = None

    def take(self, now: int, pods: list[Pod]) -> None:
        mine = [p for p in pods if p.workload == self.workload.name]
        active = [p for p in mine if not p.deleting and not p.gone]
        ready = sum(p.ready for p in active)
        min_ready_ms = self.workload.spec.min_ready_seconds * 1000
        available = sum(p.ready and p.ready_since + min_ready_ms <= now for p in active)
        self.rows.append((now, ready, sum(p.run.restarts for p in mine), available))
        if self.all_ready is None and ready >= self.workload.spec.replicas:
            self.all_ready = now

    def column(self, i: int) -> np.ndarray:
        return np.array([r[i] for r in self.rows], dtype=np.int64)


class Recorder:
    """Samples of each workload the lab runs, of those run beside one (a canary's other
    Deployments: their ready pods and restarts only), and the requests failed so far — over all
    routes, and over each workload's own."""

    def __init__(self, scenario: Scenario, workloads: list[Workload], beside: list[Workload]) -> None:
        self.own = [Samples(w) for w in workloads]
        self.beside = [Samples(w) for w in beside]
        self.routes = {w.name: {t.label for t in routes_to(scenario, [w])} for w in workloads}
        self.failed_so_far: list[dict[str, int]] = []
        self.failed_of: dict[str, list[dict[str, int]]] = {w.name: [] for w in workloads}

    def take(self, now: int, pods: list[Pod], traffic: TrafficRunner) -> None:
        for s in (*self.own, *self.beside):
            s.take(now, pods)
        self.failed_so_far.append(traffic.failed_so_far())
        for name, labels in self.routes.items():
            self.failed_of[name].append(traffic.failed_so_far(labels))

    def result(
        self,
        scenario: Scenario,
        duration_s: float,
        pods: list[Pod],
        events: list[Event],
        traffic: TrafficRunner,
        deployments: dict[str, LabDeployment],
        proxies: list[ServiceProxy],
        wall_t0: float | None = None,
    ) -> Result:
        """The run's result; ``wall_t0``: the scenario's start (Unix s), to place each failed
        request at its send time (``route.<name>.failed_sent``, as the simulation counts them)."""
        events.sort(key=lambda e: e.time_ms)
        times = self.own[0].column(0) if self.own else np.zeros(0, np.int64)
        series: dict[str, np.ndarray] = {}
        summaries = []
        rollouts = []
        for own in self.own:
            w = own.workload
            ready, available = own.column(1), own.column(3)
            names = {p.name for p in pods if p.workload == w.name}
            summaries.append(
                WorkloadSummary(
                    name=w.name,
                    kind=w.kind,
                    replicas=w.spec.replicas,
                    restarts={p.name: p.run.restarts for p in pods if p.workload == w.name},
                    first_ready_ms=_first_ready(events, names),
                    all_ready_ms=own.all_ready,
                    min_ready=int(ready.min()) if ready.size else 0,
                    avg_ready=float(np.mean(ready)) if ready.size else 0.0,
                    min_available=int(available.min()) if available.size else 0,
                )
            )
            series[f"workload.{w.name}.ready"] = ready
            series[f"workload.{w.name}.restarts"] = own.column(2)
            series[f"workload.{w.name}.available"] = available
        for s in self.beside:
            series[f"workload.{s.workload.name}.ready"] = s.column(1)
            series[f"workload.{s.workload.name}.restarts"] = s.column(2)
        for name, deployment in deployments.items():
            series |= deployment.series(times)
            rollouts += deployment.summaries(
                times,
                series[f"workload.{name}.ready"],
                series[f"workload.{name}.available"],
                self.failed_of[name],
            )
        routes = []
        loads = [
            (name, traffic.service_of(next(t for t in traffic.routes if t.label == name)), res)
            for name, res in traffic.loads.items()
        ]
        loads += [(name, proxy.service, res) for proxy in proxies for name, res in proxy.loads.items()]
        for name, service, res in loads:
            failed = {c: res.failed.get(c, 0) for c in CAUSES}
            # As the simulation counts them: offered includes the iterations dropped for want of
            # a VU; what is neither answered, failed nor interrupted was still awaited at the end.
            # Those the lab itself refused (lab.headroom) are none of these: named beside the result.
            waiting = res.sent - res.ok - sum(failed.values()) - res.interrupted - res.failed.get("lab", 0)
            if wall_t0 is not None and name in traffic.loads:
                sent = np.sort([(end - ms / 1000 - wall_t0) * 1000 for end, ms, bad in res.trail if bad])
                series[f"route.{name}.failed_sent"] = np.searchsorted(sent, times, side="left").astype(
                    np.int64
                )
            routes.append(
                RouteSummary(
                    name,
                    service,
                    res.sent + res.dropped,
                    res.ok,
                    failed,
                    dropped=res.dropped,
                    interrupted=res.interrupted,
                    in_flight=max(waiting, 0),
                    envoy=traffic.envoy_counters(service),
                    statuses=dict(res.statuses),
                    latency_ms=res.latency_ms(),
                )
            )
        return Result(
            scenario=scenario.name,
            seed=scenario.spec.seed,
            step_ms=STEP_MS,
            duration_ms=round(duration_s * 1000),
            time_ms=times,
            series=series,
            rollouts=rollouts,
            events=events,
            workloads=[*summaries, *(_beside(s, pods, events) for s in self.beside)],
            routes=routes,
            source="lab",
            # As the client sidecars' outlier log names them: a pod's port, or its sidecar's.
            hosts={f"{HOST}:{p.inbound or p.port}": p.name for p in pods},
        )


def _first_ready(events: list[Event], names: set[str]) -> int | None:
    return min(
        (e.time_ms for e in events if e.reason == "PodReady" and e.object.removeprefix("pod/") in names),
        default=None,
    )


def _beside(s: Samples, pods: list[Pod], events: list[Event]) -> WorkloadSummary:
    o = s.workload
    ready = s.column(1)
    return WorkloadSummary(
        name=o.name,
        kind=o.kind,
        replicas=o.spec.replicas,
        restarts={p.name: p.run.restarts for p in pods if p.workload == o.name},
        first_ready_ms=_first_ready(events, set(pod_names_of(o))),
        all_ready_ms=None,
        min_ready=int(ready.min()) if ready.size else 0,
        avg_ready=float(np.mean(ready)) if ready.size else 0.0,
        min_available=0,
    )
