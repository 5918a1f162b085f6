"""Traffic splits: a VirtualService route's weighted destinations (subsets of a
DestinationRule, other hosts), a cluster per destination with its own sidecars (SplitRoute),
the requests of a step shared out by weight deterministically (weighted_counts).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from probesim.engine.sidecar.outlier import SidecarStats
from probesim.engine.sidecar.policy import RoutePolicy
from probesim.engine.sidecar.route import F64, MeshRoute
from probesim.results import Event

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


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
        self.waits_now: list[tuple[int, float]] = []
        self._views: tuple[object, object, object, object, list[tuple[B, I64, I64, F64 | None]]] | None = None

    @property
    def policy(self) -> RoutePolicy:
        """What the VirtualService route asks (one route for every destination)."""
        return self.parts[0].policy

    @property
    def stats(self) -> SidecarStats:
        out = SidecarStats()
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

    def delayed(self, n: int) -> None:
        """As MeshRoute.delayed (the fault filter comes before the split: its first cluster's
        counters hold the count)."""
        self.parts[0].delayed(n)

    def send(
        self, t: int, n: int, in_eps: B, cat_by_pod: I64, status_by_pod: I64, cost_by_pod: F64 | None = None
    ) -> tuple[I64, int, int]:
        """As MeshRoute.send, each destination getting its share of the ``n`` requests."""
        kept = self._views
        if (
            kept is None
            or kept[0] is not in_eps
            or kept[1] is not cat_by_pod
            or kept[2] is not status_by_pod
            or kept[3] is not cost_by_pod
        ):
            # The same arrays for the parts while the loop passes the same (their caches hold).
            views = [
                (in_eps[i], cat_by_pod[i], status_by_pod[i], None if cost_by_pod is None else cost_by_pod[i])
                for i in self.index
            ]
            kept = self._views = (in_eps, cat_by_pod, status_by_pod, cost_by_pod, views)
        counts = np.zeros(self.pods.size, np.int64)
        aborted = uh = 0
        self.mirrored_now = 0
        self.waits_now = []
        shares = weighted_counts(self.weights, self.sent, n)
        self.sent += n
        for m, idx, share, (e, c, st, co) in zip(self.parts, self.index, shares, kept[4], strict=True):
            if share == 0:
                m.mirrored_now = 0
                m.waits_now = []
                continue
            got, a, u = m.send(t, share, e, c, st, co)
            np.add.at(counts, idx, got)
            aborted += a
            uh += u
            self.mirrored_now += m.mirrored_now
            self.waits_now += m.waits_now
        return counts, aborted, uh


Sidecars = MeshRoute | SplitRoute  # what a traffic route's requests go through
