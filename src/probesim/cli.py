"""The ``probesim`` command line."""

import errno
import io
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from probesim import __version__
from probesim.cost import DEFAULT_MAX_COST, DEFAULT_MAX_TOTAL_COST
from probesim.errors import InputError, InputWarning, check_writable
from probesim.safe import MESSAGE_LIMIT, markup, visible

if TYPE_CHECKING:
    from probesim.analysis.default_scenario import Generated
    from probesim.manifests.yamlsrc import Doc
    from probesim.model.scenario import Scenario
    from probesim.model.threshold import Threshold

app = typer.Typer(
    name="probesim",
    help=(
        "See what Kubernetes probes will do to your service before production does.\n\n"
        "probesim simulates the kubelet's startup, readiness and liveness probes, container "
        "restarts with CrashLoopBackOff, pod readiness and Service endpoints for your real "
        "manifests, under a scripted workload and traffic, deterministically and in seconds."
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)
# Not a terminal (a pipe, CI logs): wide enough that tables are not cut to 80 columns. No emoji
# codes: ":100:" in a user's path is text.
out = Console(width=None if sys.stdout.isatty() else 160, emoji=False)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160, emoji=False)


def _lab_seconds(given: str, option: str) -> float:
    """A lab option's duration in seconds (scenario units: 20s, 2m), bounded to 1 s-1 h."""
    from probesim.model.duration import parse_ms  # imports pydantic: not at start-up

    try:
        seconds = parse_ms(given) / 1000
    except ValueError as e:
        raise InputError(str(e), field=option) from None
    if not 1 <= seconds <= 3600:
        raise InputError(f"{given} is outside 1s to 1h", field=option)
    return seconds


def _fail(e: InputError) -> typer.Exit:
    """One line on stderr, the user's text in it shown as text (probesim.safe); exit 2."""
    line = visible(str(e), limit=10 * MESSAGE_LIMIT)
    err.print(Text.assemble(("error:", "red"), " ", line), soft_wrap=True)
    return typer.Exit(2)


MAX_COST_OPTION = typer.Option(
    "--max-cost",
    help="Refuse a run estimated to cost more than this many work units (about a microsecond each; "
    "steps × (100 + containers + per route 500 + pods × (1 + dependency calls))). "
    "See docs/scenarios.md.",
    min=1,
)


SET_OPTION = typer.Option(
    "--set",
    help="Change a field before the scenario is checked, path=value (repeatable): a scenario field "
    "(spec.traffic[0].rate=500, spec.seed=3) or an object's (deployment/web.spec.replicas=3, "
    "kind/namespace/name.field). The value is YAML: 500, 10s, true.",
)
MAX_TOTAL_COST_OPTION = typer.Option(
    "--max-total-cost",
    help="Refuse many runs (--runs, a sweep) estimated together to cost more than this many work units "
    "(about a microsecond each; the default is about 17 minutes of CPU).",
    min=1,
)
WORKERS_OPTION = typer.Option(help="Local worker processes (default: one per core).", min=1)
SCHEDULER_OPTION = typer.Option(
    help="Run on the Dask distributed cluster whose scheduler is at tcp://host:port (see docs/sweeps.md)."
)


def _check_cost(sc: "Scenario", target: str, limit: int) -> None:
    """Refuse, before it starts, a run that would take too long or too much memory."""
    from probesim.cost import run_cost

    cost = run_cost(sc)
    if cost.units > limit:
        raise InputError(
            f"this run would cost {cost.explain()}, more than --max-cost {limit:,}; shorten "
            "spec.duration, coarsen spec.step, run fewer pods or routes, or raise --max-cost",
            file=target,
        )


def _check_output_path(path: Path, what: str, suffix: str) -> None:
    """An output file named ``*suffix`` (case aside) in an existing folder, checked before the run."""
    if path.suffix.lower() != suffix or path.name == path.suffix:
        raise InputError(
            f"{what} is written to a {suffix} file: give a file name ending in {suffix}", file=str(path)
        )
    check_writable(path, what)


def _check_plot_path(plot: Path) -> None:
    """--plot names a new or existing .png file in an existing folder (checked before the run)."""
    if plot.suffix.lower() != ".png" or plot.name == plot.suffix:
        raise InputError("the plot is a PNG image: give a file name ending in .png", file=str(plot))
    _check_output_path(plot, "the plot", ".png")


