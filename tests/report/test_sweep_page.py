"""A sweep's page without a browser: a section of figures per swept field holding the exact
means and min–max of a real sweep's rows, the pass share per point, hostile names escaped, and
the errors of a file that is not a sweep's rows. (The page in Chromium: test_html_browser.py.)"""

from __future__ import annotations

import csv
import html
import io
import re
import statistics
import tempfile
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from probesim.errors import InputError
from probesim.report.sweep_page import load_page_input, load_rows, render_sweep
from tests.report.pages import HOSTILE
from tests.report.test_html import figures_of

runner = CliRunner()
RATE, LATENCY = "spec.traffic[0].rate", "spec.dependencies.httpbin.latency"
THRESHOLDS = ("errors: rate<0.4", "restarts: ==0")


@cache
def sweep_outputs() -> tuple[str, str]:
    """A small real sweep's rows (CSV text) and its page (sweep --report), run once per session:
    2 rates × 2 dependency latencies × 2 seeds, whose failures differ between the seeds."""
    with tempfile.TemporaryDirectory() as tmp:
        return _sweep(Path(tmp))


def _sweep(tmp: Path) -> tuple[str, str]:
    out, page = tmp / "rows.csv", tmp / "page.html"
    args = ["sweep", "patient-timeout-retry-1", "--set", f"{RATE}=300,900", "--set", f"{LATENCY}=40ms,150ms",
            "--runs", "2", "-o", str(out), "--report", str(page), "--workers", "2"]  # fmt: skip
    for t in THRESHOLDS:
        args += ["--threshold", t]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    return out.read_text(encoding="utf-8"), page.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def swept() -> tuple[str, str]:
    return sweep_outputs()


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_section_per_field_with_the_exact_aggregates(swept: tuple[str, str]) -> None:
    text, page = swept
    rows = _rows(text)
    figs = {html.unescape(f["layout"]["title"]["text"]): f for f in figures_of(page)}
    for field, other, xs, shown in (
        (RATE, LATENCY, [300, 900], ["40ms", "150ms"]),
        (LATENCY, RATE, ["40ms", "150ms"], ["300", "900"]),
    ):
        assert f"<h2>By {html.escape(field)}</h2>" in page
        assert {f"Failed requests by {field}", f"Error rate by {field}", f"Container restarts by {field}",
                f"Runs passing each threshold by {field}"} <= set(figs)  # fmt: skip
        for title, column in (
            (f"Failed requests by {field}", "route[check_dep].failed"),
            (f"Error rate by {field}", "route[check_dep].error_rate"),
            (f"Latency p95 by {field}", "route[check_dep].latency.p95_ms"),
            (f"Container restarts by {field}", "workload[patient].restarts"),
        ):
            fig = figs[title]
            assert fig["layout"]["xaxis"]["title"]["text"] == html.escape(field)
            for o in shown:
                name = (
                    f"route check_dep, {other}={o}"
                    if column.startswith("route")
                    else f"workload patient, {other}={o}"
                )
                means = [t for t in fig["data"] if t["name"] == html.escape(name)]
                assert len(means) == 1, (title, name, [t["name"] for t in fig["data"]])
                expected, lows, highs = [], [], []
                for x in xs:
                    vs = [float(r[column]) for r in rows if r[field] == str(x) and r[other] == o]
                    assert len(vs) == 2  # two runs (seeds 4 and 5) at each point, each measured
                    expected.append(statistics.mean(vs))
                    lows.append(min(vs))
                    highs.append(max(vs))
                assert means[0]["y"] == pytest.approx(expected, rel=1e-12)
                assert means[0]["x"] == xs
                band = [
                    t
                    for t in fig["data"]
                    if t["name"] in (html.escape(f"{name} min"), html.escape(f"{name} max"))
                ]
                if lows != highs:  # the seeds' runs differ: the band from the fewest to the most
                    assert [t["y"] for t in band] == [lows, highs]
                    assert band[1]["fill"] == "tonexty"
                else:
                    assert band == []
        # The threshold's pass share at each value of the field.
        fig = figs[f"Runs passing each threshold by {field}"]
        for t in THRESHOLDS:
            for o in shown:
                trace = next(tr for tr in fig["data"] if tr["name"] == html.escape(f"{t}, {other}={o}"))
                expected = []
                for x in xs:
                    oks = [
                        r[f"threshold[{t}].ok"] == "true"
                        for r in rows
                        if r[field] == str(x) and r[other] == o
                    ]
                    expected.append(sum(oks) / len(oks))
                assert trace["y"] == expected
    # The failures differ between the seeds: there is a band, and the means are not the runs'.
    failed = figs[f"Failed requests by {RATE}"]
    assert any(t.get("fill") == "tonexty" for t in failed["data"])
    assert figs[f"Failed requests by {LATENCY}"]["layout"]["xaxis"]["type"] == "category"


