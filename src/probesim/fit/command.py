"""``probesim fit``'s work: read the telemetry, fit each value, write the scenario (and its
traffic series), and with ``--compare`` simulate it beside what the telemetry recorded.

The scenario starts as the one ``probesim run`` generates for the manifests (the objects copied
in, docs/scenarios.md "Generated scenarios"); fit replaces the workload's behaviour by what it
fitted and the traffic by what was recorded, and says in a comment on top where each value
came from. A value the data cannot determine keeps the generated default and is listed as not
fitted, with why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from probesim.errors import InputError
from probesim.fit import estimate as est
from probesim.fit.prometheus import Live, Saved, Series
from probesim.fit.queries import Mapping, queries
from probesim.model.duration import format_ms, parse_ms_float
from probesim.safe import visible


@dataclass
class Request:
    """What the user asked: the manifests, the workload, and where the telemetry is."""

    manifests: list[str]
    output: Path
    workload: str | None = None
    container: str | None = None
    prometheus: str | None = None
    saved: str | None = None
    start: float | None = None
    end: float | None = None
    step: float = 15.0
    window: str = "1m"
    pods: str | None = None
    k6: str | None = None
    events: str | None = None
    mapping: Mapping = field(default_factory=Mapping)


@dataclass
class Outcome:
    """What fit found: the values, what it could not fit and why, and the telemetry's figures."""

    scenario: str
    files: dict[Path, str]
    fitted: list[est.Fitted]
    not_fitted: list[tuple[str, str]]
    telemetry: dict[str, Any]
    workload: str
    service: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "FitReport",
            "workload": self.workload,
            "fitted": [f.to_json() for f in self.fitted],
            "notFitted": [{"field": k, "why": v} for k, v in self.not_fitted],
            "files": [str(p) for p in [*self.files]],
        }


def _answers(r: Request, qs: dict[str, str]) -> dict[str, list[Series] | None]:
    if (r.prometheus is None) == (r.saved is None):
        raise InputError("give the telemetry: --prometheus URL (with --start, --end) or --from FOLDER")
    if r.prometheus is not None:
        if r.start is None or r.end is None:
            raise InputError("--prometheus queries a period: give --start and --end", field="--start")
        source: Live | Saved = Live(r.prometheus, r.start, r.end, r.step)
    else:
        assert r.saved is not None
        source = Saved(r.saved)
    return {name: source.answer(name, q) for name, q in qs.items()}


def _one(series: list[Series] | None) -> Series | None:
    """The one series of a sum() query (none: None)."""
    if not series:
        return None
    return series[0]


@dataclass
class _Target:
    generated: Any
    scenario: Any
    workload: Any
    container: Any
    pods: str  # a regular expression of its pods' names
    queries: dict[str, str]


def _target(r: Request) -> _Target:
    """The workload and container to fit, in the scenario generated from the manifests."""
    from probesim.manifests.generated import Options, generate

    generated = generate(r.manifests, Options(), "fit")
    sc, _ = generated.load()
    names = [w.name for w in sc.workloads]
    if r.workload is None and len(names) != 1:
        raise InputError(f"the manifests run {len(names)} workloads ({', '.join(names)}): give --workload")
    name = r.workload or names[0]
    w = next((x for x in sc.workloads if x.name == name), None)
    if w is None:
        raise InputError(f"no workload {name!r} behind a Service in the manifests (run: {', '.join(names)})",
                         field="--workload")  # fmt: skip
    containers = [c.name for c in w.pod_spec.containers]
    container = r.container or containers[0]
    if container not in containers:
        raise InputError(f"{w.kind} {name} has no container {container!r} ({', '.join(containers)})",
                         field="--container")  # fmt: skip
    c = next(x for x in w.pod_spec.containers if x.name == container)
    pods_re = f"{name}-.*"
    deployment = name if w.kind == "Deployment" else None
    qs = queries(r.mapping, w.metadata.namespace, pods_re, container, r.window, deployment)
    return _Target(generated, sc, w, c, pods_re, qs)


