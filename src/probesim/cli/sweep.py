"""``probesim sweep``: a scenario over a grid of --set values, in parallel (local workers or
Dask), one row per run written to CSV or Parquet, with its HTML report."""

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from probesim.cli.common import (
    MAX_COST_OPTION,
    MAX_TOTAL_COST_OPTION,
    SCHEDULER_OPTION,
    WORKERS_OPTION,
    check_output_path,
    command,
    exists,
    one_variant_only,
    scenario_path,
    tell_generated,
    warn,
)
from probesim.cli.program import err
from probesim.cost import DEFAULT_MAX_COST, DEFAULT_MAX_TOTAL_COST
from probesim.errors import InputWarning
from probesim.safe import visible

if TYPE_CHECKING:
    from probesim.manifests.generated import Generated


@command()
def sweep(
    scenario: Annotated[
        str,
        typer.Argument(
            help="Scenario file (YAML), '-' for standard input, or a built-in name. Or Kubernetes "
            "manifests (a file or a directory): the scenario probesim run generates from them is swept "
            "(probesim run --print-scenario shows it)."
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the rows to this file: .csv or .parquet.")
    ],
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="A field and its values, path=v1,v2,… (repeatable): the sweep runs every combination. "
            "Paths as run --set's: spec.traffic[0].rate=300,600 or deployment/web.spec.replicas=2,3.",
        ),
    ] = None,
    runs: Annotated[
        int, typer.Option(help="Runs per point, with seeds seed, seed+1, … (the point's spec.seed).", min=1)
    ] = 1,
    sample: Annotated[
        int | None, typer.Option(help="Run K points drawn at random from the grid, not all of it.", min=1)
    ] = None,
    seed: Annotated[int, typer.Option(help="The seed --sample draws points with.", min=0)] = 0,
    thresholds: Annotated[
        list[str] | None,
        typer.Option("--threshold", help="A threshold to judge each run by, as a line of spec.thresholds."),
    ] = None,
    workers: Annotated[int | None, WORKERS_OPTION] = None,
    scheduler: Annotated[str | None, SCHEDULER_OPTION] = None,
    max_cost: Annotated[int, MAX_COST_OPTION] = DEFAULT_MAX_COST,
    max_total_cost: Annotated[int, MAX_TOTAL_COST_OPTION] = DEFAULT_MAX_TOTAL_COST,
    manifests: Annotated[
        list[str] | None,
        typer.Option("--manifests", "-m", help="More Kubernetes YAML files to add to the scenario's."),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            help="Also write the sweep's report to this HTML file (.html): one page that works offline, "
            "each figure against each swept field, the points and the rows (see also probesim report)."
        ),
    ] = None,
) -> None:
    """Run a scenario over a grid of --set values (or --sample K points of it), in parallel, and
    write one row per run: the values, the seed, every summary figure and threshold verdict.

    Local worker processes by default (all cores); --scheduler runs the same sweep on a Dask
    distributed cluster. See docs/sweeps.md.

    Example: [bold]probesim sweep s.yaml --set spec.traffic[0].rate=300,600,900 --runs 5 -o rows.csv[/bold]
    """
    import time

    from probesim.runs import one_thread_per_worker

    one_thread_per_worker()  # before numpy loads: the workers fork from this process
    from probesim.overrides import parse_axis
    from probesim.report.runs import progress_bar
    from probesim.runs import run_all
    from probesim.sweep import check_output, plan, write_rows

    started = time.monotonic()
    check_output(output)
    if report is not None:
        check_output_path(report, "the report", ".html")
    axes = [parse_axis(s) for s in sets or ()]
    generated = _generated_for_sweep(scenario, manifests or ())
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        p = plan(
            scenario if generated else scenario_path(scenario),
            axes,
            manifests=() if generated else manifests or (),
            source=(generated.text, generated.shown, Path.cwd()) if generated else None,
            runs=runs,
            sample=sample,
            sample_seed=seed,
            max_cost=max_cost,
            max_total_cost=max_total_cost,
            thresholds=thresholds or (),
        )
    warn(dict.fromkeys(str(w.message) for w in said if issubclass(w.category, InputWarning)))
    if generated is not None:
        tell_generated(generated, generated.load()[0])
    rows = run_all(p.tasks, workers, scheduler, progress_bar(err))
    write_rows(rows, output)
    if report is not None:
        from probesim.report.html import read_input, write_page
        from probesim.report.sweep_page import load_rows, render_sweep

        # The page reads the rows as written, so sweep --report and report rows.csv agree.
        write_page(render_sweep(load_rows(read_input(str(output)), str(output))), report)
    took = time.monotonic() - started
    err.print(
        Text.assemble(
            f"{len(rows):,} rows ({p.points:,} of {p.grid:,} points × {runs} run{'s' if runs > 1 else ''}) "
            "written to ",
            (visible(str(output)), "bold"),
            f" in {took:.1f} s",
        )
    )


def _generated_for_sweep(target: str, manifests: Sequence[str]) -> "Generated | None":
    """The scenario run would generate when sweep's target is Kubernetes manifests (with -m
    files added), else None."""
    if target != "-" and not exists(target):
        return None  # a built-in's name, as for run
    from probesim.manifests.generated import from_arguments

    found = from_arguments([target], manifests, None, None, None, False, "sweep")
    if found is None:
        return None
    several = ["a sweep varies one scenario"] if len(found) > 1 else []
    one_variant_only([g.variant for g in found], several, "sweep")
    return found[0]
