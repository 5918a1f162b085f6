"""Compiled kernels for the capacity model (numba, cached on disk): its serving step
(``serve``), the capacity each container has for arrivals (``step_capacity``,
``step_capacity_calls``) and what arrivals it takes (``take``), and the serving phase's
per-route work in engine/traffic.py: the served cohorts (``cohorts_one``, ``cohorts``), their
latency parts (``latency_parts``), the answers due later (``pend_later``), the latency states
(``state_groups``), the timeout draws' per-state bookkeeping (``state_bits``,
``spread_states``) and the grid quantiles (``grid_quantiles``).

Each kernel is the numpy form it replaces (in engine/capacity.py or engine/traffic.py) written
as loops over containers, so that a step's cost follows the containers served, not the few
hundred numpy calls of a few microseconds each it took: the same operations on the same values
in the same order, so the same results to the bit (tests/engine/test_kernels.py runs both on
the same scenarios). What that takes:

- floating-point reductions in numpy's order: a column sum of a rows × columns array adds the
  rows one after another, except when it has one column, where numpy sums the column pairwise
  (``_column_sums``); ``np.add.at`` adds in element order;
- numpy's semantics where they differ from Python's: a division by zero gives inf or nan
  (``error_model="numpy"``), ``np.minimum``, ``np.maximum`` and ``np.clip`` propagate nan,
  ``np.searchsorted`` is numpy's own binary search (``searchsorted``);
- no random draw here: draws stay in numpy, in the run's order, and kernels take their results;
  nor exp and log (numpy's AVX-512 forms give other last bits than LLVM's), nor BLAS products;
- no recursion: numba's cache crashes loading a recursive function.

This module imports numba: engine/capacity.py imports it only when a run uses the kernels
(``capacity.kernels``), so that runs without a capacity model never load numba. Compiling the
kernels takes seconds, once per machine (numba's on-disk cache, beside this file or in
NUMBA_CACHE_DIR): ``python -m probesim.kernel_cache`` (``make setup`` runs it) compiles them
by running two small built-ins with them, and says whether the cache holds them.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

MAX_RHO = 0.95  # (engine/capacity.py's)
QUOTA_PERIOD_MS = 100.0
TWO53 = 9007199254740992.0  # 2**53: floor(min(x, 2**53)) as numpy computes it
PW_BLOCKSIZE = 128  # numpy's pairwise summation block

jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@jit
def _minimum(a: float, b: float) -> float:
    """np.minimum: nan if either is."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@jit
def _maximum(a: float, b: float) -> float:
    """np.maximum: nan if either is."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@jit
def _block(a: F64, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``a[lo:lo + n]`` for n ≤ its block (eight partial sums)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        j = lo + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@jit
def _pairwise(a: F64, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``a[lo:lo + n]`` (its ``pairwise_sum``, to the bit): blocks of
    PW_BLOCKSIZE, halves above (split at a multiple of 8) added as numpy's recursion adds them.
    Written with a stack, not recursion: numba's cache crashes on loading recursive functions."""
    if n <= PW_BLOCKSIZE:
        return _block(a, lo, n)
    seg_lo = np.empty(64, np.int64)
    seg_n = np.empty(64, np.int64)
    seg_state = np.empty(64, np.int64)
    vals = np.empty(64)
    sp = 1
    seg_lo[0], seg_n[0], seg_state[0] = lo, n, 0
    vsp = 0
    while sp > 0:
        top = sp - 1
        s_lo, s_n, state = seg_lo[top], seg_n[top], seg_state[top]
        if s_n <= PW_BLOCKSIZE:
            vals[vsp] = _block(a, s_lo, s_n)
            vsp += 1
            sp -= 1
            continue
        n2 = s_n // 2
        n2 -= n2 % 8
        if state == 0:  # the first half
            seg_state[top] = 1
            seg_lo[sp], seg_n[sp], seg_state[sp] = s_lo, n2, 0
            sp += 1
        elif state == 1:  # then the second
            seg_state[top] = 2
            seg_lo[sp], seg_n[sp], seg_state[sp] = s_lo + n2, s_n - n2, 0
            sp += 1
        else:  # both done: their sum
            vals[vsp - 2] = vals[vsp - 2] + vals[vsp - 1]
            vsp -= 1
            sp -= 1
    return vals[0]


