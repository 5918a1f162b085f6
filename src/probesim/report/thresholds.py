"""Thresholds in the run's outputs: a table with each value and ✓/✗, and JUnit XML (one test
case per threshold) for CI."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from probesim.report.junit import Case, Failure, junit_xml
from probesim.report.terminal import latency_text
from probesim.results.thresholds import Verdict
from probesim.safe import cell


def shown(v: Verdict) -> str:
    """The measured value as a person reads it: 0.42 %, 480 ms, 1.25 s, 3, 67 %."""
    value, th = v.value, v.threshold
    if value is None:
        return v.note
    if th.kind == "rate" or th.percent:
        return f"{100 * value:.2f} %" if th.kind == "rate" else f"{100 * value:.0f} %"
    if th.kind == "duration":
        return latency_text(value)
    return f"{value:g}"


def render_thresholds(verdicts: Sequence[Verdict], console: Console) -> None:
    if not verdicts:
        return
    t = Table(title="Thresholds", title_justify="left", box=box.SIMPLE)
    t.add_column("", no_wrap=True)
    t.add_column("THRESHOLD", overflow="fold")
    t.add_column("VALUE", justify="right", overflow="fold")
    t.add_column("OF", overflow="fold")
    for v in verdicts:
        mark = Text("✓", style="green") if v.ok else Text("✗", style="red")
        value = "not measured" if v.value is None else shown(v)
        t.add_row(mark, cell(v.threshold.text), cell(value), cell(v.of))
    console.print(t)
    for v in verdicts:  # why a figure could not be measured, below: a sentence, not a cell
        if v.value is None:
            console.print(
                Padding(Text.assemble(cell(v.threshold.text), f": {v.note}"), (0, 0, 0, 2), expand=False)
            )
    n = sum(not v.ok for v in verdicts)
    if n:
        console.print(
            Text(f"{n} of {len(verdicts)} thresholds crossed (exit code 99)", style="red"), soft_wrap=True
        )
    else:
        console.print(Text(f"all {len(verdicts)} thresholds hold", style="green"), soft_wrap=True)


def to_junit(verdicts: Sequence[Verdict], scenario: str) -> str:
    """One test case per threshold, in a suite named after the scenario; a crossed threshold
    is a failure saying what was measured, and on what."""
    cases = []
    for v in verdicts:
        fails = []
        if not v.ok:
            on = f" on {v.of}" if v.of else ""
            fails.append(
                Failure(f"{shown(v)}{on}", "threshold", f"{v.threshold.text}: measured {shown(v)}{on}")
            )
        cases.append(Case(f"probesim run {scenario}", v.threshold.text, fails))
    return junit_xml(f"probesim run {scenario}: thresholds", cases)