def target_queries(r: Request) -> dict[str, str]:
    """The queries fit runs for this request (what --print-queries prints)."""
    return _target(r).queries


def fit(r: Request) -> Outcome:
    """Fit the workload's behaviour and traffic; the scenario text and its series files."""
    from probesim.fit.kubectl import read_pods

    tg = _target(r)
    generated, sc, w, c, pods_re, qs = (
        tg.generated,
        tg.scenario,
        tg.workload,
        tg.container,
        tg.pods,
        tg.queries,
    )
    name, container = w.name, c.name
    got = _answers(r, qs)
    fitted: list[est.Fitted] = []
    not_fitted: list[tuple[str, str]] = []

    def attempt(path: str, run: Any) -> Any:
        try:
            return run()
        except InputError as e:
            not_fitted.append((path, e.message))
            return None

    series_starts = est.first_ready(
        got.get("pod_ready") or [], got.get("pod_started") or [], r.mapping.pod_label
    )
    pod_starts: list[float] = [ps.started for ps in series_starts]
    if series_starts:
        # The series know each pod's first Ready; kubectl only the last (a later flap hides it).
        where = "kube-state-metrics (pod_ready, pod_started)"
        start = attempt(
            f"containers.{container}.start",
            lambda: est.fit_start(series_starts, c.readiness_probe, container, where),
        )
        if start is not None:
            start.source = start.source.replace("pods'", "pods' (kube-state-metrics)", 1)
            fitted.append(start)
    elif r.pods is not None:
        pods = read_pods(r.pods, pods_re, container)
        pod_starts = [ps.started for ps in pods]
        start = attempt(f"containers.{container}.start",
                        lambda: est.fit_start(pods, c.readiness_probe, container, str(r.pods)))  # fmt: skip
        if start is not None:
            start.source = start.source.replace("pods'", "pods' (kubectl)", 1)
            fitted.append(start)
    else:
        why = "no pods given (--pods, kubectl get pods -o json) nor pod_ready/pod_started series"
        not_fitted.append((f"containers.{container}.start", why))

    label = r.mapping.route_label
    bucket_scale = 1.0 if r.mapping.unit == "seconds" else 0.001  # the buckets' bounds to seconds
    requests = est.by_label(_need(got, "requests", qs), label)
    # The kubelet's probes reach the app's handlers too, and its histogram counts them: their
    # paths are the probes', not traffic to fit (their cost stays the generated default).
    probe_paths = {
        p.http_get.path for p in (c.startup_probe, c.readiness_probe, c.liveness_probe)
        if p is not None and p.http_get is not None
    }  # fmt: skip
    for path in sorted(probe_paths & set(requests)):
        del requests[path]
        why = "the path of a probe of the container: probe requests, not traffic"
        not_fitted.append((f"routes.{path}", why))
    if not requests:
        raise InputError(f"the answer to {qs['requests']!r} holds only the probes' paths: no traffic to fit")
    cpu = _one(got.get("cpu"))
    costs: dict[str, float] = {}
    if cpu is None:
        not_fitted.append((f"containers.{container}.routes.*.cpu", f"no answer to {qs['cpu']!r}"))
    else:
        got_costs = attempt(
            f"containers.{container}.routes.*.cpu", lambda: est.fit_costs(requests, cpu, container)
        )
        found, floor = got_costs if got_costs is not None else ([], 0.0)
        for f in found:
            fitted.append(f)
            costs[f.path.split(".routes.", 1)[1].rsplit(".", 1)[0]] = f.value
        idle = est.fit_idle(floor, _one(got.get("ready")), found, container)
        if idle is not None:
            fitted.append(idle)
    sums = got.get("latency_sum")
    if sums and r.mapping.unit == "milliseconds":  # seconds answering per second, as fit_wall takes
        sums = [Series(x.labels, x.t, x.v / 1000) for x in sums]
    limit_m = c.resources.limits.cpu or sc.spec.cluster.node_cpu
    # cAdvisor counts CFS periods only for a container with a CPU limit (a quota).
    throttle = est.throttled_share(_one(got.get("throttled_periods")), _one(got.get("cfs_periods")))
    walls: dict[str, float] = {}
    if sums:
        for f in est.fit_wall(requests, est.by_label(sums, label), cpu, _one(got.get("ready")), costs,
                              limit_m / 1000, container, throttle) if cpu is not None else []:  # fmt: skip
            fitted.append(f)
            walls[f.path.split(".routes.", 1)[1].rsplit(".", 1)[0]] = f.value
    else:
        not_fitted.append((f"containers.{container}.routes.*.wall", f"no answer to {qs['latency_sum']!r}"))
    if cpu is not None:
        cores = limit_m / 1000
        probe_walls, refused = _probe_walls(got, c, container, cpu, cores, throttle, generated.text, name)
        fitted += probe_walls
        not_fitted += refused
    busiest = max(requests, key=lambda k: float(requests[k].v.sum()))
    variability = None
    buckets = got.get("buckets")
    if buckets and busiest in costs and cpu is not None:
        mine = [s for s in buckets if (s.labels.get(label, "") or "*") == busiest]
        cost_s = (costs[busiest] / 1000, walls.get(busiest, 0.0) / 1000)
        if sum(cost_s) > 0:
            variability = est.fit_variability(
                mine,
                cpu,
                _one(got.get("ready")),
                cost_s,
                limit_m / 1000,
                bucket_scale,
                throttle,
            )
        if variability is not None:
            fitted.append(variability)
    if variability is None:
        not_fitted.append(
            ("variability", f"no latency buckets of {busiest} (query 'buckets') to fit its spread")
        )
    errors = est.by_label(got.get("errors") or [], label)
    fitted += est.fit_errors(requests, errors, container, f"the answer to {qs['errors']!r}", r.step)
    traffic_src = "k6 --out json" if r.k6 else f"the answer to {qs['requests']!r}"
    rates = _traffic(r, requests)
    svc = sc.service_for(sc.spec.traffic[0]).name if sc.spec.traffic else name
    files: dict[Path, str] = {}
    traffic = []
    # The period is the telemetry's, from its earliest sample of any series (Ready pods are
    # counted from the start, requests only once they come): the traffic keeps its place in it.
    answered = [s.t for series in got.values() if series for s in series if s.t.size]
    t0 = min([rows[0][0] for rows in rates.values()] + [float(t[0]) for t in answered])
    # Pods that started just before the period (a lab run, a fresh rollout): the period starts
    # with them, so that the simulation's pods start when they did and the traffic comes at
    # the same point of their start-up.
    fitted_start = next((f.value for f in fitted if f.path == f"containers.{container}.start"), 0.0)
    began = min(pod_starts, default=None)
    if began is not None and t0 - (fitted_start + 30) <= began < t0:
        t0 = began
    t1 = max([rows[-1][0] for rows in rates.values()] + [float(t[-1]) for t in answered])
    for i, (route, rows) in enumerate(sorted(rates.items())):
        csv = r.output.with_name(f"{r.output.stem}-traffic-{i}.csv")
        # A series rate holds until the next row: the traffic ends after its last one (it is
        # not sent on for the rest of the period).
        last = rows[-1][0] - t0 + (1.0 if r.k6 else r.step)
        files[csv] = "".join(f"{t - t0:g},{v:.6g}\n" for t, v in rows) + f"{last:g},0\n"
        traffic.append(
            {"name": route, "service": svc, "path": "/" if route == "*" else route, "series": csv.name}
        )
        mean = sum(v for _, v in rows) / len(rows)
        fitted.append(est.Fitted(f"traffic.{route}", round(mean, 3), "requests/s (mean)", traffic_src,
                                 f"{len(rows)} rows written to {csv.name}"))  # fmt: skip
    duration_ms = math.ceil(t1 - t0 + (r.step if not r.k6 else 1)) * 1000
    text = _scenario_text(
        generated.text, name, container, fitted, not_fitted, traffic, duration_ms, variability, probe_paths
    )
    telemetry = _telemetry(
        got, requests, errors, est.by_label(sums or [], label), buckets or [], label, bucket_scale
    )
    _probe_telemetry(telemetry, got, r, pods_re)
    _workload_telemetry(telemetry, got, throttle)
    return Outcome(text, files, fitted, not_fitted, telemetry, name, svc)