def _write_report(doc: dict[str, Any], path: Path) -> None:
    """The run's HTML report from its JSON document (the one --json prints)."""
    from probesim.report.html import render_run, write_page

    try:
        write_page(render_run(doc), path)
    except InputError as e:
        raise _fail(e) from None


def _exists(path: str) -> bool:
    """Whether ``path`` exists; a name the system refuses (too long, a NUL) does not."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def _scenario_path(target: str) -> str:
    """A scenario file's path: ``target`` itself, '-', or the file of the built-in of that name."""
    from probesim.scenarios import find
    from probesim.scenarios import names as builtin_names

    if target == "-" or _exists(target):
        return target
    b = find(target)
    if b is None:
        names = ", ".join(builtin_names())
        raise InputError(
            f"no such file, and no built-in scenario of that name (built-in: {names})", file=target
        )
    return str(b.path)


def _load(target: str, manifests: Sequence[str] = (), sets: Sequence[str] = ()) -> "Scenario":
    from probesim.manifests.scenario import load_scenario
    from probesim.overrides import parse_set

    overrides = [parse_set(s) for s in sets]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        sc = load_scenario(_scenario_path(target), manifests, overrides)
    _warn(dict.fromkeys(str(w.message) for w in said if issubclass(w.category, InputWarning)))
    return sc


def _warn(messages: Iterable[str]) -> None:
    """Input warnings, each once, on stderr."""
    for m in messages:
        err.print(
            f"[yellow]warning:[/yellow] {markup(m, MESSAGE_LIMIT)}",
            highlight=False,
            soft_wrap=True,
            emoji=False,
        )


@app.command()
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
    from probesim.model.threshold import judged_by
    from probesim.report.terminal import render_result
    from probesim.report.thresholds import render_thresholds, to_junit
    from probesim.results.thresholds import EXIT_CROSSED, crossed, evaluate

    try:
        event_lines = _event_lines(events, no_events)
        if plot is not None:
            _check_plot_path(plot)
            if runs is not None:
                raise InputError("--plot draws one run; --runs gives figures over many: give one")
        if report is not None:
            _check_output_path(report, "the report", ".html")
            if runs is not None:
                raise InputError("--report shows one run; --runs gives figures over many: give one")
        if runs is None and (workers is not None or scheduler is not None):
            raise InputError("--workers and --scheduler run --runs in parallel: give --runs N")
        targets = [scenario, *(more or [])]
        loaded = _run_target(targets, manifests or (), sets or (), start, rate, duration, print_scenario)
        if loaded is None:
            return
        sc, generated = loaded
        _check_cost(sc, scenario, max_cost)
        if runs is not None:
            from probesim.cost import run_cost
            from probesim.sweep import check_total_cost

            units = run_cost(sc).units * runs
            check_total_cost(units, max_total_cost, f"{runs:,} runs", "give fewer --runs", scenario)
        thresholds = judged_by(sc, threshold or (), scenario)
        if junit is not None:
            _check_output_path(junit, "the JUnit report", ".xml")
    except InputError as e:
        raise _fail(e) from None
    if generated is not None:
        _tell_generated(generated, sc)
    if seed is not None:
        sc = sc.model_copy(update={"spec": sc.spec.model_copy(update={"seed": seed})})
    if runs is not None:
        _monte_carlo(sc, runs, workers, scheduler, as_json, thresholds)
        return
    result = simulate(sc)
    verdicts = evaluate(thresholds, result)
    if junit is not None:
        try:
            junit.write_text(to_junit(verdicts, sc.name), encoding="utf-8")
        except OSError as e:
            raise _fail(InputError(f"cannot write the JUnit report: {e.strerror}", file=str(junit))) from None
    if plot is not None:
        from probesim.report.plot import plot_result

        try:
            plot_result(result, plot)
        except OSError as e:
            raise _fail(InputError(f"cannot write the plot: {e.strerror}", file=str(plot))) from None
    if report is not None:
        # The page reads what --json prints (with the series), so run --report and report agree.
        _write_report(result.to_json() | {"thresholds": [v.to_json() for v in verdicts]}, report)
    if as_json:
        doc = result.to_json(series=series)
        doc["thresholds"] = [v.to_json() for v in verdicts]
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        render_result(result, out, events=event_lines != 0, event_lines=event_lines)
        render_thresholds(verdicts, out)
    if crossed(verdicts):
        raise typer.Exit(EXIT_CROSSED)


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
) -> "tuple[Scenario, Generated | None] | None":
    """run's scenario: the file or built-in named, or the one generated from manifests (with
    it); None once --print-scenario has printed it."""
    plain = (start, rate, duration) == (None, None, None) and not print_scenario
    if plain and len(targets) == 1 and targets[0] != "-" and not _exists(targets[0]):
        # A built-in's name, as from_arguments would decide, without importing the manifest
        # analysis it needs for files (0.05 s of the command's start-up).
        return _load(targets[0], manifests, sets), None
    from probesim.analysis.default_scenario import from_arguments

    generated = from_arguments(targets, manifests, start, rate, duration, print_scenario)
    if generated is None:
        return _load(targets[0], manifests, sets), None
    if print_scenario:
        if sets:
            raise InputError("--print-scenario prints the scenario before --set: give one", field="--set")
        sys.stdout.write(generated.text)
        return None
    from probesim.overrides import parse_set

    sc, said = generated.load([parse_set(s) for s in sets])
    _warn(said)
    return sc, generated


