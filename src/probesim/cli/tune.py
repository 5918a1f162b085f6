"""``probesim tune``: the probe (and outlier detection) study, its front, recommendation and
patch."""

from pathlib import Path
from typing import Annotated, Any

import typer

from probesim.cli.common import check_output_path, command, one_variant_only, scenario_path
from probesim.cli.program import err, out
from probesim.cli.report_options import config_option


@command()
def tune(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Manifest files or directories (helm template output welcome); '-' for stdin."),
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option(
            help="A scenario (file or built-in name) whose run is judged too; without one, the stress "
            "suite alone judges."
        ),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(help="The workload to tune (default: the only one with probes behind a Service)."),
    ] = None,
    trials: Annotated[
        int, typer.Option(help="Trials to add to the study in this run.", min=1, max=10_000)
    ] = 80,
    seed: Annotated[
        int, typer.Option(help="The sampler's seed: same inputs and seed, same trials.", min=0)
    ] = 0,
    storage: Annotated[
        str | None,
        typer.Option(help="Optuna storage URL for the study (default: sqlite:///.probesim/tune.db here)."),
    ] = None,
    study: Annotated[
        str | None,
        typer.Option(help="Study name (default: derived from the inputs, the workload and the seed)."),
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(help="Start no trial after this long (e.g. 90s, 10m); finished trials are kept."),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Run each trial's simulations on this Dask scheduler (tcp://host:port)."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Local worker processes (default: all cores).", min=1)
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the workload's patch to this file (a DestinationRule's beside it)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the front, the choice and the patches as JSON.")
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            help="Also write the study's report to this HTML file (.html): one page that works offline, "
            "with the Pareto front drawn, the current and recommended settings and the patches."
        ),
    ] = None,
    config: Annotated[
        str | None,
        config_option(
            ": its profiles: corrections of what probesim worked out of the app — its start, its "
            "health endpoints — taken as check takes them"
        ),
    ] = None,
) -> None:
    """Search probe settings (and Istio outlier detection) that fail fewer requests, restart
    nothing needlessly and take a hung pod out of service sooner; print the Pareto front, the
    recommended setting beside the current one, and the patch with its kubectl command.

    The study is kept in a database (SQLite in .probesim/ by default): run the same command
    again to add trials to it. See docs/tune.md.

    Example: [bold]probesim tune k8s/ --scenario s.yaml --workload web -o patch.yaml[/bold]
    """
    from probesim.analysis.check import load_config
    from probesim.tune.command import tune as run_tune

    def write_report(outcome: Any, got: Any, patches: Any) -> None:
        from probesim.report.html import write_page
        from probesim.report.tune_page import render_tune

        assert report is not None
        write_page(render_tune(outcome, got, patches), report)

    try:
        if report is not None:
            check_output_path(report, "the report", ".html")
        if paths and "-" not in paths:  # standard input is read once, by the tuner
            from probesim.manifests.generated import variants_of

            variants = variants_of(paths, "tune")
            if variants is not None:
                one_variant_only(variants, ["the tuner tunes one workload of one variant"], "tune")
        target = scenario_path(scenario) if scenario is not None else None
        corrections = load_config(config).profiles
        run_tune(paths or [], target, workload, trials, seed, storage, study, timeout, scheduler, workers,
                 output, as_json, out, err, write_report if report is not None else None,
                 corrections)  # fmt: skip
    except KeyboardInterrupt:
        err.print("[yellow]stopped: the finished trials are kept in the study; run again to resume[/]")
        raise typer.Exit(130) from None
