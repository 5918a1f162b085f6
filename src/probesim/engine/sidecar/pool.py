"""Each client sidecar's kept-alive connections to its hosts, as far as they decide what a host on
a failed node does to the client's requests (Envoy's HTTP/1.1 connection pool,
source/common/conn_pool/conn_pool_base.cc):

- after a request Envoy keeps its connection open (Istio's idle timeout is an hour) and the next
  request to that host takes it (``newStream``: a ready client first); a connection goes when the
  app closes it (it stopped: refused) or the host leaves the cluster. probesim keeps one per client
  and host that has answered the client;
- when the host's node fails, the next request to it goes out on that connection: no answer
  comes, nothing resets it. It hangs until its client gives up (the downstream reset closes the
  upstream stream: no result reaches outlier detection) or the route's timeout fires (a 504, a
  local-origin timeout). The connection is gone with it; the requests after it need a new one,
  which waits for the connect timeout (route.py);
- least request picks the lesser of two random hosts by active requests (``rq_active``, counted
  once a request is on a connection, ``attachStreamToClient``; a request waiting for a new
  connection is not): while the hung request is there, the dead host is picked only when both
  choices land on it — 1/k² of the picks instead of 1/k — which slows the errors that eject it.

Per client, two arrays over the hosts (rows of the route's clients × hosts arrays, route.py):
``pooled`` (an idle connection kept) and ``held_until`` (when the request hung on it ends).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.sidecar.outlier import NEVER, Client

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


def two_choices(active: I64) -> F64:
    """Least request's pick, per host: the first of two uniform draws (with replacement) unless
    the second has fewer active requests (``unweightedHostPick``: ``sampled < candidate``)."""
    k = active.size
    at_least = (active[None, :] >= active[:, None]).sum(axis=1)  # second draws it keeps the first
    more = (active[None, :] > active[:, None]).sum(axis=1)  # first draws it replaces
    return np.asarray((at_least + more) / float(k * k), np.float64)


def weights(c: Client, hosts: I64, lb: str, now: int) -> F64 | None:
    """The load balancer's pick probabilities over ``hosts`` as the hung requests make them
    (None: even)."""
    if lb != "LEAST_REQUEST":
        return None
    active = (c.held_until[hosts] > now).astype(np.int64)
    return two_choices(active) if active.any() else None


def next_release(c: Client, hosts: I64, now: int) -> int | None:
    """When the next hung request among ``hosts`` ends (None: none outstanding)."""
    held = c.held_until[hosts]
    later = held[held > now]
    return int(later.min()) if later.size else None


def cut(
    c: Client,
    hosts: I64,
    dead: B,
    avail: int,
    p: F64 | None,
    rr: bool,
    rng: np.random.Generator,
) -> tuple[int, int, F64 | None]:
    """Where the next of the client's ``avail`` requests takes a kept-alive connection to a dead
    host: (requests before it, that host's index in ``hosts`` or -1 when none in ``avail``, and
    the pick probabilities of the requests before it — kept from the dead host when drawn)."""
    fresh = dead & c.pooled[hosts]
    if not fresh.any():
        return avail, -1, p
    k = hosts.size
    if rr:
        order = (np.arange(k) - c.cursor) % k
        first = int(order[fresh].min())
        if first >= avail:
            return avail, -1, p
        return first, int(np.flatnonzero(fresh & (order == first))[0]), p
    q = np.full(k, 1.0 / k) if p is None else p
    before = int(rng.geometric(float(q[fresh].sum()))) - 1
    rest = np.where(fresh, 0.0, q)
    cond = rest / rest.sum() if rest.sum() > 0 else rest
    if before >= avail:
        return avail, -1, cond
    pick = np.flatnonzero(fresh)
    i = int(pick[rng.choice(pick.size, p=q[pick] / q[pick].sum())]) if pick.size > 1 else int(pick[0])
    return before, i, cond


def take(c: Client, h: int, when: int, waits_ms: float | None) -> None:
    """A request at ``when`` takes the client's kept-alive connection to dead host ``h``: the
    connection is gone with it, and the request is active there for ``waits_ms`` (None: for
    ever)."""
    c.pooled[h] = False
    c.held_until[h] = when + int(waits_ms) if waits_ms is not None else NEVER


def note(c: Client, hosts: I64, per: I64, refused: B, hung: B, dead: B) -> None:
    """A chunk's tries: a host that answered keeps a connection; one that refused (its app
    stopped, on a live node) has closed the ones it had."""
    sent = per > 0
    c.pooled[hosts[sent & ~refused & ~hung]] = True
    c.pooled[hosts[sent & refused & ~dead]] = False