@jit
def _column_sums(x: F64) -> F64:
    """``x.sum(axis=0)`` as numpy adds it: row after row, or pairwise with one column."""
    rows, cols = x.shape
    out = np.zeros(cols)
    if cols == 1:
        col = np.empty(rows)
        for r in range(rows):
            col[r] = x[r, 0]
        out[0] = _pairwise(col, 0, rows)
        return out
    for c in range(cols):
        out[c] = x[0, c]
    for r in range(1, rows):
        for c in range(cols):
            out[c] += x[r, c]
    return out


@jit
def _mean_cost(backlog: I64, cost: F64, cols: I64, held: I64) -> F64:
    """Per container of ``cols`` (each holding something): (backlog × cost).sum(axis=0) / held."""
    rows = backlog.shape[0]
    m = cols.size
    if rows == 1:
        out = np.empty(m)
        for j in range(m):
            c = cols[j]
            out[j] = backlog[0, c] * cost[0, c] / held[j]
        return out
    prod = np.empty((rows, m))
    for r in range(rows):
        for j in range(m):
            c = cols[j]
            prod[r, j] = backlog[r, c] * cost[r, c]
    out = _column_sums(prod)
    for j in range(m):
        out[j] = out[j] / held[j]
    return out


@jit
def _capacity_of(dt: float, c: float, w: float, limit_m: float, workers: float) -> float:
    """CapacityModel._capacity for one container."""
    mu_cpu = limit_m / 1000.0 / c if c > 0 else np.inf
    mu_w = workers / (c + w) if c + w > 0 else np.inf
    return np.floor(_minimum(_minimum(mu_cpu, mu_w) * dt, TWO53))


@jit
def held_of(backlog: I64) -> I64:
    """What each container holds, all routes and classes."""
    rows, n = backlog.shape
    out = np.zeros(n, np.int64)
    for r in range(rows):
        for c in range(n):
            out[c] += backlog[r, c]
    return out


@jit
def step_capacity_calls(dt: float, backlog: I64, cpu: F64, wall: F64, limit_m: F64, workers: F64) -> F64:
    """CapacityModel.begin_step with dependency calls: every container's capacity this step."""
    rows, n = backlog.shape
    held = held_of(backlog)
    all_cols = np.arange(n)
    mc = _mean_cost(backlog, cpu, all_cols, np.ones(n, np.int64))
    mw = _mean_cost(backlog, wall, all_cols, np.ones(n, np.int64))
    idle_c = _column_sums(cpu)
    idle_w = _column_sums(wall)
    out = np.empty(n)
    for c in range(n):
        if held[c] > 0:
            cc, ww = mc[c] / held[c], mw[c] / held[c]
        else:
            cc, ww = idle_c[c] / rows, idle_w[c] / rows
        out[c] = _capacity_of(dt, cc, ww, limit_m[c], workers[c])
    return out


@jit
def step_capacity(
    dt: float, backlog: I64, cpu: F64, wall: F64, limit_m: F64, workers: F64, idle: F64, hi: int
) -> F64:
    """CapacityModel.begin_step without dependency calls: the idle capacity (``idle``), and
    for the containers below ``hi`` that hold something, the capacity of what they hold."""
    rows = backlog.shape[0]
    out = idle.copy()
    held = np.zeros(hi, np.int64)
    m = 0
    for c in range(hi):
        h = 0
        for r in range(rows):
            h += backlog[r, c]
        held[c] = h
        if h > 0:
            m += 1
    cols = np.empty(m, np.int64)
    hh = np.empty(m, np.int64)
    j = 0
    for c in range(hi):
        if held[c] > 0:
            cols[j] = c
            hh[j] = held[c]
            j += 1
    mc = _mean_cost(backlog, cpu, cols, hh)
    mw = _mean_cost(backlog, wall, cols, hh)
    for j in range(m):
        c = cols[j]
        out[c] = _capacity_of(dt, mc[j], mw[j], limit_m[c], workers[c])
    return out


@jit
def take(
    backlog: I64, room: F64, step_capacity: F64, containers: I64, counts: I64, row: int, add: bool
) -> I64:
    """CapacityModel.accept's take: how many of ``counts`` each container of ``containers`` has
    room for (``add``: and they join backlog row ``row``, the one outcome class)."""
    rows = backlog.shape[0]
    m = containers.size
    out = np.empty(m, np.int64)
    for j in range(m):
        c = containers[j]
        h = 0
        for r in range(rows):
            h += backlog[r, c]
        free = room[c] + step_capacity[c] - h
        t = _minimum(float(counts[j]), _maximum(free, 0.0))
        out[j] = np.int64(t)
        if add:
            backlog[row, c] += out[j]
    return out


