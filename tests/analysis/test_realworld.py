"""probesim check on the public manifests of ../shared/realworld, read in place: no valid object
stops it, and each project's findings equal the reviewed expectations (so a rule change that adds
noise fails here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.analysis.check import check
from probesim.cli import app
from probesim.errors import InputError
from tests.analysis.realworld_expected import EXPECTED, LINTED, STOPS, WHOLE_EXTRA

REALWORLD = Path(__file__).resolve().parents[2].parent / "shared" / "realworld"
pytestmark = pytest.mark.skipif(
    not REALWORLD.is_dir(), reason="the shared real-world corpus is not beside the project"
)
runner = CliRunner()


@pytest.mark.parametrize("project", sorted(EXPECTED))
def test_findings_equal_the_reviewed_expectations(project: str) -> None:
    root = REALWORLD / project
    report = check([str(root)])
    got = [
        f"{f.rule.id} {f.key} {f.container or '-'} {Path(f.file).relative_to(root)}:{f.line}"
        for f in sorted(report.findings, key=lambda f: (f.file, f.line, f.rule.id, f.container))
    ]
    assert got == EXPECTED[project]


def test_only_the_unrendered_chart_stops_and_the_selectorless_base_is_an_error_entry() -> None:
    with pytest.raises(InputError) as e:
        check([str(REALWORLD / "podinfo-chart")])
    assert STOPS["podinfo-chart"] in str(e.value)
    r = runner.invoke(app, ["check", str(REALWORLD / "podinfo-chart")])
    assert r.exit_code == 2
    assert r.output.startswith("error: ") and r.output.count("\n") == 1 and "Traceback" not in r.output
    # The kustomize base is read whole: its one invalid object is an error entry (exit 2).
    report = check([str(REALWORLD / "metrics-server")])
    assert [STOPS["metrics-server"] in str(e) for e in report.errors] == [True]
    r = runner.invoke(app, ["check", str(REALWORLD / "metrics-server")])
    assert r.exit_code == 2 and r.output.startswith("error: ") and "Traceback" not in r.output


def test_every_project_is_covered() -> None:
    assert sorted(p.name for p in REALWORLD.iterdir() if p.is_dir()) == sorted([*EXPECTED, *STOPS])


def test_the_whole_corpus_in_one_run_exits_on_findings_not_on_input() -> None:
    # Everything at once, less the two that must stop: exit 1 (findings), never 2.
    paths = [str(REALWORLD / p) for p in sorted(EXPECTED)]
    r = runner.invoke(app, ["check", *paths, "-f", "json", "--fail-on", "warning"])
    assert r.exit_code == 1, r.output[-500:]


def test_the_whole_corpus_as_one_directory_finishes_in_one_run() -> None:
    # One argument, every project: the selectorless base is the one error entry, the chart is
    # read past, and the findings are each project's own, in its own files, plus WHOLE_EXTRA.
    report = check([str(REALWORLD)])
    assert [STOPS["metrics-server"] in str(e) for e in report.errors] == [True]
    assert any(s.file == str(REALWORLD / "podinfo-chart") for s in report.skipped)
    got = sorted(
        f"{f.rule.id} {f.key} {f.container or '-'} {Path(f.file).relative_to(REALWORLD)}:{f.line}"
        for f in report.findings
    )
    want = sorted(
        [" ".join([*e.split(" ")[:3], f"{p}/{e.split(' ')[3]}"]) for p in EXPECTED for e in EXPECTED[p]]
        + WHOLE_EXTRA
    )
    assert got == want
    r = runner.invoke(app, ["check", str(REALWORLD), "-f", "sarif"])
    assert r.exit_code == 2
    assert r.stdout.startswith("{") and r.stderr.startswith("error: ")  # the report on exit 2 too


@pytest.mark.parametrize("project", sorted(LINTED))
def test_each_project_lints_its_workloads(project: str) -> None:
    report = check([str(REALWORLD / project)])
    assert len(report.linted) == LINTED[project]
    assert sorted(LINTED) == sorted([*EXPECTED, "metrics-server"])
