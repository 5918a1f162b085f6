"""Client sidecars (Envoy as Istio configures it) in front of a Service's endpoints: each client
population decides alone. Per client and step, counts only:

- load balancing over the endpoints that are not ejected (round robin continuing from its index,
  least request and random as an even or drawn split), with the panic threshold (§3.2-3.3);
- outlier detection: consecutive 5xx, gateway and (split mode) local-origin errors counted per
  host as results arrive, detection at the Nth (immediate, §2.3) within the cap that counts the
  host being ejected (§2.4), ejection time base × multiplier capped at max, unejection, success
  rate, failure percentage and multiplier decay only on interval ticks (§2.5-2.8);
- host health reaching the load balancer through the cluster manager's merge window: a change
  within a window of the last one waits for the window's end;
- hosts that leave the cluster (out of the endpoints) lose their monitor and ejection;
- a timed-out request reaching its host's monitor when the route's timer fires (the request's
  time + the timeout), not when it was sent;
- fault injection before sending (aborts never reach a host: no outlier update, no retry, §5.1);
- retries of connect failures (Istio's default retry_on) onto other hosts;
- mirroring as counted copies;
- traffic splits (a VirtualService route's weighted destinations: subsets of a DestinationRule,
  other hosts): a cluster per destination, each with its sidecars' own load balancer and
  detector (SplitRoute), the requests of a step shared out by weight deterministically.

A client's requests in a step are spread evenly over it (the route's k-th request of the step at
``t + k × step / n``, client ``k mod clients``), and the step is cut at each change a request can
see (an ejection, a tick, a delivered health update), so a host gets exactly the errors it
returns before its ejection reaches the load balancer, and ejections carry the time of the
request that caused them whatever the step.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.fleet import Fleet, Route
from probesim.manifests.kubernetes import container_port
from probesim.mesh.envoy import DEFAULT_RETRY_ON, cluster_name
from probesim.mesh.istio import DestinationRule, HTTPRoute, OutlierDetection, TrafficPolicy, find_route, ms
from probesim.model.kubernetes import Service
from probesim.model.scenario import Scenario, Traffic
from probesim.results import Event

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

# Endpoint categories from the traffic step: 1 refused, 2 hung, 3 error status, 4 ok (3 may be < 500).
REFUSED, HUNG, ERROR, OK = 1, 2, 3, 4

# The cluster manager delivers health changes to the workers' load balancers at once only when
# the previous delivery is more than `update_merge_window` old (default 1 s, which Istio leaves
# unset); otherwise they wait for a timer started at the change (cluster_manager_impl.cc,
# scheduleUpdate). Membership changes are never merged and carry pending ones with them.
MERGE_WINDOW_MS = 1000
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

    def __post_init__(self) -> None:
        n = self.n
        self.member, self.ejected, self.visible = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        self.waiting = np.zeros(n, bool)
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
        self.ejected[hosts] = self.visible[hosts] = False
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
class Stats:
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


def _rr_times(at: Callable[[int], int], start: int, order: I64, k: int) -> Callable[[int, int], int]:
    """Round robin: the time of host ``i``'s ``x``-th request of a chunk."""
    return lambda i, x: at(start + int(order[i]) + (x - 1) * k)


