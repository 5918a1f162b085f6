"""Every report says what it linted (issue 40: the 'clean project' summary), paths in tables are
shown whole, and a stress finding names the command that runs that stress again."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from xml.etree import ElementTree as ET

from rich.console import Console
from typer.testing import CliRunner

from probesim.analysis.check import CheckReport, check
from probesim.analysis.stress_verdicts import StressResult
from probesim.cli import app
from probesim.manifests.kubernetes import Skipped
from probesim.report.check_outputs import render_text

runner = CliRunner()

CLEAN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: web:1
          resources: {requests: {cpu: 100m}}  # what the HPA's utilization is a share of
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: jobs}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: run:1}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 6
---
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db}
    spec:
      serviceName: db
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec: {containers: [{name: db, image: db:1}]}
"""


def test_a_clean_project_says_what_it_linted_in_every_format(tmp_path: Path) -> None:
    path = str(tmp_path / "clean.yaml")
    Path(path).write_text(CLEAN)
    text = runner.invoke(app, ["check", path])
    assert text.exit_code == 0
    # Not "in 0 objects": three workloads were linted.
    assert text.output == "0 errors, 0 warnings, 0 info; 3 workloads linted by 42 rules over 1 file\n"
    linted = [
        {"kind": "Deployment", "namespace": "default", "name": "web", "file": path, "line": 1, "apiVersion": "apps/v1",
         "scaledBy": {"kind": "HorizontalPodAutoscaler", "name": "web", "minReplicas": 1, "maxReplicas": 6}},
        {"kind": "Job", "namespace": "jobs", "name": "migrate", "file": path, "line": 14, "apiVersion": "batch/v1"},
        {"kind": "StatefulSet", "namespace": "default", "name": "db", "file": path, "line": 34, "apiVersion": "apps/v1"},
    ]  # fmt: skip
    assert json.loads(runner.invoke(app, ["check", path, "-f", "json"]).output)["linted"] == linted
    sarif = json.loads(runner.invoke(app, ["check", path, "-f", "sarif"]).output)
    assert sarif["runs"][0]["properties"]["linted"] == linted
    # JUnit: a test case per linted workload and rule, each passed.
    xml = ET.fromstring(runner.invoke(app, ["check", path, "-f", "junit"]).output.split("\n", 1)[1])
    cases = xml.findall(".//testcase")
    assert len(cases) == 3 * 42 and not xml.findall(".//failure")
    assert sorted({c.get("classname") for c in cases}) == [
        f"Deployment/default/web ({path})",
        f"Job/jobs/migrate ({path})",
        f"StatefulSet/default/db ({path})",
    ]
    verbose = runner.invoke(app, ["check", path, "-v"]).output
    assert "scaled by HorizontalPodAutoscaler web (1-6 replicas)" in verbose


def test_findings_still_count_their_objects_beside_the_workloads_linted(tmp_path: Path) -> None:
    bad = CLEAN.replace("          image: web:1\n", "          image: web:1\n          livenessProbe: "
                        "{exec: {command: [x]}, failureThreshold: 1, timeoutSeconds: 5}\n")  # fmt: skip
    (tmp_path / "m.yaml").write_text(bad)
    r = runner.invoke(app, ["check", str(tmp_path / "m.yaml")])
    assert r.output.splitlines()[-1] == (
        "1 error, 0 warnings, 0 info in 1 object; 3 workloads linted by 42 rules over 1 file"
    )


def column(lines: list[str], header: str, following: str) -> str:
    """The text of one table column, its wrapped lines joined: from the header line's offset of
    ``header`` to that of ``following``."""
    head = next(i for i, ln in enumerate(lines) if header in ln and following in ln)
    start, end = lines[head].index(header), lines[head].index(following)
    rows = lines[head + 2 :]
    rows = rows[: next((i for i, ln in enumerate(rows) if not ln.strip()), len(rows))]  # to the table's end
    return "".join(ln[start:end].strip() for ln in rows)


LONG = "deploy/environments/production-eu-west-1/argo-rollouts-canary/manifests/rollout-with-analysis.yaml"


