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


def render_result(result: Result, console: Console, events: bool = True) -> None:
    """The run's summary tables and events. Names and messages are user text: shown through
    probesim.safe, never as markup."""
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
        render_events(result.events, console)


@dataclass
class _Agg:
    first: int
    last: int
    count: int
    event: Event


def aggregate(events: Sequence[Event]) -> list[_Agg]:
    """Chronological rows; an event repeating an object's previous row (same reason and
    message, nothing else on that object in between) is folded into it, as kubectl counts."""
    rows: list[_Agg] = []
    last: dict[str, _Agg] = {}
    for e in events:
        prev = last.get(e.object)
        if prev is not None and (prev.event.reason, prev.event.message) == (e.reason, e.message):
            prev.last, prev.count = e.time_ms, prev.count + 1
            continue
        row = _Agg(e.time_ms, e.time_ms, 1, e)
        rows.append(row)
        last[e.object] = row
    return rows


def render_events(events: Sequence[Event], console: Console) -> None:
    t = Table(title="Events", title_justify="left", box=box.SIMPLE)
    for h in ("TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"):
        t.add_column(h, overflow="fold")
    for a in aggregate(events):
        e = a.event
        when = format_ms(a.first)
        if a.count > 1:
            when += f" (x{a.count} until {format_ms(a.last)})"
        style = "yellow" if e.type == "Warning" else None
        t.add_row(
            when, cell(e.type), cell(e.reason), cell(e.object), cell(e.message, MESSAGE_LIMIT), style=style
        )
    console.print(t)
