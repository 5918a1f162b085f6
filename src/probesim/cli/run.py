"""``probesim run``: one scenario (a file, a built-in, or the one generated from manifests),
once or over many seeds (--runs), with its plot, report, thresholds and JUnit."""

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from probesim.cli.common import (
    MAX_COST_OPTION,
    MAX_TOTAL_COST_OPTION,
    SCHEDULER_OPTION,
    SET_OPTION,
    WORKERS_OPTION,
    check_cost,
    check_output_path,
    command,
    exists,
    load,
    one_variant_only,
    scenario_path,
    tell_generated,
    warn,
    write_file,
)
from probesim.cli.program import err, out
from probesim.cost import DEFAULT_MAX_COST, DEFAULT_MAX_TOTAL_COST
from probesim.errors import InputError
from probesim.safe import visible

if TYPE_CHECKING:
    from probesim.manifests.generated import Generated
    from probesim.model.scenario import Scenario
    from probesim.model.threshold import Threshold


@command()
def run(
    scenario: Annotated[
        str,
        typer.Argument(
            help="Scenario file (YAML), '-' for standard input, or a built-in name (see 'scenarios'). "
            "Or Kubernetes manifests (files, directories, '-' for helm template output): each workload "
            "behind a Service then runs in a generated scenario (see --print-scenario)."
        ),
    ],
    more: Annotated[
        list[str] | None,
        typer.Argument(help="More manifest files or directories.", show_default=False),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the versioned JSON result instead of tables.")
    ] = False,
    events: Annotated[
        str,
        typer.Option(
            "--events",
            metavar="LINES|all|none",
            help="Which events to show, as kubectl shows them (a repeat is one line: x12 over 3m): the "
            "first and last LINES lines, all, or none (--json keeps every event).",
        ),
    ] = "20",
    no_events: Annotated[bool, typer.Option("--no-events", help="Show no events: --events none.")] = False,
    series: Annotated[
        bool, typer.Option("--series/--no-series", help="Include per-tick series in --json.")
    ] = True,
    seed: Annotated[int | None, typer.Option(help="Override the scenario's seed.", min=0)] = None,
    plot: Annotated[
        Path | None,
        typer.Option(help="Also draw replicas, failures per minute and restarts to this PNG file (.png)."),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            help="Also write the run's report to this HTML file (.html): one page that works offline, "
            "with its timelines, requests, thresholds and events (see also probesim report)."
        ),
    ] = None,
    max_cost: Annotated[int, MAX_COST_OPTION] = DEFAULT_MAX_COST,
    manifests: Annotated[
        list[str] | None,
        typer.Option(
            "--manifests",
            "-m",
            help="More Kubernetes YAML to add to the scenario's (repeatable; '-' reads standard input, "
            "e.g. helm template ./chart | probesim run s.yaml -m -).",
        ),
    ] = None,
    sets: Annotated[list[str] | None, SET_OPTION] = None,
    runs: Annotated[
        int | None,
        typer.Option(
            help="Run the scenario N times, with seeds seed, seed+1, …, in parallel, and show each figure's "
            "mean, standard deviation and range, and the share of runs that crossed each threshold.",
            min=1,
            max=100_000,
        ),
    ] = None,
    workers: Annotated[int | None, WORKERS_OPTION] = None,
    scheduler: Annotated[str | None, SCHEDULER_OPTION] = None,
    max_total_cost: Annotated[int, MAX_TOTAL_COST_OPTION] = DEFAULT_MAX_TOTAL_COST,
    threshold: Annotated[
        list[str] | None,
        typer.Option(
            "--threshold",
            help="A pass/fail criterion, the text of one line of the scenario's spec.thresholds "
            "(repeatable), in k6's spirit: 'errors: rate<0.01', 'p95{route:/api}: <500ms', 'restarts: ==0', "
            "'ready: min>=2'. A crossed threshold exits 99, as k6. See docs/scenarios.md (Thresholds).",
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option(help="Also write the thresholds as JUnit XML to this file, a test case each (for CI)."),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(
            help="Manifests only: every app answers this long after its container starts, e.g. 20s "
            "(default: at once)."
        ),
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            help="Manifests only: requests per second to each Service (default: half the CPU request "
            "of each replica behind it, at 5 ms a request).",
            min=0,
            max=1e9,
        ),
    ] = None,
    duration: Annotated[
        str | None, typer.Option(help="Manifests only: how long to run, e.g. 10m (default 5m).")
    ] = None,
    print_scenario: Annotated[
        bool,
        typer.Option(
            "--print-scenario",
            help="Manifests only: print the generated scenario (YAML to edit and run with probesim run "
            "FILE; the objects copied in) instead of running it.",
        ),
    ] = False,
    stress: Annotated[
        str | None,
        typer.Option(
            "--stress",
            metavar="STRESS",
            help="Run one workload (--workload) under one stress of probesim check --stress, as the suite "
            "simulates it (the workload alone behind its Services; with a scenario file, its behaviour and "
            "traffic): baseline, traffic-x2, traffic-x3, start-x2, dependency-hangs, one-pod-500, "
            "stop-the-world-2s, cpu-limit-at-request, rollout, rollout-never-ready. A PS100 finding names "
            "this command.",
        ),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            "--workload",
            metavar="KIND/[NAMESPACE/]NAME[@FILE]",
            help="With --stress: the workload to stress (@FILE chooses among variants of one name).",
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            help="With --stress: the config file whose profiles: corrections check took (default: "
            "./.probesim.yaml if present, as check reads it)."
        ),
    ] = None,
) -> None:
    """Simulate a scenario: requests ok/failed by cause, latency, restarts, readiness, the events,
    and the scenario's thresholds (with --threshold's).

    Given Kubernetes manifests instead, each workload behind a Service runs healthy for 5 minutes
    under constant traffic: its app answers at once (or after --start), and takes 100 requests per
    second per core of CPU request per replica, 5 ms of CPU each (or --rate); the headline is the
    steady state, after the start-up ramp. Example: [bold]probesim run k8s/[/bold]

    Exit codes: 0 done (every threshold holds), 2 bad input, 99 a threshold crossed (as k6).

    Example: [bold]probesim run seed000-slow-start-killed --set spec.traffic[0].rate=5[/bold]
    """
    import json

    if runs is not None:
        from probesim.runs import one_thread_per_worker

        one_thread_per_worker()  # before numpy loads: the workers fork from this process
    from probesim.engine import simulate
    from probesim.model.judged import judged_by
    from probesim.report.terminal import render_result
    from probesim.report.thresholds import render_thresholds, to_junit
    from probesim.results.thresholds import EXIT_CROSSED, crossed, evaluate

    event_lines = _event_lines(events, no_events)
    if plot is not None:
        _check_plot_path(plot)
        if runs is not None:
            raise InputError("--plot draws one run; --runs gives figures over many: give one")
    if report is not None:
        check_output_path(report, "the report", ".html")
        if runs is not None:
            raise InputError("--report shows one run; --runs gives figures over many: give one")
    if runs is None and (workers is not None or scheduler is not None):
        raise InputError("--workers and --scheduler run --runs in parallel: give --runs N")
    targets = [scenario, *(more or [])]
    if config is not None and stress is None:
        raise InputError(
            "--config goes with --stress: its profile corrections shape the stress", field="--config"
        )
    if stress is not None or workload is not None:
        shaping: dict[str, object] = {"--start": start, "--rate": rate, "--duration": duration, "--set":
                                      sets or None, "--print-scenario": print_scenario or None}  # fmt: skip
        loaded: tuple[Scenario, Generated | None] | list[tuple[Scenario, Generated]] | None = _stress_target(
            targets, manifests or (), stress, workload, shaping, config
        )
    else:
        loaded = _run_target(targets, manifests or (), sets or (), start, rate, duration, print_scenario)
    if loaded is None:
        return
    if isinstance(loaded, list):  # variants: each folder's scenario (manifests/variants.py)
        given = {"--plot": plot, "--report": report, "--runs": runs, "--junit": junit}
        one_variant_only([g.variant for _sc, g in loaded], [k for k, v in given.items() if v])
        _run_variants(loaded, scenario, max_cost, threshold or (), seed, as_json, series, event_lines)
        return
    sc, generated = loaded
    check_cost(sc, scenario, max_cost)
    if runs is not None:
        from probesim.cost import run_cost
        from probesim.sweep import check_total_cost

        units = run_cost(sc).units * runs
        check_total_cost(units, max_total_cost, f"{runs:,} runs", "give fewer --runs", scenario)
    thresholds = judged_by(sc, threshold or (), scenario)
    if junit is not None:
        check_output_path(junit, "the JUnit report", ".xml")
    if generated is not None:
        tell_generated(generated, sc)
    if seed is not None:
        sc = sc.model_copy(update={"spec": sc.spec.model_copy(update={"seed": seed})})
    if runs is not None:
        _monte_carlo(sc, runs, workers, scheduler, as_json, thresholds)
        return
    result = simulate(sc)
    verdicts = evaluate(thresholds, result)
    if junit is not None:
        write_file(junit, to_junit(verdicts, sc.name), "the JUnit report")
    if plot is not None:
        from probesim.report.plot import plot_result

        try:
            plot_result(result, plot)
        except OSError as e:
            raise InputError(f"cannot write the plot: {e.strerror}", file=str(plot)) from None
    if report is not None:
        # The page reads what --json prints (with the series), so run --report and report agree.
        from probesim.report.html import write_page
        from probesim.report.run_page import render_run

        write_page(render_run(result.to_json() | {"thresholds": [v.to_json() for v in verdicts]}), report)
    if as_json:
        doc = result.to_json(series=series)
        doc["thresholds"] = [v.to_json() for v in verdicts]
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        render_result(result, out, events=event_lines != 0, event_lines=event_lines)
        render_thresholds(verdicts, out)
    if crossed(verdicts):
        raise typer.Exit(EXIT_CROSSED)


