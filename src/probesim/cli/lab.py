"""``probesim lab``: a scenario's workload run for real on 127.0.0.1, and compared with its
simulation."""

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from probesim.cli.common import command, load
from probesim.cli.program import err, out
from probesim.errors import InputError
from probesim.safe import markup

if TYPE_CHECKING:
    from probesim.model.scenario import Scenario


def _fit_queries(w: Any, service: str | None) -> dict[str, str]:
    """probesim fit's queries for a workload of the lab (its default names, a 5 s rate window:
    the lab's Prometheus scrapes every second)."""
    from probesim.fit.queries import Mapping, queries
    from probesim.lab.telemetry import RATE_WINDOW

    deployment = w.name if w.kind == "Deployment" else None
    container = w.pod_spec.containers[0].name
    ns = w.metadata.namespace
    return queries(Mapping(), ns, f"{w.name}-.*", container, RATE_WINDOW, deployment, service)


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


@command()
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
            "restarts, failed requests by cause; exit 1 when a figure differs beyond its tolerance, 3 "
            "when the lab could not measure some faithfully (the machine's limits) and the rest agree. "
            "The test app spends each request's cost exactly, so the simulation beside it does too "
            "(variability 0); with --command or --command-for it is the scenario as written.",
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
    scale: Annotated[
        float,
        typer.Option(
            help="Run the scenario at this share of its load, e.g. 0.1: traffic rates, the clients' pools "
            "(preAllocatedVUs, maxVUs), the app's worker pools and queues and dependencies' capacities are "
            "multiplied by it; times, probes and CPU per request are not. Each endpoint's failed share stays "
            "comparable where a time or a share decides it (not where a count does: a DestinationRule's "
            "connection pool, outlier detection's consecutive errors). --compare simulates the scaled "
            "scenario. For a run this machine cannot hold at full scale (the lab says so, and which "
            "scale fits).",
        ),
    ] = 1.0,
    prometheus: Annotated[
        Path | None,
        typer.Option(
            help="Also run a real Prometheus (Debian's, on 127.0.0.1) scraping the run every second — "
            "each pod's request histogram, the kubelet's prober metrics, kube-state-metrics' and "
            "cAdvisor's series, every Envoy's /stats/prometheus — and save into this folder what "
            "probesim fit reads: the answers to "
            "its queries (DIR/<workload>/, for fit --from), the pods (DIR/pods.json, for --pods), "
            "what the load generator sent and got (DIR/k6.json, k6's JSON lines, and DIR/k6-summary.json, "
            "its --summary-export, for --k6), and Prometheus's "
            "own data (DIR/prometheus/: serve it again to query it, over DIR/period.json)."
        ),
    ] = None,
) -> None:
    """Run a scenario's workloads for real on 127.0.0.1 (each with its Services, probes, restarts
    and rollouts): pods as processes, probed as the
    kubelet probes them, restarted with CrashLoopBackOff; its traffic sent open-loop, through one
    real Envoy per client pod when DestinationRules or VirtualServices name the Service (the
    configuration of probesim envoy-config), with endpoints following readiness; the pods' calls
    to another Service through its kube-proxy relay, and through one more Envoy when such rules
    name that Service (example: probesim lab service-call-outlier --compare). With --compare,
    side by side with the simulation. Every child process is stopped when it ends, fails or is
    interrupted (Ctrl-C, SIGTERM, SIGHUP), and dies with the lab if it is killed.

    A Deployment's rollout, rollback, restart, scale, pause and resume actions run for real: its
    controller creates the new revision's pods (acting out that revision's behavior, or
    --command-for) and deletes old ones as maxSurge, maxUnavailable and minReadySeconds allow;
    --compare then also compares when the ReplicaSets grew and shrank and each rollout's end. A
    deletePod of a Deployment's pod stops it with its grace period and its ReplicaSet replaces it.

    Limits, refused up front: at most 12 pods over all workloads (during a rollout: replicas +
    maxSurge), 2000 requests per second over all routes, 1 hour; a run whose connections held
    open at once (delayed calls, held clients) exceed what one process may open (ulimit -n) or
    the ephemeral ports, with the --scale that fits; exec probes only with --allow-exec. Beside
    the result, the lab's own headroom: descriptors, CPU, its lag, accept-queue overflows, and
    refusals the scenario did not decide (the lab's, never counted as the app's failures); a
    figure it could not measure faithfully is marked NOT FAITHFUL (with --compare: not agreeing).
    Envoy's admin interface is a Unix socket for you only.

    Exit codes: 0 done (with --compare: every figure agrees within its tolerance), 1 the lab and
    the simulation disagree on a figure the lab measured faithfully, 2 bad input (a run this
    machine cannot hold included), 3 with --compare: every figure measured faithfully agrees but
    the lab could not hold the run faithfully for some (NOT FAITHFUL: the machine was short of
    CPU, descriptors or accept queue; no verdict on those), 128 + the signal's number when
    stopped by one (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), every child stopped.

    Example: probesim lab seed003-outlier --duration 20s --compare
    """
    from probesim.lab.orchestrator import Stopped, stopping_on_signals

    try:
        with stopping_on_signals():
            sc = load(scenario)
            _run(sc, duration, compare_sim, as_json, command, command_for, allow_exec, workload,
                 listen_timeout, prometheus, scale)  # fmt: skip
    except KeyboardInterrupt:  # Ctrl-C: during the run, once the lab had stopped every child
        err.print("[yellow]stopped by SIGINT: every child process stopped[/]", highlight=False)
        raise typer.Exit(128 + signal.SIGINT) from None
    except Stopped as e:
        err.print(f"[yellow]{e}: every child process stopped[/]", highlight=False)
        raise typer.Exit(128 + e.signum) from None


