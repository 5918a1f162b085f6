"""The probe workers' compiled kernels for loaded containers (engine/kubelet.py's ``do_probe``,
``_execute`` and ``_apply`` written as one loop over the workers that run): which workers probe
(``probe_start``, up to the draw of each loaded probe's latency, which stays numpy's), what
their probes find and count (``probe_finish``), the count of finished runs alone
(``probe_apply``), and which workers are steady (``steady_sets``: ``_refresh_steady``'s). The
numpy forms stay in engine/kubelet.py; these are the same operations on the same values, to the
bit (engine/kernels.py says what that takes). Events are not made here: the kernels return the
workers each kind of event is for, in the numpy forms' order.

They are for runs with a capacity model (the only runs that load the kernels). Each worker
touches only its own state, so a loop over the (distinct) workers does what the numpy forms'
masks over all of them do.
"""

from __future__ import annotations

import math

import numpy as np

from probesim.engine.behavior import INF
from probesim.engine.fleet import EXITED, FAILURE, HTTP, RUNNING, SUCCESS, TCP, TERMINATING
from probesim.engine.kernels_base import F64, I64, B, jit, minimum
from probesim.kube.outcomes import ERROR_STATUS, HANDLER_ERROR, NO_ANSWER, OK, REFUSED

MAX_RHO = 0.95  # (engine/capacity.py's)
QUOTA_PERIOD_MS = 100.0
STARTUP, READINESS, LIVENESS = 0, 1, 2  # a worker's kind, as the kernels take it


@jit
def probe_start(
    idx: I64,
    t: int,
    from_sync: bool,
    kind: int,
    initial: int,
    instance: I64,
    started_at: I64,
    state: I64,
    started: B,
    seen: I64,
    cached: I64,
    on_hold: B,
    active: B,
    delay_s: I64,
    executions: I64,
    last_run: I64,
    listening: B,
    closed: B,
    hung: B,
    handler: I64,
    loaded: B,
    sigma: F64,
) -> tuple[I64, I64, int, I64, F64, F64]:
    """do_probe up to the probe (ProbeWorkers.do_probe and the start of _execute): a new
    container ID resets the worker; on hold, nothing; not running, Failure; within the initial
    delay or gated by startup, nothing; the rest probe (their executions counted). Returns the
    workers whose result became Failure, the workers that probe, the version bumps (0-2), the
    loaded probes among them and their log-normal draw's parameters (mean, sigma)."""
    m = idx.size
    dead_changed = np.empty(m, np.int64)
    probing = np.empty(m, np.int64)
    n_dead = n_probe = 0
    new_any = False
    for j in range(m):
        c = idx[j]
        inst = instance[c]
        if inst < 0 or not (from_sync or seen[c] == inst or started_at[c] < t):
            continue  # started this instant: the pod sync its start causes reports it
        if seen[c] != inst:
            seen[c] = inst
            cached[c] = initial
            on_hold[c] = False
            new_any = True
        if on_hold[c]:
            continue
        if not (state[c] == RUNNING or state[c] == TERMINATING):
            if cached[c] != FAILURE:
                dead_changed[n_dead] = c
                n_dead += 1
            cached[c] = FAILURE
            if state[c] == EXITED:  # terminated for good: the worker exits
                active[c] = False
            continue
        if (t - started_at[c]) // 1000 < delay_s[c]:
            continue
        if started[c] if kind == STARTUP else not started[c]:
            continue
        probing[n_probe] = c
        n_probe += 1
    bumps = int(new_any) + int(n_dead > 0)
    run = probing[:n_probe]
    n_loaded = 0
    for j in range(n_probe):
        c = run[j]
        executions[c] += 1
        last_run[c] = t
        if listening[c] and not closed[c] and not hung[c] and handler[c] != TCP and loaded[c]:
            n_loaded += 1
    li = np.empty(n_loaded, np.int64)
    mean = np.empty(n_loaded, np.float64)
    sig = np.empty(n_loaded, np.float64)
    i = 0
    for j in range(n_probe):
        c = run[j]
        if listening[c] and not closed[c] and not hung[c] and handler[c] != TCP and loaded[c]:
            li[i] = c
            s = sigma[c]
            mean[i] = -(s * s) / 2  # -(sigma ** 2) / 2: numpy squares by a product
            sig[i] = s
            i += 1
    return dead_changed[:n_dead], run, bumps, li, mean, sig


