"""The cohorts of what a route's containers served in a step: the served counts (per outcome
class and container) matched with the client's side of the backlog, oldest arrival step first,
so that each cohort knows how long it waited (``cohorts``). engine/traffic.py's serving phase
calls it; engine/kernels_serving.py's cohorts kernels are its compiled form.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import span
from probesim.engine.kernel_choice import loaded_kernels

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


def cohorts(
    q: I64, queued_rows: I64, orphans: I64, active: I64, srv: I64, k: int
) -> tuple[I64, I64, I64, I64, I64, int]:
    """What a route's containers served this step (``srv``: per outcome class and container
    the capacity model stepped, ``active``), oldest first: requests whose client gave up
    (``orphans``, per container) are dropped, the rest taken off the client's side of the
    backlog ``q`` (arrival step slots × containers; ``queued_rows``: what each slot holds)
    by arrival step. Returns (class, container, its index in ``active``, steps waited,
    count) per cohort, each class's count shared among the arrival steps in proportion (the
    remainders by a north-west corner), and how many were taken off ``q``; updates ``q``,
    ``queued_rows`` and ``orphans``."""
    nb = loaded_kernels()
    if nb is not None:  # by engine/kernels.py: the same cohorts
        if srv.shape[0] == 1:
            cs, at, ages, counts, taken = nb.cohorts_one(q, queued_rows, orphans, active, srv[0], k)
            return np.zeros(cs.size, np.int64), cs, at, ages, counts, taken
        vs, cs, at, ages, counts, taken = nb.cohorts(
            q, queued_rows, orphans, active, np.ascontiguousarray(srv), k
        )
        return vs, cs, at, ages, counts, taken
    s = q.shape[0]
    tot = srv[0] if srv.shape[0] == 1 else srv.sum(axis=0)
    at = np.flatnonzero(tot)
    if at.size == 0:
        e = np.empty(0, np.int64)
        return e, e, e, e, e, 0
    cols = active[at]
    ci = span(cols)  # usually consecutive: views, not gathers
    tot = tot[at]
    orph = np.minimum(orphans[ci], tot)
    orphans[ci] -= orph
    need = tot - orph
    ages = np.arange(s - 1, -1, -1)  # oldest first
    rows = (k - ages) % s
    # Only the arrival steps that still hold requests (FIFO: a few), and the newest, which
    # takes what was untracked: the rest hold nothing to take (slots × containers per step).
    held: B = (queued_rows > 0)[rows]
    held[-1] = True
    ages, rows = ages[held], rows[held]
    # Taken oldest first, each arrival step as much as it holds of what is still needed;
    # once nothing is, the newer steps give nothing.
    takes: list[tuple[int, I64]] = []  # (arrival step's index in rows, take per container)
    left = need.copy()
    taken = 0
    for i, r in enumerate(rows.tolist()):
        qr = q[r]
        sub = qr[ci]
        tk = np.minimum(sub, left)
        n_tk = int(tk.sum())
        if n_tk:
            qr[ci] = sub - tk
            left -= tk
            takes.append((i, tk))
            queued_rows[r] -= n_tk
            taken += n_tk
            if not left.any():
                break
    newest = rows.size - 1
    if left.any():  # none untracked, but fresh if there were
        if takes and takes[-1][0] == newest:
            takes[-1] = (newest, takes[-1][1] + left)
        else:
            takes.append((newest, left))
    if srv.shape[0] == 1:
        # One outcome class: each container's cohorts are its arrival steps' takes, in
        # (container, age) order, what the general split below gives with one class.
        if not takes:
            e = np.empty(0, np.int64)
            return e, e, e, e, e, taken
        if len(takes) == 1:
            i, tk = takes[0]
            cc = np.flatnonzero(tk)
            z = np.zeros(cc.size, np.int64)
            return z, cols[cc], at[cc], np.full(cc.size, ages[i]), tk[cc], taken
        steps = np.stack([tk for _, tk in takes], axis=1)  # container × arrival step taken from
        cc, j = np.nonzero(steps)
        z = np.zeros(cc.size, np.int64)
        return z, cols[cc], at[cc], ages[[i for i, _ in takes]][j], steps[cc, j], taken
    take = np.zeros((rows.size, cols.size), np.int64)  # arrival step × container
    for i, tk in takes:
        take[i] = tk
    buckets = np.vstack([orph[None, :], take])  # (1 + s) × containers: orphans, then by age
    waited = np.concatenate([[-1], ages])
    part = srv[:, at]
    multi = (buckets > 0).sum(axis=0) > 1
    one = np.flatnonzero(~multi)
    vs, cc = np.nonzero(part[:, one])
    cc = one[cc]
    bs = np.argmax(buckets > 0, axis=0)[cc]
    counts = part[vs, cc]
    if multi.any():
        m = np.flatnonzero(multi)
        # Only the classes and arrival steps these containers hold (FIFO: a few steps).
        kv = np.flatnonzero(part[:, m].any(axis=1))
        kb = np.flatnonzero(buckets[:, m].any(axis=1))
        n, b = part[np.ix_(kv, m)], buckets[np.ix_(kb, m)]
        joint = n[:, None, :] * b[None, :, :] // b.sum(axis=0)
        r, c = n - joint.sum(axis=1), b - joint.sum(axis=0)
        rh, ch = np.cumsum(r, axis=0), np.cumsum(c, axis=0)
        lo = np.maximum((rh - r)[:, None, :], (ch - c)[None, :, :])
        joint += np.maximum(np.minimum(rh[:, None, :], ch[None, :, :]) - lo, 0)
        jv, jb, jm = np.nonzero(joint)
        vs = np.concatenate([vs, kv[jv]])
        bs = np.concatenate([bs, kb[jb]])
        cc = np.concatenate([cc, m[jm]])
        counts = np.concatenate([counts, joint[jv, jb, jm]])
        order = np.lexsort((bs, cc, vs))
        vs, bs, cc, counts = vs[order], bs[order], cc[order], counts[order]
    live = waited[bs] >= 0
    return vs[live], cols[cc[live]], at[cc[live]], waited[bs][live], counts[live], taken