@jit
def serve(
    dt: float,
    t: int,
    backlog: I64,
    carry: F64,
    last_leftover: I64,
    started_at: I64,
    warm_for: F64,
    warm_factor: F64,
    cpu_all: F64,
    wall_all: F64,
    loaded_all: B,
    limit_all: F64,
    workers_all: F64,
    unstable: B,
    any_unstable: bool,
    all_loaded: bool,
    hi: int,
) -> tuple[I64, I64, F64, F64, F64, B, F64, F64, F64, F64, I64]:
    """CapacityModel.step: which containers it steps (``active``) and, for them, the served
    count per row, the queue wait, the service time per row and the CPU used; every container's
    throttled, CPU used, CPU utilization, utilization, wait and backlog left (0 off ``active``).
    Updates ``backlog`` and ``carry`` in place."""
    rows, n = backlog.shape
    one = rows == 1
    limit = n if any_unstable else hi
    held_all = np.zeros(limit, np.int64)
    m = 0
    for c in range(limit):
        h = 0
        for r in range(rows):
            h += backlog[r, c]
        held_all[c] = h
        if h > 0 or carry[c] != 0 or (any_unstable and unstable[c]):
            m += 1
    a = np.empty(m, np.int64)
    j = 0
    for c in range(limit):
        if held_all[c] > 0 or carry[c] != 0 or (any_unstable and unstable[c]):
            a[j] = c
            j += 1
    held = np.empty(m, np.int64)
    cpu = np.empty((rows, m))
    wall = np.empty((rows, m))
    for j in range(m):
        c = a[j]
        held[j] = held_all[c]
        warm = warm_factor[c] if t - started_at[c] < warm_for[c] else 1.0
        for r in range(rows):
            cpu[r, j] = cpu_all[r, c] * warm
            wall[r, j] = wall_all[r, c]
    if one:
        mix_c_sum = np.empty(m)
        mix_w_sum = np.empty(m)
        for j in range(m):
            c = a[j]
            mix_c_sum[j] = backlog[0, c] * cpu[0, j]
            mix_w_sum[j] = backlog[0, c] * wall[0, j]
    else:
        prod_c = np.empty((rows, m))
        prod_w = np.empty((rows, m))
        for r in range(rows):
            for j in range(m):
                b = backlog[r, a[j]]
                prod_c[r, j] = b * cpu[r, j]
                prod_w[r, j] = b * wall[r, j]
        mix_c_sum = _column_sums(prod_c)
        mix_w_sum = _column_sums(prod_w)
    served_total = np.empty(m, np.int64)
    wait = np.empty(m)
    used = np.empty(m)
    rho_a = np.empty(m)
    throttled_a = np.zeros(m, np.bool_)
    throttled = np.zeros(n, np.bool_)
    cpu_used_m = np.zeros(n)
    cpu_rho = np.zeros(n)
    rho = np.zeros(n)
    wait_ms = np.zeros(n)
    for j in range(m):
        c = a[j]
        h = held[j]
        leftover = min(last_leftover[c], h)
        if h > 0:
            mix_c = mix_c_sum[j] / h
            mix_w = mix_w_sum[j] / h
        else:
            mix_c = cpu[0, j]
            mix_w = wall[0, j]
        lim_m = limit_all[c]
        lim = lim_m / 1000.0
        mu_cpu = lim / mix_c if mix_c > 0 else np.inf
        per_request = mix_c + mix_w
        mu_w = workers_all[c] / per_request if per_request > 0 else np.inf
        mu = _minimum(mu_cpu, mu_w)
        mu_dt = mu * dt
        cap = mu_dt + carry[c]
        whole = np.floor(_minimum(cap, TWO53))
        st = np.int64(_minimum(float(h), whole))
        served_total[j] = st
        carry[c] = cap - whole if h >= whole else 0.0
        arrivals = h - leftover
        finite = np.isfinite(mu)
        r_ = arrivals / mu_dt if finite else 0.0
        w_ = leftover / mu if finite and mu > 0 else 0.0
        demand_m = h * mix_c / dt * 1000.0 if finite else 0.0
        thr = demand_m > lim_m
        u = _minimum(st * mix_c / dt * 1000.0, lim_m)
        cr = demand_m / lim_m
        if not all_loaded and not loaded_all[c]:
            thr = False
            r_ = 0.0
            u = 0.0
            cr = 0.0
            w_ = 0.0
        throttled_a[j] = thr
        rho_a[j] = r_
        wait[j] = w_
        used[j] = u
        throttled[c] = thr
        cpu_used_m[c] = u
        cpu_rho[c] = cr
        rho[c] = r_
        wait_ms[c] = w_
    # The served count per row (CapacityModel._split), taken off the backlog.
    served = np.empty((rows, m), np.int64)
    if one:
        for j in range(m):
            served[0, j] = served_total[j]
    else:
        for j in range(m):
            c = a[j]
            h = held[j]
            f = served_total[j] / max(h, 1)
            rest = served_total[j]
            for r in range(rows):
                s = np.int64(np.floor(backlog[r, c] * f)) if h > 0 else 0
                served[r, j] = s
                rest -= s
            for r in range(rows):
                give = min(rest, backlog[r, c] - served[r, j])
                served[r, j] += give
                rest -= give
    leftover_all = np.zeros(n, np.int64)
    for j in range(m):
        c = a[j]
        left = 0
        for r in range(rows):
            backlog[r, c] -= served[r, j]
            left += backlog[r, c]
        leftover_all[c] = left
    service = np.empty((rows, m))
    for j in range(m):
        stretch = 1.0 / (1.0 - _minimum(rho_a[j], MAX_RHO))
        extra = QUOTA_PERIOD_MS / 2 if throttled_a[j] else 0.0
        for r in range(rows):
            service[r, j] = wall[r, j] + cpu[r, j] * stretch + extra
    return (
        a,
        served,
        wait,
        service,
        used,
        throttled,
        cpu_used_m,
        cpu_rho,
        rho,
        wait_ms,
        leftover_all,
    )


