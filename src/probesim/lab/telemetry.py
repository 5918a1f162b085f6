"""``probesim lab --prometheus DIR``: the run's telemetry, as a cluster would have it, for
``probesim fit``.

During the run each pod's test app serves its request histogram on a metrics port of its own,
the lab serves the kubelet's, kube-state-metrics' and cAdvisor's series (lab/metrics.py), and a
real Prometheus (lab/prometheus.py) scrapes them all every second, each app's series labelled
with its pod and namespace as Kubernetes service discovery labels them. When the run ends, the
lab asks that Prometheus fit's own queries over the run for each workload (``queries``, given by
the caller: fit/queries.py's), writes the answers as ``DIR/<workload>/<name>.json`` — what
``probesim fit --from`` reads — and the pods as ``kubectl get pods -o json`` shows them
(``DIR/pods.json``, second-precision times as the API has them) and their events as
``kubectl get events -o json`` does (``DIR/events.json``). Then Prometheus is stopped with
everything else.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from aiohttp import web

from probesim.errors import InputError
from probesim.kube.selectors import selects
from probesim.lab.metrics import LabMetrics, LabState, PodState, WorkloadState
from probesim.lab.pods import Pod, free_port
from probesim.lab.prometheus import HOST, Prometheus, write_targets

if TYPE_CHECKING:
    from probesim.model.kubernetes import Workload

# fit's queries for a workload, by the name its answer is saved under (the caller's: fit/queries.py).
Queries = Callable[["Workload", str | None], dict[str, str]]  # a workload, its Service

RATE_WINDOW = "5s"  # for the caller's queries: five scrapes (rate() needs two samples in its window)
SETTLE_S = 2.5  # the last scrapes after the run, before the queries


def _rfc3339(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Telemetry:
    """The run's metrics endpoints, its Prometheus, and what is saved for fit."""

    def __init__(self, lab: Any, out: Path, queries: Queries) -> None:
        """``lab``: the run (lab/orchestrator.py's Lab): its pods, clock, runtime and prober."""
        self.lab = lab
        self.out = out
        self.queries = queries
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"cannot make the folder: {e.strerror}", field="--prometheus") from None
        self.metrics = LabMetrics(self.state)
        self.runner: web.AppRunner | None = None
        self.server: Prometheus | None = None
        self.port = 0
        self.envoys: list[tuple[str, dict[str, str]]] = []  # each Envoy's /stats/prometheus and labels
        self.envoy_file = out / "prometheus" / "envoy-targets.json"

    def _uid(self, pod: Pod) -> str:
        return f"probesim-{pod.name}"

    def _wall(self, monotonic: float) -> float:
        clock = self.lab.clock
        return float(clock.wall_t0 + (monotonic - clock.t0))

    def pod_state(self, pod: Pod) -> PodState:
        namespace = self._namespace(pod.workload)
        ready_time = self.lab.clock.wall_t0 + pod.ready_since / 1000 if pod.ready else None
        started = self._wall(pod.run.started_at) if pod.run.instance >= 0 else None
        pid = pod.run.proc.pid if pod.run.proc is not None and pod.run.proc.returncode is None else None
        stat_dir = self.lab.runtime.cpu_stat_dir
        stat = stat_dir / str(pid) if stat_dir is not None and pid is not None else None
        return PodState(pod.name, namespace, self._uid(pod), pod.container.name, pod.ready, ready_time,
                        started, pod.run.restarts, pid, stat)  # fmt: skip

    def _namespace(self, workload: str) -> str:
        w = next((x for x in self.lab.scenario.workloads if x.name == workload), None)
        return w.metadata.namespace if w is not None else "default"

    def state(self) -> LabState:
        pods = [p for p in self.lab.pods if not p.gone]
        out = LabState([self.pod_state(p) for p in pods])
        for w in self.lab.workloads:
            mine = [p for p in pods if p.workload == w.name and not p.deleting]
            ready = sum(1 for p in mine if p.ready)
            replicas = w.spec.replicas
            out.workloads.append(
                WorkloadState(w.name, w.metadata.namespace, w.kind, replicas, len(mine), ready, ready)
            )
        return out

    def on_probe(self, pod: Pod, kind: str, ok: bool, seconds: float) -> None:
        self.metrics.probe(kind, ok, self.pod_state(pod), seconds)

    async def start(self, pods: list[Pod]) -> None:
        """Before the clock starts: a metrics port per pod (its app serves there), the lab's
        own /metrics, and Prometheus scraping them."""
        for pod in pods:
            self.lab.runtime.metrics_ports[pod.name] = free_port()
        self.lab.runtime.cpu_stat_dir = self.lab.run_folder().sub("cpu-stat")
        self.lab.prober.on_result = self.on_probe

        async def handle(_: web.Request) -> web.Response:
            return web.Response(body=self.metrics.exposition(), content_type="text/plain")

        app = web.Application()
        app.router.add_get("/metrics", handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        self.port = free_port()
        await web.TCPSite(self.runner, HOST, self.port).start()
        apps = [
            (f"{HOST}:{port}", {"pod": name, "namespace": self._namespace(self._workload_of(name, pods))})
            for name, port in self.lab.runtime.metrics_ports.items()
        ]
        # Its data stays in the output folder: served again later (Prometheus(folder, {})), it
        # answers fit --prometheus over the run's period (DIR/period.json).
        folder = self.out / "prometheus"
        self.envoy_file = folder / "envoy-targets.json"
        self.server = Prometheus(folder, {"kubelet": [f"{HOST}:{self.port}"], "apps": apps},
                                 files={"envoy": (self.envoy_file, "/stats/prometheus")})  # fmt: skip
        self.lab.traffic.stats_port = self.envoy_target
        await self.server.start()

    def envoy_target(self, name: str, pod: str | None) -> int:
        """A port for an Envoy's /stats/prometheus (Istio's 15090 listener), scraped from now on:
        a pod's sidecar with the pod's labels, a client sidecar with its name."""
        port = free_port()
        labels = {"sidecar": name}
        if pod is not None:
            workload = next((p.workload for p in self.lab.pods if p.name == pod), "")
            labels |= {"pod": pod, "namespace": self._namespace(workload)}
        self.envoys.append((f"{HOST}:{port}", labels))
        write_targets(self.envoy_file, self.envoys)
        return port

    @staticmethod
    def _workload_of(name: str, pods: list[Pod]) -> str:
        return next(p.workload for p in pods if p.name == name)

    async def save(self) -> list[Path]:
        """fit's queries over the run, answered by the run's Prometheus, and the pods."""
        assert self.server is not None
        await asyncio.sleep(SETTLE_S)
        start, end = self.lab.clock.wall_t0, time.time()
        written = []
        for w in self.lab.workloads:
            folder = self.out / w.name
            folder.mkdir(exist_ok=True)
            service = next((s.name for s in self.lab.scenario.services if selects(s, w)), None)
            for name, q in self.queries(w, service).items():
                doc = await asyncio.to_thread(self.server.query_range, q, start, end, 1)
                (folder / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
            written.append(folder)
        (self.out / "pods.json").write_text(json.dumps(self.pods_json(), indent=1), encoding="utf-8")
        self._write_k6(self.out / "k6.json")
        (self.out / "k6-summary.json").write_text(json.dumps(self.k6_summary(), indent=4), encoding="utf-8")
        (self.out / "events.json").write_text(json.dumps(self.events_json(), indent=1), encoding="utf-8")
        period = {"start": _rfc3339(start), "end": _rfc3339(end + 1)}  # what fit --start/--end take
        (self.out / "period.json").write_text(json.dumps(period), encoding="utf-8")
        return written

    def _write_k6(self, path: Path) -> None:
        """What the load generator sent and got, as ``k6 run --out json`` logs it: an
        ``http_reqs`` Point per request at its send time (for fit --k6: the offered traffic,
        which the app's histogram cannot tell once requests queue), and for each request that
        ended, at its end, its ``http_req_duration`` (ms) and ``http_req_failed`` (1: not 200-399)."""
        traffic = self.lab.traffic
        with path.open("w", encoding="utf-8") as f:
            for t in traffic.routes:
                res = traffic.loads.get(t.label)
                if res is None:
                    continue
                url = f"http://{traffic.service_of(t)}{t.path}"
                tags = {"name": url, "url": url, "method": t.method}
                for at in res.sent_at:
                    point = {"time": _rfc3339(at), "value": 1, "tags": tags}
                    f.write(json.dumps({"type": "Point", "metric": "http_reqs", "data": point}) + "\n")
                for end, ms, failed in res.trail:
                    for metric, value in (("http_req_duration", round(ms, 3)),
                                          ("http_req_failed", int(failed))):  # fmt: skip
                        point = {"time": _rfc3339(end), "value": value, "tags": tags}
                        f.write(json.dumps({"type": "Point", "metric": metric, "data": point}) + "\n")

    def k6_summary(self) -> dict[str, Any]:
        """The run's totals as ``k6 run --summary-export`` writes them (its classic format, no
        thresholds: no submetric): requests and their rate over the run, the durations' trend
        (avg, min, med, max, p(90), p(95); percentiles linear between the sorted samples, as k6's)
        and the failed share."""
        loads = [res for t in self.lab.traffic.routes if (res := self.lab.traffic.loads.get(t.label))]
        sent = [at for res in loads for at in res.sent_at]
        trail = [x for res in loads for x in res.trail]
        ms = np.array([x[1] for x in trail])
        failed = sum(1 for x in trail if x[2])
        began = min(sent, default=0.0)
        seconds = max(max((x[0] for x in trail), default=0.0), max(sent, default=0.0)) - began
        metrics: dict[str, Any] = {"http_reqs": {"count": len(sent), "rate": len(sent) / max(seconds, 1.0)}}
        if ms.size:
            p50, p90, p95 = (float(x) for x in np.percentile(ms, [50, 90, 95]))
            metrics["http_req_duration"] = {"avg": float(ms.mean()), "min": float(ms.min()), "med": p50,
                                            "max": float(ms.max()), "p(90)": p90, "p(95)": p95}  # fmt: skip
            n = int(ms.size)
            metrics["http_req_failed"] = {"value": failed / n, "passes": failed, "fails": n - failed}
        root = {"name": "", "path": "", "id": "d41d8cd98f00b204e9800998ecf8427e", "groups": {}, "checks": {}}
        return {"root_group": root, "metrics": metrics}

    def events_json(self) -> dict[str, Any]:
        """The pods' events as ``kubectl get events -o json`` lists them: repeats of the same
        reason and message on one pod folded into one event with its ``count`` and first and
        last times, as the API's event recorder folds them."""
        folded: dict[tuple[str, str, str, str], list[float]] = {}
        for e in self.lab.clock.events:
            kind, _, name = e.object.partition("/")
            if kind != "pod":
                continue
            at = self.lab.clock.wall_t0 + e.time_ms / 1000
            folded.setdefault((name, e.type, e.reason, e.message), []).append(at)
        namespaces = {p.name: self._namespace(p.workload) for p in self.lab.pods}
        items = []
        for (name, type_, reason, message), times in folded.items():
            ns = namespaces.get(name, "default")
            items.append({
                "apiVersion": "v1", "kind": "Event", "metadata": {"namespace": ns},
                "involvedObject": {"kind": "Pod", "name": name, "namespace": ns},
                "type": type_, "reason": reason, "message": message, "count": len(times),
                "firstTimestamp": _rfc3339(min(times)), "lastTimestamp": _rfc3339(max(times)),
            })  # fmt: skip
        return {"apiVersion": "v1", "kind": "List", "items": items}

    def pods_json(self) -> dict[str, Any]:
        """The pods as ``kubectl get pods -o json`` lists them (the fields fit reads)."""
        items = []
        for pod in self.lab.pods:
            if pod.gone:
                continue
            s = self.pod_state(pod)
            status: dict[str, Any] = {"phase": "Running", "conditions": [], "containerStatuses": []}
            if s.ready and s.ready_time is not None:
                status["conditions"].append({"type": "Ready", "status": "True",
                                             "lastTransitionTime": _rfc3339(s.ready_time)})  # fmt: skip
            else:
                status["conditions"].append({"type": "Ready", "status": "False"})
            cs: dict[str, Any] = {"name": s.container, "ready": s.ready, "restartCount": s.restarts}
            if s.started is not None and pod.run.proc is not None:
                cs["state"] = {"running": {"startedAt": _rfc3339(s.started)}}
            status["containerStatuses"].append(cs)
            meta = {"name": s.name, "namespace": s.namespace, "uid": s.uid}
            items.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status})
        return {"apiVersion": "v1", "kind": "List", "items": items}

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
        if self.runner is not None:
            await self.runner.cleanup()
