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
    """check --list-profiles: each catalog family, what it is known by, its health checks and
    what its replicas are to each other (membership), with where that depends on the deployment."""
    from probesim.model.duration import format_ms

    profiles = list(profiles)
    t = Table(box=box.SIMPLE)
    for h in ("ID", "NAME", "PROTOCOL", "LIVENESS", "READINESS", "START", "PAUSE", "MEMBERSHIP"):
        t.add_column(h, overflow="fold")
    for p in profiles:
        start = f"{format_ms(p.start.typical)}-{format_ms(p.start.worst)}"
        live, ready = (_handler(h, p.health_port) for h in (p.liveness, p.readiness))
        membership = p.membership + (" *" if p.membership_when else "")
        cells = (p.id, p.name, p.protocol or "-", live, ready, start, format_ms(p.pause), membership)
        t.add_row(*(Text(c) for c in cells))  # catalog text, never markup
    console.print(t, highlight=False)
    console.print(
        "MEMBERSHIP: quorum — a majority of the members must be up for it to write; primary — one "
        "instance takes the writes; independent — any replica may go.",
        highlight=False,
    )
    depends = [p for p in profiles if p.membership_when]
    if depends:
        console.print("* it depends on the deployment:", highlight=False)
        notes = Table.grid(padding=(0, 1))
        notes.add_column(no_wrap=True)
        notes.add_column(overflow="fold")
        for p in depends:
            notes.add_row(Text(f"  {p.id}:"), Text(p.membership_when))
        console.print(notes, highlight=False)
    console.print("Correct what probesim assumed in .probesim.yaml → profiles (docs/rules.md, App profiles).")


def _handler(h: dict[str, Any] | None, health_port: int | None = None) -> str:
    if h is None:
        return "the app's own"
    kind, spec = next(iter(h.items()))
    if kind == "exec":
        return " ".join(str(w) for w in spec.get("command", []))
    port = spec.get("port") if isinstance(spec, dict) else None
    shown = health_port if port == "{port}" else port  # "{port}": the served port, or healthPort
    where = f" :{shown}" if shown not in (None, "{port}") else ""
    if kind == "httpGet":
        return f"httpGet {spec.get('path')}{where}"
    return f"{kind}{where}"


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
