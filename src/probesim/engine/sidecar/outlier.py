"""Envoy's outlier detection as one client sidecar holds it: the settings after Istio's
translation (Detector), each client's per-host state (Client: cluster membership, ejections,
consecutive counters, success-rate buckets, the merge window), and the Envoy counters of a
route's sidecars (SidecarStats). The detection itself is ejection.py's.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.mesh.istio import OutlierDetection, ms

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

LONG_AGO = -(10**15)
NEVER = np.iinfo(np.int64).max // 4

# Ejection types (OutlierEjectionType) and the stat suffix of each (outlier_detection_impl.cc).
STAT = {
    "CONSECUTIVE_5XX": "consecutive_5xx",
    "CONSECUTIVE_GATEWAY_FAILURE": "consecutive_gateway_failure",
    "CONSECUTIVE_LOCAL_ORIGIN_FAILURE": "consecutive_local_origin_failure",
    "SUCCESS_RATE": "success_rate",
    "SUCCESS_RATE_LOCAL_ORIGIN": "local_origin_success_rate",
    "FAILURE_PERCENTAGE": "failure_percentage",
    "FAILURE_PERCENTAGE_LOCAL_ORIGIN": "local_origin_failure_percentage",
}


@dataclass
class Detector:
    """Envoy's outlier detection settings after Istio's translation (§4.2-4.3)."""

    consecutive_5xx: int = 5
    enforce_5xx: int = 100
    consecutive_gateway: int = 5
    enforce_gateway: int = 0
    interval: int = 10_000
    base: int = 30_000
    max_time: int = 300_000
    max_percent: int = 10
    panic: float = 0.0
    # Success rate and failure percentage (§1.6-1.9, §1.16-1.20): Istio emits enforcing 0 for the
    # first and never enables the second, so they detect but do not eject.
    enforce_sr: int = 0
    sr_min_hosts: int = 5
    sr_volume: int = 100
    sr_stdev: float = 1.9
    enforce_fp: int = 0
    fp_threshold: int = 85
    fp_min_hosts: int = 5
    fp_volume: int = 50
    # Split mode (§2.2, §4.2.7): local-origin failures (connect failures, timeouts) apart from
    # the 5xx and gateway counters, with their own counter and success-rate buckets.
    split: bool = False
    consecutive_local: int = 5
    enforce_local: int = 100
    enforce_local_sr: int = 0  # Istio writes enforcing_local_origin_success_rate: 0
    enforce_local_fp: int = 0

    @classmethod
    def from_istio(cls, od: OutlierDetection) -> Detector:
        d = cls()
        if od.consecutive_5xx_errors is not None:
            d.consecutive_5xx, d.enforce_5xx = (
                od.consecutive_5xx_errors,
                (100 if od.consecutive_5xx_errors > 0 else 0),
            )
        if od.consecutive_gateway_errors is not None:
            d.consecutive_gateway = od.consecutive_gateway_errors
            d.enforce_gateway = 100 if od.consecutive_gateway_errors > 0 else 0
        d.interval = ms(od.interval) or d.interval
        d.base = ms(od.base_ejection_time) or d.base
        d.max_time = max(300_000, d.base)
        if od.max_ejection_percent:
            d.max_percent = od.max_ejection_percent
        d.panic = float(od.min_health_percent or 0)
        d.split = bool(od.split_external_local_origin_errors)
        if d.split and od.consecutive_local_origin_failures:
            d.consecutive_local = od.consecutive_local_origin_failures
        return d


def _zeros(n: int) -> I64:
    return np.zeros(n, np.int64)


@dataclass
class Client:
    """One sidecar's view of one cluster, per endpoint pod (index = pod)."""

    n: int
    cursor: int = 0
    member: B = field(init=False)  # in the cluster (EDS) as last seen: monitored hosts
    ejected: B = field(init=False)  # the detector's FAILED_OUTLIER_CHECK
    visible: B = field(init=False)  # ejected as the load balancer last got it
    c5xx: I64 = field(init=False)
    cgw: I64 = field(init=False)
    clocal: I64 = field(init=False)
    backoff: I64 = field(init=False)
    ejected_at: I64 = field(init=False)
    unejected_at: I64 = field(init=False)
    num_ejections: I64 = field(init=False)
    # This interval's success-rate buckets: external origin (HTTP codes) and local origin.
    rq: I64 = field(init=False)
    rq_failed: I64 = field(init=False)
    lrq: I64 = field(init=False)
    lrq_failed: I64 = field(init=False)
    next_tick: int | None = None
    # Merge-window times are keys 2 × ms + lag: an ejection caused by a request happens just
    # after the request was sent (lag 1), a tick or membership change at its instant (lag 0).
    last_update: int = LONG_AGO  # the last health delivery to the load balancer
    pending: int | None = None  # when merged health changes are delivered
    seen: bool = False  # membership known (the route has sent)
    # Detections caused by a timeout, waiting for the route's timer: (time, check order, host,
    # kind), a heap; ``waiting`` marks their hosts (no new detection is looked for meanwhile).
    due: list[tuple[int, int, int, str]] = field(default_factory=list)
    waiting: B = field(init=False)
    # The endpoints array ``member`` was last checked against (the loop makes a new one when
    # they change), and _plain's (view, visible, healthy hosts, every bad host ejected).
    member_of: B | None = None
    healthy_of: tuple[object, B, int, bool] | None = None
    # Kept-alive connections (pool.py): an idle one per host, and when the request hung on one
    # to a dead host ends.
    pooled: B = field(init=False)
    held_until: I64 = field(init=False)
    # When the connection whose connect timeout fails the pending requests to a host was opened
    # (Envoy fails them all at once: ConnPoolImplBase::purgePendingStreams).
    connect_from: I64 = field(init=False)

    def __post_init__(self) -> None:
        n = self.n
        self.member, self.ejected, self.visible = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        self.waiting = np.zeros(n, bool)
        self.pooled = np.zeros(n, bool)
        self.held_until = _zeros(n)
        self.connect_from = np.full(n, LONG_AGO, np.int64)
        for name in (
            "c5xx",
            "cgw",
            "clocal",
            "backoff",
            "num_ejections",
            "rq",
            "rq_failed",
            "lrq",
            "lrq_failed",
        ):
            setattr(self, name, _zeros(n))
        self.ejected_at = np.full(n, -1, np.int64)
        self.unejected_at = np.full(n, -1, np.int64)

    def forget(self, hosts: B) -> None:
        """Hosts removed from the cluster: their monitors go, with any ejection (§2.10)."""
        self.ejected[hosts] = self.visible[hosts] = self.pooled[hosts] = False
        self.held_until[hosts] = 0
        self.connect_from[hosts] = LONG_AGO
        for a in (self.c5xx, self.cgw, self.clocal, self.backoff, self.num_ejections):
            a[hosts] = 0
        for a in (self.rq, self.rq_failed, self.lrq, self.lrq_failed):
            a[hosts] = 0
        self.ejected_at[hosts] = self.unejected_at[hosts] = -1
        if self.waiting[hosts].any():  # a timeout still to fire finds no monitor
            self.due = [d for d in self.due if not hosts[d[2]]]
            heapq.heapify(self.due)
            self.waiting[hosts] = False

    def due_at(self) -> int | None:
        """The time of the next timeout detection (it happens just after requests of that ms)."""
        return self.due[0][0] if self.due else None