@jit
def probe_finish(
    run: I64,
    x: F64,
    t: int,
    step_ms: int,
    kind: int,
    instance: I64,
    started_at: I64,
    handler: I64,
    timeout: I64,
    target: I64,
    port_error: B,
    closed: B,
    success_th: I64,
    failure_th: I64,
    listening: B,
    hung: B,
    hang_end: I64,
    status: I64,
    offhost: B,
    loaded: B,
    warm_for: F64,
    warm_factor: F64,
    probe_cpu: F64,
    probe_wall: F64,
    separate: B,
    rho: F64,
    cpu_rho: F64,
    throttled: B,
    wait_ms: F64,
    seen: I64,
    cached: I64,
    on_hold: B,
    last_passed: B,
    runs: I64,
    busy_until: I64,
    pending_passed: B,
    pending_instance: I64,
    pending_why: I64,
    pending_status: I64,
    pending_warn: B,
) -> tuple[I64, I64, I64, I64, int, int]:
    """The probes of ``run`` (ProbeWorkers._execute; ``x``: the loaded ones' log-normal draws,
    in order): what each finds, pending until it completes; those that complete within the
    step counted at once (``probe_apply``). Returns what ``probe_apply`` does, and the earliest
    completion of the probes still in flight (-1: none)."""
    now = np.empty(run.size, np.int64)
    n_now = 0
    busy_min = -1
    i = 0
    for j in range(run.size):
        c = run[j]
        tmo = timeout[c]
        h = handler[c]
        lis = listening[c] and not closed[c]
        hg = hung[c]
        wait = hang_end[c] - t
        st = status[target[c], c]
        tcp = h == TCP
        # A hung process that accepts connections passes tcpSocket; other handlers wait for it
        # until the timeout, and get its answer if it recovers first.
        recovers = hg and not tcp and wait < tmo
        timed_out = hg and not tcp and not recovers and lis
        latency = tmo if timed_out else (wait if recovers and lis else 0)
        if lis and not hg and not tcp and loaded[c]:
            warm = warm_factor[c] if t - started_at[c] < warm_for[c] else 1.0
            base = probe_cpu[c] * warm + probe_wall[c]
            shared = not separate[c]
            stretch = base / (1.0 - minimum(rho[c] if shared else cpu_rho[c], MAX_RHO))
            extra = QUOTA_PERIOD_MS / 2 if throttled[c] else 0.0
            lat = (wait_ms[c] if shared else 0.0) + stretch * x[i] + extra
            i += 1
            timed_out = lat > tmo
            lat_ms = tmo if timed_out else np.int64(math.ceil(lat))
            latency = lat_ms if lat_ms >= step_ms else 0
        passed = lis if tcp else lis and not timed_out and st >= 200 and st < 400
        why = REFUSED if not lis else (NO_ANSWER if timed_out else (OK if passed else ERROR_STATUS))
        if port_error[c]:  # the port is resolved before connecting
            why = HANDLER_ERROR
            latency = 0
        pending_passed[c] = passed
        pending_instance[c] = instance[c]
        pending_why[c] = why
        pending_status[c] = st
        pending_warn[c] = passed and h == HTTP and offhost[target[c], c]
        if latency > 0:
            busy_until[c] = t + latency
            if busy_min < 0 or t + latency < busy_min:
                busy_min = t + latency
        else:
            now[n_now] = c
            n_now += 1
    changed, errored, warned, failed, bumps = probe_apply(
        now[:n_now], kind, instance, success_th, failure_th, seen, cached, on_hold, last_passed, runs,
        pending_passed, pending_instance, pending_why, pending_warn,
    )  # fmt: skip
    return changed, errored, warned, failed, bumps, busy_min


@jit
def probe_apply(
    idx: I64,
    kind: int,
    instance: I64,
    success_th: I64,
    failure_th: I64,
    seen: I64,
    cached: I64,
    on_hold: B,
    last_passed: B,
    runs: I64,
    pending_passed: B,
    pending_instance: I64,
    pending_why: I64,
    pending_warn: B,
) -> tuple[I64, I64, I64, I64, int]:
    """ProbeWorkers._apply: count the finished runs of ``idx`` toward the thresholds and write
    verdicts (a handler error is thrown away). Returns the workers whose result changed, those
    with a handler error, a redirect warning and a failure (their events, in that order), and
    the version bumps (0 or 1)."""
    m = idx.size
    changed = np.empty(m, np.int64)
    errored = np.empty(m, np.int64)
    warned = np.empty(m, np.int64)
    failed = np.empty(m, np.int64)
    n_changed = n_errored = n_warned = n_failed = 0
    for j in range(m):
        c = idx[j]
        if pending_why[c] == HANDLER_ERROR:
            errored[n_errored] = c
            n_errored += 1
            continue
        if pending_warn[c]:
            warned[n_warned] = c
            n_warned += 1
        passed = pending_passed[c]
        run = runs[c] + 1 if runs[c] > 0 and last_passed[c] == passed else 1
        runs[c] = run
        last_passed[c] = passed
        cross = run >= (max(success_th[c], 1) if passed else max(failure_th[c], 1))
        if cross and pending_instance[c] == instance[c] and seen[c] == instance[c]:
            value = SUCCESS if passed else FAILURE
            if cached[c] != value:
                changed[n_changed] = c
                n_changed += 1
            cached[c] = value
        if cross and (kind == STARTUP or (kind == LIVENESS and not passed)):
            on_hold[c] = True
            runs[c] = 0
        if not passed:
            failed[n_failed] = c
            n_failed += 1
    return changed[:n_changed], errored[:n_errored], warned[:n_warned], failed[:n_failed], int(n_changed > 0)


