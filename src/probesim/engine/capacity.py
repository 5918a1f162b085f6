"""The capacity model: what load does to a container's latency, and so to its probes.

Per container that declares route costs (``routes`` in the workload), as counts, never request
objects, O(routes × containers) per step:

- requests join a FIFO backlog bounded by ``workers + queue`` (beyond it: refused, 503);
- the container serves at rate μ = min(L / c̄, W / (w̄ + c̄)): L its CPU limit in cores (the
  node's CPU without a limit), W its workers, c̄ and w̄ the mean CPU and wait time per request
  of what it holds (c̄ × the warm-up factor while warming up);
- with a worker pool, each of the W requests at work has done part of its work, and is still
  held: a busy period's first answers come a request's time after it began, not at once. Of
  what μ served as a fluid, (n - 1) / 2 · f requests' work is done but not yet answered, n the
  requests at work (W once the pool is full), f = 1 - cv² the share their service times' spread
  leaves (1 for exact costs, 0 for exponential ones); it is answered as the pool drains and
  lost if the container stops first;
- a request served in a step waited ``leftover / μ`` for the backlog left from earlier steps,
  then took its own time stretched by contention, ``s / (1 - ρ)`` (processor sharing, ρ the
  utilization of this step, capped at 0.95; with a pool, at most the ``W · c̄ / (c̄ + w̄)``
  requests on the CPU at once over its cores), times a log-normal spread (``variability``);
- CPU use is what was served × c̄, never above the limit; a step whose demand exceeded the
  limit is a throttled step (CFS quota exhausted), and its requests wait half a 100 ms quota
  period more;
- a probe is a request too: with ``probes: shared`` it waits behind the backlog — with a worker
  pool, for a worker: ``max(N - W + 1, 0) / μ`` for the N requests held at the step's end (the
  W at work are not ahead of it, only the queue is); without one, ``leftover / μ`` as a served
  request; with ``separate`` it only feels CPU contention. A request arriving now (a try of a
  service call) waits the same, and a request served waits its time in the backlog less that
  head start, ``(W - 1) / μ`` (``head_ms``).

When the container stops or is replaced, what it held is lost (failed as ``killed``).

The serving step, the capacity a container has for arrivals and what arrivals it takes run as
compiled kernels when the run took them, otherwise as the numpy forms here, to the bit the same
(engine/kernel_choice.py says when; ``PROBESIM_KERNELS=numpy|numba`` forces either). The latency
distributions of what it served are engine/distributions.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import span
from probesim.engine.call_classes import CallClasses, K
from probesim.engine.draws import binomial, lognormal, numpy_generator
from probesim.engine.fleet import Fleet
from probesim.engine.kernel_choice import kernels, run_with
from probesim.model.kubernetes import Container
from probesim.model.scenario import (
    ContainerBehavior,
)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

MAX_RHO = 0.95
QUOTA_PERIOD_MS = 100.0


class CapacityModel:
    def __init__(
        self,
        fleet: Fleet,
        behaviors: list[ContainerBehavior],
        specs: list[Container],
        rng: np.random.Generator,
        probe_paths: list[str],
    ) -> None:
        n = fleet.n_containers
        routes = fleet.routes
        r = len(routes)
        self.fleet = fleet
        self.rng = rng
        self.deps = fleet.scenario.spec.dependencies
        # Pods share their template's objects: each setting is computed once per distinct one.
        beh_of, beh_inv = _distinct(behaviors)
        spec_of, spec_inv = _distinct(specs)

        def per_behavior(fn: Callable[[ContainerBehavior], float | bool], dtype: type) -> npt.NDArray[Any]:
            return np.array([fn(b) for b in beh_of], dtype)[beh_inv]

        self.loaded = per_behavior(lambda b: b.loaded, bool)
        cluster = fleet.scenario.spec.cluster
        limit_m = np.array(
            [
                c.resources.limits.cpu if c.resources.limits.cpu is not None else cluster.node_cpu
                for c in spec_of
            ],
            np.float64,
        )[spec_inv]
        # The app's own CPU besides requests takes its share of the limit while it runs: the
        # requests have what is left (limit_m), and the usage counts it (cpu_in_use).
        self.idle_m = per_behavior(lambda b: b.idle_cpu, np.float64)
        self.any_idle = bool(self.idle_m.any())
        self.limit_m = np.maximum(limit_m - self.idle_m, 0.0) if self.any_idle else limit_m
        # The API server defaults a missing request to the limit.
        self.request_m = np.array(
            [c.resources.requests.cpu or c.resources.limits.cpu or 0 for c in spec_of], np.float64
        )[spec_inv]
        self.workers = per_behavior(lambda b: b.capacity.workers or np.inf, np.float64)
        queue = per_behavior(lambda b: np.inf if b.capacity.queue is None else b.capacity.queue, np.float64)
        self.room = np.where(np.isfinite(self.workers), self.workers + queue, np.inf)
        self.separate = per_behavior(lambda b: b.capacity.probes == "separate", bool)
        self.sigma = per_behavior(lambda b: b.variability, np.float64)
        # A worker pool's requests at work have each done part of their work, on average the
        # mean residual life's complement: a share 1 - cv² of half a request (cv² = e^σ² - 1, the
        # log-normal's), none for exponential times or wider. Their done work, not yet answered,
        # is (n - 1) / 2 · f with n at work: at most ``busy_max``, and ``busy_ramp`` · (N' - 1)
        # when the N' requests' work the fluid holds leaves the pool not full (step).
        f = np.maximum(1.0 - np.expm1(self.sigma**2), 0.0)
        pooled = np.isfinite(self.workers)
        self.busy_max = f * (np.where(pooled, self.workers, 1.0) - 1.0) / 2.0
        self.busy_ramp = np.where(pooled, f / (2.0 - f), 0.0)
        self.warm_for = per_behavior(lambda b: b.warmup.for_ if b.warmup else 0, np.float64)
        self.warm_factor = per_behavior(lambda b: b.warmup.factor if b.warmup else 1.0, np.float64)
        self.behaviors = behaviors
        self.profile_of = fleet.behaviors.profile_of
        self.paths = list(dict.fromkeys([rt.path for rt in routes] + probe_paths))
        self.calls_any = any(b.cost(p).calls or b.cost(p).errors for b in beh_of for p in self.paths)
        # Requests of a route that calls dependencies split into outcome classes (virtual route
        # v = r * k + class); without any call, every request is of the first class, and the
        # route keeps one row (the other classes would stay empty).
        self.k = K if self.calls_any else 1
        self.n_routes = max(r, 1)
        route_cpu = np.zeros((self.n_routes, n))
        self.route_wall = np.zeros((self.n_routes, n))
        for ri, route in enumerate(routes):
            costs = [b.cost(route.path) for b in beh_of]
            route_cpu[ri] = np.array([x.cpu for x in costs], np.float64)[beh_inv]
            self.route_wall[ri] = np.array([x.wall for x in costs], np.float64)[beh_inv]
        self.cpu = np.repeat(route_cpu, self.k, axis=0)
        self.wall = np.repeat(self.route_wall, self.k, axis=0)
        self.failed = np.zeros((self.n_routes * self.k, n), bool)
        self.classes = CallClasses(fleet, behaviors, beh_of, beh_inv, self.paths, rng)
        self.update_classes(0)
        # What a container with nothing held serves at (fixed without dependency calls; as if
        # every route had all K classes, a mean over K copies of each route's row).
        self._mean_cpu = np.repeat(route_cpu, K, axis=0).mean(axis=0)
        self._mean_wall = np.repeat(self.wall[:: self.k], K, axis=0).mean(axis=0)
        self.backlog = np.zeros((self.n_routes * self.k, n), np.int64)
        self.carry = np.zeros(n)
        self.instance = np.full(n, -1, np.int64)
        # The state a request or probe arriving now meets (from the last step).
        self.wait_ms = np.zeros(n)
        # Per pooled container, what a request gains on the backlog's drain: it has a worker once
        # all but W - 1 of those ahead of it are done, (W - 1) / μ before they all are.
        self.head_ms = np.zeros(n)
        self.rho = np.zeros(n)
        self.cpu_rho = np.zeros(n)
        self.cpu_used_m = np.zeros(n)
        self.throttled = np.zeros(n, bool)
        self.any = bool(self.loaded.any())
        self._leftover = np.zeros(n, np.int64)  # backlog left after the last step
        # Containers from this one on never took a request: they hold and carry nothing (HPAs
        # reserve slots for 4 × maxReplicas, most of them never used).
        self._hi = 0
        self.step_capacity = np.zeros(n)
        self._idle_capacity: F64 | None = None
        self._stable: B | None = None
        self._unstable = np.zeros(0, bool)
        self._any_unstable = False
        self._all_loaded = False
        self.active = np.zeros(0, np.int64)  # the containers the last step served (the others: 0)
        self.used_m = np.zeros(0)  # the last step's cpu_used_m of the active containers
        # Where engine/kernels_serving.py's serve_step writes active and used_m (their first m).
        self.active_out = np.zeros(n, np.int64)
        self.used_out = np.zeros(n)
        spec = fleet.scenario.spec
        self._nb = run_with(kernels(spec.duration // spec.step) if self.any else None)

    @property
    def compiled(self) -> ModuleType | None:
        """The kernels this run took (engine/kernels.py), None for the numpy forms."""
        return self._nb

    def update_classes(self, t: int) -> None:
        """The outcome classes at ``t`` (engine/call_classes.py), and with them what each
        route's outcome class waits and whether it fails."""
        if not self.classes.update(t):
            return
        kk = self.k
        path_classes = self.classes.path_classes
        for ri, route in enumerate(self.fleet.routes):
            _, extra, failed = path_classes[route.path]
            sl = slice(ri * kk, (ri + 1) * kk)
            self.wall[sl] = self.route_wall[ri] + extra[:kk]
            self.failed[sl] = failed[:kk]
        self._class_prob = {ri: path_classes[rt.path][0][:kk] for ri, rt in enumerate(self.fleet.routes)}

    def probe_latency(self, idx: I64, base_ms: F64, rng: np.random.Generator) -> F64:
        """One probe's latency on each container of ``idx`` whose cost is ``base_ms``."""
        sigma = self.sigma[idx]
        x = lognormal(rng, -(sigma**2) / 2, sigma)
        shared = ~self.separate[idx]
        rho = np.where(shared, self.rho[idx], self.cpu_rho[idx])
        stretch = base_ms / (1.0 - np.minimum(rho, MAX_RHO))
        extra = np.where(self.throttled[idx], QUOTA_PERIOD_MS / 2, 0.0)
        return np.where(shared, self.wait_ms[idx], 0.0) + stretch * x + extra

    def begin_step(self, dt: float) -> None:
        """Before arrivals: how many requests each container will finish in this step, so that
        a full queue still takes in what the step's service frees up."""
        nb = self._nb
        if nb is not None:
            if self.calls_any:
                self.step_capacity = nb.step_capacity_calls(
                    dt, self.backlog, self.cpu, self.wall, self.limit_m, self.workers
                )
                return
            if self._idle_capacity is None:
                self._idle_capacity = self._capacity(dt, self._mean_cpu, self._mean_wall)
            self.step_capacity = nb.step_capacity(
                dt,
                self.backlog,
                self.cpu,
                self.wall,
                self.limit_m,
                self.workers,
                self._idle_capacity,
                self._hi,
            )
            return
        held = self._held()
        if self.calls_any:
            with np.errstate(divide="ignore", invalid="ignore"):
                c = np.where(held > 0, (self.backlog * self.cpu).sum(axis=0) / held, self.cpu.mean(axis=0))
                w = np.where(held > 0, (self.backlog * self.wall).sum(axis=0) / held, self.wall.mean(axis=0))
            self.step_capacity = self._capacity(dt, c, w)
            return
        if self._idle_capacity is None:
            # With nothing held a container serves at its routes' mean cost: fixed here.
            self._idle_capacity = self._capacity(dt, self._mean_cpu, self._mean_wall)
        self.step_capacity = self._idle_capacity.copy()
        held_at = np.flatnonzero(held[: self._hi] > 0)
        if held_at.size:
            h = span(held_at)  # usually consecutive: views, not gathers
            backlog, hh = self.backlog[:, h], held[h]
            one = backlog.shape[0] == 1  # (a sum over one row is that row, to the bit)
            c = (backlog[0] * self.cpu[0, h] if one else (backlog * self.cpu[:, h]).sum(axis=0)) / hh
            w = (backlog[0] * self.wall[0, h] if one else (backlog * self.wall[:, h]).sum(axis=0)) / hh
            self.step_capacity[h] = self._capacity(dt, c, w, h)

    def _capacity(self, dt: float, c: F64, w: F64, at: slice | I64 | None = None) -> F64:
        """Requests each container (of ``at``, default all) can finish in a step, ``c`` and
        ``w`` the mean CPU and wait time per request of what it holds."""
        limit_m = self.limit_m if at is None else self.limit_m[at]
        workers = self.workers if at is None else self.workers[at]
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = np.minimum(
                np.where(c > 0, limit_m / 1000.0 / c, np.inf),
                np.where(c + w > 0, workers / (c + w), np.inf),
            )
            return np.asarray(np.floor(np.minimum(mu * dt, 2**53)), np.float64)

    def accept(self, ri: int, containers: I64, counts: I64, instance: I64) -> I64:
        """Arrivals of route ``ri`` at ``containers`` (ascending, as pods' containers are);
        returns how many each container took (the rest are refused). What is taken is split
        among the route's outcome classes by a multinomial draw."""
        at = span(containers)  # usually consecutive: views, not gathers
        kk = self.k
        nb = self._nb
        if nb is not None:
            cs = np.ascontiguousarray(containers, np.int64)
            take = nb.take(
                self.backlog, self.room, self.step_capacity, cs, counts.astype(np.int64), ri * kk,
                not self.calls_any,  # one outcome class: all join its row in the kernel
            )  # fmt: skip
            if self.calls_any:
                # Drawn in the kernel from the run's generator, as split_classes draws them.
                shares = np.ascontiguousarray(self._class_prob[ri], np.float64)
                nb.split_classes(numpy_generator(self.rng), self.backlog, shares, cs, take, ri * kk)
        else:
            held = self.backlog[0, at] if self.backlog.shape[0] == 1 else self.backlog[:, at].sum(axis=0)
            room = self.room[at] + self.step_capacity[at] - held
            take = np.minimum(counts, np.maximum(room, 0)).astype(np.int64)
            if self.calls_any:
                split_classes(self.rng, self.backlog, self._class_prob[ri], at, take, ri * kk)
            else:
                self.backlog[ri * kk, at] += take  # one outcome class
        self.instance[at] = instance
        if containers.size:
            self._hi = max(self._hi, int(containers[-1]) + 1)
        return take

    def took_below(self, hi: int) -> None:
        """Containers below ``hi`` took requests (engine/kernels.py's ``arrive``, which is
        ``accept`` for one outcome class; -1: none did)."""
        self._hi = max(self._hi, hi)

    def _held(self) -> I64:
        """What each container holds, all routes and classes (one row: that row, not a copy)."""
        return self.backlog[0] if self.backlog.shape[0] == 1 else self.backlog.sum(axis=0)

    @property
    def hi(self) -> int:
        """Containers from this one on never took a request: they hold and carry nothing."""
        return self._hi

    def drop(self, stopped: B) -> I64:
        """What containers that stopped or were replaced (``stopped``, for each container below
        ``hi`` at least: not alive, or another instance than the one that took the requests)
        held: lost, per route."""
        hi = self._hi
        gone = (self._held()[:hi] > 0) & stopped[:hi]
        if not gone.any():
            return np.zeros(self.backlog.shape[0], np.int64)
        lost = self.backlog[:, :hi][:, gone].sum(axis=1)
        self.backlog[:, :hi][:, gone] = 0
        self.carry[:hi][gone] = 0
        return lost

    def forget(self, containers: I64) -> None:
        """Containers nothing reaches any more (their node failed): what they hold is never
        answered to anyone (their clients time out), so they hold nothing."""
        self.backlog[:, containers] = 0
        self.carry[containers] = 0
        self._leftover[containers] = 0

    def _stable_when_idle(self, dt: float) -> B:
        """Containers whose state with nothing held and no carry stays so, every output zero,
        whatever their age (warm or not): a step serves at least one request's worth (or
        without bound), and the CPU limit is positive. The others are served every step."""
        if self.calls_any:  # the classes' wait times change the service rate
            return np.zeros(self.carry.size, bool)
        ok = self.limit_m > 0
        limit = self.limit_m / 1000.0
        with np.errstate(divide="ignore", invalid="ignore"):
            for warm in (1.0, self.warm_factor):
                c = self.cpu[0] * warm
                w = self.wall[0]
                mu = np.minimum(
                    np.where(c > 0, limit / c, np.inf), np.where(c + w > 0, self.workers / (c + w), np.inf)
                )
                ok &= (mu > 0) & (np.isinf(mu) | (np.floor(np.minimum(mu * dt, 2**53)) >= 1))
        return np.asarray(ok, bool)

    @property
    def active_ix(self) -> slice | I64:
        """``active`` as a slice when consecutive (views and copies, not gathers)."""
        return span(self.active)

    def _prepare(self, dt: float) -> None:
        """What the first step finds out once: the containers that stay idle when they hold
        nothing (_stable_when_idle), and whether every container is loaded."""
        if self._stable is None:
            self._stable = self._stable_when_idle(dt)
            self._unstable = ~self._stable
            self._any_unstable = bool(self._unstable.any())
            self._all_loaded = bool(self.loaded.all())

    def kernel_state(self, dt: float, started_at: I64, t: int) -> tuple[Any, ...]:
        """engine/kernels_capacity.py's serve arguments: the step, and this model's state (the
        arrays it updates in place among them)."""
        self._prepare(dt)
        return (
            dt, t, self.backlog, self.carry, self._leftover, started_at, self.warm_for, self.warm_factor,
            self.cpu, self.wall, self.loaded, self.limit_m, self.workers, self.busy_max, self.busy_ramp,
            self._unstable, self._any_unstable,
            self._all_loaded, self._hi, self.throttled, self.cpu_used_m, self.cpu_rho, self.rho, self.wait_ms,
            self.head_ms,
        )  # fmt: skip

    def stepped(self, m: int) -> None:
        """After serve_step: the containers it stepped and their CPU, its first ``m`` outputs."""
        self.active = self.active_out[:m]
        self.used_m = self.used_out[:m]

    def step(self, dt: float, started_at: I64, t: int) -> tuple[I64, F64, F64]:
        """Serve one step. For the containers it steps (``active``, ascending; the others serve
        nothing and every output of theirs is 0), returns the served count per (route,
        container), each container's queue wait and each (route, container)'s service time for
        what it served (only meaningful where it served)."""
        n = self.carry.size
        self._prepare(dt)
        if self._nb is not None:
            return self._step_compiled(dt, started_at, t)
        one = self.backlog.shape[0] == 1  # one route, one outcome class: no sums over rows
        held_all = self.backlog[0] if one else self.backlog.sum(axis=0)
        # Containers that hold nothing, carry nothing and stay so are left out (every output 0).
        if self._any_unstable:
            step_them = (held_all > 0) | (self.carry != 0) | self._unstable
        else:
            step_them = (held_all[: self._hi] > 0) | (self.carry[: self._hi] != 0)
        a = self.active = np.flatnonzero(step_them)
        ix = span(a)  # usually consecutive: views and copies, not gathers
        held = held_all[ix]
        backlog = self.backlog[:, ix]
        leftover = np.minimum(self._leftover[ix], held)
        warm = np.where(t - started_at[ix] < self.warm_for[ix], self.warm_factor[ix], 1.0)
        cpu = self.cpu[:, ix] * warm
        wall = self.wall[:, ix]
        loaded = self.loaded[ix]
        limit_m = self.limit_m[ix]
        with np.errstate(divide="ignore", invalid="ignore"):
            # (A sum over one row is that row, to the bit.)
            holds = held > 0
            mix_c = np.where(
                holds, (backlog[0] * cpu[0] if one else (backlog * cpu).sum(axis=0)) / held, cpu[0]
            )
            mix_w = np.where(
                holds, (backlog[0] * wall[0] if one else (backlog * wall).sum(axis=0)) / held, wall[0]
            )
            limit = limit_m / 1000.0  # cores = CPU-ms per ms
            mu_cpu = np.where(mix_c > 0, limit / mix_c, np.inf)
            per_request = mix_c + mix_w
            pool = self.workers[ix]  # W, inf without a worker pool
            mu_w = np.where(per_request > 0, pool / per_request, np.inf)
            mu = np.minimum(mu_cpu, mu_w)  # requests per ms
            # At most W requests at work share the CPU: a request's CPU is stretched no more
            # than the W · c̄ / (c̄ + w̄) of them on the CPU at once over the limit's cores.
            pooled_cpu = np.isfinite(pool) & (per_request > 0) & (limit > 0)
            crowd = np.where(pooled_cpu, pool * mix_c / (per_request * limit), np.inf)
            mu_dt = mu * dt
            cap = mu_dt + self.carry[ix]
            # A pool's workers each have a request part done (a busy period's first answers
            # come a request's time after it began, not at once): of what μ served, ``busy``
            # requests' work is done but not yet answered (__init__'s busy_max, busy_ramp). It
            # stays held until the pool drains (then it is answered) and is lost with what is
            # queued when the container stops. ``carry`` keeps it, with the fraction of a
            # request the step's capacity left over; ``cap`` - ``held`` is then what the fluid
            # (every request's work counted as soon as it is done) leaves held.
            beyond = held - cap - 1.0
            busy = np.where(beyond > 0, np.minimum(self.busy_ramp[ix] * beyond, self.busy_max[ix]), 0.0)
            whole = np.floor(np.minimum(cap - busy, 2**53))
            served_total = np.minimum(held, whole).astype(np.int64)
            self.carry[ix] = np.where(held >= whole, cap - whole, 0.0)
            arrivals = held - leftover
            finite = np.isfinite(mu)
            rho = np.where(finite, arrivals / mu_dt, 0.0)
            wait = np.where(finite & (mu > 0), leftover / mu, 0.0)
            demand_m = np.where(finite, held * mix_c / dt * 1000.0, 0.0)
        throttled = demand_m > limit_m
        used_m = np.minimum(served_total * mix_c / dt * 1000.0, limit_m)
        cpu_rho = demand_m / limit_m
        if not self._all_loaded:
            throttled &= loaded
            rho = np.where(loaded, rho, 0.0)
            used_m = np.where(loaded, used_m, 0.0)
            cpu_rho = np.where(loaded, cpu_rho, 0.0)
            wait = np.where(loaded, wait, 0.0)
        self.throttled = np.zeros(n, bool)
        self.throttled[ix] = throttled
        self.cpu_used_m = np.zeros(n)
        self.cpu_used_m[ix] = used_m
        self.cpu_rho = np.zeros(n)
        self.cpu_rho[ix] = cpu_rho
        self.rho = np.zeros(n)
        self.rho[ix] = rho
        self.wait_ms = np.zeros(n)
        self.wait_ms[ix] = wait
        served = self._split(served_total, held, backlog)
        backlog -= served  # (held, a view of it with a slice, is not read again)
        if not isinstance(ix, slice):
            self.backlog[:, ix] = backlog
        self._leftover = np.zeros(n, np.int64)
        left = self._leftover[ix] = backlog[0] if one else backlog.sum(axis=0)
        # What arrives now (a probe, a try) waits for a worker: behind what is queued now, not
        # behind what is at work. (Without a worker pool every request is at work, sharing the
        # CPU: it waits for the backlog the step began with, as a served request did.)
        pooled = np.isfinite(pool) & (loaded if not self._all_loaded else True) & finite & (mu > 0)
        self.head_ms = np.zeros(n)
        if pooled.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                for_worker = np.maximum(left - pool + 1.0, 0.0) / mu
                head = (pool - 1.0) / mu
            self.wait_ms[ix] = np.where(pooled, for_worker, wait)
            self.head_ms[ix] = np.where(pooled, head, 0.0)
        stretch = np.minimum(1.0 / (1.0 - np.minimum(rho, MAX_RHO)), np.maximum(1.0, crowd))
        service = wall + cpu * stretch + np.where(throttled, QUOTA_PERIOD_MS / 2, 0.0)
        self.used_m = used_m
        return served, wait, service

    def _step_compiled(self, dt: float, started_at: I64, t: int) -> tuple[I64, F64, F64]:
        """``step`` by the kernel (engine/kernels.py's serve): the same outputs and state."""
        assert self._nb is not None
        a, served, wait, service, self.used_m = self._nb.serve(*self.kernel_state(dt, started_at, t))
        self.active = a
        return served, wait, service

    def cpu_in_use(self, running: B) -> F64:
        """Each container's CPU in the last step (millicores): its requests', and the app's own
        while it runs."""
        return self.cpu_used_m + self.idle_m * running if self.any_idle else self.cpu_used_m

    def served_all(self, served: I64) -> I64:
        """A step's served counts (for the ``active`` containers) over every container."""
        out = np.zeros(self.backlog.shape, np.int64)
        out[:, self.active_ix] = served
        return out

    def _split(self, total: I64, held: I64, backlog: I64) -> I64:
        """Share a container's served count among routes in proportion to what each holds."""
        if backlog.shape[0] == 1:
            return total[None, :].copy()
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(held > 0, backlog * (total / np.maximum(held, 1)), 0.0)
        out = np.floor(share).astype(np.int64)
        rest = total - out.sum(axis=0)
        for ri in range(out.shape[0]):  # leftovers to routes in order, within what each holds
            give = np.minimum(rest, backlog[ri] - out[ri])
            out[ri] += give
            rest -= give
        return out


