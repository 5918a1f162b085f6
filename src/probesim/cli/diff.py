"""``probesim diff``: what a change of manifests does — the two sides matched object by object,
each changed workload simulated on both, the figures side by side with a verdict each, the new
and resolved check findings — as text, JSON, Markdown (a pull request's comment) or SARIF."""

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from probesim.cli.common import WORKERS_OPTION, command, fail, load, warn
from probesim.cli.program import err
from probesim.cli.report_options import OUTPUT_OPTION, config_option, format_option, write_report
from probesim.errors import InputError

FORMATS = ("text", "json", "markdown", "sarif")
SEVERITIES = ("info", "warning", "error")


def _fail_on(given: list[str] | None) -> list[str]:
    rules = given or ["worse"]
    for r in rules:
        kind, _, severity = r.partition("=")
        if r in ("worse", "never", "new-findings") or (kind == "new-findings" and severity in SEVERITIES):
            continue
        raise InputError(
            f"unknown --fail-on {r!r}; use worse, new-findings (errors), new-findings=warning, "
            "new-findings=info or never",
            field="--fail-on",
        )
    return rules


@command()
def diff(
    sides: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="BEFORE AFTER | -- PATH...",
            help="BEFORE AFTER: two files or folders of manifests ('-' for standard input, one side at "
            "most); with --git, the paths to read at both revisions (after --).",
        ),
    ] = None,
    git: Annotated[
        str | None,
        typer.Option(
            "--git",
            help="Read both sides from git: A..B (B as of A), A...B (B against where it forked from A, what "
            "a pull request merges) or A (A against the files as they are now).",
        ),
    ] = None,
    scenario: Annotated[
        str | None,
        typer.Option(
            help="A scenario whose behaviour, traffic and dependencies both sides run (its objects of the "
            "workload's names are replaced by each side's); without it, each changed workload alone "
            "under the default load model, as check --stress runs it."
        ),
    ] = None,
    render: Annotated[
        str | None,
        typer.Option(
            help="A command that prints the manifests (helm template ./chart, kustomize build "
            "overlays/prod), run by the shell in each side's folder (with --git, in each revision's tree)."
        ),
    ] = None,
    fmt: Annotated[str, format_option(FORMATS)] = "text",
    output: Annotated[Path | None, OUTPUT_OPTION] = None,
    fail_on: Annotated[
        list[str] | None,
        typer.Option(
            help="Exit 1 when: worse (a figure got worse; the default), new-findings (a new error finding), "
            "new-findings=warning or =info, never. Repeatable."
        ),
    ] = None,
    config: Annotated[str | None, config_option(": check's rules")] = None,
    rules_url: Annotated[
        str,
        typer.Option(
            help="Where the rules' documentation is, for Markdown's links (a pull request's comment needs "
            "an absolute URL: https://github.com/OWNER/REPO/blob/REF/docs/rules.md)."
        ),
    ] = "docs/rules.md",
    workers: Annotated[int | None, WORKERS_OPTION] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Text: every run's figures, not only those that moved.")
    ] = False,
) -> None:
    """Show what a change of manifests does: simulate both sides and compare.

    The objects are matched by kind, namespace and name (one moved to another file, or reordered,
    is unchanged). Each workload whose pod template, replicas, strategy, Services, HPA, PDB or
    Istio rules changed is listed with the fields that changed, then simulated on both sides —
    the stress suite (surge, slow start, pause, a failing pod, a hanging dependency, two
    rollouts), the app profile's slowest start, a pod that hangs for good, and --scenario when
    given — under two seeds, with each figure side by side (failed requests, needless restarts,
    readiness flaps, how long a hung pod keeps traffic, time to Ready, probe load, rollout
    duration) and a verdict: better, worse, or the same within the noise band the report
    states. Objects on one side only are listed, not simulated; unchanged workloads cost
    nothing. The check rules run on both sides: the findings the change adds are new, those it
    removes resolved.

    Exit codes: 0 nothing got worse (--fail-on), 1 something did, 2 bad input (a side that does
    not parse, an unknown revision).

    Examples:

      [bold]probesim diff k8s-old/ k8s/[/bold]
      [bold]probesim diff --git main..HEAD -- k8s/[/bold]
      [bold]probesim diff --git origin/main...HEAD -f markdown -o diff.md -- k8s/[/bold]
      [bold]probesim diff --git main --render 'helm template ./chart' -- chart/[/bold]
      [bold]helm template ./chart | probesim diff rendered-main.yaml -[/bold]
    """
    from probesim.analysis.check import load_config
    from probesim.analysis.diff import diff as run_diff
    from probesim.analysis.diff import fails
    from probesim.manifests.sides import git_sides, read_side
    from probesim.report.diff_outputs import render as render_report

    if fmt not in FORMATS:
        raise InputError(f"unknown --format {fmt!r}; use {', '.join(FORMATS)}", field="--format")
    rules = _fail_on(fail_on)
    if output is not None:
        from probesim.errors import check_writable

        check_writable(output, "the report")
    given = list(sides or [])
    if git is None and len(given) != 2:
        raise InputError(
            "give two sides, BEFORE AFTER (files, folders or '-'), or --git A..B -- PATH... "
            "(see probesim diff --help)"
        )
    if git is None and given.count("-") > 1:
        raise InputError("standard input can be one side only: give the other as a file or folder")
    if scenario == "-" and git is None and "-" in given:
        raise InputError("standard input cannot hold both the scenario and a side: give one as a file")
    cfg = load_config(config)
    sc = None
    if scenario is not None:
        from probesim.cost import DEFAULT_MAX_COST, run_cost

        sc = load(scenario)
        cost = run_cost(sc)
        if cost.units > DEFAULT_MAX_COST:
            raise InputError(
                f"both sides run this scenario twice, which would cost {cost.explain()} a run, more than "
                f"{DEFAULT_MAX_COST:,} (probesim run's --max-cost default): shorten spec.duration or coarsen "
                "spec.step",
                file=scenario,
            )

    def progress(line: str) -> None:
        err.print(Text(line, style="dim"), soft_wrap=True)

    from probesim.analysis.diff import SideErrors
    from probesim.runs import executor
    from probesim.tune.command import Pool

    try:
        if git is not None:
            with git_sides(git, given, render, Path.cwd()) as (before, after), executor(workers) as ex:
                report = run_diff(before, after, sc, cfg, Pool(ex), scenario, progress)
        else:
            before = read_side("before", given[0], render)
            after = read_side("after", given[1], render)
            with executor(workers) as ex:
                report = run_diff(before, after, sc, cfg, Pool(ex), scenario, progress)
    except SideErrors as e:  # the after side's: each said, then exit 2
        for entry in e.errors:
            fail(entry)
        raise typer.Exit(2) from None
    warn(report.warnings)
    warn(f"the before side ({report.before}) could not be read in full: {e}" for e in report.before_errors)
    write_report(output, lambda console: render_report(report, fmt, console, verbose, rules_url))
    if fails(report, rules):
        raise typer.Exit(1)
