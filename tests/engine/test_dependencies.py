"""Dependency calls: faults where Istio puts them, client timeouts, retries, breakers, outages."""

from __future__ import annotations

import random

import pytest

from probesim.engine.dependencies import Outcome, chain, merge, one_try, streak_probability, with_retries
from probesim.model.scenario import Dependency, DependencyCall
from tests.builders import run, series


def dep(**kw: object) -> Dependency:
    return Dependency.model_validate({"latency": "20ms", **kw})


def call(**kw: object) -> DependencyCall:
    return DependencyCall.model_validate({"dependency": "db", **kw})


def test_a_delay_longer_than_the_client_timeout_fails_at_the_timeout() -> None:
    d = dep(faults=[{"delay": "100s", "percent": 50}])
    assert one_try(d, call(), 0) == [Outcome(0.5, 100_000, True), Outcome(0.5, 20, False)]
    assert one_try(d, call(timeout="200ms"), 0) == [Outcome(0.5, 200, True), Outcome(0.5, 20, False)]
    assert one_try(d, call(timeout=None), 0) == [Outcome(0.5, 100_020, False), Outcome(0.5, 20, False)]


def test_aborts_fail_at_once_and_combine_with_delays() -> None:
    d = dep(faults=[{"abort": 503, "percent": 10}])
    assert one_try(d, call(), 0) == [Outcome(0.1, 0, True), Outcome(0.9, 20, False)]


def test_retries_fail_only_when_every_try_fails() -> None:
    c = call(timeout="200ms", retries={"attempts": 3, "backoff": "25ms"})
    classes = with_retries(one_try(dep(faults=[{"delay": "10s", "percent": 50}]), c, 0), c)
    assert [(o.prob, o.latency, o.failed) for o in classes] == [
        (0.5, 20.0, False),
        (0.25, 245.0, False),
        (0.125, 470.0, False),
        (0.125, 650.0, True),
    ]


def test_outages_refuse_or_hang_only_inside_their_window() -> None:
    d = dep(outages=[{"at": "10s", "for": "5s", "mode": "hang"}])
    assert one_try(d, call(timeout="2s"), 12_000) == [Outcome(1.0, 2000, True)]
    assert one_try(d, call(), 15_000) == [Outcome(1.0, 20, False)]
    refuse = dep(outages=[{"at": "0s", "for": "5s"}])
    assert one_try(refuse, call(), 0) == [Outcome(1.0, 0, True)]


def test_calls_in_sequence_stop_at_the_first_failure() -> None:
    first = [Outcome(0.5, 10, False), Outcome(0.5, 0, True)]
    second = [Outcome(0.2, 5, True), Outcome(0.8, 30, False)]
    assert sorted(chain([first, second]), key=lambda o: o.prob) == sorted(
        [Outcome(0.5, 0, True), Outcome(0.1, 15, True), Outcome(0.4, 40, False)], key=lambda o: o.prob
    )


@pytest.mark.parametrize(
    ("p", "n", "k", "expected"), [(0.0, 100, 3, 0.0), (1.0, 5, 3, 1.0), (0.5, 1, 3, 1 - (1 - 0.0625))]
)
def test_streak_probability(p: float, n: int, k: int, expected: float) -> None:
    assert streak_probability(p, n, k) == pytest.approx(expected)


def test_outage_of_a_dependency_fails_the_calling_route_with_its_error_status() -> None:
    r = run(
        behavior={
            "routes": {"/": {"cpu": "1ms", "calls": [{"dependency": "db", "onError": 502}]}},
            "variability": 0,
        },
        traffic=[{"rate": 10}],
        duration="10s",
        spec={"dependencies": {"db": {"latency": "5ms", "outages": [{"at": "3s", "for": "4s"}]}}},
    )
    assert series(r, "route./.error_status") == [0, 0, 0, 10, 10, 10, 10, 0, 0, 0]


def test_a_circuit_breaker_fails_fast_while_open() -> None:
    # Every call hangs to its 1 s timeout; the breaker opens after the first second's calls and
    # fails calls at once for 3 s; its half-open trial fails too, so it stays open.
    common = {
        "traffic": [{"rate": 50}],
        "duration": "8s",
        "spec": {"dependencies": {"db": {"outages": [{"at": "0s", "for": "1h", "mode": "hang"}]}}},
    }
    without = run(
        behavior={"routes": {"/": {"calls": [{"dependency": "db", "timeout": "1s"}]}}, "variability": 0},
        **common,
    )  # type: ignore[arg-type]
    with_cb = run(
        behavior={
            "routes": {
                "/": {
                    "calls": [
                        {"dependency": "db", "timeout": "1s", "circuitBreaker": {"failures": 5, "open": "3s"}}
                    ]
                }
            },
            "variability": 0,
        },
        **common,  # type: ignore[arg-type]
    )
    # Latency series count answers when the client gets them: the first second's arrive at 1 s.
    assert series(without, "route./.p50_ms") == [0] + [1000] * 7
    # With the breaker, the first second's 1 s answers arrive with 50 instant failures; then
    # every answer is instant.
    assert series(with_cb, "route./.p50_ms") == [0] * 8
    assert series(with_cb, "route./.max_ms")[1] >= 1000
    assert series(with_cb, "route./.max_ms")[2:] == [0] * 6
    # Failing fast, every failure is seen within the run; waiting 1 s, the last second's are not.
    assert with_cb.route("/").failed["error_status"] == 400
    assert without.route("/").failed["error_status"] == 350


