"""probesim run --report and probesim report: the page written, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from probesim.cli import app

runner = CliRunner()


def test_run_report_and_report_write_the_same_page(tmp_path: Path) -> None:
    page = tmp_path / "run.html"
    r = runner.invoke(
        app, ["run", "seed000-strict-liveness", "--report", str(page), "--threshold", "restarts: ==0"]
    )
    assert r.exit_code == 99, r.output  # the threshold crossed; the page is written all the same
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<h2>Thresholds: 1 of 1 crossed</h2>" in text
    result = tmp_path / "result.json"
    r = runner.invoke(app, ["run", "seed000-strict-liveness", "--json", "--threshold", "restarts: ==0"])
    result.write_text(r.stdout, encoding="utf-8")
    again = tmp_path / "again.html"
    r = runner.invoke(app, ["report", str(result), "-o", str(again)])
    assert r.exit_code == 0, r.output
    assert again.read_text(encoding="utf-8") == text
    r = runner.invoke(app, ["report", "-", "-o", str(again)], input=result.read_text(encoding="utf-8"))
    assert r.exit_code == 0, r.output
    assert again.read_text(encoding="utf-8") == text
    check = tmp_path / "check.json"
    check.write_text(json.dumps({"kind": "CheckReport", "findings": []}), encoding="utf-8")
    r = runner.invoke(app, ["report", str(result), "-o", str(again), "--check", str(check)])
    assert r.exit_code == 0, r.output
    assert "No findings." in again.read_text(encoding="utf-8")


def test_report_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    out = str(tmp_path / "r.html")
    (tmp_path / "folder.html").mkdir()
    cases = [
        (
            ["report", str(bad), "-o", out],
            f"error: {bad}:1: not JSON (Expecting property name enclosed in double quotes, column 2): not a probesim result",
        ),
        (["report", str(bad), "-o", str(tmp_path / "r.png")], "the report is written to a .html file"),
        (
            ["report", str(bad), "-o", str(tmp_path / "no" / "r.html")],
            "cannot write the report: no such folder",
        ),
        (["report", str(tmp_path / "none.json"), "-o", out], "cannot read: No such file or directory"),
        (
            ["run", "seed000-demo", "--report", str(tmp_path / "folder.html")],
            "cannot write the report: is a directory",
        ),
    ]
    for args, says in cases:
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert says in " ".join(r.stderr.split()), (args, r.stderr)
    bad.write_text('{"apiVersion": "probesim.dev/v1alpha1", "kind": "Result"}', encoding="utf-8")
    r = runner.invoke(app, ["report", str(bad), "-o", out, "--check", str(bad)])
    assert r.exit_code == 2
    assert "scenario: missing (is this a probesim run --json result?)" in r.stderr
    assert not Path(out).exists()