def _generated_for_sweep(target: str, manifests: Sequence[str]) -> "Generated | None":
    """The scenario run would generate when sweep's target is Kubernetes manifests (with -m
    files added), else None."""
    if target != "-" and not _exists(target):
        return None  # a built-in's name, as for run
    from probesim.analysis.default_scenario import from_arguments

    return from_arguments([target], manifests, None, None, None, False)


def _tell_generated(generated: "Generated", sc: "Scenario") -> None:
    """On stderr, once the run is sure to start: what the generated scenario runs, and a line
    on what it does not (as check says it)."""
    from probesim.analysis.check import CheckReport
    from probesim.report.check_outputs import render_skipped

    for line in generated.lines(sc):
        err.print(Text(line, style="dim"), soft_wrap=True)
    report = CheckReport(skipped=generated.skipped)
    render_skipped(report, err, False, "not simulated", "--print-scenario lists them, with why")


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

    try:
        mc = monte_carlo(sc, runs, thresholds, workers, scheduler, progress_bar(err))
    except InputError as e:
        raise _fail(e) from None
    if as_json:
        sys.stdout.write(json.dumps(mc.to_json(), indent=2) + "\n")
    else:
        render_monte_carlo(mc, out)
    if any(c.runs for c in mc.thresholds):
        raise typer.Exit(EXIT_CROSSED)


