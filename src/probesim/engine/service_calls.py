"""What a try of a call to a Service of the scenario gets (``calls: [{service: …}]``), from the
state the Service's endpoints are in as the step begins, as outcome classes like a
dependency's (engine/dependencies.py): each Ready endpoint takes an equal share (balanced per
call); one that refuses or answers an error status fails the try at once, a hung one holds it
until the caller's timeout; a loaded one answers after the wait its backlog gives, its service
time stretched by contention, and its own calls' outcomes (a backend whose dependency fails
answers its ``onError``). No endpoint: refused at once, as kube-proxy rejects the connection.

When the Service has a DestinationRule or VirtualService, the calls go through a client
sidecar (through_sidecar): its load balancer's hosts (ejected ones left out, the panic
threshold), fault injection, per-try and route timeouts, and retries onto another host of the
failures its retryOn names, after Envoy's jittered back-off.

The calls themselves are a route (engine/routing.py's call_routes) whose arrivals are the
callers' calls of the step before, so the Service's pods really serve them."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.call_classes import K
from probesim.engine.capacity import MAX_RHO, QUOTA_PERIOD_MS, CapacityModel
from probesim.engine.dependencies import INF_MS, REFUSED, Outcome, merge
from probesim.engine.routing import Route
from probesim.engine.sidecar.policy import HUNG_TRY, REFUSED_TRY, TIMED_OUT_TRY, RoutePolicy
from probesim.engine.sidecar.route import MeshRoute
from probesim.engine.sidecar.split import Sidecars, SplitRoute
from probesim.kube.outcomes import UNREACHABLE
from probesim.kube.outcomes import Outcome as Meets

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
Try = tuple[float, float, bool, int]  # probability, latency (ms), failed, status or *_TRY
Classes = dict[tuple[float, bool], float]  # (latency, failed) → probability


def answers(
    cap: CapacityModel, ri: int, route: Route, eps: I64, cat: I64, started_at: I64, t: int
) -> list[Outcome]:
    """The outcome classes of one try on route ``ri`` (a call route) at ``t``: ``eps`` its
    endpoints and ``cat`` what a request meets on each."""
    if eps.size == 0:
        return REFUSED
    share = 1.0 / eps.size
    tc = route.target_container[eps]
    out: list[Outcome] = []
    ok = cat == Meets.OK
    loaded = ok & cap.loaded[tc]
    c = tc[loaded]
    full = np.zeros(c.size, bool)
    if c.size:
        full = cap.backlog[:, c].sum(axis=0) >= cap.room[c]  # answered 503 at once
    fails_now = int(((cat == Meets.REFUSED) | (cat == Meets.ERROR_STATUS)).sum()) + int(full.sum())
    if fails_now:
        out.append(Outcome(share * fails_now, 0.0, True))
    hung = int((cat == Meets.NO_ANSWER).sum())
    if hung:
        out.append(Outcome(share * hung, INF_MS, True))  # until the caller's timeout
    free = int((ok & ~cap.loaded[tc]).sum())
    if free:
        out.append(Outcome(share * free, 0.0, False))  # costs nothing: answered at once
    c = c[~full]
    if c.size:
        base = _served_in(cap, ri, c, started_at, t)
        prob, extra, failed = cap.classes.path_classes[route.path]
        for k in range(K):
            p = prob[k, c]
            for j in np.flatnonzero(p > 0).tolist():
                out.append(
                    Outcome(share * float(p[j]), float(base[j] + extra[k, c[j]]), bool(failed[k, c[j]]))
                )
    return merge(out, limit=K)


def _served_in(cap: CapacityModel, ri: int, c: I64, started_at: I64, t: int) -> npt.NDArray[np.float64]:
    """Per loaded container ``c``, the time a try waits and is served on route ``ri`` now (ms),
    before its own calls."""
    warm = np.where(t - started_at[c] < cap.warm_for[c], cap.warm_factor[c], 1.0)
    cpu = cap.cpu[ri * cap.k, c] * warm
    return np.asarray(
        cap.wait_ms[c]
        + cap.route_wall[ri, c]
        + cpu / (1.0 - np.minimum(cap.rho[c], MAX_RHO))
        + np.where(cap.throttled[c], QUOTA_PERIOD_MS / 2, 0.0)
    )


def through_sidecar(
    cap: CapacityModel,
    ri: int,
    route: Route,
    sidecars: Sidecars,
    in_eps: B,
    eps: I64,
    cat: I64,
    status: I64,
    started_at: I64,
    t: int,
    host_cat: I64 | None = None,
) -> list[Outcome]:
    """As ``answers``, for calls through the caller's sidecar: ``in_eps``, ``status`` and
    ``host_cat`` the sidecars' view of their hosts (engine/traffic.py's mesh view: a host on a
    failed node is UNREACHABLE there)."""
    if isinstance(sidecars, SplitRoute):
        parts = [(m, idx) for m, idx in zip(sidecars.parts, sidecars.index, strict=True)]
        total = sum(sidecars.weights)
        weights = [w / total if total else 0.0 for w in sidecars.weights]
    else:
        parts, weights = [(sidecars, np.arange(sidecars.pods.size))], [1.0]
    acc: Classes = {}
    for (m, idx), w in zip(parts, weights, strict=True):
        if w > 0:
            seen = None if host_cat is None else host_cat[idx]
            hosts = _host_tries(cap, ri, route, m, in_eps[idx], eps, cat, status[idx], started_at, t, seen)
            _add(acc, through_policy(m.policy, hosts), w)
    return merge([Outcome(p, lat, failed) for (lat, failed), p in acc.items()], limit=K)


def _host_tries(
    cap: CapacityModel,
    ri: int,
    route: Route,
    m: MeshRoute,
    in_eps: B,
    eps: I64,
    cat: I64,
    status: I64,
    started_at: I64,
    t: int,
    host_cat: I64 | None = None,
) -> tuple[list[tuple[float, list[Try]]], float]:
    """Per host the load balancer may pick: its share of the next try and what a try on it
    meets (a host on a failed node: a connect failure after the connect timeout); and the share
    that finds no host."""
    share, none = m.shares(in_eps)
    picked = np.flatnonzero(share > 0)
    pos = np.searchsorted(eps, m.pods[picked])
    tc = route.target_container[m.pods[picked]]
    hc = cat[pos]
    if host_cat is not None:
        hc = np.where(host_cat[picked] == UNREACHABLE, UNREACHABLE, hc)
    loaded = (hc == Meets.OK) & cap.loaded[tc]
    lc = tc[loaded]
    full = np.zeros(lc.size, bool)
    base = np.zeros(lc.size)
    if lc.size:
        full = cap.backlog[:, lc].sum(axis=0) >= cap.room[lc]
        base = _served_in(cap, ri, lc, started_at, t)
    prob, extra, failed = cap.classes.path_classes[route.path]
    out: list[tuple[float, list[Try]]] = []
    j = 0
    for i, h in enumerate(picked.tolist()):
        c = int(hc[i])
        tries: list[Try]
        if c == UNREACHABLE:
            tries = [(1.0, float(m.connect_ms), True, REFUSED_TRY)]
        elif c == Meets.REFUSED:
            tries = [(1.0, 0.0, True, REFUSED_TRY)]
        elif c == Meets.NO_ANSWER:
            tries = [(1.0, INF_MS, True, HUNG_TRY)]
        elif c == Meets.ERROR_STATUS:
            tries = [(1.0, 0.0, True, int(status[h]))]
        elif not loaded[i]:
            tries = [(1.0, 0.0, False, 200)]  # costs nothing: answered at once
        else:
            ci = int(lc[j])
            if full[j]:
                tries = [(1.0, 0.0, True, 503)]  # its backlog is full: 503 at once
            else:
                code = _failure_status(cap, ci, route.path)
                tries = [
                    (
                        float(prob[k, ci]),
                        float(base[j] + extra[k, ci]),
                        bool(failed[k, ci]),
                        code if failed[k, ci] else 200,
                    )
                    for k in range(K)
                    if prob[k, ci] > 0
                ]
            j += 1
        out.append((float(share[h]), tries))
    return out, none


def _failure_status(cap: CapacityModel, c: int, path: str) -> int:
    """The status a container answers when a request to ``path`` fails after its calls: the
    one its calls' ``onError`` and its ``errors`` agree on, else 500."""
    cost = cap.classes.behaviors[c].cost(path)
    codes = {x.on_error for x in cost.calls} | ({cost.errors.status} if cost.errors else set())
    return codes.pop() if len(codes) == 1 else 500


