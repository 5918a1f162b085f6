"""Human output with rich: run summaries, kubectl-style events, the seed-000 demo table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from probesim.model.duration import format_ms
from probesim.results import CAUSES, Event, Result
from probesim.safe import MESSAGE_LIMIT, cell, visible


def _secs(ms: int | None) -> str:
    return "never" if ms is None else format_ms(ms)


EVENT_LINES = 20  # event lines shown at each end of the timeline unless all are asked for


def render_result(
    result: Result, console: Console, events: bool = True, event_lines: int | None = None
) -> None:
    """The run's summary tables and events (the first and last ``event_lines`` lines of the
    timeline, every line if None: probesim run, whose --all-events the cut names, gives
    EVENT_LINES). Names and messages are user text: shown through probesim.safe, never as
    markup."""
    if result.source == "lab":
        what = f"  ran for real for {format_ms(result.duration_ms)}"
    else:
        what = (
            f"  simulated {format_ms(result.duration_ms)} "
            f"in steps of {format_ms(result.step_ms)}, seed {result.seed}"
        )
    console.print(Text.assemble(cell(result.scenario, style="bold"), what))
    if result.routes:
        t = Table(title="Requests", title_justify="left", box=box.SIMPLE)
        t.add_column("ROUTE")
        t.add_column("SERVICE")
        # OFFERED = OK + FAILED + DROPPED + INTERRUPTED + IN FLIGHT (still awaited at the end).
        heads = ("OFFERED", "OK", "FAILED", "DROPPED", "INTERRUPTED", "IN FLIGHT", "ERROR %")
        for h in (*heads, *(c.upper() for c in CAUSES)):
            t.add_column(h, justify="right")
        for r in result.routes:
            t.add_row(
                cell(r.name),
                cell(r.service),
                str(r.offered),
                str(r.ok),
                str(r.failed_total),
                str(r.dropped),
                str(r.interrupted),
                str(r.in_flight),
                f"{100 * r.error_rate:.1f}",
                *(str(r.failed[c]) for c in CAUSES),
            )
        console.print(t)
    t = Table(title="Workloads", title_justify="left", box=box.SIMPLE)
    for h in (
        "WORKLOAD",
        "REPLICAS",
        "RESTARTS",
        "FIRST READY",
        "ALL READY",
        "MIN READY",
        "AVG READY",
        "MIN AVAILABLE",
    ):
        t.add_column(h, justify="left" if h == "WORKLOAD" else "right")
    for w in result.workloads:
        t.add_row(
            cell(f"{w.kind.lower()}/{w.name}"),
            str(w.replicas),
            str(w.total_restarts),
            _secs(w.first_ready_ms),
            _secs(w.all_ready_ms),
            str(w.min_ready),
            f"{w.avg_ready:.2f}",
            str(w.min_available),
        )
    console.print(t)
    restarted = {p: n for w in result.workloads for p, n in w.restarts.items() if n}
    if restarted:
        console.print(
            Text("Restarts by pod: " + ", ".join(f"{visible(p)} {n}" for p, n in restarted.items()))
        )
    if events:
        render_events(result.events, console, event_lines)


@dataclass
class _Agg:
    first: int
    last: int
    count: int
    event: Event
    order: int  # the index of the last occurrence, to keep simultaneous events in their order


def aggregate(events: Sequence[Event]) -> list[_Agg]:
    """kubectl's count: one row per object, type, reason and message (the kubelet's event
    correlator folds a repeat into the same Event, counting it and moving its last time,
    whatever happened in between), rows in order of their last occurrence as kubectl sorts
    them."""
    rows: dict[tuple[str, str, str, str], _Agg] = {}
    for i, e in enumerate(events):
        key = (e.object, e.type, e.reason, e.message)
        a = rows.get(key)
        if a is None:
            rows[key] = _Agg(e.time_ms, e.time_ms, 1, e, i)
        else:
            a.first, a.last = min(a.first, e.time_ms), max(a.last, e.time_ms)
            a.count, a.order = a.count + 1, i
    return sorted(rows.values(), key=lambda a: (a.last, a.order))


def human_duration(ms: int) -> str:
    """A span as kubectl writes an event's age (apimachinery's HumanDuration): whole seconds
    up to 2 minutes, then minutes (and seconds below 10 minutes), hours, days, years."""
    s = ms // 1000
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 3 * 60:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        d = (h // 24) % 365
        return f"{h // 24 // 365}y{d}d" if d else f"{h // 24 // 365}y"
    return f"{h // 24 // 365}y"


def render_events(events: Sequence[Event], console: Console, lines: int | None = EVENT_LINES) -> None:
    """The timeline as ``kubectl get events`` shows it: a repeated event is one line, seen
    last at LAST SEEN, "(x12 over 3m)" since its first time; the first and last ``lines``
    lines only (every line if None), with a line saying how many are left out."""
    rows = aggregate(events)
    edge = len(rows) if lines is None else max(lines, 0)
    head, left_out, tail = rows[:edge], rows[edge : max(edge, len(rows) - edge)], rows[len(rows) - edge :]
    if not left_out:
        head, tail = rows, []
    t = Table(title="Events", title_justify="left", box=box.SIMPLE)
    for h in ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"):
        t.add_column(h, overflow="fold")
    for a in head:
        _event_row(t, a)
    if left_out:
        n = sum(a.count for a in left_out)
        t.add_row(
            "…",
            "",
            "",
            "",
            f"{len(left_out):,} lines ({n:,} events) left out: --all-events shows every line, "
            "--json every event",
            style="dim",
        )
    for a in tail:
        _event_row(t, a)
    console.print(t)


def _at(ms: int) -> str:
    """A time in the run as the timeline shows it: 2m57s, and 2m53.1s within a second."""
    if ms % 1000 == 0:
        return format_ms(ms)
    m, rest = divmod(ms, 60_000)
    return f"{m}m{rest / 1000:g}s" if m else f"{rest / 1000:g}s"


def _event_row(t: Table, a: _Agg) -> None:
    e = a.event
    when = _at(a.last)
    if a.count > 1:
        when += f" (x{a.count} over {human_duration(a.last - a.first)})"
    style = "yellow" if e.type == "Warning" else None
    t.add_row(when, cell(e.type), cell(e.reason), cell(e.object), cell(e.message, MESSAGE_LIMIT), style=style)
