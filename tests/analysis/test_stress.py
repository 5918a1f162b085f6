"""The simulated stress suite of probesim check --stress."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from probesim.analysis.stress import STRESSES, StressThresholds, apply, base_scenario, stress_suite
from probesim.cli import app
from probesim.manifests import kubernetes as k8s
from probesim.manifests.yamlsrc import load_docs
from tests.analysis.test_rules import GOOD, deployment

runner = CliRunner()


def objects(text: str) -> k8s.Objects:
    return k8s.parse(load_docs(text, "m.yaml"))


def test_default_load_model_and_each_stress() -> None:
    objs = objects(deployment(GOOD))
    w = objs.workloads[0]
    base = base_scenario(w, objs.services, None)
    sc = apply(base, w, "traffic-x3")
    assert sc is not None
    assert sc.spec.traffic[0].rate == 60.0  # 3 × 10 req/s × 2 replicas
    assert apply(base, w, "dependency-hangs") is None  # no dependency to hang
    assert apply(base, w, "cpu-limit-at-request") is None  # no CPU request to cap at
    pause = apply(base, w, "stop-the-world-2s")
    assert pause is not None
    assert pause.spec.behavior["web"].containers["app"].episodes[0].for_ == 2000
    start = apply(base, w, "start-x2")
    assert start is not None
    assert start.spec.behavior["web"].containers["app"].start == 20_000


def test_verdicts_against_thresholds() -> None:
    objs = objects(deployment(GOOD))
    results = {
        r.stress: r
        for r in stress_suite(objs.workloads, objs.services, None, StressThresholds(), processes=1)
    }
    assert set(results) == set(STRESSES)
    assert results["baseline"].verdict == "pass"
    bad = results["one-pod-500"]
    assert bad.verdict == "fail"
    assert 45 < bad.error_percent < 55  # one of two pods answers 500 to every request
    assert "errors" in bad.why
    lenient = stress_suite(
        objs.workloads, objs.services, None, StressThresholds(max_error_percent=60), processes=2
    )
    assert {r.stress: r.verdict for r in lenient}["one-pod-500"] == "pass"


def test_check_stress_reports_failures_as_findings(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(deployment(GOOD))
    r = runner.invoke(app, ["check", str(tmp_path / "m.yaml"), "--stress", "-f", "json"])
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert len(doc["stress"]) == len(STRESSES)
    assert [f["message"].split(":")[0] for f in doc["findings"] if f["rule"] == "PS100"] == ["one-pod-500"]
