"""The lab's own telemetry, under the names a cluster's tools use (reference/telemetry.md), so
that ``probesim fit`` reads a lab run as it reads a cluster:

- the kubelet's prober metrics: ``prober_probe_total`` (by probe_type, result, container, pod,
  namespace, pod_uid) and ``prober_probe_duration_seconds`` (client_golang's default buckets),
  recorded as ``doProbe`` records them: a success counts and is timed, a failure only counts,
  anything else counts as ``unknown`` and is timed (§1.2);
- kube-state-metrics' pod and workload series, read from the lab's state at each scrape:
  ``kube_pod_status_ready{condition}``, ``kube_pod_container_status_restarts_total``,
  ``kube_pod_container_state_started``, ``kube_pod_status_ready_time``,
  ``kube_deployment_spec_replicas`` and
  ``kube_deployment_status_replicas{,_ready,_available,_unavailable}``;
- cAdvisor's ``container_cpu_usage_seconds_total{cpu="total"}``: the pod process's real CPU
  time (user + system, its waited-for children included), from /proc; and for a container held
  to a CPU limit, ``container_cpu_cfs_periods_total``, ``container_cpu_cfs_throttled_periods_total``
  and ``container_cpu_cfs_throttled_seconds_total``, from the counts its app keeps as a cgroup's
  ``cpu.stat`` does (lab/app.py's CpuQuota).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

PROBE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # client_golang's DefBuckets
PROBE_TYPES = {"startup": "Startup", "readiness": "Readiness", "liveness": "Liveness"}
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class PodState:
    """One pod as kube-state-metrics and cAdvisor see it at a scrape."""

    name: str
    namespace: str
    uid: str
    container: str
    ready: bool
    ready_time: float | None  # Unix s of the Ready condition's last transition to True
    started: float | None  # Unix s the running container started
    restarts: int
    pid: int | None  # the container's process, for its CPU time
    cpu_stat: Path | None = None  # its CFS counts, as a cgroup's cpu.stat holds them (lab/app.py)


@dataclass(frozen=True)
class WorkloadState:
    name: str
    namespace: str
    kind: str
    spec_replicas: int
    replicas: int
    ready: int
    available: int


@dataclass
class LabState:
    pods: list[PodState] = field(default_factory=list)
    workloads: list[WorkloadState] = field(default_factory=list)


def cfs_counts(path: Path) -> tuple[int, int, float] | None:
    """nr_periods, nr_throttled and throttled seconds of a cpu.stat file (None: not there yet)."""
    try:
        fields = dict(line.split(" ", 1) for line in path.read_text().splitlines() if " " in line)
        return int(fields["nr_periods"]), int(fields["nr_throttled"]), int(fields["throttled_usec"]) / 1e6
    except (OSError, KeyError, ValueError):
        return None


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process and its waited-for children (/proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()  # after "pid (comm) ": state is field 3
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + cutime + cstime) / CLK_TCK


class _StateCollector(Collector):
    def __init__(self, state: Callable[[], LabState]) -> None:
        self.state = state
        self.cpu_last: dict[str, float] = {}  # a pod's CPU counter never goes back within a run
        self.cfs_last: dict[str, tuple[int, int, float]] = {}  # and its CFS counts, likewise

    def collect(self) -> Iterator[Metric]:
        s = self.state()
        ready = GaugeMetricFamily(
            "kube_pod_status_ready", "Pod Ready condition.", labels=["namespace", "pod", "uid", "condition"]
        )
        restarts = CounterMetricFamily("kube_pod_container_status_restarts", "Container restarts.",
                                       labels=["namespace", "pod", "uid", "container"])  # fmt: skip
        started = GaugeMetricFamily("kube_pod_container_state_started", "Container start (Unix s).",
                                    labels=["namespace", "pod", "uid", "container"])  # fmt: skip
        ready_time = GaugeMetricFamily("kube_pod_status_ready_time", "When the pod became Ready (Unix s).",
                                       labels=["namespace", "pod", "uid"])  # fmt: skip
        cpu = CounterMetricFamily("container_cpu_usage_seconds", "CPU time used by the container.",
                                  labels=["namespace", "pod", "container", "cpu"])  # fmt: skip
        # cAdvisor's CFS counters (from the cgroup's cpu.stat): only containers under a quota.
        cfs = [
            CounterMetricFamily(f"container_cpu_cfs_{name}", doc, labels=["namespace", "pod", "container"])
            for name, doc in (
                ("periods", "Elapsed enforcement periods."),
                ("throttled_periods", "Periods in which the container was throttled."),
                ("throttled_seconds", "Time the container was throttled."),
            )
        ]
        for p in s.pods:
            for cond, on in (("true", p.ready), ("false", not p.ready), ("unknown", False)):
                ready.add_metric([p.namespace, p.name, p.uid, cond], 1.0 if on else 0.0)
            restarts.add_metric([p.namespace, p.name, p.uid, p.container], float(p.restarts))
            if p.started is not None:
                started.add_metric([p.namespace, p.name, p.uid, p.container], p.started)
            if p.ready and p.ready_time is not None:
                ready_time.add_metric([p.namespace, p.name, p.uid], p.ready_time)
            used = process_cpu_seconds(p.pid) if p.pid is not None else None
            key = f"{p.namespace}/{p.name}"
            if used is not None:
                # A restarted container's new process starts from 0; cAdvisor's counter is per
                # container and resets too, which rate() handles, so the new value is given as is.
                self.cpu_last[key] = used
            if key in self.cpu_last:
                cpu.add_metric([p.namespace, p.name, p.container, "total"], self.cpu_last[key])
            counts = cfs_counts(p.cpu_stat) if p.cpu_stat is not None else None
            if counts is not None:
                self.cfs_last[key] = counts
            if key in self.cfs_last:
                n, thr, thr_s = self.cfs_last[key]
                for family, v in zip(cfs, (float(n), float(thr), thr_s), strict=True):
                    family.add_metric([p.namespace, p.name, p.container], v)
        spec = GaugeMetricFamily(
            "kube_deployment_spec_replicas", "Desired replicas.", labels=["namespace", "deployment"]
        )
        reps = {
            k: GaugeMetricFamily(
                f"kube_deployment_status_replicas{k}",
                "Deployment status.",
                labels=["namespace", "deployment"],
            )
            for k in ("", "_ready", "_available", "_unavailable")
        }
        for w in s.workloads:
            if w.kind != "Deployment":
                continue
            spec.add_metric([w.namespace, w.name], float(w.spec_replicas))
            # status.unavailableReplicas: the replicas asked for less those available, at least 0.
            unavailable = max(w.spec_replicas - w.available, 0)
            for k, v in (("", w.replicas), ("_ready", w.ready), ("_available", w.available),
                         ("_unavailable", unavailable)):  # fmt: skip
                reps[k].add_metric([w.namespace, w.name], float(v))
        yield from (ready, restarts, started, ready_time, cpu, *cfs, spec, *reps.values())


class LabMetrics:
    """The lab's registry: probe results as they happen, the rest read at each scrape."""

    def __init__(self, state: Callable[[], LabState]) -> None:
        self.registry = CollectorRegistry()
        self.probes = Counter(
            "prober_probe", "Probe attempts that produced a result.",
            ["probe_type", "result", "container", "pod", "namespace", "pod_uid"], registry=self.registry,
        )  # fmt: skip
        self.durations = Histogram(
            "prober_probe_duration_seconds", "Duration of a probe's run (successes and unknowns).",
            ["probe_type", "container", "pod", "namespace"], buckets=PROBE_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.registry.register(_StateCollector(state))

    def probe(self, kind: str, ok: bool | None, pod: PodState, seconds: float) -> None:
        """A probe's result: ``ok`` True (success), False (failure) or None (unknown)."""
        probe_type = PROBE_TYPES[kind]
        result = "successful" if ok else "failed" if ok is False else "unknown"
        self.probes.labels(probe_type, result, pod.container, pod.name, pod.namespace, pod.uid).inc()
        if ok is not False:
            self.durations.labels(probe_type, pod.container, pod.name, pod.namespace).observe(seconds)

    def exposition(self) -> bytes:
        """The text a scrape of /metrics gets."""
        return bytes(generate_latest(self.registry))