def _run_variants(
    loaded: "list[tuple[Scenario, Generated]]",
    target: str,
    max_cost: int,
    threshold: Sequence[str],
    seed: int | None,
    as_json: bool,
    series: bool,
    event_lines: int | None,
) -> None:
    """run on input of variants: every variant checked first, then each run and reported; the
    exit code is the worst variant's."""
    from probesim.cli.variants import run_variants
    from probesim.model.judged import judged_by

    for sc, _g in loaded:
        check_cost(sc, target, max_cost)
    judged = [(sc, g, judged_by(sc, threshold, target)) for sc, g in loaded]
    for sc, g in loaded:
        err.print(Text(visible(g.heading(), 1000), style="bold"), soft_wrap=True)
        tell_generated(g, sc)
    code = run_variants(judged, seed, as_json, series, event_lines, out)
    if code:
        raise typer.Exit(code)


def _event_lines(value: str, no_events: bool) -> int | None:
    """run's --events (and --no-events): the event lines shown at each end of the timeline, None
    for all of them, 0 for none."""
    v = value.strip().lower()
    if no_events:
        if value != "20":
            raise InputError(f"contradicts --events {visible(value)}: give one", field="--no-events")
        return 0
    if v in ("all", "none"):
        return None if v == "all" else 0
    if v.isascii() and v.isdigit() and len(v) <= 9:
        return int(v)
    raise InputError(
        f"{visible(value)!r} is not a number of lines (0 to 999,999,999), all or none", field="--events"
    )


