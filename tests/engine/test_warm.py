"""A warm-up (engine/warm.py): a run simulated up to a time and gone on from there as scenarios
that are the same run until then gives simulate()'s Result of each, to the bit; a scenario that
is not the same run until then is refused, and simulated from its start."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from probesim import scenarios
from probesim.engine import simulate
from probesim.engine.warm import WarmUp, _copied
from probesim.model.scenario import Scenario
from probesim.results import Result
from tests.builders import builtin, scenario


def _json(r: Result) -> str:
    return json.dumps(r.to_json(), sort_keys=True, default=str)


def _goes_on_as_simulated(warm: WarmUp, other: Scenario, why: str | None) -> None:
    """``warm`` takes ``other`` or refuses it for ``why``; either way its Result is simulate()'s."""
    assert warm.fits(other) == why
    assert _json(warm.result(other)) == _json(simulate(other))


def _lasting(sc: Scenario, length: str) -> Scenario:
    doc = sc.to_doc()
    doc["spec"]["duration"] = length
    return Scenario.model_validate(doc)


def _with_hang(sc: Scenario, at_ms: int, duration_ms: int | None = None) -> Scenario:
    """``sc`` with its first workload's first container hanging for 5 steps from ``at_ms``."""
    doc = sc.to_doc()
    w = sc.workloads[0]
    containers = doc["spec"].setdefault("behavior", {}).setdefault(w.name, {}).setdefault("containers", {})
    b = containers.setdefault(w.pod_spec.containers[0].name, {})
    hang = {"kind": "hang", "at": f"{at_ms}ms", "for": f"{5 * sc.spec.step}ms"}
    b["episodes"] = [*b.get("episodes", []), hang]
    if duration_ms is not None:
        doc["spec"]["duration"] = f"{duration_ms}ms"
    return Scenario.model_validate(doc)


@pytest.mark.parametrize("name", scenarios.names())
def test_every_built_in_goes_on_from_its_warm_up_as_it_runs_from_its_start(name: str) -> None:
    # The warm-up's scenario hangs a container late (after the other's hang); the other goes on
    # with a hang 3 steps after the warm-up's end and, when its rings allow, runs 7 steps longer.
    sc = builtin(name)
    step = sc.spec.step
    until = sc.spec.duration // 2 // step * step
    mine = _with_hang(sc, sc.spec.duration - step)
    longer = sc.spec.duration + 7 * step if sc.spec.duration >= 120_000 else None
    other = _with_hang(sc, until + 3 * step, longer)
    warm = WarmUp(mine, until)
    assert warm.fits(other) is None
    assert _json(warm.result(other)) == _json(simulate(other))
    assert _json(warm.result(other)) == _json(simulate(other))  # (again: the warm-up is unchanged)
    assert _json(warm.result(mine, last=True)) == _json(simulate(mine))
    assert warm.fits(other) == "the warm-up was taken by its last run"


def _web(**kw: Any) -> Scenario:
    return scenario(
        probes={"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 3}},
        behavior={"routes": {"/": {"cpu": "5ms"}}, **kw},
        replicas=2,
        traffic=[{"rate": 20, "timeout": "2s"}],
        duration="200s",
    )


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            lambda d: _episode(d, {"kind": "hang", "at": "99s", "for": "5s"}),
            "another run before the warm-up's end",
        ),
        (lambda d: _episode(d, {"kind": "crash", "at": "150s"}), "another run before the warm-up's end"),
        (lambda d: d["spec"].update(duration="90s"), "shorter than the warm-up"),
        (lambda d: d["spec"].update(step="500ms"), "another step"),
        (lambda d: d["spec"].update(seed=7), "another run before the warm-up's end"),
    ],
)
def test_a_scenario_that_is_not_the_same_run_until_the_warm_ups_end_is_simulated_from_its_start(
    change: Any, why: str
) -> None:
    sc = _web()
    doc = sc.to_doc()
    change(doc)
    other = Scenario.model_validate(doc)
    warm = WarmUp(sc, 100_000)
    _goes_on_as_simulated(warm, other, why)


def test_a_pod_whose_behaviour_is_drawn_for_apart_only_in_one_scenario_is_not_gone_on() -> None:
    # Pod 0 behaves as the others in the warm-up's scenario (they share a profile); with errors
    # from 150 s in the other, it has a profile of its own, which the capacity model draws for
    # apart from the start: not the same run before 100 s.
    same = {"routes": {"/": {"cpu": "5ms"}}}
    sc = _web()
    doc = sc.to_doc()
    doc["spec"]["behavior"]["web"]["pods"] = [{"ordinals": [0], "containers": {"app": same}}]
    mine = Scenario.model_validate(doc)
    doc["spec"]["behavior"]["web"]["pods"][0]["containers"]["app"] = {
        **same,
        "episodes": [{"kind": "errors", "after": "150s"}],
    }
    other = Scenario.model_validate(doc)
    warm = WarmUp(mine, 100_000)
    _goes_on_as_simulated(warm, other, "its containers' behaviours are grouped otherwise")


def test_a_warm_up_ending_within_a_step_goes_on_only_as_runs_that_have_that_step() -> None:
    # Until 100.5 s the warm-up ran the step at 100 s: a run of 100.5 s has no such step (its
    # steps are those of 100 s), one of 101 s has; a warm-up of 90.5 s ran 90 steps.
    sc = _web()
    warm = WarmUp(sc, 100_500)
    for length, why in (("100500ms", "shorter than the warm-up"), ("101s", None)):
        _goes_on_as_simulated(warm, _lasting(sc, length), why)
    short = WarmUp(_lasting(sc, "90500ms"), 90_500)
    assert short.steps == 90 and short.fits(sc) is None
    assert _json(short.result(sc)) == _json(simulate(sc))