@app.command()
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
    try:
        check_output(output)
        if report is not None:
            _check_output_path(report, "the report", ".html")
        axes = [parse_axis(s) for s in sets or ()]
        generated = _generated_for_sweep(scenario, manifests or ())
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", InputWarning)
            p = plan(
                scenario if generated else _scenario_path(scenario),
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
        _warn(dict.fromkeys(str(w.message) for w in said if issubclass(w.category, InputWarning)))
        if generated is not None:
            _tell_generated(generated, generated.load()[0])
        rows = run_all(p.tasks, workers, scheduler, progress_bar(err))
        write_rows(rows, output)
        if report is not None:
            from probesim.report.html import read_input, write_page
            from probesim.report.sweep_page import load_rows, render_sweep

            # The page reads the rows as written, so sweep --report and report rows.csv agree.
            write_page(render_sweep(load_rows(read_input(str(output)), str(output))), report)
    except InputError as e:
        raise _fail(e) from None
    took = time.monotonic() - started
    err.print(
        Text.assemble(
            f"{len(rows):,} rows ({p.points:,} of {p.grid:,} points × {runs} run{'s' if runs > 1 else ''}) "
            "written to ",
            (visible(str(output)), "bold"),
            f" in {took:.1f} s",
        )
    )


@app.command()
def compare(
    targets: Annotated[list[str], typer.Argument(help="Scenario files or built-in names, two or more.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    seed: Annotated[int | None, typer.Option(help="Run every scenario with this seed.", min=0)] = None,
    max_cost: Annotated[int, MAX_COST_OPTION] = DEFAULT_MAX_COST,
) -> None:
    """Run scenarios and print them side by side: per route requests/s, error %, p95 and max
    latency, restarts, time without endpoints, dropped iterations.

    Example: [bold]probesim compare patient-all-ok patient-delays-no-probes patient-delays-liveness[/bold]
    """
    import json

    from probesim.engine import simulate
    from probesim.report.compare import render_compare, rows

    results = []
    for target in targets:
        try:
            sc = _load(target)
            _check_cost(sc, target, max_cost)
        except InputError as e:
            raise _fail(e) from None
        if seed is not None:
            sc = sc.model_copy(update={"spec": sc.spec.model_copy(update={"seed": seed})})
        results.append(simulate(sc))
    if as_json:
        sys.stdout.write(json.dumps(rows(results), indent=2) + "\n")
    else:
        render_compare(results, out)


@app.command()
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
    from probesim.report.html import load_check, render_run, write_page
    from probesim.report.sweep_page import SweepRows, load_page_input, render_sweep

    try:
        _check_output_path(output, "the report", ".html")
        doc = load_page_input(result)
        if isinstance(doc, SweepRows):
            if check is not None:
                raise InputError("a sweep's page has no check findings: --check goes with a run's result",
                                 field="--check")  # fmt: skip
            write_page(render_sweep(doc), output)
            return
        findings = None if check is None else load_check(check)
        write_page(render_run(doc, findings), output)
    except InputError as e:
        raise _fail(e) from None


@app.command()
def check(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Manifest files or directories (*.yaml, *.yml, *.json; helm template / kustomize output "
            "welcome); '-' for stdin."
        ),
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option(
            help="A scenario whose behaviour (start times, dependency calls) the rules may use; the "
            "objects written in it are linted too, and with no PATHS so are the files it names."
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text, json, sarif or junit.")] = "text",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report to this file.")
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(help="Exit 1 on findings at or above: info, warning, error (default) or never."),
    ] = None,
    config: Annotated[
        str | None, typer.Option(help="Config file (default: ./.probesim.yaml if present).")
    ] = None,
    list_rules: Annotated[bool, typer.Option("--list-rules", help="List the rules and exit.")] = False,
    stress: Annotated[
        bool,
        typer.Option(
            "--stress",
            help="Also simulate each workload alone, through its own Services, under the built-in "
            "stresses (PS100).",
        ),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every object and file read past, with why.")
    ] = False,
) -> None:
    """Check manifests with rules that reason about time, load and dependencies.

    Reads Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers, Jobs,
    CronJobs, Pods, Services, HPAs and Istio DestinationRules/VirtualServices; reads past other
    kinds, custom resources, kustomizations and unrendered Helm charts, saying so (-v lists them).

    Exit codes: 0 clean, 1 findings at or above --fail-on, 2 input error (YAML that does not
    parse, an invalid field in an object probesim reads, or no Kubernetes object at all). Every
    file is read first: each error is reported (in every format, -o written too) with the
    findings of the rest, then the check exits 2.
    Suppress a finding with the annotation [bold]probesim.dev/ignore: "PS010=reason"[/bold]
    (or [bold]probesim.dev/ignore-<container>[/bold]) on the object or its pod template.

    Example: [bold]helm template ./chart | probesim check - -f sarif -o probesim.sarif[/bold]
    """
    from probesim.analysis.check import check as run_check
    from probesim.analysis.check import load_config, selected_rules
    from probesim.report.check_outputs import render

    if fmt not in ("text", "json", "sarif", "junit"):
        raise _fail(InputError(f"unknown --format {fmt!r}; use text, json, sarif or junit"))
    if fail_on is not None and fail_on not in ("info", "warning", "error", "never"):
        raise _fail(InputError(f"unknown --fail-on {fail_on!r}; use info, warning, error or never"))
    try:
        cfg = load_config(config)
        if list_rules:
            t = Table(box=box.SIMPLE)
            for h in ("ID", "NAME", "SEVERITY", "WHAT IT FINDS"):
                t.add_column(h)
            for r in selected_rules(cfg):
                t.add_row(r.id, r.name, r.severity, r.title)
            out.print(t)
            return
        if not paths and not scenario:
            raise InputError("give manifest files, directories or '-' (see probesim check --help)")
        sc: Scenario | None = None
        inline: list[Doc] = []
        named: list[str] = []
        if scenario:
            from probesim.manifests.scenario import scenario_manifest_docs

            sc = _load(scenario)
            inline, named = scenario_manifest_docs(_scenario_path(scenario))
        report = run_check(list(paths or named), sc, cfg, stress=stress, scenario_docs=inline)
    except InputError as e:
        raise _fail(e) from None
    _warn(report.warnings)
    for entry in report.errors:  # first, one line each on stderr; the report carries them too
        _fail(entry)
    buffer = io.StringIO()
    console = out if output is None else Console(file=buffer, width=160)
    # Text on the terminal: the errors are on it already (above).
    text = render(report, fmt, console, verbose, with_errors=output is not None)
    if output is not None:
        try:
            output.write_text(text if text is not None else buffer.getvalue(), encoding="utf-8")
        except OSError as e:
            raise _fail(InputError(f"cannot write the report: {e.strerror}", file=str(output))) from None
    elif text is not None:
        sys.stdout.write(text)
    if report.errors:
        raise typer.Exit(2)
    if report.fails(fail_on or cfg.fail_on):  # type: ignore[arg-type]
        raise typer.Exit(1)


@app.command()
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
) -> None:
    """Search probe settings (and Istio outlier detection) that fail fewer requests, restart
    nothing needlessly and take a hung pod out of service sooner; print the Pareto front, the
    recommended setting beside the current one, and the patch with its kubectl command.

    The study is kept in a database (SQLite in .probesim/ by default): run the same command
    again to add trials to it. See docs/tune.md.

    Example: [bold]probesim tune k8s/ --scenario s.yaml --workload web -o patch.yaml[/bold]
    """
    from probesim.tune.command import tune as run_tune

    try:
        if report is not None:
            _check_output_path(report, "the report", ".html")
        target = _scenario_path(scenario) if scenario is not None else None
        run_tune(paths or [], target, workload, trials, seed, storage, study, timeout, scheduler, workers,
                 output, as_json, out, err, report)  # fmt: skip
    except InputError as e:
        raise _fail(e) from None
    except KeyboardInterrupt:
        err.print("[yellow]stopped: the finished trials are kept in the study; run again to resume[/]")
        raise typer.Exit(130) from None


@app.command("envoy-config")
def envoy_config(
    paths: Annotated[
        list[str], typer.Argument(help="YAML with DestinationRules, VirtualServices (and Services).")
    ],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")] = None,
    bootstrap: Annotated[
        bool,
        typer.Option("--bootstrap", help="A complete static bootstrap (listener and admin on 127.0.0.1)."),
    ] = False,
    endpoint: Annotated[
        list[str] | None,
        typer.Option(help="Endpoints of a service as NAME=HOST:PORT (repeatable), e.g. web=127.0.0.1:8081."),
    ] = None,
    port: Annotated[int, typer.Option(help="Listener port of the bootstrap.", min=1, max=65535)] = 10000,
    admin_port: Annotated[int, typer.Option(help="Admin port of the bootstrap.", min=1, max=65535)] = 9901,
) -> None:
    """Print the Envoy v3 clusters, routes and filters Istio would produce for these objects.

    With --bootstrap, a complete static configuration that `envoy --mode validate -c` accepts.
    """
    import yaml

    from probesim.mesh.envoy import Translator
    from probesim.mesh.load import load_mesh

    eps: dict[str, list[tuple[str, int]]] = {}
    try:
        for item in endpoint or []:
            name, _, addr = item.partition("=")
            host, _, num = addr.rpartition(":")
            if not name or not host or not num.isdigit():
                raise InputError(f"--endpoint {item!r}: use NAME=HOST:PORT, e.g. web=127.0.0.1:8081")
            eps.setdefault(name, []).append((host, int(num)))
        rules, vss, objects = load_mesh(paths)
    except InputError as e:
        raise _fail(e) from None
    tr = Translator(rules, vss, objects.services, eps)
    doc = tr.bootstrap(port, admin_port) if bootstrap else tr.config()
    text = yaml.safe_dump(doc, sort_keys=False)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as e:
            raise _fail(InputError(f"cannot write: {e.strerror}", file=str(output))) from None


@app.command("app")
def app_command(
    port: Annotated[
        int, typer.Option(help="Port on 127.0.0.1 (also read from $PORT).", min=1, max=65535, envvar="PORT")
    ],
    behavior: Annotated[
        str,
        typer.Option(
            help="The container behaviour, JSON or YAML (a scenario's behavior.<workload>.containers.<name>)."
        ),
    ] = "{}",
    grpc_port: Annotated[
        int | None,
        typer.Option(
            help="Also serve gRPC health (grpc.health.v1) on this port; it answers as the path 'grpc'.",
            min=1,
            max=65535,
            envvar="GRPC_PORT",
        ),
    ] = None,
    dependency: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME=URL of a dependency its routes call (a route's calls), e.g. "
            "db=http://127.0.0.1:9000/; repeat for more. Only 127.0.0.1."
        ),
    ] = None,
) -> None:
    """Run the lab's test app: an HTTP server on 127.0.0.1 that acts out a container's behaviour
    for real (start delay, hangs, deadlocks, crashes, error windows, costs, worker pool, SIGTERM),
    with gRPC health on --grpc-port.

    Example: [bold]probesim app --port 8081 --behavior '{start: 5s, paths: {/healthz: 200}}'[/bold]
    """
    import yaml
    from pydantic import ValidationError

    from probesim.lab.app import serve
    from probesim.model.scenario import ContainerBehavior

    try:
        data = yaml.safe_load(behavior)
        cb = ContainerBehavior.model_validate(data or {})
    except yaml.YAMLError as e:
        raise _fail(InputError(f"--behavior is not valid YAML or JSON: {e}")) from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise _fail(InputError(f"{first['msg']}", field=f"--behavior {where}")) from None
    urls: dict[str, str] = {}
    for item in dependency or []:
        name, _, url = item.partition("=")
        if not name or not url.startswith("http://127.0.0.1:"):
            raise _fail(InputError(f"{item!r}: use NAME=http://127.0.0.1:PORT/...", field="--dependency"))
        urls[name] = url
    serve(cb, port, grpc_port, urls)