def _probe_walls(
    got: dict[str, list[Series] | None],
    c: Any,
    container: str,
    cpu: Series,
    cores_per_pod: float,
    throttle: Series | None,
    generated: str,
    workload: str,
) -> tuple[list[est.Fitted], list[tuple[str, str]]]:
    """The wall of each HTTP probe's path from the kubelet's probe durations (the CPU of the
    path as the generated scenario costs it), and the paths it could not fit."""
    seconds, runs = got.get("probe_seconds"), got.get("probe_runs")
    if not seconds or not runs:
        return [], []
    kinds = {"Startup": c.startup_probe, "Readiness": c.readiness_probe, "Liveness": c.liveness_probe}
    paths = {k: p.http_get.path for k, p in kinds.items() if p is not None and p.http_get is not None}
    routes = _generated_routes(generated, workload, container)
    cpu_ms = {path: _cost_ms(routes.get(path, routes.get("*", {})).get("cpu")) for path in paths.values()}
    return est.fit_probe_walls(
        est.by_label(seconds, "probe_type"), est.by_label(runs, "probe_type"), paths, cpu_ms, cpu,
        _one(got.get("ready")), cores_per_pod, throttle, container,
    )  # fmt: skip


def _generated_routes(generated: str, workload: str, container: str) -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load(generated)
    behavior = doc["spec"].get("behavior", {}).get(workload, {}).get("containers", {}).get(container, {})
    routes: dict[str, dict[str, Any]] = behavior.get("routes", {})
    return routes


