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
    # A retry budget lets each retry through with probability a, so that retries stay within
    # budget % of first tries (the expected retries per call are p + p^2 + ... + p^(n-1)).
    wanted = sum(p**j for j in range(1, n))
    budget = call.retries.budget
    a = 1.0 if budget is None or wanted <= budget / 100 else (budget / 100) / wanted
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


def chain(per_call: list[list[Outcome]]) -> list[Outcome]:
    """Calls made one after another; the route fails at the first failed call."""
    out = [Outcome(1.0, 0.0, False)]
    for classes in per_call:
        nxt = [o for o in out if o.failed]
        for o in out:
            if o.failed:
                continue
            nxt += [Outcome(o.prob * c.prob, o.latency + c.latency, c.failed) for c in classes]
        out = nxt
    return merge(out)


def merge(classes: list[Outcome], limit: int = 8) -> list[Outcome]:
    """Same (latency, failed) merged; beyond ``limit`` classes, the least likely fold into the
    nearest kept one of the same kind."""
    acc: dict[tuple[float, bool], float] = {}
    for c in classes:
        key = (round(c.latency, 3), c.failed)
        acc[key] = acc.get(key, 0.0) + c.prob
    items = sorted(acc.items(), key=lambda kv: -kv[1])
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
