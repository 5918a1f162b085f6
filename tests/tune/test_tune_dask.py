"""probesim tune --scheduler: a trial's simulations on a real Dask cluster (a scheduler and two
worker processes on 127.0.0.1) give the figures and the study of a local run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from tests.dask_cluster import local_cluster
from tests.tune.test_tune import SCENARIO, WEB

distributed = pytest.importorskip("distributed")
runner = CliRunner()


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    yield from local_cluster()


def test_trials_on_the_cluster_equal_local_trials(tmp_path: Path, scheduler: str) -> None:
    (tmp_path / "web.yaml").write_text(WEB)
    (tmp_path / "s.yaml").write_text(SCENARIO)

    def tune(db: str, *where: str) -> dict[str, Any]:
        args = [str(tmp_path / "web.yaml"), "--scenario", str(tmp_path / "s.yaml"), "--trials", "1"]
        r = runner.invoke(app, ["tune", *args, "--storage", f"sqlite:///{tmp_path / db}", "--json", *where])
        assert r.exit_code == 0, r.output
        doc: dict[str, Any] = json.loads(r.stdout)
        return doc

    local = tune("local.db", "--workers", "1")
    remote = tune("remote.db", "--scheduler", scheduler)
    assert remote == {**local, "storage": remote["storage"]}
    assert remote["trials"] == 1 and remote["current"]["figures"]["failed"] == 58000
