"""What a VirtualService route asks of the sidecars that send its requests (RoutePolicy):
fault injection (aborts and delays, as shares of the requests), retries (attempts and the
failures retry_on names, Istio's default without a retries block), the timeouts (when a
hung host's request ends with a 504, and when it reaches outlier detection) and mirroring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from probesim.mesh.envoy import DEFAULT_RETRY_ON
from probesim.mesh.istio import HTTPRoute, ms

I64 = npt.NDArray[np.int64]

# What a try met besides a status, for ``RoutePolicy.retried``.
REFUSED_TRY, HUNG_TRY, TIMED_OUT_TRY = -1, -2, -3


@dataclass
class RoutePolicy:
    abort: float  # the share of requests fault injection aborts
    delay: float  # the share it delays (held delay_ms before the router sends it)
    retries: int  # attempts
    retry_connect: bool
    retry_5xx: bool
    retry_gateway: bool
    retry_codes: set[int]
    retry_timeout: bool
    times_out: bool  # a hung host's request ends with a 504 (a route or per-try timeout)
    timeout_ms: int  # when a timed-out request reaches its host's monitor (0: never)
    mirror: float  # copies per request
    delay_ms: int = 0  # how long a delayed request waits before it is sent
    per_try_ms: int = 0  # a try's timeout (0: none)
    route_ms: int = 0  # the route's timeout over every try (0: none, Istio's default)
    backoff_ms: float = 25.0  # the retries' base interval (Envoy's default 25 ms)
    # Istio's retry_host_predicate previous_hosts (removed by retryIgnorePreviousHosts: false):
    # a retry's pick is repeated while it lands on a host already tried, up to
    # host_selection_retry_max_attempts (Istio: 5) more picks, then the last one is used.
    previous_hosts: bool = True
    host_selection_attempts: int = 5

    @classmethod
    def of(cls, route: HTTPRoute | None) -> RoutePolicy:
        """The policy of a VirtualService route (None: Istio's defaults)."""
        f = route.fault if route else None
        abort = (
            (f.abort.percentage.value / 100 if f and f.abort and f.abort.percentage else 0.0) if f else 0.0
        )
        delay = (
            (f.delay.percentage.value / 100 if f and f.delay and f.delay.percentage else 0.0) if f else 0.0
        )
        retries = route.retries if route else None
        retries_n = 2 if retries is None else max(retries.attempts, 0)
        retry_on = [
            x.strip()
            for x in (retries.retry_on if retries and retries.retry_on else DEFAULT_RETRY_ON).split(",")
        ]
        retry_connect = retries_n > 0 and bool(
            {"connect-failure", "reset", "5xx", "gateway-error"} & set(retry_on)
        )
        retry_5xx = retries_n > 0 and "5xx" in retry_on
        retry_gateway = retries_n > 0 and ("gateway-error" in retry_on or retry_5xx)
        retry_codes = {int(x) for x in retry_on if x.isdigit()} if retries_n > 0 else set()
        # A per-try timeout is retried only as a reset (§5.5.4).
        retry_timeout = retries_n > 0 and bool({"5xx", "gateway-error", "reset"} & set(retry_on))
        timeout = (route.retries.per_try_timeout if route and route.retries else None) or (
            route.timeout if route else None
        )
        times_out = timeout is not None and ms(timeout) not in (None, 0)
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
        timeout_ms = min((v for v in limits if v), default=0)
        mirror = 0.0
        if route is not None:
            if route.mirror is not None:
                mirror = route.mirror_percentage.value / 100 if route.mirror_percentage else 1.0
            mirror += sum((m.percentage.value / 100 if m.percentage else 1.0) for m in route.mirrors)
        per_try = route.retries.per_try_timeout if route and route.retries else None
        ignore_previous = bool(route and route.retries and route.retries.retry_ignore_previous_hosts is False)
        return cls(
            abort,
            delay,
            retries_n,
            retry_connect,
            retry_5xx,
            retry_gateway,
            retry_codes,
            retry_timeout,
            times_out,
            timeout_ms,
            mirror,
            delay_ms=(ms(f.delay.fixed_delay) if f and f.delay else None) or 0,
            per_try_ms=ms(per_try) or 0,
            route_ms=(ms(route.timeout) if route else None) or 0,
            backoff_ms=float((ms(route.retries.backoff) if route and route.retries else None) or 25),
            previous_hosts=not ignore_previous,
        )

    def backoff(self, j: int) -> float:
        """The mean wait before retry ``j`` (1, 2, …): uniform in [0, base × 2^(j-1)), the
        interval capped at 10 × base (§5.5.4)."""
        return min(self.backoff_ms * 2 ** (j - 1), 10 * self.backoff_ms) / 2

    def backoff_interval(self, j: int) -> float:
        """The interval retry ``j`` (1, 2, …) draws its wait from, ``random() % interval``: the
        base, doubled after each retry while below half the maximum (10 × base), else the
        maximum (backoff_strategy.cc, JitteredExponentialBackOffStrategy::nextBackOffMs:
        25, 50, 100, 200, 250, 250 … ms for Envoy's base)."""
        top = 10 * self.backoff_ms
        interval = self.backoff_ms
        for _ in range(j - 1):
            interval = interval * 2 if interval < top / 2 else top
        return interval

    def backoff_points(self, j: int, q: int) -> list[float]:
        """Retry ``j``'s wait as ``q`` equally likely values: the middles of ``q`` equal slices
        of ``random() % interval`` (whole ms from 0 to interval - 1)."""
        top = self.backoff_interval(j) - 1
        return [top * (i + 0.5) / q for i in range(q)]

    def retried(self, code: int) -> bool:
        """Whether a failed try is retried: ``code`` its status, or REFUSED_TRY (a connect
        failure), TIMED_OUT_TRY (the per-try timeout's 504) or HUNG_TRY (no answer and no
        timeout: never); ``retriable``'s rules for one try."""
        refused, hung = code == REFUSED_TRY, code in (HUNG_TRY, TIMED_OUT_TRY)
        st = 504 if code == TIMED_OUT_TRY else max(code, 0)
        return bool(self.retriable(np.array([refused]), np.array([hung]), np.array([st]))[0])

    def retriable(
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