@dataclass
class SidecarStats:
    """Envoy's cluster counters for one route's sidecars, summed over its clients: outlier
    detection (``ejections_*``), faults, panic, retries and mirroring."""

    ejections_enforced_total: int = 0
    ejections_overflow: int = 0
    ejections_detected_consecutive_5xx: int = 0
    ejections_detected_consecutive_gateway_failure: int = 0
    ejections_detected_consecutive_local_origin_failure: int = 0
    ejections_detected_success_rate: int = 0
    ejections_detected_local_origin_success_rate: int = 0
    ejections_detected_failure_percentage: int = 0
    ejections_detected_local_origin_failure_percentage: int = 0
    ejections_enforced_consecutive_5xx: int = 0
    ejections_enforced_consecutive_gateway_failure: int = 0
    ejections_enforced_consecutive_local_origin_failure: int = 0
    ejections_enforced_success_rate: int = 0
    ejections_enforced_local_origin_success_rate: int = 0
    ejections_enforced_failure_percentage: int = 0
    ejections_enforced_local_origin_failure_percentage: int = 0
    # Deprecated counters Envoy still keeps: ejections_total (5xx and success rate, counted when
    # the cap lets the ejection through), ejections_consecutive_5xx, ejections_success_rate.
    ejections_total: int = 0
    ejections_consecutive_5xx: int = 0
    ejections_success_rate: int = 0
    aborts_injected: int = 0
    delays_injected: int = 0
    no_healthy_upstream: int = 0
    lb_healthy_panic: int = 0
    upstream_rq_retry: int = 0
    mirrored: int = 0

    def bump(self, name: str, by: int = 1) -> None:
        setattr(self, name, getattr(self, name) + by)
