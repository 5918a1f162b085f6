"""The serving phase of a step (engine/traffic.py's Traffic inherits it): the capacity model serves
each loaded container's backlog, and what it served is matched with the clients' side of it
(cohorts), counted (ok, error status, timeout), and either answered within the step or put on
the answer wheel for later, with its latency in the step's CDF; then each route's quantiles.
The usual case of a one-class route runs as one compiled call (kernels_serving.serve_route).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import cast

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import distinct_inverse
from probesim.engine.behavior import INF
from probesim.engine.capacity import CapacityModel
from probesim.engine.cohorts import cohorts
from probesim.engine.connections import Connections
from probesim.engine.containers import Containers
from probesim.engine.distributions import (
    CDF_ROWS,
    GRID,
    LATE,
    grid_quantiles,
    grouped_cdfs,
    mixture_cdf,
    state_groups,
    timed_out,
)
from probesim.engine.fleet import Fleet
from probesim.engine.kernel_choice import loaded_kernels
from probesim.engine.series_names import P50_AT
from probesim.model.scenario import ScenarioSpec

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
# Per cohort: service time, time waited in whole steps, wait before service, sigma, whether its
# calls failed, when its client sees the answer, whether that is later than the step; any later.
LatencyParts = tuple[F64, F64, F64, F64, B, F64, B, bool]


class Serving:
    """The serving phase over the traffic's state (Traffic's, which sets these)."""

    spec: ScenarioSpec
    fleet: Fleet
    rng: np.random.Generator
    ctr: Containers
    capacity: CapacityModel
    cols: list[dict[str, I64]]
    route_block: I64
    limits: F64
    ramp_open: B
    ramp_cdf: F64
    latency_cdf: F64
    step_cdf: F64
    conns: list[Connections]
    sidecar_waited: list[list[tuple[int, float]]]
    pending: list[I64]
    later_cdf: list[F64]
    later_n: list[F64]
    later_t: list[F64]
    queued: list[I64]
    orphans: list[I64]
    pending_n: list[int]
    queued_n: list[int]
    queued_rows: list[I64]
    call_routes: list[int]
    answered_at_once: list[int]
    _one_route: tuple[float, float, float, bool] | None = None  # _serve_one's constants, once known

    def _with_connect_wait(self, ri: int, mix: F64, n: int) -> F64:
        """The weighted latency distribution of ``n`` answers given now (``mix``), the requests
        that first waited for their SYN to be answered (``noEndpoint: retransmit``) taken out and
        put back that much later, at the typical latency of the others; and those that spent
        time in their client's sidecar before their last try (a fault delay, the failed tries
        and back-offs of a retry: ``sidecar_waited``), their latency the others' shifted by it."""
        waited = self.conns[ri].waited
        side = self.sidecar_waited[ri]
        total = sum(c for c, _ in waited)
        held = sum(c for c, _ in side)
        if (total == 0 and held == 0) or n == 0:
            return mix * n
        taken = min(total, n)
        shifted = min(held, n - taken)
        out = mix * (n - taken - shifted)
        if total:
            share = taken / total
            typical = grid_quantiles(mix, (0.5,))[0]
            for count, ms in waited:
                out += count * share * (ms + typical <= GRID)
        if shifted:
            share = shifted / held
            for count, held_ms in side:
                out += count * share * np.interp(GRID - held_ms, GRID, mix, left=0.0)
        return out

    def _latency_parts(
        self,
        nb: ModuleType | None,
        ri: int,
        vs: I64,
        cs: I64,
        at: I64,
        ages: I64,
        service: F64,
        wait: F64,
        limit: float,
        horizon: float,
    ) -> LatencyParts:
        """Per cohort of route ``ri`` (outcome class, container, its index among those served,
        steps waited): its service time, time waited in whole steps, wait before service, sigma,
        whether its calls failed, when its client sees the answer (from this step), whether that
        is later than this step, and whether any is."""
        cap = self.capacity
        K = cap.k
        step = float(self.spec.step)
        if nb is not None:  # engine/kernels.py: the same arrays
            parts: LatencyParts = nb.latency_parts(
                service,
                ri * K,
                vs,
                at,
                cs,
                ages,
                wait,
                cap.head_ms,
                cap.sigma,
                cap.failed,
                cap.calls_any,
                step,
                limit,
                horizon,
            )
            return parts
        sl = slice(ri * K, (ri + 1) * K)
        sv = service[ri][at] if K == 1 else service[sl][vs, at]
        # Latency counts from the step a request was sent: those sent now waited for the
        # backlog ahead of them; older ones, at the head of the queue, for their steps. With a
        # worker pool, less the head start: a worker was theirs once all but W - 1 were done.
        waited = ages * step
        d = np.maximum(np.where(ages == 0, wait[at], waited) - cap.head_ms[cs], 0.0)
        sigma = cap.sigma[cs]
        # (Without dependency calls no outcome class fails.)
        failed = cap.failed[sl][vs, cs] if cap.calls_any else np.zeros(cs.size, bool)
        # The client sees each answer at min(latency, its timeout): those later than this
        # step are delivered by _deliver when due (and lost if their container stops first).
        seen = np.minimum(np.minimum(d + sv, limit) - waited, horizon)
        later = seen >= step
        return cast(LatencyParts, (sv, waited, d, sigma, failed, seen, later, bool(later.any())))

    def serve(self, t: int, k: int, rec: dict[str, I64]) -> None:
        """Loaded containers serve their backlog. Finished requests count as ok, as the route's
        error status when a dependency call failed, or as timeouts when they took longer than
        the client's timeout."""
        cap = self.capacity
        K = cap.k
        nb = loaded_kernels()
        if nb is not None and K == 1 and len(self.fleet.routes) == 1:
            self._serve_one(nb, t, k)
            return
        served, wait, service = cap.step(float(self.spec.step), self.ctr.started_at, t)
        step = float(self.spec.step)
        for ri, route in enumerate(self.fleet.routes):
            limit = float(route.timeout)
            horizon = (self.pending[ri].shape[1] - 1) * step
            if nb is not None and K == 1:
                # The usual case in one kernel call; otherwise the cohorts' parts, to go on with.
                how, taken, ints, floats = nb.serve_route(
                    self.queued[ri], self.queued_rows[ri], self.orphans[ri], cap.active, served[ri], k,
                    service, ri, wait, cap.head_ms, cap.sigma, step, limit, horizon,
                    math.isfinite(limit) and limit < INF,
                    *LATE.arrays(nb), *CDF_ROWS.arrays(nb), self._direct(ri), self.step_cdf[ri],
                    self.cols[ri]["ok"],
                )  # fmt: skip
                self.queued_n[ri] -= taken
                if how != nb.PARTS:
                    continue
                cs, at, n_served = ints
                sv, waited, d, sigma, seen = floats
                failed = np.zeros(cs.size, bool)
                later = seen >= step
                parts = (cs, at, n_served, sv, waited, d, sigma, failed, seen, later, bool(later.any()))
            else:
                q, rows, orphans = self.queued[ri], self.queued_rows[ri], self.orphans[ri]
                vs, cs, at, ages, n_served, taken = cohorts(
                    q, rows, orphans, cap.active, served[ri * K : ri * K + K], k
                )
                self.queued_n[ri] -= taken
                if cs.size == 0:
                    continue
                sv, waited, d, sigma, failed, seen, later, later_any = self._latency_parts(
                    nb, ri, vs, cs, at, ages, service, wait, limit, horizon
                )
                parts = (cs, at, n_served, sv, waited, d, sigma, failed, seen, later, later_any)
            self._answer(nb, ri, t, k, *parts)
        if nb is not None:  # engine/kernels.py: the same quantiles
            self._step_quantiles(nb, k)
        else:
            self._quantiles(k)
        if cap.calls_any:
            served = cap.served_all(served)
            if self.call_routes:
                cap.classes.calls_out = cap.classes.service_calls(served)
            cap.classes.load_dependencies(served, float(self.spec.step))
            cap.classes.breakers(t + self.spec.step, served)
            cap.update_classes(t + self.spec.step)

    def _direct(self, ri: int) -> bool:
        """Whether route ``ri``'s answers of this step go straight into its CDF: none answered
        at once, no SYN waited and no request spent time in its sidecar (_with_connect_wait)."""
        return (
            self.answered_at_once[ri] == 0
            and sum(c for c, _ in self.conns[ri].waited) == 0
            and not self.sidecar_waited[ri]
        )

    def _step_quantiles(self, nb: ModuleType, k: int) -> None:
        nb.step_quantiles(
            self.step_cdf,
            self.latency_cdf,
            self.ramp_cdf,
            self.ramp_open,
            self.limits,
            GRID,
            self.route_block,
            k,
        )

    def _serve_one(self, nb: ModuleType, t: int, k: int) -> None:
        """serve for a run of one route and one outcome class: the capacity model's step, the
        route's serving and the step's quantiles in one kernel call (serve_step) in the usual
        case, else the route's parts go on as serve's."""
        cap = self.capacity
        one = self._one_route
        if one is None:  # the run's constants: the step, the timeout, the wheel's horizon
            step, limit = float(self.spec.step), float(self.limits[0])
            horizon = (self.pending[0].shape[1] - 1) * step
            one = self._one_route = (step, limit, horizon, bool(math.isfinite(limit) and limit < INF))
        step, limit, horizon, limited = one
        how, taken, m, parts = nb.serve_step(
            cap.kernel_state(step, self.ctr.started_at, t), cap.active_out, cap.used_out,
            self.queued[0], self.queued_rows[0], self.orphans[0], k, cap.head_ms, cap.sigma, step, limit,
            horizon, limited,
            *LATE.arrays(nb), *CDF_ROWS.arrays(nb), self._direct(0), self.step_cdf, self.latency_cdf,
            self.ramp_cdf, self.ramp_open, self.limits, GRID, self.route_block,
        )  # fmt: skip
        cap.stepped(m)
        self.queued_n[0] -= taken
        if how != nb.PARTS:
            return
        cs, at, n_served = parts[:3].astype(np.int64)
        sv, waited, d, sigma, seen = parts[3:]
        later = seen >= step
        self._answer(
            nb,
            0,
            t,
            k,
            cs,
            at,
            n_served,
            sv,
            waited,
            d,
            sigma,
            np.zeros(cs.size, bool),
            seen,
            later,
            bool(later.any()),
        )
        self._step_quantiles(nb, k)

    def _answer(
        self,
        nb: ModuleType | None,
        ri: int,
        t: int,
        k: int,
        cs: I64,
        at: I64,
        n_served: I64,
        sv: F64,
        waited: F64,
        d: F64,
        sigma: F64,
        failed: B,
        seen: F64,
        later: B,
        later_any: bool,
    ) -> None:
        """What route ``ri``'s containers served, per cohort (container, its index among those
        stepped, count, and its latency parts): timeouts drawn, answers due later put on the
        wheel, the rest counted now, and their latency added to the step's CDF."""
        cap = self.capacity
        col = self.cols[ri]
        step = float(self.spec.step)
        limit = float(self.limits[ri])
        states = state_groups(d, sv, sigma)
        to = timed_out(n_served, d, sv, sigma, limit, self.rng, states)
        if later_any:
            n_l = n_served[later]
            if nb is not None:
                slots = nb.pend_later(
                    self.pending[ri], self.later_n[ri], self.later_t[ri], later, seen, step, k, t, cs,
                    n_served, to, failed, waited,
                )  # fmt: skip
            else:
                slots = (k + np.ceil(seen[later] / step).astype(np.int64)) % self.pending[ri].shape[1]
                np.add.at(self.later_n[ri], slots, n_l)
                np.add.at(self.later_t[ri], slots, (float(t) - waited[later]) * n_l)  # when sent
                ok_later = n_served[later] - to[later]
                np.add.at(
                    self.pending[ri][0],
                    (slots[~failed[later]], cs[later][~failed[later]]),
                    ok_later[~failed[later]],
                )
                np.add.at(
                    self.pending[ri][1],
                    (slots[failed[later]], cs[later][failed[later]]),
                    ok_later[failed[later]],
                )
                np.add.at(self.pending[ri][2], (slots, cs[later]), to[later])
            # Their latency counts when the client gets the answer (or loses it), in _deliver.
            used, group = distinct_inverse(slots)
            self.later_cdf[ri][used] += grouped_cdfs(n_l, d[later], sv[later], sigma[later], group, used.size)
            self.pending_n[ri] += int(n_l.sum())
        now = ~later
        if not later_any and not cap.calls_any:  # all answered now, none failed
            n_to = int(to.sum())
            n_ok = int(n_served.sum()) - n_to
            col["ok"][k] += n_ok
            col["timeout"][k] += n_to
        else:
            n_ok = int(n_served[now & ~failed].sum() - to[now & ~failed].sum())
            col["ok"][k] += n_ok
            col["timeout"][k] += int(to[now].sum())
            col["error_status"][k] += int((n_served[now & failed] - to[now & failed]).sum())
        # Answered within the step, and immediate answers (0 ms; not the answers delivered
        # now that were served earlier: their latency came with them, in _deliver).
        instant = self.answered_at_once[ri]
        if instant == 0 and not later_any:
            # All of them, no immediate answer: their states are in hand.
            mix = mixture_cdf(n_served, d, sv, sigma, states)
            n_now = int(n_served.sum())
        else:
            counts = np.append(n_served[now], instant)
            sg = sigma[now]
            mix = mixture_cdf(counts, np.append(d[now], 0.0), np.append(sv[now], 0.0), np.append(sg, 0.0))
            n_now = int(counts.sum())
        self.step_cdf[ri] += self._with_connect_wait(ri, mix, n_now)

    def _quantiles(self, k: int) -> None:
        """Latency quantiles of what clients got (or lost) this step, and the run's CDFs so far."""
        for ri in range(len(self.fleet.routes)):
            seen_now = self.step_cdf[ri]
            total = float(seen_now[-1])
            if total <= 0:
                continue
            self.latency_cdf[ri] += seen_now
            if self.ramp_open[ri]:
                self.ramp_cdf[ri] += seen_now
            limit = float(self.limits[ri])
            qs = grid_quantiles(seen_now / total, (0.5, 0.95, 0.99, 1 - 0.5 / max(round(total), 1)))
            for j, v in enumerate(qs):
                self.route_block[ri, P50_AT + j, k] = round(min(v, limit))
