"""The GitHub Action (action.yml, composite) run as GitHub runs its steps, on this machine: each
step's `run` and `env` with their `${{ }}` expressions filled in from a pull request's context,
in a fixture repository of two commits, with no network — `probesim` is this tree's, `gh` a
stand-in that keeps the pull request's comments in a file and records every call. The install
step (pip) and the SARIF upload (a `uses:` step) are checked as written, not run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from probesim.report.diff_outputs import MARKER
from tests.cli.test_diff_git import git, repository

ROOT = Path(__file__).resolve().parents[1]
ACTION: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text())
STEPS = {s["id"]: s for s in ACTION["runs"]["steps"]}
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

FAKE_GH = """\
#!{python}
import json, os, sys
state = os.environ["FAKE_GH_STATE"]
args = sys.argv[1:]
with open(state + ".log", "a") as log:
    log.write(json.dumps(args) + "\\n")
with open(state) as f:
    comments = json.load(f)
method = args[args.index("--method") + 1] if "--method" in args else "GET"
path = next(a for a in args if a.startswith("repos/"))
body = None
if "-F" in args:
    field = args[args.index("-F") + 1]
    assert field.startswith("body=@"), field
    with open(field[len("body=@"):]) as f:
        body = f.read()
if method == "GET":  # two pages, as gh api --paginate prints them
    print(json.dumps(comments[:1]))
    print(json.dumps(comments[1:]))
elif method == "POST":
    comments.append({{"id": 100 + len(comments), "body": body}})
elif method == "PATCH":
    number = int(path.rsplit("/", 1)[1])
    next(c for c in comments if c["id"] == number)["body"] = body
with open(state, "w") as f:
    json.dump(comments, f)
"""
PROBESIM = """\
#!/bin/sh
PYTHONPATH="{src}" exec "{python}" -c "import sys; sys.argv[0] = 'probesim'; from probesim.cli import main; main()" "$@"
"""


def expand(text: str, context: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        assert m.group(1) in context, f"action.yml uses {m.group(1)!r}, which this test does not give"
        return context[m.group(1)]

    return EXPRESSION.sub(one, text)


def run_step(
    step_id: str, repo: Path, context: dict[str, str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    step = STEPS[step_id]
    assert step["shell"] == "bash"
    step_env = {**env, **{k: expand(str(v), context) for k, v in step.get("env", {}).items()}}
    return subprocess.run(
        ["bash", "-e", "-c", expand(step["run"], context)],
        cwd=repo, env=step_env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_the_action_is_composite_with_the_issues_inputs_and_steps() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"paths", "render", "scenario", "fail-on", "args", "comment"} <= set(ACTION["inputs"])
    assert ACTION["inputs"]["fail-on"]["default"] == "worse"
    assert [s["id"] for s in ACTION["runs"]["steps"]] == ["install", "check", "upload", "diff"]
    # probesim from the action's own checkout: no index but pip's.
    assert STEPS["install"]["run"] == 'python3 -m pip install --quiet "${{ github.action_path }}"'
    upload = STEPS["upload"]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ steps.check.outputs.sarif }}"
    assert upload["if"].startswith("${{ always() && inputs.upload-sarif == 'true'")


def test_the_actions_steps_run_locally_and_update_one_comment(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("gh", FAKE_GH), ("probesim", PROBESIM)):
        (bin_dir / name).write_text(text.format(python=sys.executable, src=ROOT / "src"))
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "comments.json"
    state.write_text(json.dumps([{"id": 7, "body": "LGTM"}]))  # another reviewer's comment
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_REPOSITORY": "acme/shop",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
        "RUNNER_TEMP": str(runner_temp),
        "FAKE_GH_STATE": str(state),
    }
    context = {
        "github.action_path": str(ROOT),
        "github.action_repository": "acme/probesim",
        "github.action_ref": "v1",
        "github.event.pull_request.base.sha": git(repo, "rev-parse", "HEAD~1"),
        "github.event.pull_request.number": "7",
        "inputs.paths": "k8s",
        "inputs.render": "",
        "inputs.scenario": "",
        "inputs.fail-on": "worse",
        "inputs.check-fail-on": "never",
        "inputs.args": "--workers 1",
        "inputs.check-args": "",
        "inputs.comment": "true",
        "inputs.rules-url": "",
        "inputs.token": "not-a-token",
    }
    check = run_step("check", repo, context, env)
    assert check.returncode == 0, check.stderr
    sarif_path = runner_temp / "probesim.sarif"
    assert f"sarif={sarif_path}\n" in outputs.read_text()
    sarif = json.loads(sarif_path.read_text())
    assert sarif["version"] == "2.1.0"
    assert sarif["runs"][0]["properties"]["linted"][0]["file"] == "k8s/web.yaml"

    first = run_step("diff", repo, context, env)
    assert first.returncode == 1, first.stdout + first.stderr  # the timeout lowered to 1 s: worse
    assert "probesim diff: commented on the pull request" in first.stdout
    body = summary.read_text()
    assert body.startswith(f"{MARKER}\n### probesim diff: 2 figures worse\n")
    assert "| needless restarts | traffic-x3 | 0 | 12 | **worse** |" in body
    comments = json.loads(state.read_text())
    assert comments == [{"id": 7, "body": "LGTM"}, {"id": 101, "body": body}]

    # The next push: the same comment updated, not a second one.
    second = run_step("diff", repo, context, env)
    assert second.returncode == 1
    assert "updated the pull request's comment 101" in second.stdout
    assert [c["id"] for c in json.loads(state.read_text())] == [7, 101]
    calls = [json.loads(line) for line in Path(f"{state}.log").read_text().splitlines()]
    assert [c[:3] for c in calls] == [
        ["api", "--paginate", "repos/acme/shop/issues/7/comments"],
        ["api", "--method", "POST"],
        ["api", "--paginate", "repos/acme/shop/issues/7/comments"],
        ["api", "--method", "PATCH"],
    ]
    assert calls[3][3] == "repos/acme/shop/issues/comments/101"
    assert f"markdown={runner_temp / 'probesim-diff.md'}\n" in outputs.read_text()

    # Not a pull request: nothing to compare, no comment.
    push = run_step("diff", repo, context, {**env, "GITHUB_EVENT_NAME": "push"})
    assert (push.returncode, "runs on pull requests (this is push)" in push.stdout) == (0, True)
    assert len(Path(f"{state}.log").read_text().splitlines()) == 4
