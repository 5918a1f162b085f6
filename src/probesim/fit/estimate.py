"""Each value of the scenario fitted to the telemetry, with where it came from and how well the
model explains the data (``Fitted``); a value the data cannot determine is refused with why.

The models are the engine's (docs/scenarios.md, "Load: route costs and capacity"):

- start: a pod turns Ready at the first readiness probe that passes (``successThreshold`` in
  a row) once the app answers; probes run every ``periodSeconds`` from the container's start
  and count from ``initialDelaySeconds``. So a pod Ready ``d`` after its start answered in
  (d - s·p, d - (s-1)·p]: the midpoint is the estimate, the interval its precision. A pod whose
  first counted probe passed tells only an upper bound.
- CPU per request: the containers' CPU is an idle floor plus each route's rate times its cost,
  fitted by least squares over the samples (costs never negative). Constant traffic cannot
  tell the floor from the cost: the floor is then taken as 0 and the cost is an upper bound.
- wait per request: a request takes wall + cpu / (1 - ρ) on average (its CPU shared with the
  others, ρ the CPU utilization of the pods), so each sample's mean latency less its stretched
  CPU estimates the wait.
- throttling: a pod throttled by its CPU limit's quota makes its requests wait, half a 100 ms
  period on average in the capacity model; with cAdvisor's CFS counters, each sample's expected
  wait (its throttled share of periods × 50 ms) is taken off the latency before the wait per
  request is fitted, as the simulation adds it back where it throttles.
- a probe's path: the kubelet times each probe (``prober_probe_duration_seconds``, successes
  only), which the capacity model answers as it answers a request: that path's wall is the
  median over samples of the mean probe duration less its CPU stretched and the throttling wait.
- variability: the service time is log-normal with mean 1 around the cost; its log-sd is the
  one whose distribution best matches the histogram's bucket fractions (comparing fractions at
  each bound, not interpolated quantiles, which the buckets bias).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.capacity import MAX_RHO, QUOTA_PERIOD_MS
from probesim.errors import InputError
from probesim.fit.kubectl import PodStart
from probesim.fit.prometheus import Series
from probesim.model.kubernetes import Probe

F64 = npt.NDArray[np.float64]


@dataclass
class Fitted:
    """One fitted value: where it goes in the scenario, its value and unit, what it came from
    and how well it fits."""

    path: str  # where it goes in the workload's behaviour: containers.app.start
    value: float
    unit: str
    source: str
    fit: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"field": self.path, "value": self.value, "unit": self.unit, "source": self.source,
                "fit": self.fit, "notes": self.notes}  # fmt: skip


@dataclass(frozen=True)
class Aligned:
    """Series on their common sample times: t (Unix s) and one column per name."""

    t: F64
    columns: dict[str, F64]


def by_label(series: list[Series], label: str) -> dict[str, Series]:
    """Series keyed by one label's value (the route); an empty label value is ``*``."""
    return {s.labels.get(label, "") or "*": s for s in series}


def align(named: dict[str, Series]) -> Aligned:
    """The samples every series has (Prometheus answers one range at the same times)."""
    if not named:
        return Aligned(np.zeros(0), {})
    common = None
    for s in named.values():
        common = set(s.t.tolist()) if common is None else common & set(s.t.tolist())
    t = np.array(sorted(common or ()))
    cols = {}
    for name, s in named.items():
        index = {x: i for i, x in enumerate(s.t.tolist())}
        cols[name] = np.array([s.v[index[x]] for x in t.tolist()])
    return Aligned(t, cols)


UNLOADED_RHO = 0.8  # a probe's duration tells its path's own wait only below this utilization
UNLOADED_THROTTLE = 0.1  # ... and this share of throttled periods


