"""One cluster's client sidecars (MeshRoute): per client and step, load balancing over the
hosts that are not ejected (round robin continuing from its index, least request and random as
an even or drawn split) with the panic threshold (§3.2-3.3); fault injection before sending
(aborts never reach a host: no outlier update, no retry, §5.1; delays are held before, by
engine/traffic.py with hold.py); retries of the failures the route's retry_on names, round
robin's picked through its index (retry.py), their failed tries and back-offs left in
``waits_now`` for the latency; timeouts; mirroring as counted copies. The step is cut
at each change a request can see (an ejection, a tick, a delivered health update), so a host
gets exactly the errors it returns before its ejection reaches the load balancer. What the
VirtualService route asks (faults, retry_on, timeouts, mirroring) is policy.py's (RoutePolicy),
outlier detection ejection.py's (OutlierMonitor).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from probesim.engine.sidecar import pool
from probesim.engine.sidecar.ejection import OutlierMonitor
from probesim.engine.sidecar.outlier import NEVER, Client, Detector, SidecarStats
from probesim.engine.sidecar.policy import RoutePolicy
from probesim.engine.sidecar.retry import RetryWalk, WalkRun, retry_waits
from probesim.kube.outcomes import ERROR_STATUS, NO_ANSWER, REFUSED, UNREACHABLE
from probesim.mesh.istio import DestinationRule, HTTPRoute, ms
from probesim.results import Event

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
CONNECT_TIMEOUT_MS = 10_000  # Istio's connectionPool.tcp.connectTimeout default (mesh/envoy.py)


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

    def __init__(self, route: MeshRoute, in_eps: B, cat: I64, status: I64, cost: F64 | None = None) -> None:
        self.members = np.flatnonzero(in_eps)
        pol = route.policy
        # A host on a failed node answers nothing, not even a reset: a new connection to it
        # times out after the cluster's connect_timeout (a 503 connect failure, UF), unless the
        # router's timer (route or per-try timeout) fires first (a 504, as for a hung host).
        dead = cat == UNREACHABLE
        self.dead, self.dead_any = dead, bool(dead.any())
        first = bool(pol.times_out and 0 < pol.timeout_ms <= route.connect_ms)
        connect = dead & (not first)
        self.refused = (cat == REFUSED) | connect
        # A hung host answers nothing: with a route or per-try timeout the sidecar gives up
        # with 504 (reported as a local-origin timeout, §2.1.3); without one it just waits.
        self.hung = (cat == NO_ANSWER) | (dead & first)
        st = np.where(self.refused, 503, np.where(cat == ERROR_STATUS, status, 200))
        # 0: no answer, nothing reported.
        self.st = np.where(self.hung, 504 if pol.times_out else 0, st)
        # When a failed try reaches its host's monitor after it was sent (None: a timeout's, the
        # route's timer, or at once; only connect timeouts differ).
        self.lag: I64 | None = None
        if connect.any():
            timer = np.where(self.hung & pol.times_out, pol.timeout_ms, 0)
            self.lag = np.where(connect, route.connect_ms, timer).astype(np.int64)
        self.retriable = route.policy.retriable(self.refused, self.hung, self.st)
        self.retries = bool(self.retriable[self.members].any())  # any host's failure retried
        self.good = (self.st > 0) & (self.st < 500)
        # A 5xx, a connect failure or a timeout: a host that can move an outlier counter.
        self.counts = (self.st >= 500) | self.refused | self.hung
        self.bad = self.counts | self.retriable  # hosts whose requests need the full pass
        self.bad_members = self.members[self.bad[self.members]]
        # How long a failed try takes before the sidecar can retry: a refusal at once, a
        # timeout at the first of the per-try and route timeouts, an answer after the host's
        # work for the path (``cost``: its wall and CPU time).
        served = np.zeros(in_eps.size) if cost is None else cost
        self.try_ms = np.where(self.refused, 0.0, np.where(self.hung, float(route.policy.timeout_ms), served))
        self.try_ms[connect] = float(route.connect_ms)
        self.in_eps, self.cat, self.status, self.cost = in_eps, cat, status, cost  # what it was made of
        self.walks: dict[bytes, RetryWalk] = {}  # per pickable host set, its retry walk


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
        sidecars: list[str] | None = None,
        client_timeout_ms: float | None = None,
    ) -> None:
        """``sidecars``: the name of each client's sidecar in the event log (default
        client-0, client-1, …); ``client_timeout_ms``: when a client gives up on a request
        (None: never), which ends one hung on a kept-alive connection (pool.py)."""
        self.name = name
        self.pods = host_pods  # the Service's pods, in pod order (the cluster's hosts)
        self.upstreams = upstreams  # "ip:port" per host, for the event log
        self.cluster = cluster
        self.rng = rng
        self.step = step
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
        self._pooled = np.zeros((clients, host_pods.size), bool)
        self._held = np.zeros((clients, host_pods.size), np.int64)
        self._rows()
        for c in self.clients:
            c.cursor = int(rng.integers(0, max(host_pods.size, 1)))  # Envoy seeds the index at random
            c.next_tick = self.detector.interval if self.detector else None
        self.route = route
        self.policy = RoutePolicy.of(route)
        # How long a request hung on a dead host's kept-alive connection waits (None: for ever).
        timer = float(self.policy.timeout_ms) if self.policy.times_out else None
        self.hang_ms = min((x for x in (client_timeout_ms, timer) if x is not None), default=None)
        # How long a connection attempt waits for an answer: connectionPool.tcp.connectTimeout
        # (Istio's default 10 s, the cluster's connect_timeout).
        pool = policy.connection_pool if policy else None
        tcp = pool.get("tcp") if isinstance(pool, dict) else None
        given = tcp.get("connectTimeout") if isinstance(tcp, dict) else None
        self.connect_ms = (ms(given) if isinstance(given, str) else None) or CONNECT_TIMEOUT_MS
        self.stats = SidecarStats()
        self.outlier = OutlierMonitor(
            self.detector,
            self.clients,
            self.stats,
            rng,
            cluster,
            upstreams,
            self.policy.timeout_ms,
            sidecars or [f"client-{ci}" for ci in range(clients)],
        )
        self._last_view: _HostView | None = None  # kept while the loop passes the same arrays
        # _batch's (view, clients' visible arrays, hosts, host counts, places), kept while the same.
        self._batch_hosts: tuple[_HostView, list[B], B, I64, I64] | None = None
        self.mirrored_now = 0  # copies sent this step
        self.waits_now: list[tuple[int, float]] = []  # this step's retried requests: (count, ms)
        self.retried = 0  # requests retried so far (which back-off values the next ones take)
        self.sent = 0  # requests of the run so far (which client sends the next)

    def _rows(self) -> None:
        """Every client's counters as its row of the clients' arrays."""
        for ci, c in enumerate(self.clients):
            c.rq, c.c5xx, c.cgw = self._rq[ci], self._c5xx[ci], self._cgw[ci]
            c.pooled, c.held_until = self._pooled[ci], self._held[ci]

    def __deepcopy__(self, memo: dict[int, Any]) -> MeshRoute:
        # A copy's clients count into rows of the copy's arrays (a plain deep copy would give
        # them arrays of their own: engine/warm.py copies a run's state).
        new = MeshRoute.__new__(MeshRoute)
        memo[id(self)] = new
        for name, value in vars(self).items():
            setattr(new, name, copy.deepcopy(value, memo))
        new._rows()
        return new

    @property
    def events(self) -> list[Event]:
        """Envoy's outlier detection event log of the route's sidecars."""
        return self.outlier.events

    def tick(self, t: int) -> None:
        """Interval ticks and merged deliveries due by ``t`` (§2.5-2.6), for every client."""
        self.outlier.tick(t)

    def ejections_active(self) -> int:
        """Hosts ejected now, summed over the clients."""
        return self.outlier.ejections_active()

    def delayed(self, n: int) -> None:
        """``n`` requests held by fault injection's delay (``delays_injected``)."""
        self.stats.delays_injected += n

    # -- one step of requests ------------------------------------------------------------------

    def send(
        self,
        t: int,
        n: int,
        in_eps: npt.NDArray[np.bool_],
        cat_by_pod: I64,
        status_by_pod: I64,
        cost_by_pod: F64 | None = None,
    ) -> tuple[I64, int, int]:
        """Route ``n`` requests of this step from the clients (fault delays already held by
        the caller, engine/sidecar/hold.py). Returns requests per host pod (index into
        ``self.pods``: the host of each request's last try), aborted by fault injection, and
        503 no-healthy-upstream. ``cost_by_pod``: each host's work for the path (ms), how long
        a failed try there takes. The time retried requests spent before their last try is
        left in ``waits_now``."""
        counts = np.zeros(self.pods.size, np.int64)
        aborted = uh = 0
        self.mirrored_now = 0
        self.waits_now = []
        nc = len(self.clients)
        # The route's requests go to the clients in turn, across steps (the k-th of the run to
        # client k mod clients), whatever the step.
        first_k = [(ci - self.sent) % nc for ci in range(nc)]
        self.sent += n
        v = self._last_view
        if (
            v is None
            or v.in_eps is not in_eps
            or v.cat is not cat_by_pod
            or v.status is not status_by_pod
            or v.cost is not cost_by_pod
        ):
            v = self._last_view = _HostView(self, in_eps, cat_by_pod, status_by_pod, cost_by_pod)
        self._view = v
        # Clients whose step is one plain round robin pass step together (_batch); from the
        # first that is not, each steps alone, in order (a batched step writes no event and
        # draws nothing, so the events and draws come in the same order).
        pol = self.policy
        batching = self.lb == "ROUND_ROBIN" and not (self.split or pol.abort or pol.mirror)
        batch: list[tuple[int, int]] = []
        for ci, c in enumerate(self.clients):
            self.outlier.members(t, c, in_eps)
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
            if pol.abort:
                a = int(self.rng.binomial(m, pol.abort))
                aborted += a
                self.stats.aborts_injected += a
                m -= a
            if pol.mirror:
                copies = int(self.rng.binomial(m, min(pol.mirror, 1.0)))
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
        self.outlier.advance(ci, c, t + (k0 * step) // max(n, 1))

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
            self._pooled[: rows.size] |= sent  # each keeps its connection (pool.py)
        else:
            self._rq[rows] += per
            self._c5xx[rows] = np.where(sent, 0, self._c5xx[rows])
            self._cgw[rows] = np.where(sent, 0, self._cgw[rows])
            self._pooled[rows] |= sent
        return np.asarray(per.sum(axis=0), np.int64)

    def shares(self, in_eps: B) -> tuple[npt.NDArray[np.float64], float]:
        """How the route's next request is shared out as the clients' load balancers see the
        hosts now (ejections as delivered, the panic threshold), each client sending its turn:
        per host, and the share that finds no host (503 no healthy upstream)."""
        out = np.zeros(self.pods.size)
        none = 0.0
        members = np.flatnonzero(in_eps)
        for c in self.clients:
            hosts, _ = self._pickable(c, members)
            if hosts.size:
                out[hosts] += 1.0 / (len(self.clients) * hosts.size)
            else:
                none += 1.0 / len(self.clients)
        return out, none

    def _hosts(self, c: Client, in_eps: npt.NDArray[np.bool_]) -> tuple[I64, bool]:
        return self._pickable(c, self._view.members)

    def _pickable(self, c: Client, members: I64) -> tuple[I64, bool]:
        """The host set to pick from as the load balancer sees it, and whether it is in panic
        (§3.3)."""
        if members.size == 0:
            return members, False
        healthy = members[~c.visible[members]]
        availability = min(100, 140 * healthy.size // members.size)
        panic = availability < 100 and 100.0 * healthy.size / members.size < self.panic
        return (members if panic else healthy), panic

    def _walk(self, view: _HostView, hosts: I64) -> RetryWalk:
        """The retry walk over a pickable host set (kept with the view)."""
        key = hosts.tobytes()
        walk = view.walks.get(key)
        if walk is None:
            walk = view.walks[key] = RetryWalk(self.policy, view.retriable[hosts], view.try_ms[hosts])
        return walk

    def _retried(self, walk: RetryWalk, visits: I64) -> None:
        """Count the retries of requests starting at each state ``visits`` times, and the time
        they spent before their last try."""
        again = (visits > 0) & (walk.retries > 0)
        if not again.any():
            return
        groups: dict[tuple[float, int], int] = {}
        for s in np.flatnonzero(again).tolist():
            key = (float(walk.failed_ms[s]), int(walk.retries[s]))
            groups[key] = groups.get(key, 0) + int(visits[s])
        self.waits_now += retry_waits(self.policy, groups, self.retried)
        self.retried += sum(groups.values())
        self.stats.upstream_rq_retry += int((visits * walk.retries).sum())

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
            self.outlier.advance(ci, c, at(0))
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
                    c.pooled[answered] = True
                    got[hosts] = per
                    return got, 0

        j = uh = 0
        while j < m:
            self.outlier.advance(ci, c, at(j))
            limit = m
            if c.next_tick is not None:
                limit = min(limit, first(c.next_tick))
            if c.pending is not None:
                limit = min(limit, first((c.pending + 1) // 2))  # a lagged delivery follows its ms
            if c.due:
                limit = min(limit, first(c.due[0][0] + 1))
            view = self._view
            hosts, panic = self._hosts(c, in_eps)
            p = None  # the picks' probabilities when not even (least request, pool.py)
            hang = -1  # the host whose kept-alive connection the request after this chunk takes
            if view.dead_any and hosts.size:
                released = pool.next_release(c, hosts, at(j))
                if released is not None:
                    limit = min(limit, first(released))
                p = pool.weights(c, hosts, self.lb, at(j))
            avail = max(limit - j, 1)
            if hosts.size == 0:
                uh += avail  # 503 UH
                j += avail
                continue
            if view.dead_any:
                avail, hang, p = pool.cut(
                    c, hosts, view.dead[hosts], avail, p, self.lb == "ROUND_ROBIN", self.rng
                )
                if avail == 0:
                    self._hang(ci, c, hosts, hang, at(j), got)
                    j += 1
                    continue
            if panic:
                self.stats.lb_healthy_panic += avail
            k = hosts.size
            refused, hung, st = view.refused[hosts], view.hung[hosts], view.st[hosts]
            # None of the hosts can be ejected when every one answers below 500 and connects:
            # no request cuts the chunk short.
            fails = bool(view.counts[hosts].any())
            raw_need = self.outlier.need(c, hosts, refused, hung, st) if fails else None
            start = j
            # (Not on the way to a kept-alive connection's hang: those requests are fewer than
            # the hosts, spread as a plain pass.)
            walk = self._walk(view, hosts) if self.lb == "ROUND_ROBIN" and view.retries and hang < 0 else None
            if walk is not None and nc * step >= walk.longest * max(n, 1):
                # Each request's retries are picked before the client's next request: its tries
                # follow from the index it starts at (engine/sidecar/retry.py).
                run = walk.run(c.cursor)
                cut = avail
                if raw_need is not None:
                    can = raw_need < NEVER
                    if can.any():
                        reach = run.first_reaching(raw_need[can], np.flatnonzero(can))
                        cut = min(avail, reach) if reach is not None else avail
                visits = run.visits(cut)
                per = run.tries(visits)
                c.cursor += int((visits * walk.picks).sum())  # retries' picks count too (§3.4)
                j += cut

                def nth(i: int, x: int, run: WalkRun = run, start: int = start) -> int:
                    at_ = run.nth(i, x)
                    assert at_ is not None
                    return at(start + at_)

                lag = None if view.lag is None else view.lag[hosts]
                self.outlier.report(ci, c, hosts, per, refused, hung, st, nth, view.counts, lag)
                pool.note(c, hosts, per, refused, hung, view.dead[hosts])
                self._retried(walk, visits)
                got[hosts] += np.bincount(walk.final, weights=visits, minlength=k).astype(np.int64)
                continue
            if fails:
                assert raw_need is not None
                need = np.minimum(raw_need, avail + 1)  # no crossing past avail
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
                # Random and least request (equal loads: power of two choices picks evenly;
                # a request hung on a dead host makes them uneven, pool.py).
                drawn = self.rng.multinomial(avail, np.full(k, 1.0 / k) if p is None else p).astype(np.int64)
                if fails:
                    per = np.minimum(drawn, need)
                    cut = avail - int((drawn - per).sum())
                else:
                    per, cut = drawn, avail

                when = _drawn_times(at, start, drawn, avail)

            j += cut
            lag = None if view.lag is None else view.lag[hosts]
            self.outlier.report(ci, c, hosts, per, refused, hung, st, when, view.counts, lag)
            pool.note(c, hosts, per, refused, hung, view.dead[hosts])
            if not view.retries:
                got[hosts] += per
                if hang >= 0 and j - start == avail:  # the chunk ran to the hang
                    self._hang(ci, c, hosts, hang, at(j), got)
                    j += 1
                continue
            retried = view.retriable[hosts] & (per > 0)
            good = view.good[hosts]
            if retried.any() and good.any():
                # The retry avoids the host already tried (previous_hosts) and lands on one that
                # answers (§5.5); every attempt was reported to its host above. (Round robin
                # with requests closer together than their retries take: the retries' picks
                # interleave with other requests' in Envoy; here the first tries are spread
                # evenly and each retry takes one pick, docs/fidelity.md.)
                moved = int(per[retried].sum())
                self.stats.upstream_rq_retry += moved
                if self.lb == "ROUND_ROBIN":
                    c.cursor += moved
                groups: dict[tuple[float, int], int] = {}
                for i in np.flatnonzero(retried).tolist():
                    key = (float(view.try_ms[hosts[i]]), 1)
                    groups[key] = groups.get(key, 0) + int(per[i])
                self.waits_now += retry_waits(self.policy, groups, self.retried)
                self.retried += moved
                per[retried] = 0
                others = np.flatnonzero(good)
                per[others] += moved // others.size
                per[others[: moved % others.size]] += 1
            got[hosts] += per
            if hang >= 0 and j - start == avail:
                self._hang(ci, c, hosts, hang, at(j), got)
                j += 1
        return got, uh

    def _hang(self, ci: int, c: Client, hosts: I64, i: int, when: int, got: I64) -> None:
        """The request at ``when`` takes the client's kept-alive connection to the dead host
        ``hosts[i]`` (pool.py): it hangs there, unreported, until its client gives up or the
        route's timer fires (a 504, reported then as any hung try); not retried."""
        got[hosts[i]] += 1
        pool.take(c, int(hosts[i]), when, self.hang_ms)
        if self.lb == "ROUND_ROBIN":
            c.cursor += 1
        if self.policy.times_out:
            yes, no, one = np.ones(1, bool), np.zeros(1, bool), np.ones(1, np.int64)
            report = (one, no, yes, np.full(1, 504), lambda _i, _x: when, self._view.counts)
            self.outlier.report(ci, c, hosts[i : i + 1], *report)
