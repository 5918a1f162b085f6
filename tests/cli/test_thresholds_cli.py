"""probesim run's verdicts for a pipeline: thresholds from the scenario and --threshold, their
table, --json and --junit, exit 99 when one is crossed, exit 2 for a bad line; and probesim lab
--compare's exit 1 when the lab and the simulation disagree (on made results: no process)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from probesim.engine import simulate
from probesim.results import CAUSES, Result
from probesim.scenarios import find
from tests.builders import builtin

runner = CliRunner()


def scenario_with(tmp_path: Path, lines: list[str]) -> Path:
    """seed000-no-readiness (3 of 12 requests fail, no restart) with these thresholds."""
    b = find("seed000-no-readiness")
    assert b is not None
    text = b.path.read_text(encoding="utf-8")
    spec = "\nspec:\n"
    assert spec in text
    block = "".join(f"    - {json.dumps(line)}\n" for line in lines)
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(spec, f"{spec}  thresholds:\n{block}", 1), encoding="utf-8")
    return path


def test_thresholds_that_hold_exit_0_and_show_their_values(tmp_path: Path) -> None:
    path = scenario_with(tmp_path, ["errors: rate<=25%"])
    r = runner.invoke(app, ["run", str(path), "--no-events", "--threshold", "restarts: ==0"])
    assert r.exit_code == 0, r.output
    rows = [ln.split() for ln in r.output.splitlines() if ln.strip().startswith(("✓", "✗"))]
    assert rows == [
        ["✓", "errors:", "rate<=25%", "25.00", "%", "route", "/"],
        ["✓", "restarts:", "==0", "0", "all", "workloads"],
    ]
    assert "all 2 thresholds hold" in r.output


def test_a_crossed_threshold_exits_99_in_text_and_json(tmp_path: Path) -> None:
    path = scenario_with(tmp_path, ["errors: count<3"])
    r = runner.invoke(app, ["run", str(path), "--no-events"])
    assert r.exit_code == 99
    assert "✗" in r.output and "1 of 1 thresholds crossed" in r.output
    r = runner.invoke(app, ["run", str(path), "--json", "--no-series", "--threshold", "ready: min>=2"])
    assert r.exit_code == 99
    doc = json.loads(r.output)
    assert [(t["threshold"], t["value"], t["ok"]) for t in doc["thresholds"]] == [
        ("errors: count<3", 3, False),
        ("ready: min>=2", 2, True),
    ]
    assert doc["thresholds"][0] == {
        "threshold": "errors: count<3",
        "metric": "errors",
        "aggregation": "count",
        "tag": None,
        "op": "<",
        "limit": 3.0,
        "value": 3,
        "unit": "count",
        "of": "route /",
        "ok": False,
    }


def test_junit_has_a_test_case_per_threshold(tmp_path: Path) -> None:
    out = tmp_path / "thresholds.xml"
    args = ["run", "seed000-no-readiness", "--no-events", "--junit", str(out)]
    r = runner.invoke(
        app, [*args, "--threshold", "errors{route:/}: rate<0.1", "--threshold", "restarts: ==0"]
    )
    assert r.exit_code == 99
    root = ET.fromstring(out.read_text(encoding="utf-8"))
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "2", "1")
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["errors{route:/}: rate<0.1", "restarts: ==0"]
    assert {c.get("classname") for c in cases} == {"probesim run seed000-no-readiness"}
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("message") == "25.00 % on route /"
    assert cases[1].find("failure") is None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--threshold", "erors: rate<0.01"],
            "error: --threshold: 'erors: rate<0.01': unknown metric 'erors'",
        ),
        (["--threshold", "p95{route:/api}: <1s"], "no route '/api' in this scenario; routes: /"),
        (["--threshold", "errors: rate<2"], "a rate is a share from 0 to 1"),
        (["--junit", "/no/such/folder/x.xml"], "cannot write the JUnit report: no such folder"),
    ],
)
def test_bad_thresholds_exit_2_with_a_clear_line(args: list[str], says: str) -> None:
    r = runner.invoke(app, ["run", "seed000-no-readiness", *args])
    assert r.exit_code == 2
    assert says in " ".join(r.output.split())
    assert "Traceback" not in r.output


def test_a_bad_line_in_the_scenario_names_its_file_and_line(tmp_path: Path) -> None:
    path = scenario_with(tmp_path, ["restarts: ==0", "p95: <fast"])
    line = path.read_text(encoding="utf-8").splitlines().index('    - "p95: <fast"') + 1
    r = runner.invoke(app, ["run", str(path)])
    assert r.exit_code == 2
    assert f"{path}:{line}: Scenario: spec.thresholds[1]: 'p95: <fast': 'fast' is not a duration" in " ".join(
        r.output.split()
    )


def test_an_unknown_name_in_the_scenario_names_its_file_line_and_field(tmp_path: Path) -> None:
    path = scenario_with(tmp_path, ["restarts{workload:web}: ==0"])
    line = path.read_text(encoding="utf-8").splitlines().index('    - "restarts{workload:web}: ==0"') + 1
    r = runner.invoke(app, ["run", str(path)])
    assert r.exit_code == 2
    said = " ".join(r.output.split())
    assert (
        f"{path}:{line}: Scenario: spec.thresholds[0]: 'restarts{{workload:web}}: ==0': no workload" in said
    )


def lab_result(failed: int) -> Result:
    """The simulation's own run, as if measured, with ``failed`` of its 12 requests refused."""
    sim = simulate(builtin("seed000-no-readiness"))
    route = replace(sim.routes[0], ok=12 - failed, failed=dict.fromkeys(CAUSES, 0) | {"restarting": failed})
    return replace(sim, routes=[route], source="lab")


@pytest.mark.parametrize(("failed", "code"), [(3, 0), (9, 1)])
def test_lab_compare_exits_1_when_the_lab_disagrees(
    monkeypatch: pytest.MonkeyPatch, failed: int, code: int
) -> None:
    """The simulation fails 3 requests of 12: a lab failing 3 agrees, 9 does not (±2)."""
    import probesim.lab.orchestrator

    monkeypatch.setattr(probesim.lab.orchestrator, "run_lab", lambda *a, **k: lab_result(failed))
    r = runner.invoke(app, ["lab", "seed000-no-readiness", "--compare"])
    assert r.exit_code == code, r.output
    r = runner.invoke(app, ["lab", "seed000-no-readiness", "--compare", "--json"])
    assert r.exit_code == code
    assert json.loads(r.output)["comparison"]["agree"] is (code == 0)
    assert runner.invoke(app, ["lab", "seed000-no-readiness"]).exit_code == 0  # nothing compared
