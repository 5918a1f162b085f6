"""``probesim check``: manifests checked by the rules (and the stress suite), every file read
first, the findings and error entries written as text, JSON, SARIF or JUnit."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from probesim.cli.common import command, fail, load, scenario_path, warn
from probesim.cli.program import out
from probesim.cli.report_options import OUTPUT_OPTION, config_option, format_option, write_report
from probesim.errors import InputError

if TYPE_CHECKING:
    from probesim.manifests.yamlsrc import Doc
    from probesim.model.scenario import Scenario

FORMATS = ("text", "json", "sarif", "junit")


@command()
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
    fmt: Annotated[str, format_option(FORMATS)] = "text",
    output: Annotated[Path | None, OUTPUT_OPTION] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(help="Exit 1 on findings at or above: info, warning, error (default) or never."),
    ] = None,
    config: Annotated[str | None, config_option()] = None,
    list_rules: Annotated[bool, typer.Option("--list-rules", help="List the rules and exit.")] = False,
    list_profiles: Annotated[
        bool,
        typer.Option(
            "--list-profiles",
            help="List the app profiles (what probesim knows of well-known images and frameworks) and exit.",
        ),
    ] = False,
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
    CronJobs, Pods, Argo Rollouts, Knative Services and any custom resource with a pod template at
    spec.template, Services, HPAs, KEDA ScaledObjects and Istio DestinationRules/VirtualServices;
    reads past other kinds and custom resources, kustomizations and unrendered Helm charts, saying
    so (-v lists them, and each workload linted).

    Exit codes: 0 clean, 1 findings at or above --fail-on, 2 input error (YAML that does not
    parse, an invalid field in an object probesim reads, or no Kubernetes object at all). Every
    file is read first: each error is reported (in every format, -o written too) with the
    findings of the rest, then the check exits 2.
    Every finding says what it assumed about the app (its profile: Spring Boot, PostgreSQL, …,
    from the image and the manifest's hints; --list-profiles shows the catalog); correct it in
    .probesim.yaml under [bold]profiles:[/bold].
    Suppress a finding with the annotation [bold]probesim.dev/ignore: "PS010=reason"[/bold]
    (or [bold]probesim.dev/ignore-<container>[/bold]) on the object or its pod template.

    Example: [bold]helm template ./chart | probesim check - -f sarif -o probesim.sarif[/bold]
    """
    from probesim.analysis.check import check as run_check
    from probesim.analysis.check import load_config, selected_rules
    from probesim.report.check_outputs import render

    if fmt not in FORMATS:
        raise InputError(f"unknown --format {fmt!r}; use {', '.join(FORMATS[:-1])} or {FORMATS[-1]}")
    if fail_on is not None and fail_on not in ("info", "warning", "error", "never"):
        raise InputError(f"unknown --fail-on {fail_on!r}; use info, warning, error or never")
    cfg = load_config(config)
    if list_rules:
        from probesim.report.listings import render_rules

        render_rules(selected_rules(cfg), out)
        return
    if list_profiles:
        from probesim.profiles import catalog
        from probesim.report.listings import render_profiles

        render_profiles(catalog().values(), out)
        return
    if not paths and not scenario:
        raise InputError("give manifest files, directories or '-' (see probesim check --help)")
    sc: Scenario | None = None
    inline: list[Doc] = []
    named: list[str] = []
    if scenario:
        from probesim.manifests.scenario import scenario_manifest_docs

        sc = load(scenario)
        inline, named = scenario_manifest_docs(scenario_path(scenario))
    given = (list(paths or []), scenario)
    report = run_check(list(paths or named), sc, cfg, stress=stress, scenario_docs=inline, given=given)
    for entry in report.errors:  # first, one line each on stderr; the report carries them too
        fail(entry)
    warn(report.warnings)
    with_errors = output is not None  # text on the terminal: the errors are on it already (above)
    write_report(output, lambda console: render(report, fmt, console, verbose, with_errors))
    if report.errors:
        raise typer.Exit(2)
    if report.fails(fail_on or cfg.fail_on):  # type: ignore[arg-type]
        raise typer.Exit(1)