def _cost_ms(text: Any) -> float:
    return parse_ms_float(text) if text is not None else 0.0


def _need(got: dict[str, list[Series] | None], name: str, qs: dict[str, str]) -> list[Series]:
    s = got.get(name)
    if not s:
        raise InputError(f"no series answer {qs[name]!r} (saved as {name}.json): fit needs the requests")
    return s


def _traffic(r: Request, requests: dict[str, Series]) -> dict[str, list[tuple[float, float]]]:
    """Each route's rate over time: what k6 sent when its output is given, else what the app
    counted."""
    if r.k6 is not None:
        from probesim.fit.k6 import request_rates

        return request_rates(r.k6)
    return {k: list(zip(s.t.tolist(), s.v.tolist(), strict=True)) for k, s in requests.items() if s.t.size}


def _scenario_text(
    generated: str,
    workload: str,
    container: str,
    fitted: list[est.Fitted],
    not_fitted: list[tuple[str, str]],
    traffic: list[dict[str, Any]],
    duration_ms: int,
    variability: est.Fitted | None,
    probe_paths: set[str],
) -> str:
    doc = yaml.safe_load(generated)
    spec = doc["spec"]
    spec["duration"] = format_ms(duration_ms)
    spec.pop("step", None)
    behavior = spec["behavior"][workload]["containers"].setdefault(container, {})
    given = behavior.get("routes", {})
    routes: dict[str, dict[str, Any]] = {"*": given.get("*", {"cpu": "0.5ms"})}
    for f in fitted:
        if f.path == f"containers.{container}.start":
            behavior["start"] = f"{f.value:g}s"
        elif f.path == f"containers.{container}.idleCpu":
            behavior["idleCpu"] = f"{f.value:g}m"
        elif f.path.startswith(f"containers.{container}.routes."):
            route, what = f.path.split(".routes.", 1)[1].rsplit(".", 1)
            # A probe's path, its wall fitted alone, keeps the CPU the generated scenario gave it.
            base = {"cpu": given.get(route, routes["*"]).get("cpu", "0ms")} if route in probe_paths else {}
            routes.setdefault(route, base)[what] = (
                {"percent": f.value, "status": 500} if what == "errors" else f"{f.value:g}ms"
            )
    if len(routes) > 1:
        behavior["routes"] = routes
    if variability is not None:
        behavior["variability"] = variability.value
    spec["traffic"] = traffic
    doc["metadata"]["name"] = f"{workload}-fitted"
    doc["metadata"]["description"] = (
        f"{workload}'s behaviour and traffic fitted by probesim fit to its telemetry."
    )
    head = ["Written by probesim fit: each value below fitted to the telemetry.", "Fitted:"]
    head += [f"  {f.path} = {f.value:g} {f.unit}: from {f.source}; {f.fit}" for f in fitted]
    if not_fitted:
        head.append("Not fitted (the generated default kept):")
        head += [f"  {k}: {why}" for k, why in not_fitted]
    comment = "".join(f"# {visible(line, 1000)}\n" for line in head)
    return comment + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def _telemetry(
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
    ready = _one(got.get("ready")) or _one(got.get("replicas_ready"))  # the pods', else the Deployment's
    if ready is not None and ready.v.size:
        # After the ramp, as the simulation's is compared: from the first sample at the most.
        after = ready.v[int(ready.v.argmax()) :]
        out["ready"] = {"mean": float(after.mean()), "min": float(after.min())}
        out["rampEnd"] = float(ready.t[int(ready.v.argmax())])
    restarts = _one(got.get("restarts"))
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


def _probe_telemetry(tel: dict[str, Any], got: dict[str, list[Series] | None], r: Request, pods: str) -> None:
    """Probe failures by probe after the ramp (as --compare takes the simulation's): from the
    events when given (kubectl get events -o json), else from the kubelet's prober counter."""
    since = tel.get("rampEnd")
    if r.events is not None:
        from probesim.fit.kubectl import PROBE_FAILED, read_events

        counted = read_events(r.events, pods, since)
        tel["probeFailures"] = {k: counted[k] for k in PROBE_FAILED}
        tel["probeSource"] = f"events ({r.events})"
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


def _workload_telemetry(
    tel: dict[str, Any], got: dict[str, list[Series] | None], throttle: Series | None
) -> None:
    """The Deployment's replica counts (means after the ramp, as the ready pods) and the share of
    CFS periods in which its containers were throttled."""
    since = tel.get("rampEnd")

    def after(x: Series) -> Any:
        return x.v[x.t >= since] if since is not None else x.v

    replicas: dict[str, float] = {}
    for name in REPLICA_SERIES:
        x = _one(got.get(name))
        if x is not None and after(x).size:
            replicas[name] = float(after(x).mean())
    if replicas:
        tel["replicas"] = replicas
    thr, periods = _one(got.get("throttled_periods")), _one(got.get("cfs_periods"))
    if throttle is not None and thr is not None and periods is not None:
        a = est.align({"thr": thr, "all": periods})
        keep = a.t >= since if since is not None else np.ones(a.t.size, bool)
        ran = float(a.columns["all"][keep].sum())
        if ran > 0:
            tel["throttledShare"] = min(float(a.columns["thr"][keep].sum()) / ran, 1.0)


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
    for rt in result.routes:
        t = tel["routes"].get(rt.name)
        if t is None:
            continue
        # The telemetry is of pods already running; the simulation starts them: compare the
        # steady state after its start-up ramp (the whole run when there is none).
        span: Any = rt.steady if rt.steady is not None else rt
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


def agree(rows: list[dict[str, Any]]) -> bool:
    return all(r["agree"] for r in rows)


def write(outcome: Outcome, path: Path) -> None:
    """The scenario and its series files."""
    try:
        path.write_text(outcome.scenario, encoding="utf-8")
        for p, text in outcome.files.items():
            p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write the fitted scenario: {e.strerror}", file=str(path)) from None
