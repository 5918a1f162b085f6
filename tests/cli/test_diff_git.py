"""probesim diff --git A..B -- PATH...: both sides read from a fixture repository's revisions
(git init and two commits in the test's folder), named by their paths in the repository; a
render command run in each revision's tree; unknown revisions and a folder outside any
repository are one line, exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from tests.analysis.test_diff import AFTER_1S, BEFORE

runner = CliRunner()
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: '1'}\n"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def repository(tmp_path: Path) -> Path:
    """A repository of two commits: the first with k8s/web.yaml, the second lowering its
    liveness timeout to 1 s and adding k8s/extra/cm.yaml (and a file outside k8s/)."""
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "ci")
    (repo / "k8s" / "web.yaml").write_text(BEFORE)
    (repo / "README.md").write_text("# app\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "web")
    (repo / "k8s" / "web.yaml").write_text(AFTER_1S)
    (repo / "k8s" / "extra").mkdir()
    (repo / "k8s" / "extra" / "cm.yaml").write_text(CM)
    (repo / "other.yaml").write_text(CM.replace("settings", "elsewhere"))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "lower the liveness timeout")
    return repo


def diff_json(args: list[str], code: int) -> dict[str, Any]:
    r = runner.invoke(app, ["diff", "-f", "json", *args])
    assert r.exit_code == code, r.output[-2000:]
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_a_git_range_reads_both_revisions_of_the_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repository(tmp_path)
    monkeypatch.chdir(repo)
    first, second = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    doc = diff_json(["--git", "HEAD~1..HEAD", "--", "k8s"], 1)
    assert (doc["before"], doc["after"]) == (f"HEAD~1 ({first[:12]})", f"HEAD ({second[:12]})")
    w = doc["workloads"][0]
    # Files are named by their paths in the repository, not the temporary folders they were read from.
    assert (w["before"]["file"], w["after"]["file"]) == ("k8s/web.yaml", "k8s/web.yaml")
    assert [f["path"] for c in w["changes"] for f in c["fields"]] == [
        "spec.template.spec.containers[app].livenessProbe.timeoutSeconds"
    ]
    assert w["verdict"] == "worse"
    # Only the paths given are read: other.yaml, outside k8s/, is in neither side.
    assert [(r["key"], r["file"]) for r in doc["added"]] == [
        ("ConfigMap/default/settings", "k8s/extra/cm.yaml")
    ]
    # A commit's SHA (what a pull request's event gives) is named by its first 12 characters.
    assert diff_json(["--git", f"{first}..HEAD", "--", "k8s"], 1)["before"] == first[:12]
    # A...B compares B with where it forked from A (what a pull request merges).
    doc = diff_json(["--git", "main~1...main", "--", "k8s/"], 1)
    assert doc["before"] == f"merge-base of main~1 and main ({first[:12]})"
    # A alone: A against the files as they are now (a change not committed yet).
    (repo / "k8s" / "web.yaml").write_text(BEFORE)
    doc = diff_json(["--git", "HEAD", "--", "k8s"], 1)
    assert doc["after"] == "the working tree"
    # Back to 5 s: no restart under the surge, but a hung pod's liveness now waits 5 s a check.
    moved = {
        (f["figure"], f["run"], f["verdict"])
        for f in doc["workloads"][0]["figures"]
        if f["verdict"] != "same"
    }
    assert ("needless restarts", "stress traffic-x3", "better") in moved
    assert ("replicas back after a hang", None, "worse") in moved
    assert doc["workloads"][0]["changes"][0]["fields"][0] == {
        "path": "spec.template.spec.containers[app].livenessProbe.timeoutSeconds",
        "before": "1",
        "after": "5",
    }
    assert doc["removed"] == []  # cm.yaml is there on both sides


def test_a_render_command_runs_in_each_revisions_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repository(tmp_path)
    monkeypatch.chdir(repo)
    # A stand-in for helm template: a command whose output is the manifests, run where each
    # revision's files are.
    doc = diff_json(["--git", "HEAD~1..HEAD", "--render", "cat k8s/web.yaml", "--", "k8s"], 1)
    w = doc["workloads"][0]
    assert w["after"]["file"] == f"<cat k8s/web.yaml at HEAD ({git(repo, 'rev-parse', 'HEAD')[:12]})>"
    assert w["verdict"] == "worse"
    assert doc["added"] == []  # the command prints web.yaml only
    r = runner.invoke(app, ["diff", "--git", "HEAD~1..HEAD", "--render", "exit 3", "--", "k8s"])
    assert r.exit_code == 2
    assert "--render 'exit 3' failed at HEAD~1" in r.output


def test_git_input_errors_are_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repository(tmp_path)
    monkeypatch.chdir(repo)
    for args, said in (
        (["--git", "nope..HEAD", "--", "k8s"], "unknown revision 'nope'"),
        (["--git", "HEAD~1..HEAD", "--", "../elsewhere"], "is outside the repository"),
        (["--git", "-x..HEAD"], "'-x' is not a revision"),
    ):
        r = runner.invoke(app, ["diff", *args])
        assert (r.exit_code, r.output.count("\n")) == (2, 1), r.output
        assert said in r.output, r.output
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    monkeypatch.chdir(outside)
    r = runner.invoke(app, ["diff", "--git", "HEAD~1..HEAD"])
    assert r.exit_code == 2
    assert "--git reads revisions of the git repository the current folder is in" in r.output