@app.command()
def lab(
    scenario: Annotated[
        str, typer.Argument(help="Scenario file or built-in name; one of its workloads runs for real.")
    ],
    duration: Annotated[
        str | None,
        typer.Option(
            help="How long to run, e.g. 20s or 2m, from 1s to 1h (default: the scenario's duration)."
        ),
    ] = None,
    compare_sim: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="Also simulate the same span and compare, figure by figure: event times, "
            "ejections, ready replicas each second, when ReplicaSets grew and shrank, rollouts' ends, "
            "restarts, failed requests by cause; exit 1 when a figure differs beyond its tolerance.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    command: Annotated[
        list[str] | None,
        typer.Option(
            help="Run this command per pod instead of the test app. It must serve HTTP on 127.0.0.1:$PORT "
            "(and gRPC health on $GRPC_PORT when a probe uses gRPC). It runs without a shell, as you: "
            "give the program and each argument as a --command of its own "
            "(--command python3 --command server.py); nothing is expanded or piped."
        ),
    ] = None,
    command_for: Annotated[
        list[str] | None,
        typer.Option(
            help="REVISION=COMMAND: run COMMAND for the pods of one revision of a rolled-out Deployment "
            "instead of the test app (or --command): REVISION is 1 for the manifest's template, 2 for "
            "the first rollout's or restart's, and so on, or the ReplicaSet's name (web-5d4588bb9d). "
            "COMMAND is split into words as a shell would (quotes group them) and runs without a shell, "
            "like --command: --command-for '2=python3 server.py --v2'. Repeat it per revision."
        ),
    ] = None,
    allow_exec: Annotated[
        bool,
        typer.Option(
            "--allow-exec",
            help="Run the manifest's exec probes: their commands run on this machine, as you, without "
            "a shell (there is no container). Without it a scenario with exec probes is refused.",
        ),
    ] = False,
    workload: Annotated[
        str | None,
        typer.Option(help="Run only this workload for real (default: every workload of the scenario)."),
    ] = None,
    listen_timeout: Annotated[
        str,
        typer.Option(
            help="How long a --command may take to listen on $PORT before the lab stops with an "
            "error (the startup probe's budget if longer)."
        ),
    ] = "30s",
) -> None:
    """Run a scenario's workloads for real on 127.0.0.1 (each with its Services, probes, restarts
    and rollouts): pods as processes, probed as the
    kubelet probes them, restarted with CrashLoopBackOff; its traffic sent open-loop, through one
    real Envoy per client pod when DestinationRules or VirtualServices name the Service (the
    configuration of probesim envoy-config), with endpoints following readiness. With --compare,
    side by side with the simulation. Every child process is stopped when it ends, fails or is
    interrupted (Ctrl-C, SIGTERM, SIGHUP), and dies with the lab if it is killed.

    A Deployment's rollout, rollback, restart, scale, pause and resume actions run for real: its
    controller creates the new revision's pods (acting out that revision's behavior, or
    --command-for) and deletes old ones as maxSurge, maxUnavailable and minReadySeconds allow;
    --compare then also compares when the ReplicaSets grew and shrank and each rollout's end.

    Limits, refused up front: at most 12 pods over all workloads (during a rollout: replicas +
    maxSurge), 2000 requests per second over all routes, 1 hour;
    exec probes only with --allow-exec. Envoy's admin interface is a Unix socket for you only.

    Exit codes: 0 done (with --compare: every figure agrees within its tolerance), 1 the lab and
    the simulation disagree on a figure beyond its tolerance, 2 bad input.

    Example: probesim lab seed003-outlier --duration 20s --compare
    """
    import json

    from probesim.engine import simulate
    from probesim.lab.compare import agree, compare, outlier_interval_ms, simulated_hosts
    from probesim.lab.orchestrator import Stopped, run_lab
    from probesim.lab.progress import Progress
    from probesim.report.compare import render_lab_comparison
    from probesim.report.terminal import render_result

    try:
        sc = _load(scenario)
    except InputError as e:
        raise _fail(e) from None
    try:
        run_s = None if duration is None else _lab_seconds(duration, "--duration")
        listen_s = _lab_seconds(listen_timeout, "--listen-timeout")
        others = [w.name for w in sc.workloads if workload is not None and w.name != workload]
        if others and len(others) == len(sc.workloads) - 1:
            err.print(
                f"[yellow]the lab runs {markup(workload or '')} (--workload); not run: "
                f"{markup(', '.join(others))}, nor the traffic to their Services[/]",
                emoji=False,
            )
        with Progress(err, run_s if run_s is not None else sc.spec.duration / 1000) as progress:
            result = run_lab(sc, run_s, command, progress, listen_s, workload, allow_exec, command_for)
    except InputError as e:
        raise _fail(e) from None
    except Stopped as e:
        err.print(f"[yellow]{e}: every child process stopped[/]", highlight=False)
        raise typer.Exit(128 + e.signum) from None
    rows = []
    if compare_sim:
        span = sc.cut_to(result.duration_ms)
        hosts = {**simulated_hosts(span), **result.hosts}  # ejections compared per pod, by name
        rows = compare(simulate(span), result, outlier_interval_ms(sc), hosts=hosts)
    if as_json:
        doc = result.to_json(series=False)
        if compare_sim:
            doc["comparison"] = {"rows": rows, "agree": agree(rows)}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        render_result(result, out)
        if compare_sim:
            render_lab_comparison(rows, out)
    if compare_sim and not agree(rows):
        raise typer.Exit(1)


