"""Many runs on the terminal: ``probesim run --runs`` as one table of figures over the runs
(mean, standard deviation, range) and the share of runs that crossed each threshold; the
progress bar that ``--runs`` and ``probesim sweep`` show on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from probesim.safe import cell

if TYPE_CHECKING:
    from rich.progress import Progress

    from probesim.montecarlo import MonteCarlo
    from probesim.results.figures import Figure


def progress_bar(console: Console) -> Progress:
    """A bar of runs done, with the time spent and left (not started: probesim.runs starts it)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console,
        transient=console.is_terminal,
    )


def _num(v: Figure | float) -> str:
    if v is None:
        return "—"
    if isinstance(v, int):
        return f"{v:,}"
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.4g}" if abs(v) < 1 else f"{v:,.2f}"


def render_monte_carlo(mc: MonteCarlo, console: Console) -> None:
    runs = len(mc.seeds)
    seeds = f"seeds {mc.seeds[0]}–{mc.seeds[-1]}" if runs > 1 else f"seed {mc.seeds[0]}"
    t = Table(
        title=Text.assemble(cell(mc.scenario), f": {runs} runs, {seeds}"),
        title_justify="left",
        box=box.SIMPLE,
    )
    t.add_column("FIGURE", overflow="fold")
    for h in ("MEAN", "STD", "MIN", "MAX"):
        t.add_column(h, justify="right", no_wrap=True)
    partial = any(s.n != runs for s in mc.figures.values())
    if partial:
        t.add_column("RUNS", justify="right")
    for name, s in mc.figures.items():
        if ".failed." in name and s.max == 0:
            continue  # a cause no run met (--json lists every one)
        row: list[Text | str] = [cell(name), _num(s.mean), _num(s.std), _num(s.min), _num(s.max)]
        t.add_row(*row, *([f"{s.n}/{runs}"] if partial else []))
    console.print(t)
    if mc.thresholds:
        th = Table(title="thresholds over the runs", title_justify="left", box=box.SIMPLE)
        th.add_column("THRESHOLD")
        th.add_column("CROSSED IN", justify="right")
        for c in mc.thresholds:
            style = "red" if c.runs else "green"
            th.add_row(cell(c.text), Text(f"{c.runs}/{c.of} runs ({c.share:.0%})", style=style))
        console.print(th)
