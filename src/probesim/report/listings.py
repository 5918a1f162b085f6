"""The tables of what probesim holds, for the terminal: the check rules, the built-in
scenarios and the seed-000 demo's eight probe combinations. Only rich is imported here:
``probesim scenarios`` and ``check --list-rules`` start fast."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from probesim.analysis.findings import Rule
    from probesim.demo import DemoRow
    from probesim.scenarios import BuiltIn


def render_rules(rules: Iterable[Rule], console: Console) -> None:
    """check --list-rules: each rule's id, name, severity and what it finds."""
    t = Table(box=box.SIMPLE)
    for h in ("ID", "NAME", "FAMILY", "SEVERITY", "WHAT IT FINDS"):
        t.add_column(h)
    for r in rules:
        t.add_row(r.id, r.name, r.family, r.severity, r.title)
    console.print(t)


def render_builtins(builtins: Iterable[BuiltIn], console: Console) -> None:
    """probesim scenarios: each built-in's name and what it shows."""
    t = Table(box=box.SIMPLE)
    t.add_column("NAME", no_wrap=True)
    t.add_column("WHAT IT SHOWS")
    for b in builtins:
        t.add_row(b.name, b.description)
    console.print(t)


def render_demo(rows: Sequence[DemoRow], ticks: int, rps: int, console: Console, events: bool) -> None:
    """probesim demo: what each probe combination served, dropped and restarted (and with
    ``events`` each combination's log)."""
    t = Table(
        title=f"seed-000 demo: {ticks} ticks, {rps} requests per tick", title_justify="left", box=box.SIMPLE
    )
    for h in (
        "READINESS",
        "LIVENESS",
        "STARTUP",
        "SERVED",
        "DROPPED",
        "RESTARTS pod-1",
        "RESTARTS pod-2",
        "",
    ):
        t.add_column(h, justify="right" if h.startswith(("S", "D", "R")) and h != "READINESS" else "left")
    for r in rows:
        s = r.sim
        safe = s.safe() and s.restarts() == 0
        t.add_row(
            "on" if r.readiness else "off",
            "strict (1)" if r.strict_liveness else "loose (5)",
            "on" if r.startup else "off",
            str(s.served),
            str(s.dropped),
            str(s.pods[0].restarts),
            str(s.pods[1].restarts),
            "[green]safe[/green]" if safe else "",
        )
    console.print(t)
    if events:
        for r in rows:
            console.print(
                f"\n[bold]readiness {'on' if r.readiness else 'off'}, liveness "
                f"{'strict' if r.strict_liveness else 'loose'}, startup {'on' if r.startup else 'off'}[/bold]"
            )
            for line in r.sim.log:
                console.print(line, highlight=False)
