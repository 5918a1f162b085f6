"""Thresholds read and judged: each kind on built-in scenarios whose figures are known, the
worst route or workload shown, figures that cannot be measured crossing, and the errors a bad
line gets."""

from __future__ import annotations

import re
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from probesim.engine import simulate
from probesim.model.judged import unknown_name
from probesim.model.threshold import METRICS, OPS, ThresholdLine, parse
from probesim.results import Result
from probesim.results.thresholds import crossed, evaluate, judge
from tests.builders import builtin


@cache
def run(name: str) -> Result:
    return simulate(builtin(name))


def verdict(name: str, line: str) -> tuple[float | None, str, bool]:
    v = judge(parse(line), run(name))
    return v.value, v.of, v.ok


def test_error_rate_and_count_of_a_route() -> None:
    # seed000-no-readiness: 3 of 12 requests reach a pod still starting.
    assert verdict("seed000-no-readiness", "errors: rate<0.25") == (0.25, "route /", False)
    assert verdict("seed000-no-readiness", "errors: rate<=25%") == (0.25, "route /", True)
    assert verdict("seed000-no-readiness", "errors{route:/}: count==3") == (3, "route /", True)
    assert verdict("seed000-no-readiness", "errors{service:app}: count<3") == (3, "route /", False)


def test_latency_quantiles_show_the_worst_route() -> None:
    r = run("patient-all-ok")
    dep, nodep = r.route("check_dep").latency_ms, r.route("check_nodep").latency_ms
    assert (dep["p50"], dep["p95"], dep["p99"], dep["max"]) == (37.2, 84.6, 118.9, 190.0)
    assert (nodep["p95"], nodep["p99"]) == (2.8, 3.9)
    assert verdict("patient-all-ok", "p95: <100ms") == (84.6, "route check_dep", True)
    assert verdict("patient-all-ok", "p90: <70.5ms") == (70.5, "route check_dep", False)
    assert verdict("patient-all-ok", "latency: p(99)<0.1s") == (118.9, "route check_dep", False)
    assert verdict("patient-all-ok", "p99{route:check_nodep}: <4") == (3.9, "route check_nodep", True)
    assert verdict("patient-all-ok", "latency: med<37.2") == (37.2, "route check_dep", False)
    assert verdict("patient-all-ok", "max: <=190ms") == (190.0, "route check_dep", True)
    # A lower bound shows the smallest.
    assert verdict("patient-all-ok", "p50: >2ms") == (1.2, "route check_nodep", False)


def test_restarts_total_and_per_workload() -> None:
    # seed000-strict-liveness: app-1 is killed 5 times.
    assert verdict("seed000-strict-liveness", "restarts: ==0") == (5, "all workloads", False)
    assert verdict("seed000-strict-liveness", "restarts{workload:app}: count<=5") == (5, "workload app", True)


def test_ready_and_available_count_from_the_end_of_the_ramp() -> None:
    # seed000-demo: app-1 starts in 8 s (0 Ready at first); its 3 s hang at 22 s takes it out.
    r = run("seed000-demo")
    w = r.workload("app")
    assert (w.min_ready, w.all_ready_ms, r.after_ramp("app")) == (0, 8000, (1, 1))
    assert verdict("seed000-demo", "ready: min>=1") == (1, "workload app", True)
    assert verdict("seed000-demo", "ready{workload:app}: min>=2") == (1, "workload app", False)
    assert verdict("seed000-demo", "available: min>=50%") == (0.5, "workload app", True)
    assert verdict("seed000-demo", "available: min>50%") == (0.5, "workload app", False)


def test_a_workload_never_all_ready_crosses_a_ready_threshold() -> None:
    v = judge(parse("ready: min>=1"), run("seed000-strict-liveness"))
    assert (v.value, v.ok, v.note) == (None, False, "never had all 2 replicas Ready")


def test_time_without_endpoints() -> None:
    # patient-delays-readiness: both pods out of the Service for 15 s in all.
    assert verdict("patient-delays-readiness", "no_endpoints: <15s") == (15_000, "route check_dep", False)
    assert verdict("patient-delays-readiness", "no_endpoints{route:check_nodep}: <=15000") == (
        15_000,
        "route check_nodep",
        True,
    )
    assert verdict("patient-all-ok", "no_endpoints: ==0") == (0, "route check_dep", True)


