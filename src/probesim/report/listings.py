"""The tables of what probesim holds, for the terminal: the check rules, the app profiles'
catalog, the built-in scenarios and the seed-000 demo's eight probe combinations. Only rich is imported here:
``probesim scenarios`` and ``check --list-rules`` start fast."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from probesim.analysis.findings import Rule
    from probesim.demo import DemoRow
    from probesim.profiles import Profile
    from probesim.scenarios import BuiltIn


def render_rules(rules: Iterable[Rule], console: Console) -> None:
    """check --list-rules: each rule's id, name, severity and what it finds."""
    t = Table(box=box.SIMPLE)
    for h in ("ID", "NAME", "FAMILY", "SEVERITY", "WHAT IT FINDS"):
        t.add_column(h)
    for r in rules:
        t.add_row(r.id, r.name, r.family, r.severity, r.title)
    console.print(t)


def render_profiles(profiles: Iterable[Profile], console: Console) -> None:
    """check --list-profiles: each catalog family, what it is known by and its health checks."""
    from probesim.model.duration import format_ms

    t = Table(box=box.SIMPLE)
    for h in ("ID", "NAME", "PROTOCOL", "LIVENESS", "READINESS", "START", "PAUSE"):
        t.add_column(h, overflow="fold")
    for p in profiles:
        start = f"{format_ms(p.start.typical)}-{format_ms(p.start.worst)}"
        cells = (p.id, p.name, p.protocol or "-", _handler(p.liveness), _handler(p.readiness), start)
        t.add_row(*(Text(c) for c in (*cells, format_ms(p.pause))))  # catalog text, never markup
    console.print(t, highlight=False)
    console.print("Correct what probesim assumed in .probesim.yaml → profiles (docs/rules.md, App profiles).")


def _handler(h: dict[str, Any] | None) -> str:
    if h is None:
        return "the app's own"
    kind, spec = next(iter(h.items()))
    if kind == "httpGet":
        return f"httpGet {spec.get('path')}" + (f" :{spec['port']}" if spec.get("port") != "{port}" else "")
    if kind == "exec":
        return " ".join(str(w) for w in spec.get("command", []))
    return kind


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
