"""``probesim fit``'s report on the terminal: each fitted value with where it came from and how
well it fits, what could not be fitted and why, and with --compare the simulation beside the
telemetry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table

from probesim.safe import cell

if TYPE_CHECKING:
    from probesim.fit.command import Outcome


def render_fit(outcome: Outcome, rows: list[dict[str, Any]] | None, console: Console) -> None:
    t = Table(box=box.SIMPLE, title=f"Fitted: {outcome.workload}", title_justify="left")
    for h in ("FIELD", "VALUE", "FROM", "FIT"):
        t.add_column(h)
    for f in outcome.fitted:
        t.add_row(cell(f.path), f"{f.value:g} {f.unit}", cell(f.source), cell("; ".join([f.fit, *f.notes])))
    console.print(t)
    if outcome.not_fitted:
        n = Table(box=box.SIMPLE, title="Not fitted (the generated default kept)", title_justify="left")
        n.add_column("FIELD")
        n.add_column("WHY")
        for k, why in outcome.not_fitted:
            n.add_row(cell(k), cell(why))
        console.print(n)
    if rows is None:
        return
    c = Table(box=box.SIMPLE, title="Simulation vs telemetry", title_justify="left")
    for h in ("OBJECT", "FIGURE", "SIMULATED", "MEASURED", "TOLERANCE", "AGREE"):
        c.add_column(h)
    for r in rows:
        sim = "–" if r["simulated"] is None else f"{r['simulated']:.4g}"
        c.add_row(cell(str(r["object"])), str(r["figure"]), sim, f"{r['measured']:.4g}",
                  f"±{r['tolerance']:.3g}", "[green]yes[/]" if r["agree"] else "[red]no[/]")  # fmt: skip
    console.print(c)
    bad = sum(not r["agree"] for r in rows)
    if bad:
        console.print(f"[red]the simulation and the telemetry differ on {bad} of {len(rows)} figures[/]")
    else:
        console.print("[green]the simulation agrees with the telemetry[/]")
