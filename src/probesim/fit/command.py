"""``probesim fit``'s work: read the telemetry, fit each value, write the scenario (and its
traffic series), with what the telemetry recorded for ``--compare`` (fit/compare.py).

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
from probesim.fit.compare import probe_failures, recorded, workload_figures
from probesim.fit.k6 import Record as K6Record
from probesim.fit.k6 import read as read_k6
from probesim.fit.prometheus import Live, Saved, Series, only
from probesim.fit.queries import Mapping, queries
from probesim.kube.selectors import selects
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


@dataclass
class _Target:
    generated: Any
    scenario: Any
    workload: Any
    container: Any
    pods: str  # a regular expression of its pods' names
    queries: dict[str, str]
    service: str | None  # the Service in front of it


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
    service = next((s.name for s in sc.services if selects(s, w)), None)
    qs = queries(r.mapping, w.metadata.namespace, pods_re, container, r.window, deployment, service)
    return _Target(generated, sc, w, c, pods_re, qs, service)


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
    cpu = only(got.get("cpu"))
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
        idle = est.fit_idle(floor, only(got.get("ready")), found, container)
        if idle is not None:
            fitted.append(idle)
    sums = got.get("latency_sum")
    if sums and r.mapping.unit == "milliseconds":  # seconds answering per second, as fit_wall takes
        sums = [Series(x.labels, x.t, x.v / 1000) for x in sums]
    limit_m = c.resources.limits.cpu or sc.spec.cluster.node_cpu
    # cAdvisor counts CFS periods only for a container with a CPU limit (a quota).
    throttle = est.throttled_share(only(got.get("throttled_periods")), only(got.get("cfs_periods")))
    walls: dict[str, float] = {}
    if sums:
        for f in est.fit_wall(requests, est.by_label(sums, label), cpu, only(got.get("ready")), costs,
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
                only(got.get("ready")),
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
    k6: K6Record | None = None
    if r.k6 is not None:
        k6 = read_k6(r.k6)
        rates, traffic_src = _k6_traffic(k6, requests, r.k6)
    else:
        rates, traffic_src = _series_rates(requests), f"the answer to {qs['requests']!r}"
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
        files[csv] = "".join(f"{_seconds(t - t0)},{v:.6g}\n" for t, v in rows) + f"{_seconds(last)},0\n"
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
    telemetry = recorded(
        got, requests, errors, est.by_label(sums or [], label), buckets or [], label, bucket_scale
    )
    probe_failures(telemetry, got, r.events, pods_re)
    workload_figures(telemetry, got, throttle, tg.service)
    if k6 is not None:
        telemetry["k6"] = _k6_got(k6, telemetry.get("rampEnd"), rates)
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
        only(got.get("ready")), cores_per_pod, throttle, container,
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


def _seconds(x: float) -> str:
    """A time of the period in seconds, to the millisecond the scenario holds, never in an
    exponent (a long period's 1.0368e+06 would lose its seconds)."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def _series_rates(requests: dict[str, Series]) -> dict[str, list[tuple[float, float]]]:
    """Each route's rate over time as the app counted it."""
    return {k: list(zip(s.t.tolist(), s.v.tolist(), strict=True)) for k, s in requests.items() if s.t.size}


def _k6_traffic(
    rec: K6Record, requests: dict[str, Series], path: str
) -> tuple[dict[str, list[tuple[float, float]]], str]:
    """Each route's rate over time as k6 sent it, and where the rates came from. A summary has
    no times: its mean rate is sent from the app's first counted request for the run's duration,
    split over the routes as the app counted them when k6 did not."""
    if rec.timed:
        return rec.rates, rec.source
    firsts = [float(s.t[np.flatnonzero(s.v > 0)[0]]) for s in requests.values() if (s.v > 0).any()]
    if not firsts:
        raise InputError("a k6 summary has no times and the app counted no request to place it at",
                         file=path)  # fmt: skip
    begin = min(firsts)
    means = dict(rec.mean_rates)
    how = "its mean rate"
    if set(means) == {"*"}:
        totals = {k: float(s.v.sum()) for k, s in requests.items()}
        whole = sum(totals.values())
        means = {k: means["*"] * n / whole for k, n in totals.items() if n > 0}
        if len(means) > 1:
            how += ", split over the routes as the app counted them"
    seconds = max(1, math.ceil(rec.duration_s))
    rates = {k: [(begin + i, v) for i in range(seconds)] for k, v in means.items()}
    return rates, f"{rec.source} ({how}, from the app's first counted request: the summary has no times)"


def _k6_got(
    rec: K6Record, since: float | None, rates: dict[str, list[tuple[float, float]]]
) -> dict[str, Any]:
    """What k6's requests got, per route, for --compare: after the ramp from its lines, the whole
    run from a summary (its overall figures are the route's when there is one route)."""
    got = rec.got(since if rec.timed else None)
    if "*" in got and len(rates) == 1 and next(iter(rates)) not in got:
        got[next(iter(rates))] = got.pop("*")
    return {"source": rec.source, "timed": rec.timed, "routes": got}


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


def write(outcome: Outcome, path: Path) -> None:
    """The scenario and its series files."""
    try:
        path.write_text(outcome.scenario, encoding="utf-8")
        for p, text in outcome.files.items():
            p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write the fitted scenario: {e.strerror}", file=str(path)) from None
