"""The capacity model's compiled kernels (engine/capacity.py's CapacityModel): its serving
step (``serve``), the capacity each container has for arrivals (``step_capacity``,
``step_capacity_calls``) and what arrivals it takes (``take``; with the round robin over a route's endpoints,
``arrive``; split among the route's outcome classes, ``split_classes``). Each is the numpy form it
replaces written as loops over containers, to the bit (engine/kernels.py says what that takes).
"""

from __future__ import annotations

import numpy as np

from probesim.engine.kernels_base import F64, I64, TWO53, B, column_sums, jit, maximum, minimum
from probesim.engine.series_names import ERROR_STATUS_AT, NOT_ANSWERING_AT, OK_AT, REJECTED_AT, RESTARTING_AT
from probesim.kube.outcomes import ERROR_STATUS, NO_ANSWER, OK, REFUSED, REQUEST_CODES

MAX_RHO = 0.95  # (engine/capacity.py's)
QUOTA_PERIOD_MS = 100.0


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
    out = column_sums(prod)
    for j in range(m):
        out[j] = out[j] / held[j]
    return out


@jit
def _capacity_of(dt: float, c: float, w: float, limit_m: float, workers: float) -> float:
    """CapacityModel._capacity for one container."""
    mu_cpu = limit_m / 1000.0 / c if c > 0 else np.inf
    mu_w = workers / (c + w) if c + w > 0 else np.inf
    return np.floor(minimum(minimum(mu_cpu, mu_w) * dt, TWO53))


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
    idle_c = column_sums(cpu)
    idle_w = column_sums(wall)
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
def _fits(backlog: I64, room: F64, step_capacity: F64, c: int, count: int) -> np.int64:
    """How many of ``count`` arrivals container ``c`` has room for."""
    h = 0
    for r in range(backlog.shape[0]):
        h += backlog[r, c]
    free = room[c] + step_capacity[c] - h
    return np.int64(minimum(float(count), maximum(free, 0.0)))


@jit
def take(
    backlog: I64, room: F64, step_capacity: F64, containers: I64, counts: I64, row: int, add: bool
) -> I64:
    """CapacityModel.accept's take: how many of ``counts`` each container of ``containers`` has
    room for (``add``: and they join backlog row ``row``, the one outcome class)."""
    m = containers.size
    out = np.empty(m, np.int64)
    for j in range(m):
        c = containers[j]
        out[j] = _fits(backlog, room, step_capacity, c, counts[j])
        if add:
            backlog[row, c] += out[j]
    return out


@jit
def split_classes(
    rng: np.random.Generator, backlog: I64, prob: F64, containers: I64, take: I64, row: int
) -> None:
    """CapacityModel.accept's split of what each container of ``containers`` took (``take``)
    among the route's outcome classes (``prob``: each class's share per container; backlog rows
    ``row`` on): class by class, a binomial draw per container of what is left, in the order
    numpy's array call draws them, by numba's port of numpy's binomial on the run's generator
    (``rng``): the same values and the same generator state after."""
    kk = prob.shape[0]
    m = containers.size
    left = take.copy()
    rest = np.ones(m)
    for k in range(kk):
        for j in range(m):
            c = containers[j]
            if k == kk - 1:
                part = left[j]
            else:
                r = rest[j]
                p = prob[k, c] / maximum(r, 1e-12) if r > 1e-12 else 0.0
                part = rng.binomial(left[j], minimum(maximum(p, 0.0), 1.0))
            backlog[row + k, c] += part
            left[j] -= part
            rest[j] = rest[j] - prob[k, c]


