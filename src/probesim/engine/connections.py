"""A route's client connections: with keep-alive, the open ones per pod and the clients
holding none, the requests whose SYN waits for an endpoint (``noEndpoint: retransmit``), and
how each step's requests spread over the pods their clients hold connections to
(``keep_alive``). engine/traffic.py's phases call it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.containers import Containers
from probesim.engine.fleet import RUNNING, Fleet
from probesim.engine.routing import Route

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

# When a client's TCP sends its SYN again, after the first, if nothing answers (Linux: initial
# RTO 1 s, doubled each time, tcp_syn_retries 6); it gives up at 127 s.
SYN_AT_MS = (0, 1_000, 3_000, 7_000, 15_000, 31_000, 63_000)
SYN_GIVE_UP_MS = 127_000


class Connections:
    """A route's client connections: with keep-alive, the open ones per pod (with the instance
    of the container they reached) and the clients (k6 VUs) holding none; and the requests
    whose connection is still being opened (``noEndpoint: retransmit``)."""

    def __init__(self, n_pods: int) -> None:
        self.open = np.zeros(n_pods, np.int64)
        self.instance = np.full(n_pods, -1, np.int64)
        self.loose = 0
        self.connecting: list[list[int]] = []  # [first SYN ms, SYNs sent, requests]
        self.waited: list[tuple[int, int]] = []  # this step's: (requests, ms they waited to connect)

    @property
    def waiting(self) -> int:
        """Requests still waiting for their SYN to be answered."""
        return sum(e[2] for e in self.connecting) if self.connecting else 0

    def wait(self, t: int, n: int) -> None:
        """``n`` requests sent a SYN at ``t`` that nothing answered."""
        if n:
            self.connecting.append([t, 1, n])

    def due(self, t: int, ready: bool, timeout: int) -> tuple[int, int]:
        """Requests whose SYN is resent now: how many get through (``ready``: an endpoint
        answers) and how many the client gives up on (its timeout, or TCP's)."""
        go = late = 0
        keep = []
        limit = min(timeout, SYN_GIVE_UP_MS)
        for e in self.connecting:
            first, sent, n = e
            if t - first >= limit:
                late += n
            elif sent < len(SYN_AT_MS) and t >= first + SYN_AT_MS[sent]:
                if ready:
                    go += n
                    self.waited.append((n, t - first))
                    continue
                e[1] += 1
                keep.append(e)
            else:
                keep.append(e)
        self.connecting = keep
        return go, late


def keep_alive(
    c: Connections,
    f: Fleet,
    route: Route,
    ctr: Containers,
    gone: B,
    admitted: B,
    held: I64,
    n: int,
    ready: I64,
    t: int,
    k: int,
    rec: dict[str, I64],
    key: str,
) -> tuple[I64, I64]:
    """Spread ``n`` requests of a keep-alive route (its connections ``c``) over the pods its
    clients hold connections to; returns the pods and their counts (``held``: per container,
    the route's requests in flight). kube-proxy picks a pod per connection, so an open
    connection stays with its pod whatever its readiness (kubernetes/kubernetes#100492).
    Connections close when their pod goes, and when the container serving them stops or is
    replaced, unless an Istio sidecar holds them (it answers 503 while the app is down).
    Clients reuse idle connections first; a new one opens for each request that finds none
    idle (k6 adds VUs only then) and for each client whose connection closed. Opening one
    with no Ready endpoint is refused at once (kube-proxy's REJECT), or waits for the next
    SYN (``noEndpoint: retransmit``)."""
    refused = rec[f"{key}.no_endpoint"]
    tc = route.target_container
    has = tc >= 0
    inst = np.full(f.n_pods, -1, np.int64)
    running = np.zeros(f.n_pods, bool)
    inst[has] = ctr.instance[tc[has]]
    running[has] = ctr.state[tc[has]] == RUNNING
    closed = gone | ~admitted | ~has | (~f.pod_sidecar & (~running | (inst != c.instance)))
    c.loose += int(c.open[closed].sum())
    c.open[closed] = 0
    c.instance = inst
    busy = np.bincount(f.container_pod, weights=held, minlength=f.n_pods).astype(np.int64)
    tr = route.traffic
    want = int(busy.sum()) + c.waiting + min(n, tr.pre_allocated_vus or 1)
    if tr.max_vus is not None:
        want = min(want, tr.max_vus)
    c.loose += max(want - int(c.open.sum()) - c.loose - c.waiting, 0)
    per = np.zeros(f.n_pods, np.int64)

    def connect(m: int) -> None:
        """``m`` requests open a connection first (their clients hold none)."""
        if ready.size:
            got = np.full(ready.size, m // ready.size, np.int64)
            got[(route.cursor + np.arange(m % ready.size)) % ready.size] += 1
            route.cursor = (route.cursor + m) % ready.size
            per[ready] += got
            c.open[ready] += got
        elif tr.no_endpoint == "retransmit":
            c.wait(t, m)
        else:
            refused[k] += m
            c.loose += m

    go, late = c.due(t, ready.size > 0, route.timeout) if c.waiting else (0, 0)
    rec[f"{key}.timeout"][k] += late
    c.loose += late
    opening = min(c.loose, n)
    c.loose -= opening
    if opening or go:
        connect(opening + go)
    rest = n - opening
    idle = np.maximum(c.open - busy, 0)
    weight = idle if idle.any() else c.open
    if rest and not weight.any():
        connect(rest)
    elif rest:
        share = rest * weight / weight.sum()
        base = np.floor(share).astype(np.int64)
        top = np.argsort(base - share, kind="stable")[: rest - int(base.sum())]
        base[top] += 1
        per += base
    pods = np.flatnonzero(per)
    return pods, per[pods]
