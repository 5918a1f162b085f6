"""The run summary at the terminal's width: nothing wider than the console, figures never cut
or folded, the columns left out named, p50/p95/p99 per route when there is room, and the
fewest ready replicas counted from the end of the start-up ramp."""

from __future__ import annotations

import io
import re
from functools import cache

import pytest
from rich.console import Console

from probesim.engine import simulate
from probesim.model.threshold import parse
from probesim.report.terminal import render_result
from probesim.report.thresholds import render_thresholds
from probesim.results import Result
from probesim.results.thresholds import evaluate
from tests.builders import builtin


@cache
def run(name: str) -> Result:
    return simulate(builtin(name))


def render(name: str, width: int, thresholds: tuple[str, ...] = ()) -> str:
    buffer = io.StringIO()
    console = Console(width=width, file=buffer, emoji=False, color_system=None)
    result = run(name)
    render_result(result, console, event_lines=3)
    render_thresholds(evaluate([parse(t) for t in thresholds], result), console)
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text.replace("…  ", "").replace("  …", "")  # no figure cut with an ellipsis
    return text


def row(text: str, first: str) -> list[str]:
    """The cells of the table row (or header) that starts with ``first``, split on runs of spaces."""
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(first + " "))
    return re.split(r"\s{2,}", line.strip())


def test_a_wide_terminal_shows_every_figure() -> None:
    text = render("patient-delays-readiness", 160)
    assert row(text, "ROUTE") == [
        "ROUTE", "SERVICE", "OFFERED", "OK", "FAILED", "ERROR %", "DROPPED", "INTERRUPTED",
        "P50", "P95", "P99", "MAX",
    ]  # fmt: skip
    assert row(text, "check_dep") == [
        "check_dep", "patient", "54000", "14978", "4929", "24.8", "24022", "10071",
        "69.8 ms", "60 s", "60 s", "60 s",
    ]  # fmt: skip
    assert row(text, "check_nodep")[-4:] == ["1.4 ms", "4.4 ms", "55.1 ms", "1.06 s"]
    assert "check_dep: error_status 1159, timeout 3770" in text
    assert "too narrow" not in text


@pytest.mark.parametrize(
    ("width", "requests", "workloads"),
    [
        (
            80,
            ["ROUTE", "OFFERED", "OK", "FAILED", "ERROR %", "P95", "P99"],
            ["WORKLOAD", "REPLICAS", "RESTARTS", "ALL READY", "MIN READY"],
        ),
        (
            60,
            ["ROUTE", "OFFERED", "FAILED", "ERROR %", "P95"],
            ["WORKLOAD", "RESTARTS", "ALL READY", "MIN READY"],
        ),
    ],
)
def test_a_narrow_terminal_leaves_out_the_least_needed_columns_and_says_so(
    width: int, requests: list[str], workloads: list[str]
) -> None:
    text = render("patient-delays-readiness", width)
    assert row(text, "ROUTE") == requests
    assert row(text, "WORKLOAD") == workloads
    # Each figure whole, in its column.
    cells = dict(zip(requests, row(text, "check_dep"), strict=True))
    assert (cells["FAILED"], cells["ERROR %"], cells["P95"]) == ("4929", "24.8", "60 s")
    assert dict(zip(workloads, row(text, "deployment/patient"), strict=True))["ALL READY"] == "14s"
    flat = " ".join(text.split())
    assert "(too narrow for SERVICE," in flat and "a wider terminal or --json shows them)" in flat
    # Events: one a line, the message below it, words whole.
    assert "1m48s (x24 over 102s)  Warning  Unhealthy  pod/patient-0" in text
    assert "Readiness probe failed: Get" in text


def test_min_ready_counts_from_the_end_of_the_ramp() -> None:
    # seed000-demo: app-1 starts in 8 s; all Ready at 8 s; its hang leaves 1 Ready.
    text = render("seed000-demo", 120)
    cells = dict(zip(row(text, "WORKLOAD"), row(text, "deployment/app"), strict=True))
    assert (cells["ALL READY"], cells["MIN READY"], cells["MIN AVAILABLE"]) == ("8s", "1", "1")
    # Never all Ready: no minimum after a ramp that did not end.
    text = render("seed000-strict-liveness", 120)
    cells = dict(zip(row(text, "WORKLOAD"), row(text, "deployment/app"), strict=True))
    assert (cells["ALL READY"], cells["MIN READY"]) == ("never", "-")


@pytest.mark.parametrize("width", [60, 80])
def test_thresholds_fit_a_narrow_terminal(width: int) -> None:
    text = render("seed000-no-readiness", width, ("errors{route:/}: rate<0.01", "restarts: ==0"))
    assert row(text, "✗") == ["✗", "errors{route:/}: rate<0.01", "25.00 %", "route /"]
    assert row(text, "✓") == ["✓", "restarts: ==0", "0", "all workloads"]
    assert "1 of 2 thresholds crossed (exit code 99)" in text