def split_classes(
    rng: np.random.Generator, backlog: I64, prob: F64, at: slice | I64, take: I64, row: int
) -> None:
    """What containers ``at`` took (``take``) split among a route's outcome classes (``prob``:
    each class's share per container; backlog rows ``row`` on): class by class, a binomial draw
    per container of what is left — the multinomial split, drawn in this order. (The kernel of
    the same name in engine/kernels_capacity.py draws the same values.)"""
    kk = prob.shape[0]
    left = take  # (never changed in place)
    rest = np.ones(take.size)
    for k in range(kk):
        if k == kk - 1:
            part = left
        else:
            p = np.clip(np.where(rest > 1e-12, prob[k, at] / np.maximum(rest, 1e-12), 0.0), 0.0, 1.0)
            part = binomial(rng, left, p)
        backlog[row + k, at] += part
        left = left - part
        rest = rest - prob[k, at]


def _distinct(items: list[Any]) -> tuple[list[Any], I64]:
    """The distinct objects of ``items`` (by identity) and, per item, the index of its own."""
    index: dict[int, int] = {}
    uniq: list[Any] = []
    inv = np.empty(len(items), np.int64)
    for i, x in enumerate(items):
        j = index.get(id(x))
        if j is None:
            j = index[id(x)] = len(uniq)
            uniq.append(x)
        inv[i] = j
    return uniq, inv
