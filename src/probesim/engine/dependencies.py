"""Dependency calls: what a call to a shared dependency gives the app, per try and after the
app's retries and circuit breaker, as a few outcome classes (probability, latency, failed).

Faults act where Istio puts them, in the caller's sidecar: a delayed call waits before it is
sent, an aborted one fails at once. Outages refuse calls at once or make them hang. A try that
takes longer than the app's client timeout fails at the timeout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from probesim.model.scenario import AbortFault, DelayFault, Dependency, DependencyCall

INF_MS = 1e12


@dataclass(frozen=True)
class Outcome:
    prob: float
    latency: float  # ms
    failed: bool


REFUSED = [Outcome(1.0, 0.0, True)]  # a call that fails at once: refused, no endpoint


def one_try(dep: Dependency, call: DependencyCall, t: int, refused: float = 0.0) -> list[Outcome]:
    """The outcomes of a single try at scenario time ``t``; ``refused``: the share of calls the
    dependency turns away because it is at capacity."""
    timeout = float(call.timeout) if call.timeout is not None else INF_MS
    if refused > 0:
        rest = one_try(dep, call, t)
        return [Outcome(refused, 0.0, True)] + [
            Outcome(o.prob * (1 - refused), o.latency, o.failed) for o in rest
        ]
    for o in dep.outages:
        if o.at <= t < o.at + o.for_:
            # A hung call fails at its timeout (docs/fidelity.md: also when the outage ends first).
            return [Outcome(1.0, 0.0, True) if o.mode == "refuse" else Outcome(1.0, timeout, True)]
    pd = sum(f.percent for f in dep.faults if isinstance(f, DelayFault)) / 100
    delay = max((f.delay for f in dep.faults if isinstance(f, DelayFault)), default=0)
    pa = sum(f.percent for f in dep.faults if isinstance(f, AbortFault)) / 100
    pd, pa = min(pd, 1.0), min(pa, 1.0)
    out = []
    for p, waited in ((pd, float(delay)), (1 - pd, 0.0)):
        if p <= 0:
            continue
        if pa > 0:
            out.append(Outcome(p * pa, min(waited, timeout), True))  # aborted after any delay
        if pa < 1:
            lat = waited + dep.latency
            out.append(Outcome(p * (1 - pa), min(lat, timeout), lat >= timeout))
    return out


def with_retries(tries: list[Outcome], call: DependencyCall) -> list[Outcome]:
    """Outcome classes after up to ``attempts`` tries: success at try j, or failure of all."""
    q = sum(o.prob for o in tries if not o.failed)
    p = 1.0 - q
    ok_lat = sum(o.prob * o.latency for o in tries if not o.failed) / q if q > 0 else 0.0
    fail_lat = sum(o.prob * o.latency for o in tries if o.failed) / p if p > 0 else 0.0
    n, b = call.retries.attempts, call.retries.backoff
    a = _allowed(p, call)
    out = []
    for j in range(n):  # success at try j + 1 after j failures (and j allowed retries)
        prob = q * p**j * a**j
        if prob > 1e-12:
            out.append(Outcome(prob, j * (fail_lat + b) + ok_lat, False))
    for j in range(1, n):  # failed try j, retry not allowed
        prob = p**j * a ** (j - 1) * (1 - a)
        if prob > 1e-12:
            out.append(Outcome(prob, j * fail_lat + (j - 1) * b, True))
    if p**n * a ** (n - 1) > 1e-12:
        out.append(Outcome(p**n * a ** (n - 1), n * fail_lat + (n - 1) * b, True))
    return out


def expected_tries(tries: list[Outcome], call: DependencyCall) -> float:
    """Tries one call makes on average: the first, and each retry its failures before allow
    (within the budget, as ``with_retries`` lets them through)."""
    p = sum(o.prob for o in tries if o.failed)
    a = _allowed(p, call)
    return sum((p * a) ** j for j in range(call.retries.attempts))


def _allowed(p: float, call: DependencyCall) -> float:
    """The chance a retry is let through: a retry budget lets each through with probability a,
    so that retries stay within budget % of first tries (the expected retries per call are
    p + p^2 + ... + p^(n-1), p the chance a try fails)."""
    wanted = sum(p**j for j in range(1, call.retries.attempts))
    budget = call.retries.budget
    return 1.0 if budget is None or wanted <= budget / 100 else (budget / 100) / wanted


MAX_CLASSES = 256  # outcome classes kept between calls of a sequence (the result keeps 8)


def chain(per_call: list[list[Outcome]]) -> list[Outcome]:
    """Calls made one after another; the route fails at the first failed call."""
    return merge(sequence(per_call))


def sequence(per_call: list[list[Outcome]]) -> list[Outcome]:
    """The outcome classes of calls made one after another, before ``merge``: at most
    MAX_CLASSES, whatever the number of calls. Every combination of per-call outcomes would be
    exponential (20 calls with retries against a faulty dependency: 546 MB); classes with the
    same (latency, failed) are one class after each call, and only beyond MAX_CLASSES are
    nearby latencies bucketed, so a few calls give exactly the classes of every combination."""
    out = [Outcome(1.0, 0.0, False)]
    for classes in per_call:
        nxt = [o for o in out if o.failed]
        for o in out:
            if o.failed:
                continue
            nxt += [Outcome(o.prob * c.prob, o.latency + c.latency, c.failed) for c in classes]
        out = _coarsened(_same_merged(nxt))
    return out


def _same_merged(classes: list[Outcome]) -> list[Outcome]:
    """Classes with the same latency and verdict as one, in the order first seen."""
    acc: dict[tuple[float, bool], float] = {}
    for c in classes:
        acc[(c.latency, c.failed)] = acc.get((c.latency, c.failed), 0.0) + c.prob
    return [Outcome(p, lat, failed) for (lat, failed), p in acc.items()]


def _coarsened(classes: list[Outcome]) -> list[Outcome]:
    """At most MAX_CLASSES: classes of the same verdict whose latencies are within a few percent
    share a bucket, at their probability-weighted mean latency (probability of failure and
    mean latency kept); buckets widen until few enough."""
    width = 0.01
    while len(classes) > MAX_CLASSES:
        buckets: dict[tuple[bool, int], tuple[float, float]] = {}
        for c in classes:
            key = (c.failed, math.floor(math.log1p(max(c.latency, 0.0)) / math.log1p(width)))
            p, weighted = buckets.get(key, (0.0, 0.0))
            buckets[key] = (p + c.prob, weighted + c.prob * c.latency)
        classes = [Outcome(p, w / p if p > 0 else 0.0, failed) for (failed, _), (p, w) in buckets.items()]
        width *= 2
    return classes


def merge(classes: list[Outcome], limit: int = 8) -> list[Outcome]:
    """Same (latency, failed) merged; beyond ``limit`` classes, the least likely fold into the
    nearest kept one of the same kind."""
    acc: dict[tuple[float, bool], float] = {}
    for c in classes:
        key = (round(c.latency, 3), c.failed)
        acc[key] = acc.get(key, 0.0) + c.prob
    items = sorted(acc.items(), key=lambda kv: -kv[1])
    # Each verdict keeps a class, so that neither folds into the other: many small successes
    # (a long sequence of calls) went into failures, and the route always failed.
    if (
        limit > 1
        and len({fa for (_, fa), _ in items}) == 2
        and len({fa for (_, fa), _ in items[:limit]}) == 1
    ):
        missing = next(i for i, ((_, fa), _) in enumerate(items) if fa != items[0][0][1])
        items.insert(limit - 1, items.pop(missing))
    kept = items[:limit]
    for (lat, failed), prob in items[limit:]:
        same = [i for i, ((la, fa), _) in enumerate(kept) if fa == failed] or list(range(len(kept)))
        i = min(same, key=lambda i: abs(kept[i][0][0] - lat))
        kept[i] = (kept[i][0], kept[i][1] + prob)
    return [Outcome(prob, lat, failed) for (lat, failed), prob in kept]


def streak_probability(p_fail: float, calls: float, k: int) -> float:
    """Chance that ``calls`` calls, each failing with ``p_fail``, contain ``k`` failures in a row
    (the first such run opens a breaker): 1 - (1 - (1 - p) p^k)^n, ~ enough for a fluid model."""
    if calls <= 0 or p_fail <= 0:
        return 0.0
    if p_fail >= 1:
        return 1.0 if calls >= k else 0.0
    per = (1 - p_fail) * p_fail**k
    return 1.0 - math.exp(calls * math.log1p(-per)) if per < 1 else 1.0
