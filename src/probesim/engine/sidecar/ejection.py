"""Outlier detection over one cluster's hosts, for every client sidecar of a route
(OutlierMonitor): results reaching each host's monitor, consecutive counters reaching their
thresholds (a timeout's when the route's timer fires), the ejection cap and enforcement, the
interval timer (unejection, success rate, failure percentage, the multiplier's decay), host
health reaching the load balancer through the merge window, hosts leaving the cluster, and
Envoy's outlier event log. Load balancing is route.py's.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from probesim.engine.sidecar.outlier import NEVER, STAT, Client, Detector, SidecarStats
from probesim.results import Event

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

# The cluster manager delivers health changes to the workers' load balancers at once only when
# the previous delivery is more than `update_merge_window` old (default 1 s, which Istio leaves
# unset); otherwise they wait for a timer started at the change (cluster_manager_impl.cc,
# scheduleUpdate). Membership changes are never merged and carry pending ones with them.
MERGE_WINDOW_MS = 1000


class OutlierMonitor:
    """The outlier detectors of one route's client sidecars over one cluster (one Client each)."""

    def __init__(
        self,
        detector: Detector | None,
        clients: list[Client],
        stats: SidecarStats,
        rng: np.random.Generator,
        cluster: str,
        upstreams: list[str],
        timeout_ms: int,
        sidecars: list[str],
    ) -> None:
        """``stats``: the route's counters (the monitor bumps the ``ejections_*``); ``rng``: the
        run's generator (enforcement rolls); ``upstreams``: "ip:port" per host, for the event
        log; ``timeout_ms``: when a timed-out request reaches its host's monitor (0: never);
        ``sidecars``: each client's sidecar name in the event log."""
        self.detector = detector
        self.split = bool(detector and detector.split)
        self.clients = clients
        self.stats = stats
        self.rng = rng
        self.cluster = cluster
        self.upstreams = upstreams
        self.timeout_ms = timeout_ms
        self.sidecars = sidecars
        self.merge_window = MERGE_WINDOW_MS
        self.n_ejected = 0  # hosts ejected now, over all clients
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

    def members(self, t: int, c: Client, in_eps: B) -> None:
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
            self.advance(ci, c, t)

    def advance(self, ci: int, c: Client, until: int) -> None:
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

    # -- results reaching the monitors ---------------------------------------------------------

    def _local(self, refused: B, hung: B, st: I64) -> tuple[B, B]:
        """In split mode, which results are local-origin failures: connect failures, and
        timeouts on a hung host (whose connection was established first, resetting the
        counter, so they count one at a time)."""
        if not self.split:
            z = np.zeros(refused.size, bool)
            return z, z
        return refused, hung & (st == 504)

    def need(self, c: Client, hosts: I64, refused: B, hung: B, st: I64) -> I64:
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

    def report(
        self,
        ci: int,
        c: Client,
        hosts: I64,
        per: I64,
        refused: B,
        hung: B,
        st: I64,
        when: Callable[[int, int], int],
        counts: B,
        lag: I64 | None = None,
    ) -> None:
        """Results reach each host's monitor (§2.2). An HTTP code (a connect failure is a 503,
        a timeout a 504, without split mode) goes to the external bucket and the 5xx and
        gateway counters; in split mode every established connection is a local-origin
        success (resetting that counter, whatever the answer) and connect failures and
        timeouts are local-origin failures. Detections fire each time a counter reaches its
        threshold, in the order of the requests (``when``: the time of a host's x-th request).
        ``counts``: per host pod, whether its answer can move an outlier counter; ``lag``: per
        host, how long after its request a result reaches the monitor (default: a hung host's at
        the route's timeout, the others' at once)."""
        sent = per > 0
        if not self.split and not counts[hosts].any():
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
        # Connect attempts to dead hosts (a connect timeout's lag).
        connecting = refused & (lag > 0) if lag is not None else np.zeros(hosts.size, bool)
        if lag is not None and connecting.any():
            for ci_ in np.flatnonzero(connecting & sent).tolist():
                # The first try after the last connection's timeout opens a new one; the tries
                # until its timeout wait in the pool's pending queue and fail with it.
                first, h = when(ci_, 1), int(hosts[ci_])
                if first >= c.connect_from[h] + int(lag[ci_]):
                    c.connect_from[h] = first
        hits = (bad_code & (st >= 502) & (st <= 504), bad_code, sent & (refused | timed_out) & self.split)
        # Each (host, check) whose counter passed its threshold: its detections are the x-th of
        # its requests that made the counter equal the threshold, then every threshold more
        # while a detection does not eject. Taken in the order of the requests, lazily: the
        # time of a detection is read only when it comes up.
        # (time, check order, host index, x, kind, threshold)
        due: list[tuple[int, int, int, int, str, int]] = []
        for rank, (kind, hit) in enumerate(zip(thresholds, hits, strict=True)):
            counter, threshold, _ = thresholds[kind]
            if threshold <= 0:
                continue
            for i in np.flatnonzero(
                hit & (counter[hosts] >= threshold) & ~c.ejected[hosts] & ~c.waiting[hosts]
            ):
                v, p = int(counter[hosts[i]]), int(per[i])
                x = max(1, p - (v - threshold))
                due.append((when(int(i), x), rank, int(i), x, kind, threshold))
        heapq.heapify(due)
        capped = False  # the ejection cap refuses every further detection of this report
        while due:
            te, rank, hi, x, kind, threshold = heapq.heappop(due)
            h = int(hosts[hi])
            if c.ejected[h]:
                continue  # §2.3.2: ignored while ejected, the counter not reset (no unejection here)
            delay = int(lag[hi]) if lag is not None else (self.timeout_ms if hung[hi] else 0)
            if connecting[hi] and te < c.connect_from[h] + delay:
                delay = int(c.connect_from[h] + delay - te)  # failed with the pending ones
            timer = delay > 0
            if not timer and (capped or not self._allowed(c)):
                # Ejections only grow within a report, so the cap refuses all the rest alike:
                # counted at once, however many requests there were (the cost of a step must
                # not grow with the rate).
                capped = True
                self._overflowed(c, h, kind, (int(per[hi]) - x) // threshold + 1)
                continue
            if x + threshold <= int(per[hi]):
                heapq.heappush(due, (when(hi, x + threshold), rank, hi, x + threshold, kind, threshold))
            if timer:
                # A timeout reaches the monitor when the router's timer fires, not when the
                # request was sent (router.cc: onResponseTimeout -> updateOutlierDetection(
                # LocalOriginTimeout)): the host keeps getting requests until then.
                heapq.heappush(c.due, (te + delay, rank, h, kind))
                c.waiting[h] = True
                continue
            self._detected(te, ci, c, h, kind)

    def _overflowed(self, c: Client, h: int, kind: str, n: int) -> None:
        """``n`` detections of ``kind`` on host ``h`` that the ejection cap refuses: each is
        counted as ``_detected`` counts it, and restarts the counter."""
        if kind == "CONSECUTIVE_5XX":
            self.stats.ejections_consecutive_5xx += n
        self.stats.bump(f"ejections_detected_{STAT[kind]}", n)
        self.stats.ejections_overflow += n
        counter, threshold, _ = self._thresholds(c)[kind]
        counter[h] = max(int(counter[h]) - n * int(threshold), 0)

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
        self.events.append(
            Event(t, type_, f"Outlier{action.title()}", f"sidecar/{self.sidecars[ci]}", msg, "envoy")
        )

    def ejections_active(self) -> int:
        """Hosts ejected now, summed over the clients (kept as ejections come and go)."""
        return self.n_ejected