def _run_target(
    targets: list[str],
    manifests: Sequence[str],
    sets: Sequence[str],
    start: str | None,
    rate: float | None,
    duration: str | None,
    print_scenario: bool,
) -> "tuple[Scenario, Generated | None] | list[tuple[Scenario, Generated]] | None":
    """run's scenario: the file or built-in named, or the one generated from manifests (with
    it), or one per variant; None once --print-scenario has printed it."""
    plain = (start, rate, duration) == (None, None, None) and not print_scenario
    if plain and len(targets) == 1 and targets[0] != "-" and not exists(targets[0]):
        # A built-in's name, as from_arguments would decide, without importing the manifest
        # analysis it needs for files (0.05 s of the command's start-up).
        return load(targets[0], manifests, sets), None
    from probesim.manifests.generated import from_arguments

    found = from_arguments(targets, manifests, start, rate, duration, print_scenario)
    if found is None:
        return load(targets[0], manifests, sets), None
    from probesim.overrides import parse_set

    if len(found) > 1:
        one_variant_only([g.variant for g in found], ["--print-scenario"] if print_scenario else [])
        each = []
        for g in found:
            sc, said = g.load([parse_set(s) for s in sets])
            warn(said)
            each.append((sc, g))
        return each
    generated = found[0]
    if print_scenario:
        if sets:
            raise InputError("--print-scenario prints the scenario before --set: give one", field="--set")
        sys.stdout.write(generated.text)
        return None
    sc, said = generated.load([parse_set(s) for s in sets])
    warn(said)
    return sc, generated