def throttled_share(throttled: Series | None, periods: Series | None) -> Series | None:
    """Each sample's share of CFS periods in which the container was throttled (cAdvisor's two
    counters' rates); None without both. A sample with no period counted (no CPU used, or no
    quota) is not throttled."""
    if throttled is None or periods is None:
        return None
    a = align({"thr": throttled, "all": periods})
    if not a.t.size:
        return None
    ran = a.columns["all"]
    share = np.where(ran > 0, a.columns["thr"] / np.maximum(ran, 1e-12), 0.0)
    return Series({}, a.t, np.clip(share, 0.0, 1.0))


def _throttle_wait_s(a: Aligned, keep: npt.NDArray[np.bool_] | slice) -> F64:
    """The capacity model's throttling wait (seconds) at each kept sample of ``a`` (its
    ``throttle`` column: 0 without one)."""
    if "throttle" not in a.columns:
        return np.zeros(a.t[keep].size)
    return np.asarray(a.columns["throttle"][keep] * QUOTA_PERIOD_MS / 2 / 1000, dtype=np.float64)


def fit_start(pods: list[PodStart], probe: Probe | None, container: str, where: str) -> Fitted:
    """The app's start (process start → it answers) from its pods' start and Ready times."""
    if probe is None:
        raise InputError(
            f"container {container} has no readiness probe: its pods are Ready when it starts, which "
            "says nothing of when the app answers; give the start in the scenario by hand",
            file=where,
        )
    p, s, delay = probe.period_seconds, probe.success_threshold, probe.initial_delay_seconds
    clean = [x for x in pods if x.ready is not None and x.restarts == 0]
    if not clean:
        raise InputError(
            f"no pod of container {container} is Ready without a restart: no start time to fit", file=where
        )
    first_counted = math.ceil(delay / p) * p  # the first probe that counts, after the start
    mids, bounds = [], []
    for x in clean:
        assert x.ready is not None
        by = x.ready - x.started - (s - 1) * p  # the first passing probe of the run that made it Ready
        if by <= first_counted + 0.5:  # it was the first that counted: the app answered by then
            bounds.append(max(by, 0.0))
        else:
            mids.append(by - p / 2)
    if not mids:
        raise InputError(
            "every pod was Ready at its first counted readiness probe "
            f"({first_counted:g} s after its start): the app answered within {max(bounds):g} s, but "
            "the data cannot say when; give the start by hand, or fit from pods whose readiness "
            "probe starts earlier (initialDelaySeconds)",
            file=where,
        )
    notes = [f"{len(bounds)} pod(s) were Ready at their first counted probe: left out"] if bounds else []
    return Fitted(
        # Whole seconds: the precision is half the probe period, and a scenario's times fall on its step.
        f"containers.{container}.start", float(round(float(np.median(mids)))), "s",
        f"{len(mids)} pods' container start → Ready (readiness every {p} s, successThreshold {s})",
        f"± {p / 2:g} s (the probe period); pods {min(mids):g}–{max(mids):g} s", notes,
    )  # fmt: skip


def first_ready(pod_ready: list[Series], pod_started: list[Series], pod_label: str) -> list[PodStart]:
    """Per pod, from kube-state-metrics' series: when its container started (the gauge's first
    value) and the first sample at which it was Ready after that — its first Ready, where
    ``kubectl`` keeps only the last transition (a pod that flapped later would look slow)."""
    starts: dict[str, float] = {}
    for s in pod_started:
        name = s.labels.get(pod_label)
        if name and s.v.size:
            starts.setdefault(name, float(s.v[0]))
    out = []
    for s in pod_ready:
        name = s.labels.get(pod_label)
        if not name or name not in starts:
            continue
        began = starts[name]
        up = [float(t) for t, v in zip(s.t.tolist(), s.v.tolist(), strict=True) if v >= 1 and t >= began]
        out.append(PodStart(name, began, up[0] if up else None, 0, None, None))
    return out


