"""What a try of a call to a Service of the scenario gets (``calls: [{service: …}]``), from the
state the Service's endpoints are in as the step begins, as outcome classes like a
dependency's (engine/dependencies.py): each Ready endpoint takes an equal share (balanced per
call); one that refuses or answers an error status fails the try at once, a hung one holds it
until the caller's timeout; a loaded one answers after the wait its backlog gives, its service
time stretched by contention, and its own calls' outcomes (a backend whose dependency fails
answers its ``onError``). No endpoint: refused at once, as kube-proxy rejects the connection.

The calls themselves are a route (engine/routing.py's call_routes) whose arrivals are the
callers' calls of the step before, so the Service's pods really serve them."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.call_classes import K
from probesim.engine.capacity import MAX_RHO, QUOTA_PERIOD_MS, CapacityModel
from probesim.engine.dependencies import INF_MS, REFUSED, Outcome, merge
from probesim.engine.routing import Route
from probesim.kube.outcomes import Outcome as Meets

I64 = npt.NDArray[np.int64]


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
        warm = np.where(t - started_at[c] < cap.warm_for[c], cap.warm_factor[c], 1.0)
        cpu = cap.cpu[ri * cap.k, c] * warm
        base = (
            cap.wait_ms[c]
            + cap.route_wall[ri, c]
            + cpu / (1.0 - np.minimum(cap.rho[c], MAX_RHO))
            + np.where(cap.throttled[c], QUOTA_PERIOD_MS / 2, 0.0)
        )
        prob, extra, failed = cap.classes.path_classes[route.path]
        for k in range(K):
            p = prob[k, c]
            for j in np.flatnonzero(p > 0).tolist():
                out.append(
                    Outcome(share * float(p[j]), float(base[j] + extra[k, c[j]]), bool(failed[k, c[j]]))
                )
    return merge(out, limit=K)