def _drawn_times(at: Callable[[int], int], start: int, drawn: I64, avail: int) -> Callable[[int, int], int]:
    """Random picks: host ``i``'s ``x``-th request of a chunk, spread evenly over it."""
    return lambda i, x: at(start + min(avail - 1, max(0, -(-x * avail // max(int(drawn[i]), 1)) - 1)))


class _HostView:
    """What each host of a step answers (the same for every client): refused, hung, the status
    a sidecar sees (503 refused, 504 or none hung), whether a failure is retried, whether the
    answer is good, and whether it counts toward any ejection."""

    def __init__(self, route: MeshRoute, in_eps: B, cat: I64, status: I64) -> None:
        self.members = np.flatnonzero(in_eps)
        self.refused = cat == REFUSED
        # A hung host answers nothing: with a route or per-try timeout the sidecar gives up
        # with 504 (reported as a local-origin timeout, §2.1.3); without one it just waits.
        self.hung = cat == HUNG
        st = np.where(self.refused, 503, np.where(cat == ERROR, status, 200))
        self.st = np.where(self.hung, 504 if route.times_out else 0, st)  # 0: no answer, nothing reported
        self.retriable = route._retriable(self.refused, self.hung, self.st)
        self.retries = bool(self.retriable[self.members].any())  # any host's failure retried
        self.good = (self.st > 0) & (self.st < 500)
        # A 5xx, a connect failure or a timeout: a host that can move an outlier counter.
        self.counts = (self.st >= 500) | self.refused | self.hung
        self.bad = self.counts | self.retriable  # hosts whose requests need the full pass
        self.bad_members = self.members[self.bad[self.members]]
        self.in_eps, self.cat, self.status = in_eps, cat, status  # what it was made of


class MeshRoute:
    """The sidecars of one traffic route's clients."""

    _view: _HostView  # the hosts as this step's requests find them (set by send)

    def __init__(
        self,
        name: str,
        host_pods: I64,
        upstreams: list[str],
        cluster: str,
        clients: int,
        rule: DestinationRule | None,
        route: HTTPRoute | None,
        lb: str,
        rng: np.random.Generator,
        step: int = 1000,
    ) -> None:
        self.name = name
        self.pods = host_pods  # the Service's pods, in pod order (the cluster's hosts)
        self.upstreams = upstreams  # "ip:port" per host, for the event log
        self.cluster = cluster
        self.rng = rng
        self.step = step
        self.merge_window = MERGE_WINDOW_MS
        policy = rule.spec.traffic_policy if rule else None
        od = policy.outlier_detection if policy else None
        self.detector = Detector.from_istio(od) if od is not None else None
        self.split = bool(self.detector and self.detector.split)
        self.panic = self.detector.panic if self.detector else 50.0  # Envoy's default without the block
        self.lb = lb
        self.clients = [Client(host_pods.size) for _ in range(clients)]
        # The counters a plain round robin pass updates, as one clients × hosts array each
        # (every client's own arrays are its rows), so that the clients step together.
        self._rq = np.zeros((clients, host_pods.size), np.int64)
        self._c5xx = np.zeros((clients, host_pods.size), np.int64)
        self._cgw = np.zeros((clients, host_pods.size), np.int64)
        for ci, c in enumerate(self.clients):
            c.rq, c.c5xx, c.cgw = self._rq[ci], self._c5xx[ci], self._cgw[ci]
        for c in self.clients:
            c.cursor = int(rng.integers(0, max(host_pods.size, 1)))  # Envoy seeds the index at random
            c.next_tick = self.detector.interval if self.detector else None
        self.route = route
        f = route.fault if route else None
        self.abort = (
            (f.abort.percentage.value / 100 if f and f.abort and f.abort.percentage else 0.0) if f else 0.0
        )
        self.delay = (
            (f.delay.percentage.value / 100 if f and f.delay and f.delay.percentage else 0.0) if f else 0.0
        )
        retries = route.retries if route else None
        self.retries = 2 if retries is None else max(retries.attempts, 0)
        retry_on = [
            x.strip()
            for x in (retries.retry_on if retries and retries.retry_on else DEFAULT_RETRY_ON).split(",")
        ]
        self.retry_connect = self.retries > 0 and bool(
            {"connect-failure", "reset", "5xx", "gateway-error"} & set(retry_on)
        )
        self.retry_5xx = self.retries > 0 and "5xx" in retry_on
        self.retry_gateway = self.retries > 0 and ("gateway-error" in retry_on or self.retry_5xx)
        self.retry_codes = {int(x) for x in retry_on if x.isdigit()} if self.retries > 0 else set()
        # A per-try timeout is retried only as a reset (§5.5.4).
        self.retry_timeout = self.retries > 0 and bool({"5xx", "gateway-error", "reset"} & set(retry_on))
        timeout = (route.retries.per_try_timeout if route and route.retries else None) or (
            route.timeout if route else None
        )
        self.times_out = timeout is not None and ms(timeout) not in (None, 0)
        # When a timed-out request reaches outlier detection: the router's timer fires
        # onResponseTimeout (global timeout, armed at onRequestComplete) or the per-try timeout,
        # whichever is first; both call updateOutlierDetection(LocalOriginTimeout) (router.cc).
        limits = [
            ms(x)
            for x in (
                route.retries.per_try_timeout if route and route.retries else None,
                route.timeout if route else None,
            )
            if x
        ]
        self.timeout_ms = min((v for v in limits if v), default=0)
        mirror = 0.0
        if route is not None:
            if route.mirror is not None:
                mirror = route.mirror_percentage.value / 100 if route.mirror_percentage else 1.0
            mirror += sum((m.percentage.value / 100 if m.percentage else 1.0) for m in route.mirrors)
        self.mirror = mirror
        self.stats = Stats()
        self.n_ejected = 0  # hosts ejected now, over all clients
        self._last_view: _HostView | None = None  # kept while the loop passes the same arrays
        # _batch's (view, clients' visible arrays, hosts, host counts, places), kept while the same.
        self._batch_hosts: tuple[_HostView, list[B], B, I64, I64] | None = None
        self.mirrored_now = 0  # copies sent this step
        self.sent = 0  # requests of the run so far (which client sends the next)
        self.events: list[Event] = []

    # -- health reaching the load balancer -----------------------------------------------------

    def _changed(self, c: Client, key: int) -> None:
        """A host's health changed (ejection or unejection; ``key`` its time as 2 × ms + lag):
        the load balancer gets the state at once, or when the merge window's timer fires."""
        w = 2 * self.merge_window
        if w > 0 and key - c.last_update <= w:
            if c.pending is None:
                c.pending = key + w
            return
        c.pending = None
        c.visible = c.ejected.copy()
        c.last_update = key

    def _deliver(self, c: Client) -> None:
        assert c.pending is not None
        c.visible = c.ejected.copy()
        c.last_update, c.pending = c.pending, None

    def _members(self, t: int, c: Client, in_eps: B) -> None:
        """The cluster's hosts as the route sends at ``t``: removed hosts lose their monitor
        (and ejection: no unejection is logged); a membership change reaches the load balancer
        at once, with any merged health change. Changes before the route's first request count
        as long before."""
        if c.member_of is in_eps:
            return
        c.member_of = in_eps
        if np.array_equal(c.member, in_eps):
            return
        gone = c.member & ~in_eps
        self.n_ejected -= int(c.ejected[gone].sum())
        c.forget(gone)
        c.member = in_eps.copy()
        c.visible = c.ejected.copy()
        c.pending = None
        if c.seen:
            c.last_update = 2 * t
        c.seen = True

    # -- the interval timer --------------------------------------------------------------------

    def tick(self, t: int) -> None:
        """Interval ticks and merged deliveries due by ``t`` (§2.5-2.6), for every client."""
        for ci, c in enumerate(self.clients):
            self._advance(ci, c, t)

    def _advance(self, ci: int, c: Client, until: int) -> None:
        """In time order: merged deliveries before ``until`` (a request sent at the timer's
        instant was picked before it fires), interval ticks at or before it."""
        while True:
            # Keys 2 × ms + lag: a timeout's detection comes just after requests of its ms.
            keys = []
            if c.pending is not None and c.pending <= 2 * until:
                keys.append((c.pending, 0))
            if c.next_tick is not None and c.next_tick <= until:
                keys.append((2 * c.next_tick, 1))
            if c.due and c.due[0][0] < until:
                keys.append((2 * c.due[0][0] + 1, 2))
            if not keys:
                return
            which = min(keys)[1]
            if which == 0:
                self._deliver(c)
            elif which == 1:
                assert c.next_tick is not None
                self._tick(ci, c, c.next_tick)
            else:
                self._timed_out(ci, c, *heapq.heappop(c.due))

    def _tick(self, ci: int, c: Client, now: int) -> None:
        """One run of the interval timer (``onIntervalTimer``): unejections, success rate and
        failure percentage of the interval just ended, external then local origin, then the
        multiplier's decay."""
        d = self.detector
        assert d is not None
        ej = np.flatnonzero(c.ejected)
        # Each host's unejection reads only its own state: the due ones are found at once.
        for h in ej[np.minimum(d.base * c.backoff[ej], d.max_time) <= now - c.ejected_at[ej]].tolist():
            c.ejected[h] = False
            self.n_ejected -= 1
            c.unejected_at[h] = now
            c.c5xx[h] = c.cgw[h] = c.clocal[h] = 0
            self._event(now, ci, h, "UNEJECT", "", False)  # Envoy prints false
            self._changed(c, 2 * now)
        if c.rq.size and int(c.rq.max()) >= min(d.sr_volume, d.fp_volume):
            ext = (c.rq.copy(), c.rq_failed)
            c.rq[:] = 0  # in place: it is a row of the clients' array
            c.rq_failed = np.zeros_like(c.rq)
            self._success_rate(now, ci, c, d, *ext, "")
        else:  # no host has the volume either check asks for: the buckets just restart
            c.rq[:] = 0
            c.rq_failed[:] = 0
        if self.split:  # without split mode the local-origin buckets stay empty: nothing to check
            local = (c.lrq, c.lrq_failed)
            c.lrq, c.lrq_failed = np.zeros_like(c.rq), np.zeros_like(c.rq)
            self._success_rate(now, ci, c, d, *local, "_LOCAL_ORIGIN")
        b = np.flatnonzero(c.backoff)  # the multiplier decays only where it is above 0
        if b.size:
            decay = ~c.ejected[b] & (c.unejected_at[b] >= 0) & (now - c.unejected_at[b] >= d.interval)
            c.backoff[b[decay]] -= 1
        c.next_tick = now + d.interval

    def _success_rate(
        self, now: int, ci: int, c: Client, d: Detector, rq: I64, failed: I64, origin: str
    ) -> None:
        """Success-rate, then failure-percentage detection over one bucket (§2.7-2.8)."""
        if rq.size == 0 or int(rq.max()) < min(d.sr_volume, d.fp_volume):
            return  # no host has the volume either check asks for
        total = int(c.member.sum())
        if total < d.sr_min_hosts and total < d.fp_min_hosts:
            return
        local = bool(origin)
        sr_hosts = np.flatnonzero((rq >= d.sr_volume) & ~c.ejected & c.member)
        if sr_hosts.size and sr_hosts.size >= d.sr_min_hosts:
            rate = 100.0 * (rq[sr_hosts] - failed[sr_hosts]) / rq[sr_hosts]
            threshold = rate.mean() - d.sr_stdev * rate.std()
            for h in sr_hosts[rate < threshold]:
                self.stats.ejections_success_rate += 1
                self._eject_or_not(
                    now, ci, c, int(h), d.enforce_local_sr if local else d.enforce_sr, "SUCCESS_RATE" + origin
                )
        fp_hosts = np.flatnonzero((rq >= d.fp_volume) & ~c.ejected & c.member)
        if fp_hosts.size and fp_hosts.size >= d.fp_min_hosts:
            pct = 100.0 * failed[fp_hosts] / rq[fp_hosts]
            for h in fp_hosts[pct >= d.fp_threshold]:
                self._eject_or_not(
                    now,
                    ci,
                    c,
                    int(h),
                    d.enforce_local_fp if local else d.enforce_fp,
                    "FAILURE_PERCENTAGE" + origin,
                )

    def _allowed(self, c: Client) -> bool:
        """The cap (§2.4), counting the host being ejected, over the hosts in the cluster."""
        d = self.detector
        assert d is not None
        return 100.0 * (int(c.ejected.sum()) + 1) / max(int(c.member.sum()), 1) <= d.max_percent

    def _eject_or_not(
        self, t: int, ci: int, c: Client, h: int, enforce: int, kind: str, lag: int = 0
    ) -> bool:
        """A detection (``ejections_detected_*``), then ``ejectHost`` (§2.4): the cap counting
        this host, then the enforcement roll. A detection that passes the cap but is not
        enforced is logged with ``"enforced": false``, as Envoy logs it."""
        d = self.detector
        assert d is not None
        stat = STAT[kind]
        self.stats.bump(f"ejections_detected_{stat}")
        if not self._allowed(c):
            self.stats.ejections_overflow += 1
            return False
        if kind in ("CONSECUTIVE_5XX", "SUCCESS_RATE"):
            self.stats.ejections_total += 1
        if enforce <= 0 or (enforce < 100 and self.rng.integers(0, 100) >= enforce):
            self._event(t, ci, h, "EJECT", kind, False)
            return False
        c.ejected[h] = True
        self.n_ejected += 1
        c.ejected_at[h] = t
        c.num_ejections[h] += 1
        if c.backoff[h] * d.base < d.max_time + d.base:
            c.backoff[h] += 1
        self.stats.ejections_enforced_total += 1
        self.stats.bump(f"ejections_enforced_{stat}")
        self._event(t, ci, h, "EJECT", kind, True)
        self._changed(c, 2 * t + lag)
        return True

    # -- one step of requests ------------------------------------------------------------------

    def send(
        self, t: int, n: int, in_eps: npt.NDArray[np.bool_], cat_by_pod: I64, status_by_pod: I64
    ) -> tuple[I64, int, int]:
        """Route ``n`` requests of this step from the clients. Returns requests per host pod
        (index into ``self.pods``), aborted by fault injection, and 503 no-healthy-upstream."""
        counts = np.zeros(self.pods.size, np.int64)
        aborted = uh = 0
        self.mirrored_now = 0
        nc = len(self.clients)
        # The route's requests go to the clients in turn, across steps (the k-th of the run to
        # client k mod clients), whatever the step.
        first_k = [(ci - self.sent) % nc for ci in range(nc)]
        self.sent += n
        v = self._last_view
        if v is None or v.in_eps is not in_eps or v.cat is not cat_by_pod or v.status is not status_by_pod:
            v = self._last_view = _HostView(self, in_eps, cat_by_pod, status_by_pod)
        self._view = v
        # Clients whose step is one plain round robin pass step together (_batch); from the
        # first that is not, each steps alone, in order (a batched step writes no event and
        # draws nothing, so the events and draws come in the same order).
        batching = self.lb == "ROUND_ROBIN" and not (self.split or self.delay or self.abort or self.mirror)
        batch: list[tuple[int, int]] = []
        for ci, c in enumerate(self.clients):
            self._members(t, c, in_eps)
            k0 = first_k[ci]
            m = max(0, -(-(n - k0) // nc))
            if m == 0:
                continue
            if batching:
                if self._plain(t, n, ci, k0, c, m):
                    batch.append((ci, m))
                    continue
                batching = False
                counts += self._batch(batch)
                batch = []
            if self.delay:
                self.stats.delays_injected += int(self.rng.binomial(m, self.delay))
            if self.abort:
                a = int(self.rng.binomial(m, self.abort))
                aborted += a
                self.stats.aborts_injected += a
                m -= a
            if self.mirror:
                copies = int(self.rng.binomial(m, min(self.mirror, 1.0)))
                self.stats.mirrored += copies
                self.mirrored_now += copies
            got, lost = self._client_step(t, n, ci, k0, c, m, in_eps, cat_by_pod, status_by_pod)
            counts += got
            uh += lost
        if batch:
            counts += self._batch(batch)
        self.stats.no_healthy_upstream += uh
        return counts, aborted, uh

    def _plain(self, t: int, n: int, ci: int, k0: int, c: Client, m: int) -> bool:
        """Bring client ``ci`` to its first request of the step; whether its step is then one
        plain round robin pass: no tick or health delivery among its ``m`` requests, hosts to
        pick from, no panic, and none of them failing or retried (no cut, no ejection)."""
        nc, step = len(self.clients), self.step
        self._advance(ci, c, t + (k0 * step) // max(n, 1))

        def first(te: int) -> int:  # the first of its requests sent at or after te
            return max(0, -(-((te - t) * n - k0 * step) // (nc * step)))

        if c.next_tick is not None and first(c.next_tick) < m:
            return False
        if c.pending is not None and first((c.pending + 1) // 2) < m:
            return False
        if c.due and first(c.due[0][0] + 1) < m:
            return False
        view = self._view
        members = view.members
        if members.size == 0:
            return False
        kept = c.healthy_of
        if kept is not None and kept[0] is view and kept[1] is c.visible:  # neither changed
            healthy, bad_ejected = kept[2], kept[3]
        else:
            healthy = members.size - int(c.visible[members].sum())
            bad_ejected = bool(c.visible[view.bad_members].all())
            c.healthy_of = (view, c.visible, healthy, bad_ejected)
        availability = min(100, 140 * healthy // members.size)
        if healthy == 0 or (availability < 100 and 100.0 * healthy / members.size < self.panic):
            return False
        return bad_ejected

    def _batch(self, batch: list[tuple[int, int]]) -> I64:
        """Step the clients of ``batch`` (index, requests) together, each a round robin pass
        over its healthy hosts from its own index, as _client_step does it; returns the
        requests per host."""
        if not batch:
            return np.zeros(self.pods.size, np.int64)
        rows = np.array([ci for ci, _ in batch], np.int64)
        m = np.array([mm for _, mm in batch], np.int64)
        cursor = np.array([self.clients[ci].cursor for ci in rows.tolist()], np.int64)
        # The clients' hosts and each host's place among them change only with the endpoints
        # (a new view) or a client's health delivery (a new ``visible`` array: never changed in
        # place): kept from the last batch while the same.
        visibles = [self.clients[ci].visible for ci in rows.tolist()]
        kept = self._batch_hosts
        if (
            kept is not None
            and kept[0] is self._view
            and len(kept[1]) == len(visibles)
            and all(a is b for a, b in zip(kept[1], visibles, strict=True))
        ):
            hosts, k, pos = kept[2], kept[3], kept[4]
        else:
            hosts = self._view.in_eps[None, :] & ~np.array(visibles, bool)  # clients × hosts
            k = hosts.sum(axis=1)
            pos = np.cumsum(hosts, axis=1) - 1  # a host's place among its client's hosts
            self._batch_hosts = (self._view, visibles, hosts, k, pos)
        # Its place in this step's round, (pos - cursor) mod k, without a modulo per host: pos
        # is in [0, k) for every host, so one wrap at most.
        order = pos - (cursor % k)[:, None]
        order += k[:, None] * (order < 0)
        per = np.where(hosts, (m // k)[:, None] + (order < (m % k)[:, None]), 0)
        for ci, mm in batch:
            self.clients[ci].cursor += mm
        sent = per > 0
        if rows[0] == 0 and rows[-1] == rows.size - 1:  # the first clients, in order: views
            self._rq[: rows.size] += per  # an HTTP code below 500 from each: counted, streaks reset
            self._c5xx[: rows.size] *= ~sent
            self._cgw[: rows.size] *= ~sent
        else:
            self._rq[rows] += per
            self._c5xx[rows] = np.where(sent, 0, self._c5xx[rows])
            self._cgw[rows] = np.where(sent, 0, self._cgw[rows])
        return np.asarray(per.sum(axis=0), np.int64)

    def _hosts(self, c: Client, in_eps: npt.NDArray[np.bool_]) -> tuple[I64, bool]:
        """The host set to pick from as the load balancer sees it, and whether it is in panic
        (§3.3)."""
        members = self._view.members
        if members.size == 0:
            return members, False
        healthy = members[~c.visible[members]]
        availability = min(100, 140 * healthy.size // members.size)
        panic = availability < 100 and 100.0 * healthy.size / members.size < self.panic
        return (members if panic else healthy), panic

    def _client_step(
        self,
        t: int,
        n: int,
        ci: int,
        k0: int,
        c: Client,
        m: int,
        in_eps: npt.NDArray[np.bool_],
        cat: I64,
        status: I64,
    ) -> tuple[I64, int]:
        """Pick hosts for ``m`` requests of one client. The step is cut at the first request
        that would get a host ejected, and at the first one sent after a tick or a delivered
        health change, so each request sees the load balancer as it then is."""
        got = np.zeros(self.pods.size, np.int64)
        nc, step = len(self.clients), self.step

        def at(j: int) -> int:  # the time of this client's j-th request of the step
            return t + ((j * nc + k0) * step) // max(n, 1)

        def first(te: int) -> int:  # the first of its requests sent at or after te
            num = (te - t) * n - k0 * step
            return max(0, -(-num // (nc * step)))

        if self.lb == "ROUND_ROBIN" and not self.split:
            # The common step: no tick or health delivery among this client's requests, and
            # none of its hosts fails or is retried: one round robin pass, nothing to cut.
            self._advance(ci, c, at(0))
            ticks = c.next_tick is not None and first(c.next_tick) < m
            delivers = c.pending is not None and first((c.pending + 1) // 2) < m
            delivers |= bool(c.due) and first(c.due[0][0] + 1) < m
            if not ticks and not delivers:
                hosts, panic = self._hosts(c, in_eps)
                if hosts.size and not panic and not self._view.bad[hosts].any():
                    k = hosts.size
                    order = (np.arange(k) - c.cursor) % k
                    per = np.full(k, m // k, np.int64) + (order < m % k)
                    c.cursor += m
                    c.rq[hosts] += per  # an HTTP code below 500 from each: counted, streaks reset
                    answered = hosts[per > 0]
                    c.c5xx[answered] = 0
                    c.cgw[answered] = 0
                    got[hosts] = per
                    return got, 0

        j = uh = 0
        while j < m:
            self._advance(ci, c, at(j))
            limit = m
            if c.next_tick is not None:
                limit = min(limit, first(c.next_tick))
            if c.pending is not None:
                limit = min(limit, first((c.pending + 1) // 2))  # a lagged delivery follows its ms
            if c.due:
                limit = min(limit, first(c.due[0][0] + 1))
            avail = max(limit - j, 1)
            hosts, panic = self._hosts(c, in_eps)
            if hosts.size == 0:
                uh += avail  # 503 UH
                j += avail
                continue
            if panic:
                self.stats.lb_healthy_panic += avail
            k = hosts.size
            view = self._view
            refused, hung, st = view.refused[hosts], view.hung[hosts], view.st[hosts]
            # None of the hosts can be ejected when every one answers below 500 and connects:
            # no request cuts the chunk short.
            fails = bool(view.counts[hosts].any())
            if fails:
                need = np.minimum(
                    self._need(c, hosts, refused, hung, st), avail + 1
                )  # no crossing past avail
            start = j
            if self.lb == "ROUND_ROBIN":
                order = (np.arange(k) - c.cursor) % k  # position of each host in this round
                if fails:
                    pos = order + (need - 1) * k + 1  # the request that makes it cross
                    cut = int(min(avail, pos.min()))
                else:
                    cut = avail
                per = np.full(k, cut // k, np.int64) + (order < cut % k)
                c.cursor += cut  # Envoy's index keeps counting; it picks index % hosts (§3.4)

                when = _rr_times(at, start, order, k)
            else:
                # Random and least request (equal loads: power of two choices picks evenly).
                drawn = self.rng.multinomial(avail, np.full(k, 1.0 / k)).astype(np.int64)
                if fails:
                    per = np.minimum(drawn, need)
                    cut = avail - int((drawn - per).sum())
                else:
                    per, cut = drawn, avail

                when = _drawn_times(at, start, drawn, avail)

            j += cut
            self._report(ci, c, hosts, per, refused, hung, st, when)
            if not view.retries:
                got[hosts] += per
                continue
            retried = view.retriable[hosts] & (per > 0)
            good = view.good[hosts]
            if retried.any() and good.any():
                # The retry avoids the host already tried (previous_hosts) and lands on one that
                # answers (§5.5); every attempt was reported to its host above.
                moved = int(per[retried].sum())
                self.stats.upstream_rq_retry += moved
                per[retried] = 0
                others = np.flatnonzero(good)
                per[others] += moved // others.size
                per[others[: moved % others.size]] += 1
            got[hosts] += per
        return got, uh

    def _retriable(
        self, refused: npt.NDArray[np.bool_], hung: npt.NDArray[np.bool_], st: I64
    ) -> npt.NDArray[np.bool_]:
        """Which hosts' failures the route's retry_on retries."""
        out = refused & self.retry_connect
        out |= hung & (st == 504) & self.retry_timeout
        answered = ~refused & ~hung
        out |= answered & (st >= 500) & self.retry_5xx
        out |= answered & (st >= 502) & (st <= 504) & self.retry_gateway
        if self.retry_codes:
            out |= answered & np.isin(st, list(self.retry_codes))
        return out

    def _local(self, refused: B, hung: B, st: I64) -> tuple[B, B]:
        """In split mode, which results are local-origin failures: connect failures, and
        timeouts on a hung host (whose connection was established first, resetting the
        counter, so they count one at a time)."""
        if not self.split:
            z = np.zeros(refused.size, bool)
            return z, z
        return refused, hung & (st == 504)

    def _need(self, c: Client, hosts: I64, refused: B, hung: B, st: I64) -> I64:
        """Requests until each host would be ejected; a large number when it cannot be (it
        answers well, its detection is not enforced, it is ejected already, or the cap forbids
        another ejection)."""
        never = np.full(hosts.size, NEVER, np.int64)
        d = self.detector
        if d is None or not self._allowed(c):
            return never
        conn_failed, timed_out = self._local(refused, hung, st)
        local = conn_failed | timed_out
        fivexx = (st >= 500) & ~local
        gateway = (st >= 502) & (st <= 504) & ~local
        need = never.copy()
        if d.enforce_5xx >= 100 and d.consecutive_5xx > 0:
            need = np.where(fivexx, np.maximum(d.consecutive_5xx - c.c5xx[hosts], 1), need)
        if d.enforce_gateway >= 100 and d.consecutive_gateway > 0:
            need = np.minimum(
                need, np.where(gateway, np.maximum(d.consecutive_gateway - c.cgw[hosts], 1), never)
            )
        if self.split and d.enforce_local >= 100 and d.consecutive_local > 0:
            need = np.minimum(
                need, np.where(conn_failed, np.maximum(d.consecutive_local - c.clocal[hosts], 1), never)
            )
            if d.consecutive_local == 1:
                need = np.minimum(need, np.where(timed_out, 1, never))
        return np.where(c.ejected[hosts] | c.waiting[hosts], never, need)

    def _report(
        self,
        ci: int,
        c: Client,
        hosts: I64,
        per: I64,
        refused: B,
        hung: B,
        st: I64,
        when: Callable[[int, int], int],
    ) -> None:
        """Results reach each host's monitor (§2.2). An HTTP code (a connect failure is a 503,
        a timeout a 504, without split mode) goes to the external bucket and the 5xx and
        gateway counters; in split mode every established connection is a local-origin
        success (resetting that counter, whatever the answer) and connect failures and
        timeouts are local-origin failures. Detections fire each time a counter reaches its
        threshold, in the order of the requests (``when``: the time of a host's x-th request)."""
        sent = per > 0
        if not self.split and not self._view.counts[hosts].any():
            # Every host answered below 500: counted, and their consecutive counters reset.
            c.rq[hosts] += per
            answered = hosts[sent]
            c.c5xx[answered] = 0
            c.cgw[answered] = 0
            return
        conn_failed, timed_out = self._local(refused, hung, st)
        coded = sent & (st > 0) & ~conn_failed & ~timed_out  # an HTTP code reaches the monitor
        c.rq[hosts[coded]] += per[coded]
        bad_code = coded & (st >= 500)
        c.rq_failed[hosts[bad_code]] += per[bad_code]
        ok = coded & (st < 500)
        c.c5xx[hosts[ok]] = 0
        c.cgw[hosts[ok]] = 0
        hb, pb, sb = hosts[bad_code], per[bad_code], st[bad_code]
        c.c5xx[hb] += pb
        gw = (sb >= 502) & (sb <= 504)
        c.cgw[hb] = np.where(gw, c.cgw[hb] + pb, 0)
        if self.split:
            connected = sent & ~refused
            c.lrq[hosts[sent]] += per[sent] * np.where(timed_out[sent], 2, 1)
            lost = sent & (refused | timed_out)
            c.lrq_failed[hosts[lost]] += per[lost]
            d = self.detector
            one = d is not None and d.consecutive_local == 1
            c.clocal[hosts[connected]] = 0
            tb = sent & timed_out
            c.clocal[hosts[tb]] = per[tb] if one else 1
            cf = sent & refused
            c.clocal[hosts[cf]] += per[cf]
        d = self.detector
        if d is None:
            return
        thresholds = self._thresholds(c)
        hits = (bad_code & (st >= 502) & (st <= 504), bad_code, sent & (refused | timed_out) & self.split)
        found: list[tuple[int, int, int, str]] = []  # (time, check order, host index, kind)
        for rank, (kind, hit) in enumerate(zip(thresholds, hits, strict=True)):
            counter, threshold, _ = thresholds[kind]
            if threshold <= 0:
                continue
            for i in np.flatnonzero(
                hit & (counter[hosts] >= threshold) & ~c.ejected[hosts] & ~c.waiting[hosts]
            ):
                v, p = int(counter[hosts[i]]), int(per[i])
                # The x-th of the host's requests made the counter equal the threshold; then
                # every threshold more while the detection does not eject.
                for x in range(max(1, p - (v - threshold)), p + 1, threshold):
                    found.append((when(int(i), x), rank, int(i), kind))
        found.sort()
        for te, rank, hi, kind in found:
            h = int(hosts[hi])
            if c.ejected[h]:
                continue  # §2.3.2: ignored while ejected, the counter not reset
            if hung[hi] and self.timeout_ms:
                # A timeout reaches the monitor when the router's timer fires, not when the
                # request was sent (router.cc: onResponseTimeout -> updateOutlierDetection(
                # LocalOriginTimeout)): the host keeps getting requests until then.
                heapq.heappush(c.due, (te + self.timeout_ms, rank, h, kind))
                c.waiting[h] = True
                continue
            self._detected(te, ci, c, h, kind)

    def _thresholds(self, c: Client) -> dict[str, tuple[I64, int, int]]:
        """Each consecutive check: its counter, threshold and enforcement, in Envoy's order."""
        d = self.detector
        assert d is not None
        return {
            "CONSECUTIVE_GATEWAY_FAILURE": (c.cgw, d.consecutive_gateway, d.enforce_gateway),
            "CONSECUTIVE_5XX": (c.c5xx, d.consecutive_5xx, d.enforce_5xx),
            "CONSECUTIVE_LOCAL_ORIGIN_FAILURE": (
                c.clocal,
                d.consecutive_local if self.split else 0,
                d.enforce_local,
            ),
        }

    def _detected(self, te: int, ci: int, c: Client, h: int, kind: str) -> None:
        """A consecutive counter reached its threshold at ``te``: the detection, then the
        counter restarts, whether it ejects or not."""
        if kind == "CONSECUTIVE_5XX":
            self.stats.ejections_consecutive_5xx += 1
        counter, threshold, enforce = self._thresholds(c)[kind]
        if self._eject_or_not(te, ci, c, h, enforce, kind, lag=1):
            counter[h] = 0
        else:
            counter[h] = max(int(counter[h]) - int(threshold), 0)

    def _timed_out(self, ci: int, c: Client, te: int, rank: int, h: int, kind: str) -> None:
        """A waiting timeout detection fires (its request's time + the route's timeout)."""
        c.waiting[h] = any(d[2] == h for d in c.due)
        if not c.ejected[h]:
            self._detected(te, ci, c, h, kind)

    def _event(self, t: int, ci: int, h: int, action: str, kind: str, enforced: bool) -> None:
        """A line of Envoy's outlier detection event log (§2.12), from client ``ci``'s sidecar."""
        c = self.clients[ci]
        detail = f'"type":"{kind}",' if kind else ""
        msg = (
            f'{{{detail}"action":"{action}","cluster_name":"{self.cluster}","upstream_url":"{self.upstreams[h]}",'
            f'"num_ejections":{int(c.num_ejections[h])},"enforced":{"true" if enforced else "false"}}}'
        )
        type_ = "Warning" if action == "EJECT" else "Normal"
        self.events.append(Event(t, type_, f"Outlier{action.title()}", f"sidecar/client-{ci}", msg, "envoy"))

    def ejections_active(self) -> int:
        """Hosts ejected now, summed over the clients (kept as ejections come and go)."""
        return self.n_ejected


def _stride(total: int) -> int:
    """The step through 0 .. total - 1 that spreads the weighted picks: coprime with the total
    (so every value comes once in each ``total`` requests), near total × 0.618 (the golden
    ratio's, so that consecutive values fall far apart)."""
    p = max(1, round(total * 0.6180339887))
    for d in range(total):
        for c in (p - d, p + d):
            if 1 <= c < total and math.gcd(c, total) == 1:
                return c
    return 1


def weighted_counts(weights: list[int], before: int, n: int) -> list[int]:
    """Requests ``before`` .. ``before + n`` of a route shared among its weighted clusters.
    Envoy draws each request's cluster from the stream's random value: ``random % total``
    against the running sum of the weights (config_impl.cc, WeightedClusterEntry /
    pickWeightedCluster). Here the k-th request's value is ``k × stride % total`` instead, a
    deterministic sequence that takes every value once in each ``total`` requests: after any
    whole number of ``total`` requests each cluster has exactly its weight's share, and in
    between it is within a few requests of it (under 3 for Istio's total of 100)."""
    total = sum(weights)
    if total <= 0:
        return [0] * len(weights)
    cum = np.cumsum(weights)
    whole, rem = divmod(n, total)
    k = before + whole * total + np.arange(rem, dtype=np.int64)
    picked = np.searchsorted(cum, (k * _stride(total)) % total, side="right")
    extra = np.bincount(picked, minlength=len(weights))
    return [int(whole * w + e) for w, e in zip(weights, extra, strict=True)]


class SplitRoute:
    """The sidecars of a traffic route whose VirtualService route splits it: one MeshRoute per
    destination cluster (its own hosts, load balancer and outlier detection, as Envoy has a
    cluster per subset), behind one ``send`` over the union of their hosts."""

    def __init__(self, parts: list[MeshRoute], weights: list[int], pods: I64, upstreams: list[str]) -> None:
        """``pods``: every pod the route's endpoints may hold (in no cluster: never picked), with
        ``upstreams`` for the event log."""
        self.parts, self.weights = parts, weights
        self.pods = np.unique(np.concatenate([pods, *(m.pods for m in parts)]))
        self.index = [np.searchsorted(self.pods, m.pods) for m in parts]
        by_pod = dict(zip(pods.tolist(), upstreams, strict=True))
        by_pod |= {int(p): u for m in parts for p, u in zip(m.pods, m.upstreams, strict=True)}
        self.upstreams = [by_pod[int(p)] for p in self.pods]  # "ip:port" per host
        self.sent = 0
        self.mirrored_now = 0
        self._views: tuple[object, object, object, list[tuple[B, I64, I64]]] | None = None

    @property
    def stats(self) -> Stats:
        out = Stats()
        for m in self.parts:
            for k, v in vars(m.stats).items():
                out.bump(k, v)
        return out

    @property
    def events(self) -> list[Event]:
        return [e for m in self.parts for e in m.events]

    def tick(self, t: int) -> None:
        for m in self.parts:
            m.tick(t)

    def ejections_active(self) -> int:
        return sum(m.ejections_active() for m in self.parts)

    def send(self, t: int, n: int, in_eps: B, cat_by_pod: I64, status_by_pod: I64) -> tuple[I64, int, int]:
        """As MeshRoute.send, each destination getting its share of the ``n`` requests."""
        kept = self._views
        if kept is None or kept[0] is not in_eps or kept[1] is not cat_by_pod or kept[2] is not status_by_pod:
            # The same arrays for the parts while the loop passes the same (their caches hold).
            views = [(in_eps[i], cat_by_pod[i], status_by_pod[i]) for i in self.index]
            kept = self._views = (in_eps, cat_by_pod, status_by_pod, views)
        counts = np.zeros(self.pods.size, np.int64)
        aborted = uh = 0
        self.mirrored_now = 0
        shares = weighted_counts(self.weights, self.sent, n)
        self.sent += n
        for m, idx, share, (e, c, st) in zip(self.parts, self.index, shares, kept[3], strict=True):
            if share == 0:
                m.mirrored_now = 0
                continue
            got, a, u = m.send(t, share, e, c, st)
            np.add.at(counts, idx, got)
            aborted += a
            uh += u
            self.mirrored_now += m.mirrored_now
        return counts, aborted, uh


Sidecars = MeshRoute | SplitRoute  # what a traffic route's requests go through


def istio_for(scenario: Scenario, host: str, t: Traffic) -> tuple[DestinationRule | None, HTTPRoute | None]:
    """The DestinationRule for a Service and the VirtualService route a request matches; with
    neither, the request does not go through a sidecar's Envoy."""
    rule = next((r for r in scenario.destination_rules if r.spec.host.split(".")[0] == host), None)
    return rule, find_route(list(scenario.virtual_services), host, t.path, dict(t.headers), t.method)


def _rule_for(scenario: Scenario, host: str) -> DestinationRule | None:
    return next((r for r in scenario.destination_rules if r.spec.host.split(".")[0] == host), None)


def _subset_rule(rule: DestinationRule | None, subset: str | None) -> DestinationRule | None:
    """The DestinationRule as a subset's cluster gets it: the subset's trafficPolicy fields
    replace the rule's (Istio merges them field by field)."""
    if rule is None or subset is None:
        return rule
    sub = next((s for s in rule.spec.subsets if s.name == subset), None)
    if sub is None or sub.traffic_policy is None:
        return rule
    base = rule.spec.traffic_policy or TrafficPolicy()
    over = {
        k: v for k, v in vars(sub.traffic_policy).items() if v is not None and k in TrafficPolicy.model_fields
    }
    policy = base.model_copy(update=over)
    return rule.model_copy(update={"spec": rule.spec.model_copy(update={"traffic_policy": policy})})


def subset_selects(fleet: Fleet, rule: DestinationRule | None, subset: str | None) -> B:
    """The pods whose labels (their revision's template's) carry a subset's labels; every pod
    without a subset, none for a subset no DestinationRule of the host defines."""
    labels = fleet.pod_labels
    if subset is None or labels is None:
        return np.ones(fleet.n_pods, bool)
    sub = next((s for s in rule.spec.subsets if s.name == subset), None) if rule else None
    if sub is None:
        return np.zeros(fleet.n_pods, bool)
    hit = np.array([all(g.get(k) == v for k, v in sub.labels.items()) for g in labels.groups], bool)
    return hit[labels.group_of] if labels.group_of.size else np.zeros(0, bool)


def splits(route: HTTPRoute | None, host: str) -> bool:
    """Whether a VirtualService route sends a traffic route's requests elsewhere than its own
    Service's pods: several destinations, a subset, or another host."""
    if route is None:
        return False
    ds = [d.destination for d in route.route]
    return len(ds) > 1 or ds[0].subset is not None or ds[0].host.split(".")[0] != host


def route_weights(route: HTTPRoute) -> list[int]:
    """Each destination's weight: as written; all unset, an even split; one unset among set
    ones, 0 (Istio's validation asks for all or none)."""
    ws = [d.weight for d in route.route]
    if all(w is None for w in ws):
        return [1] * len(ws)
    return [w or 0 for w in ws]


def _lb(rule: DestinationRule | None) -> str:
    policy = rule.spec.traffic_policy if rule else None
    return (
        policy.load_balancer.simple
        if policy and policy.load_balancer and policy.load_balancer.simple
        else "LEAST_REQUEST"
    )


def build_mesh(scenario: Scenario, fleet: Fleet, rng: np.random.Generator) -> dict[int, Sidecars]:
    """A MeshRoute for each traffic route whose Service has a DestinationRule or VirtualService;
    a SplitRoute of one per destination where the VirtualService route splits it."""
    out: dict[int, Sidecars] = {}
    services = {s.name: s for s in scenario.services}
    for ri, route in enumerate(fleet.routes):
        if route.mirror_of >= 0:
            continue  # copies go straight to the mirror's endpoints
        host = route.service.name
        t = route.traffic
        rule, vroute = istio_for(scenario, host, t)
        if rule is None and vroute is None:
            continue
        if vroute is not None and splits(vroute, host):
            parts = []
            for d in vroute.route:
                dhost = d.destination.host.split(".")[0]
                svc = services.get(dhost)
                drule = _rule_for(scenario, dhost)
                sub = d.destination.subset
                if svc is None:  # not a Service of the scenario: no hosts (said at load)
                    pods = np.zeros(0, np.int64)
                    port = d.destination.port.number if d.destination.port else 80
                else:
                    selects = fleet.service_pods.get(dhost, np.zeros(fleet.n_pods, bool))
                    selects = selects & subset_selects(fleet, drule, sub) & (route.target_container >= 0)
                    pods = np.flatnonzero(selects)
                    port = svc.spec.ports[0].port if svc.spec.ports else 80
                    if d.destination.port is not None:
                        port = d.destination.port.number
                prule = _subset_rule(drule, sub)
                cluster = cluster_name(dhost, port, sub, svc.metadata.namespace if svc else "default")
                parts.append(
                    MeshRoute(
                        route.name,
                        pods,
                        _upstreams(fleet, route, pods, svc),
                        cluster,
                        t.clients,
                        prule,
                        vroute,
                        _lb(prule),
                        rng,
                        scenario.spec.step,
                    )
                )
            every = np.flatnonzero(route.selects & (route.target_container >= 0))
            out[ri] = SplitRoute(
                parts, route_weights(vroute), every, _upstreams(fleet, route, every, route.service)
            )
            continue
        pods = np.flatnonzero(route.selects & (route.target_container >= 0))
        port = route.service.spec.ports[0].port if route.service.spec.ports else 80
        cluster = cluster_name(host, port, None, route.service.metadata.namespace)
        out[ri] = MeshRoute(
            route.name,
            pods,
            _upstreams(fleet, route, pods, route.service),
            cluster,
            t.clients,
            rule,
            vroute,
            _lb(rule),
            rng,
            scenario.spec.step,
        )
    return out


def _upstreams(fleet: Fleet, route: Route, pods: I64, svc: Service | None) -> list[str]:
    """ "ip:port" per host, for the event log: the port its serving container declares."""
    out = []
    svc_ports = svc.spec.ports if svc else ()
    target = svc_ports[0].effective_target if svc_ports else 80
    for p in pods.tolist():
        c = fleet.container_spec[int(route.target_container[p])]
        out.append(f"{fleet.pod_ip[p]}:{container_port(c, target) or target}")
    return out
