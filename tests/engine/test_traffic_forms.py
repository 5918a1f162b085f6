"""Traffic: constant, k6-style stages (ramps and steps), spikes, recorded series from CSV."""

from __future__ import annotations

from pathlib import Path

import pytest

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.model.traffic import Traffic
from tests.builders import run, scenario, series


def traffic(**kw: object) -> Traffic:
    return Traffic.model_validate(kw)


def test_stages_ramp_linearly_and_step() -> None:
    t = traffic(
        startRate=0,
        stages=[
            {"duration": "10s", "target": 100},
            {"duration": "0s", "target": 300},
            {"duration": "5s", "target": 300},
        ],
    )
    assert [t.rate_at(ms) for ms in (0, 5000, 9000, 10_000, 14_000, 15_000)] == [0, 50, 90, 300, 300, 0]


def test_spikes_add_to_the_base_and_start_stop_bound_it() -> None:
    t = traffic(rate=10, start="2s", stop="20s", spikes=[{"at": "5s", "for": "3s", "rate": 90}])
    assert [t.rate_at(ms) for ms in (0, 2000, 5000, 7999, 8000, 20_000)] == [0, 10, 100, 100, 10, 0]


def test_exactly_one_base_rate() -> None:
    with pytest.raises(ValueError, match="exactly one of 'rate', 'stages' or 'series'"):
        traffic(rate=5, stages=[{"duration": "1s", "target": 1}])
    with pytest.raises(ValueError, match="exactly one"):
        traffic(path="/")


def test_fractional_rates_accumulate_exactly() -> None:
    r = run(traffic=[{"rate": 2.5}], duration="10s")
    assert series(r, "route./.offered") == [2, 3] * 5


def test_recorded_series_from_csv(tmp_path: Path) -> None:
    (tmp_path / "load.csv").write_text("seconds,rate\n0,1\n2,5\n4,0\n")
    r = simulate(scenario(traffic=[{"series": "load.csv"}], duration="6s", base_dir=tmp_path))
    assert series(r, "route./.offered") == [1, 1, 5, 5, 0, 0]
    (tmp_path / "load.csv").write_text("seconds,rate\n0,1\n2,x\n")
    with pytest.raises(InputError) as e:
        scenario(traffic=[{"series": "load.csv"}], duration="6s", base_dir=tmp_path)
    assert (e.value.file, e.value.line) == (str(tmp_path / "load.csv"), 3)
