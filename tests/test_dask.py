"""A sweep on a real Dask distributed cluster (a scheduler and two worker processes on
127.0.0.1) gives the rows of a local run, bit for bit."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from tests.dask_cluster import local_cluster

distributed = pytest.importorskip("distributed")
runner = CliRunner()
SWEEP = [
    "sweep",
    "patient-delays-liveness",
    "--set",
    "deployment/patient.spec.replicas=1,2",
    "--set",
    "spec.seed=4,9",
]


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    yield from local_cluster()


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_cluster_rows_equal_local_rows(tmp_path: Path, scheduler: str) -> None:
    local, remote = tmp_path / "local.csv", tmp_path / "remote.csv"
    r = runner.invoke(app, [*SWEEP, "-o", str(local), "--workers", "1"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*SWEEP, "-o", str(remote), "--scheduler", scheduler])
    assert r.exit_code == 0, r.output
    assert local.read_bytes() == remote.read_bytes()
    assert [(x["deployment/patient.spec.replicas"], x["seed"]) for x in rows(remote)] == [
        ("1", "4"), ("1", "9"), ("2", "4"), ("2", "9")
    ]  # fmt: skip


def test_unreachable_scheduler_is_an_input_error(tmp_path: Path) -> None:
    r = runner.invoke(app, [*SWEEP, "-o", str(tmp_path / "x.csv"), "--scheduler", "http://127.0.0.1:1"])
    assert r.exit_code == 2 and "give the scheduler's address as tcp://host:port" in r.output