def test_unmeasured_latency_crosses_and_says_why() -> None:
    # seed000 scenarios give requests no cost: no latency is modelled.
    v = judge(parse("p95: <500ms"), run("seed000-no-readiness"))
    assert (v.value, v.ok) == (None, False)
    assert v.note.startswith("no latency: this scenario's requests cost no time")


def test_crossed_is_any() -> None:
    r = run("seed000-no-readiness")
    assert not crossed(evaluate([parse("restarts: ==0"), parse("errors: count<4")], r))
    assert crossed(evaluate([parse("restarts: ==0"), parse("errors: count<3")], r))


def test_a_tag_naming_nothing_in_the_scenario_is_refused() -> None:
    sc = builtin("patient-all-ok")
    assert unknown_name(parse("p95{route:check_dep}: <1s"), sc) is None
    assert unknown_name(parse("p95{route:api}: <1s"), sc) == (
        "'p95{route:api}: <1s': no route 'api' in this scenario; routes: check_dep, check_nodep"
    )
    assert "no workload 'web'" in (unknown_name(parse("restarts{workload:web}: ==0"), sc) or "")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("erors: rate<0.01", "unknown metric 'erors'; write 'metric: condition' as k6 does"),
        ("errors: <0.01", "errors needs an aggregation: failed requests of a route: rate"),
        ("errors: rate<2", "a rate is a share from 0 to 1 (or write a percentage: 2%)"),
        ("p95: <fast", "'fast' is not a duration; write e.g. 500ms, 1.5s or 2m"),
        ("p95: max<1s", "p95 is already the aggregation; write the comparison alone"),
        ("latency: p(97)<1s", "latency has no aggregation 'p97'"),
        ("ready: min>=2.5", "'2.5' is not a whole number"),
        ("restarts: <=" + "9" * 400, "99999999999999999999… is too large a number"),
        ("ready: min>=150%", "'150%' is not a percentage from 0% to 100%"),
        ("errors{pod:x}: rate<1", "errors has no tag 'pod'; it takes route or service"),
        ("errors{route}: rate<1", "the tag {route} is not {key:value}"),
        ("restarts", "no 'metric:' before the condition"),
        ("restarts: 0", "no comparison in '0'; the condition is an aggregation (if any), one of <"),
        ("restarts: <", "no value after '<'"),
    ],
)
def test_bad_lines_say_what_is_wrong_and_what_is_allowed(line: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse(line)


def test_k6_spellings_read_the_same() -> None:
    assert parse("latency: p(95)<500").value == parse("p95: <500ms").value == 500
    assert parse("latency: p(95)<500").aggregation == parse("p95: <0.5s").aggregation == "p95"
    assert parse("restarts: ===0").op == "=="
    assert parse("ready: >=2") == parse("ready: >=2")
    assert parse(" errors{route: /api v2 }: rate < 1% ").tag == ("route", "/api v2")


lines = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda m, tag, cond: f"{m}{tag}:{cond}",
        st.sampled_from([*METRICS, "x"]),
        st.sampled_from(["", "{route:/}", "{service:app}", "{workload:app}", "{pod:x}", "{route}", "{"]),
        st.text(alphabet="<>=!0123456789.%msp()minaxratecoutlh -", max_size=20),
    ),
)


@settings(max_examples=300, deadline=None)
@given(lines)
def test_any_line_reads_or_is_refused_with_a_value_error(line: str) -> None:
    """Whatever the text: a Threshold whose own text reads the same, or a ValueError (the
    loader's and the CLI's clear message), never another exception."""
    try:
        th = parse(line)
    except ValueError as e:
        assert str(e)
        return
    assert parse(th.text) == th
    assert th.op in OPS and th.value >= 0


def test_an_unquoted_yaml_line_reads_as_the_same_threshold() -> None:
    line = TypeAdapter(ThresholdLine)
    assert line.validate_python({"errors{route:/}": "rate<0.01"}) == "errors{route:/}: rate<0.01"
    with pytest.raises(ValidationError, match="'restarts: 0': no comparison in '0'"):
        line.validate_python({"restarts": 0})
    with pytest.raises(ValidationError, match="one threshold per item"):
        line.validate_python({"errors": "rate<0.01", "restarts": "==0"})
