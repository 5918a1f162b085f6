"""The serving phase's compiled kernels (its per-route work): the served cohorts (``cohorts_one``,
``cohorts``: engine/cohorts.py's), their latency parts (``latency_parts``) and the answers due
later (``pend_later``: engine/traffic.py's). Each is the numpy form it replaces written as
loops, to the bit (engine/kernels.py says what that takes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probesim.engine.kernels_base import F64, I64, B, jit, maximum, minimum
from probesim.engine.kernels_capacity import serve
from probesim.engine.kernels_states import find, state_bits, state_groups, step_quantiles
from probesim.engine.series_names import ERROR_STATUS_AT, OK_AT, TIMEOUT_AT

# serve_route's outcomes: nothing served; served, counted and its latencies in the step's CDF;
# served, the rest left to engine/traffic.py's numpy path (with the cohorts' parts).
NONE_SERVED, DONE, PARTS = 0, 1, 2


@jit
def _taken(
    q: I64, queued_rows: I64, orphans: I64, active: I64, tot: I64, k: int
) -> tuple[I64, I64, I64, I64, I64, int]:
    """engine/cohorts.py's cohorts up to the split (``tot``: what each container of ``active``
    served): orphans dropped, the rest taken off the client's backlog ``q`` (arrival steps ×
    containers) oldest first. Returns the served containers' indices in ``active``, the
    containers, their orphans, the arrival steps held (their ages) and what was taken from each
    (steps held × containers), and how many were taken off ``q``; updates ``q``,
    ``queued_rows`` and ``orphans``."""
    s = q.shape[0]
    m = 0
    for j in range(tot.size):
        if tot[j] != 0:
            m += 1
    at = np.empty(m, np.int64)
    cols = np.empty(m, np.int64)
    orph = np.empty(m, np.int64)
    left = np.empty(m, np.int64)
    i = 0
    for j in range(tot.size):
        if tot[j] != 0:
            c = active[j]
            at[i] = j
            cols[i] = c
            o = min(orphans[c], tot[j])
            orphans[c] -= o
            orph[i] = o
            left[i] = tot[j] - o
            i += 1
    # The arrival steps that hold requests, oldest first, and the newest (it takes the untracked).
    rows = np.empty(s, np.int64)
    ages = np.empty(s, np.int64)
    n_rows = 0
    for age in range(s - 1, -1, -1):
        r = ((k - age) % s + s) % s
        if queued_rows[r] > 0 or age == 0:
            rows[n_rows] = r
            ages[n_rows] = age
            n_rows += 1
    take = np.zeros((n_rows, m), np.int64)
    taken = 0
    remaining = 0
    for j in range(m):
        remaining += left[j]
    for i in range(n_rows):
        if remaining == 0:
            break
        r = rows[i]
        n_tk = 0
        for j in range(m):
            c = cols[j]
            tk = min(q[r, c], left[j])
            if tk != 0:
                q[r, c] -= tk
                left[j] -= tk
                take[i, j] = tk
                n_tk += tk
        if n_tk:
            queued_rows[r] -= n_tk
            taken += n_tk
            remaining -= n_tk
    if remaining:  # none untracked, but fresh if there were
        for j in range(m):
            take[n_rows - 1, j] += left[j]
    return at, cols, orph, ages[:n_rows].copy(), take, taken


@jit
def cohorts_one(
    q: I64, queued_rows: I64, orphans: I64, active: I64, served: I64, k: int
) -> tuple[I64, I64, I64, I64, int]:
    """engine/cohorts.py's cohorts with one outcome class (``served``: per container of
    ``active``). Returns per cohort its container, its index in ``active``, the steps it waited
    and its count, in (container, age) order, and how many were taken off ``q``."""
    at, cols, _, ages, take, taken = _taken(q, queued_rows, orphans, active, served, k)
    n_rows, m = take.shape
    n = 0
    for j in range(m):
        for i in range(n_rows):
            if take[i, j] != 0:
                n += 1
    out_cols = np.empty(n, np.int64)
    out_at = np.empty(n, np.int64)
    out_ages = np.empty(n, np.int64)
    out_counts = np.empty(n, np.int64)
    e = 0
    for j in range(m):
        for i in range(n_rows):
            if take[i, j] != 0:
                out_cols[e] = cols[j]
                out_at[e] = at[j]
                out_ages[e] = ages[i]
                out_counts[e] = take[i, j]
                e += 1
    return out_cols, out_at, out_ages, out_counts, taken


@jit
def cohorts(
    q: I64, queued_rows: I64, orphans: I64, active: I64, served: I64, k: int
) -> tuple[I64, I64, I64, I64, I64, int]:
    """engine/cohorts.py's cohorts with outcome classes (``served``: classes × containers of
    ``active``): each class's count shared among a container's buckets (its orphans, then its
    arrival steps) in proportion, the remainders by a north-west corner. Returns per cohort (not
    orphans) its class, container, index in ``active``, steps waited and count, in (class,
    container, age) order, and how many were taken off ``q``."""
    classes = served.shape[0]
    tot = np.zeros(served.shape[1], np.int64)
    for v in range(classes):
        for j in range(served.shape[1]):
            tot[j] += served[v, j]
    at, cols, orph, ages, take, taken = _taken(q, queued_rows, orphans, active, tot, k)
    n_rows, m = take.shape
    nb = n_rows + 1  # buckets: orphans, then the arrival steps held
    joint = np.zeros((classes, nb, m), np.int64)
    bucket = np.empty(nb, np.int64)
    r = np.empty(classes, np.int64)
    c = np.empty(nb, np.int64)
    for j in range(m):
        bucket[0] = orph[j]
        total = orph[j]
        for i in range(n_rows):
            bucket[i + 1] = take[i, j]
            total += take[i, j]
        for v in range(classes):
            n_v = served[v, at[j]]
            for b in range(nb):
                joint[v, b, j] = n_v * bucket[b] // total if total else 0
        for v in range(classes):
            r[v] = served[v, at[j]]
            for b in range(nb):
                r[v] -= joint[v, b, j]
        for b in range(nb):
            c[b] = bucket[b]
            for v in range(classes):
                c[b] -= joint[v, b, j]
        rh = 0
        for v in range(classes):
            rh += r[v]
            ch = 0
            for b in range(nb):
                ch += c[b]
                lo = max(rh - r[v], ch - c[b])
                joint[v, b, j] += max(min(rh, ch) - lo, 0)
    n = 0
    for v in range(classes):
        for j in range(m):
            for b in range(1, nb):
                if joint[v, b, j] != 0:
                    n += 1
    out_v = np.empty(n, np.int64)
    out_cols = np.empty(n, np.int64)
    out_at = np.empty(n, np.int64)
    out_ages = np.empty(n, np.int64)
    out_counts = np.empty(n, np.int64)
    e = 0
    for v in range(classes):
        for j in range(m):
            for b in range(1, nb):
                if joint[v, b, j] != 0:
                    out_v[e] = v
                    out_cols[e] = cols[j]
                    out_at[e] = at[j]
                    out_ages[e] = ages[b - 1]
                    out_counts[e] = joint[v, b, j]
                    e += 1
    return out_v, out_cols, out_at, out_ages, out_counts, taken


@jit
def latency_parts(
    service: F64,
    row0: int,
    vs: I64,
    at: I64,
    cs: I64,
    ages: I64,
    wait: F64,
    head_all: F64,
    sigma_all: F64,
    failed_all: B,
    calls: bool,
    step: float,
    limit: float,
    horizon: float,
) -> tuple[F64, F64, F64, F64, B, F64, B, bool]:
    """engine/traffic.py's _serve, per cohort of a route (its first row ``row0``): service
    time, time waited in whole steps, time waited before service, sigma, whether its calls
    failed, when its client sees the answer (from this step), and whether that is later."""
    n = cs.size
    sv = np.empty(n)
    waited = np.empty(n)
    d = np.empty(n)
    sigma = np.empty(n)
    failed = np.zeros(n, np.bool_)
    seen = np.empty(n)
    later = np.empty(n, np.bool_)
    later_any = False
    for e in range(n):
        sv[e] = service[row0 + vs[e], at[e]]
        waited[e] = ages[e] * step
        d[e] = max((wait[at[e]] if ages[e] == 0 else waited[e]) - head_all[cs[e]], 0.0)
        sigma[e] = sigma_all[cs[e]]
        if calls:
            failed[e] = failed_all[row0 + vs[e], cs[e]]
        seen[e] = minimum(minimum(d[e] + sv[e], limit) - waited[e], horizon)
        later[e] = seen[e] >= step
        later_any = later_any or later[e]
    return sv, waited, d, sigma, failed, seen, later, later_any


@jit
def pend_later(
    pending: I64,
    later_n: F64,
    later_t: F64,
    later: B,
    seen: F64,
    step: float,
    k: int,
    t: int,
    cs: I64,
    counts: I64,
    timed_out: I64,
    failed: B,
    waited: F64,
) -> I64:
    """engine/traffic.py's _serve for the answers a client sees after this step (``later``):
    each one's slot on the answer wheel ``pending`` (ok, error, timeout × slots × containers),
    their counts added there and to the slot's count and send times (in order, as np.add.at
    adds). Returns their slots."""
    slots_n = pending.shape[1]
    n = 0
    for e in range(later.size):
        if later[e]:
            n += 1
    slots = np.empty(n, np.int64)
    i = 0
    for e in range(later.size):
        if not later[e]:
            continue
        slot = (k + np.int64(np.ceil(seen[e] / step))) % slots_n
        slots[i] = slot
        i += 1
        later_n[slot] += counts[e]
        later_t[slot] += (t - waited[e]) * counts[e]
        ok = counts[e] - timed_out[e]
        pending[1 if failed[e] else 0, slot, cs[e]] += ok
        pending[2, slot, cs[e]] += timed_out[e]
    return slots


@jit
def serve_route(
    q: I64,
    queued_rows: I64,
    orphans: I64,
    active: I64,
    served: I64,
    k: int,
    service: F64,
    row0: int,
    wait: F64,
    head_all: F64,
    sigma_all: F64,
    step: float,
    limit: float,
    horizon: float,
    drawn: bool,
    late_keys: I64,
    late_values: F64,
    late_index: I64,
    row_keys: I64,
    rows: F64,
    row_index: I64,
    direct: bool,
    step_cdf: F64,
    ok: I64,
) -> tuple[int, int, I64, F64]:
    """engine/traffic.py's serve for a route with one outcome class: its cohorts (``cohorts_one``)
    and their latency parts and, in the usual case, the rest: every answer given within the step
    (none later), in one latency state, which cannot outlast the client's timeout (``drawn``:
    whether the timeout is finite) by the remembered chance (``late_*``, engine/state_memo.py),
    its CDF row remembered (``row*``), and their latency mixture going straight into the step's
    CDF (``direct``: no immediate answers and no SYNs waited this step). Then its ok count is
    added at ``ok[k]`` and its mixture to ``step_cdf``, as the numpy path adds them (DONE).
    Otherwise (PARTS) nothing is counted: returned are the containers, indices in ``active``
    and counts (ints) and the service time, time waited in whole steps, wait before service,
    sigma and when the client sees the answer (floats), per cohort. And how many were taken off
    ``q``."""
    cs, at, ages, counts, taken = cohorts_one(q, queued_rows, orphans, active, served, k)
    n = cs.size
    if n == 0:
        return NONE_SERVED, taken, np.empty((3, 0), np.int64), np.empty((5, 0))
    vs = np.zeros(n, np.int64)
    no_calls = np.zeros((1, 1), np.bool_)
    sv, waited, d, sigma, _, seen, _, later_any = latency_parts(
        service, row0, vs, at, cs, ages, wait, head_all, sigma_all, no_calls, False, step, limit, horizon
    )
    fast = direct and not later_any
    e = -1
    if fast:
        first, inv = state_groups(d, sv, sigma)
        fast = first.size == 1
    if fast:
        same, rep = state_bits(d, sv, sigma, first, inv)
        if drawn:
            tmo = np.array([limit]).view(np.int64)[0]
            j = find(late_keys, late_index, rep[0, 0], rep[1, 0], rep[2, 0], tmo) if same else -1
            # (spread_states' clip: a chance of 0 draws nothing.)
            fast = j >= 0 and minimum(maximum(late_values[j, 0], 0.0), 1.0) == 0.0
        if fast:
            e = find(row_keys, row_index, rep[0, 0], rep[1, 0], rep[2, 0], 0)
            fast = e >= 0
    if not fast:
        ints = np.empty((3, n), np.int64)
        floats = np.empty((5, n))
        for i in range(n):
            ints[0, i], ints[1, i], ints[2, i] = cs[i], at[i], counts[i]
            floats[0, i], floats[1, i], floats[2, i] = sv[i], waited[i], d[i]
            floats[3, i], floats[4, i] = sigma[i], seen[i]
        return PARTS, taken, ints, floats
    # mixture_cdf's weight (bincount's float sum in order) and total, then _with_connect_wait's
    # mix * n with n the same total.
    w = 0.0
    total = 0
    for i in range(n):
        w += counts[i]
        total += counts[i]
    ok[k] += total
    for g in range(step_cdf.size):
        step_cdf[g] += (w * rows[e, g]) / total * total
    return DONE, taken, np.empty((3, 0), np.int64), np.empty((5, 0))


@jit
def serve_step(
    capacity: tuple[Any, ...],  # kernels_capacity.serve's arguments
    active_out: I64,
    used_out: F64,
    q: I64,
    queued_rows: I64,
    orphans: I64,
    k: int,
    head_all: F64,
    sigma_all: F64,
    step: float,
    limit: float,
    horizon: float,
    drawn: bool,
    late_keys: I64,
    late_values: F64,
    late_index: I64,
    row_keys: I64,
    rows: F64,
    row_index: I64,
    direct: bool,
    step_cdf: F64,
    latency_cdf: F64,
    ramp_cdf: F64,
    ramp_open: B,
    limits: F64,
    grid: F64,
    route_block: I64,
) -> tuple[int, int, int, F64]:
    """engine/serving.py's serve for a run with one route and one outcome class, in one call:
    the capacity model's step (kernels_capacity.serve; its containers and their CPU into
    ``active_out`` and ``used_out``), the route's serving (serve_route) and, unless it leaves
    its parts to the numpy path, the step's quantiles (kernels_states.step_quantiles). Returns
    serve_route's outcome, how many it took off ``q``, how many containers were stepped and, for
    PARTS, serve_route's parts as one array (its ints, as floats, then its floats: exact, as
    counts and indices are far below 2**53; numba boxes each array it returns at ~0.5 µs)."""
    a, served, wait, service, used = serve(*capacity)
    m = a.size
    for j in range(m):
        active_out[j] = a[j]
        used_out[j] = used[j]
    how, taken, ints, floats = serve_route(
        q, queued_rows, orphans, a, served[0], k, service, 0, wait, head_all, sigma_all, step, limit, horizon,
        drawn, late_keys, late_values, late_index, row_keys, rows, row_index, direct, step_cdf[0],
        route_block[0, OK_AT],
    )  # fmt: skip
    if how == PARTS:
        n = ints.shape[1]
        parts = np.empty((8, n))
        for i in range(n):
            for r in range(3):
                parts[r, i] = ints[r, i]
            for r in range(5):
                parts[3 + r, i] = floats[r, i]
        return how, taken, m, parts
    step_quantiles(step_cdf, latency_cdf, ramp_cdf, ramp_open, limits, grid, route_block, k)
    return how, taken, m, np.empty((8, 0))


@jit
def deliver(
    wheel: I64, later_n: F64, later_t: F64, later_cdf: F64, step_cdf: F64, series: I64, k: int
) -> int:
    """engine/traffic.py's _deliver for a route whose client still waits: the answers due at
    step ``k`` (the slot of ``wheel``: ok, error status, timeout × slots × containers) counted
    into its ``series`` and their latency into ``step_cdf``, the slot freed. Returns how many
    were delivered."""
    slots = wheel.shape[1]
    slot = k % slots
    recorded = later_n[slot]
    if recorded == 0:
        later_t[slot] = 0.0
        later_cdf[slot, :] = 0.0
        return 0
    due = np.zeros(3, np.int64)
    for o in range(3):
        for c in range(wheel.shape[2]):
            due[o] += wheel[o, slot, c]
    total = due[0] + due[1] + due[2]
    if recorded > 0 and (due[0] != 0 or due[1] != 0 or due[2] != 0):
        share = float(total) / recorded
        for g in range(step_cdf.size):
            step_cdf[g] += later_cdf[slot, g] * share
    later_n[slot] = 0.0
    later_t[slot] = 0.0
    later_cdf[slot, :] = 0.0
    if due[0] == 0 and due[1] == 0 and due[2] == 0:
        return 0
    wheel[:, slot, :] = 0
    series[OK_AT, k] += due[0]
    series[ERROR_STATUS_AT, k] += due[1]
    series[TIMEOUT_AT, k] += due[2]
    return total