@jit
def arrive(
    n: int,
    cursor: int,
    eps: I64,
    cat: I64,
    target_container: I64,
    loaded: B,
    backlog: I64,
    room: F64,
    step_capacity: F64,
    row: int,
    cap_instance: I64,
    instance: I64,
    touched: B,
    queued: I64,
    queued_rows: I64,
    queued_row: int,
    series: I64,
    k: int,
) -> tuple[int, int, int, int]:
    """A route's ``n`` requests of a step over its endpoints ``eps`` (round robin from
    ``cursor``; ``cat``: what a request meets on each, an Outcome), those to loaded containers
    taken into backlog row ``row`` as far as they fit (engine/traffic.py's send with
    CapacityModel.accept, for one outcome class), the rest refused, and counted as its
    _count_sent counts them, into the route's ``series`` (engine/series_names.py) at step ``k``
    and the client's arrival row ``queued_row``. Returns how many were taken and offered to
    loaded containers, one past the last container that took some (-1: none), and how many
    were answered at once. Updates the backlog, the containers' instances, ``touched`` and the
    client's ``queued`` row."""
    kk = eps.size
    counts = np.zeros(REQUEST_CODES, np.int64)
    base, extra = n // kk, n % kk
    n_took = n_offered = 0
    hi = -1
    for j in range(kk):
        per_ep = base + (1 if (j - cursor) % kk < extra else 0)
        counts[cat[j]] += per_ep
        c = target_container[eps[j]]
        if cat[j] == OK and loaded[c] and per_ep > 0:
            took = _fits(backlog, room, step_capacity, c, per_ep)
            backlog[row, c] += took
            cap_instance[c] = instance[c]
            touched[c] = True
            queued[queued_row, c] += took
            n_took += int(took)
            n_offered += per_ep
            hi = c + 1
    series[RESTARTING_AT, k] += counts[REFUSED]
    series[NOT_ANSWERING_AT, k] += counts[NO_ANSWER]
    series[ERROR_STATUS_AT, k] += counts[ERROR_STATUS]
    ok_now = counts[OK]
    if n_offered:
        queued_rows[queued_row] += n_took
        ok_now -= n_offered
        series[REJECTED_AT, k] += n_offered - n_took
    series[OK_AT, k] += ok_now
    return n_took, n_offered, hi, ok_now


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
    busy_max: F64,
    busy_ramp: F64,
    unstable: B,
    any_unstable: bool,
    all_loaded: bool,
    hi: int,
    throttled: B,
    cpu_used_m: F64,
    cpu_rho: F64,
    rho: F64,
    wait_ms: F64,
    head_ms: F64,
) -> tuple[I64, I64, F64, F64, F64]:
    """CapacityModel.step: which containers it steps (``active``) and, for them, the served
    count per row, the queue wait, the service time per row and the CPU used. Writes every
    container's throttled, CPU used, CPU utilization, utilization, wait (0 off ``active``) in
    place, and its backlog left (into ``last_leftover``, once read); updates ``backlog`` and
    ``carry`` in place. (Arrays written in place, not returned: numba boxes each array it
    returns at about 0.5 µs.)"""
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
        mix_c_sum = column_sums(prod_c)
        mix_w_sum = column_sums(prod_w)
    served_total = np.empty(m, np.int64)
    wait = np.empty(m)
    used = np.empty(m)
    rho_a = np.empty(m)
    mu_a = np.empty(m)
    crowd_a = np.empty(m)
    throttled_a = np.zeros(m, np.bool_)
    throttled[:] = False
    cpu_used_m[:] = 0.0
    cpu_rho[:] = 0.0
    rho[:] = 0.0
    wait_ms[:] = 0.0
    head_ms[:] = 0.0
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
        mu = minimum(mu_cpu, mu_w)
        mu_a[j] = mu
        pool = workers_all[c]
        pooled_cpu = np.isfinite(pool) and per_request > 0 and lim > 0
        crowd_a[j] = pool * mix_c / (per_request * lim) if pooled_cpu else np.inf
        mu_dt = mu * dt
        cap = mu_dt + carry[c]
        # (CapacityModel.step: the work of the requests at work, done but not yet answered)
        beyond = h - cap - 1.0
        busy = minimum(busy_ramp[c] * beyond, busy_max[c]) if beyond > 0 else 0.0
        whole = np.floor(minimum(cap - busy, TWO53))
        st = np.int64(minimum(float(h), whole))
        served_total[j] = st
        carry[c] = cap - whole if h >= whole else 0.0
        arrivals = h - leftover
        finite = np.isfinite(mu)
        r_ = arrivals / mu_dt if finite else 0.0
        w_ = leftover / mu if finite and mu > 0 else 0.0
        demand_m = h * mix_c / dt * 1000.0 if finite else 0.0
        thr = demand_m > lim_m
        u = minimum(st * mix_c / dt * 1000.0, lim_m)
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
    last_leftover[:] = 0  # (read above, for the active containers only)
    for j in range(m):
        c = a[j]
        left = 0
        for r in range(rows):
            backlog[r, c] -= served[r, j]
            left += backlog[r, c]
        last_leftover[c] = left
        # What arrives now (a probe, a try) waits for a worker: behind what is queued, not
        # behind what is at work (CapacityModel.step).
        w = workers_all[c]
        mu = mu_a[j]
        if np.isfinite(w) and (all_loaded or loaded_all[c]) and np.isfinite(mu) and mu > 0:
            wait_ms[c] = max(float(left) - w + 1.0, 0.0) / mu
            head_ms[c] = (w - 1.0) / mu
    service = np.empty((rows, m))
    for j in range(m):
        stretch = minimum(1.0 / (1.0 - minimum(rho_a[j], MAX_RHO)), maximum(1.0, crowd_a[j]))
        extra = QUOTA_PERIOD_MS / 2 if throttled_a[j] else 0.0
        for r in range(rows):
            service[r, j] = wall[r, j] + cpu[r, j] * stretch + extra
    return a, served, wait, service, used