@app.command()
def scenarios() -> None:
    """List the built-in scenarios, each with what it shows. Run one with 'probesim run NAME'."""
    from probesim.scenarios import builtins

    t = Table(box=box.SIMPLE)
    t.add_column("NAME", no_wrap=True)
    t.add_column("WHAT IT SHOWS")
    for b in builtins():
        t.add_row(b.name, b.description)
    out.print(t)


@app.command()
def demo(
    show_events: Annotated[bool, typer.Option("--events", help="Print each combination's log.")] = False,
) -> None:
    """The seed-000 demo on the logical tick model.

    pod-1 is warm; pod-2 needs 8 ticks to start and hangs for 3 ticks from age 14; 2 requests
    per tick for 26 ticks. Eight probe combinations: only readiness + startup + a loose
    liveness give 0 dropped and 0 restarts.
    """
    from probesim.demo import RPS, TICKS, run_demo

    rows = run_demo()
    t = Table(
        title=f"seed-000 demo: {TICKS} ticks, {RPS} requests per tick", title_justify="left", box=box.SIMPLE
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
        t.add_column(
            h, justify="right" if h.startswith(("S", "D", "R")) and h not in ("READINESS",) else "left"
        )
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
    out.print(t)
    if show_events:
        for r in rows:
            out.print(
                f"\n[bold]readiness {'on' if r.readiness else 'off'}, liveness "
                f"{'strict' if r.strict_liveness else 'loose'}, startup {'on' if r.startup else 'off'}[/bold]"
            )
            for line in r.sim.log:
                out.print(line, highlight=False)


@app.command()
def schema() -> None:
    """Print the JSON Schema of scenario files (for editor completion and validation)."""
    import json

    from probesim.model.scenario import API_VERSION, ScenarioFile

    doc = ScenarioFile.model_json_schema(by_alias=True)
    doc = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{API_VERSION}/Scenario", **doc}
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


@app.command()
def version() -> None:
    """Print probesim's version."""
    out.print(f"probesim {__version__}")


def main() -> None:
    _import_typer_help()
    _build_only_the_command_given()
    if sys.argv[1:2] and sys.argv[1] in _SIMULATING and not {"--help", "-h"} & set(sys.argv[2:]):
        _numpy_with_one_blas_thread()
    try:
        app()
    except SystemExit:
        _flush_stdout()
        raise
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EDQUOT, errno.EFBIG):
            raise
        _stdout_failed(e)
    _flush_stdout()


