"""What the telemetry recorded, as ``probesim fit --compare`` sets it beside the fitted
scenario's simulation: ready pods and the Deployment's replica series, the throttled share,
restarts, probe failures (the kubelet's counter or kubectl's events), and per route the rate,
error rate and latency buckets; each figure with its tolerance and whether the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from probesim.fit import estimate as est
from probesim.fit.prometheus import Series, only
from probesim.results.result import RouteSummary, Span


class Outcome(Protocol):
    """What compare reads of fit's outcome (fit/command.py's Outcome)."""

    telemetry: dict[str, Any]
    workload: str


def recorded(
    got: dict[str, list[Series] | None],
    requests: dict[str, Series],
    errors: dict[str, Series],
    sums: dict[str, Series],
    buckets: list[Series],
    label: str,
    bucket_scale: float,
) -> dict[str, Any]:
    """What the telemetry recorded, as --compare sets it beside the simulation (``sums`` in
    seconds; the buckets' bounds times ``bucket_scale`` are seconds)."""
    out: dict[str, Any] = {"routes": {}}
    ready = only(got.get("ready")) or only(got.get("replicas_ready"))  # the pods', else the Deployment's
    if ready is not None and ready.v.size:
        # After the ramp, as the simulation's is compared: from the first sample at the most.
        after = ready.v[int(ready.v.argmax()) :]
        out["ready"] = {"mean": float(after.mean()), "min": float(after.min())}
        out["rampEnd"] = float(ready.t[int(ready.v.argmax())])
    restarts = only(got.get("restarts"))
    if restarts is not None and restarts.v.size:
        out["restarts"] = float(restarts.v[-1] - restarts.v[0])
    for route, s in requests.items():
        total = float(s.v.sum())
        row: dict[str, Any] = {"rate": float(s.v.mean())}
        if total > 0:
            row["errorRate"] = float(errors[route].v.sum()) / total if route in errors else 0.0
            if route in sums:
                row["meanMs"] = 1000 * float(sums[route].v.sum()) / total
        cum: dict[float, float] = {}
        for b in buckets:
            if (b.labels.get(label, "") or "*") != route or "le" not in b.labels:
                continue
            bound = b.labels["le"]
            le = math.inf if bound in ("+Inf", "Inf") else float(bound) * bucket_scale * 1000
            cum[le] = cum.get(le, 0.0) + float(b.v.sum())
        if cum.get(math.inf, 0) > 0:
            row["buckets"] = sorted(cum.items())
        out["routes"][route] = row
    return out


def probe_failures(
    tel: dict[str, Any], got: dict[str, list[Series] | None], events: str | None, pods: str
) -> None:
    """Probe failures by probe after the ramp (as --compare takes the simulation's): from the
    events when given (kubectl get events -o json), else from the kubelet's prober counter."""
    since = tel.get("rampEnd")
    if events is not None:
        from probesim.fit.kubectl import PROBE_FAILED, read_events

        counted = read_events(events, pods, since)
        tel["probeFailures"] = {k: counted[k] for k in PROBE_FAILED}
        tel["probeSource"] = f"events ({events})"
        return
    probes = got.get("probes")
    if not probes:  # no prober series: nothing to tell
        return
    out: dict[str, int] = {}
    for x in probes:
        v = x.v[x.t >= since] if since is not None else x.v
        if x.labels.get("result") == "failed" and v.size:
            out[x.labels.get("probe_type", "")] = round(float(v[-1] - v[0]))
    tel["probeFailures"] = out
    tel["probeSource"] = "prober_probe_total"


# kube-state-metrics' Deployment series (by fit's query name) and the simulation's workload
# series that hold the same status field.
REPLICA_SERIES = {
    "replicas_desired": ("desired", "desired replicas (mean)"),
    "replicas": ("current", "pods (mean)"),
    "replicas_available": ("available", "available pods (mean)"),
    "replicas_unavailable": ("unavailable", "unavailable pods (mean)"),
}


def workload_figures(
    tel: dict[str, Any],
    got: dict[str, list[Series] | None],
    throttle: Series | None,
    service: str | None = None,
) -> None:
    """The Deployment's replica counts (means after the ramp, as the ready pods), the share of
    CFS periods in which its containers were throttled, and the outlier ejections its Service's
    callers' Envoys enforced over the period."""
    since = tel.get("rampEnd")

    def after(x: Series) -> Any:
        return x.v[x.t >= since] if since is not None else x.v

    replicas: dict[str, float] = {}
    for name in REPLICA_SERIES:
        x = only(got.get(name))
        if x is not None and after(x).size:
            replicas[name] = float(after(x).mean())
    if replicas:
        tel["replicas"] = replicas
    thr, periods = only(got.get("throttled_periods")), only(got.get("cfs_periods"))
    if throttle is not None and thr is not None and periods is not None:
        a = est.align({"thr": thr, "all": periods})
        keep = a.t >= since if since is not None else np.ones(a.t.size, bool)
        ran = float(a.columns["all"][keep].sum())
        if ran > 0:
            tel["throttledShare"] = min(float(a.columns["thr"][keep].sum()) / ran, 1.0)
    ejections = only(got.get("ejections"))
    if service is not None and ejections is not None and ejections.v.size:
        # A sum of counters: the increase over the period (a sidecar's restart would reset its own).
        tel["ejections"] = {"service": service, "count": float(ejections.v[-1] - ejections.v[0])}


def quantile_bucket(buckets: list[tuple[float, float]], q: float) -> tuple[float, float]:
    """The bucket (lower, upper bound in ms) holding quantile ``q`` of a cumulative histogram."""
    total = buckets[-1][1]
    lower = 0.0
    for le, n in buckets:
        if n >= q * total:
            return lower, le
        lower = le
    return lower, math.inf


def compare(outcome: Outcome, scenario_path: Path) -> list[dict[str, Any]]:
    """The fitted scenario simulated, each figure beside the telemetry's, with a tolerance."""
    from probesim.engine import simulate
    from probesim.manifests.scenario import load_scenario

    result = simulate(load_scenario(str(scenario_path)))
    rows: list[dict[str, Any]] = []

    def row(obj: str, figure: str, sim: float | None, measured: float, tol: float, agree: bool) -> None:
        rows.append({"object": obj, "figure": figure, "simulated": sim, "measured": measured,
                     "tolerance": tol, "agree": agree})  # fmt: skip

    tel = outcome.telemetry
    w = next(x for x in result.workloads if x.name == outcome.workload)
    after = result.time_ms >= (w.all_ready_ms or 0)  # as the routes: after the start-up ramp
    if "ready" in tel:
        ready = result.series[f"workload.{w.name}.ready"]
        sim = float(ready[after].mean()) if after.any() else float(ready.mean())
        tol = max(0.5, 0.1 * tel["ready"]["mean"])
        row(
            f"workload/{w.name}",
            "ready pods (mean)",
            sim,
            tel["ready"]["mean"],
            tol,
            abs(sim - tel["ready"]["mean"]) <= tol,
        )
    for name, measured in tel.get("replicas", {}).items():
        field, figure = REPLICA_SERIES[name]
        series = result.series[f"workload.{w.name}.{field}"]
        sim = float(series[after].mean()) if after.any() else float(series.mean())
        tol = max(0.5, 0.1 * measured)
        row(f"workload/{w.name}", figure, sim, measured, tol, abs(sim - measured) <= tol)
    if "throttledShare" in tel:
        # cAdvisor counts 100 ms periods; the simulation steps whole: a pod is throttled in a step
        # when its demand exceeds its limit. Its share is of pod-steps.
        running = result.series[f"workload.{w.name}.current"][after]
        throttled = result.series.get(f"workload.{w.name}.throttled")
        sim = float(throttled[after].sum()) / max(float(running.sum()), 1.0) if throttled is not None else 0.0
        measured = tel["throttledShare"]
        tol = max(0.1, 0.25 * measured)
        row(f"workload/{w.name}", "CPU-throttled share", sim, measured, tol, abs(sim - measured) <= tol)
    if "ejections" in tel:
        # The simulation's callers' sidecars, over its whole run (Envoy's counter, its name).
        svc, measured = tel["ejections"]["service"], tel["ejections"]["count"]
        sim_n = sum(r.envoy.get("ejections_enforced_total", 0) for r in result.routes if r.service == svc)
        tol = max(1.0, 0.1 * measured)
        row(
            f"service/{svc}",
            "outlier ejections (Envoy)",
            float(sim_n),
            measured,
            tol,
            abs(sim_n - measured) <= tol,
        )
    if "restarts" in tel:
        tol = max(1.0, 0.1 * tel["restarts"])
        row(f"workload/{w.name}", "restarts", float(w.total_restarts), tel["restarts"], tol,
            abs(w.total_restarts - tel["restarts"]) <= tol)  # fmt: skip
    if "probeFailures" in tel:
        # The simulation's kubelet says each failure in an event, as the real one does.
        pods = {f"pod/{p}" for p in w.restarts}
        ramp = w.all_ready_ms or 0
        for kind in ("Liveness", "Readiness", "Startup"):
            measured = tel["probeFailures"].get(kind, 0)
            sim_n = sum(
                1
                for e in result.events
                if e.object in pods and e.reason == "Unhealthy" and e.time_ms >= ramp
                and e.message.startswith(f"{kind} probe failed")
            )  # fmt: skip
            if measured or sim_n:
                tol = max(2.0, 0.1 * measured)
                figure = f"{kind.lower()} probe failures"
                row(f"workload/{w.name}", figure, float(sim_n), float(measured), tol,
                    abs(sim_n - measured) <= tol)  # fmt: skip
    k6 = tel.get("k6") or {"routes": {}}
    for rt in result.routes:
        # The telemetry is of pods already running; the simulation starts them: compare the
        # steady state after its start-up ramp (the whole run when there is none).
        span: Any = rt.steady if rt.steady is not None else rt
        if rt.name in k6["routes"]:
            # What the load generator got: after the ramp from its lines, the whole run from a summary.
            _client_rows(row, f"route/{rt.name}", k6["routes"][rt.name], span if k6["timed"] else rt)
        t = tel["routes"].get(rt.name)
        if t is None:
            continue
        seconds = (span.end_ms - span.start_ms) / 1000 if rt.steady is not None else result.duration_ms / 1000
        done = span.ok + span.failed_total
        rate = done / max(seconds, 1e-9)
        row(f"route/{rt.name}", "answered requests/s", rate, t["rate"], 0.05 * t["rate"],
            abs(rate - t["rate"]) <= 0.05 * t["rate"] + 1e-9)  # fmt: skip
        if "errorRate" in t:
            tol = max(0.01, 0.15 * t["errorRate"])
            err = span.error_rate
            row(f"route/{rt.name}", "error rate", err, t["errorRate"], tol, abs(err - t["errorRate"]) <= tol)
        for q in ("p50", "p95"):
            if "buckets" in t and q in span.latency_ms:
                lo, hi = quantile_bucket(t["buckets"], int(q[1:]) / 100)
                sim_q = span.latency_ms[q]
                # The histogram tells only the bucket holding the quantile: agreeing is landing in it.
                row(f"route/{rt.name}", f"latency {q} (ms)", sim_q, hi, hi - lo, lo <= sim_q <= hi)
    return rows


# k6's percentiles are of its samples, the simulation's read off a latency grid 6 % apart, and a
# queue's latency moves fast with the load: within a quarter, or 10 ms for fast answers.
CLIENT_LATENCY_TOLERANCE = (10.0, 0.25)


def _client_rows(
    row: Callable[..., None], obj: str, got: dict[str, float], part: Span | RouteSummary
) -> None:
    """k6's request durations and failed share beside the simulation's, as its clients see them
    (a request given up on took its timeout, in both)."""
    floor, share = CLIENT_LATENCY_TOLERANCE
    for q in ("p50", "p95"):
        measured = got.get(f"{q}Ms")
        if measured is not None and q in part.latency_ms:
            sim, tol = part.latency_ms[q], max(floor, share * measured)
            row(obj, f"client latency {q} (ms, k6)", sim, measured, tol, abs(sim - measured) <= tol)
    if "failedShare" in got:
        measured = got["failedShare"]
        tol = max(0.01, 0.15 * measured)
        err = part.error_rate
        row(obj, "client failed share (k6)", err, measured, tol, abs(err - measured) <= tol)


def agree(rows: list[dict[str, Any]]) -> bool:
    return all(r["agree"] for r in rows)
