"""``probesim lab``: a local kubelet for one workload. Its pods are real processes (the test app
acting out the scenario's behaviour, or the user's command with $PORT) on 127.0.0.1; their
probes run as the kubelet runs them (reference/kubelet.md §2): a ticker per probe from pod
admission, the initial results, on-hold, the initial delay from the container's start, startup
gating, consecutive thresholds, readiness triggered at a container start; failed liveness and
startup kill with the grace period and restart with the engine's doBackOff rule.

Every wait is bounded, everything binds to 127.0.0.1, and every child is killed on the way out
(success, error, Ctrl-C, SIGTERM or SIGHUP); children die with the lab even when it is killed
(``hygiene``). It refuses up front what it cannot run faithfully on one machine (``limits``)
and a manifest's exec probes unless allowed (they would run on this machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import shlex
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TextIO

import numpy as np

from probesim.consecutive import next_run, reaches_threshold
from probesim.engine.fleet import injected
from probesim.engine.sidecar.build import istio_for
from probesim.errors import InputError
from probesim.kube.containers import MIN_GRACE, back_off
from probesim.kube.ports import container_port
from probesim.lab.dependency import DependencyServer, env_name
from probesim.lab.envoy import Envoy, inbound_bootstrap
from probesim.lab.hygiene import RunFolder, dies_with_parent
from probesim.lab.load import KeepAlive, LoadResult, constant_rate
from probesim.lab.probes import Outcome, exec_check, grpc_check, http_check, tcp_check
from probesim.lab.rollout import LabDeployment, PodState, check_actions, has_actions
from probesim.mesh.envoy import Translator
from probesim.model.kubernetes import Container, Probe, ProbeType, Workload, pod_names_of
from probesim.model.scenario import ContainerBehavior, Crash, Scenario, Traffic
from probesim.results import CAUSES, Event, Result, RouteSummary, WorkloadSummary

HOST = "127.0.0.1"
MAX_SIDECARS = 8
# What one machine runs faithfully: each pod is up to three processes (its app and those loaded
# ahead for its restarts) plus an Envoy with Istio's sidecar; the load generator is this process.
MAX_PODS = 12
MAX_RATE = 2000  # requests per second, all routes together (seed 004 sends 2 x 900)
MAX_DURATION_S = 3600
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # stop as on Ctrl-C: every child stopped, files removed
WARM_TIMEOUT_S = 30
# Test apps loaded before the scenario's clock starts, for a pod that may restart: its first
# start and the two restarts the back-off rule lets follow at once (a kill before any exit, then
# an exit with no back-off entry yet), 1 s apart with a strict liveness probe and no restart
# delay, when loading one takes longer than that on a busy machine. Later restarts come 10 s or
# more after the previous start, which loads the next one.
LOADED_AHEAD = 3
LISTEN_TIMEOUT_S = 30.0  # how long a --command may take to listen on $PORT, by default
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
class Warm:
    """A test app started ahead of its container: loaded, waiting for the go on ``control``."""

    proc: asyncio.subprocess.Process
    control: socket.socket
    loaded: asyncio.Future[bytes]  # b"r" once loaded; b"" if it died first


@dataclass
class Pod:
    name: str
    ordinal: int
    container: Container
    behavior: ContainerBehavior
    port: int
    command: list[str] | None
    proc: asyncio.subprocess.Process | None = None
    grpc_port: int | None = None  # where gRPC probes go ($GRPC_PORT for a --command)
    warm: list[Warm] = field(default_factory=list)  # test apps loaded ahead, for its next starts
    listened: bool = False  # a --command accepted a connection at least once
    log: int | TextIO = asyncio.subprocess.DEVNULL  # a --command's output
    instance: int = -1
    started_at: float = 0.0
    last_exit: float = -1.0
    backoff: int = 0
    backoff_updated: int = 0
    restarts: int = 0
    killing: bool = False
    workers: dict[str, Worker] = field(default_factory=dict)
    ready: bool = False
    inbound: int | None = None  # the port of its Istio sidecar's inbound listener
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    first_start: asyncio.Event = field(default_factory=asyncio.Event)
    # Under the lab's Deployment controller (lab.rollout): the simulation's pod slot, its
    # revision, and the pod's life as the controllers read it.
    slot: int = -1
    template: int = 0
    grace_s: int = 30
    created_ms: int = 0
    ready_since: int = 0
    deleting: bool = False
    gone: bool = False
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    workload: str = ""  # a companion workload's name (behind the same Service); "" the lab's own
    labels: dict[str, str] | None = None  # a companion's pod labels


class Lab:
    def __init__(
        self,
        scenario: Scenario,
        workload: Workload,
        command: list[str] | None = None,
        command_for: dict[str, list[str]] | None = None,
    ) -> None:
        self.scenario = scenario
        self.workload = workload
        self.command = command
        self.tasks: list[asyncio.Task[None]] = []
        # A Deployment's rollouts run for real: the engine's controllers over the lab's pods.
        self.deployment = (
            LabDeployment(scenario, workload)
            if workload.kind == "Deployment" and has_actions(scenario)
            else None
        )
        self.commands: dict[int, list[str]] = {}  # per revision (template index), --command-for
        for key, argv in (command_for or {}).items():
            if self.deployment is None:
                raise InputError(
                    f"{key}={shlex.join(argv)}: a command per revision needs rollout, rollback or restart "
                    "actions of a Deployment in the scenario",
                    field="--command-for",
                )
            self.commands[self.deployment.template_named(key)] = argv
        self.future: dict[int, Pod] = {}  # pods the controllers will likely create, loaded ahead
        self.t0 = time.monotonic()
        self.events: list[Event] = []
        self.kills: set[asyncio.Task[None]] = set()
        self.envoys: list[Envoy] = []  # client sidecars
        self.sidecars: list[Envoy] = []  # the pods' own, inbound
        self.listen: list[int] = []
        self.spawned: list[asyncio.subprocess.Process] = []  # every child, to reap on the way out
        self.prestarts: set[asyncio.Task[None]] = set()
        self.dependencies: list[DependencyServer] = []  # served in this process while it runs
        self.loads: dict[str, LoadResult] = {}
        self.envoy_stats: dict[str, int] = {}
        self.wall_t0 = time.time() - (time.monotonic() - self.t0)
        self.progress: Callable[[Lab], None] | None = None  # called a few times a second
        self.finishing = False  # past the duration, waiting for answers on their way
        self.listen_timeout_s = LISTEN_TIMEOUT_S
        # The routes to a Service of this workload; others' traffic is not sent (run_lab says so).
        self.routes = [t for t in scenario.spec.traffic if self._selects(scenario.service_for(t).name)]
        for t in self.routes:
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
        self.folder: RunFolder | None = None  # made as the run starts (--command output, Envoys' files)
        self.cleaning = False  # in the run's last clean-up, which a signal must not interrupt
        self.stop_signal: int | None = None  # SIGTERM or SIGHUP received: stop as soon as can be
        self.pods: list[Pod] = []
        if self.deployment is not None:
            self.pods = [self._slot_pod(p) for p in self.deployment.first_slots()]
            self.future = {p: self._slot_pod(p) for p in self.deployment.likely_slots()}
            return
        for i, name in enumerate(pod_names_of(workload)):
            b = wb.containers.get(c.name, ContainerBehavior())
            for ov in wb.pods:
                if i in ov.ordinals and c.name in ov.containers:
                    b = ov.containers[c.name]
            self.pods.append(self._new_pod(name, i, c, b, command))
        # A canary: the other Deployments whose pods the routes' Services also select run beside
        # it (their own pods, labels and behaviour), so that a split by subset finds them.
        for other in self.companions():
            ob = scenario.behavior(other.name)
            oc = other.pod_spec.containers[0]
            for i, name in enumerate(pod_names_of(other)):
                b = ob.containers.get(oc.name, ContainerBehavior())
                for ov in ob.pods:
                    if i in ov.ordinals and oc.name in ov.containers:
                        b = ov.containers[oc.name]
                pod = self._new_pod(name, i, oc, b, command)
                pod.workload, pod.labels = other.name, other.pod_labels
                pod.grace_s = other.pod_spec.termination_grace_period_seconds
                self.pods.append(pod)
        if len(self.pods) > MAX_PODS:
            names = ", ".join(w.name for w in (self.workload, *self.companions()))
            raise InputError(
                f"workloads {names} behind one Service: {len(self.pods)} pods: the lab runs at most "
                f"{MAX_PODS} pods (processes on this machine); lower their replicas"
            )

    def companions(self) -> list[Workload]:
        """Deployments without actions beside the lab's workload whose pods a Service of its
        routes selects too (v2 beside v1), in the order of the manifests."""
        if self.deployment is not None:
            return []
        services = {self.scenario.service_for(t).name for t in self.routes}
        return [
            w
            for w in self.scenario.workloads
            if w is not self.workload
            and w.kind == "Deployment"
            and any(self._selects_of(self.scenario, w, sv) for sv in services)
        ]

    def _new_pod(
        self, name: str, ordinal: int, c: Container, b: ContainerBehavior, command: list[str] | None
    ) -> Pod:
        pod = Pod(name, ordinal, c, b, free_port(), command)
        pod.grace_s = self.workload.pod_spec.termination_grace_period_seconds
        kinds: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")
        for kind in kinds:
            p = c.probe(kind)
            if p is not None:
                pod.workers[kind] = Worker(kind, p)
            if p is not None and p.grpc is not None and pod.grpc_port is None:
                pod.grpc_port = free_port()  # gRPC health on a port of its own
        return pod

    def _slot_pod(self, p: int) -> Pod:
        """The pod of the simulation's slot ``p``: its name, revision, container and behaviour."""
        assert self.deployment is not None
        slot = self.deployment.slot(p)
        pod = self._new_pod(
            slot.name,
            slot.ordinal,
            slot.container,
            slot.behavior,
            self.commands.get(slot.template, self.command),
        )
        pod.slot, pod.template, pod.grace_s = p, slot.template, slot.grace_s
        return pod

    def run_folder(self) -> RunFolder:
        """The run's folder, made (and earlier killed runs' removed) at its first use."""
        if self.folder is None:
            self.folder = RunFolder()
        return self.folder

    def now_ms(self) -> int:
        return round((time.monotonic() - self.t0) * 1000)

    def event(self, type_: str, reason: str, pod: Pod, message: str) -> None:
        self.events.append(Event(self.now_ms(), type_, reason, f"pod/{pod.name}", message))

    # -- containers ------------------------------------------------------------------------------

    def _app_argv(self, pod: Pod) -> list[str]:
        app = Path(sys.executable).parent / "probesim"
        behavior = json.dumps(pod.behavior.model_dump(mode="json", by_alias=True))
        argv = [str(app), "app", "--port", str(pod.port), "--behavior", behavior]
        for d in self.dependencies:
            argv += ["--dependency", f"{d.name}={d.url}"]
        return argv if pod.grpc_port is None else [*argv, "--grpc-port", str(pod.grpc_port)]

    async def prestart(self, pod: Pod) -> None:
        """Start the test app for the pod's next container ahead of time, loaded and waiting, so
        that Python's start-up is not taken for the scenario's (a user's --command starts cold:
        its start-up is its own)."""
        parent, child = socket.socketpair()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._app_argv(pod),
                env={**os.environ, "PROBESIM_CONTROL_FD": str(child.fileno())},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                pass_fds=(child.fileno(),),
                preexec_fn=dies_with_parent(),
            )
        finally:
            child.close()
        self.spawned.append(proc)
        parent.setblocking(False)
        loaded = asyncio.ensure_future(asyncio.get_running_loop().sock_recv(parent, 1))
        pod.warm.append(Warm(proc, parent, loaded))

    async def start(self, pod: Pod) -> None:
        if pod.deleting:
            return
        if pod.command:
            pod.proc = await asyncio.create_subprocess_exec(
                *pod.command,
                env={**os.environ, "PORT": str(pod.port)}
                | ({} if pod.grpc_port is None else {"GRPC_PORT": str(pod.grpc_port)})
                | {env_name(d.name): d.url for d in self.dependencies},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=pod.log,
                stderr=pod.log,
                process_group=0,  # its own processes go with it, as a container's
                preexec_fn=dies_with_parent(),
            )
            self.spawned.append(pod.proc)
            pod.started_at = time.monotonic()
        else:
            if not pod.warm:
                await self.prestart(pod)
            warm = pod.warm.pop(0)
            try:
                loaded = await asyncio.wait_for(warm.loaded, WARM_TIMEOUT_S)
            except TimeoutError:
                loaded = b""
            if loaded != b"r":
                raise InputError(
                    f"the test app for pod {pod.name} did not load within {WARM_TIMEOUT_S}s "
                    f"(exit code {warm.proc.returncode})"
                )
            listening = socket.socket()  # the port, bound from the container's start
            try:
                listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listening.bind((HOST, pod.port))
                if pod.behavior.start == 0:
                    listening.listen(128)  # listening from the start, as simulated
                pod.started_at = time.monotonic()  # on the clock the app reads too
                go = f"{self.t0!r} {pod.started_at!r}".encode()
                socket.send_fds(warm.control, [go], [listening.fileno()])
            finally:
                listening.close()  # the app holds it now
                warm.control.close()
            pod.proc = warm.proc
        pod.instance += 1
        if pod.instance > 0:
            pod.restarts += 1
        self.event("Normal", "Started", pod, f"Started container {pod.container.name}")
        self.update_ready()
        pod.wake.set()  # the start's pod sync triggers readiness (§2.1.5)
        pod.first_start.set()
        if not pod.command and not pod.warm and self.may_restart(pod):
            self.prestarts.add(asyncio.create_task(self.prestart(pod)))  # for the next restart

    def may_restart(self, pod: Pod) -> bool:
        """Whether the pod's container may ever restart: killed by a probe or exiting by itself
        (the test app exits only in a crash episode), under a policy that restarts."""
        may_exit = any(k in pod.workers for k in ("liveness", "startup")) or any(
            isinstance(e, Crash) for e in pod.behavior.episodes
        )
        return may_exit and self.workload.pod_spec.restart_policy != "Never"

    async def kill(self, pod: Pod, reason: str) -> None:
        """Kill for a failed liveness/startup probe, then restart in the same sync (§3.8)."""
        if pod.proc is None or pod.killing:
            return
        pod.killing = True
        self.event(
            "Normal",
            "Killing",
            pod,
            f"Container {pod.container.name} failed {reason} probe"
            + (", will be restarted" if self.workload.pod_spec.restart_policy != "Never" else ""),
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
        _end_group(pod)
        pod.last_exit = time.monotonic()
        pod.proc = None
        pod.killing = False
        if self.workload.pod_spec.restart_policy != "Never":  # shouldRestartOnFailure
            await self.restart(pod, decide)
        else:
            self.update_ready()

    async def restart(self, pod: Pod, decide: float) -> None:
        """The next container, ``containerRestartDelay`` after the exit (the kubelet seeing it
        and the runtime creating the next), and as much after each back-off expiry, as
        simulated; not running, so not ready, meanwhile."""
        delay_ms = self.scenario.spec.cluster.container_restart_delay
        self.update_ready()
        await asyncio.sleep(max(0.0, pod.last_exit + delay_ms / 1000 - time.monotonic()))
        while not pod.deleting:
            now = self.now_ms()
            if decide < 0:
                break
            finished = round((decide - self.t0) * 1000)
            allowed, backoff = back_off(now, finished, pod.backoff, pod.backoff_updated)
            if allowed:
                pod.backoff, pod.backoff_updated = int(backoff), now
                break
            self.event(
                "Warning",
                "BackOff",
                pod,
                f"Back-off restarting failed container {pod.container.name} in pod {pod.name}_default",
            )
            decide = pod.last_exit
            expiry = round((pod.last_exit - self.t0) * 1000) + pod.backoff + delay_ms
            await asyncio.sleep(max(0.0, (expiry - self.now_ms()) / 1000))
        await self.start(pod)

    def restarts_after(self, exit_code: int) -> bool:
        """After an exit of its own: Always restarts, OnFailure on a non-zero code, Never not.
        (A container killed for a failed probe restarts unless the policy is Never.)"""
        policy = self.workload.pod_spec.restart_policy
        return policy == "Always" or (policy == "OnFailure" and exit_code != 0)

    async def watch(self, pod: Pod) -> None:
        """Restart a container that exits by itself, as its restartPolicy says."""
        while True:
            if pod.proc is None or pod.killing:
                await asyncio.sleep(0.05)
                continue
            proc = pod.proc
            code = await proc.wait()
            if pod.killing or pod.proc is not proc:
                continue
            _end_group(pod)
            pod.last_exit = time.monotonic()
            pod.proc = None
            if pod.command and pod.instance == 0 and not pod.listened and pod.last_exit - pod.started_at < 2:
                raise InputError(
                    f"--command {pod.command[0]}: pod {pod.name}'s process exited with code {code} "
                    f"{pod.last_exit - pod.started_at:.1f}s after it started, before listening on "
                    f"$PORT ({pod.port}){self._output_of(pod)}"
                )
            self.event("Warning", "Exited", pod, f"Container {pod.container.name} exited with code {code}")
            if not self.restarts_after(code):
                self.update_ready()
                return
            await self.restart(pod, pod.last_exit)

    # -- probes ----------------------------------------------------------------------------------

    def started(self, pod: Pod) -> bool:
        s = pod.workers.get("startup")
        return pod.proc is not None and (s is None or (s.seen == pod.instance and s.cached is True))

    async def execute(self, pod: Pod, w: Worker) -> Outcome:
        p = w.probe
        timeout = p.timeout_seconds
        if p.http_get is not None:
            if container_port(pod.container, p.http_get.port) is None:
                return "error", f"unknown port {p.http_get.port}"
            return await http_check(pod.port, p.http_get, timeout)
        if p.tcp_socket is not None:
            return await tcp_check(pod.port, timeout)
        if p.grpc is not None and pod.grpc_port is not None:
            return await grpc_check(pod.grpc_port, p.grpc.service or "", timeout)
        if p.exec is not None:
            return await exec_check(p.exec, timeout)
        return "error", "no handler"

    async def worker(self, pod: Pod, w: Worker) -> None:
        """One probe's worker: a run at creation, then one per tick of a ticker anchored at the
        creation; readiness also runs on a manual trigger — a pod sync while the container is
        started and not Ready — which resets the ticker; a trigger that comes while its probe
        is in flight runs when it returns, keeping the ticker (§2.1)."""
        await self.do_probe(pod, w)  # at admission: no container yet, no result
        await pod.first_start.wait()
        admitted = pod.started_at  # the simulation admits and starts in the same instant
        k = 1
        while True:
            tick = admitted + k * w.probe.period_seconds
            if w.kind == "readiness":
                try:
                    await asyncio.wait_for(pod.wake.wait(), max(0.0, tick - time.monotonic()))
                    pod.wake.clear()
                    if not self.wants_trigger(pod, w):
                        continue
                    admitted, k = time.monotonic(), 1  # a triggered run restarts the ticker
                except TimeoutError:
                    k += 1
            else:
                await asyncio.sleep(max(0.0, tick - time.monotonic()))
                k += 1
            await self.do_probe(pod, w)
            if w.kind == "readiness" and pod.wake.is_set():  # buffered while in flight
                pod.wake.clear()
                if self.wants_trigger(pod, w):
                    await self.do_probe(pod, w)

    def wants_trigger(self, pod: Pod, w: Worker) -> bool:
        return self.started(pod) and not pod.killing and not (w.seen == pod.instance and w.cached is True)

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
        result, why = await self.execute(pod, w)
        if result == "error":
            return  # a handler error is thrown away
        ok = result != "failure"
        if result == "warning":
            self.event("Warning", "ProbeWarning", pod, f"{w.kind.capitalize()} probe warning: {why}")
        if not ok:
            self.event("Warning", "Unhealthy", pod, f"{w.kind.capitalize()} probe failed: {why}")
        w.run = int(next_run(w.last, w.run, ok)) if w.run else 1
        w.last = ok
        if not bool(reaches_threshold(ok, w.run, w.probe.success_threshold, w.probe.failure_threshold)):
            return
        if pod.instance == instance:
            if w.cached != ok:  # a result change is a pod sync, which triggers readiness just
                asyncio.get_running_loop().call_soon(pod.wake.set)  # after this probe is done
            w.cached = ok
            self.update_ready()
        if (w.kind == "liveness" and not ok) or w.kind == "startup":
            w.on_hold, w.run = True, 0
        if not ok and w.kind in ("liveness", "startup") and pod.instance == instance:
            self.kills.add(asyncio.create_task(self.kill(pod, w.kind)))
        if w.kind == "startup" and ok:
            pod.wake.set()  # the sync after startup success triggers readiness

    def update_ready(self) -> None:
        """Pod Ready conditions from the probes' results, and the endpoints with them: called on
        every probe result, start and exit, so endpoints follow at once (endpointDelay 0)."""
        changed = False
        for pod in self.pods:
            now_ready = self.is_ready(pod)
            if now_ready != pod.ready:
                pod.ready = now_ready
                pod.ready_since = self.now_ms()
                reason = "PodReady" if now_ready else "PodNotReady"
                type_ = "Normal" if now_ready else "Warning"
                self.event(type_, reason, pod, f"Pod condition Ready changed to {now_ready}")
                changed = True
        if changed:
            for envoy in self.envoys:
                envoy.set_endpoints(self.cluster_endpoints(list(envoy.eds)))

    def is_ready(self, pod: Pod) -> bool:
        r = pod.workers.get("readiness")
        return self.started(pod) and (r is None or (r.seen == pod.instance and r.cached is True))

    # -- the run ---------------------------------------------------------------------------------

    async def traffic(self, duration_s: float) -> None:
        """Each traffic route's load, through real Envoys when the scenario has Istio objects for
        its Service (the same translation as probesim envoy-config; one Envoy per client pod, as
        each client has its own sidecar), else round robin to the Ready pods."""
        jobs = []
        for t in self.routes:
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
            self.loads[t.label] = LoadResult()  # filled as answers come
            jobs.append(self._load(targets, t.rate, start, stop, t, headers, self.loads[t.label]))
        await asyncio.gather(*jobs)

    def endpoints(self) -> list[tuple[str, int]]:
        """The Service's endpoints as Envoy gets them: Ready pods (all, with
        publishNotReadyAddresses), at their sidecar's port when they have one."""
        svc = next((v for v in self.scenario.services if self._selects(v.name)), None)
        everyone = svc is not None and svc.spec.publish_not_ready_addresses
        return [
            (HOST, p.inbound or p.port)
            for p in self.pods
            if not p.gone and (everyone or (p.ready and not p.deleting))
        ]

    def pod_labels(self, pod: Pod) -> dict[str, str]:
        """A pod's labels: its revision's template's under the lab's Deployment controller."""
        fleet = self.deployment.fleet if self.deployment is not None else None
        if fleet is not None and fleet.pod_labels is not None and pod.slot >= 0:
            return fleet.pod_labels.groups[int(fleet.pod_labels.group_of[pod.slot])]
        return pod.labels if pod.labels is not None else self.workload.pod_labels

    def cluster_endpoints(self, clusters: list[str]) -> dict[str, list[tuple[str, int]]]:
        """Each Envoy cluster's endpoints (``outbound|port|subset|host``): the Service's
        endpoints whose pods carry the labels of the cluster's host's selector and subset (a
        subset no DestinationRule defines has none), as Istio's EDS gives them."""
        svc = next((v for v in self.scenario.services if self._selects(v.name)), None)
        everyone = svc is not None and svc.spec.publish_not_ready_addresses
        live = [p for p in self.pods if not p.gone and (everyone or (p.ready and not p.deleting))]
        out: dict[str, list[tuple[str, int]]] = {}
        for name in clusters:
            _, _, subset, fqdn_ = name.split("|", 3)
            host = fqdn_.split(".")[0]
            service = next((v for v in self.scenario.services if v.name == host), None)
            want = dict(service.spec.selector) if service is not None and service.spec.selector else None
            if want is not None and subset:
                rule = next(
                    (r for r in self.scenario.destination_rules if r.spec.host.split(".")[0] == host), None
                )
                sub = next((x for x in rule.spec.subsets if x.name == subset), None) if rule else None
                want = {**want, **sub.labels} if sub is not None else None
            out[name] = [
                (HOST, p.inbound or p.port)
                for p in live
                if want is not None and all(self.pod_labels(p).get(k) == v for k, v in want.items())
            ]
        return out

    def urls(self, path: str) -> list[str]:
        return [f"http://{HOST}:{port}{path}" for _, port in self.endpoints()]

    def _selects(self, service: str) -> bool:
        return self._selects_of(self.scenario, self.workload, service)

    @staticmethod
    def _selects_of(scenario: Scenario, workload: Workload, service: str) -> bool:
        svc = next((v for v in scenario.services if v.name == service), None)
        sel = svc.spec.selector if svc is not None else None
        return bool(sel) and all(workload.pod_labels.get(k) == v for k, v in (sel or {}).items())

    def _target(self, t: Traffic) -> tuple[str, bool]:
        """The Service a traffic route calls, and whether its requests go through Envoy: the
        simulation's rule (``engine.sidecar.build.istio_for``)."""
        service = self.scenario.service_for(t).name
        rule, vroute = istio_for(self.scenario, service, t)
        return service, rule is not None or vroute is not None

    async def _start_envoy(self) -> None:
        s = self.scenario
        endpoints = {svc.name: self.endpoints() for svc in s.services}
        tr = Translator(list(s.destination_rules), list(s.virtual_services), list(s.services), endpoints)
        listen = free_port()
        bootstrap = tr.bootstrap(listen)  # its admin address is replaced by a Unix socket
        envoy = Envoy(bootstrap, self.run_folder().sub(f"client-{len(self.envoys)}"))
        self.envoys.append(envoy)
        self.listen.append(listen)
        envoy.set_endpoints(self.cluster_endpoints(list(envoy.eds)))  # per subset, not the Service's all
        await envoy.start()

    def _outlier_events(self, client: int, envoy: Envoy) -> list[Event]:
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
                    round((at - self.wall_t0) * 1000),
                    "Warning" if action == "EJECT" else "Normal",
                    f"Outlier{action.title()}",
                    f"sidecar/client-{client}",
                    json.dumps(doc, separators=(",", ":")),
                    "envoy",
                )
            )
        return out

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
        await asyncio.sleep(max(0.0, self.t0 + start - time.monotonic()))
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
        )

    def _failed_so_far(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for res in self.loads.values():
            for c, n in res.failed.items():
                out[c] = out.get(c, 0) + n
        return out

    async def prepare(self) -> None:
        """Before the scenario's clock starts: the pods' test apps loaded and waiting, and the
        client sidecars' Envoys up (with no endpoint yet), so neither start-up counts as
        scenario time."""
        folder = self.run_folder().path
        for pod in [*self.pods, *self.future.values()]:
            if pod.command:
                pod.log = open(folder / f"{pod.name}.log", "w+")  # noqa: SIM115
        for name, spec in self.scenario.spec.dependencies.items():
            server = DependencyServer(name, spec, self.scenario.spec.seed)
            self.dependencies.append(server)
            await server.start()
        if injected(self.workload, self.scenario):
            for pod in self.pods:
                # The pod's sidecar takes its traffic: a client's connection ends there and
                # outlives the app's restarts (Envoy answers 503 meanwhile).
                listen = free_port()
                folder = self.run_folder().sub(f"sidecar-{pod.ordinal}")
                sidecar = Envoy(inbound_bootstrap(listen, pod.port), folder)
                self.sidecars.append(sidecar)
                await sidecar.start()
                pod.inbound = listen
        for pod in self.pods:
            for _ in range(0 if pod.command else LOADED_AHEAD if self.may_restart(pod) else 1):
                await self.prestart(pod)
        for pod in self.future.values():  # the rollouts' pods: one loaded each, the next after it starts
            if not pod.command:
                await self.prestart(pod)
        for t in self.routes:
            if self._target(t)[1]:
                while len(self.envoys) < t.clients:
                    await self._start_envoy()
        for warm in (w for pod in [*self.pods, *self.future.values()] for w in pod.warm):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(warm.loaded), WARM_TIMEOUT_S)
        self.t0 = time.monotonic()
        self.wall_t0 = time.time()
        for server in self.dependencies:
            server.begin(self.t0)

    async def listens(self, pod: Pod) -> None:
        """A --command that never listens on its $PORT is a bad command, not a scenario: stop
        with a clear error once its start budget (``listen_timeout_s`` or the startup probe's, if
        longer) is spent without a connection accepted."""
        budget = self.listen_timeout_s
        startup = pod.workers.get("startup")
        if startup is not None:
            p = startup.probe
            budget = max(budget, p.initial_delay_seconds + p.period_seconds * p.failure_threshold)
        first = time.monotonic()
        while True:
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(HOST, pod.port), 1)
                writer.close()
                pod.listened = True
                return
            except (OSError, TimeoutError):
                pass
            if time.monotonic() - first > budget:
                raise InputError(
                    f"--command {pod.command[0] if pod.command else ''}: pod {pod.name} did not listen on "
                    f"127.0.0.1:$PORT ({pod.port}) within {budget:g}s; it must serve HTTP on the port "
                    f"given in $PORT{self._output_of(pod)}"
                )
            await asyncio.sleep(0.2)

    def _output_of(self, pod: Pod) -> str:
        """The last lines a --command printed, for an error message."""
        if isinstance(pod.log, int):
            return ""
        pod.log.flush()
        with open(pod.log.name, errors="replace") as f:
            tail = f.read()[-600:].strip()
        return f"; its last output:\n{tail}" if tail else " (it printed nothing)"

    def _task(self, pod: Pod, name: str, coro: Coroutine[None, None, None]) -> None:
        task = asyncio.create_task(coro)
        pod.tasks[name] = task
        self.tasks.append(task)

    async def admit(self, pod: Pod, delay_s: float = 0.0) -> None:
        """A pod created by the lab's ReplicaSets: probe workers from its creation, its container
        after the cluster's pod start delay."""
        for w in pod.workers.values():
            self._task(pod, w.kind, self.worker(pod, w))
        await asyncio.sleep(delay_s)
        await self.start(pod)
        if not pod.deleting:
            self._task(pod, "watch", self.watch(pod))
            if pod.command:
                self._task(pod, "listens", self.listens(pod))

    async def terminate(self, pod: Pod) -> None:
        """``kubectl delete pod`` as the kubelet does it (as simulated, ``engine.loop._delete``):
        out of the endpoints at once; liveness and startup stop, readiness goes on; the container
        gets SIGTERM and, after the pod's grace period, SIGKILL; it is not restarted."""
        pod.deleting = True
        for kind in ("liveness", "startup"):
            task = pod.tasks.pop(kind, None)
            if task is not None:
                task.cancel()
        self.update_ready()
        for envoy in self.envoys:  # a terminating pod leaves the endpoints even while Ready
            envoy.set_endpoints(self.cluster_endpoints(list(envoy.eds)))
        proc = pod.proc
        if proc is not None and proc.returncode is None:
            pod.killing = True  # its exit is not a crash to restart
            self.event("Normal", "Killing", pod, f"Stopping container {pod.container.name}")
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout=max(pod.grace_s, MIN_GRACE // 1000))
            except TimeoutError:
                proc.kill()
                await proc.wait()
            _end_group(pod)
            pod.last_exit = time.monotonic()
            pod.proc = None
        pod.gone = True
        for task in pod.tasks.values():
            task.cancel()
        for warm in pod.warm:  # those loaded for restarts that will not come
            warm.control.close()
            if warm.proc.returncode is None:
                warm.proc.kill()
        pod.warm = []
        self.update_ready()

    def control(self) -> None:
        """The lab's Deployment controller, one round (``lab.rollout``): the actions due, the
        ReplicaSets' sizes, the pods they create (started) and delete (stopped)."""
        assert self.deployment is not None
        for pod in self.pods:
            st = self.deployment.state[pod.slot]
            st.deleting, st.gone, st.ready = pod.deleting, pod.gone, pod.ready and not pod.gone
            st.ready_since_ms, st.started, st.restarts = pod.ready_since, pod.instance >= 0, pod.restarts
            st.stopped = pod.proc is None
        now = self.now_ms()
        create, delete, events = self.deployment.step(now)
        self.events += events
        delay = self.scenario.spec.cluster.pod_start_delay / 1000
        for p in create:
            pod = self.future.pop(p) if p in self.future else self._slot_pod(p)
            pod.created_ms = now
            if pod.command and isinstance(pod.log, int):
                pod.log = open(self.run_folder().path / f"{pod.name}.log", "w+")  # noqa: SIM115
            self.pods.append(pod)
            self.events.append(
                Event(
                    now,
                    "Normal",
                    "Scheduled",
                    f"pod/{pod.name}",
                    f"Successfully assigned {self.workload.metadata.namespace}/{pod.name} to node-1",
                    "default-scheduler",
                )
            )
            task = asyncio.create_task(self.admit(pod, delay))
            self.tasks.append(task)
        for p in delete:
            pod = next(x for x in self.pods if x.slot == p)
            self.kills.add(asyncio.create_task(self.terminate(pod)))

    async def run(self, duration_s: float) -> Result:
        tasks = self.tasks
        # time, ready pods, restarts, available pods; and the requests failed so far by cause
        samples: list[tuple[int, int, int, int]] = []
        beside: dict[str, list[tuple[int, int]]] = {w.name: [] for w in self.companions()}  # ready, restarts
        failed_so_far: list[dict[str, int]] = []
        ready: list[int] = []
        all_ready: int | None = None
        min_ready_ms = self.workload.spec.min_ready_seconds * 1000
        try:
            await self.prepare()
            if self.deployment is not None:
                for pod in self.pods:  # the first ReplicaSet's, as the run starts
                    self.deployment.state[pod.slot] = PodState(created_ms=0)
            for pod in self.pods:  # admitted: probe workers first, their first run finds no container
                for wk in pod.workers.values():
                    self._task(pod, wk.kind, self.worker(pod, wk))
            await asyncio.sleep(0)
            for pod in self.pods:
                await self.start(pod)
                self._task(pod, "watch", self.watch(pod))
                if pod.command:
                    self._task(pod, "listens", self.listens(pod))
            load = asyncio.create_task(self.traffic(duration_s))
            tasks.append(load)
            end = self.t0 + duration_s
            while time.monotonic() < end:
                if self.stop_signal is not None:  # in case its cancellation was lost (see _finish)
                    raise Stopped(self.stop_signal)
                for t in list(tasks):  # a bad --command or an app that would not load ends the run
                    if t.done() and not t.cancelled() and (exc := t.exception()) is not None:
                        raise exc
                self.update_ready()
                if self.deployment is not None:
                    self.control()
                now = self.now_ms()
                active = [p for p in self.pods if not p.deleting and not p.gone and not p.workload]
                ready.append(sum(p.ready for p in active))
                available = sum(p.ready and p.ready_since + min_ready_ms <= now for p in active)
                own = sum(p.restarts for p in self.pods if not p.workload)
                samples.append((now, ready[-1], own, available))
                for name, rows in beside.items():
                    theirs = [p for p in self.pods if p.workload == name]
                    rows.append((sum(p.ready for p in theirs), sum(p.restarts for p in theirs)))
                failed_so_far.append(self._failed_so_far())
                if all_ready is None and ready[-1] >= self.workload.spec.replicas:
                    all_ready = self.now_ms()
                if self.progress is not None and len(samples) % 5 == 1:
                    self.progress(self)
                await asyncio.sleep(0.05)
            self.finishing = True
            if self.progress is not None:
                self.progress(self)
            # Answers still on their way, until each route's gracefulStop.
            linger = max((t.graceful_stop for t in self.routes), default=0) / 1000
            await asyncio.wait_for(asyncio.shield(load), timeout=linger + 10)
            for i, envoy in enumerate(self.envoys):  # summed over the client sidecars
                for k, v in (await envoy.stats()).items():
                    self.envoy_stats[k] = self.envoy_stats.get(k, 0) + v
                for cluster, n in (await envoy.failed_outlier_check()).items():
                    k = f"cluster.{cluster}.outlier_detection.hosts_failed_outlier_check"
                    self.envoy_stats[k] = self.envoy_stats.get(k, 0) + n
                self.events += self._outlier_events(i, envoy)
        finally:
            self.cleaning = True
            await _finish([*tasks, *self.kills])
            await asyncio.gather(*self.prestarts, return_exceptions=True)  # bounded: a spawn each
            await asyncio.gather(*(e.stop() for e in (*self.envoys, *self.sidecars)), return_exceptions=True)
            await asyncio.gather(*(d.stop() for d in self.dependencies), return_exceptions=True)
            for proc in self.spawned:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            for pod in [*self.pods, *self.future.values()]:
                _end_group(pod)
                for warm in pod.warm:
                    warm.control.close()
                if not isinstance(pod.log, int):
                    pod.log.close()
            if self.folder is not None:
                self.folder.cleanup()
        self.events.sort(key=lambda e: e.time_ms)
        w = self.workload
        summary = WorkloadSummary(
            name=w.name,
            kind=w.kind,
            replicas=w.spec.replicas,
            restarts={p.name: p.restarts for p in self.pods if not p.workload},
            first_ready_ms=min((e.time_ms for e in self.events if e.reason == "PodReady"), default=None),
            all_ready_ms=all_ready,
            min_ready=min(ready, default=0),
            avg_ready=float(np.mean(ready)) if ready else 0.0,
            min_available=min((a for *_, a in samples), default=0),
        )
        routes = []
        for name, res in self.loads.items():
            failed = {c: res.failed.get(c, 0) for c in CAUSES}
            service = self._target(next(t for t in self.routes if t.label == name))[0]
            od: dict[str, int] = {}  # the simulation's names: Envoy's outlier_detection.* counters
            for k, v in self.envoy_stats.items():
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
            # As the simulation counts them: offered includes the iterations dropped for want of
            # a VU; what is neither answered, failed nor interrupted was still awaited at the end.
            waiting = res.sent - res.ok - sum(failed.values()) - res.interrupted
            routes.append(
                RouteSummary(
                    name,
                    service,
                    res.sent + res.dropped,
                    res.ok,
                    failed,
                    dropped=res.dropped,
                    interrupted=res.interrupted,
                    in_flight=max(waiting, 0),
                    envoy=od,
                    statuses=dict(res.statuses),
                    latency_ms=res.latency_ms(),
                )
            )
        times = np.array([s[0] for s in samples], dtype=np.int64)
        series = {
            f"workload.{w.name}.ready": np.array([s[1] for s in samples], dtype=np.int64),
            f"workload.{w.name}.restarts": np.array([s[2] for s in samples], dtype=np.int64),
            f"workload.{w.name}.available": np.array([s[3] for s in samples], dtype=np.int64),
        }
        for name, rows in beside.items():
            series[f"workload.{name}.ready"] = np.array([r[0] for r in rows], dtype=np.int64)
            series[f"workload.{name}.restarts"] = np.array([r[1] for r in rows], dtype=np.int64)
        others = [
            WorkloadSummary(
                name=o.name,
                kind=o.kind,
                replicas=o.spec.replicas,
                restarts={p.name: p.restarts for p in self.pods if p.workload == o.name},
                first_ready_ms=min(
                    (
                        e.time_ms
                        for e in self.events
                        if e.reason == "PodReady" and e.object.removeprefix("pod/") in pod_names_of(o)
                    ),
                    default=None,
                ),
                all_ready_ms=None,
                min_ready=min((r[0] for r in beside[o.name]), default=0),
                avg_ready=float(np.mean([r[0] for r in beside[o.name]])) if beside[o.name] else 0.0,
                min_available=0,
            )
            for o in self.companions()
        ]
        rollouts = []
        if self.deployment is not None:
            series |= self.deployment.series(times)
            rollouts = self.deployment.summaries(
                times,
                series[f"workload.{w.name}.ready"],
                series[f"workload.{w.name}.available"],
                failed_so_far,
            )
        return Result(
            scenario=self.scenario.name,
            seed=self.scenario.spec.seed,
            step_ms=50,
            duration_ms=round(duration_s * 1000),
            time_ms=times,
            series=series,
            rollouts=rollouts,
            events=self.events,
            workloads=[summary, *others],
            routes=routes,
            source="lab",
            # As the client sidecars' outlier log names them: a pod's port, or its sidecar's.
            hosts={f"{HOST}:{p.inbound or p.port}": p.name for p in self.pods},
        )


async def _finish(tasks: list[asyncio.Task[None]], rounds: int = 20) -> None:
    """Cancel the tasks and wait for their end, cancelling again those still running: Python
    3.11's asyncio.wait_for loses a cancellation that comes as its awaitable completes (a probe
    worker then ran on, and the clean-up waited for it forever). Bounded: ``rounds`` half-seconds
    (the processes are killed after it whatever the tasks do)."""
    pending = {t for t in tasks if not t.done()}
    for _ in range(rounds):
        if not pending:
            break
        for t in pending:
            t.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.5)
    for t in tasks:  # retrieved, so that none is reported as never retrieved
        if t.done() and not t.cancelled():
            t.exception()