def fit_costs(requests: dict[str, Series], cpu: Series, container: str) -> tuple[list[Fitted], float]:
    """Each route's CPU per request (ms), and the idle CPU floor (cores), by least squares."""
    a = align({**{f"r:{k}": v for k, v in requests.items()}, "cpu": cpu})
    if a.t.size < 3:
        raise InputError(
            f"{a.t.size} common samples of requests and cpu: at least 3 are needed to fit a cost"
        )
    y = a.columns["cpu"]
    routes = [k for k in requests if a.columns[f"r:{k}"].max() > 0]
    if not routes:
        raise InputError("no requests in the period: no cost to fit")
    varied = any(np.ptp(a.columns[f"r:{k}"]) > 0.05 * max(a.columns[f"r:{k}"].mean(), 1e-9) for k in routes)
    notes = []
    while True:
        cols = [a.columns[f"r:{k}"] for k in routes] + ([np.ones_like(y)] if varied else [])
        x = np.column_stack(cols)
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        negative = [k for k, c in zip(routes, coef, strict=False) if c < 0]
        if not negative:
            break
        notes.append(f"{', '.join(negative)}: no CPU cost the data can see (fitted below 0)")
        routes = [k for k in routes if k not in negative]
        if not routes:
            raise InputError("the CPU does not grow with any route's requests: no cost to fit")
    floor = float(coef[-1]) if varied else 0.0
    if not varied:
        notes.append(
            "constant traffic: idle CPU cannot be told from the cost, taken as 0 (cost: an upper bound)"
        )
    predicted = x @ coef
    rms = float(np.sqrt(np.mean((predicted - y) ** 2)) / max(float(np.mean(y)), 1e-12))
    out = [
        Fitted(f"containers.{container}.routes.{k}.cpu", round(float(c) * 1000, 3), "ms",
               f"cpu ~ requests{{route}} over {a.t.size} samples (idle floor {floor:.3g} cores)",
               f"rms residual {100 * rms:.1f} % of the mean CPU", list(notes))
        for k, c in zip(routes, coef, strict=False)
    ]  # fmt: skip
    return out, floor


def fit_idle(floor: float, ready: Series | None, costs: list[Fitted], container: str) -> Fitted | None:
    """The app's CPU besides requests (millicores per pod): the cost fit's idle floor over the
    pods that ran (the mean of the ready series); None when the fit has no floor."""
    if floor <= 0 or not costs or ready is None or not ready.v.size or float(ready.v.mean()) <= 0:
        return None
    pods = float(ready.v.mean())
    return Fitted(
        f"containers.{container}.idleCpu",
        round(floor / pods * 1000, 1),
        "millicores per pod",
        f"the cost fit's idle floor ({floor:.3g} cores) over {pods:.3g} pods (ready, mean)",
        costs[0].fit,
    )


def fit_wall(
    requests: dict[str, Series],
    latency_sum: dict[str, Series],
    cpu: Series,
    ready: Series | None,
    costs: dict[str, float],
    cores_per_pod: float,
    container: str,
    throttle: Series | None = None,
) -> list[Fitted]:
    """Each route's wait per request (ms): mean latency less its CPU cost stretched by 1/(1 - ρ)
    and, with the throttled share of CFS periods (``throttle``), less the throttling wait."""
    out = []
    for route, req in requests.items():
        if route not in latency_sum:
            continue
        walls = _walls(req, latency_sum[route], cpu, ready, costs.get(route, 0.0) / 1000, cores_per_pod,
                       throttle, f"containers.{container}.routes.{route}.wall", "mean latency")  # fmt: skip
        if walls is not None:
            out.append(walls)
    return out