def test_paths_in_tables_are_shown_whole_wrapped_never_cut() -> None:
    report = CheckReport(
        skipped=[Skipped("ConfigMap", "settings", "default", LONG, 12, "holds no pod template or probe")],
        stress=[
            StressResult(
                0,
                f"Deployment/web ({LONG.rsplit('/', 1)[0]})",
                "default",
                "rollout",
                0.0,
                0,
                1.0,
                0.0,
                "pass",
            )
        ],
    )
    for width in (80, 120):  # the columns' text whole, each on its own lines where narrow
        console = Console(width=width, record=True)
        render_text(report, console, verbose=True)
        lines = console.export_text().splitlines()
        assert "…" not in console.export_text()
        assert column(lines, "WHERE", "WHY") == f"{LONG}:12"
        assert (
            column(lines, "WORKLOAD", "STRESS") == f"Deployment/web({LONG.rsplit('/', 1)[0]})"
        )  # wrapped at the space


STRESSED = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          resources: {requests: {cpu: 100m}}
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /ready, port: 8080}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
"""


def rerun(command: str) -> str:
    """Run a PS100 fix's command (``probesim run …``) and return its output."""
    args = shlex.split(command.split(": ", 1)[1])
    assert args[:2] == ["probesim", "run"]
    r = runner.invoke(app, args[1:])
    assert r.exit_code == 0, r.output
    return r.output


def test_a_stress_finding_names_the_command_that_runs_it_again(tmp_path: Path) -> None:
    path = str(tmp_path / "web.yaml")
    Path(path).write_text(STRESSED)
    report = check([path], stress=True)
    ps100 = [f for f in report.findings if f.rule.id == "PS100"]
    # A single replica with maxSurge 0: a release that never becomes Ready leaves no endpoint.
    assert [f.message.split(":")[0] for f in ps100] == ["rollout-never-ready"]
    assert ps100[0].remediation == (
        f"see the stress's timeline: probesim run {path} --workload Deployment/default/web --stress rollout-never-ready"
    )
    out = rerun(ps100[0].remediation)
    assert "web-stress" in out and "Readiness probe failed: HTTP probe failed with statuscode: 503" in out
    assert "not complete at the end" in out  # the rollout stalls, as check judged it


def test_variants_and_a_scenario_are_named_in_the_command(tmp_path: Path) -> None:
    # Two folders with the same Deployment (variants): the command says which file.
    for folder, replicas in (("base", 1), ("overlay", 3)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "web.yaml").write_text(STRESSED.replace("replicas: 1", f"replicas: {replicas}"))
    report = check([str(tmp_path)], stress=True)
    base = [f for f in report.findings if f.rule.id == "PS100" and "/base/" in f.file]
    assert [f.message.split(":")[0] for f in base] == ["rollout-never-ready"]
    command = base[0].remediation
    assert f"--workload Deployment/default/web@{tmp_path}/base/web.yaml" in command
    assert "not complete at the end" in rerun(command)
    # Ambiguous without the file: run says which to give.
    r = runner.invoke(app, ["run", str(tmp_path), "--workload", "Deployment/web", "--stress", "baseline"])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --workload: Deployment/web names several workloads: give one of ")
    # With a scenario, check's command runs the scenario file (its behaviour and traffic).
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nmanifests: [base/web.yaml]\n"
        "spec:\n  duration: 5m\n  behavior: {web: {containers: {app: {start: 5s}}}}\n"
        "  traffic: [{service: web, path: /, rate: 2, start: 30s}]\n"
    )
    r2 = check([str(tmp_path / "base" / "web.yaml")], stress=True, given=([], str(scenario)),
               scenario=_load(str(scenario)))  # fmt: skip
    commands = {f.remediation for f in r2.findings if f.rule.id == "PS100"}
    named = f"see the stress's timeline: probesim run {scenario} --workload Deployment/default/web --stress "
    assert commands and all(c.startswith(named) for c in commands)
    assert "not complete at the end" in rerun(named + "rollout-never-ready")