def test_points_table_and_rows_table(swept: tuple[str, str]) -> None:
    text, page = swept
    rows = _rows(text)
    points = re.search(r'<section id="points">.*?</section>', page, re.S)
    assert points is not None
    body = points.group(0)
    for p in range(4):
        at = [r for r in rows if r["point"] == str(p)]
        for t in THRESHOLDS:
            passed = sum(r[f"threshold[{t}].ok"] == "true" for r in at)
            assert f"{passed}/2 ({passed / 2:.0%})" in body
    assert html.escape("pass: errors: rate<0.4") in body
    table = re.search(r'<table id="rows">.*?</table>', page, re.S)
    assert table is not None
    assert table.group(0).count("<tr") == 1 + len(rows)
    assert 'id="row-filter"' in page and 'data-table="rows"' in page
    assert f"{len(rows)} rows, one per run" in page


def test_report_of_the_rows_is_the_sweeps_page(swept: tuple[str, str], tmp_path: Path) -> None:
    text, page = swept
    # The page names the rows file; the same file name gives the same page.
    rows = tmp_path / "rows.csv"
    rows.write_text(text, encoding="utf-8")
    out = tmp_path / "again.html"
    r = runner.invoke(app, ["report", str(rows), "-o", str(out)])
    assert r.exit_code == 0, r.output
    first = load_rows(text.encode(), str(rows))
    assert out.read_text(encoding="utf-8") == render_sweep(first)
    assert re.sub(r"probesim sweep: [^<]*", "", page) == re.sub(
        r"probesim sweep: [^<]*", "", out.read_text(encoding="utf-8")
    )


def test_hostile_names_are_escaped(swept: tuple[str, str]) -> None:
    text, _ = swept
    name = HOSTILE.replace(",", ";").replace('"', "'")  # one CSV cell
    hostile = text.replace(LATENCY, name).replace("40ms", name)
    rows = load_rows(hostile.encode(), f"{HOSTILE}.csv")
    page = render_sweep(rows)
    assert "<script>window" not in page and "<img" not in page
    assert "&lt;script&gt;" in page


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"hello\n", "neither a run's result (JSON: probesim run --json) nor a sweep's rows"),
        (b"point,run,seed\n", "the sweep has no rows: nothing to show"),
        (b"point,run,seed,run\n0,0,0,0\n", "column 'run' appears twice"),
        (b"point,x,run,seed\n0,1,0\n", "3 cells, the header 4"),
        (b"point,run,seed,route[a].failed\n0,0,x,1\n", "row 1: seed is 'x', not a whole number"),
        (b"point,run,seed,route[a].failed\n0,0,0,many\n", "row 1: route[a].failed is 'many', not a number"),
        (b"point,run,seed,route[a].failed\n0,0,0,nan\n", "route[a].failed is 'nan', not a number"),
        (b"point,run,seed,threshold[x].ok\n0,0,0,1\n", "threshold[x].ok is 1, not true or false"),
        (b"point,run,seed\n0,0,\x000\n", "row 1: seed is '\\x000', not a whole number"),
        (b"point,run\xff,seed\n", "neither UTF-8 CSV nor Parquet"),
        (b"PAR1junk", "not a Parquet file pyarrow can read"),
        (b"", "not JSON"),
        (b"point,run,seed\n0,0," + b"9" * 200_000 + b"\n", "not CSV: field larger than field limit"),
    ],
)
def test_rows_errors_name_the_file(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(data)
    with pytest.raises(InputError) as e:
        load_page_input(str(path))
    assert e.value.file == str(path)
    assert message in str(e.value)


def test_report_cli_errors(swept: tuple[str, str], tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text(swept[0], encoding="utf-8")
    r = runner.invoke(app, ["report", str(rows), "-o", str(tmp_path / "p.html"), "--check", "c.json"])
    assert r.exit_code == 2
    assert (
        r.stderr.strip()
        == "error: --check: a sweep's page has no check findings: --check goes with a run's result"
    )
    r = runner.invoke(
        app, ["sweep", "seed000-demo", "-o", str(tmp_path / "r.csv"), "--report", str(tmp_path / "p.png")]
    )
    assert r.exit_code == 2
    assert "the report is written to a .html file" in r.stderr
    assert not (tmp_path / "r.csv").exists()  # refused before any run


def test_a_sweep_too_costly_is_refused_before_its_tasks_exist(tmp_path: Path) -> None:
    # 10**20 runs: refused by the total cost at once (the tasks once filled memory first).
    r = runner.invoke(app, ["sweep", "seed000-demo", "--runs", str(10**20), "-o", str(tmp_path / "r.csv")])
    assert r.exit_code == 2
    assert "this sweep of 1 point × 100,000,000,000,000,000,000 runs would cost about" in r.stderr


def test_parquet_rows_give_the_csv_rows_page(swept: tuple[str, str], tmp_path: Path) -> None:
    from probesim.sweep import write_rows

    rows = load_rows(swept[0].encode(), "rows")
    path = tmp_path / "rows.parquet"
    write_rows(rows.rows, path)
    again = load_page_input(str(path))
    assert isinstance(again, type(rows))
    assert render_sweep(again).replace(str(path), "rows") == render_sweep(rows)
