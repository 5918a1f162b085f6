"""The outcome classes of the calls a request or probe makes while it is served, per path and
container: dependency calls (engine/dependencies.py: faults, outages, timeouts, retries, the
share a saturated dependency refuses) and calls to Services of the scenario (what their
endpoints answer now, engine/service_calls.py), one after another, and each path's circuit
breakers. A route's requests split into these classes as they are taken in (the capacity model's
virtual routes); a probe draws one. Also what the calls send on: the tries each Service gets.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import distinct
from probesim.engine.dependencies import (
    INF_MS,
    REFUSED,
    Outcome,
    chain,
    expected_tries,
    one_try,
    streak_probability,
    with_retries,
)
from probesim.engine.fleet import Fleet
from probesim.model.scenario import CircuitBreaker, ContainerBehavior, Dependency, DependencyCall, call_key

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

K = 8  # outcome classes per route (dependency calls, retries)


class CallClasses:
    def __init__(
        self,
        fleet: Fleet,
        behaviors: list[ContainerBehavior],
        beh_of: list[ContainerBehavior],
        beh_inv: I64,
        paths: list[str],
        rng: np.random.Generator,
    ) -> None:
        """``behaviors``: per container; ``beh_of`` the distinct ones and ``beh_inv`` each
        container's among them; ``paths`` every path a route or probe asks."""
        n = fleet.n_containers
        routes = fleet.routes
        self.fleet = fleet
        self.rng = rng
        self.deps = fleet.scenario.spec.dependencies
        self.behaviors = behaviors
        self.profile_of = fleet.behaviors.profile_of
        self.paths = paths
        self.path_classes: dict[str, tuple[F64, F64, B]] = {}  # path → (prob, extra ms, failed), K × n
        self.breaker_until = np.full((len(self.paths), n), -1.0)  # open until (ms); -1: closed
        route_of = {rt.path: i for i, rt in enumerate(routes)}
        self._breakers: list[tuple[int, str, int | None, list[tuple[int, CircuitBreaker]]]] = []
        for pi, path in enumerate(self.paths):
            breaker = [
                next((x.circuit_breaker for x in b.cost(path).calls if x.circuit_breaker), None)
                for b in beh_of
            ]
            members = [(int(c), cb) for c in range(n) if (cb := breaker[beh_inv[c]]) is not None]
            if members:
                self._breakers.append((pi, path, route_of.get(path), members))
        self.refused: dict[str, float] = {}  # share of calls each dependency turns away (at capacity)
        self._callers: list[dict[str, B]] = []  # per route: dependency → containers whose path calls it
        for route in routes:
            callers: dict[str, B] = {}
            for u, b in enumerate(beh_of):
                for call in b.cost(route.path).calls:
                    if call.dependency is not None:
                        callers.setdefault(call.dependency, np.zeros(n, bool))[beh_inv == u] = True
            self._callers.append(callers)
        # What a try of a call to a Service gets now, per call_key (the traffic sets it each
        # step from the Service's endpoints); and per path, the tries each container makes per
        # request to each Service (for the calls the callers send).
        self.service_tries: dict[str, list[Outcome]] = {}
        self.tries_per_request: dict[str, dict[str, F64]] = {}
        self.calls_out: dict[str, float] = {}  # per call_key: the tries the last step's requests made
        self._classes_of: object = None  # what the outcome classes were last made for

    def update(self, t: int) -> bool:
        """Outcome classes of every path at time ``t`` (faults, outages, open breakers, what the
        Services called answer); kept as they are while what they are made of stays the same.
        True when they were made again."""
        key = self._classes_key(t)
        if key == self._classes_of:
            return False
        self._classes_of = key
        n = len(self.profile_of)
        for pi, path in enumerate(self.paths):
            prob = np.zeros((K, n))
            extra = np.zeros((K, n))
            failed = np.zeros((K, n), bool)
            prob[0] = 1.0
            tries: dict[str, F64] = {}
            for prof in distinct(self.profile_of):
                members = np.flatnonzero(self.profile_of == prof)
                cost = self.behaviors[int(members[0])].cost(path)
                if not cost.calls and cost.errors is None:
                    continue
                per_try = [self._try(c, t) for c in cost.calls]
                reach = 1.0  # the share of requests that get to make the call (those before succeeded)
                for c, one in zip(cost.calls, per_try, strict=True):
                    if c.service is not None:
                        per_request = tries.setdefault(call_key(c), np.zeros(n))
                        per_request[members] += reach * expected_tries(one, c)
                    reach *= sum(o.prob for o in with_retries(one, c) if not o.failed)
                outcomes = [with_retries(one, c) for one, c in zip(per_try, cost.calls, strict=True)]
                if cost.errors is not None:  # after the calls: a share answered with an error
                    share = cost.errors.percent / 100
                    outcomes.append([Outcome(share, 0.0, True), Outcome(1 - share, 0.0, False)])
                classes = chain(outcomes)
                for k, o in enumerate(classes[:K]):
                    prob[k, members], extra[k, members], failed[k, members] = o.prob, o.latency, o.failed
                prob[len(classes) :, members] = 0.0
            is_open = self.breaker_until[pi] > t
            if is_open.any():  # an open breaker fails the call at once
                prob[:, is_open], extra[:, is_open], failed[:, is_open] = 0.0, 0.0, False
                prob[0, is_open], failed[0, is_open] = 1.0, True
                for per_request in tries.values():
                    per_request[is_open] = 0.0  # (an open breaker of the path: no call made)
            self.tries_per_request[path] = tries
            self.path_classes[path] = (prob, extra, failed)
        return True

    def _try(self, c: DependencyCall, t: int) -> list[Outcome]:
        """What one try of call ``c`` gets at ``t``, the client's timeout applied."""
        if c.dependency is not None:
            return one_try(self.deps[c.dependency], c, t, self.refused.get(c.dependency, 0.0))
        got = self.service_tries.get(call_key(c), REFUSED)  # (before its Service was looked at)
        timeout = float(c.timeout) if c.timeout is not None else INF_MS
        return [Outcome(o.prob, min(o.latency, timeout), o.failed or o.latency >= timeout) for o in got]

    def service_calls(self, served: I64) -> dict[str, float]:
        """The tries each call_key's Service got from this step's served requests (retries
        included), over every route."""
        out: dict[str, float] = {}
        for ri, route in enumerate(self.fleet.routes):
            per_key = self.tries_per_request.get(route.path)
            if not per_key:
                continue
            n = served[ri * K : (ri + 1) * K].sum(axis=0)
            for key, per_request in per_key.items():
                out[key] = out.get(key, 0.0) + float(n @ per_request)
        return out

    def _classes_key(self, t: int) -> tuple[object, ...]:
        """All the outcome classes at ``t`` depend on (dependencies.one_try's inputs that move):
        per dependency its first outage under way and the share of calls it refuses, per path
        the containers whose breaker is open, per Service called what a try gets."""
        deps: tuple[object, ...] = tuple(
            (self._outage_at(dep, t), self.refused.get(name, 0.0)) for name, dep in self.deps.items()
        )
        if self.service_tries:
            deps += tuple(tuple(v) for v in self.service_tries.values())
        if not self._breakers:  # never open
            return deps, None
        return deps, tuple((self.breaker_until[pi] > t).tobytes() for pi in range(len(self.paths)))

    @staticmethod
    def _outage_at(dep: Dependency, t: int) -> int:
        """The dependency's first outage under way at ``t`` (-1: none)."""
        return next((i for i, o in enumerate(dep.outages) if o.at <= t < o.at + o.for_), -1)

    def load_dependencies(self, served: I64, dt: float) -> None:
        """Calls in flight at each dependency (Little's law over this step's served requests and
        their call time); above its capacity, the next step's calls are refused in proportion."""
        inflight: dict[str, float] = {}
        for ri, route in enumerate(self.fleet.routes):
            n = served[ri * K : (ri + 1) * K].sum(axis=0)
            if not n.any():
                continue
            prob, extra, _ = self.path_classes[route.path]
            busy = n * (prob * extra).sum(axis=0) / dt  # calls in flight, per container
            for name, mask in self._callers[ri].items():
                # What callers would keep in flight if none were refused (refusals take no time).
                offered = float(busy[mask].sum()) / max(1.0 - self.refused.get(name, 0.0), 1e-9)
                inflight[name] = inflight.get(name, 0.0) + offered
        for name, dep in self.deps.items():
            load = inflight.get(name, 0.0)
            self.refused[name] = (
                0.0 if dep.capacity is None or load <= dep.capacity else 1 - dep.capacity / load
            )

    def breakers(self, t: int, served: I64) -> bool:
        """Breakers for the step starting at ``t``, after the one just served: a closed breaker
        opens when that step's calls held ``failures`` failures in a row; an open one whose time
        is over lets ``halfOpenCalls`` through, and closes if they all succeed. True if any changed."""
        changed = False
        for pi, path, ri, members in self._breakers:
            prob, _, failed = self.path_classes[path]
            for c, cb in members:
                until = self.breaker_until[pi, c]
                if until > t:
                    continue
                p_fail = float((prob[:, c] * failed[:, c]).sum())
                if until >= 0:  # half-open trial
                    closes = self.rng.random() < (1 - p_fail) ** cb.half_open_calls
                    self.breaker_until[pi, c] = -1.0 if closes else t + cb.open
                    changed = True
                else:
                    n_calls = float(served[ri * K : (ri + 1) * K, c].sum()) if ri is not None else 0.0
                    if self.rng.random() < streak_probability(p_fail, n_calls, cb.failures):
                        self.breaker_until[pi, c] = t + cb.open
                        changed = True
        return changed

    def probe_call(self, idx: I64, path: str) -> tuple[F64, B]:
        """For probes to ``path``: the dependency time and whether the calls failed (one draw each)."""
        prob, extra, failed = self.path_classes[path]
        u = self.rng.random(idx.size)
        cum = np.cumsum(prob[:, idx], axis=0)
        k = np.minimum((u[None, :] >= cum).sum(axis=0), K - 1)
        return extra[k, idx], failed[k, idx]
