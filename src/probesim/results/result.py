"""The Result of one run, simulated or measured: series, events and summary, JSON-ready.

Series are numpy arrays indexed by tick; ``to_json`` gives the versioned document that
``probesim run --json`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

RESULT_VERSION = "probesim.dev/v1alpha1"

# Why a request failed. A request sent while the Service had no ready endpoint; to a pod whose
# container was not running or not yet listening; to a process that did not answer (hung);
# answered with a status ≥ 400; refused because the app's workers and queue were full (503);
# answered after the client's timeout; or lost in flight when its container stopped.
CAUSES = ("no_endpoint", "restarting", "not_answering", "error_status", "rejected", "timeout", "killed")


class Event(NamedTuple):
    """One state change, in ``kubectl get events`` vocabulary. Immutable, compared and hashed by
    its fields. A tuple, so that a run's events are made from its event log's rows at C speed
    (``from_rows``): an overloaded run writes a hundred thousand and more."""

    time_ms: int
    type: str  # Normal | Warning
    reason: str
    object: str  # pod/web-0, endpointslice/web, deployment/web
    message: str
    source: str = "kubelet"

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, str, str, str, str, str]]) -> list[Event]:
        """Events from (time_ms, type, reason, object, message, source) tuples: the same as
        ``[Event(*r) for r in rows]``, without a Python call per event (0.16 µs an event where
        the constructor takes 0.3 µs; 0.8 µs when Event was a frozen dataclass)."""
        new = tuple.__new__
        return [new(cls, r) for r in rows]

    def to_json(self) -> dict[str, Any]:
        return {
            "time": self.time_ms / 1000,
            "type": self.type,
            "reason": self.reason,
            "object": self.object,
            "message": self.message,
            "source": self.source,
        }


@dataclass
class Span:
    """A route's requests over one part of the run: the start-up ramp (from the run's start to
    the first time every workload behind the route had all its replicas Ready) or the steady
    state (from then to the end). Counts by the step the requests were settled in, as the
    series have them; latency of what was answered in it."""

    start_ms: int
    end_ms: int
    offered: int
    ok: int
    failed: dict[str, int]
    dropped: int = 0
    interrupted: int = 0
    in_flight: int = 0  # the steady state's: still awaited at the run's end
    latency_ms: dict[str, float] = field(default_factory=dict)

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    @property
    def error_rate(self) -> float:
        """Failed share of the requests that got an answer or failed (as RouteSummary's)."""
        done = self.ok + self.failed_total
        return self.failed_total / done if done else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start_ms / 1000,
            "end": self.end_ms / 1000,
            "offered": self.offered,
            "ok": self.ok,
            "failed": self.failed_total,
            "failedByCause": self.failed,
            "dropped": self.dropped,
            "interrupted": self.interrupted,
            "inFlight": self.in_flight,
            "errorRate": round(self.error_rate, 6),
            "latencyMs": self.latency_ms,
        }


@dataclass
class RouteSummary:
    name: str
    service: str
    offered: int
    ok: int
    failed: dict[str, int]
    dropped: int = 0  # arrivals that found no free VU (k6's dropped_iterations)
    interrupted: int = 0  # unanswered when the load generator stopped waiting
    # Still awaited by their clients when the run ended: offered = ok + failed + dropped +
    # interrupted + in_flight.
    in_flight: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)  # p50, p95, p99, max of the run
    envoy: dict[str, int] = field(default_factory=dict)  # the clients' sidecar stats, Envoy's names
    no_endpoint_s: float = 0.0  # time the Service had no ready endpoint while sending
    statuses: dict[int, int] = field(default_factory=dict)  # answers by HTTP status (the lab's)
    # The run split at the end of the start-up ramp (None: not split, e.g. a lab result; steady
    # None with a ramp: the workloads behind the route never all had their replicas Ready, and
    # the whole run is the ramp). The fields above stay the whole run's.
    ramp: Span | None = None
    steady: Span | None = None

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    @property
    def error_rate(self) -> float:
        """Failed share of the requests that got an answer or failed (as k6's http_req_failed)."""
        done = self.ok + self.failed_total
        return self.failed_total / done if done else 0.0


@dataclass
class WorkloadSummary:
    name: str
    kind: str
    replicas: int
    restarts: dict[str, int]  # pod → restarts (all containers)
    first_ready_ms: int | None  # first pod Ready
    all_ready_ms: int | None  # readyReplicas first reached spec.replicas
    min_ready: int
    avg_ready: float
    min_available: int

    @property
    def total_restarts(self) -> int:
        return sum(self.restarts.values())


@dataclass
class RolloutSummary:
    """One rollout of a Deployment or StatefulSet: from the action that changed its template to ``kubectl
    rollout status`` saying it is done (``end_ms``), or to the next rollout (``superseded_ms``),
    or the run's end; ``stalled_ms`` when its Progressing condition went False
    (ProgressDeadlineExceeded). Ready and available replicas at their lowest, and requests to
    the workload's Services failed by cause, over that span."""

    workload: str
    action: str  # rollout, rollback, restart, resume
    revision: str  # the ReplicaSet rolled out to
    origin: str  # which action made its template ("rollout at 1m", "the manifest's")
    start_ms: int
    end_ms: int | None
    stalled_ms: int | None
    superseded_ms: int | None
    min_ready: int
    min_available: int
    failed: dict[str, int]

    @property
    def outcome(self) -> str:
        if self.end_ms is not None:
            return "complete"
        if self.superseded_ms is not None:
            return "superseded"
        return "stalled" if self.stalled_ms is not None else "running"

    def to_json(self) -> dict[str, Any]:
        def s(ms: int | None) -> float | None:
            return None if ms is None else ms / 1000

        return {
            "workload": self.workload,
            "action": self.action,
            "replicaSet": self.revision,
            "template": self.origin,
            "outcome": self.outcome,
            "start": s(self.start_ms),
            "end": s(self.end_ms),
            "seconds": s(self.end_ms - self.start_ms) if self.end_ms is not None else None,
            "stalled": s(self.stalled_ms),
            "superseded": s(self.superseded_ms),
            "minReady": self.min_ready,
            "minAvailable": self.min_available,
            "failedByCause": self.failed,
            "failed": sum(self.failed.values()),
        }