@jit
def state_groups(d: F64, s: F64, sigma: F64) -> tuple[I64, I64]:
    """engine/capacity.py's state_groups: requests keyed on (d, s) to 0.1 ms and sigma to 0.001,
    in key order, each key's first request and, per request, its key's index."""
    n = d.size
    key = np.empty(n, np.int64)
    for i in range(n):
        dk = np.rint(d[i] * 10)
        sk = np.rint(s[i] * 10)
        dk = _minimum(dk, 16777215.0)  # 2**24 - 1
        sk = _minimum(sk, 16777215.0)
        key[i] = (np.int64(dk) << 36) | (np.int64(sk) << 12) | np.int64(np.rint(sigma[i] * 1000))
    # A few states (the usual case): kept sorted as they come, each found by bisection.
    few = 16
    uniq = np.empty(few, np.int64)
    first_of = np.empty(few, np.int64)
    count = 0
    for i in range(n):
        x = key[i]
        lo, hi = 0, count
        while lo < hi:
            mid = (lo + hi) // 2
            if uniq[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        if lo < count and uniq[lo] == x:
            continue
        if count == few:
            count = -1
            break
        for j in range(count, lo, -1):
            uniq[j] = uniq[j - 1]
            first_of[j] = first_of[j - 1]
        uniq[lo] = x
        first_of[lo] = i
        count += 1
    if count >= 0:
        inv = np.empty(n, np.int64)
        for i in range(n):
            x = key[i]
            lo, hi = 0, count
            while lo < hi:
                mid = (lo + hi) // 2
                if uniq[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            inv[i] = lo
        return first_of[:count].copy(), inv
    order = np.argsort(key, kind="mergesort")
    inv = np.empty(n, np.int64)
    count = 0
    for j in range(n):
        if j == 0 or key[order[j]] != key[order[j - 1]]:
            count += 1
        inv[order[j]] = count - 1
    first = np.empty(count, np.int64)
    g = 0
    for j in range(n):
        if j == 0 or key[order[j]] != key[order[j - 1]]:
            first[g] = order[j]
            g += 1
    return first, inv


@jit
def _taken(
    q: I64, queued_rows: I64, orphans: I64, active: I64, tot: I64, k: int
) -> tuple[I64, I64, I64, I64, I64, int]:
    """engine/traffic.py's _cohorts up to the split (``tot``: what each container of ``active``
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
    """engine/traffic.py's _cohorts with one outcome class (``served``: per container of
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
    """engine/traffic.py's _cohorts with outcome classes (``served``: classes × containers of
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
def state_bits(d: F64, s: F64, sigma: F64, first: I64, inv: I64) -> tuple[bool, I64]:
    """Whether every request has its state's first request's (d, s, sigma) to the bit, and
    those bits per state (3 × states, as int64)."""
    db, sb, gb = d.view(np.int64), s.view(np.int64), sigma.view(np.int64)
    rep = np.empty((3, first.size), np.int64)
    for j in range(first.size):
        f = first[j]
        rep[0, j], rep[1, j], rep[2, j] = db[f], sb[f], gb[f]
    for i in range(d.size):
        j = inv[i]
        if db[i] != rep[0, j] or sb[i] != rep[1, j] or gb[i] != rep[2, j]:
            return False, rep
    return True, rep


@jit
def spread_states(late: F64, inv: I64) -> tuple[F64, I64, int]:
    """capacity.timed_out's per-request chance of a timeout from its state's (``late``, clipped
    to [0, 1] as np.clip does), and the requests to draw for: which is 0 when no state has a
    chance above 0, 1 when all have (every request drawn), else 2 and the requests of those."""
    states = late.size
    p_state = np.empty(states)
    some = 0
    for j in range(states):
        x = _minimum(_maximum(late[j], 0.0), 1.0)
        p_state[j] = x
        if x != 0.0:
            some += 1
    n = inv.size
    if some == 0:
        return np.empty(0), np.empty(0, np.int64), 0
    p = np.empty(n)
    m = 0
    for i in range(n):
        p[i] = p_state[inv[i]]
        if p[i] != 0.0:
            m += 1
    if some == states:
        return p, np.empty(0, np.int64), 1
    draw = np.empty(m, np.int64)
    e = 0
    for i in range(n):
        if p[i] != 0.0:
            draw[e] = i
            e += 1
    return p, draw, 2


@jit
def latency_parts(
    service: F64,
    row0: int,
    vs: I64,
    at: I64,
    cs: I64,
    ages: I64,
    wait: F64,
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
        d[e] = wait[at[e]] if ages[e] == 0 else waited[e]
        sigma[e] = sigma_all[cs[e]]
        if calls:
            failed[e] = failed_all[row0 + vs[e], cs[e]]
        seen[e] = _minimum(_minimum(d[e] + sv[e], limit) - waited[e], horizon)
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
def _less(a: float, b: float) -> bool:
    """numpy's sort order for floats: nan after every number."""
    return a < b or (b != b and a == a)


@jit
def searchsorted(a: F64, keys: F64) -> I64:
    """np.searchsorted(a, keys) (side left), as numpy's binary search runs it: the bounds kept
    from the previous key when keys ascend, so the same index even where ``a`` is not sorted."""
    n = a.size
    out = np.empty(keys.size, np.int64)
    lo, hi = 0, n
    last = keys[0] if keys.size else 0.0
    for i in range(keys.size):
        key = keys[i]
        if _less(last, key):
            hi = n
        else:
            lo = 0
            hi = hi + 1 if hi < n else n
        last = key
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if _less(a[mid], key):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out


@jit
def grid_quantiles(mix: F64, qs: F64, grid: F64) -> F64:
    """engine/capacity.py's grid_quantiles: quantiles read off a CDF on ``grid``, interpolated
    between grid points."""
    at = searchsorted(mix, qs)
    out = np.empty(qs.size)
    g = grid.size
    for j in range(qs.size):
        i = at[j]
        if i >= g:
            out[j] = grid[g - 1]
        elif i == 0:
            out[j] = grid[0]
        else:
            lo, hi = mix[i - 1], mix[i]
            frac = 0.0 if hi <= lo else (qs[j] - lo) / (hi - lo)
            out[j] = grid[i - 1] + frac * (grid[i] - grid[i - 1])
    return out


KERNELS: tuple[Any, ...] = (
    serve,
    take,
    step_capacity,
    step_capacity_calls,
    state_groups,
    cohorts_one,
    cohorts,
    state_bits,
    spread_states,
    latency_parts,
    pend_later,
    grid_quantiles,
)


def cached() -> bool:
    """Whether numba's on-disk cache holds every kernel, compiled from this source (an index
    for another source is stale: numba checks the file's time stamp and size)."""
    try:
        return all(bool(k._cache._cache_file._load_index()) for k in KERNELS)
    except Exception:  # numba's cache internals moved: say no, and the numpy forms run
        return False