def test_a_retry_budget_caps_the_extra_tries() -> None:
    # Half of all tries fail; 3 tries want 0.5 + 0.25 = 0.75 retries per call. A 25 % budget
    # lets each retry through with probability a = 1/3.
    c = call(timeout="200ms", retries={"attempts": 3, "budget": 25})
    classes = with_retries(one_try(dep(faults=[{"delay": "10s", "percent": 50}]), c, 0), c)
    a = 0.25 / 0.75
    failed = sum(o.prob for o in classes if o.failed)
    assert failed == pytest.approx(0.5 * (1 - a) + 0.25 * a * (1 - a) + 0.125 * a * a)
    # Retries per call: a failed class of j tries made j - 1; a success at try j made j - 1.
    retries = sum(
        o.prob * (round(o.latency / 200) - 1 if o.failed else round((o.latency - 20) / 200)) for o in classes
    )
    assert retries == pytest.approx(a * 0.5 + a * a * 0.25)
    assert retries <= 0.25  # within the budget


def test_a_dependency_at_capacity_refuses_the_excess() -> None:
    # 100 calls/s of 1 s each would keep 100 calls in flight; the dependency takes 40 at once,
    # so from the second step on about 60 % of calls are refused and the route answers 500.
    r = run(
        behavior={"routes": {"/": {"calls": [{"dependency": "db"}]}}, "variability": 0},
        traffic=[{"rate": 100}],
        duration="20s",
        spec={"dependencies": {"db": {"latency": "1s", "capacity": 40}}},
    )
    errors = series(r, "route./.error_status")
    assert errors[0] == 0
    assert all(40 <= e <= 80 for e in errors[1:])
    assert sum(errors[1:]) / 19 == pytest.approx(60, abs=5)


def test_answers_not_back_by_the_graceful_stop_are_interrupted_at_once() -> None:
    # Every call takes 100 s; arrivals stop at 10 s and the client waits 5 s more (k6's
    # gracefulStop): all 100 requests are interrupted right after 15 s, none counted as failed.
    r = run(
        behavior={"routes": {"/": {"calls": [{"dependency": "db"}]}}, "variability": 0},
        traffic=[{"rate": 10, "stop": "10s", "gracefulStop": "5s"}],
        duration="30s",
        spec={"dependencies": {"db": {"latency": "100s", "variability": 0}}},
    )
    route = r.route("/")
    assert (route.offered, route.ok, route.failed_total, route.interrupted) == (100, 0, 0, 100)
    assert series(r, "route./.interrupted")[16] == 100


def _every_combination(per_call: list[list[Outcome]]) -> list[Outcome]:
    """The sequence as it was computed: every combination of per-call outcomes, then merged."""
    out = [Outcome(1.0, 0.0, False)]
    for classes in per_call:
        nxt = [o for o in out if o.failed]
        for o in out:
            if not o.failed:
                nxt += [Outcome(o.prob * c.prob, o.latency + c.latency, c.failed) for c in classes]
        out = nxt
    return merge(out)


@pytest.mark.parametrize("seed", range(20))
def test_a_few_calls_in_sequence_give_exactly_every_combinations_classes(seed: int) -> None:
    rng = random.Random(seed)
    per_call = []
    for _ in range(rng.randint(1, 4)):
        weights = [rng.random() for _ in range(rng.randint(1, 4))]
        per_call.append(
            [
                Outcome(w / sum(weights), float(rng.choice([0, 5, 20, 200, 245])), rng.random() < 0.4)
                for w in weights
            ]
        )
    got, want = chain(per_call), _every_combination(per_call)
    assert [(o.latency, o.failed) for o in got] == [(o.latency, o.failed) for o in want]
    assert [o.prob for o in got] == pytest.approx([o.prob for o in want], abs=1e-12)


def test_many_calls_with_retries_against_a_faulty_dependency_stay_few_classes() -> None:
    from probesim.engine.dependencies import MAX_CLASSES, sequence

    # Every combination grew as 3^n: 16 calls took 3.6 s, 20 calls 546 MB, 24 ran out of memory.
    c = call(timeout="200ms", retries={"attempts": 3, "backoff": "25ms"})
    per = with_retries(
        one_try(dep(faults=[{"delay": "10s", "percent": 50}, {"abort": 503, "percent": 10}]), c, 0), c
    )
    n = 40
    classes = sequence([per] * n)
    assert len(classes) <= MAX_CLASSES
    p_call_fails = 0.55**3  # a try succeeds when neither delayed (50 %) nor aborted (10 %)
    assert sum(o.prob for o in classes) == pytest.approx(1.0)
    assert sum(o.prob for o in classes if o.failed) == pytest.approx(1 - (1 - p_call_fails) ** n)
    merged = chain([per] * n)
    assert len(merged) <= 8
    # Both verdicts keep their probability (many small successes once folded into failures).
    assert sum(o.prob for o in merged if o.failed) == pytest.approx(1 - (1 - p_call_fails) ** n)
