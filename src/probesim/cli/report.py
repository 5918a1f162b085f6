"""``probesim report``: the offline HTML page of a run's result or a sweep's rows."""

from pathlib import Path
from typing import Annotated

import typer

from probesim.cli.common import check_output_path, command
from probesim.errors import InputError


@command()
def report(
    result: Annotated[
        str,
        typer.Argument(
            help="A result written by probesim run --json (with its series), a sweep's rows written by "
            "probesim sweep -o (.csv or .parquet), or '-' for standard input."
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write (.html).")],
    check: Annotated[
        str | None,
        typer.Option(
            help="Also show the findings of this probesim check --format json report (a run's page)."
        ),
    ] = None,
) -> None:
    """Write a run's or a sweep's report: one HTML page that works offline (no network).

    A run's page: replicas, endpoints, requests by outcome and cause, latency, restarts,
    ejections and rollouts over time, the thresholds, check findings, and the events with a
    filter. A sweep's page: each figure (failed requests, error rate, latency p95, restarts,
    fewest ready after the ramp, runs passing each threshold) against each swept field, the
    points and the rows with a filter.

    Example: [bold]probesim run s.yaml --json > r.json; probesim report r.json -o report.html[/bold]
    """
    from probesim.report.html import load_check, write_page
    from probesim.report.run_page import render_run
    from probesim.report.sweep_page import SweepRows, load_page_input, render_sweep

    check_output_path(output, "the report", ".html")
    doc = load_page_input(result)
    if isinstance(doc, SweepRows):
        if check is not None:
            raise InputError("a sweep's page has no check findings: --check goes with a run's result",
                             field="--check")  # fmt: skip
        write_page(render_sweep(doc), output)
        return
    findings = None if check is None else load_check(check)
    write_page(render_run(doc, findings), output)