def _stress_target(
    targets: list[str],
    manifests: Sequence[str],
    stress: str | None,
    workload: str | None,
    shaping: dict[str, object],
    config: str | None = None,
) -> "tuple[Scenario, None]":
    """run --workload W --stress S: the scenario check --stress simulates for W under S, from the
    manifests given (read as check reads them: a document that cannot be read is said and read
    past) or the scenario file given (its behaviour and traffic, over the files it names or the
    -m ones, as check --scenario lints them). ``shaping``: the options that would change it;
    ``config``: the config file (check's default when None)."""
    from probesim.analysis.check import load_config
    from probesim.analysis.rerun import stress_scenario_of
    from probesim.manifests import kubernetes as k8s

    if stress is None or workload is None:
        missing = "--stress" if stress is None else "--workload"
        raise InputError("--stress and --workload go together: give both (e.g. --workload "
                         "Deployment/web --stress traffic-x2)", field=missing)  # fmt: skip
    clash = [k for k, v in shaping.items() if v is not None]
    if clash:
        raise InputError(f"--stress runs the stress as check simulates it: give {clash[0]} without --stress",
                         field=clash[0])  # fmt: skip
    from probesim.manifests.discovery import read_manifests
    from probesim.manifests.generated import are_manifests

    errors: list[InputError] = []
    given: Scenario | None = None
    if are_manifests(targets):
        docs, _inputs = read_manifests(list(dict.fromkeys([*targets, *manifests])), errors)
    else:  # a scenario: its behaviour and traffic, over the objects check would lint with it
        from probesim.manifests.scenario import scenario_manifest_docs

        given = load(targets[0])
        docs, named = scenario_manifest_docs(scenario_path(targets[0]))
        files = list(manifests) or named
        docs += read_manifests(files, errors)[0] if files else []
    objects = k8s.parse(docs, errors=errors, once=given is not None)
    warn(f"{e} (read past)" for e in errors)
    corrections = load_config(config).profiles
    return stress_scenario_of(objects, given, workload, stress, corrections), None


def _monte_carlo(
    sc: "Scenario",
    runs: int,
    workers: int | None,
    scheduler: str | None,
    as_json: bool,
    thresholds: "Sequence[Threshold]",
) -> None:
    """run --runs: the figures over ``runs`` seeds, as a table or --json; exit 99 when a run
    crossed a threshold, as a single run does."""
    import json

    from probesim.montecarlo import monte_carlo
    from probesim.report.runs import progress_bar, render_monte_carlo
    from probesim.results.thresholds import EXIT_CROSSED

    mc = monte_carlo(sc, runs, thresholds, workers, scheduler, progress_bar(err))
    if as_json:
        sys.stdout.write(json.dumps(mc.to_json(), indent=2) + "\n")
    else:
        render_monte_carlo(mc, out)
    if any(c.runs for c in mc.thresholds):
        raise typer.Exit(EXIT_CROSSED)


def _check_plot_path(plot: Path) -> None:
    """--plot names a new or existing .png file in an existing folder (checked before the run)."""
    if plot.suffix.lower() != ".png" or plot.name == plot.suffix:
        raise InputError("the plot is a PNG image: give a file name ending in .png", file=str(plot))
    check_output_path(plot, "the plot", ".png")
