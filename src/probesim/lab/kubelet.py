"""``probesim lab``: a local kubelet for one workload. Its pods are real processes (the test app
acting out the scenario's behaviour, or the user's command with $PORT) on 127.0.0.1; their
probes run as the kubelet runs them (reference/kubelet.md §2): a ticker per probe from pod
admission, the initial results, on-hold, the initial delay from the container's start, startup
gating, consecutive thresholds, readiness triggered at a container start; failed liveness and
startup kill with the grace period and restart with the engine's doBackOff rule.

Every wait is bounded, everything binds to 127.0.0.1, and every child is killed on the way out
(success, error or Ctrl-C).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import aiohttp
import numpy as np

from probesim.consecutive import next_run, reaches_threshold
from probesim.engine.containers import MIN_GRACE, back_off
from probesim.engine.mesh import istio_for
from probesim.errors import InputError
from probesim.lab.envoy import Envoy
from probesim.lab.load import LoadResult, constant_rate
from probesim.manifests.kubernetes import container_port
from probesim.mesh.envoy import Translator
from probesim.model.kubernetes import Container, Probe, ProbeType, Workload
from probesim.model.scenario import ContainerBehavior, Scenario, Traffic
from probesim.results import CAUSES, Event, Result, RouteSummary, WorkloadSummary

HOST = "127.0.0.1"
MAX_SIDECARS = 8
INITIAL = {"startup": None, "readiness": False, "liveness": True}  # Unknown, Failure, Success


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Worker:
    kind: ProbeType
    probe: Probe
    cached: bool | None = None
    seen: int = -1
    on_hold: bool = False
    last: bool = False
    run: int = 0


@dataclass
class Pod:
    name: str
    ordinal: int
    container: Container
    behavior: ContainerBehavior
    port: int
    command: list[str] | None
    proc: asyncio.subprocess.Process | None = None
    instance: int = -1
    started_at: float = 0.0
    last_exit: float = -1.0
    backoff: int = 0
    backoff_updated: int = 0
    restarts: int = 0
    killing: bool = False
    workers: dict[str, Worker] = field(default_factory=dict)
    ready: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class Lab:
    def __init__(self, scenario: Scenario, workload: Workload, command: list[str] | None = None) -> None:
        self.scenario = scenario
        self.workload = workload
        self.command = command
        self.t0 = time.monotonic()
        self.events: list[Event] = []
        self.kills: set[asyncio.Task[None]] = set()
        self.envoys: list[Envoy] = []
        self.listen: list[int] = []
        self.loads: dict[str, LoadResult] = {}
        self.envoy_stats: dict[str, int] = {}
        for t in scenario.spec.traffic:
            if t.rate is None or t.spikes:
                raise InputError(
                    f"spec.traffic {t.label}: the lab sends constant-rate traffic only (rate:), "
                    "not stages, series or spikes yet"
                )
            if self._target(t)[1] and t.clients > MAX_SIDECARS:
                raise InputError(
                    f"spec.traffic {t.label}: clients {t.clients}: the lab runs at most "
                    f"{MAX_SIDECARS} client sidecars (one Envoy process each)"
                )
        wb = scenario.behavior(workload.name)
        c = workload.pod_spec.containers[0]
        self.pods = []
        for i in range(workload.spec.replicas):
            b = wb.containers.get(c.name, ContainerBehavior())
            for ov in wb.pods:
                if i in ov.ordinals and c.name in ov.containers:
                    b = ov.containers[c.name]
            pod = Pod(f"{workload.name}-{i}", i, c, b, free_port(), command)
            kinds: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")
            for kind in kinds:
                p = c.probe(kind)
                if p is not None and p.grpc is not None:
                    raise InputError(
                        f"container {c.name}: {kind}Probe uses grpc, which the lab does not run yet "
                        "(httpGet, tcpSocket and exec are run)"
                    )
                if p is not None:
                    pod.workers[kind] = Worker(kind, p)
            self.pods.append(pod)

    def now_ms(self) -> int:
        return round((time.monotonic() - self.t0) * 1000)

    def event(self, type_: str, reason: str, pod: Pod, message: str) -> None:
        self.events.append(Event(self.now_ms(), type_, reason, f"pod/{pod.name}", message))

    # -- containers ------------------------------------------------------------------------------

    async def start(self, pod: Pod) -> None:
        env = {
            **os.environ,
            "PORT": str(pod.port),
            "PROBESIM_T0": str(time.time() - (time.monotonic() - self.t0)),
        }
        if pod.command:
            argv = pod.command
        else:
            app = Path(sys.executable).parent / "probesim"
            argv = [
                str(app),
                "app",
                "--port",
                str(pod.port),
                "--behavior",
                json.dumps(pod.behavior.model_dump(mode="json", by_alias=True)),
            ]
        listening = None
        if not pod.command:  # listening from the container's start, as the simulation has it
            listening = socket.socket()
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listening.bind((HOST, pod.port))
            listening.listen(128)
            env["PROBESIM_LISTEN_FD"] = str(listening.fileno())
        try:
            pod.proc = await asyncio.create_subprocess_exec(
                *argv,
                env=env,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                pass_fds=() if listening is None else (listening.fileno(),),
            )
        finally:
            if listening is not None:
                listening.close()  # the app holds it now
        pod.instance += 1
        if pod.instance > 0:
            pod.restarts += 1
        pod.started_at = time.monotonic()
        self.event("Normal", "Started", pod, f"Started container {pod.container.name}")
        pod.wake.set()  # the start's pod sync triggers readiness (§2.1.5)

    async def kill(self, pod: Pod, reason: str) -> None:
        """Kill for a failed liveness/startup probe, then restart in the same sync (§3.8)."""
        if pod.proc is None or pod.killing:
            return
        pod.killing = True
        self.event(
            "Normal",
            "Killing",
            pod,
            f"Container {pod.container.name} failed {reason} probe, will be restarted",
        )
        probe = pod.workers[reason].probe
        grace = max(
            probe.termination_grace_period_seconds or self.workload.pod_spec.termination_grace_period_seconds,
            MIN_GRACE // 1000,
        )
        decide = pod.last_exit
        pod.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(pod.proc.wait(), timeout=grace)
        except TimeoutError:
            pod.proc.kill()
            await pod.proc.wait()
        pod.last_exit = time.monotonic()
        pod.proc = None
        pod.killing = False
        await self.restart(pod, decide)

    async def restart(self, pod: Pod, decide: float) -> None:
        while True:
            now = self.now_ms()
            if decide < 0:
                break
            finished = round((decide - self.t0) * 1000)
            allowed, backoff = back_off(now, finished, pod.backoff, pod.backoff_updated)
            if allowed:
                pod.backoff, pod.backoff_updated = backoff, now
                break
            self.event(
                "Warning",
                "BackOff",
                pod,
                f"Back-off restarting failed container {pod.container.name} in pod {pod.name}_default",
            )
            decide = pod.last_exit
            await asyncio.sleep(
                max(0.0, (round((pod.last_exit - self.t0) * 1000) + pod.backoff - self.now_ms()) / 1000)
            )
        await self.start(pod)

    async def watch(self, pod: Pod) -> None:
        """Restart a container that exits by itself (restartPolicy Always)."""
        while True:
            if pod.proc is None or pod.killing:
                await asyncio.sleep(0.05)
                continue
            proc = pod.proc
            code = await proc.wait()
            if pod.killing or pod.proc is not proc:
                continue
            pod.last_exit = time.monotonic()
            pod.proc = None
            self.event("Warning", "Exited", pod, f"Container {pod.container.name} exited with code {code}")
            await self.restart(pod, pod.last_exit)

    # -- probes ----------------------------------------------------------------------------------

    def started(self, pod: Pod) -> bool:
        s = pod.workers.get("startup")
        return pod.proc is not None and (s is None or (s.seen == pod.instance and s.cached is True))

    async def execute(self, pod: Pod, w: Worker) -> tuple[bool, str]:
        p = w.probe
        timeout = p.timeout_seconds
        try:
            if p.http_get is not None:
                port = container_port(pod.container, p.http_get.port)
                if port is None:
                    return False, "error"
                headers = {"User-Agent": "kube-probe/1.33", "Accept": "*/*"}
                async with (
                    aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s,
                    s.get(
                        f"http://{HOST}:{pod.port}{p.http_get.path}", headers=headers, allow_redirects=False
                    ) as r,
                ):
                    ok = 200 <= r.status < 400
                    return ok, "" if ok else f"HTTP probe failed with statuscode: {r.status}"
            if p.tcp_socket is not None:
                _, writer = await asyncio.wait_for(asyncio.open_connection(HOST, pod.port), timeout)
                writer.close()
                return True, ""
            if p.exec is not None:
                proc = await asyncio.create_subprocess_exec(
                    *p.exec.command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
                )
                try:
                    code = await asyncio.wait_for(proc.wait(), timeout)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
                    return False, f"command timed out after {timeout}s"
                return code == 0, "" if code == 0 else f"command exited with {code}"
        except TimeoutError:
            return False, "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        except (OSError, aiohttp.ClientError) as e:
            return False, f"connect: {type(e).__name__}"
        return False, "error"

    async def worker(self, pod: Pod, w: Worker) -> None:
        admitted = time.monotonic()
        k = 1
        while True:
            tick = admitted + k * w.probe.period_seconds
            if w.kind == "readiness":
                pod.wake.clear()
                try:
                    await asyncio.wait_for(pod.wake.wait(), max(0.0, tick - time.monotonic()))
                    admitted, k = time.monotonic(), 1  # a triggered run restarts the ticker
                except TimeoutError:
                    k += 1
            else:
                await asyncio.sleep(max(0.0, tick - time.monotonic()))
                k += 1
            await self.do_probe(pod, w)

    async def do_probe(self, pod: Pod, w: Worker) -> None:
        if pod.instance < 0:
            return
        if w.seen != pod.instance:
            w.seen, w.cached, w.on_hold = pod.instance, INITIAL[w.kind], False
        if w.on_hold:
            return
        if pod.proc is None or pod.killing:
            w.cached = False
            return
        if int(time.monotonic() - pod.started_at) < w.probe.initial_delay_seconds:
            return
        if (w.kind == "startup") == self.started(pod):
            return
        instance = pod.instance
        ok, why = await self.execute(pod, w)
        if why == "error":
            return  # a handler error is thrown away
        if not ok:
            self.event("Warning", "Unhealthy", pod, f"{w.kind.capitalize()} probe failed: {why}")
        w.run = int(next_run(w.last, w.run, ok)) if w.run else 1
        w.last = ok
        if not bool(reaches_threshold(ok, w.run, w.probe.success_threshold, w.probe.failure_threshold)):
            return
        if pod.instance == instance:
            w.cached = ok
        if (w.kind == "liveness" and not ok) or w.kind == "startup":
            w.on_hold, w.run = True, 0
        if not ok and w.kind in ("liveness", "startup") and pod.instance == instance:
            self.kills.add(asyncio.create_task(self.kill(pod, w.kind)))
        if w.kind == "startup" and ok:
            pod.wake.set()  # the sync after startup success triggers readiness

    def is_ready(self, pod: Pod) -> bool:
        r = pod.workers.get("readiness")
        return self.started(pod) and (r is None or (r.seen == pod.instance and r.cached is True))

    # -- the run ---------------------------------------------------------------------------------

    async def traffic(self, duration_s: float) -> None:
        """Each traffic route's load, through real Envoys when the scenario has Istio objects for
        its Service (the same translation as probesim envoy-config; one Envoy per client pod, as
        each client has its own sidecar), else round robin to the Ready pods."""
        spec = self.scenario.spec
        jobs = []
        for t in spec.traffic:
            service, meshed = self._target(t)
            headers = dict(t.headers)
            targets: list[str] | Callable[[], list[str]]
            if meshed:
                while len(self.envoys) < t.clients:
                    await self._start_envoy()
                targets = [f"http://{HOST}:{port}{t.path}" for port in self.listen[: t.clients]]
                headers.setdefault("Host", service)  # selects the Service's virtual host
            else:
                targets = partial(self.urls, t.path)  # kube-proxy: Ready endpoints at each request

            start = t.start / 1000
            stop = min(t.stop / 1000 if t.stop is not None else duration_s, duration_s)
            assert t.rate is not None  # checked at construction
            jobs.append((t, self._load(targets, t.rate, start, stop, t, headers)))
        results = await asyncio.gather(*(j for _, j in jobs))
        for (t, _), res in zip(jobs, results, strict=True):
            self.loads[t.label] = res

    def endpoints(self) -> list[tuple[str, int]]:
        """The Service's endpoints as Envoy gets them: Ready pods (all, with
        publishNotReadyAddresses)."""
        svc = self.scenario.services[0] if self.scenario.services else None  # the lab's one Service
        everyone = svc is not None and svc.spec.publish_not_ready_addresses
        return [(HOST, p.port) for p in self.pods if p.ready or everyone]

    def urls(self, path: str) -> list[str]:
        return [f"http://{HOST}:{port}{path}" for _, port in self.endpoints()]

    def _target(self, t: Traffic) -> tuple[str, bool]:
        """The Service a traffic route calls, and whether its requests go through Envoy: the
        simulation's rule (``engine.mesh.istio_for``)."""
        service = self.scenario.service_for(t).name
        rule, vroute = istio_for(self.scenario, service, t)
        return service, rule is not None or vroute is not None

    async def _start_envoy(self) -> None:
        s = self.scenario
        endpoints = {svc.name: self.endpoints() for svc in s.services}
        tr = Translator(list(s.destination_rules), list(s.virtual_services), list(s.services), endpoints)
        listen, admin = free_port(), free_port()
        envoy = Envoy(tr.bootstrap(listen, admin), admin)
        self.envoys.append(envoy)
        self.listen.append(listen)
        await envoy.start()

    async def _load(
        self,
        targets: list[str] | Callable[[], list[str]],
        rate: float,
        start: float,
        stop: float,
        t: Traffic,
        headers: dict[str, str],
    ) -> LoadResult:
        await asyncio.sleep(max(0.0, self.t0 + start - time.monotonic()))
        timeout = (t.timeout or 60_000) / 1000
        return await constant_rate(
            targets, rate, max(stop - start, 0.0), timeout, t.max_vus or 1000, headers, t.method
        )

    async def run(self, duration_s: float) -> Result:
        tasks: list[asyncio.Task[None]] = []
        ready = []
        all_ready: int | None = None
        try:
            for pod in self.pods:
                await self.start(pod)
                tasks.append(asyncio.create_task(self.watch(pod)))
                tasks += [asyncio.create_task(self.worker(pod, w)) for w in pod.workers.values()]
            load = asyncio.create_task(self.traffic(duration_s))
            tasks.append(load)
            end = self.t0 + duration_s
            while time.monotonic() < end:
                changed = False
                for pod in self.pods:
                    now_ready = self.is_ready(pod)
                    if now_ready != pod.ready:
                        pod.ready = now_ready
                        reason = "PodReady" if now_ready else "PodNotReady"
                        type_ = "Normal" if now_ready else "Warning"
                        self.event(type_, reason, pod, f"Pod condition Ready changed to {now_ready}")
                        changed = True
                if changed:
                    for envoy in self.envoys:
                        envoy.set_endpoints(self.endpoints())
                ready.append(sum(p.ready for p in self.pods))
                if all_ready is None and ready[-1] == len(self.pods):
                    all_ready = self.now_ms()
                await asyncio.sleep(0.05)
            await asyncio.wait_for(asyncio.shield(load), timeout=70)  # answers still on their way
            for envoy in self.envoys:  # summed over the client sidecars
                for k, v in (await envoy.stats()).items():
                    self.envoy_stats[k] = self.envoy_stats.get(k, 0) + v
        finally:
            for t in (*tasks, *self.kills):
                t.cancel()
            await asyncio.gather(*tasks, *self.kills, return_exceptions=True)
            await asyncio.gather(*(e.stop() for e in self.envoys), return_exceptions=True)
            for pod in self.pods:
                if pod.proc is not None and pod.proc.returncode is None:
                    pod.proc.kill()
                    await pod.proc.wait()
        self.events.sort(key=lambda e: e.time_ms)
        w = self.workload
        summary = WorkloadSummary(
            name=w.name,
            kind=w.kind,
            replicas=w.spec.replicas,
            restarts={p.name: p.restarts for p in self.pods},
            first_ready_ms=min((e.time_ms for e in self.events if e.reason == "PodReady"), default=None),
            all_ready_ms=all_ready,
            min_ready=min(ready, default=0),
            avg_ready=float(np.mean(ready)) if ready else 0.0,
            min_available=min(ready, default=0),
        )
        routes = []
        for name, res in self.loads.items():
            st = res.statuses
            ok = sum(n for code, n in st.items() if 200 <= code < 400)
            failed = dict.fromkeys(CAUSES, 0)
            failed["restarting"] = st.get(0, 0)
            failed["timeout"] = st.get(-1, 0)
            failed["error_status"] = sum(n for code, n in st.items() if code >= 400)
            service = self._target(next(t for t in self.scenario.spec.traffic if t.label == name))[0]
            od: dict[str, int] = {}  # the simulation's names: Envoy's outlier_detection.* counters
            for k, v in self.envoy_stats.items():
                if f"||{service}." in k and ".outlier_detection." in k and k.startswith("cluster."):
                    stat = k.split(".outlier_detection.")[-1]
                    od[stat] = od.get(stat, 0) + v
            routes.append(
                RouteSummary(
                    name,
                    service,
                    res.sent,
                    ok,
                    failed,
                    dropped=res.dropped,
                    envoy=od,
                    latency_ms=res.latency_ms(),
                )
            )
        return Result(
            scenario=self.scenario.name,
            seed=self.scenario.spec.seed,
            step_ms=50,
            duration_ms=round(duration_s * 1000),
            time_ms=np.arange(len(ready), dtype=np.int64) * 50,
            events=self.events,
            workloads=[summary],
            routes=routes,
            source="lab",
        )