def test_behaviours_whose_redirects_are_listed_in_another_order_are_not_the_same_run() -> None:
    # The answers' rows follow the order of the redirects: reversed, /x (which the traffic asks)
    # would read /y's row, 503s from the hang at 80 s on.
    def web(order: list[tuple[str, str]]) -> Scenario:
        return scenario(
            probes={"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}}},
            behavior={"paths": {"/y": 503}, "redirects": dict(order),
                      "episodes": [{"kind": "hang", "at": "80s", "for": "1s"}]},
            traffic=[{"rate": 5, "path": "/x"}],
            duration="100s",
        )  # fmt: skip

    mine, other = web([("/a", "/x"), ("/b", "/y")]), web([("/b", "/y"), ("/a", "/x")])
    assert mine == other  # (the models, which compare their dicts in any order)
    warm = WarmUp(mine, 50_000)
    _goes_on_as_simulated(warm, other, "another run before the warm-up's end")


def _episode(doc: dict[str, Any], ep: dict[str, Any]) -> None:
    b = doc["spec"]["behavior"]["web"]["containers"]["app"]
    b["episodes"] = [*b.get("episodes", []), ep]


def test_rings_sized_by_a_short_run_are_not_gone_on_with_another_length() -> None:
    # Under a minute the answers' ring is as long as the run: 40 s and 50 s keep 42 and 52 steps.
    sc = scenario(behavior={"routes": {"/": {"cpu": "5ms"}}}, traffic=[{"rate": 5}], duration="40s")
    other = _lasting(sc, "50s")
    warm = WarmUp(sc, 20_000)
    _goes_on_as_simulated(warm, other, "its rings keep another number of steps")


def test_a_late_episode_hangs_at_its_time_after_the_warm_up() -> None:
    # The warm-up ends at 100 s without the hang; the other scenario's container hangs at 150 s
    # for good and readiness (every 3 s, 3 failures) takes its pods out: the first check that
    # times out is the first tick from 150 s on.
    sc = _web()
    doc = sc.to_doc()
    _episode(doc, {"kind": "deadlock", "at": "150s"})
    other = Scenario.model_validate(doc)
    got = WarmUp(sc, 100_000).result(other)
    fails = [e.time_ms for e in got.events if e.reason == "Unhealthy"]
    assert fails and 150_000 <= fails[0] - 1000 < 153_000  # (its timeout: 1 s)
    assert not [e for e in simulate(sc).events if e.reason == "Unhealthy"]


def _arrays(root: Any) -> list[tuple[str, np.ndarray[Any, Any]]]:
    """Every numpy array reachable from ``root`` through objects, lists, tuples and dicts
    (not through the scenario's models), with a path to it."""
    from pydantic import BaseModel

    seen: set[int] = set()
    out: list[tuple[str, np.ndarray[Any, Any]]] = []
    stack: list[tuple[Any, str]] = [(root, "run")]
    while stack:
        o, path = stack.pop()
        if id(o) in seen or isinstance(o, str | bytes | int | float | BaseModel | type | ModuleType):
            continue
        seen.add(id(o))
        if isinstance(o, np.ndarray):
            out.append((path, o))
        elif isinstance(o, dict):
            stack += [(v, f"{path}[{k!r}]") for k, v in o.items()]
        elif isinstance(o, list | tuple | set):
            stack += [(v, f"{path}[{i}]") for i, v in enumerate(o)]
        elif isinstance(getattr(o, "__dict__", None), dict):
            stack += [(v, f"{path}.{k}") for k, v in vars(o).items()]
    return out


def _shared(arrays: list[tuple[str, np.ndarray[Any, Any]]]) -> set[tuple[str, str]]:
    """The pairs of arrays (by path) that share memory."""

    def root(a: np.ndarray[Any, Any]) -> int:
        while isinstance(a.base, np.ndarray):
            a = a.base
        return id(a)

    by: dict[int, list[str]] = {}
    for path, a in arrays:
        if a.size:
            by.setdefault(root(a), []).append(path)
    return {(p, q) for paths in by.values() for p in paths for q in paths if p < q}


# Views a copy may make arrays of their own: made again from their base before they are read
# (the capacity model's this step's containers and CPU, set by each serving step), never
# written (each route's class shares), or made again by the warm-up (the record's columns).
REMADE = ("capacity.active", "capacity.used_m", "capacity._class_prob", "recorder.", "traffic.cols")


@pytest.mark.parametrize("name", ["seed003-outlier", "gke-surge-defaults", "patient-timeout-retry-3"])
def test_a_copy_of_a_runs_state_shares_nothing_with_it_and_keeps_its_views(name: str) -> None:
    sc = builtin(name)
    run = WarmUp(sc, sc.spec.duration // 2).run
    copied = _copied(run)
    mine, theirs = _arrays(run), _arrays(copied)
    assert [p for p, _ in mine] == [p for p, _ in theirs]
    assert not {id(a) for _, a in mine} & {id(a) for _, a in theirs}
    assert not any(np.shares_memory(a, b) for (_, a), (_, b) in zip(mine, theirs, strict=True))
    kept = _shared(theirs)
    lost = {pq for pq in _shared(mine) - kept if not any(r in x for x in pq for r in REMADE)}
    assert not lost  # a view the copy made an array of its own: give its class a __deepcopy__
    assert copied.rng is not run.rng and (copied.rng.random(4) == run.rng.random(4)).all()