def _end_group(pod: Pod) -> None:
    """A --command's exit ends what it started too, as a container's end does (its process
    group is its PID)."""
    if pod.command and pod.proc is not None and pod.proc.returncode is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pod.proc.pid, signal.SIGKILL)


class Stopped(Exception):
    """The lab was stopped by a signal (SIGTERM or SIGHUP), its children stopped and its files
    removed, as on Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


async def _until_stopped(lab: Lab, seconds: float) -> Result:
    """``lab.run``, stopped on SIGTERM or SIGHUP as asyncio.run stops it on Ctrl-C: the run is
    cancelled and cleans up; a signal during the last clean-up waits for its end."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    got: list[int] = []

    def stop(signum: int) -> None:
        if not got:
            got.append(signum)
            lab.stop_signal = signum
            if not lab.cleaning:
                main.cancel()

    handled = []
    for s in STOP_SIGNALS:
        with contextlib.suppress(ValueError, RuntimeError):  # signals go to the main thread only
            loop.add_signal_handler(s, stop, s)
            handled.append(s)
    try:
        result = await lab.run(seconds)
    except asyncio.CancelledError:
        if got:
            raise Stopped(got[0]) from None
        raise
    finally:
        for s in handled:
            loop.remove_signal_handler(s)
    if got:
        raise Stopped(got[0])
    return result


