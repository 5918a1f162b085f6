"""The run's summary, built once the loop is done (Summary): per route (counts by cause, latency
quantiles of the run, time without a ready endpoint, the sidecars' stats), per workload
(restarts, first and full readiness, minimum ready and available), per rollout (its span and the
requests that failed during it), and the Result that carries them with the series and events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.containers import Containers
from probesim.engine.controllers.workloads import Controllers, size_series
from probesim.engine.distributions import grid_quantiles
from probesim.engine.fleet import Fleet
from probesim.engine.nodes import Nodes
from probesim.engine.pod_status import PodStatus
from probesim.engine.sidecar.split import Sidecars
from probesim.engine.traffic import Traffic
from probesim.kube.arithmetic import replica_set_name
from probesim.model.scenario import Scenario
from probesim.results import (
    CAUSES,
    Event,
    NodeSummary,
    Result,
    RolloutSummary,
    RouteSummary,
    Span,
    WorkloadSummary,
)

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass
class TrackedRollout:
    """A rollout under way: what started it, toward which template, and how it went (the loop
    tracks it, the summary reports it)."""

    wi: int
    kind: str  # the action that started it
    template: int
    start: int
    end: int | None = None
    stalled: int | None = None
    superseded: int | None = None


class Summary:
    """The summary of a finished run, from what its parts hold."""

    def __init__(
        self,
        scenario: Scenario,
        fleet: Fleet,
        ctr: Containers,
        controllers: Controllers,
        mesh: dict[int, Sidecars],
        rollouts: list[TrackedRollout],
        admitted_at: I64,
        first_ready: I64,
        traffic: Traffic,
        events: list[Event],
        nodes: Nodes | None = None,
        pods: PodStatus | None = None,
    ) -> None:
        self.scenario, self.spec, self.fleet, self.ctr = scenario, scenario.spec, fleet, ctr
        self.controllers, self.mesh, self.rollouts = controllers, mesh, rollouts
        self.admitted_at, self.first_ready = admitted_at, first_ready
        self.traffic = traffic
        self.events = events
        self.nodes, self.pods = nodes, pods

    def _nodes(self, times: I64, rec: dict[str, I64]) -> tuple[list[NodeSummary], list[str]]:
        """Each node's pods (bound over the run, in order; left at its end) and time not Ready,
        and the pods still waiting for one at the end (none without spec.cluster.nodes)."""
        n = self.nodes
        if n is None or not n.explicit or self.pods is None:
            return [], []
        gone, deleting = self.pods.gone, self.pods.deleting
        names = self.fleet.pod_names
        order = np.argsort(n.bound_at, kind="stable")
        order = order[n.bound_at[order] < INF]
        out = []
        for i, name in enumerate(n.names):
            mine = order[n.pod_node[order] == i]
            ready = rec[f"node.{name}.ready"]
            existed = (times >= n.created_at[i]) & (times < n.removed_at[i])  # (a pool upgrade's nodes)
            out.append(
                NodeSummary(
                    name=name,
                    zone=n.zones[i] or None,
                    pods=[names[p] for p in mine.tolist()],
                    pods_at_end=[names[p] for p in mine.tolist() if not gone[p]],
                    not_ready_ms=int(((ready == 0) & existed).sum()) * self.spec.step,
                    terminating=[names[p] for p in mine.tolist() if deleting[p] and not gone[p]],
                )
            )
        return out, [names[p] for p in n.pending]

    def _rollout_summaries(self, times: I64, rec: dict[str, I64]) -> list[RolloutSummary]:
        f = self.fleet
        out = []
        for r in self.rollouts:
            w = self.scenario.workloads[r.wi]
            stop = r.end if r.end is not None else r.superseded
            span = (times >= r.start) & (times <= stop if stop is not None else True)
            key = f"workload.{w.name}"
            failed: dict[str, int] = {}
            for route in f.routes:
                if not (route.selects & (f.pod_workload == r.wi)).any():
                    continue
                for c in CAUSES:
                    failed[c] = failed.get(c, 0) + int(rec[f"route.{route.name}.{c}"][span].sum())
            plan = f.plans[r.wi]
            run = self.controllers.rs.get((r.wi, r.template))  # a Deployment's (adopted or not)
            out.append(
                RolloutSummary(
                    workload=w.name,
                    action=r.kind,
                    revision=run.name if run else replica_set_name(w.name, plan.revisions[r.template].key),
                    origin=plan.revisions[r.template].origin,
                    start_ms=r.start,
                    end_ms=r.end,
                    stalled_ms=r.stalled,
                    superseded_ms=r.superseded,
                    min_ready=int(rec[f"{key}.ready"][span].min()) if span.any() else 0,
                    min_available=int(rec[f"{key}.available"][span].min()) if span.any() else 0,
                    failed={c: n for c, n in failed.items() if n},
                )
            )
        return out

    def _spans(self, ri: int, times: I64, rec: dict[str, I64]) -> tuple[Span, Span | None]:
        """Route ``ri``'s start-up ramp and steady state (None: the ramp never ended)."""
        key = f"route.{self.fleet.routes[ri].name}"
        end = self.traffic.ramp_end[ri]
        cut = self.spec.duration if end is None else end
        ramp_cdf = self.traffic.ramp_cdf[ri] if end is not None else self.traffic.latency_cdf[ri]
        out = []
        parts = ((0, cut, ramp_cdf), (cut, self.spec.duration, self.traffic.latency_cdf[ri] - ramp_cdf))
        for start, stop, cdf in parts:
            part = (times >= start) & (times < stop)
            out.append(
                Span(
                    start_ms=start,
                    end_ms=stop,
                    offered=int(rec[f"{key}.offered"][part].sum()),
                    ok=int(rec[f"{key}.ok"][part].sum()),
                    failed={c: int(rec[f"{key}.{c}"][part].sum()) for c in CAUSES},
                    dropped=int(rec[f"{key}.dropped"][part].sum()),
                    interrupted=int(rec[f"{key}.interrupted"][part].sum()),
                    in_flight=int(rec[f"{key}.inflight"][-1]) if start == cut and part.any() else 0,
                    latency_ms=self._route_latency(ri, rec[f"{key}.max_ms"][part], cdf),
                )
            )
        return out[0], (out[1] if end is not None else None)

    def _route_latency(self, ri: int, max_series: I64, cdf: F64 | None = None) -> dict[str, float]:
        """p50/p90/p95/p99 of every answered request of the run (or of ``cdf``, a part of it),
        and the largest seen."""
        if cdf is None:
            cdf = self.traffic.latency_cdf[ri]
        if cdf[-1] <= 1e-9 or not max_series.size:
            return {}
        # As a load generator sees it: a request it gave up on took its timeout.
        cap = float(self.fleet.routes[ri].timeout)
        p50, p90, p95, p99 = (min(q, cap) for q in grid_quantiles(cdf / cdf[-1], (0.5, 0.9, 0.95, 0.99)))
        return {
            "p50": round(p50, 1),
            "p90": round(p90, 1),
            "p95": round(p95, 1),
            "p99": round(p99, 1),
            # Each step's max is read at its own count's top quantile: over many light steps the
            # run's p99 can lie above all of them, and a max below p99 is no max.
            "max": max(float(max_series.max()), round(p99, 1)),
        }

    def _no_endpoint_seconds(self, ri: int, rec: dict[str, I64]) -> float:
        """How long route ``ri``'s Service had no ready endpoint while the route sent traffic."""
        # By index: routes.index() compares Routes field by field, and two equal traffic
        # entries reach their numpy fields, whose truth value is ambiguous.
        route = self.fleet.routes[ri]
        ready = rec[f"service.{route.service.name}.ready"]
        active = self.traffic.rates[ri] > 0
        return float(((ready == 0) & active).sum() * self.spec.step / 1000)

    def result(self, times: I64, rec: dict[str, I64], wl_pods: list[I64]) -> Result:
        f = self.fleet
        spec = self.spec
        routes = []
        for ri, r in enumerate(f.routes):
            key = f"route.{r.name}"
            ramp, steady = self._spans(ri, times, rec)
            routes.append(
                RouteSummary(
                    name=r.name,
                    service=r.service.name,
                    offered=int(rec[f"{key}.offered"].sum()),
                    ok=int(rec[f"{key}.ok"].sum()),
                    failed={c: int(rec[f"{key}.{c}"].sum()) for c in CAUSES},
                    dropped=int(rec[f"{key}.dropped"].sum()),
                    interrupted=int(rec[f"{key}.interrupted"].sum()),
                    in_flight=int(rec[f"{key}.inflight"][-1]) if times.size else 0,
                    latency_ms=self._route_latency(ri, rec[f"{key}.max_ms"]),
                    no_endpoint_s=self._no_endpoint_seconds(ri, rec),
                    envoy=dict(vars(self.mesh[ri].stats)) if ri in self.mesh else {},
                    ramp=ramp,
                    steady=steady,
                )
            )
        workloads = []
        pod_restarts = np.zeros(f.n_pods, np.int64)
        np.add.at(pod_restarts, f.container_pod, self.ctr.restart_count)
        for i, w in enumerate(self.scenario.workloads):
            pods = wl_pods[i][self.admitted_at[wl_pods[i]] < INF]  # pods that existed
            key = f"workload.{w.name}"
            ready = rec[f"{key}.ready"]
            full = np.flatnonzero(ready >= w.spec.replicas)
            fr = self.first_ready[pods]
            restarts = {f.pod_names[p]: int(pod_restarts[p]) for p in pods.tolist()}
            workloads.append(
                WorkloadSummary(
                    name=w.name,
                    kind=w.kind,
                    replicas=w.spec.replicas,
                    restarts=restarts,
                    first_ready_ms=int(fr.min()) if fr.size and fr.min() < INF else None,
                    all_ready_ms=int(times[full[0]]) if full.size and w.spec.replicas > 0 else None,
                    min_ready=int(ready.min()) if ready.size else 0,
                    avg_ready=float(ready.mean()) if ready.size else 0.0,
                    min_available=int(rec[f"{key}.available"].min()) if ready.size else 0,
                )
            )
        node_summaries, pending = self._nodes(times, rec)
        return Result(
            nodes=node_summaries,
            pending=pending,
            rollouts=self._rollout_summaries(times, rec),
            scenario=self.scenario.name,
            seed=spec.seed,
            step_ms=spec.step,
            duration_ms=spec.duration,
            time_ms=times,
            series=rec | size_series(times, self.controllers.sizes),
            events=self.events,
            workloads=workloads,
            routes=routes,
        )
