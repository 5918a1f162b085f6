"""``probesim fit``: a workload's behaviour and traffic fitted to its telemetry, written as a
scenario (and with --compare simulated beside what was recorded)."""

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from probesim.cli.common import command
from probesim.cli.program import err, out
from probesim.errors import InputError


def _when(value: str | None, option: str) -> float | None:
    """A time as Prometheus takes it: RFC 3339 or Unix seconds."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{value!r} is not a time: give RFC 3339 (2026-12-01T10:00:00Z) or Unix seconds",
                         field=option) from None  # fmt: skip


@command()
def fit(
    manifests: Annotated[
        list[str],
        typer.Argument(help="The workload's manifests (files or directories), as probesim run takes."),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Write the fitted scenario here (.yaml), its traffic beside it."),
    ],
    prometheus: Annotated[
        str | None,
        typer.Option(help="A Prometheus server's URL: its HTTP API is queried over --start..--end."),
    ] = None,
    saved: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="A folder of saved query results instead: <name>.json per query (the API's JSON, as curl "
            "writes it); --print-queries lists the names and queries.",
        ),
    ] = None,
    start: Annotated[
        str | None, typer.Option(help="With --prometheus: the period's start (RFC 3339 or Unix s).")
    ] = None,
    end: Annotated[str | None, typer.Option(help="With --prometheus: the period's end.")] = None,
    step: Annotated[
        float, typer.Option(help="With --prometheus: seconds between samples.", min=0.001)
    ] = 15.0,
    window: Annotated[
        str, typer.Option(help="The rate() window: several scrape intervals (e.g. 1m).")
    ] = "1m",
    pods: Annotated[
        str | None,
        typer.Option(help="kubectl get pods -o json output: start and Ready times fit the app's start."),
    ] = None,
    k6: Annotated[
        str | None,
        typer.Option(
            help="A k6 run: its --out json=FILE lines (the traffic as sent, second by second) or its "
            "--summary-export=FILE (the run's mean rate, from the app's first counted request). "
            "--compare sets what k6 got (http_req_duration p50/p95, http_req_failed) beside the "
            "simulation's clients."
        ),
    ] = None,
    events: Annotated[
        str | None,
        typer.Option(
            help="kubectl get events -o json output: probe failures by probe, for --compare (else the "
            "kubelet's prober_probe_total)."
        ),
    ] = None,
    workload: Annotated[str | None, typer.Option(help="The workload to fit (default: the only one).")] = None,
    container: Annotated[str | None, typer.Option(help="Its container (default: the first).")] = None,
    mapping: Annotated[
        str | None,
        typer.Option(
            help="A YAML file renaming the series fit reads (docs/fit.md: histogram, routeLabel, ...), "
            "or 'istio' for Istio's istio_requests_total and istio_request_duration_milliseconds (one route)."
        ),
    ] = None,
    print_queries: Annotated[
        bool, typer.Option("--print-queries", help="Print the queries fit runs, by name, and exit.")
    ] = False,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="Also simulate the fitted scenario and print it beside the telemetry: ready pods, replicas, "
            "CPU-throttled share, restarts, probe failures, Envoy's outlier ejections, requests/s, error "
            "rate, latency p50/p95 (and what k6's clients got, with --k6); exit 1 "
            "when a figure differs beyond its tolerance.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the fit report (and comparison) as JSON.")
    ] = False,
) -> None:
    """Fit a workload's behaviour to its telemetry (Prometheus, kubectl, k6) and write the
    scenario that reproduces it.

    It fits the app's start (from kube-state-metrics' pod series or kubectl's pod start and Ready
    times), each route's CPU and wait per request and the spread of its service times (from
    Prometheus: the app's request histogram, cAdvisor's CPU and CFS throttling counters), each
    probe path's own wait (the kubelet's prober_probe_duration_seconds), and the traffic as
    recorded (a rate series). Each value says where it came from and how well it fits; what the
    data cannot determine is listed, with why. --compare also sets the Deployment's replica
    series, the throttled share and the probe failures beside the simulation's, and with --k6
    what the load generator's requests got (their durations and failed share).

    Then run, tune or stress from it: probesim tune k8s/ --scenario fitted.yaml. See docs/fit.md.

    Example: [bold]probesim fit k8s/ --prometheus http://127.0.0.1:9090 --start 2026-12-01T10:00:00Z
    --end 2026-12-01T11:00:00Z --pods pods.json -o fitted.yaml --compare[/bold]
    """
    from probesim.fit.command import Request, write
    from probesim.fit.command import fit as run_fit
    from probesim.fit.compare import agree
    from probesim.fit.compare import compare as run_compare
    from probesim.fit.queries import PURPOSE, load_mapping

    req = Request(
        manifests=manifests, output=output, workload=workload, container=container, prometheus=prometheus,
        saved=saved, start=_when(start, "--start"), end=_when(end, "--end"), step=step, window=window,
        pods=pods, k6=k6, events=events, mapping=load_mapping(mapping),
    )  # fmt: skip
    if print_queries:
        from probesim.fit.command import target_queries

        for name, q in target_queries(req).items():
            out.print(f"[bold]{name}[/bold]  [dim]# {PURPOSE[name]}[/dim]", highlight=False)
            out.print(q, markup=False, highlight=False)
        return
    if output.suffix.lower() not in (".yaml", ".yml"):
        raise InputError("the fitted scenario is YAML: give a file name ending in .yaml", file=str(output))
    outcome = run_fit(req)
    write(outcome, output)
    rows = run_compare(outcome, output) if compare else []
    if as_json:
        doc = outcome.to_json() | ({"comparison": {"rows": rows, "agree": agree(rows)}} if compare else {})
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        from probesim.report.fit import render_fit

        render_fit(outcome, rows if compare else None, out)
    err.print(f"wrote {output} and {len(outcome.files)} traffic file(s)", markup=False, highlight=False)
    if compare and not agree(rows):
        raise typer.Exit(1)
