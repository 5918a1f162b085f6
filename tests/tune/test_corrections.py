"""tune judges settings against the app check stresses: each stress's app starts in its profile's
typical time (as check --stress runs it), and .probesim.yaml's profile corrections are taken as
check takes them — the start, the pause, the handlers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from probesim.profiles import ProfileCorrection, catalog
from probesim.tune.inputs import TuneInputs, load
from probesim.tune.objective import Run, plan
from probesim.tune.space import Space

POSTGRES = """\
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{name: pg, port: 5432, targetPort: 5432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16
          ports: [{containerPort: 5432}]
          readinessProbe: {exec: {command: [pg_isready, -U, postgres]}, periodSeconds: 10}
          livenessProbe: {tcpSocket: {port: 5432}, periodSeconds: 10}
"""


def runs(tmp_path: Path, corrections: tuple[ProfileCorrection, ...] = ()) -> dict[str, Run]:
    (tmp_path / "db.yaml").write_text(POSTGRES)
    got: TuneInputs = load([str(tmp_path / "db.yaml")], None, None, corrections)
    space = Space(got.workload, got.rule, got.added, got.app, got.handlers)
    return {r.label: r for r in plan(got, space, space.current())}


def start_ms(run: Run) -> int:
    return int(run.scenario.spec.behavior["db"].containers["postgres"].start)


def test_every_stress_starts_the_app_in_its_profiles_typical_time(tmp_path: Path) -> None:
    typical = catalog()["postgres"].start
    got = runs(tmp_path)
    assert typical.typical == 5_000 and typical.worst == 600_000
    assert start_ms(got["stress baseline"]) == 5_000  # was 0: an app up at once
    assert got["stress baseline"].app_start_ms == 5_000
    assert start_ms(got["profile slow start (PostgreSQL)"]) == 600_000


def test_a_probesim_yaml_correction_of_the_start_is_what_tune_runs(tmp_path: Path) -> None:
    fix = ProfileCorrection.model_validate({"workload": "db", "start": {"typical": "40s", "worst": "3m"}})
    got = runs(tmp_path, (fix,))
    assert start_ms(got["stress baseline"]) == 40_000
    assert start_ms(got["profile slow start (PostgreSQL)"]) == 180_000


def test_tune_reads_the_config_file_and_names_a_bad_one(tmp_path: Path) -> None:
    (tmp_path / "db.yaml").write_text(POSTGRES)
    (tmp_path / "bad.yaml").write_text("profiles:\n  - workload: db\n    profile: postgress\n")
    done = subprocess.run(
        [sys.executable, "-m", "probesim", "tune", str(tmp_path / "db.yaml"), "--config", str(tmp_path / "bad.yaml"),
         "--trials", "1", "--storage", f"sqlite:///{tmp_path / 't.db'}"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "bad.yaml:3" in done.stderr and "unknown profile 'postgress'" in done.stderr
    assert "Traceback" not in done.stderr
