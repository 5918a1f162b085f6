"""A warm-up: a run simulated up to a time, gone on from there as other scenarios that are the
same run until then. The tuner and the stress suite run scenarios that differ only from some
time on — a pod that hangs after its start-up, a stop-the-world pause at two minutes — and each
would simulate the same start-up again; from a warm-up each simulates only what follows.

A scenario goes on from the warm-up when it is the warm-up's scenario but for its duration and
for hang, deadlock and errors episodes that begin at or after the warm-up's end (at that scenario
time, or after that container age: an age never runs ahead of the clock), and when it groups its
containers as the warm-up's does (pods with behaviours of their own are drawn for apart) and
keeps its answers as many steps (the rings, sized by the run up to a minute or the longest
wait). Its Result is ``simulate``'s, to the bit: each step before the warm-up's end was the
same, draws included, and the state is copied whole. Any other scenario is simulated from its
start (``WarmUp.fits`` says why).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from probesim.engine.fleet import build
from probesim.engine.kernel_choice import run_with
from probesim.engine.loop import Simulation, simulate
from probesim.model.scenario import ContainerBehavior, Deadlock, Errors, Hang, Scenario
from probesim.results import Result

# The episodes that change nothing before they begin (not a crash: when a container will crash
# is set as it starts).
_LATER = (Hang, Deadlock, Errors)


class WarmUp:
    """``scenario`` simulated for its steps before ``until_ms``."""

    def __init__(self, scenario: Scenario, until_ms: int) -> None:
        step = scenario.spec.step
        self.until = min(max(until_ms, 0), scenario.spec.duration)
        # The steps that begin before ``until`` (the run's, when it ends sooner).
        self.steps = min(-(-self.until // step), scenario.spec.duration // step)
        self.run = Simulation(scenario)
        self.run.begin()
        self.run.advance(self.steps)
        self._before = _before(scenario, self.until)
        self._order = self._before.model_dump_json()
        self._used = False

    def fits(self, scenario: Scenario) -> str | None:
        """Why ``scenario`` cannot go on from this warm-up; None when it can."""
        return self._fits(scenario)[0]

    def result(self, scenario: Scenario, last: bool = False) -> Result:
        """``simulate(scenario)``: gone on from the warm-up when it fits, else from its start.
        ``last``: no other scenario goes on from it after this one (its state is taken instead
        of copied)."""
        why, fleet = self._fits(scenario)
        if why is not None or fleet is None:
            return simulate(scenario)
        run = self.run if last else _copied(self.run)
        if last:
            self._used = True
        _go_on_as(run, scenario, fleet, self.steps)
        run.advance(run.ticks)
        return run.finish()

    def _fits(self, scenario: Scenario) -> tuple[str | None, Any]:
        if self._used:
            return "the warm-up was taken by its last run", None
        mine = self.run.scenario
        if scenario.spec.step != mine.spec.step:
            return "another step", None
        if scenario.spec.duration < self.until or scenario.spec.duration // scenario.spec.step < self.steps:
            return "shorter than the warm-up", None
        # Equal models, in the same order too (the set-up follows the order of a behaviour's
        # redirects and routes: the answers' rows, the call routes).
        before = _before(scenario, self.until)
        if before != self._before or before.model_dump_json() != self._order:
            return "another run before the warm-up's end", None
        fleet = build(scenario)
        ours = self.run.fleet
        if not np.array_equal(fleet.behaviors.profile_of, ours.behaviors.profile_of) or not np.array_equal(
            _grouping(fleet.container_behavior), _grouping(ours.container_behavior)
        ):
            return "its containers' behaviours are grouped otherwise", None
        rings = self.run.traffic.ring_sizes
        if rings(scenario.spec.duration) != rings(mine.spec.duration):
            return "its rings keep another number of steps", None
        return None, fleet


def together(scenarios: Sequence[Scenario], until_ms: int) -> list[Result]:
    """``simulate`` of each scenario, those after the first gone on from one warm-up of the
    first up to ``until_ms`` (when they fit); the first goes on last, from the warm-up's own state."""
    warm = WarmUp(scenarios[0], until_ms)
    later = [warm.result(sc) for sc in scenarios[1:]]
    return [warm.result(scenarios[0], last=True), *later]


def _before(sc: Scenario, until: int) -> Scenario:
    """``sc`` as its steps before ``until`` see it: no duration, none of the episodes that begin
    at or after ``until`` (of the kinds that change nothing before they begin)."""

    def early(b: ContainerBehavior) -> ContainerBehavior:
        kept = tuple(e for e in b.episodes if not (isinstance(e, _LATER) and _begins(e) >= until))
        return b if kept == b.episodes else b.model_copy(update={"episodes": kept})

    behavior = {
        name: wb.model_copy(
            update={
                "containers": {c: early(b) for c, b in wb.containers.items()},
                "pods": tuple(
                    ov.model_copy(update={"containers": {c: early(b) for c, b in ov.containers.items()}})
                    for ov in wb.pods
                ),
            }
        )
        for name, wb in sc.spec.behavior.items()
    }
    return sc.model_copy(update={"spec": sc.spec.model_copy(update={"duration": 0, "behavior": behavior})})


def _begins(e: Hang | Deadlock | Errors) -> int:
    """When an episode begins: its container age, else its scenario time (an age never runs
    ahead of the clock, so either is at or before the time it begins)."""
    at = e.after if e.after is not None else e.at
    assert at is not None  # (the model asks for one of the two)
    return at


def _grouping(items: list[Any]) -> list[int]:
    """Per item, the first index of the same object (the capacity model draws per object)."""
    first: dict[int, int] = {}
    return [first.setdefault(id(x), i) for i, x in enumerate(items)]


def _copied(run: Simulation) -> Simulation:
    """A copy of ``run``'s state, sharing only what no step changes: the scenario's models
    (the fleet's containers, behaviours and routes hold some) and the kernels' module."""
    f = run.fleet
    shared: list[Any] = [
        run.scenario,
        run.spec,
        run.capacity.compiled,
        *f.container_spec,
        *f.container_behavior,
    ]
    shared += [x for r in f.routes for x in (r.service, r.traffic)]
    return copy.deepcopy(run, {id(x): x for x in shared if x is not None})


def _go_on_as(run: Simulation, scenario: Scenario, fleet: Any, done: int) -> None:
    """``run`` (its first ``done`` steps run) made ``scenario``'s: its behaviours (the
    containers' state kept), its duration (the steps' times, the rates, the record)."""
    f = run.fleet
    f.scenario = run.scenario = scenario
    run.spec = run.traffic.spec = scenario.spec
    f.container_behavior = fleet.container_behavior
    f.behaviors = fleet.behaviors.taking_over(f.behaviors)
    spec = scenario.spec
    run.ticks = spec.duration // spec.step
    run.times = np.arange(run.ticks, dtype=np.int64) * spec.step
    run.traffic.rates = run.rates(run.traffic.rates)
    run.recorder = run.recorder.resized(run, run.ticks, done)
    run.traffic.cols = run.recorder.route_columns
    run.traffic.route_block = run.recorder.route_block
    run.timed_actions()
    run.done = min(done, run.ticks)
    run_with(run.capacity.compiled)
