"""The README's quick tour runs as written (issue 27): each of its commands on a folder of
manifests (k8s/) and the scenario printed from it (s.yaml), those that run offline in seconds.
The chart of ``helm template ./chart |`` is the folder's manifest on standard input; tune runs 2
trials instead of 24."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from tests.analysis.test_rules import GOOD, deployment

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


def tour() -> list[str]:
    """The tour's command lines that use the user's own files (k8s/, s.yaml) or nothing at all."""
    block = README.read_text().split("## Quick tour", 1)[1].split("```", 2)[1]
    lines = [re.split(r"\s#\s", ln, maxsplit=1)[0].strip() for ln in block.splitlines()]
    offline = ("probesim scenarios", "probesim schema > scenario.schema.json", "probesim check . -v")
    keep = [
        ln
        for ln in lines
        if re.search(r"(^|\s)(k8s/|s\.yaml)(\s|$)", ln)
        or ln.startswith("helm template ./chart |")
        or ln in offline
    ]
    return [ln for ln in keep if "\\" not in ln and "lab " not in ln]


def test_the_tour_names_the_commands_this_test_runs() -> None:
    assert tour() == [
        "probesim run k8s/",
        "probesim run k8s/ --print-scenario > s.yaml",
        "helm template ./chart | probesim run - --rate 200 --start 30s",
        "probesim tune k8s/ --scenario s.yaml --workload web -o patch.yaml",
        "probesim scenarios",
        "probesim sweep k8s/ --set deployment/web.spec.replicas=1,2,3 -o rows.csv",
        "probesim check k8s/ --format sarif -o probesim.sarif",
        "probesim check . -v",
        "helm template ./chart | probesim check - --scenario s.yaml --stress",
        "probesim diff --git main...HEAD -- k8s/",
        "probesim diff k8s-main/ k8s/ -f markdown -o diff.md",
        "probesim run k8s/ --workload Deployment/web --stress traffic-x2",
        "probesim schema > scenario.schema.json",
    ]


def test_each_command_of_the_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k8s").mkdir()
    manifest = deployment(GOOD)
    (tmp_path / "k8s" / "web.yaml").write_text(manifest)
    # probesim diff's: the folder as main has it (a branch of this repository, and a copy).
    shutil.copytree(tmp_path / "k8s", tmp_path / "k8s-main")
    for git in (["init", "-q", "-b", "main"], ["add", "k8s"],
                ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "k8s"]):  # fmt: skip
        subprocess.run(["git", *git], cwd=tmp_path, check=True, capture_output=True)
    for line in tour():
        stdin = None
        if line.startswith("helm template ./chart | "):
            line, stdin = line.removeprefix("helm template ./chart | "), manifest
        redirect = None
        if " > " in line:
            line, redirect = (p.strip() for p in line.split(" > "))
        args = shlex.split(line)[1:]
        if args[0] == "tune":
            args += ["--trials", "2"]
        r = runner.invoke(app, args, input=stdin)
        assert r.exit_code == 0, f"{line}: {r.output[-600:]}"
        assert "Traceback" not in r.output and "error:" not in r.output, line
        if redirect:
            (tmp_path / redirect).write_text(r.stdout)
    assert (tmp_path / "rows.csv").is_file()  # patch.yaml: only when a trial beats the current probes
    assert (
        (tmp_path / "diff.md")
        .read_text()
        .startswith("<!-- probesim-diff -->\n### probesim diff: no change\n")
    )
    sarif = json.loads((tmp_path / "probesim.sarif").read_text())
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is True
    assert re.search(r"kind: Scenario", (tmp_path / "s.yaml").read_text())
