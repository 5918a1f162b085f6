"""Client sidecars (Envoy as Istio configures it) in front of a Service's endpoints: each client
population decides alone. Per client and step, counts only:

- load balancing over the endpoints that are not ejected (round robin continuing from its index,
  least request and random as an even or drawn split), with the panic threshold (§3.2-3.3);
- outlier detection: consecutive 5xx and gateway errors counted per host as results arrive,
  ejection at the Nth (immediate, §2.3) within the cap that counts the host being ejected
  (§2.4), ejection time base × multiplier capped at max, unejection and multiplier decay only on
  interval ticks (§2.5-2.6);
- fault injection before sending (aborts never reach a host: no outlier update, no retry, §5.1);
- retries of connect failures (Istio's default retry_on) onto other hosts;
- mirroring as counted copies.

A step's requests are taken in round-robin order: the step is cut at each ejection so that a
host gets exactly the errors it returns before it is ejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.fleet import Fleet
from probesim.manifests.kubernetes import container_port
from probesim.mesh.envoy import DEFAULT_RETRY_ON, cluster_name
from probesim.mesh.istio import DestinationRule, HTTPRoute, OutlierDetection, find_route, ms
from probesim.model.scenario import Scenario, Traffic
from probesim.results import Event

I64 = npt.NDArray[np.int64]

# Endpoint categories from the traffic step: 1 refused, 2 hung, 3 error status, 4 ok (3 may be < 500).
REFUSED, HUNG, ERROR, OK = 1, 2, 3, 4


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
        return d


@dataclass
class Client:
    """One sidecar's view of one cluster, per endpoint pod (index = pod)."""

    n: int
    cursor: int = 0
    ejected: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, bool))
    c5xx: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    cgw: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    backoff: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    ejected_at: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    unejected_at: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    num_ejections: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    clocal: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    rq: I64 = field(default_factory=lambda: np.zeros(0, np.int64))  # this interval's requests per host
    rq_failed: I64 = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self) -> None:
        n = self.n
        self.rq, self.rq_failed = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.ejected = np.zeros(n, bool)
        self.c5xx, self.cgw, self.clocal = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.backoff = np.zeros(n, np.int64)
        self.ejected_at = np.full(n, -1, np.int64)
        self.unejected_at = np.full(n, -1, np.int64)
        self.num_ejections = np.zeros(n, np.int64)


@dataclass
class Stats:
    ejections_enforced_total: int = 0
    ejections_detected_consecutive_5xx: int = 0
    ejections_detected_consecutive_gateway_failure: int = 0
    ejections_detected_consecutive_local_origin_failure: int = 0
    ejections_overflow: int = 0
    ejections_detected_success_rate: int = 0
    ejections_detected_failure_percentage: int = 0
    aborts_injected: int = 0
    delays_injected: int = 0
    no_healthy_upstream: int = 0
    lb_healthy_panic: int = 0
    upstream_rq_retry: int = 0
    mirrored: int = 0