def check_limits(scenario: Scenario, workload: Workload, seconds: float, allow_exec: bool) -> None:
    """Refuse up front what the lab would not run faithfully on one machine, and a manifest's
    exec probes without consent: they would run here, as this user."""
    pods = len(pod_names_of(workload))
    if pods > MAX_PODS:
        raise InputError(
            f"workload {workload.name}: {pods} pods: the lab runs at most {MAX_PODS} pods "
            "(processes on this machine); lower its replicas"
        )
    if seconds > MAX_DURATION_S:
        raise InputError(f"{seconds:g}s: the lab runs at most {MAX_DURATION_S // 3600}h", field="duration")
    lab_routes = [
        t for t in scenario.spec.traffic if Lab._selects_of(scenario, workload, scenario.service_for(t).name)
    ]
    rate = sum(t.rate or 0 for t in lab_routes)
    if rate > MAX_RATE:
        raise InputError(
            f"spec.traffic: {rate:g} requests per second in all: the lab sends at most {MAX_RATE} "
            "per second (one load generator on this machine)"
        )
    check_actions(scenario, workload, MAX_PODS)
    if has_actions(scenario) and injected(workload, scenario):
        raise InputError(
            f"workload {workload.name}: the lab runs rollouts of pods without their own Istio sidecar "
            "only (it would have to start one per new pod); probesim run simulates them",
            field="spec.actions",
        )
    c = workload.pod_spec.containers[0]
    kinds: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")
    for kind in kinds:
        p = c.probe(kind)
        if p is not None and p.exec is not None and not allow_exec:
            raise InputError(
                f"workload {workload.name}, container {c.name}, {kind}Probe: its exec command "
                f"({shlex.join(p.exec.command)}) would run on this machine as user {_user()}; "
                "pass --allow-exec to allow it"
            )


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _found(argv: list[str], option: str) -> list[str]:
    found = shutil.which(argv[0])
    if found is None:
        raise InputError(f"{option} {argv[0]}: not found or not executable (PATH is searched)")
    return [found, *argv[1:]]