@dataclass
class NodeSummary:
    """One node of a run that gives its nodes (spec.cluster.nodes): its zone, every pod bound to
    it during the run (in order) and those still there at its end (``terminating``: those of them
    deleted, not yet gone), and how long its Ready condition was not True (the node lifecycle
    controller's Unknown)."""

    name: str
    zone: str | None
    pods: list[str]
    pods_at_end: list[str]
    not_ready_ms: int
    terminating: list[str] = field(default_factory=list)  # of pods_at_end: deleted, not yet gone

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "zone": self.zone,
            "pods": self.pods,
            "podsAtEnd": self.pods_at_end,
            "terminating": self.terminating,
            "notReadySeconds": self.not_ready_ms / 1000,
        }


@dataclass
class Result:
    scenario: str
    seed: int
    step_ms: int
    duration_ms: int
    time_ms: npt.NDArray[np.int64]
    series: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    workloads: list[WorkloadSummary] = field(default_factory=list)
    routes: list[RouteSummary] = field(default_factory=list)
    source: str = "simulation"
    pod_series: dict[str, dict[str, npt.NDArray[np.int64]]] = field(
        default_factory=dict
    )  # pod → name → series
    hosts: dict[str, str] = field(default_factory=dict)  # the lab's upstream addresses → pod names
    rollouts: list[RolloutSummary] = field(default_factory=list)
    nodes: list[NodeSummary] = field(default_factory=list)  # empty: one implicit node
    pending: list[str] = field(default_factory=list)  # pods no node took by the run's end

    def workload(self, name: str) -> WorkloadSummary:
        return next(w for w in self.workloads if w.name == name)

    def route(self, name: str) -> RouteSummary:
        return next(r for r in self.routes if r.name == name)

    def after_ramp(self, name: str) -> tuple[int, int] | None:
        """The fewest Ready and available replicas of workload ``name`` from the end of its
        start-up ramp (the first time all its replicas were Ready) to the end of the run, from
        its series; None if they never all were. A result without an available series (a lab
        result from before rollouts ran in the lab) has Ready stand for it."""
        w = self.workload(name)
        ready = self.series.get(f"workload.{name}.ready")
        if w.all_ready_ms is None or ready is None:
            return None
        after = self.time_ms >= w.all_ready_ms
        if not after.any():
            return None
        available = self.series.get(f"workload.{name}.available", ready)
        return int(ready[after].min()), int(available[after].min())

    def events_for(self, obj: str | None = None, reason: str | None = None) -> list[Event]:
        return [
            e
            for e in self.events
            if (obj is None or e.object == obj) and (reason is None or e.reason == reason)
        ]

    def to_json(self, series: bool = True) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "apiVersion": RESULT_VERSION,
            "kind": "Result",
            "scenario": self.scenario,
            "source": self.source,
            "seed": self.seed,
            "step": self.step_ms / 1000,
            "duration": self.duration_ms / 1000,
            "summary": {
                "routes": [
                    {
                        "name": r.name,
                        "service": r.service,
                        "offered": r.offered,
                        "ok": r.ok,
                        "failed": r.failed_total,
                        "failedByCause": r.failed,
                        "dropped": r.dropped,
                        "interrupted": r.interrupted,
                        "inFlight": r.in_flight,
                        "latencyMs": r.latency_ms,
                        "noEndpointSeconds": r.no_endpoint_s,
                        "envoy": r.envoy,
                        "errorRate": round(r.error_rate, 6),
                    }
                    | (
                        # Added in place (the fields above keep their whole-run meaning): the
                        # start-up ramp's requests, and the steady state's after it (null: the
                        # ramp never ended).
                        {"ramp": r.ramp.to_json(), "steady": None if r.steady is None else r.steady.to_json()}
                        if r.ramp is not None
                        else {}
                    )
                    | (
                        {"statusCodes": {str(k): v for k, v in sorted(r.statuses.items())}}
                        if r.statuses
                        else {}
                    )
                    for r in self.routes
                ],
                "workloads": [
                    {
                        "name": w.name,
                        "kind": w.kind,
                        "replicas": w.replicas,
                        "restarts": w.total_restarts,
                        "restartsByPod": w.restarts,
                        "firstReady": None if w.first_ready_ms is None else w.first_ready_ms / 1000,
                        "allReady": None if w.all_ready_ms is None else w.all_ready_ms / 1000,
                        "minReady": w.min_ready,
                        "avgReady": round(w.avg_ready, 4),
                        "minAvailable": w.min_available,
                        # The fewest from the first time all replicas were Ready (null: never).
                        "minReadyAfterRamp": None if (a := self.after_ramp(w.name)) is None else a[0],
                        "minAvailableAfterRamp": None if a is None else a[1],
                    }
                    for w in self.workloads
                ],
            },
            "events": [e.to_json() for e in self.events],
        }
        if self.rollouts:
            doc["summary"]["rollouts"] = [r.to_json() for r in self.rollouts]
        if self.nodes:
            doc["summary"]["nodes"] = [n.to_json() for n in self.nodes]
            doc["summary"]["pendingPods"] = self.pending
        if series:
            doc["series"] = {
                "time": (self.time_ms / 1000).tolist(),
                **{k: v.tolist() for k, v in self.series.items()},
            }
        return doc
