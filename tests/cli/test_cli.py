"""The command line: what a user types and sees, exit codes, JSON, schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from probesim.cli import app
from probesim.scenarios import builtins

runner = CliRunner()


def test_help_teaches_every_command() -> None:
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0
    for cmd in ("run", "demo", "scenarios", "schema"):
        assert cmd in r.output
    assert "Scenario file" in runner.invoke(app, ["run", "--help"]).output


def test_demo_table_marks_only_the_safe_combination() -> None:
    r = runner.invoke(app, ["demo"])
    assert r.exit_code == 0
    rows = [ln for ln in r.output.splitlines() if ln.strip().startswith(("on ", "off "))]
    assert len(rows) == 8
    assert [ln.split()[:4] for ln in rows if "safe" in ln] == [["on", "loose", "(5)", "on"]]
    events = runner.invoke(app, ["demo", "--events"]).output
    assert "t=14 pod-2 failed liveness; restarting (restart 1)" in events


def test_scenarios_lists_every_builtin_with_its_statement() -> None:
    out = runner.invoke(app, ["scenarios"]).output
    names = [b.name for b in builtins()]
    assert len(names) >= 8
    for b in builtins():
        assert b.name in out
        assert b.description


def test_run_json_is_versioned_and_complete() -> None:
    r = runner.invoke(app, ["run", "seed000-readiness", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert (doc["apiVersion"], doc["kind"], doc["scenario"]) == (
        "probesim.dev/v1alpha1",
        "Result",
        "seed000-readiness",
    )
    route = doc["summary"]["routes"][0]
    assert (route["offered"], route["ok"], route["failed"]) == (12, 12, 0)
    assert len(doc["series"]["time"]) == 6
    assert any(
        e["reason"] == "PodReady" and e["object"] == "pod/app-1" and e["time"] == 3 for e in doc["events"]
    )


def test_run_prints_summary_and_events() -> None:
    r = runner.invoke(app, ["run", "seed000-slow-start-killed"])
    assert r.exit_code == 0
    assert "Back-off restarting failed container app in pod app-1_default" in r.output
    assert "Restarts by pod: app-1 6" in r.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "error: /nonexistent.yaml: no such file, and no built-in scenario of that name"),
        ("kind: [", "YAML syntax error"),
        ("apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec: {duration: 10}\n",
         ":4: Scenario: spec.duration: duration 10 has no unit"),
    ],
)  # fmt: skip
def test_bad_input_exits_2_with_one_clear_line(tmp_path: Path, content: str | None, expected: str) -> None:
    path = "/nonexistent.yaml"
    if content is not None:
        p = tmp_path / "bad.yaml"
        p.write_text(content)
        path = str(p)
    r = runner.invoke(app, ["run", path])
    assert r.exit_code == 2
    assert expected in r.output
    assert "Traceback" not in r.output


def test_schema_validates_every_builtin_scenario() -> None:
    r = runner.invoke(app, ["schema"])
    schema = json.loads(r.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    for b in builtins():
        doc = next(d for d in yaml.safe_load_all(b.path.read_text()) if d.get("kind") == "Scenario")
        jsonschema.validate(doc, schema)
    bad = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "x"},
        "spec": {"duration": 5},
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_seed_override_and_stdin(tmp_path: Path) -> None:
    text = next(b for b in builtins() if b.name == "seed000-readiness").path.read_text()
    r = runner.invoke(app, ["run", "-", "--json", "--seed", "7", "--no-series"], input=text)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["seed"] == 7 and "series" not in doc


def test_manifests_from_standard_input_like_helm_template(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: piped}\n"
        "spec:\n  duration: 5s\n  behavior:\n    web: {containers: {app: {start: 2s}}}\n  traffic: [{rate: 1}]\n"
    )
    helm = (
        "---\n# Source: web/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec:\n      containers:\n      - name: app\n        readinessProbe: {httpGet: {path: /, port: 80}, periodSeconds: 1}\n"
        "---\n# Source: web/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: web}\n"
        "spec:\n  selector: {app: web}\n  ports: [{port: 80}]\n"
    )
    r = runner.invoke(app, ["run", str(scenario), "-m", "-", "--json", "--no-series"], input=helm)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["summary"]["routes"][0]["failed"] == 2  # no endpoint until the app answers at 2 s
    assert doc["summary"]["workloads"][0]["firstReady"] == 2


def test_plot_writes_a_png_of_the_run(tmp_path: Path) -> None:
    import matplotlib.image

    out = tmp_path / "run.png"
    r = runner.invoke(app, ["run", "seed000-slow-start-killed", "--no-events", "--plot", str(out)])
    assert r.exit_code == 0, r.output
    img = matplotlib.image.imread(out)
    assert img.shape[0] > 400
    assert img.shape[1] > 800
    bad = runner.invoke(app, ["run", "seed000-readiness", "--plot", str(tmp_path / "missing" / "x.png")])
    assert bad.exit_code == 2
    assert "cannot write the plot" in bad.output