# The commands that import numpy (they simulate, or read a run's series).
_SIMULATING = frozenset({"run", "sweep", "compare", "report", "check", "tune", "lab", "demo"})


def _numpy_with_one_blas_thread() -> None:
    """Import numpy with its BLAS (OpenBLAS) on one thread.

    OpenBLAS starts a thread per CPU as numpy loads, and they spin looking for work for a tenth
    of a second or so: about a sixth of the CPU time of ``probesim run seed000-demo``, for a
    library whose one matrix product here (a few hundred rows, results the same to the bit on
    one thread: benchmarks/startup.py) does not need them. OpenBLAS reads the variable once,
    as it loads, so it is removed at once: nothing probesim starts (the lab's apps, Envoy)
    inherits it, and a user's own setting is left as it is (the worker processes of run --runs
    and sweep keep it set: runs.one_thread_per_worker)."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


class _Markdown:
    """Stands in for rich.markdown.Markdown in typer.rich_utils: the real one, made on use."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _Traceback:
    """Stands in for rich.traceback.Traceback in typer.rich_utils: the real one, made on use."""

    @staticmethod
    def from_exception(*args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


def _import_typer_help() -> None:
    """Import typer's help and error renderer without rich.markdown and rich.traceback.

    typer.rich_utils imports both at its top (markdown-it, pygments: about 50 ms, a third of
    ``probesim --help``), though it makes a Markdown only in markdown markup mode (ours is rich)
    and a Traceback only for an uncaught exception. Stand-ins that import the real class when
    called take their place while it loads, so help, errors and tracebacks are unchanged
    (tests/cli/test_startup.py). Done only if neither is loaded yet; the real modules load
    normally afterwards.
    """
    stand_ins = {"rich.markdown": ("Markdown", _Markdown), "rich.traceback": ("Traceback", _Traceback)}
    if "typer.rich_utils" in sys.modules or any(m in sys.modules for m in stand_ins):
        return
    import types

    for name, (attr, cls) in stand_ins.items():
        module = types.ModuleType(name)
        setattr(module, attr, cls)
        sys.modules[name] = module
    try:
        import typer.rich_utils  # noqa: F401
    except ImportError:  # a typer wanting more of them: load it as it is
        sys.modules.pop("typer.rich_utils", None)
    finally:
        for name in stand_ins:
            del sys.modules[name]


def _build_only_the_command_given() -> None:
    """Let typer build only the command named on the command line (and ``version``, so that the
    app stays a group of commands: typer runs a lone command without its name).

    typer builds every command's click parameters before it looks at the arguments, 5 % of
    ``probesim run seed000-demo``. Help, usage errors and what a command does are the same
    (tests/cli/test_startup.py compares them with the whole app); anything else (no command,
    an option, an unknown name, the lab group) is given the whole app."""
    from typer.main import get_command_name

    given = sys.argv[1] if len(sys.argv) > 1 else ""
    partner = "schema" if given == "version" else "version"
    keep = [
        c
        for c in app.registered_commands
        if (c.name or get_command_name(c.callback.__name__ if c.callback else "")) in (given, partner)
    ]
    if len(keep) == 2:
        app.registered_commands = keep


def _flush_stdout() -> None:
    """Flush standard output now: a full disk is then an error here, not a traceback at exit."""
    try:
        sys.stdout.flush()
    except OSError as e:
        _stdout_failed(e)


def _stdout_failed(e: OSError) -> None:
    """Standard output cannot be written (a full disk, a closed pipe): one line, exit 2 (a
    closed pipe, as ``| head``: quietly, exit 1)."""
    # What is still buffered goes nowhere, so that Python's own flush at exit cannot fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    if e.errno == errno.EPIPE:
        raise SystemExit(1)
    err.print(Text.assemble(("error:", "red"), f" <stdout>: cannot write: {e.strerror}"), soft_wrap=True)
    raise SystemExit(2)
