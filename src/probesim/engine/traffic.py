"""Traffic and serving, the phases of a step after the endpoints are known: the requests each
route sends over [t, t + step) (per request, or per kept-alive connection; SYNs waiting for an
endpoint, ``noEndpoint: retransmit``), through the clients' sidecars when a mesh routes them,
what each endpoint's container does with them (refused, queued on its backlog, answered now or
later, timed out), the client's side of the backlog (given up at its deadline, lost when the
container stops), and each step's latency quantiles. engine/loop.py's run holds the state and
calls these in their order. The serving phase (``serve``) is engine/serving.py's, which
Traffic inherits; a route's connections and how kept-alive requests spread over pods are
engine/connections.py's; the cohorts of what was served, engine/cohorts.py's.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import numpy.typing as npt

from probesim.cost import answer_slots, queue_slots
from probesim.engine.arrays import span
from probesim.engine.behavior import INF
from probesim.engine.capacity import CapacityModel
from probesim.engine.connections import Connections, keep_alive
from probesim.engine.containers import Containers
from probesim.engine.distributions import (
    GRID,
)
from probesim.engine.fleet import Fleet
from probesim.engine.kernel_choice import loaded_kernels
from probesim.engine.pod_status import PodStatus
from probesim.engine.routing import Route
from probesim.engine.service_calls import answers, through_sidecar
from probesim.engine.serving import Serving
from probesim.engine.sidecar.hold import SidecarHold
from probesim.engine.sidecar.split import Sidecars
from probesim.kube.endpoints import endpoint_ready, kube_proxy_targets
from probesim.kube.outcomes import ERROR_STATUS, NO_ANSWER, OK, REFUSED, REQUEST_CODES, UNREACHABLE
from probesim.model.scenario import ScenarioSpec

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
_NONE = np.empty(0, np.int64)  # no containers (read only)
_NONE.flags.writeable = False


class Traffic(Serving):
    """The traffic and serving phases of a run, with the state they own: each route's
    endpoints as last computed, connections, answers on their way, the client's side of the
    backlog, latency distributions and the start-up ramps. The run calls ``send`` then
    (with the capacity model) ``serve`` each step; it reads the pods' status (``pods``), the
    containers and the capacity model, and writes the route series (``cols``)."""

    def __init__(
        self,
        spec: ScenarioSpec,
        fleet: Fleet,
        rng: np.random.Generator,
        ctr: Containers,
        capacity: CapacityModel,
        mesh: dict[int, Sidecars],
        pods: PodStatus,
        rates: F64,
        cols: list[dict[str, I64]],
        route_block: I64,
        ramp_open: B,
    ) -> None:
        f = fleet
        self.spec, self.fleet, self.rng, self.ctr, self.capacity, self.mesh = (
            spec,
            fleet,
            rng,
            ctr,
            capacity,
            mesh,
        )
        self.pods = pods
        self.rates = rates  # per route and step: requests per second wanted
        self.cols = cols
        self.route_block = route_block  # per route, its ROUTE_SERIES (cols' series are its rows)
        self.limits = np.array([float(r.timeout) for r in f.routes])
        # Per route, until when its load generator waits for answers: its end + gracefulStop.
        self.waits_until = [
            float("inf") if (end := r.traffic.end()) is None else end + r.traffic.graceful_stop
            for r in f.routes
        ]
        # The start-up ramp, per route: open until every workload behind it first has all its
        # replicas Ready; the latency of its answers is kept apart, and when it ended.
        self.ramp_open = ramp_open
        self.ramp_end: list[int | None] = [None] * len(f.routes)
        self.ramp_cdf = np.zeros((len(f.routes), GRID.size))
        self.route_cache: list[tuple[int, I64, I64]] = [
            (-1, np.empty(0, np.int64), np.empty(0, np.int64))
        ] * len(f.routes)
        self.conns = [Connections(f.n_pods) for _ in f.routes]
        self.uniform = [-1] * len(f.routes)
        self.mesh_view: dict[int, tuple[B, I64, I64, F64 | None]] = {}
        # Per meshed route whose VirtualService delays requests, what its sidecars hold; per
        # route, this step's requests that spent time in the sidecar before their last try
        # (fault delays, retries): (count, ms).
        self.holds: dict[int, SidecarHold] = {}
        for ri, m in mesh.items():
            pol = m.policy
            if pol.delay > 0 and pol.delay_ms > 0:
                limit = float(f.routes[ri].timeout)
                self.holds[ri] = SidecarHold(pol.delay_ms, None if limit >= INF else limit)
        self.sidecar_waited: list[list[tuple[int, float]]] = [[] for _ in f.routes]
        self.latency_cdf = np.zeros((len(f.routes), GRID.size))
        self.step_cdf = np.zeros((len(f.routes), GRID.size))  # what clients saw answered this step
        # Answers on their way to clients, per route: (ok, error status, timeout) × due step × container.
        # Bounded by the run (cost.answer_slots): an answer due after its end is never delivered.
        slots, *queues = self.ring_sizes(spec.duration)
        self.pending = [np.zeros((3, slots, f.n_containers), np.int64) for _ in f.routes]
        # Per due slot: the latency distribution of those answers (weighted), how many, and the
        # sum of the times they were served (ms).
        self.later_cdf = [np.zeros((slots, GRID.size)) for _ in f.routes]
        self.later_n = [np.zeros(slots) for _ in f.routes]
        self.later_t = [np.zeros(slots) for _ in f.routes]
        # The client's side of the backlog, per route: requests queued on each container that
        # their client still waits for, by arrival step (a ring over the timeout, oldest given
        # up on at their deadline); and those it gave up on that the server still holds
        # (``orphans``: served first, as the oldest, and then counted for nothing).
        self.queued = [np.zeros((n, f.n_containers), np.int64) for n in queues]
        self.orphans = [np.zeros(f.n_containers, np.int64) for _ in f.routes]
        # How many requests each route's buffers hold (their sums, kept as they change).
        self.pending_n = [0] * len(f.routes)
        self.queued_n = [0] * len(f.routes)
        self.queued_rows = [np.zeros(q.shape[0], np.int64) for q in self.queued]  # per arrival step
        self.touched = np.zeros(f.n_containers, bool)  # took requests since it last lost them
        self._none_stopped: tuple[int, int] | None = None  # (containers' epoch, cap.hi) when none was
        self.call_routes = [ri for ri, r in enumerate(f.routes) if r.call]
        self.answered_at_once = [0] * len(f.routes)  # per route, this step's answers at once

    def send(self, t: int, k: int, rec: dict[str, I64]) -> None:
        """The requests of step ``k`` (at ``t``): sent, balanced, refused or taken in."""
        f = self.fleet
        step = self.spec.step
        visible = self.pods.visible_ready(t)
        for m in self.mesh.values():
            m.tick(t)
        if self.capacity.any:
            # What containers that stopped or were replaced held is lost before new arrivals:
            # queued requests and answers still on their way fail now (connection reset).
            cap = self.capacity
            # Only containers that took requests may hold any (the rest stay out of the masks:
            # the answer buffers are slots × containers), all of them below cap.hi.
            hi = cap.hi
            if (self.ctr.epoch, hi) != self._none_stopped:
                stopped = ~self.ctr.alive(hi) | (self.ctr.instance[:hi] != cap.instance[:hi])
                gone = np.flatnonzero(self.touched[:hi] & stopped)
                self.touched[gone] = False
                cap.drop(stopped)
                # None stopped stays so until a container starts, exits or is killed (every such
                # change bumps the epoch) or new ones take requests: arrivals only set a
                # container's instance to its current one.
                self._none_stopped = (self.ctr.epoch, hi) if not stopped.any() else None
            else:
                gone = _NONE
            for ri, route in enumerate(f.routes):
                self.step_cdf[ri] = 0.0
                self._give_up(ri, k, rec)  # their client gave up by now, before the stop was seen
                if gone.size == 0:
                    continue
                pend = self.pending[ri][:, :, gone]
                queued = self.queued[ri][:, gone].sum(axis=1)
                n_pend, n_queued = int(pend.sum()), int(queued.sum())
                self.queued_rows[ri] -= queued
                self.pending_n[ri] -= n_pend
                self.queued_n[ri] -= n_queued
                rec[f"route.{route.name}.killed"][k] += n_queued + n_pend
                self.pending[ri][:, :, gone] = 0
                self.queued[ri][:, gone] = 0
                self.orphans[ri][gone] = 0  # already timeouts
                # The client sees those fail now, after waiting since they were sent.
                per_slot = pend.sum(axis=(0, 2))
                for slot in np.flatnonzero(per_slot):
                    waited = t - self.later_t[ri][slot] / self.later_n[ri][slot]
                    self.step_cdf[ri] += per_slot[slot] * (waited <= GRID)
                for row in np.flatnonzero(queued):
                    waited = ((k - row) % queued.size) * step
                    self.step_cdf[ri] += queued[row] * (waited <= GRID)
            self._deliver(t, k, rec)
            cap.begin_step(float(step))
            if self.call_routes:
                self._service_tries(t, visible)
        self.answered_at_once = [0] * len(f.routes)
        for ri, route in enumerate(f.routes):
            key, col = f"route.{route.name}", self.cols[ri]
            conns = self.conns[ri]
            conns.waited.clear()
            self.sidecar_waited[ri] = []
            if conns.waiting and t > self.waits_until[ri]:
                col["interrupted"][k] += conns.waiting  # still connecting
                conns.connecting.clear()
            hold = self.holds.get(ri)
            held = hold.held if hold is not None else 0
            if hold is not None and held and t > self.waits_until[ri]:
                col["interrupted"][k] += hold.drop()  # still held by their sidecar
                held = 0
            if route.mirror_of >= 0:
                # The copies a client sidecar mirrored this step (fire and forget).
                primary = self.mesh.get(route.mirror_of)
                n = primary.mirrored_now if primary is not None else 0
                if n == 0:
                    continue
            elif route.call:
                # The calls the callers' requests served in the step before made.
                route.acc += self.capacity.classes.calls_out.get(route.call, 0.0)
                n = int(route.acc + 1e-9)
                route.acc -= n
                if n == 0 and not conns.waiting and not held:
                    continue
            else:
                rate = float(self.rates[ri, k])
                if rate <= 0 and route.acc < 1 and not conns.waiting and not held:
                    continue
                route.acc += rate * step / 1000
                n = int(route.acc + 1e-9)
                route.acc -= n
            vus = route.traffic.max_vus
            if vus is not None:
                # k6 constant-arrival-rate: an iteration needs a free VU; requests still
                # waiting for an answer hold theirs. The rest are dropped iterations. (What the
                # buffers hold is kept as their sums change: _held(ri).sum(), without summing
                # the answer wheel's slots × containers every step.)
                busy = self.pending_n[ri] + self.queued_n[ri] + conns.waiting + held
                sent = min(n, max(vus - busy, 0))
                col["offered"][k] = n
                col["dropped"][k] = n - sent
                n = sent
            else:
                col["offered"][k] = n
            if n == 0 and not conns.waiting and not held:
                continue
            eps, cat = self._endpoints(ri, visible)
            mesh = self.mesh.get(ri)
            kk = eps.size
            if mesh is not None:
                # Through the clients' sidecars: fault delays, their load balancing, retries,
                # ejections and aborts.
                in_eps, cat_pod, status_pod, cost_pod = self.mesh_view[ri]
                if hold is not None:
                    n = self._hold(ri, k, t, n, hold, mesh)
                got, aborted, uh = mesh.send(t, n, in_eps, cat_pod, status_pod, cost_pod)
                self.sidecar_waited[ri] += mesh.waits_now
                per_ep = got[in_eps]
                col["no_endpoint"][k] += uh
                col["error_status"][k] += aborted  # FI: answered by the client's sidecar
                col["fault_aborts"][k] += aborted
                col["ejections_active"][k] = mesh.ejections_active()
            elif route.traffic.keep_alive:
                eps, per_ep = keep_alive(
                    conns,
                    f,
                    route,
                    self.ctr,
                    self.pods.gone,
                    self.pods.admitted,
                    self._held(ri),
                    n,
                    eps,
                    t,
                    k,
                    rec,
                    key,
                )
                cat = self._categories(route, eps)
                kk = eps.size
            else:
                if conns.waiting:
                    go, late = conns.due(t, kk > 0, route.timeout)
                    col["timeout"][k] += late
                    n += go
                if kk == 0:
                    if route.traffic.no_endpoint == "retransmit":
                        conns.wait(t, n)
                    else:
                        col["no_endpoint"][k] += n
                    continue
                if self.uniform[ri] >= 0 and not self.capacity.any:
                    # Every endpoint in one category: the split changes no count.
                    route.cursor = (route.cursor + n) % kk
                    counts = np.zeros(REQUEST_CODES, np.int64)
                    counts[self.uniform[ri]] = n
                elif (nb := self._arrive_compiled()) is not None:
                    cap = self.capacity
                    q = self.queued[ri]
                    arrived = k % q.shape[0]
                    n_took, n_offered, took_hi, ok_now = nb.arrive(
                        n, route.cursor, eps, cat, route.target_container, cap.loaded, cap.backlog,
                        cap.room, cap.step_capacity, ri * cap.k, cap.instance, self.ctr.instance,
                        self.touched, q, self.queued_rows[ri], arrived, self.route_block[ri], k,
                    )  # fmt: skip
                    route.cursor = (route.cursor + n) % kk
                    cap.took_below(took_hi)
                    if n_offered:  # (the rest of the send's count, as _count_sent has it)
                        self.queued_n[ri] += n_took
                    self.answered_at_once[ri] = ok_now
                    continue
                else:
                    per_ep = np.full(kk, n // kk, np.int64)
                    per_ep[(route.cursor + np.arange(n % kk)) % kk] += 1
                    route.cursor = (route.cursor + n) % kk
                    counts = np.bincount(cat, weights=per_ep, minlength=REQUEST_CODES).astype(np.int64)
            if mesh is not None or route.traffic.keep_alive:
                counts = (
                    np.bincount(cat, weights=per_ep, minlength=REQUEST_CODES).astype(np.int64)
                    if kk
                    else np.zeros(REQUEST_CODES, np.int64)
                )
            cap = self.capacity
            n_took = n_offered = 0
            q = self.queued[ri]
            if cap.any and kk:
                # Requests to loaded containers join their backlog; they finish (or time out)
                # when served, in _serve. What does not fit is refused at once.
                tc = route.target_container[eps]
                queued = (cat == OK) & cap.loaded[tc] & (per_ep > 0)
                if queued.any():
                    qc = tc[queued]
                    qx = span(qc)  # usually consecutive: views, not gathers
                    offered = per_ep[queued]
                    took = cap.accept(ri, qc, offered, self.ctr.instance[qx])
                    self.touched[qx] = True
                    q[k % q.shape[0], qx] += took  # (one endpoint per pod: no container twice)
                    n_took, n_offered = int(took.sum()), int(offered.sum())
            self._count_sent(ri, k, counts, n_took, n_offered, k % q.shape[0])

    def _hold(self, ri: int, k: int, t: int, n: int, hold: SidecarHold, mesh: Sidecars) -> int:
        """Fault delays before the router (engine/sidecar/hold.py): of this step's ``n``
        requests the delayed share is held; those held whose delay ends in this step go on,
        those whose client gave up first are its timeouts. Returns the requests the router
        sends now."""
        step = self.spec.step
        go, late = hold.due(t, step)
        delayed = int(self.rng.binomial(n, mesh.policy.delay)) if n else 0
        mesh.delayed(delayed)
        now, gave_up = hold.hold(t, step, delayed)
        go += now
        late += gave_up
        if late:
            self.cols[ri]["timeout"][k] += late
            if self.capacity.any:
                self.step_cdf[ri] += late * (float(self.fleet.routes[ri].timeout) <= GRID)
        if go:
            self.sidecar_waited[ri].append((go, float(hold.delay_ms)))
        return n - delayed + go

    def _arrive_compiled(self) -> ModuleType | None:
        """engine/kernels.py if this run's plain routes (no client sidecar, no keep-alive) take
        their arrivals by its ``arrive``: a capacity model with one outcome class (without
        dependency calls: the split among classes draws)."""
        cap = self.capacity
        return loaded_kernels() if cap.any and not cap.calls_any else None

    def _count_sent(self, ri: int, k: int, counts: I64, n_took: int, n_offered: int, row: int) -> None:
        """Route ``ri``'s requests of step ``k`` by what they met (``counts``, per Outcome), of
        which ``n_offered`` went to loaded containers and ``n_took`` joined their backlog (in
        the client's arrival ``row``): the rest of those were refused, the other OK answered."""
        col = self.cols[ri]
        col["restarting"][k] += counts[REFUSED]
        col["not_answering"][k] += counts[NO_ANSWER]
        col["error_status"][k] += counts[ERROR_STATUS]
        ok_now = int(counts[OK])
        if n_offered:
            self.queued_n[ri] += n_took
            self.queued_rows[ri][row] += n_took
            ok_now -= n_offered
            col["rejected"][k] += n_offered - n_took
        col["ok"][k] += ok_now
        self.answered_at_once[ri] = ok_now

    def _service_tries(self, t: int, visible: B) -> None:
        """What a call to each Service the pods call gets in this step (engine/service_calls.py),
        and the callers' outcome classes with it."""
        cap = self.capacity
        for ri in self.call_routes:
            route = self.fleet.routes[ri]
            eps, cat = self._endpoints(ri, visible)
            sidecars = self.mesh.get(ri)
            if sidecars is None:
                got = answers(cap, ri, route, eps, cat, self.ctr.started_at, t)
            else:
                in_eps, host_cat, status, _ = self.mesh_view[ri]
                got = through_sidecar(
                    cap, ri, route, sidecars, in_eps, eps, cat, status, self.ctr.started_at, t, host_cat
                )
            cap.classes.service_tries[route.call] = got
        cap.update_classes(t)

    def _endpoints(self, ri: int, visible: B) -> tuple[I64, I64]:
        """Route ``ri``'s endpoints now and what a request meets on each (an Outcome), kept while
        nothing they depend on changed; with client sidecars, also their view of the hosts."""
        version, eps, cat = self.route_cache[ri]
        if version == self.pods.version:
            return eps, cat
        f, route = self.fleet, self.fleet.routes[ri]
        publish = f.publish_not_ready.get(route.service.name, False)
        listed = route.selects & (route.target_container >= 0) & self.pods.admitted & ~self.pods.gone
        ready = listed & endpoint_ready(visible, self.pods.deleting, publish, listed)
        mesh = self.mesh.get(ri)
        if mesh is None:  # kube-proxy's choice; Istio's EDS sends no terminating endpoint
            ready = kube_proxy_targets(ready, listed & visible & self.pods.deleting)
        eps = np.flatnonzero(ready)
        cat = self._categories(route, eps)
        self.route_cache[ri] = (self.pods.version, eps, cat)
        # All the endpoints in one category (a request's fate): its index, else -1.
        self.uniform[ri] = int(cat[0]) if cat.size and bool((cat == cat[0]).all()) else -1
        if mesh is not None:
            # The sidecars' view of the hosts: which are endpoints, what each answers.
            in_eps = np.isin(mesh.pods, eps)
            tc_all = route.target_container[mesh.pods]
            cat_pod = np.zeros(mesh.pods.size, np.int64)
            status_pod = np.zeros(mesh.pods.size, np.int64)
            pos = np.searchsorted(eps, mesh.pods[in_eps])
            cat_pod[in_eps] = cat[pos]
            if self.pods.unreachable_n:
                # A host on a failed node: a sidecar's connection to it times out.
                cat_pod[in_eps & self.pods.unreachable[mesh.pods]] = UNREACHABLE
            status_pod[in_eps] = f.behaviors.status[route.target, tc_all[in_eps]]
            cost_pod: F64 | None = None
            cap = self.capacity
            if cap.any:
                # A host's work for the path: how long a try there takes before it answers.
                tc = tc_all[in_eps]
                cost_pod = np.zeros(mesh.pods.size)
                cost_pod[in_eps] = cap.route_wall[ri, tc] + cap.cpu[ri * cap.k, tc]
            self.mesh_view[ri] = (in_eps, cat_pod, status_pod, cost_pod)
        return eps, cat

    def _held(self, ri: int) -> I64:
        """Per container, route ``ri``'s requests in flight: queued, or served with the answer
        (or the client's timeout) still to come. Each holds its client (a k6 VU) and its
        connection; one the client gave up on holds neither."""
        return self.pending[ri].sum(axis=(0, 1)) + self.queued[ri].sum(axis=0)

    def in_flight(self, ri: int) -> int:
        """Route ``ri``'s requests whose client still waits: queued, answers (or timeouts) on
        their way, those still connecting, and those their sidecar holds (a fault delay)."""
        hold = self.holds.get(ri)
        held = hold.held if hold is not None else 0
        return self.queued_n[ri] + self.pending_n[ri] + self.conns[ri].waiting + held

    def ring_sizes(self, duration: int) -> list[int]:
        """The steps the rings keep, for a run of ``duration``: the answers on their way (up to
        the longest wait, a client timeout or a dependency call's timeout × its tries,
        cost.answer_slots), then per route its client-side backlog's arrival steps (up to its
        timeout; one, ages untracked, without a timeout: cost.queue_slots)."""
        f, step = self.fleet, self.spec.step
        waits = [int(r.timeout) for r in f.routes if r.timeout < INF] + [
            int(c.timeout or 0) * c.retries.attempts
            for b in f.container_behavior
            for rc in b.routes.values()
            for c in rc.calls
        ]
        queues = [queue_slots(None if r.timeout >= INF else int(r.timeout), duration, step) for r in f.routes]
        return [answer_slots(waits, duration, step), *queues]

    def _give_up(self, ri: int, k: int, rec: dict[str, I64]) -> None:
        """Requests still queued at their client's deadline (sent ``timeout`` ago) are timeouts
        now, whatever their container does with them later."""
        q = self.queued[ri]
        route = self.fleet.routes[ri]
        if q.shape[0] == 1:
            return
        oldest = (k - (q.shape[0] - 1)) % q.shape[0]
        if self.queued_rows[ri][oldest] == 0:
            return
        row = q[oldest]
        n = int(row.sum())
        rec[f"route.{route.name}.timeout"][k] += n
        self.orphans[ri] += row
        row[:] = 0
        self.queued_n[ri] -= n
        self.queued_rows[ri][oldest] = 0
        self.step_cdf[ri] += n * (float(route.timeout) <= GRID)

    def _categories(self, route: Route, pods: I64) -> I64:
        """What a request meets on each of ``pods`` (an Outcome): nothing listening, hung, an
        error status, an answer."""
        beh = self.fleet.behaviors
        tc = route.target_container[pods]
        status = beh.status[route.target, tc]
        cat = np.where(
            ~beh.listening[tc] | route.closed[pods],
            REFUSED,
            np.where(
                beh.hung[tc],
                NO_ANSWER,
                np.where((status >= 400) | (status < 200), ERROR_STATUS, OK),
            ),
        )
        if self.pods.unreachable_n:
            # A pod on a failed node answers nothing and resets nothing: the client waits.
            cat = np.where(self.pods.unreachable[pods], NO_ANSWER, cat)
        return cat

    def cut_off(self, conts: I64) -> None:
        """Containers nothing reaches any more (their node failed at this step): what their
        servers hold is never answered (each client gives up at its deadline: a dead or
        unreachable host sends no reset), and the answers on their way are lost (timeouts, when
        they were due)."""
        if not self.capacity.any or conts.size == 0:
            return
        self.capacity.forget(conts)
        for ri in range(len(self.fleet.routes)):
            wheel = self.pending[ri]
            lost = wheel[0][:, conts] + wheel[1][:, conts]
            wheel[2][:, conts] += lost
            wheel[0][:, conts] = 0
            wheel[1][:, conts] = 0
            self.orphans[ri][conts] = 0

    def reconnect(self, conts: I64) -> None:
        """Containers reachable again (their node is back): the requests their clients gave up on
        meanwhile are not theirs to serve (``cut_off`` took them from the server)."""
        for ri in range(len(self.fleet.routes)):
            self.orphans[ri][conts] = 0

    def _deliver(self, t: int, k: int, rec: dict[str, I64]) -> None:
        """Answers due now reach the client; after the load generator stopped waiting
        (``stop`` + ``gracefulStop``) they are interrupted instead."""
        nb = loaded_kernels()
        for ri in range(len(self.fleet.routes)):
            wheel = self.pending[ri]
            col = self.cols[ri]
            if t > self.waits_until[ri]:
                # The load generator stopped waiting: every answer still to come is interrupted.
                q = self.queued[ri]
                if self.pending_n[ri] or self.queued_n[ri]:
                    col["interrupted"][k] += self.pending_n[ri] + self.queued_n[ri]
                    wheel[:] = 0
                    self.orphans[ri] += q.sum(axis=0)  # the server still holds them
                    q[:] = 0
                    self.pending_n[ri] = self.queued_n[ri] = 0
                    self.queued_rows[ri][:] = 0
                    self.later_n[ri][:] = self.later_t[ri][:] = 0.0
                    self.later_cdf[ri][:] = 0.0
                continue
            if nb is not None:  # engine/kernels.py: the same answers
                self.pending_n[ri] -= nb.deliver(
                    wheel, self.later_n[ri], self.later_t[ri], self.later_cdf[ri], self.step_cdf[ri],
                    self.route_block[ri], k,
                )  # fmt: skip
                continue
            slot = k % wheel.shape[1]
            recorded = self.later_n[ri][slot]
            if recorded == 0:
                # Nothing was sent to this slot since it was last freed (what _serve puts in a
                # slot it also records there): none due, and the slot is free.
                self.later_t[ri][slot] = 0.0
                self.later_cdf[ri][slot] = 0.0
                continue
            due = wheel[:, slot].sum(axis=1)
            if recorded > 0 and due.any():
                self.step_cdf[ri] += self.later_cdf[ri][slot] * (float(due.sum()) / recorded)
            # The slot is free for the next round even when a kill took all it held.
            self.later_n[ri][slot] = self.later_t[ri][slot] = 0.0
            self.later_cdf[ri][slot] = 0.0
            if not due.any():
                continue
            wheel[:, slot] = 0
            self.pending_n[ri] -= int(due.sum())
            col["ok"][k] += int(due[0])
            col["error_status"][k] += int(due[1])
            col["timeout"][k] += int(due[2])