LIVE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: example.com/web:1
          resources: {requests: {cpu: 100m}}
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /ready, port: 8080}}
          livenessProbe: {httpGet: {path: /live, port: 8080}, periodSeconds: 10, failureThreshold: 3}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
"""


def test_the_command_of_a_stress_shaped_by_a_profile_correction_reads_the_same_config(tmp_path: Path) -> None:
    """.probesim.yaml says the app starts in a minute: liveness (no delay, 3 × 10 s) kills it at
    30 s, so the baseline stress fails — and the command the finding names reads that file, or
    its run would start the app at once and show nothing wrong."""
    from probesim.analysis.check import load_config

    path = tmp_path / "web.yaml"
    path.write_text(LIVE)
    cfg = tmp_path / "probesim.yaml"
    cfg.write_text("profiles:\n  - workload: web\n    start: {typical: 60s, worst: 90s}\n")
    report = check([str(path)], config=load_config(str(cfg)), stress=True)
    baseline = [f for f in report.findings if f.rule.id == "PS100" and f.message.startswith("baseline")]
    assert len(baseline) == 1, [f.message for f in report.findings if f.rule.id == "PS100"]
    command = baseline[0].remediation
    assert command.endswith(f"--stress baseline --config {cfg}")
    out = rerun(command)
    assert "Liveness probe failed" in out and "Killing" in out
    without = rerun(command.removesuffix(f" --config {cfg}"))
    assert "Killing" not in without
    r = runner.invoke(app, ["run", str(path), "--config", str(cfg)])
    assert r.exit_code == 2 and "--config goes with --stress" in r.stderr


def _load(path: str):  # type: ignore[no-untyped-def]
    from probesim.manifests.scenario import load_scenario

    return load_scenario(path)


def test_run_stress_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    path = str(tmp_path / "web.yaml")
    Path(path).write_text(STRESSED)
    cases = {
        ("--workload", "Deployment/web"): "error: --stress: --stress and --workload go together",
        ("--workload", "Deployment/api", "--stress", "baseline"): "error: --workload: no workload Deployment/api",
        ("--workload", "Deployment/web", "--stress", "flood"): "error: --stress: unknown stress 'flood'; the stresses",
        ("--workload", "Deployment/web", "--stress", "one-pod-500"): "error: --stress: one-pod-500 is not run on "
        "Deployment web: one pod of one answering 500",
        ("--workload", "Deployment/web", "--stress", "baseline", "--rate", "5"): "error: --rate: --stress runs "
        "the stress as check simulates it",
    }  # fmt: skip
    for args, said in cases.items():
        r = runner.invoke(app, ["run", path, *args])
        assert r.exit_code == 2 and r.stderr.startswith(said), (args, r.stderr)


EXEC_PROBES = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: server
          image: api:1
          ports: [{containerPort: 8080}]
          readinessProbe:
            exec: {command: [/bin/check]}
          livenessProbe:
            exec: {command: [/bin/check]}
"""


def test_a_containers_merged_fix_is_said_once_and_the_other_findings_point_back_to_it(tmp_path: Path) -> None:
    # The container's fixes are merged into one change, so PS015 (both probes) and PS003 carry
    # the same fix text: said whole once, naming the findings it also answers, never repeated.
    (tmp_path / "api.yaml").write_text(EXEC_PROBES)
    report = check([str(tmp_path / "api.yaml")])
    fixes = [f.remediation for f in report.findings if f.rule.id in ("PS003", "PS015")]
    assert len(fixes) == 3 and len(set(fixes)) == 1  # the premise: one merged fix, three findings
    console = Console(width=400, record=True)
    render_text(report, console)
    text = console.export_text()
    lines = {f.rule.id: f.line for f in report.findings}
    first = min((f for f in report.findings if f.remediation == fixes[0]), key=lambda f: f.line)
    assert text.count(fixes[0]) == 1
    assert text.count(f"fix: the one above ({first.rule.id}, line {first.line})") == 2
    assert "(also answers PS003 line " in text and f"PS015 line {lines['PS003']}" in text