def through_policy(pol: RoutePolicy, picked: tuple[list[tuple[float, list[Try]]], float]) -> Classes:
    """A call's outcome classes through the sidecar: each try on a host picked by share, its
    per-try timeout; a failure retryOn names retried on another host (Envoy's previous_hosts
    predicate; the same host when there is no other), after the back-off; the route's timeout
    over them all; fault injection (a delay, then an abort) before any try, its delay outside
    the route's timeout."""
    hosts, none = picked
    per_try: list[tuple[float, list[Try]]] = []
    for w, tries in hosts:
        cut = []
        for p, lat, failed, code in tries:
            if pol.per_try_ms and lat >= pol.per_try_ms:
                cut.append((p, float(pol.per_try_ms), True, TIMED_OUT_TRY))  # 504 UT
            else:
                cut.append((p, lat, failed, code))
        per_try.append((w, cut))
    # Level r: the classes of a call with r retries left, per host it starts on.
    level: list[Classes] = [{} for _ in per_try]
    for i, (_, tries) in enumerate(per_try):
        for p, lat, failed, _code in tries:
            _add(level[i], {(lat, failed): p}, 1.0)
    retried = [any(f and pol.retried(code) for _, _, f, code in tries) for _, tries in per_try]
    shared = sum(w for w, _ in per_try)
    for r in range(1, pol.retries + 1):
        j = pol.retries - r + 1  # the retry's number, counted from the first try
        mix: Classes = {}
        for (w, _), cl in zip(per_try, level, strict=True):
            _add(mix, cl, w)
        nxt = list(level)
        for i, (w, tries) in enumerate(per_try):
            if not retried[i]:
                continue
            # Another host: the mixture without this one (this one when it is alone).
            rest: Classes = dict(mix)
            if shared - w > 1e-12:
                _add(rest, level[i], -w)
                rest = {k: v / (shared - w) for k, v in rest.items() if v > 1e-12}
            else:
                rest = dict(level[i])
            out: Classes = {}
            for p, lat, failed, code in tries:
                if failed and pol.retried(code):
                    wait = lat + pol.backoff(j)
                    _add(out, {(wait + la, fa): q for (la, fa), q in rest.items()}, p)
                else:
                    _add(out, {(lat, failed): p}, 1.0)
            nxt[i] = _merged(out)
        level = nxt
    call: Classes = {}
    for (w, _), cl in zip(per_try, level, strict=True):
        _add(call, cl, w)
    if pol.route_ms:
        # The route's timer covers the tries and back-offs, not a fault delay: the router arms
        # it when the fault filter lets the request go on (router.cc, onRequestComplete).
        capped: Classes = {}
        for (lat, fa), p in call.items():
            _add(capped, {(float(pol.route_ms), True) if lat >= pol.route_ms else (lat, fa): p}, 1.0)
        call = capped
    if none > 0:
        _add(call, {(0.0, True): none}, 1.0)  # 503 no healthy upstream
    if pol.delay and pol.delay_ms:
        delayed = {(lat + pol.delay_ms, fa): p for (lat, fa), p in call.items()}
        call = {k: v * (1 - pol.delay) for k, v in call.items()}
        _add(call, delayed, pol.delay)
    if pol.abort:  # answered by the sidecar after any delay: no try
        call = {k: v * (1 - pol.abort) for k, v in call.items()}
        held = pol.delay if pol.delay_ms else 0.0  # the share aborted after its delay
        _add(call, {(0.0, True): 1 - held}, pol.abort)
        if held:
            _add(call, {(float(pol.delay_ms), True): held}, pol.abort)
    return call


def _add(acc: Classes, classes: Classes, weight: float) -> None:
    for k, p in classes.items():
        acc[k] = acc.get(k, 0.0) + weight * p


def _merged(classes: Classes) -> Classes:
    """At most a few dozen classes, as ``merge`` folds them."""
    kept = merge([Outcome(p, lat, fa) for (lat, fa), p in classes.items() if p > 0], limit=4 * K)
    return {(o.latency, o.failed): o.prob for o in kept}
