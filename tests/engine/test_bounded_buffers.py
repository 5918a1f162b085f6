"""Buffers the engine sizes from a timeout are bounded by the run (issue 27): a dependency call
or client timeout of a year sized the answer buffers by that year and died allocating 4 GiB."""

from __future__ import annotations

import tracemalloc

from probesim.cost import answer_slots, queue_slots, run_cost
from probesim.results import Result
from tests.builders import run, scenario

YEAR = "8760h"
HANG = {"dependencies": {"db": {"outages": [{"at": "0s", "for": "1h", "mode": "hang"}]}}}


def test_slots_are_bounded_by_the_run() -> None:
    year_ms = 8760 * 3_600_000
    assert answer_slots([year_ms], 60_000, 1000) == 62
    assert answer_slots([2_000], 600_000, 1000) == 62  # at least a minute, when the run is longer
    assert answer_slots([], 20_000, 1000) == 22  # a run shorter than a minute: the run
    assert queue_slots(year_ms, 60_000, 1000) == 62
    assert queue_slots(5_000, 60_000, 1000) == 6
    assert queue_slots(None, 60_000, 1000) == 1


def _run(timeout: str) -> Result:
    return run(
        behavior={"routes": {"/": {"cpu": "1ms", "calls": [{"dependency": "db", "timeout": timeout,
                                                              "retries": {"attempts": 3}}]}}},
        traffic=[{"rate": 50, "timeout": timeout}],
        duration="20s",
        step="100ms",
        spec=HANG,
    )  # fmt: skip


def test_a_timeout_of_a_year_runs_as_one_past_the_end_of_the_run() -> None:
    tracemalloc.start()
    year = _run(YEAR)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200 * 2**20, peak  # was 3 × 3 years / 100 ms slots: about 7 GiB a container
    # Nothing times out within the run either way: the same run as with a timeout of an hour.
    hour = _run("1h")
    assert year.to_json() == hour.to_json()


def test_the_cost_estimate_counts_the_bounded_buffers() -> None:
    sc = scenario(
        behavior={"routes": {"/": {"calls": [{"dependency": "db", "timeout": YEAR}]}}},
        traffic=[{"rate": 1, "timeout": YEAR}],
        duration="60s",
        spec=HANG,
    )
    # A loaded route (its calls): 60 steps × (100 + 1 + 1 × (500 + 1 × 2) + 1 × 1 × 62 / 20)
    # + 100 + (3 × 62 answer slots + 62 queue slots) × 1 / 8 = 36,491 (a year's slots: 2 × 10⁹)
    assert run_cost(sc).units == 36_491
