"""Retries through a round robin load balancer, as Envoy's router makes them: a retry's host is
picked by the same load balancer as any request (``ZoneAwareLoadBalancerBase::chooseHost``
calls ``chooseHostOnce``, whose round robin takes ``hosts[rr_index++ % size]``,
``unweightedHostPick`` in load_balancer_impl.cc), so every retry advances the index that the
next request starts from; with Istio's ``previous_hosts`` predicate a pick that lands on a host
the request already tried is made again, up to ``host_selection_retry_max_attempts`` (5) more
times, after which the last pick is kept.

When a client's requests are further apart than a request's tries take (the failed tries and
the longest back-offs), no other request picks in between, so a request starting at index
``s`` always takes the same hosts and leaves the index at the same place: its tries are a
function of ``s mod hosts`` (RetryWalk), and the requests of a chunk follow the states
``s → s + picks(s)``, a prefix then a cycle of at most ``hosts`` states (WalkRun). Counts over
any number of requests, and the request at which a host gets its n-th try, then cost
O(hosts), whatever the rate.
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from probesim.engine.sidecar.policy import RoutePolicy

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

BACKOFF_POINTS = 4  # equally likely values per retry's back-off, for the latency it adds


class RetryWalk:
    """Per round robin state (the index mod the ``k`` hosts): the hosts a request starting
    there tries, in order, the picks it takes, and the time its failed tries take."""

    def __init__(self, policy: RoutePolicy, retriable: B, try_ms: F64) -> None:
        """``retriable``: per host, whether a try there fails in a way the route retries;
        ``try_ms``: how long a failed try there takes before the sidecar knows."""
        k = retriable.size
        self.k = k
        self.picks = np.zeros(k, np.int64)
        self.retries = np.zeros(k, np.int64)
        self.failed_ms = np.zeros(k)  # the failed tries' time before the last try
        self.longest = 0.0  # the longest a request's picks span, with the longest back-offs
        tried_by: list[list[int]] = []
        again = policy.host_selection_attempts if policy.previous_hosts else 0
        for s in range(k):
            pos = s
            host = pos % k
            pos += 1
            tried = [host]
            span = 0.0
            while retriable[host] and len(tried) <= policy.retries:
                j = len(tried)  # this retry's number
                span += float(try_ms[host]) + policy.backoff_interval(j)
                self.failed_ms[s] += float(try_ms[host])
                for _ in range(again + 1):
                    host = pos % k
                    pos += 1
                    if host not in tried:
                        break
                tried.append(host)
            self.picks[s] = pos - s
            self.retries[s] = len(tried) - 1
            self.longest = max(self.longest, span)
            tried_by.append(tried)
        self.tried = tried_by
        self.final = np.array([t[-1] for t in tried_by], np.int64)
        # Every try as (state, host), for the per-host sums.
        self.try_state = np.array([s for s, t in enumerate(tried_by) for _ in t], np.int64)
        self.try_host = np.array([h for t in tried_by for h in t], np.int64)
        self._runs: dict[int, WalkRun] = {}

    def run(self, start: int) -> WalkRun:
        """The states of the requests starting at index ``start`` (mod k), kept."""
        s = start % self.k
        got = self._runs.get(s)
        if got is None:
            got = self._runs[s] = WalkRun(self, s)
        return got


class WalkRun:
    """The states a client's requests start from, from one state on: a prefix, then a cycle."""

    def __init__(self, walk: RetryWalk, s0: int) -> None:
        self.walk = walk
        seen: dict[int, int] = {}
        order: list[int] = []
        s = s0
        while s not in seen:
            seen[s] = len(order)
            order.append(s)
            s = int((s + walk.picks[s]) % walk.k)
        self.order = np.array(order, np.int64)
        self.lp = seen[s]  # requests before the cycle
        self.lc = len(order) - self.lp  # the cycle's requests
        self._at: dict[int, tuple[I64, I64]] = {}

    def visits(self, x: int) -> I64:
        """Per state, how many of the first ``x`` requests start there."""
        out = np.zeros(self.walk.k, np.int64)
        pre = min(x, self.lp)
        out[self.order[:pre]] += 1  # (each state once in the prefix and once in the cycle)
        rest = x - pre
        if rest > 0:
            cyc = self.order[self.lp :]
            whole, part = divmod(rest, self.lc)
            out[cyc] += whole
            out[cyc[:part]] += 1
        return out

    def tries(self, visits: I64) -> I64:
        """Per host, the tries those requests make there."""
        w = self.walk
        return np.bincount(w.try_host, weights=visits[w.try_state], minlength=w.k).astype(np.int64)

    def nth(self, host: int, x: int) -> int | None:
        """The index (from 0) of the request that makes ``host``'s ``x``-th try (from 1), or
        None when it never gets that many."""
        kept = self._at.get(host)
        if kept is None:
            w = self.walk
            pos = [p for p, s in enumerate(self.order.tolist()) for h in w.tried[s] if h == host]
            arr = np.array(pos, np.int64)
            kept = self._at[host] = (arr[arr < self.lp], arr[arr >= self.lp])
        pre, cyc = kept
        if x <= pre.size:
            return int(pre[x - 1])
        if cyc.size == 0:
            return None
        whole, part = divmod(x - pre.size - 1, cyc.size)
        return int(cyc[part]) + whole * self.lc

    def first_reaching(self, need: I64, hosts: I64) -> int | None:
        """How many requests it takes until one of ``hosts`` gets its ``need``-th try (the
        request that makes it included); None when none ever does."""
        best: int | None = None
        for h, n in zip(hosts.tolist(), need.tolist(), strict=True):
            at = self.nth(h, n)
            if at is not None and (best is None or at + 1 < best):
                best = at + 1
        return best


def retry_waits(
    policy: RoutePolicy, groups: dict[tuple[float, int], int], before: int
) -> list[tuple[int, float]]:
    """The time retried requests spend before their last try, as (requests, ms) entries:
    ``groups`` maps (their failed tries' time, retries) to requests. Each retry's back-off
    takes BACKOFF_POINTS equally likely values (the first two retries'; later ones take their
    mean), and the route's retried requests take the combinations in turn (``before``: how many
    it retried before these), so that one request a step still gets every value in turn."""
    out: list[tuple[int, float]] = []
    for (failed_ms, r), n in sorted(groups.items()):
        if n <= 0:
            continue
        spread = [policy.backoff_points(j, BACKOFF_POINTS) for j in range(1, min(r, 2) + 1)]
        rest = sum(policy.backoff_points(j, 1)[0] for j in range(3, r + 1))
        combos = [sum(c) for c in itertools.product(*spread)] or [0.0]
        p = len(combos)
        each, extra = divmod(n, p)
        first = before % p
        for i, b in enumerate(combos):
            m = each + (1 if (i - first) % p < extra else 0)
            if m:
                out.append((m, failed_ms + b + rest))
        before += n
    return out
