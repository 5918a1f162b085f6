"""The text timeline of events (issue 14): kubectl's aggregation (a repeat of the same object,
type, reason and message is one line, "(x12 over 3m)"), the first and last lines only unless
--events all, user text shown as text. How fast a big run's text is: benchmarks/events.py."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from probesim.cli import app
from probesim.cli.common import load as _load
from probesim.engine import simulate
from probesim.report.terminal import EVENT_LINES, aggregate, human_duration, render_events
from probesim.results import Event

runner = CliRunner()


def _text(events: list[Event], lines: int | None = EVENT_LINES) -> str:
    buffer = io.StringIO()
    render_events(events, Console(file=buffer, width=200, emoji=False), lines)
    return buffer.getvalue()


def _rows(text: str) -> list[str]:
    """The table's rows: the lines after the header rule."""
    lines = [ln.strip() for ln in text.splitlines()]
    rule = next(i for i, ln in enumerate(lines) if ln and set(ln) == {"─"})
    return [ln for ln in lines[rule + 1 :] if ln]


def test_slow_start_killed_aggregates_as_kubectl_counts() -> None:
    result = simulate(_load("seed000-slow-start-killed"))
    rows = {(a.event.object, a.event.reason): a for a in aggregate(result.events)}
    # Liveness kills at 3, 7, 11, 25, 49, 93 and 177 s, each after two failures 1 s apart.
    unhealthy = rows["pod/app-1", "Unhealthy"]
    assert (unhealthy.count, unhealthy.first, unhealthy.last) == (14, 2000, 177000)
    killing = rows["pod/app-1", "Killing"]
    assert (killing.count, killing.first, killing.last) == (7, 3000, 177000)
    backoff = rows["pod/app-1", "BackOff"]
    assert (backoff.count, backoff.first, backoff.last) == (5, 11100, 177100)
    assert (rows["pod/app-0", "Started"].count, rows["pod/app-1", "Started"].count) == (1, 7)
    # Every event is counted once, and rows come in the order of their last occurrence.
    agg = aggregate(result.events)
    assert sum(a.count for a in agg) == len(result.events)
    assert [a.last for a in agg] == sorted(a.last for a in agg)
    out = runner.invoke(app, ["run", "seed000-slow-start-killed"]).output
    assert "2m57s (x14 over 2m55s)" in out and "Liveness probe failed" in out
    assert "2m57s (x7 over 2m54s)" in out and "Killing" in out
    assert "left out" not in out  # 12 lines: nothing cut