def _walls(
    count: Series,
    seconds: Series,
    cpu: Series,
    ready: Series | None,
    cpu_s: float,
    cores_per_pod: float,
    throttle: Series | None,
    path: str,
    what: str,
    unloaded: bool = False,
) -> Fitted | None:
    """A path's wall (ms): the median over samples of its mean duration (``seconds`` / ``count``
    rates) less its CPU (``cpu_s``) stretched by 1/(1 - ρ) and the throttling wait; None with
    fewer than 3 samples. ``unloaded``: only samples below UNLOADED_RHO of utilization and
    UNLOADED_THROTTLE of throttled periods (where no queue holds it)."""
    named = {"req": count, "sum": seconds, "cpu": cpu} | ({"ready": ready} if ready else {})
    a = align(named | ({"throttle": throttle} if throttle is not None else {}))
    pods_all = a.columns["ready"] if ready is not None else np.ones(a.t.size)
    raw_rho = a.columns["cpu"] / np.maximum(pods_all * cores_per_pod, 1e-9)
    keep = a.columns["req"] > 0
    if unloaded:
        keep &= raw_rho < UNLOADED_RHO
        if "throttle" in a.columns:
            keep &= a.columns["throttle"] < UNLOADED_THROTTLE
    if keep.sum() < 3:
        return None
    rho = np.clip(raw_rho[keep], 0, MAX_RHO)
    mean_s = a.columns["sum"][keep] / a.columns["req"][keep]
    waits = mean_s - cpu_s / (1 - rho) - _throttle_wait_s(a, keep)
    wall = max(0.0, float(np.median(waits)))
    predicted = wall + cpu_s / (1 - rho) + _throttle_wait_s(a, keep)
    rel = float(np.sqrt(np.mean(((predicted - mean_s) / mean_s) ** 2)))
    notes = [] if float(np.median(waits)) >= 0 else [f"{what} below the CPU cost: no wait"]
    less = " and the throttling wait (cAdvisor's CFS periods)" if throttle is not None else ""
    return Fitted(
        path, round(wall * 1000, 3), "ms",
        f"{what} less the CPU stretched by 1/(1 − utilization){less}, {int(keep.sum())} samples",
        f"rms residual {100 * rel:.1f} % of the {what}", notes,
    )  # fmt: skip


def fit_probe_walls(
    seconds: dict[str, Series],
    runs: dict[str, Series],
    paths: dict[str, str],
    cpu_ms: dict[str, float],
    cpu: Series,
    ready: Series | None,
    cores_per_pod: float,
    throttle: Series | None,
    container: str,
) -> tuple[list[Fitted], list[tuple[str, str]]]:
    """Each probe path's wall (ms) from the kubelet's probe durations by probe type (``seconds``
    and ``runs``: the histogram's _sum and _count rates, keyed by probe_type), ``paths`` the
    HTTP path each probe type asks, ``cpu_ms`` each path's CPU cost; and the paths it could not
    fit, with why. Probe types asking one path are counted together. Only samples of a pod
    neither loaded nor throttled count: under load a probe waits in the app's queue, which the
    simulation adds itself (and the kubelet times no probe that timed out)."""
    by_path: dict[str, list[str]] = {}
    for kind, path in paths.items():
        if kind in seconds and kind in runs:
            by_path.setdefault(path, []).append(kind)
    out, refused = [], []
    for path, kinds in sorted(by_path.items()):
        total_s = _summed([seconds[k] for k in kinds])
        total_n = _summed([runs[k] for k in kinds])
        where = f"containers.{container}.routes.{path}.wall"
        f = _walls(total_n, total_s, cpu, ready, cpu_ms.get(path, 0.0) / 1000, cores_per_pod, throttle,
                   where, "mean probe duration", unloaded=True)  # fmt: skip
        if f is None:
            refused.append((where, f"fewer than 3 samples of {' and '.join(sorted(kinds))} probe durations "
                            f"below {UNLOADED_RHO:.0%} CPU utilization and {UNLOADED_THROTTLE:.0%} throttled "
                            "periods: under load a probe's time is the queue's"))  # fmt: skip
            continue
        f.source = f"the kubelet's {' and '.join(sorted(kinds))} probe durations: " + f.source
        f.source += f" (those below {UNLOADED_RHO:.0%} utilization, {UNLOADED_THROTTLE:.0%} throttled)"
        f.notes.append("successful probes only (the kubelet times no failure)")
        out.append(f)
    return out, refused