@jit
def steady_sets(
    hi: int,
    t: int,
    kind: int,
    shortcuts: bool,
    step_ms: int,
    active: B,
    busy_until: I64,
    buffered: B,
    instance: I64,
    seen: I64,
    on_hold: B,
    state: I64,
    started_at: I64,
    delay_ms: I64,
    started: B,
    cached: I64,
    would_pass: B,
    last_passed: B,
    runs: I64,
    period_on_step: B,
    next_tick: I64,
    steady: B,
    passing: B,
    lazy: B,
) -> tuple[np.int64, bool]:
    """ProbeWorkers._refresh_steady's sets, written into ``steady``, ``passing`` and ``lazy``
    (every worker; those from ``hi`` on are inactive: none). Returns when the earliest initial
    delay ends (INF: none) and whether any worker is lazy."""
    until = INF
    has_lazy = False
    for c in range(steady.size):
        steady[c] = passing[c] = lazy[c] = False
    for c in range(hi):
        inst = instance[c]
        if not (active[c] and busy_until[c] == INF and not buffered[c] and inst >= 0 and seen[c] == inst):
            continue
        if on_hold[c]:
            st = True
            ps = False
        else:
            alive = state[c] == RUNNING or state[c] == TERMINATING
            due_at = started_at[c] + delay_ms[c]
            early = alive and t < due_at
            if early and due_at < until:
                until = due_at
            gate = not started[c] if kind == STARTUP else started[c]
            probing = alive and not early
            st = early or (probing and not gate)
            # Not running (and not terminated for good): Failure again, already the cached result.
            st = st or (not alive and cached[c] == FAILURE and state[c] != EXITED)
            # (A startup pass that counts puts the worker on hold.)
            ps = (
                kind != STARTUP
                and probing
                and gate
                and would_pass[c]
                and last_passed[c]
                and runs[c] > 0
                and cached[c] == SUCCESS
            )
        if not shortcuts:
            st = ps = False
        passing[c] = ps
        steady[c] = st or ps
        if steady[c] and period_on_step[c] and next_tick[c] % step_ms == 0:
            lazy[c] = True
            has_lazy = True
    return until, has_lazy


@jit
def probe_tick(
    hi: int,
    t: int,
    active: B,
    next_tick: I64,
    period: I64,
    lazy: B,
    has_lazy: bool,
    busy_until: I64,
    busy_min: int,
    buffered: B,
    buffered_any: bool,
    steady: B,
    passing: B,
    executions: I64,
    last_run: I64,
    run: I64,
) -> I64:
    """ProbeWorkers.step's ticks (engine/kubelet.py): the workers whose tick fires at ``t`` move
    to their next tick; those in flight keep one tick waiting (``buffered``); the rest run,
    steady ones as a pass like the last (_steady_runs). Returns the others, to probe."""
    fire = np.zeros(hi, np.bool_)
    for c in range(hi):
        fire[c] = active[c] and next_tick[c] <= t and not (has_lazy and lazy[c])
    for c in range(hi):
        if fire[c]:
            per = period[c]
            next_tick[c] += ((t - next_tick[c]) // per + 1) * per
    runnable = np.empty(hi, np.int64)
    m = 0
    for c in range(hi):
        idle = busy_until[c] == INF
        if buffered_any:
            buffered[c] = buffered[c] or (fire[c] and not idle)
            if (fire[c] or buffered[c]) and idle and active[c]:
                runnable[m] = c
                m += 1
        elif fire[c]:
            if busy_min < INF and not idle:
                buffered[c] = True
            else:
                runnable[m] = c
                m += 1
    n_rest = 0
    for i in range(m):
        c = runnable[i]
        buffered[c] = False
        if steady[c]:
            if passing[c]:
                executions[c] += 1
                last_run[c] = t
                run[c] += 1
        else:
            n_rest += 1
    rest = np.empty(n_rest, np.int64)
    j = 0
    for i in range(m):
        if not steady[runnable[i]]:
            rest[j] = runnable[i]
            j += 1
    return rest


@jit
def next_wake(hi: int, active: B, next_tick: I64, lazy: B, has_lazy: bool) -> np.int64:
    """ProbeWorkers._rewake's earliest tick: of the active workers not deferred (INF: none)."""
    w = INF
    for c in range(hi):
        if active[c] and not (has_lazy and lazy[c]) and next_tick[c] < w:
            w = next_tick[c]
    return w