class MeshRoute:
    """The sidecars of one traffic route's clients."""

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
    ) -> None:
        self.name = name
        self.pods = host_pods  # the Service's pods, in pod order (the cluster's hosts)
        self.upstreams = upstreams  # "ip:port" per host, for the event log
        self.cluster = cluster
        self.rng = rng
        policy = rule.spec.traffic_policy if rule else None
        od = policy.outlier_detection if policy else None
        self.detector = Detector.from_istio(od) if od is not None else None
        # Split mode: connect failures count as local origin, apart from 5xx (§2.2, §4.2.7).
        self.split = bool(od and od.split_external_local_origin_errors)
        self.local_threshold = (od.consecutive_local_origin_failures or 5) if self.split and od else 0
        self.panic = self.detector.panic if self.detector else 50.0  # Envoy's default without the block
        self.lb = lb
        self.clients = [Client(host_pods.size) for _ in range(clients)]
        for c in self.clients:
            c.cursor = int(rng.integers(0, max(host_pods.size, 1)))  # Envoy seeds the index at random
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
        mirror = 0.0
        if route is not None:
            if route.mirror is not None:
                mirror = route.mirror_percentage.value / 100 if route.mirror_percentage else 1.0
            mirror += sum((m.percentage.value / 100 if m.percentage else 1.0) for m in route.mirrors)
        self.mirror = mirror
        self.stats = Stats()
        self.mirrored_now = 0  # copies sent this step
        self.events: list[Event] = []
        self.next_tick = self.detector.interval if self.detector else None

    # -- the interval timer --------------------------------------------------------------------

    def tick(self, t: int) -> None:
        """Interval ticks due by ``t``: unejection and multiplier decay (§2.5-2.6)."""
        d = self.detector
        if d is None or self.next_tick is None:
            return
        while self.next_tick <= t:
            now = self.next_tick
            for ci, c in enumerate(self.clients):
                for h in np.flatnonzero(c.ejected):
                    if min(d.base * int(c.backoff[h]), d.max_time) <= now - int(c.ejected_at[h]):
                        c.ejected[h] = False
                        c.unejected_at[h] = now
                        c.c5xx[h] = c.cgw[h] = c.clocal[h] = 0
                        self._event(now, ci, int(h), "UNEJECT", "")
                self._success_rate(now, ci, c, d)
                decay = (
                    ~c.ejected
                    & (c.unejected_at >= 0)
                    & (now - c.unejected_at >= d.interval)
                    & (c.backoff > 0)
                )
                c.backoff[decay] -= 1
            self.next_tick += d.interval

    def _success_rate(self, now: int, ci: int, c: Client, d: Detector) -> None:
        """Success-rate, then failure-percentage detection over the interval just ended (§2.7-2.8)."""
        rq, failed = c.rq, c.rq_failed
        c.rq, c.rq_failed = np.zeros_like(rq), np.zeros_like(failed)
        total = c.n
        sr_hosts = np.flatnonzero((rq >= d.sr_volume) & ~c.ejected)
        if sr_hosts.size >= d.sr_min_hosts:
            rate = 100.0 * (rq[sr_hosts] - failed[sr_hosts]) / rq[sr_hosts]
            threshold = rate.mean() - d.sr_stdev * rate.std()
            for h in sr_hosts[rate < threshold]:
                self.stats.ejections_detected_success_rate += 1
                self._eject_or_not(now, ci, c, int(h), total, d.enforce_sr, "SUCCESS_RATE")
        fp_hosts = np.flatnonzero((rq >= d.fp_volume) & ~c.ejected)
        if fp_hosts.size >= d.fp_min_hosts:
            pct = 100.0 * failed[fp_hosts] / rq[fp_hosts]
            for h in fp_hosts[pct >= d.fp_threshold]:
                self.stats.ejections_detected_failure_percentage += 1
                self._eject_or_not(now, ci, c, int(h), total, d.enforce_fp, "FAILURE_PERCENTAGE")

    def _eject_or_not(self, t: int, ci: int, c: Client, h: int, total: int, enforce: int, kind: str) -> bool:
        """``ejectHost`` (§2.4): the cap counting this host, then the enforcement roll."""
        d = self.detector
        assert d is not None
        if 100.0 * (int(c.ejected.sum()) + 1) / max(total, 1) > d.max_percent:
            self.stats.ejections_overflow += 1
            return False
        if enforce < 100 and self.rng.integers(0, 100) >= enforce:
            return False
        c.ejected[h] = True
        c.ejected_at[h] = t
        c.num_ejections[h] += 1
        if c.backoff[h] * d.base < d.max_time + d.base:
            c.backoff[h] += 1
        self.stats.ejections_enforced_total += 1
        self._event(t, ci, h, "EJECT", kind)
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
        share = [
            n // len(self.clients) + (1 if i < n % len(self.clients) else 0) for i in range(len(self.clients))
        ]
        for ci, c in enumerate(self.clients):
            m = share[ci]
            if m == 0:
                continue
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
            got, lost = self._client_step(t, ci, c, m, in_eps, cat_by_pod, status_by_pod)
            counts += got
            uh += lost
        self.stats.no_healthy_upstream += uh
        return counts, aborted, uh

    def _hosts(self, c: Client, in_eps: npt.NDArray[np.bool_]) -> tuple[I64, bool]:
        """The host set to pick from, and whether the LB is in panic (§3.3)."""
        members = np.flatnonzero(in_eps)
        if members.size == 0:
            return members, False
        healthy = members[~c.ejected[members]]
        availability = min(100, 140 * healthy.size // members.size)
        panic = availability < 100 and 100.0 * healthy.size / members.size < self.panic
        return (members if panic else healthy), panic

    def _client_step(
        self, t: int, ci: int, c: Client, m: int, in_eps: npt.NDArray[np.bool_], cat: I64, status: I64
    ) -> tuple[I64, int]:
        """Pick hosts for ``m`` requests of one client. The step is cut when a failing host would
        be ejected, so that it gets exactly the errors it returns before that."""
        got = np.zeros(self.pods.size, np.int64)
        total = int(in_eps.sum())
        while m > 0:
            hosts, panic = self._hosts(c, in_eps)
            if hosts.size == 0:
                return got, m  # 503 UH
            if panic:
                self.stats.lb_healthy_panic += m
            k = hosts.size
            refused = cat[hosts] == REFUSED
            # A hung host answers nothing: with a route or per-try timeout the sidecar gives up
            # with 504 (reported as a local-origin timeout, §2.1.3); without one it just waits.
            hung = cat[hosts] == HUNG
            st = np.where(refused, 503, np.where(cat[hosts] == ERROR, status[hosts], 200))
            st = np.where(hung, 504 if self.times_out else 0, st)  # 0: no answer, nothing reported
            need = np.minimum(self._need(c, hosts, refused, st, total), m + 1)  # no crossing past m
            if self.lb == "ROUND_ROBIN":
                order = (np.arange(k) - c.cursor) % k  # position of each host in this round
                pos = order + (need - 1) * k + 1  # the request that makes it cross
                cut = int(min(m, pos.min()))
                per = np.full(k, cut // k, np.int64) + (order < cut % k)
                c.cursor = (c.cursor + cut) % k
                m -= cut
            else:
                # Random and least request (equal loads: power of two choices picks evenly).
                per = self.rng.multinomial(m, np.full(k, 1.0 / k)).astype(np.int64)
                surplus = np.where(per > need, per - need, 0)
                per -= surplus
                m = int(surplus.sum())
            self._report(t, ci, c, hosts, per, refused, st, total)
            retried = self._retriable(refused, hung, st) & (per > 0)
            good = (st > 0) & (st < 500)
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
        return got, 0

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

    def _need(self, c: Client, hosts: I64, refused: npt.NDArray[np.bool_], st: I64, total: int) -> I64:
        """Requests until each host would be ejected; a large number when it cannot be (it
        answers well, its detection is not enforced, or the cap forbids another ejection)."""
        never = np.full(hosts.size, np.iinfo(np.int64).max // 4, np.int64)
        d = self.detector
        if d is None or 100.0 * (int(c.ejected.sum()) + 1) / max(total, 1) > d.max_percent:
            return never
        local = refused & self.split
        fivexx = (st >= 500) & ~local
        gateway = (st >= 502) & (st <= 504) & ~local
        need = never.copy()
        if d.enforce_5xx >= 100 and d.consecutive_5xx > 0:
            need = np.where(fivexx, np.maximum(d.consecutive_5xx - c.c5xx[hosts], 1), need)
        if d.enforce_gateway >= 100 and d.consecutive_gateway > 0:
            need = np.minimum(
                need, np.where(gateway, np.maximum(d.consecutive_gateway - c.cgw[hosts], 1), never)
            )
        if self.local_threshold > 0:
            need = np.minimum(
                need, np.where(local, np.maximum(self.local_threshold - c.clocal[hosts], 1), never)
            )
        return need

    def _report(
        self,
        t: int,
        ci: int,
        c: Client,
        hosts: I64,
        per: I64,
        refused: npt.NDArray[np.bool_],
        st: I64,
        total: int,
    ) -> None:
        """Results reach each host's monitor (§2.2): successes reset the counters; 5xx and
        gateway errors count up (a connect failure is a 503, or a local-origin failure in split
        mode), and a detection fires each time a counter reaches its threshold."""
        recv = (per > 0) & (st > 0)
        local = refused & self.split
        failed = (st >= 500) | local
        c.rq[hosts] += per
        c.rq_failed[hosts[failed]] += per[failed]
        ok = recv & ~failed
        for counter in (c.c5xx, c.cgw, c.clocal):
            counter[hosts[ok]] = 0
        bad = recv & failed
        if not bad.any():
            return
        hb, pb, sb, lb = hosts[bad], per[bad], st[bad], local[bad]
        gw = (sb >= 502) & (sb <= 504) & ~lb
        c.clocal[hb] = np.where(lb, c.clocal[hb] + pb, c.clocal[hb])
        c.c5xx[hb] = np.where(lb, c.c5xx[hb], c.c5xx[hb] + pb)
        c.cgw[hb] = np.where(lb, c.cgw[hb], np.where(gw, c.cgw[hb] + pb, 0))
        if self.detector is not None:
            for h in hb:
                self._detect(t, ci, c, int(h), total)

    def _detect(self, t: int, ci: int, c: Client, h: int, total: int) -> None:
        """Detections for host ``h`` (§2.3): none while it is ejected; otherwise each time a
        counter reaches its threshold it is counted, then the host is ejected if the cap and
        the enforcement allow; the counter restarts either way."""
        d = self.detector
        assert d is not None
        checks: list[tuple[str, I64, int, int, str]] = [
            (
                "CONSECUTIVE_GATEWAY_FAILURE",
                c.cgw,
                d.consecutive_gateway,
                d.enforce_gateway,
                "consecutive_gateway_failure",
            ),
            ("CONSECUTIVE_5XX", c.c5xx, d.consecutive_5xx, d.enforce_5xx, "consecutive_5xx"),
            (
                "CONSECUTIVE_LOCAL_ORIGIN_FAILURE",
                c.clocal,
                self.local_threshold,
                100,
                "consecutive_local_origin_failure",
            ),
        ]
        for kind, counter, threshold, enforce, stat in checks:
            while threshold > 0 and not c.ejected[h] and counter[h] >= threshold:
                counter[h] -= threshold
                name = f"ejections_detected_{stat}"
                setattr(self.stats, name, getattr(self.stats, name) + 1)
                if self._eject_or_not(t, ci, c, h, total, enforce, kind):
                    counter[h] = 0

    def _event(self, t: int, ci: int, h: int, action: str, kind: str) -> None:
        """A line of Envoy's outlier detection event log (§2.12), from client ``ci``'s sidecar."""
        c = self.clients[ci]
        detail = f'"type":"{kind}",' if kind else ""
        msg = (
            f'{{{detail}"action":"{action}","cluster_name":"{self.cluster}","upstream_url":"{self.upstreams[h]}",'
            f'"num_ejections":{int(c.num_ejections[h])},"enforced":true}}'
        )
        type_ = "Warning" if action == "EJECT" else "Normal"
        self.events.append(Event(t, type_, f"Outlier{action.title()}", f"sidecar/client-{ci}", msg, "envoy"))

    def ejections_active(self) -> int:
        return int(sum(int(c.ejected.sum()) for c in self.clients))


def istio_for(scenario: Scenario, host: str, t: Traffic) -> tuple[DestinationRule | None, HTTPRoute | None]:
    """The DestinationRule for a Service and the VirtualService route a request matches; with
    neither, the request does not go through a sidecar's Envoy."""
    rule = next((r for r in scenario.destination_rules if r.spec.host.split(".")[0] == host), None)
    return rule, find_route(list(scenario.virtual_services), host, t.path, dict(t.headers), t.method)


def build_mesh(scenario: Scenario, fleet: Fleet, rng: np.random.Generator) -> dict[int, MeshRoute]:
    """A MeshRoute for each traffic route whose Service has a DestinationRule or VirtualService."""
    out: dict[int, MeshRoute] = {}
    for ri, route in enumerate(fleet.routes):
        if route.mirror_of >= 0:
            continue  # copies go straight to the mirror's endpoints
        host = route.service.name
        t = route.traffic
        rule, vroute = istio_for(scenario, host, t)
        if rule is None and vroute is None:
            continue
        policy = rule.spec.traffic_policy if rule else None
        lb = (
            policy.load_balancer.simple
            if policy and policy.load_balancer and policy.load_balancer.simple
            else "LEAST_REQUEST"
        )
        pods = np.flatnonzero(route.selects & (route.target_container >= 0))
        port = route.service.spec.ports[0].port if route.service.spec.ports else 80
        target = route.service.spec.ports[0].effective_target if route.service.spec.ports else port
        specs = [fleet.container_spec[int(route.target_container[p])] for p in pods]
        upstreams = [
            f"{fleet.pod_ip[p]}:{container_port(c, target) or target}"
            for p, c in zip(pods, specs, strict=True)
        ]
        cluster = cluster_name(host, port, None, route.service.metadata.namespace)
        out[ri] = MeshRoute(route.name, pods, upstreams, cluster, t.clients, rule, vroute, lb, rng)
    return out