def run_lab(scenario: Scenario, duration_s: float | None = None, command: list[str] | None = None) -> Result:
    if command:
        found = shutil.which(command[0])
        if found is None:
            raise InputError(f"--command {command[0]}: not found or not executable (PATH is searched)")
        command = [found, *command[1:]]
    if not scenario.workloads:
        raise InputError("the scenario has no Deployment or StatefulSet to run")
    w = scenario.workloads[0]
    seconds = duration_s if duration_s is not None else scenario.spec.duration / 1000
    return asyncio.run(Lab(scenario, w, command).run(seconds))


COMPARED = ("Started", "Killing", "BackOff", "PodReady", "PodNotReady")


def compare(sim: Result, lab: Result, tolerance_ms: int = 1000) -> list[dict[str, object]]:
    """Per pod and reason, the simulated and measured event times side by side, and whether
    they agree (same count, each within ``tolerance_ms``)."""
    rows: list[dict[str, object]] = []
    pods = sorted({e.object for e in (*sim.events, *lab.events) if e.object.startswith("pod/")})
    for pod in pods:
        for reason in COMPARED:
            a = [e.time_ms for e in sim.events_for(pod, reason)]
            b = [e.time_ms for e in lab.events_for(pod, reason) if e.time_ms <= lab.duration_ms]
            a = [x for x in a if x <= lab.duration_ms]
            if not a and not b:
                continue
            agree = len(a) == len(b) and all(abs(x - y) <= tolerance_ms for x, y in zip(a, b, strict=True))
            rows.append({"object": pod, "reason": reason, "simulated": a, "measured": b, "agree": agree})
    measured = {r.name: r for r in lab.routes}
    for r in sim.routes:
        m = measured.get(r.name)
        if m is None:
            continue
        for what, x, y in (
            ("failed requests", r.failed_total, m.failed_total),
            (
                "ejections",
                r.envoy.get("ejections_enforced_total", 0),
                m.envoy.get("ejections_enforced_total", 0),
            ),
        ):
            if x or y:  # counts agree within 10 % or 2, whichever is larger
                agree = abs(x - y) <= max(2, x // 10)
                rows.append({"object": f"route/{r.name}", "reason": what, "count": True,
                             "simulated": [x], "measured": [y], "agree": agree})  # fmt: skip
    return rows