def test_a_repeat_folds_across_other_events_and_only_on_the_same_key() -> None:
    ev = [
        Event(1000, "Warning", "Unhealthy", "pod/a", "Readiness probe failed"),
        Event(1000, "Warning", "Unhealthy", "pod/b", "Readiness probe failed"),
        Event(2000, "Normal", "Killing", "pod/a", "killed"),
        Event(3000, "Warning", "Unhealthy", "pod/a", "Readiness probe failed"),
        Event(4000, "Warning", "Unhealthy", "pod/a", "Liveness probe failed"),
        Event(5000, "Normal", "Unhealthy", "pod/a", "Readiness probe failed"),
        Event(190000, "Warning", "Unhealthy", "pod/a", "Readiness probe failed"),
    ]
    got = [(a.event.object, a.event.type, a.event.message, a.count, a.first, a.last) for a in aggregate(ev)]
    assert got == [
        ("pod/b", "Warning", "Readiness probe failed", 1, 1000, 1000),
        ("pod/a", "Normal", "killed", 1, 2000, 2000),
        ("pod/a", "Warning", "Liveness probe failed", 1, 4000, 4000),
        ("pod/a", "Normal", "Readiness probe failed", 1, 5000, 5000),
        ("pod/a", "Warning", "Readiness probe failed", 3, 1000, 190000),
    ]
    assert _rows(_text(ev))[-1].startswith("3m10s (x3 over 3m9s)")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (0.999, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (599, "9m59s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (7 * 3600 + 30 * 60, "7h30m"),
        (8 * 3600 + 59 * 60, "8h"),
        (47 * 3600, "47h"),
        (51 * 3600, "2d3h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (731 * 86400, "2y1d"),
        (8 * 365 * 86400, "8y"),
    ],
)
def test_spans_are_written_as_kubectl_writes_ages(seconds: float, shown: str) -> None:
    assert human_duration(round(seconds * 1000)) == shown


def test_only_the_first_and_last_lines_unless_all_are_asked_for() -> None:
    ev = [Event(1000 * i, "Normal", "Started", f"pod/p-{i}", "Started container app") for i in range(50)]
    ev += [Event(100_000, "Warning", "Unhealthy", "pod/p-10", "Readiness probe failed")] * 3
    rows = _rows(_text(ev))
    assert len(rows) == 2 * EVENT_LINES + 1
    assert [r.split()[-4] for r in rows[:2]] == ["pod/p-0", "pod/p-1"]
    # 51 lines: 0-19 shown, then 20-30 (11 lines, 11 events) left out, then 31-49 and p-10's repeat.
    assert rows[EVENT_LINES].startswith("…")
    assert (
        "11 lines (11 events) left out: --events all shows every line, --json every event"
        in rows[EVENT_LINES]
    )
    assert "pod/p-20" not in "\n".join(rows) and "pod/p-30" not in "\n".join(rows)
    assert "pod/p-31" in rows[EVENT_LINES + 1]
    assert rows[-1].startswith("1m40s (x3 over 0s)")
    every = _rows(_text(ev, None))
    assert len(every) == 51 and not any("left out" in r for r in every)
    assert len(_rows(_text(ev[:40]))) == 40  # exactly 2 × 20: nothing to leave out


def test_run_cuts_by_default_events_all_shows_every_line_json_keeps_every_event() -> None:
    cut = runner.invoke(app, ["run", "gke-surge-tuned"])
    every = runner.invoke(app, ["run", "gke-surge-tuned", "--events", "all"])
    five = runner.invoke(app, ["run", "gke-surge-tuned", "--events", "5"])
    assert cut.exit_code == every.exit_code == five.exit_code == 0
    result = simulate(_load("gke-surge-tuned"))
    lines = len(aggregate(result.events))
    assert lines > 2 * EVENT_LINES
    assert f"{lines - 2 * EVENT_LINES:,} lines (" in cut.output and "left out" in cut.output
    assert "left out" not in every.output
    assert every.output.count("\n") - cut.output.count("\n") >= lines - 2 * EVENT_LINES - 1
    doc = json.loads(runner.invoke(app, ["run", "gke-surge-tuned", "--json", "--no-series"]).output)
    assert len(doc["events"]) == len(result.events)
    assert f"{lines - 10:,} lines (" in five.output
    # Rows start with their age (6m40s, 2s …); a long message's second line does not.
    ages = re.compile(r"^  \d+[smhd]", re.M)
    assert len(ages.findall(five.output)) == 10 and len(ages.findall(cut.output)) == 2 * EVENT_LINES
    assert cut.output == runner.invoke(app, ["run", "gke-surge-tuned", "--events", str(EVENT_LINES)]).output
    for none in (["--no-events"], ["--events", "none"], ["--events", "0"]):
        assert "Events" not in runner.invoke(app, ["run", "gke-surge-tuned", *none]).output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--events", "all", "--no-events"], "--no-events: contradicts --events all: give one"),
        (["--events", "-1"], "'-1' is not a number of lines (0 to 999,999,999), all or none"),
        (["--events", "9" * 400], "is not a number of lines"),
        (["--events", "[red]x"], "'[red]x' is not a number"),
    ],
)
def test_a_bad_events_value_is_an_input_error(args: list[str], said: str) -> None:
    r = runner.invoke(app, ["run", "seed000-demo", *args])
    assert r.exit_code == 2
    assert said in " ".join(r.output.split())


def test_help_says_how_many_lines_are_shown_by_default() -> None:
    out = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    flat = " ".join(out.replace("│", " ").split())
    assert "--events LINES|all|none Which events to show" in flat and f"[default: {EVENT_LINES}]" in flat


def test_event_text_stays_text() -> None:
    ev = [
        Event(0, "Warning", "[red]Un[/]", "pod/:100:-[bold]x\x1b[2J", "msg \u202e [/] :fire:"),
        Event(1000, "Warning", "[red]Un[/]", "pod/:100:-[bold]x\x1b[2J", "msg \u202e [/] :fire:"),
    ]
    text = _text(ev)
    assert "pod/:100:-[bold]x\\x1b[2J" in text
    assert "msg \\u202e [/] :fire:" in text and "[red]Un[/]" in text
    assert "\x1b" not in text and "\u202e" not in text
    assert "1s (x2 over 1s)" in text


def test_an_exec_commands_lines_are_shown_as_lines_markup_and_controls_still_escaped() -> None:
    # A readiness check written as a block scalar: bash -c "mysql …\necho ok"; its message
    # keeps the script's lines (not \x0a), and markup, ESC and a CR are still shown as text.
    script = 'bash -c mysql -uroot -e "SELECT 1"\necho [bold]ok[/bold]\r\x1b[2J'
    msg = f'Readiness probe failed: command timed out: "{script}" timed out after 1s'
    text = _text([Event(1000, "Warning", "Unhealthy", "pod/db-0", msg)])
    assert "\\x0a" not in text
    assert 'mysql -uroot -e "SELECT 1"' in text and "echo [bold]ok[/bold]\\x0d\\x1b[2J" in text
    assert "\x1b" not in text and "\r" not in text
