"""Probe workers, one per (container, probe type), vectorized: the kubelet's ``worker.doProbe``
(reference/kubelet.md §2).

Each worker ticks every ``periodSeconds`` from pod admission (no jitter, §2.1.4). A run applies,
in order: no container yet → nothing; a new container ID → the type's initial result and on-hold
cleared (§2.2.11); on hold → nothing; container not running → Failure; within
``initialDelaySeconds`` of this container's start → nothing; startup gating (§2.2.16); then the
probe. Results count toward consecutive thresholds; a liveness Failure or any startup verdict
puts the worker on hold until the next container (§2.2.19). A probe that waits on a hung process
completes only at its timeout; a tick that falls while it waits runs once when it completes
(Go ticker semantics, §2.1.7).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import numpy.typing as npt

from probesim.consecutive import next_run, reaches_threshold
from probesim.engine.arrays import distinct
from probesim.engine.behavior import INF
from probesim.engine.capacity import CapacityModel
from probesim.engine.containers import Containers
from probesim.engine.draws import lognormal
from probesim.engine.events import EventLog
from probesim.engine.fleet import (
    EXITED,
    FAILURE,
    HTTP,
    SUCCESS,
    TCP,
    UNKNOWN,
    Fleet,
    ProbeSpecArrays,
)
from probesim.engine.kernel_choice import loaded_kernels
from probesim.engine.probe_events import ProbeEvents
from probesim.kube.outcomes import ERROR_STATUS, HANDLER_ERROR, NO_ANSWER, OK, REFUSED
from probesim.model.scenario import ContainerBehavior, RouteCost

I64 = npt.NDArray[np.int64]
INITIAL = {"startup": UNKNOWN, "readiness": FAILURE, "liveness": SUCCESS}
KIND = {"startup": 0, "readiness": 1, "liveness": 2}  # as engine/kernels_probes.py takes it
# Steady workers skip the full path (and, on the step grid, are not stepped at all); False runs
# every worker through it, as a check that the shortcut changes nothing (tests).
SHORTCUTS = True


class ProbeWorkers:
    def __init__(
        self,
        kind: str,
        spec: ProbeSpecArrays,
        fleet: Fleet,
        capacity: CapacityModel,
        rng: np.random.Generator,
        step: int,
    ) -> None:
        n = fleet.n_containers
        self.capacity = capacity
        self.rng = rng
        self.step_ms = step
        # What one probe costs the app (its path's route cost; exec and gRPC checks by those names).
        targets = {i: name for name, i in fleet.behaviors.targets.items()}
        self.target_names = targets
        cache: dict[tuple[int, int], RouteCost] = {}  # pods share their behaviour objects

        def cost(b: ContainerBehavior, target: int) -> RouteCost:
            key = (id(b), target)
            if key not in cache:
                cache[key] = b.cost(targets[target])
            return cache[key]

        costs = [cost(b, tgt) for b, tgt in zip(fleet.container_behavior, spec.target.tolist(), strict=True)]
        self.on_error = np.array(
            [c.calls[0].on_error if c.calls else c.errors.status if c.errors else 500 for c in costs],
            np.int64,
        )
        self.probe_cpu = np.array([c.cpu for c in costs], np.float64)
        self.probe_wall = np.array([c.wall for c in costs], np.float64)
        self.kind = kind
        self.title = kind.capitalize()
        self._would_pass_at: tuple[int, npt.NDArray[np.bool_]] | None = None  # (behaviour epoch, mask)
        # What _would_pass reads of the probes' fixed settings: (columns, tcp, http, not closed,
        # no port error and not loaded).
        self._fixed: (
            tuple[I64, npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.bool_]] | None
        ) = None
        self.said = ProbeEvents(self.title, fleet, spec)  # the events its runs give
        self.spec = spec
        self.fleet = fleet
        # Fixed per worker: when its initial delay ends after a start, and whether its period
        # is a whole number of steps (a deferred worker's ticks must fall on step times).
        self._delay_ms = spec.delay_s * 1000
        self._period_on_step = spec.period % step == 0
        self.active = np.zeros(n, bool)
        # Workers from this one on were never admitted: inactive, none of their state set (the
        # per-step masks look below it only; an HPA reserves 4 × maxReplicas slots).
        self.hi = 0
        self.cached = np.full(n, INITIAL[kind], np.int64)
        self.seen = np.full(n, -1, np.int64)  # container instance the worker last observed
        self.on_hold = np.zeros(n, bool)
        self.last_passed = np.zeros(n, bool)
        self.run = np.zeros(n, np.int64)
        self.next_tick = np.full(n, INF, np.int64)
        self.busy_until = np.full(n, INF, np.int64)
        self.pending_passed = np.zeros(n, bool)
        self.pending_instance = np.zeros(n, np.int64)
        self.pending_why = np.zeros(n, np.int64)
        self.pending_status = np.zeros(n, np.int64)
        self.pending_warn = np.zeros(n, bool)  # passed on a redirect to another host
        self.buffered = np.zeros(n, bool)
        self.buffered_any = False
        self.busy_min = INF  # at most the earliest busy_until (INF: none in flight)
        self.last_run = np.full(n, -1, np.int64)  # when the probe last really executed
        self.executions = np.zeros(n, np.int64)
        self.wakeup = INF
        # Workers in a steady state: a run would pass and change nothing but the run count (or,
        # on hold, do nothing at all). Valid while the containers, their processes, the started
        # gate and this type's own state (``dirty``) are as when it was computed.
        self.steady = np.zeros(n, bool)
        self.dirty = True
        self._steady_key: tuple[int, int, int] = (-1, -1, -1)
        self._steady_until = INF
        self.passing = np.zeros(n, bool)
        self.lazy = np.zeros(n, bool)  # steady, and not stepped until the set changes
        self.has_lazy = False
        # Bumps when a container's seen instance or cached result changes (the startup type's
        # is what the others' started gate reads: ``gate``, set by the loop).
        self.version = 0
        self.gate: ProbeWorkers | None = None
        self.started_version = 0  # gate.version when the loop computed the started it passes

    def admit(self, containers: np.ndarray, t: int) -> None:
        """Workers start with the pod, before its containers: their first run finds no container,
        so the first real tick is one period later (§2.1.2-3)."""
        has = containers[self.spec.has[containers]]
        self.active[has] = True
        if has.size:
            self.hi = max(self.hi, int(has.max()) + 1)
        self.next_tick[has] = t + self.spec.period[has]
        self.dirty = True
        self.version += 1
        self._rewake()

    def suspend(self, containers: np.ndarray, t: int) -> None:
        """Workers whose kubelet is gone (their node crashed): their runs up to ``t`` taken, a
        probe in flight never returns, none runs again until ``admit`` (the node back)."""
        self.release(containers, t)
        self.active[containers] = False
        self.busy_until[containers] = INF
        self.buffered[containers] = False
        self._rewake()

    def visible(self, instance: I64) -> I64:
        """The result the kubelet sees for each container's current ID (UNKNOWN if none yet)."""
        return np.where((self.seen == instance) & (instance >= 0), self.cached, UNKNOWN)

    def due(self, t: int, ctr: Containers) -> bool:
        """Whether stepping at ``t`` may do anything: a tick or a completion is due, or workers
        whose runs are deferred (``lazy``) may no longer be steady."""
        if self.wakeup <= t:
            return True
        return self.has_lazy and bool(t >= self._steady_until or self._key(ctr) != self._steady_key)

    def _key(self, ctr: Containers, gate: int | None = None) -> tuple[int, int, int]:
        """What the steady set depends on besides this type's own state: containers, processes,
        and the startup results the started gate reads (``gate``: their version when the
        ``started`` in hand was computed; by default the current one)."""
        if gate is None:
            gate = self.gate.version if self.gate is not None else self.version
        return (ctr.epoch, self.fleet.behaviors.epoch, gate)

    def step(self, t: int, ctr: Containers, started: npt.NDArray[np.bool_], log: EventLog) -> I64:
        """Complete probes due at ``t`` and run the ticks that fire; return the workers whose
        visible result changed."""
        if not self.due(t, ctr):
            return np.empty(0, np.int64)
        changed: list[I64] = []
        hi = self.hi
        if self.busy_min <= t:
            done = np.flatnonzero(self.busy_until[:hi] <= t)
            if done.size:
                self.busy_until[done] = INF
                self.dirty = True
                changed.append(self._apply(done, t, ctr, log))
            self.busy_min = np.int64(self.busy_until[:hi].min()) if hi else INF
        self._refresh_steady(t, ctr, started)
        nb = self._kernels()
        if nb is not None:  # engine/kernels_probes.py: the same ticks
            rest = nb.probe_tick(
                hi, t, self.active, self.next_tick, self.spec.period, self.lazy, self.has_lazy,
                self.busy_until, self.busy_min, self.buffered, self.buffered_any, self.steady, self.passing,
                self.executions, self.last_run, self.run,
            )  # fmt: skip
            if rest.size:
                self.dirty = True
                changed.append(self.do_probe(rest, t, ctr, started, log))
            if self.buffered_any or self.busy_min < INF:
                self.buffered_any = bool(self.buffered.any())
            self._rewake()
            return np.concatenate(changed) if changed else np.empty(0, np.int64)
        fire = self.active[:hi] & (self.next_tick[:hi] <= t)
        if self.has_lazy:
            fire &= ~self.lazy[:hi]
        f = np.flatnonzero(fire)
        if f.size:
            per = self.spec.period[f]
            self.next_tick[f] += ((t - self.next_tick[f]) // per + 1) * per
        if self.buffered_any:
            idle = self.busy_until[:hi] == INF
            self.buffered[:hi] |= fire & ~idle  # at most one tick waits while a probe is in flight
            runnable = np.flatnonzero((fire | self.buffered[:hi]) & idle & self.active[:hi])
        elif self.busy_min < INF:
            idle_f = self.busy_until[f] == INF
            busy = f[~idle_f]
            if busy.size:
                self.buffered[busy] = True
            runnable = f[idle_f]  # fired workers are active
        else:
            runnable = f  # none busy, none buffered
        if runnable.size:
            self.buffered[runnable] = False
            quiet = self.steady[runnable]
            if quiet.all():
                self._steady_runs(runnable, t)
            else:
                self._steady_runs(runnable[quiet], t)
                rest = runnable[~quiet]
                self.dirty = True
                changed.append(self.do_probe(rest, t, ctr, started, log))
        if self.buffered_any or self.busy_min < INF:
            self.buffered_any = bool(self.buffered.any())
        self._rewake()
        return np.concatenate(changed) if changed else np.empty(0, np.int64)

    def _steady_runs(self, idx: I64, t: int) -> None:
        """What a run does to steady workers: a pass like the last, counting toward a verdict
        already written, for those that probe; nothing for the others (on hold, within the
        initial delay, gated by startup, or finding the container still not running)."""
        run = idx[self.passing[idx]]
        if run.size:
            self.executions[run] += 1
            self.last_run[run] = t
            self.run[run] += 1

    def _catch_up(self, idx: I64, t: int) -> None:
        """Deferred workers ``idx`` take the runs of every tick before ``t``: their ticks fall on
        step times (``lazy`` requires it), so each tick ran once, at its own time."""
        nt = self.next_tick[idx]
        per = self.spec.period[idx]
        runs = np.where(nt < t, (t - nt + per - 1) // per, 0)
        self.next_tick[idx] = nt + runs * per
        ran = (runs > 0) & self.passing[idx]
        r = idx[ran]
        self.executions[r] += runs[ran]
        self.run[r] += runs[ran]
        self.last_run[r] = nt[ran] + (runs[ran] - 1) * per[ran]

    def release(self, idx: I64, t: int) -> None:
        """Workers ``idx`` about to change from outside the tick (a trigger, a deletion): their
        deferred runs before ``t`` are taken, and they leave the steady set."""
        lazy = idx[self.lazy[idx]]
        if lazy.size:
            self._catch_up(lazy, t)
            self.lazy[lazy] = False
        self.steady[idx] = self.passing[idx] = False
        self.dirty = True
        self.version += 1

    def _refresh_steady(self, t: int, ctr: Containers, started: npt.NDArray[np.bool_]) -> None:
        """Recompute which workers are steady at ``t`` if anything they depend on changed."""
        key = self._key(ctr, self.started_version if self.gate is not None else None)
        if not self.dirty and t < self._steady_until and key == self._steady_key:
            return
        hi = self.hi  # (the workers past it are inactive: none steady, passing or lazy)
        if self.has_lazy:
            self._catch_up(np.flatnonzero(self.lazy[:hi]), t)
        self.dirty = False
        self._steady_key = key
        nb = self._kernels()
        if nb is not None:
            until, self.has_lazy = nb.steady_sets(
                hi, t, KIND[self.kind], SHORTCUTS, self.step_ms, self.active, self.busy_until, self.buffered,
                ctr.instance, self.seen, self.on_hold, ctr.state, ctr.started_at, self._delay_ms, started,
                self.cached, self._would_pass(), self.last_passed, self.run, self._period_on_step,
                self.next_tick, self.steady, self.passing, self.lazy,
            )  # fmt: skip
            self._steady_until = np.int64(until)
            return
        inst = ctr.instance[:hi]
        base = (
            self.active[:hi]
            & (self.busy_until[:hi] == INF)
            & ~self.buffered[:hi]
            & (inst >= 0)
            & (self.seen[:hi] == inst)
        )
        on_hold = self.on_hold[:hi]
        steady = base & on_hold
        base &= ~on_hold
        alive = ctr.alive(hi)
        # Within initialDelaySeconds: (t - start) // 1000 < delay, i.e. t < start + delay × 1000.
        due_at = ctr.started_at[:hi] + self._delay_ms[:hi]
        early = base & alive & (t < due_at)
        self._steady_until = np.int64(due_at[early].min()) if early.any() else INF
        gate = ~started[:hi] if self.kind == "startup" else started[:hi]
        probing = base & alive & ~early
        steady |= early | (probing & ~gate)
        # Not running (and not terminated for good): Failure again, already the cached result.
        cached = self.cached[:hi]
        steady |= base & ~alive & (cached == FAILURE) & (ctr.state[:hi] != EXITED)
        passing = np.zeros(hi, bool)
        if self.kind != "startup":  # a startup pass that counts puts the worker on hold
            passing = (
                probing
                & gate
                & self._would_pass()[:hi]
                & self.last_passed[:hi]
                & (self.run[:hi] > 0)
                & (cached == SUCCESS)
            )
        if not SHORTCUTS:
            steady = passing = np.zeros(hi, bool)
        n = self.active.size
        self.passing = np.zeros(n, bool)
        self.passing[:hi] = passing
        self.steady = np.zeros(n, bool)
        self.steady[:hi] = steady | passing
        # Steady workers whose ticks fall on step times are not stepped at all until the set
        # changes: _catch_up counts their runs then.
        cand = np.flatnonzero(self.steady[:hi] & self._period_on_step[:hi])
        self.lazy = np.zeros(n, bool)
        self.lazy[cand[self.next_tick[cand] % self.step_ms == 0]] = True
        self.has_lazy = bool(self.lazy[:hi].any())

    def _would_pass(self) -> npt.NDArray[np.bool_]:
        """Workers whose probe the process answers with a pass, unloaded: what the processes
        do (kept while ``Behaviors.epoch`` is the same) and the probes' fixed settings."""
        beh, s = self.fleet.behaviors, self.spec
        if self._would_pass_at is not None and self._would_pass_at[0] == beh.epoch:
            return self._would_pass_at[1]
        n = s.target.size
        if self._fixed is None:
            tcp = s.handler == TCP
            loaded = self.capacity.loaded & ~tcp if self.capacity.any else np.zeros(n, bool)
            self._fixed = (np.arange(n), tcp, s.handler == HTTP, ~s.closed & ~s.port_error & ~loaded)
        cols, tcp, http, fixed = self._fixed
        one = beh.status.shape[0] == 1  # one target: every worker's row is the first
        status = beh.status[0] if one else beh.status[s.target, cols]
        passes = tcp | ((status >= 200) & (status < 400))
        offhost = http & (beh.offhost[0] if one else beh.offhost[s.target, cols])
        out = beh.listening & ~beh.hung & fixed & passes & ~offhost
        self._would_pass_at = (beh.epoch, out)
        return out

    def trigger(
        self, idx: I64, t: int, ctr: Containers, started: npt.NDArray[np.bool_], log: EventLog
    ) -> I64:
        """Readiness manual trigger at a pod sync: run now and restart the ticker from now (§2.1.5)."""
        self.release(idx, t)
        idx = idx[self.active[idx] & (self.last_run[idx] < t)]
        busy = self.busy_until[idx] < INF
        self.buffered[idx[busy]] = True
        self.buffered_any = self.buffered_any or bool(busy.any())
        idx = idx[~busy]
        if idx.size == 0:
            return idx
        self.next_tick[idx] = t + self.spec.period[idx]
        changed = self.do_probe(idx, t, ctr, started, log, from_sync=True)
        self._rewake()
        return changed

    def do_probe(
        self,
        idx: I64,
        t: int,
        ctr: Containers,
        started: npt.NDArray[np.bool_],
        log: EventLog,
        from_sync: bool = False,
    ) -> I64:
        nb = self._kernels()
        if nb is not None:
            return self._do_probe_compiled(nb, idx, t, ctr, started, log, from_sync)
        inst = ctr.instance[idx]
        # A container started at this very instant is not in the status a ticking worker reads
        # yet; the pod sync its start causes is what reports it (and triggers readiness).
        known = (inst >= 0) & (from_sync | (self.seen[idx] == inst) | (ctr.started_at[idx] < t))
        idx, inst = idx[known], inst[known]
        new = self.seen[idx] != inst
        if new.any():
            n_idx = idx[new]
            self.seen[n_idx] = inst[new]
            self.cached[n_idx] = INITIAL[self.kind]
            self.on_hold[n_idx] = False
            self.version += 1
        idx = idx[~self.on_hold[idx]]
        alive = ctr.alive()[idx]
        changed = [np.empty(0, np.int64)]
        dead = idx[~alive]
        if dead.size:
            was = self.cached[dead].copy()
            self.cached[dead] = FAILURE
            changed.append(dead[was != FAILURE])
            self.version += int(changed[-1].size > 0)
            gone = dead[ctr.state[dead] == 3]  # terminated for good: the worker exits
            self.active[gone] = False
        idx = idx[alive]
        age_s = (t - ctr.started_at[idx]) // 1000
        idx = idx[age_s >= self.spec.delay_s[idx]]
        idx = idx[~started[idx]] if self.kind == "startup" else idx[started[idx]]
        if idx.size:
            changed.append(self._execute(idx, t, ctr, log))
        return np.concatenate(changed)

    def _execute(self, idx: I64, t: int, ctr: Containers, log: EventLog) -> I64:
        beh = self.fleet.behaviors
        s = self.spec
        self.executions[idx] += 1
        self.last_run[idx] = t
        handler = s.handler[idx]
        timeout = s.timeout[idx]
        listening = beh.listening[idx] & ~s.closed[idx]
        hung = beh.hung[idx]
        wait = beh.hang_end[idx] - t
        status = beh.status[s.target[idx], idx]
        tcp = handler == TCP
        # A hung process that accepts connections passes tcpSocket; other handlers wait for it
        # until the timeout, and get its answer if it recovers first.
        recovers = hung & ~tcp & (wait < timeout)
        timed_out = hung & ~tcp & ~recovers & listening
        latency = np.where(timed_out, timeout, np.where(recovers & listening, wait, 0))
        cap = self.capacity
        if cap.any:
            # Under load a probe is a request like any other: it may not answer in time.
            loaded = listening & ~hung & ~tcp & cap.loaded[idx]
            if loaded.any():
                li = idx[loaded]
                warm = np.where(t - ctr.started_at[li] < cap.warm_for[li], cap.warm_factor[li], 1.0)
                lat = cap.probe_latency(li, self.probe_cpu[li] * warm + self.probe_wall[li], self.rng)
                if cap.calls_any:
                    # A probe on a path that calls a dependency waits for that call too, and
                    # fails with the route's error status when the call fails (seed 004).
                    for tgt in distinct(s.target[li]):
                        sel = s.target[li] == tgt
                        extra, failed = cap.classes.probe_call(li[sel], self.target_names[int(tgt)])
                        lat[sel] += extra
                        status[np.flatnonzero(loaded)[sel]] = np.where(
                            failed, self.on_error[li[sel]], status[np.flatnonzero(loaded)[sel]]
                        )
                slow = lat > timeout[loaded]
                timed_out[loaded] = slow
                lat_ms = np.where(slow, timeout[loaded], np.ceil(lat)).astype(np.int64)
                latency[loaded] = np.where(lat_ms >= self.step_ms, lat_ms, 0)
        passed = np.where(tcp, listening, listening & ~timed_out & (status >= 200) & (status < 400))
        why = np.where(
            ~listening,
            REFUSED,
            np.where(timed_out, NO_ANSWER, np.where(passed, OK, ERROR_STATUS)),
        )
        why = np.where(s.port_error[idx], HANDLER_ERROR, why)
        latency = np.where(s.port_error[idx], 0, latency)  # the port is resolved before connecting
        self.pending_passed[idx] = passed
        self.pending_instance[idx] = ctr.instance[idx]
        self.pending_why[idx] = why
        self.pending_status[idx] = status
        self.pending_warn[idx] = passed & (handler == HTTP) & beh.offhost[s.target[idx], idx]
        later = latency > 0
        self.busy_until[idx[later]] = t + latency[later]
        if later.any():
            self.busy_min = min(self.busy_min, np.int64((t + latency[later]).min()))
        now = idx[~later]
        return self._apply(now, t, ctr, log) if now.size else np.empty(0, np.int64)

    def _apply(self, idx: I64, t: int, ctr: Containers, log: EventLog) -> I64:
        """Count finished runs toward the thresholds and write verdicts (§2.2.17-19)."""
        s = self.spec
        nb = self._kernels()
        if nb is not None:
            changed, errored, warned, failed, bumps = nb.probe_apply(
                idx, KIND[self.kind], ctr.instance, s.success_th, s.failure_th, self.seen, self.cached,
                self.on_hold, self.last_passed, self.run, self.pending_passed, self.pending_instance,
                self.pending_why, self.pending_warn,
            )  # fmt: skip
            self.version += bumps
            self._events(errored, warned, failed, t, log)
            return changed
        why = self.pending_why[idx]
        errored = idx[why == HANDLER_ERROR]
        # A handler error is thrown away: counters and cache unchanged.
        idx = idx[why != HANDLER_ERROR]
        if idx.size == 0:
            self._events(errored, idx, idx, t, log)
            return idx
        warned = idx[self.pending_warn[idx]]
        passed = self.pending_passed[idx]
        run = np.where(self.run[idx] > 0, next_run(self.last_passed[idx], self.run[idx], passed), 1)
        self.run[idx] = run
        self.last_passed[idx] = passed
        cross = reaches_threshold(passed, run, s.success_th[idx], s.failure_th[idx])
        current = (self.pending_instance[idx] == ctr.instance[idx]) & (self.seen[idx] == ctr.instance[idx])
        write = cross & current
        value = np.where(passed, SUCCESS, FAILURE)
        changed = idx[write & (self.cached[idx] != value)]
        self.version += int(changed.size > 0)
        self.cached[idx[write]] = value[write]
        hold = (
            cross & (~passed if self.kind == "liveness" else True)
            if self.kind != "readiness"
            else cross & False
        )
        if hold.any():
            self.on_hold[idx[hold]] = True
            self.run[idx[hold]] = 0
        self._events(errored, warned, idx[~passed], t, log)
        return changed

    def _kernels(self) -> ModuleType | None:
        """engine/kernels.py if this run's probes take it: a run with a capacity model that
        took the kernels, without dependency calls (a probe that calls one stays numpy's)."""
        cap = self.capacity
        return loaded_kernels() if cap.any and not cap.calls_any else None

    def _do_probe_compiled(
        self,
        nb: ModuleType,
        idx: I64,
        t: int,
        ctr: Containers,
        started: npt.NDArray[np.bool_],
        log: EventLog,
        from_sync: bool,
    ) -> I64:
        """do_probe, _execute and _apply as engine/kernels_probes.py's kernels; the loaded
        probes' latency draws between them, numpy's (the same values in the same order)."""
        s, beh, cap = self.spec, self.fleet.behaviors, self.capacity
        kind = KIND[self.kind]
        dead, run, bumps, loaded, mean, sigma = nb.probe_start(
            idx, t, from_sync, kind, INITIAL[self.kind], ctr.instance, ctr.started_at, ctr.state, started,
            self.seen, self.cached, self.on_hold, self.active, s.delay_s, self.executions, self.last_run,
            beh.listening, s.closed, beh.hung, s.handler, cap.loaded, cap.sigma,
        )  # fmt: skip
        self.version += bumps
        if run.size == 0:
            return dead
        x = lognormal(self.rng, mean, sigma) if loaded.size else mean
        changed, errored, warned, failed, bumps, busy_min = nb.probe_finish(
            run, x, t, self.step_ms, kind, ctr.instance, ctr.started_at, s.handler, s.timeout, s.target,
            s.port_error, s.closed, s.success_th, s.failure_th, beh.listening, beh.hung, beh.hang_end,
            beh.status, beh.offhost, cap.loaded, cap.warm_for, cap.warm_factor, self.probe_cpu,
            self.probe_wall, cap.separate, cap.rho, cap.cpu_rho, cap.throttled, cap.wait_ms, self.seen,
            self.cached, self.on_hold, self.last_passed, self.run, self.busy_until, self.pending_passed,
            self.pending_instance, self.pending_why, self.pending_status, self.pending_warn,
        )  # fmt: skip
        self.version += bumps
        if busy_min >= 0:
            self.busy_min = min(self.busy_min, np.int64(busy_min))
        self._events(errored, warned, failed, t, log)
        return np.concatenate((dead, changed)) if dead.size else changed

    def _events(self, errored: I64, warned: I64, failed: I64, t: int, log: EventLog) -> None:
        """The events of finished runs: handler errors, redirect warnings, then failures."""
        self.said.events(errored, warned, failed, self.pending_why, self.pending_status, t, log)

    def _rewake(self) -> None:
        hi = self.hi
        nb = self._kernels()
        if nb is not None:
            self.wakeup = min(
                np.int64(nb.next_wake(hi, self.active, self.next_tick, self.lazy, self.has_lazy)),
                self.busy_min,
            )
            return
        active = self.active[:hi]
        nt = self.next_tick[:hi][active & ~self.lazy[:hi] if self.has_lazy else active]
        w = np.int64(nt.min()) if nt.size else INF
        # busy_min is at most the earliest completion (a step woken early finds nothing due).
        self.wakeup = min(w, self.busy_min)
