"""A warm-up gone on as a scenario that differs from its own only by later hangs, deadlocks and
errors (and its length) gives simulate()'s Result of that scenario, to the bit, on generated
scenarios (hypothesis): the plain engine's and the capacity model's."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probesim.engine import simulate
from probesim.engine.warm import WarmUp
from probesim.model.scenario import Scenario
from tests.property.test_invariants import loaded_scenarios, scenarios


@st.composite
def late(draw: st.DrawFn, until_s: int) -> dict[str, Any]:
    """A hang, deadlock or errors episode that begins at or after ``until_s``."""
    kind = draw(st.sampled_from(["hang", "deadlock", "errors"]))
    anchor = draw(st.sampled_from(["after", "at"]))
    ep: dict[str, Any] = {"kind": kind, anchor: f"{until_s + draw(st.integers(0, 30))}s"}
    if kind != "deadlock":
        ep["for"] = f"{draw(st.integers(1, 20))}s"
    return ep


def _with(sc: Scenario, episode: dict[str, Any], duration_s: int) -> Scenario:
    doc = sc.to_doc()
    b = doc["spec"]["behavior"]["web"]["containers"]["app"]
    b["episodes"] = [*b.get("episodes", []), episode]
    doc["spec"]["duration"] = f"{duration_s}s"
    return Scenario.model_validate(doc)


def _json(r: Any) -> str:
    return json.dumps(r.to_json(), sort_keys=True, default=str)


@st.composite
def pairs(draw: st.DrawFn, made: Any) -> tuple[Scenario, Scenario, int, bool]:
    """A generated scenario with a late episode, another with another one (of the same or
    another length), and the warm-up's end."""
    sc = draw(made)
    duration_s = sc.spec.duration // 1000
    until_s = draw(st.integers(0, duration_s))
    other_s = max(until_s, duration_s + draw(st.sampled_from([0, 0, -3, 5, 70])))
    mine = _with(sc, draw(late(until_s)), duration_s)
    other = _with(sc, draw(late(until_s)), other_s)
    return mine, other, until_s * 1000, other_s == duration_s


def _check(mine: Scenario, other: Scenario, until: int, same_length: bool) -> None:
    warm = WarmUp(mine, until)
    if same_length:
        assert warm.fits(other) is None
    assert _json(warm.result(other)) == _json(simulate(other))
    assert _json(warm.result(mine, last=True)) == _json(simulate(mine))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(scenarios()))
def test_a_warm_up_goes_on_as_the_run_from_its_start(case: tuple[Scenario, Scenario, int, bool]) -> None:
    _check(*case)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(loaded_scenarios()))
def test_a_warm_up_goes_on_as_the_run_from_its_start_under_load(
    case: tuple[Scenario, Scenario, int, bool],
) -> None:
    _check(*case)