def parse_command_for(items: list[str]) -> dict[str, list[str]]:
    """``--command-for REVISION=COMMAND``: the command split as a shell splits words (quotes
    group; nothing is expanded or piped), its program found on PATH."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        try:
            argv = shlex.split(text)
        except ValueError as e:
            raise InputError(f"{item!r}: {e}", field="--command-for") from None
        if not sep or not key.strip() or not argv:
            raise InputError(
                f"{item!r}: give REVISION=COMMAND, e.g. 2='python3 server_v2.py' (revision 1 is the "
                "manifest's, 2 the first rollout's, …; or a ReplicaSet's name)",
                field="--command-for",
            )
        out[key.strip()] = _found(argv, f"--command-for {key.strip()}=")
    return out


def run_lab(
    scenario: Scenario,
    duration_s: float | None = None,
    command: list[str] | None = None,
    progress: Callable[[Lab], None] | None = None,
    listen_timeout_s: float = LISTEN_TIMEOUT_S,
    workload: str | None = None,
    allow_exec: bool = False,
    command_for: list[str] | None = None,
) -> Result:
    """Run one workload of the scenario for real (``workload``, default the first). A manifest's
    exec probes run on this machine, only with ``allow_exec``. ``command_for``: ``REVISION=COMMAND``
    items, a command for one revision's pods (``parse_command_for``). Raises ``Stopped`` on SIGTERM
    or SIGHUP (KeyboardInterrupt on Ctrl-C) once every child is stopped."""
    if command:
        command = _found(command, "--command")
    per_revision = parse_command_for(command_for or [])
    if not scenario.workloads:
        raise InputError("the scenario has no Deployment or StatefulSet to run")
    w = scenario.workloads[0]
    if workload is not None:
        named = [x for x in scenario.workloads if x.name == workload]
        if not named:
            known = ", ".join(x.name for x in scenario.workloads)
            raise InputError(
                f"{workload!r} is not a workload of the scenario (it has: {known})", field="--workload"
            )
        w = named[0]
    seconds = duration_s if duration_s is not None else scenario.spec.duration / 1000
    check_limits(scenario, w, seconds, allow_exec)
    lab = Lab(scenario, w, command, per_revision)
    lab.progress = progress
    lab.listen_timeout_s = listen_timeout_s
    return asyncio.run(_until_stopped(lab, seconds))