def _summed(series: list[Series]) -> Series:
    """Series added on their common samples."""
    if len(series) == 1:
        return series[0]
    a = align({str(i): s for i, s in enumerate(series)})
    return Series({}, a.t, np.sum(np.stack(list(a.columns.values())), axis=0))


_ERF = np.frompyfunc(math.erf, 1, 1)


def lognormal_cdf(x: F64, mean: F64, sigma: float) -> F64:
    """P(mean · X ≤ x), X log-normal with mean 1 and log-sd ``sigma`` (broadcast)."""
    z = (np.log(np.maximum(x, 1e-300) / mean) + sigma**2 / 2) / (sigma * math.sqrt(2))
    return 0.5 * (1 + np.asarray(_ERF(z), dtype=np.float64))


def fit_variability(
    buckets: list[Series],
    cpu: Series,
    ready: Series | None,
    cost_s: tuple[float, float],
    cores_per_pod: float,
    scale: float,
    throttle: Series | None = None,
) -> Fitted | None:
    """The service times' log-sd whose distribution best matches the histogram's bucket
    fractions over the period: each sample's latencies are log-normal around wall + cpu/(1 - ρ)
    at that sample's ρ (``cost_s`` = (cpu, wall) in seconds), so the period's histogram is their
    mixture. None without buckets."""
    named: dict[str, Series] = {}
    bounds: dict[str, float] = {}
    for s in buckets:
        le = s.labels.get("le")
        if le is not None:
            named[le] = s
            bounds[le] = math.inf if le in ("+Inf", "Inf") else float(le) * scale
    inf = next((k for k, b in bounds.items() if b == math.inf), None)
    if inf is None or len(named) < 3:
        return None
    extra = ({"ready": ready} if ready else {}) | ({"throttle": throttle} if throttle is not None else {})
    a = align({**{f"le:{k}": v for k, v in named.items()}, "cpu": cpu} | extra)
    n = a.columns[f"le:{inf}"]
    if a.t.size == 0 or n.sum() <= 0:
        return None
    pods = a.columns["ready"] if ready is not None else np.ones(a.t.size)
    rho = np.clip(a.columns["cpu"] / np.maximum(pods * cores_per_pod, 1e-9), 0, MAX_RHO)
    means = cost_s[1] + cost_s[0] / (1 - rho) + _throttle_wait_s(a, slice(None))
    finite = sorted((b, k) for k, b in bounds.items() if b != math.inf)
    bound = np.array([b for b, _ in finite])
    measured = np.array([a.columns[f"le:{k}"].sum() for _, k in finite]) / n.sum()
    weights = n / n.sum()
    best, err = 0.0, math.inf
    for sigma in np.arange(0.02, 3.0001, 0.02):
        predicted = lognormal_cdf(bound[:, None], means[None, :], float(sigma)) @ weights
        e = float(np.max(np.abs(predicted - measured)))
        if e < err:
            best, err = float(sigma), e
    return Fitted("variability", round(best, 2), "log-sd",
                  f"the histogram's {bound.size} bucket fractions over {a.t.size} samples",
                  f"largest gap between the fitted and measured fractions {err:.3f}")  # fmt: skip


def fit_errors(
    requests: dict[str, Series], errors: dict[str, Series], container: str, source: str, step_s: float
) -> list[Fitted]:
    """Each route's share of 5xx answers over the period (its ``errors``), with the binomial
    standard error of that share over the answers counted (rates × the query's step)."""
    out = []
    for route, s in sorted(requests.items()):
        total = float(s.v.sum())
        failed = float(errors[route].v.sum()) if route in errors else 0.0
        if total <= 0 or failed <= 0:
            continue
        share = min(failed / total, 1.0)
        answers = total * step_s
        se = math.sqrt(share * (1 - share) / max(answers, 1.0))
        out.append(
            Fitted(
                f"containers.{container}.routes.{route}.errors",
                round(100 * share, 3),
                "% of answers (status 500)",
                source,
                f"± {100 * se:.2f} % (binomial, over about {answers:,.0f} answers)",
            )
        )
    return out
