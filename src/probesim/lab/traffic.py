"""The lab's traffic and Envoys: each traffic route's open-loop load, through real client
sidecars (one Envoy per client pod, configured by the same translation as probesim
envoy-config) when the scenario has Istio objects for its Service, else round robin over the
Service's Ready endpoints at each request (kube-proxy); the pods' own inbound sidecars when
the workload is injected; and the client sidecar of the pods' calls to a Service that has
Istio objects (the lab's kube-proxy relay sends them to it). The sidecars' endpoints follow
the status manager's; their statistics and outlier event logs are read back at the end, in the
simulation's names."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from urllib.parse import urlsplit

from probesim.engine.sidecar.build import istio_for
from probesim.errors import InputError
from probesim.lab.clock import Clock
from probesim.lab.envoy import FLUSH_MS, Envoy, inbound_bootstrap
from probesim.lab.hygiene import RunFolder
from probesim.lab.load import KeepAlive, LoadResult, constant_rate
from probesim.lab.pods import HOST, Pod, free_port, up_and_listening
from probesim.lab.status import StatusManager
from probesim.mesh.envoy import Translator
from probesim.model.scenario import Scenario, service_calls
from probesim.model.traffic import Traffic
from probesim.results import Event

MAX_SIDECARS = 8


def meshed(scenario: Scenario, t: Traffic) -> bool:
    """Whether a route's requests go through Envoy: the simulation's rule
    (``engine.sidecar.build.istio_for``)."""
    rule, vroute = istio_for(scenario, scenario.service_for(t).name, t)
    return rule is not None or vroute is not None


def meshed_calls(scenario: Scenario, service: str) -> bool:
    """Whether the pods' calls to ``service`` go through a client sidecar: the simulation's
    rule for any path they call."""
    return any(
        meshed(scenario, Traffic(rate=0.0, service=service, port=c.port, path=c.path))
        for c in service_calls(scenario.container_behaviors()).values()
        if c.service == service
    )


class TrafficRunner:
    def __init__(
        self,
        scenario: Scenario,
        routes: list[Traffic],
        clock: Clock,
        status: StatusManager,
        folder: Callable[[], RunFolder],
    ) -> None:
        self.scenario = scenario
        self.routes = routes
        self.clock = clock
        self.status = status
        self.folder = folder
        for t in routes:
            if t.rate is None or t.spikes:
                raise InputError(
                    f"spec.traffic {t.label}: the lab sends constant-rate traffic only (rate:), "
                    "not stages, series or spikes yet"
                )
            if meshed(scenario, t) and t.clients > MAX_SIDECARS:
                raise InputError(
                    f"spec.traffic {t.label}: clients {t.clients}: the lab runs at most "
                    f"{MAX_SIDECARS} client sidecars (one Envoy process each)"
                )
        self.envoys: list[Envoy] = []  # client sidecars
        self.callers: dict[str, Envoy] = {}  # per Service the pods call through one, its sidecar
        self.sidecars: list[Envoy] = []  # the pods' own, inbound
        self.sidecar_pods: list[str] = []  # whose each of them is
        self.listen: list[int] = []
        self.loads: dict[str, LoadResult] = {}
        self.envoy_stats: dict[str, int] = {}
        # Where an Envoy (its name, its pod for a pod's sidecar) exports /stats/prometheus, when
        # the run's telemetry scrapes them (lab --prometheus); None: not exported.
        self.stats_port: Callable[[str, str | None], int] | None = None
        status.on_endpoints.append(self.push_endpoints)

    def push_endpoints(self) -> None:
        for envoy in (*self.envoys, *self.callers.values()):
            envoy.set_endpoints(self.status.cluster_endpoints(list(envoy.eds)))

    def service_of(self, t: Traffic) -> str:
        return self.scenario.service_for(t).name

    async def prepare(self) -> None:
        """The client sidecars up before the clock starts (with no endpoint yet)."""
        for t in self.routes:
            if meshed(self.scenario, t):
                while len(self.envoys) < t.clients:
                    await self._start_envoy()

    async def start_sidecar(self, pod: Pod, index: int) -> None:
        """The pod's Istio sidecar takes its traffic: a client's connection ends there and
        outlives the app's restarts (Envoy answers 503 meanwhile)."""
        listen = free_port()
        name = f"sidecar-{index}"
        stats = self.stats_port(name, pod.name) if self.stats_port is not None else None
        sidecar = Envoy(inbound_bootstrap(listen, pod.port), self.folder().sub(name), stats)
        self.sidecars.append(sidecar)
        self.sidecar_pods.append(pod.name)
        await sidecar.start()
        pod.inbound = listen

    async def run(self, duration_s: float) -> None:
        """Each route's load, from its start to its stop within the run."""
        jobs = []
        for t in self.routes:
            service = self.service_of(t)
            headers = dict(t.headers)
            targets: list[str] | Callable[[], list[str]]
            if meshed(self.scenario, t):
                while len(self.envoys) < t.clients:
                    await self._start_envoy()
                targets = [f"http://{HOST}:{port}{t.path}" for port in self.listen[: t.clients]]
                headers.setdefault("Host", service)  # selects the Service's virtual host
            else:
                targets = partial(self.status.urls, service, t.path)  # kube-proxy, at each request
            start = t.start / 1000
            stop = min(t.stop / 1000 if t.stop is not None else duration_s, duration_s)
            assert t.rate is not None  # checked at construction
            self.loads[t.label] = LoadResult()  # filled as answers come
            jobs.append(self._load(targets, t.rate, start, stop, t, headers, self.loads[t.label]))
        await asyncio.gather(*jobs)

    async def _start_envoy(self) -> None:
        listen = free_port()
        envoy = self._client_envoy(listen, f"client-{len(self.envoys)}")
        self.envoys.append(envoy)
        self.listen.append(listen)
        await envoy.start()

    async def call_sidecar(self, service: str) -> int:
        """The client sidecar the pods' calls to ``service`` go through (one for all the
        callers, as the simulation has it: docs/fidelity.md); its listening port."""
        listen = free_port()
        envoy = self._client_envoy(listen, f"calls-{service}")
        self.callers[service] = envoy
        await envoy.start()
        return listen

    def _client_envoy(self, listen: int, name: str) -> Envoy:
        """A client sidecar configured by the same translation as probesim envoy-config, with
        every cluster's endpoints as the status manager has them (per subset)."""
        s = self.scenario
        endpoints = {svc.name: self.status.endpoints(svc.name) for svc in s.services}
        tr = Translator(list(s.destination_rules), list(s.virtual_services), list(s.services), endpoints)
        bootstrap = tr.bootstrap(listen)  # its admin address is replaced by a Unix socket
        stats = self.stats_port(name, None) if self.stats_port is not None else None
        envoy = Envoy(bootstrap, self.folder().sub(name), stats)
        envoy.set_endpoints(self.status.cluster_endpoints(list(envoy.eds)))
        return envoy

    async def _load(
        self,
        targets: list[str] | Callable[[], list[str]],
        rate: float,
        start: float,
        stop: float,
        t: Traffic,
        headers: dict[str, str],
        out: LoadResult,
    ) -> LoadResult:
        if stop <= start:  # the run ends before this route starts: nothing to wait for
            return out
        await asyncio.sleep(max(0.0, self.clock.t0 + start - time.monotonic()))
        timeout = (t.timeout or 60_000) / 1000
        # Through client sidecars, Envoy balances each request and answers when it has no
        # endpoint: the route's keepAlive and noEndpoint are about kube-proxy.
        plain = callable(targets)
        keep = KeepAlive(t.pre_allocated_vus or 1, t.max_vus or 1000) if plain and t.keep_alive else None
        return await constant_rate(
            targets,
            rate,
            max(stop - start, 0.0),
            timeout,
            t.max_vus or 1000,
            headers,
            t.method,
            out,
            keep_alive=keep,
            retransmit=plain and t.no_endpoint == "retransmit",
            graceful_stop_s=t.graceful_stop / 1000,
            listening=self.listening,
        )

    def listening(self, url: str) -> bool:
        """Whether the scenario has the app behind ``url`` (a pod's port, or its sidecar's) up
        and listening now: a refusal there is the lab's. A client sidecar's URL names no pod."""
        port = urlsplit(url).port
        pod = next((p for p in self.status.pods if port in (p.port, p.inbound)), None)
        return pod is not None and up_and_listening(pod, self.clock.t0, time.monotonic())

    def linger_s(self) -> float:
        """How long answers may still be on their way after the run: each route's gracefulStop."""
        return max((t.graceful_stop for t in self.routes), default=0) / 1000

    def failed_so_far(self, routes: set[str] | None = None) -> dict[str, int]:
        """The requests failed so far by cause, over the routes named (default: all)."""
        out: dict[str, int] = {}
        for label, res in self.loads.items():
            if routes is not None and label not in routes:
                continue
            for c, n in res.failed.items():
                out[c] = out.get(c, 0) + n
        return out

    async def collect(self) -> list[Event]:
        """The client sidecars' statistics, summed over them, and their outlier events."""
        events: list[Event] = []
        named = [(f"client-{i}", e) for i, e in enumerate(self.envoys)]
        if named or self.callers:
            await asyncio.sleep(2 * FLUSH_MS / 1000)  # the last ejections written to the log
        for name, envoy in [*named, *((f"calls-{s}", e) for s, e in self.callers.items())]:
            for k, v in (await envoy.stats()).items():
                self.envoy_stats[k] = self.envoy_stats.get(k, 0) + v
            for cluster, n in (await envoy.failed_outlier_check()).items():
                k = f"cluster.{cluster}.outlier_detection.hosts_failed_outlier_check"
                self.envoy_stats[k] = self.envoy_stats.get(k, 0) + n
            events += self._outlier_events(name, envoy)
        return events

    def _outlier_events(self, sidecar: str, envoy: Envoy) -> list[Event]:
        """Envoy's outlier detection event log, a line per ejection or unejection, as events of
        the client's sidecar (the simulation's names); times from Envoy's wall-clock stamps."""
        out = []
        for doc in envoy.outlier_events():
            try:
                at = datetime.fromisoformat(doc["timestamp"]).timestamp()
                action = str(doc["action"])
            except (KeyError, TypeError, ValueError):
                continue
            out.append(
                Event(
                    round((at - self.clock.wall_t0) * 1000),
                    "Warning" if action == "EJECT" else "Normal",
                    f"Outlier{action.title()}",
                    f"sidecar/{sidecar}",
                    json.dumps(doc, separators=(",", ":")),
                    "envoy",
                )
            )
        return out

    def envoy_counters(self, service: str) -> dict[str, int]:
        """A route's Envoy figures, as the simulation names them: outlier_detection.* counters of
        the Service's clusters, their retries (upstream_rq_retry), and a split's share per
        subset."""
        od: dict[str, int] = {}
        for k, v in self.envoy_stats.items():
            if (
                k.startswith("cluster.outbound|")
                and k.endswith(".upstream_rq_retry")
                and k.split("|")[3].startswith(f"{service}.")
            ):
                od["upstream_rq_retry"] = od.get("upstream_rq_retry", 0) + v
            if (
                k.startswith("cluster.outbound|")
                and ".outlier_detection." in k
                and k.split("|")[3].startswith(f"{service}.")
            ):
                stat = k.split(".outlier_detection.")[-1]
                od[stat] = od.get(stat, 0) + v
            if k.startswith("cluster.outbound|") and k.endswith(".upstream_rq_total"):
                _, _, subset, rest = k.split("|", 3)
                if subset and rest.startswith(f"{service}."):  # a split's share, per subset
                    od[f"{subset}.upstream_rq_total"] = od.get(f"{subset}.upstream_rq_total", 0) + v
        return od

    async def stop(self) -> None:
        envoys = (*self.envoys, *self.callers.values(), *self.sidecars)
        await asyncio.gather(*(e.stop() for e in envoys), return_exceptions=True)