def _run(
    sc: "Scenario",
    duration: str | None,
    compare_sim: bool,
    as_json: bool,
    command: list[str] | None,
    command_for: list[str] | None,
    allow_exec: bool,
    workload: str | None,
    listen_timeout: str,
    prometheus: Path | None,
    scale: float = 1.0,
) -> None:
    """The lab command once its scenario is read: the run, then its comparison and output."""
    import json

    from probesim.lab.compare import AGREES, Row, agree, beside, keep_values, outcome
    from probesim.lab.headroom import Headroom, mark_unfaithful
    from probesim.lab.headroom_demand import scaled
    from probesim.lab.orchestrator import run_lab
    from probesim.lab.progress import Progress
    from probesim.report.compare import render_lab_comparison
    from probesim.report.terminal import render_result

    sc = scaled(sc, scale)
    run_s = None if duration is None else _lab_seconds(duration, "--duration")
    listen_s = _lab_seconds(listen_timeout, "--listen-timeout")
    others = [w.name for w in sc.workloads if workload is not None and w.name != workload]
    if others and len(others) == len(sc.workloads) - 1:
        err.print(
            f"[yellow]the lab runs {markup(workload or '')} (--workload); not run: "
            f"{markup(', '.join(others))}, nor the traffic to their Services[/]",
            emoji=False,
        )
    measured: list[Headroom] = []
    with Progress(err, run_s if run_s is not None else sc.spec.duration / 1000) as progress:
        result = run_lab(sc, run_s, command, progress, listen_s, workload, allow_exec, command_for,
                         prometheus, _fit_queries if prometheus is not None else None, scale,
                         measured.append)  # fmt: skip
    headroom = measured[0] if measured else None
    rows: list[Row] = []
    if compare_sim:
        # the test app spends each cost exactly; yours, not
        _, rows = beside(sc, result, exact=not command and not command_for)
        keep_values(rows)
        if headroom is not None:
            mark_unfaithful(rows, headroom)
    if as_json:
        doc = result.to_json(series=False)
        if headroom is not None:
            doc["headroom"] = headroom.to_json()
        if compare_sim:
            doc["comparison"] = {"rows": rows, "agree": agree(rows), "exitCode": outcome(rows)}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        render_result(result, out)
        if headroom is not None:
            for line in headroom.lines():
                out.print(line, markup=False, highlight=False, emoji=False)
        if compare_sim:
            render_lab_comparison(rows, out)
            if headroom is not None and not headroom.faithful:
                out.print(
                    "The lab could not measure every figure faithfully (NOT FAITHFUL above): the rows "
                    "marked not faithful are the lab's limits, not the app's; run again on a quieter "
                    "machine or with a smaller --scale to judge them.",
                    markup=False, highlight=False,
                )  # fmt: skip
    if compare_sim and (code := outcome(rows)) != AGREES:
        raise typer.Exit(code)
