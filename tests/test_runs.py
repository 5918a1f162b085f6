"""Monte Carlo (run --runs) and sweeps: the same numbers as single runs, bit for bit, whatever
the number of workers; rows as CSV and Parquet; the cost guard."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from probesim.cli import app
from probesim.engine import simulate
from probesim.manifests.scenario import load_scenario
from probesim.montecarlo import monte_carlo
from probesim.overrides import parse_axis, parse_set
from probesim.results.figures import figures
from probesim.runs import run_all, with_seed
from probesim.scenarios import find
from probesim.sweep import choose, plan
from tests.cli.test_run_manifests import deployment, service, write

runner = CliRunner()
# Seed-dependent (the capacity model's service times): each seed gives other figures.
NAME = "patient-delays-liveness"
PATH = str(find(NAME).path)  # type: ignore[union-attr]


def single(seed: int, *sets: str) -> dict[str, object]:
    sc = load_scenario(PATH, (), [parse_set(s) for s in sets])
    return figures(simulate(with_seed(sc, seed)))


@pytest.fixture(scope="module")
def singles() -> dict[int, dict[str, object]]:
    return {seed: single(seed) for seed in (4, 5, 6)}


def test_monte_carlo_is_the_statistics_of_single_runs(singles: dict[int, dict[str, object]]) -> None:
    sc = load_scenario(PATH)
    mc = monte_carlo(sc, 3, workers=2)
    assert mc.seeds == [4, 5, 6]  # the scenario's seed, then the next ones
    assert [{k: r[k] for k in singles[4]} for r in mc.rows] == [singles[s] for s in (4, 5, 6)]
    ok = [singles[s]["route[check_dep].ok"] for s in (4, 5, 6)]
    assert ok == [7940, 12674, 5764]
    s = mc.figures["route[check_dep].ok"]
    assert (s.n, s.mean, s.min, s.max) == (3, 8792.666666666666, 5764, 12674)
    assert s.std == statistics.stdev(ok) == pytest.approx(3533.0306, abs=1e-4)
    p95 = [singles[x]["route[check_dep].latency.p95_ms"] for x in (4, 5, 6)]
    assert mc.figures["route[check_dep].latency.p95_ms"].mean == statistics.mean(p95)  # type: ignore[arg-type]
    assert mc.figures["route[check_dep].offered"].std == 0.0
    # the number of workers changes nothing
    assert monte_carlo(sc, 3, workers=1).to_json() == mc.to_json()


def test_run_runs_json_cli(singles: dict[int, dict[str, object]]) -> None:
    r = runner.invoke(app, ["run", NAME, "--runs", "3", "--workers", "2", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["kind"], doc["runs"], doc["seeds"]) == ("MonteCarlo", 3, [4, 5, 6])
    restarts = [singles[s]["workload[patient].restarts"] for s in (4, 5, 6)]
    assert doc["figures"]["workload[patient].restarts"] == {
        "n": 3, "mean": statistics.mean(restarts), "std": statistics.stdev(restarts),  # type: ignore[arg-type]
        "min": min(restarts), "max": max(restarts),  # type: ignore[type-var]
    }  # fmt: skip
    text = runner.invoke(app, ["run", NAME, "--runs", "2", "--seed", "5"])
    assert text.exit_code == 0, text.output
    assert "2 runs, seeds 5–6" in text.stdout and "route[check_dep].ok" in text.stdout


def test_sweep_rows_equal_single_runs_bit_for_bit(
    tmp_path: Path, singles: dict[int, dict[str, object]]
) -> None:
    out = tmp_path / "rows.csv"
    r = runner.invoke(app, ["sweep", NAME, "--set", "deployment/patient.spec.replicas=2,3",
                            "--set", "spec.traffic[1].rate=900,450", "--runs", "2", "-o", str(out),
                            "--workers", "2"])  # fmt: skip
    assert r.exit_code == 0, r.output
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8
    head = list(rows[0])
    assert head[:5] == ["point", "deployment/patient.spec.replicas", "spec.traffic[1].rate", "run", "seed"]
    grid = [
        (row["deployment/patient.spec.replicas"], row["spec.traffic[1].rate"], row["seed"]) for row in rows
    ]
    assert grid == [(n, rate, s) for n in ("2", "3") for rate in ("900", "450") for s in ("4", "5")]
    wants = []
    for row in rows:
        sets = [f"{k}={row[k]}" for k in head[1:3]]
        wants.append(single(int(row["seed"]), *sets))
        if sets == ["deployment/patient.spec.replicas=2", "spec.traffic[1].rate=900"]:
            assert wants[-1] == singles[int(row["seed"])]
    for row, want in zip(rows, wants, strict=True):
        for k, v in want.items():
            assert (None if row[k] == "" else type(v)(row[k])) == v, k  # floats read back bit for bit

    pq_out = tmp_path / "rows.parquet"
    r = runner.invoke(app, ["sweep", NAME, "--set", "deployment/patient.spec.replicas=2,3",
                            "--set", "spec.traffic[1].rate=900,450", "--runs", "2", "-o", str(pq_out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    table = pq.read_table(pq_out).to_pylist()
    assert [(t["deployment/patient.spec.replicas"], t["spec.traffic[1].rate"], t["seed"]) for t in table] == [
        (n, rate, s) for n in (2, 3) for rate in (900, 450) for s in (4, 5)
    ]
    assert [{k: t[k] for k in want} for t, want in zip(table, wants, strict=True)] == wants


def test_sample_draws_points_of_the_grid_with_its_seed() -> None:
    assert choose(10, 3, seed=1) == choose(10, 3, seed=1) == sorted(choose(10, 3, seed=1))
    assert len(set(choose(10, 3, seed=1))) == 3
    assert choose(10, 3, seed=1) != choose(10, 3, seed=2)
    assert choose(4, 9, seed=1) == [0, 1, 2, 3]
    axes = [parse_axis("spec.seed=1,2,3"), parse_axis("deployment/patient.spec.replicas=1,2")]
    p = plan(PATH, axes, sample=2, sample_seed=7, max_cost=10**9)
    assert (p.points, p.grid, len(p.tasks)) == (2, 6, 2)
    rows = run_all(p.tasks, workers=1)
    picked = choose(6, 2, seed=7)
    assert [r["point"] for r in rows] == picked
    for r in rows:
        assert r["seed"] == r["spec.seed"]


def test_cost_guard_and_bad_values_stop_the_sweep_before_it_starts(tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    r = runner.invoke(
        app, ["sweep", NAME, "--set", "spec.seed=1,2", "-o", str(out), "--max-total-cost", "1000"]
    )
    assert r.exit_code == 2
    assert "this sweep of 2 points × 1 run would cost about" in r.output and "--max-total-cost" in r.output
    r = runner.invoke(app, ["sweep", NAME, "--set", "spec.traffic[0].rate=10,fast", "-o", str(out)])
    assert r.exit_code == 2
    assert r.output.startswith(
        "error: --set spec.traffic[0].rate=fast: Scenario: spec.traffic[0].rate: Input should be a valid number"
    )
    r = runner.invoke(app, ["sweep", NAME, "--set", "spec.seed=1", "-o", str(tmp_path / "rows.txt")])
    assert r.exit_code == 2 and "ending in .csv or .parquet" in r.output
    assert not out.exists()
    for result in (r,):
        assert "Traceback" not in result.output


def test_thresholds_over_runs_exit_99_and_in_sweep_rows(tmp_path: Path) -> None:
    lines = '["restarts: <8", "errors{route:check_nodep}: rate<0.6"]'
    r = runner.invoke(app, ["run", NAME, "--runs", "3", "--json", "--set", f"spec.thresholds={lines}"])
    assert r.exit_code == 99, r.output  # k6's code: a run crossed a threshold
    assert json.loads(r.stdout)["thresholds"] == [
        {"threshold": "restarts: <8", "crossedRuns": 2, "runs": 3, "crossedShare": 2 / 3},
        {
            "threshold": "errors{route:check_nodep}: rate<0.6",
            "crossedRuns": 1,
            "runs": 3,
            "crossedShare": 1 / 3,
        },
    ]
    out = tmp_path / "rows.csv"
    r = runner.invoke(
        app, ["sweep", NAME, "--set", "spec.seed=4,5,6", "--threshold", "restarts: <8", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output  # a sweep reports verdicts; it does not judge
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [row["threshold[restarts: <8].ok"] for row in rows].count("false") == 2
    for row in rows:
        assert (row["threshold[restarts: <8].ok"] == "true") == (int(row["workload[patient].restarts"]) < 8)
        assert float(row["threshold[restarts: <8].value"]) == int(row["workload[patient].restarts"])
    r = runner.invoke(app, ["run", NAME, "--runs", "3", "--max-total-cost", "1000"])
    assert r.exit_code == 2
    assert "3 runs would cost about" in r.output and "more than --max-total-cost 1,000" in r.output


def test_a_sweep_of_manifests_sweeps_the_scenario_run_generates(tmp_path: Path) -> None:
    """sweep k8s/ runs the scenario `probesim run k8s/` generates: its rows are those of a sweep
    of the printed scenario, byte for byte; a --set on a manifest field and on the generated
    spec both reach it."""
    k8s = tmp_path / "k8s"
    liveness = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 2, "failureThreshold": 1}
    write(k8s, "web.yaml", deployment(delay=0, livenessProbe=liveness), service())
    sets = [
        "--set",
        "deployment/web.spec.replicas=1,3",
        "--set",
        "spec.behavior.web.containers.app.start=0s,8s",
    ]
    sets += ["--set", "spec.duration=40s"]
    direct, printed = tmp_path / "direct.csv", tmp_path / "printed.csv"
    r = runner.invoke(app, ["sweep", str(k8s), *sets, "-o", str(direct), "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert "a generated scenario" in r.stderr and "Deployment web" in r.stderr
    scenario = tmp_path / "generated.yaml"
    scenario.write_text(runner.invoke(app, ["run", str(k8s), "--print-scenario"]).stdout, encoding="utf-8")
    r = runner.invoke(app, ["sweep", str(scenario), *sets, "-o", str(printed), "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert direct.read_bytes() == printed.read_bytes()
    with direct.open() as f:
        rows = list(csv.DictReader(f))
    assert [
        (r["deployment/web.spec.replicas"], r["spec.behavior.web.containers.app.start"]) for r in rows
    ] == [("1", "0s"), ("1", "8s"), ("3", "0s"), ("3", "8s")]
    # An app that answers 8 s after it starts, against a liveness probe that kills on one
    # failure every 2 s: restarted again and again; at once: never.
    restarts = {
        (r["deployment/web.spec.replicas"], r["spec.behavior.web.containers.app.start"]): int(
            r["workload[web].restarts"]
        )
        for r in rows
    }
    assert restarts[("1", "0s")] == restarts[("3", "0s")] == 0
    assert restarts[("1", "8s")] > 0 and restarts[("3", "8s")] > restarts[("1", "8s")]
