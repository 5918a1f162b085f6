"""The lab's container runtime: a pod's container as a real process (the test app acting out
its behaviour, loaded ahead of time; or the user's command with $PORT), started, watched, killed
for a failed probe and restarted with the engine's ``doBackOff`` rule after
``containerRestartDelay`` (reference/kubelet.md §3), stopped when its pod is deleted.

Every process the lab stops goes through ``stop``: SIGTERM, the grace period, then SIGKILL (a
grace of None: SIGKILL at once), its process group with it for a --command. A container's kill
or deletion first runs its preStop hook as the engine does (kube/hooks.py): the lab waits the
hook's length while the app goes on serving, then SIGTERM with what is left of the grace. Every child is
spawned to die with the lab (``hygiene``) and reaped on the way out (``reap``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

from probesim.errors import InputError
from probesim.kube.containers import MIN_GRACE, back_off, restarts_with
from probesim.kube.hooks import FAILED_MESSAGE, FAILS, HTTP_TO_APP, NO_HOOK, container_hook, stop_plan
from probesim.lab.clock import Clock
from probesim.lab.dependency import DependencyServer, env_name
from probesim.lab.hygiene import RunFolder, dies_with_parent
from probesim.lab.pods import HOST, KILLED, Pod, Warm
from probesim.lab.port import BACKLOG
from probesim.lab.service_proxy import ServiceProxy, env_names
from probesim.lab.status import StatusManager
from probesim.model.kubernetes import ProbeType
from probesim.model.scenario import Scenario

WARM_TIMEOUT_S = 30
# Test apps loaded before the scenario's clock starts, for a pod that may restart: its first
# start and the two restarts the back-off rule lets follow at once (a kill before any exit, then
# an exit with no back-off entry yet), 1 s apart with a strict liveness probe and no restart
# delay, when loading one takes longer than that on a busy machine. Later restarts come 10 s or
# more after the previous start, which loads the next one.
LOADED_AHEAD = 3
LISTEN_TIMEOUT_S = 30.0  # how long a --command may take to listen on $PORT, by default


async def stop(proc: asyncio.subprocess.Process, grace_s: float | None, group: bool = False) -> None:
    """The one stop sequence: SIGTERM, up to ``grace_s`` seconds for the process to exit, then
    SIGKILL (``grace_s`` None: SIGKILL at once). With ``group``, what it started (its process
    group, as a container's) ends with it."""
    if proc.returncode is None:
        if grace_s is None:
            proc.kill()
        else:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout=grace_s)
            except TimeoutError:
                proc.kill()
        await proc.wait()
    if group:
        end_group(proc)


def end_group(proc: asyncio.subprocess.Process) -> None:
    """A --command's exit ends what it started too, as a container's end does (its process
    group is its PID)."""
    if proc.returncode is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


class Runtime:
    def __init__(
        self, scenario: Scenario, clock: Clock, status: StatusManager, folder: Callable[[], RunFolder]
    ) -> None:
        self.scenario = scenario
        self.clock = clock
        self.status = status
        self.folder = folder
        self.spawned: list[asyncio.subprocess.Process] = []  # every child, to reap on the way out
        self.prestarts: set[asyncio.Task[None]] = set()
        self.kills: set[asyncio.Task[None]] = set()
        self.dependencies: list[DependencyServer] = []  # served in this process while it runs
        self.services: list[ServiceProxy] = []  # the Services the apps call, as kube-proxy relays them
        self.listen_timeout_s = LISTEN_TIMEOUT_S
        self.metrics_ports: dict[str, int] = {}  # per pod, where its app serves /metrics (lab --prometheus)
        self.cpu_stat_dir: Path | None = None  # where apps held to a CPU limit write their CFS counts
        # The run's clean-up has begun: nothing new starts (a restart or kill that comes as the
        # tasks are cancelled would start a process after the reaping).
        self.closing = False
        self.keep_listening = False  # (lab.nodes: each test app's listening socket kept, a copy)

    def _app_argv(self, pod: Pod) -> list[str]:
        app = Path(sys.executable).parent / "probesim"
        behavior = json.dumps(pod.behavior.model_dump(mode="json", by_alias=True))
        argv = [str(app), "app", "--port", str(pod.port), "--behavior", behavior]
        for d in self.dependencies:
            argv += ["--dependency", f"{d.name}={d.url}"]
        for sp in self.services:
            argv += ["--service", f"{sp.service}={sp.url}"]
        if pod.name in self.metrics_ports:
            argv += ["--metrics-port", str(self.metrics_ports[pod.name])]
        for path in pod.container.http_probe_paths():
            argv += ["--probe-path", path]
        limit = pod.container.resources.limits.cpu
        if limit:  # (0: no quota)
            argv += ["--cpu-limit", f"{limit / 1000:g}"]  # the container's quota, kept by the app
            if self.cpu_stat_dir is not None:
                argv += ["--cpu-stat-dir", str(self.cpu_stat_dir)]
        return argv if pod.grpc_port is None else [*argv, "--grpc-port", str(pod.grpc_port)]

    def _metrics_env(self, pod: Pod) -> dict[str, str]:
        port = self.metrics_ports.get(pod.name)
        return {} if port is None else {"METRICS_PORT": str(port)}

    def loaded_ahead(self, pod: Pod) -> int:
        """How many test apps to load before the clock starts for one of the first pods."""
        return 0 if pod.command else LOADED_AHEAD if pod.may_restart() else 1

    async def prestart(self, pod: Pod) -> None:
        """Start the test app for the pod's next container ahead of time, loaded and waiting, so
        that Python's start-up is not taken for the scenario's (a user's --command starts cold:
        its start-up is its own)."""
        self._not_closing()
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
        pod.run.warm.append(Warm(proc, parent, loaded))

    def _not_closing(self) -> None:
        """A process about to start once the clean-up has begun is called off, as if its task
        had been cancelled."""
        if self.closing:
            raise asyncio.CancelledError

    async def start(self, pod: Pod) -> None:
        if pod.deleting or pod.frozen:  # (a frozen pod's node is down: it starts once the node is back)
            return
        self._not_closing()
        if pod.command:
            pod.run.proc = await asyncio.create_subprocess_exec(
                *pod.command,
                env={**os.environ, "PORT": str(pod.port)}
                | ({} if pod.grpc_port is None else {"GRPC_PORT": str(pod.grpc_port)})
                | {env_name(d.name): d.url for d in self.dependencies}
                | {
                    k: v
                    for sp in self.services
                    for k, v in zip(env_names(sp.service), (HOST, str(sp.port)), strict=True)
                }
                | self._metrics_env(pod),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=pod.run.log,
                stderr=pod.run.log,
                process_group=0,  # its own processes go with it, as a container's
                preexec_fn=dies_with_parent(),
            )
            self.spawned.append(pod.run.proc)
            pod.run.started_at = time.monotonic()
        else:
            if not pod.run.warm:
                await self.prestart(pod)
            self._not_closing()
            warm = pod.run.warm.pop(0)
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
                try:
                    listening.bind((HOST, pod.port))
                except OSError as e:
                    raise InputError(
                        f"pod {pod.name}: its port {HOST}:{pod.port} is taken by another process on "
                        f"this machine ({e.strerror}); run the lab again"
                    ) from None
                if pod.behavior.start == 0:
                    listening.listen(BACKLOG)  # listening from the start, as simulated
                pod.run.started_at = time.monotonic()  # on the clock the app reads too
                go = f"{self.clock.t0!r} {pod.run.started_at!r}".encode()
                socket.send_fds(warm.control, [go], [listening.fileno()])
                if self.keep_listening:  # (not socket.dup: it would set the app's socket blocking)
                    pod.run.listening = socket.socket(fileno=os.dup(listening.fileno()))
            finally:
                listening.close()  # the app holds it now
                warm.control.close()
            pod.run.proc = warm.proc
        pod.run.instance += 1
        if pod.run.instance > 0:
            pod.run.restarts += 1
        self.clock.event("Normal", "Started", pod, f"Started container {pod.container.name}")
        self.status.update()
        pod.wake.set()  # the start's pod sync triggers readiness (§2.1.5)
        pod.first_start.set()
        if not pod.command and not pod.run.warm and pod.may_restart():
            self.prestarts.add(asyncio.create_task(self.prestart(pod)))  # for the next restart

    def _ended(self, pod: Pod) -> None:
        """The container's process has exited: its group goes too; not running any more."""
        if pod.command and pod.run.proc is not None:
            end_group(pod.run.proc)
        pod.run.last_exit = time.monotonic()
        pod.run.proc = None
        if pod.run.listening is not None:
            pod.run.listening.close()
            pod.run.listening = None

    def kill(self, pod: Pod, reason: ProbeType) -> None:
        """A failed liveness or startup probe's kill, as a task of its own."""
        if self.closing:  # every process is about to be killed anyway
            return
        self.kills.add(asyncio.create_task(self._kill(pod, reason)))

    async def _kill(self, pod: Pod, reason: ProbeType) -> None:
        """Kill for a failed liveness/startup probe, then restart in the same sync (§3.8)."""
        if pod.run.proc is None or pod.run.killing:
            return
        pod.run.killing = True
        again = restarts_with(pod.spec.restart_policy, KILLED)
        self.clock.event(
            "Normal",
            "Killing",
            pod,
            f"Container {pod.container.name} failed {reason} probe"
            + (", will be restarted" if again else ""),
        )
        probe = pod.workers[reason].probe
        grace = probe.termination_grace_period_seconds or pod.grace_s
        decide = pod.run.last_exit
        left = await self._pre_stop(pod, grace * 1000)
        await stop(pod.run.proc, left / 1000)
        self._ended(pod)
        pod.run.killing = False
        if again:  # shouldRestartOnFailure
            await self._restart(pod, decide)
        else:
            self.status.update()

    async def _pre_stop(self, pod: Pod, grace_ms: int) -> int:
        """The container's preStop hook, before SIGTERM: the kubelet's wait for it (at most the
        grace period) with the app untouched and serving, acted out as a sleep of the hook's
        length (kube/hooks.py: the engine's); an httpGet hook to the app is really sent, so an
        app that refuses fails it (FailedPreStopHook) and one that hangs holds it to the grace.
        Returns the grace period left for SIGTERM (ms), as ``killContainer`` works it out."""
        hook = container_hook(pod.container, pod.behavior)
        if hook.kind == NO_HOOK or grace_ms <= 0:
            return max(grace_ms, MIN_GRACE)
        length = hook.length
        began = time.monotonic()
        pod.run.in_hook = True
        if hook.kind == HTTP_TO_APP and pod.container.lifecycle is not None:
            action = pod.container.lifecycle.pre_stop.http_get  # type: ignore[union-attr]
            assert action is not None
            try:
                timeout = aiohttp.ClientTimeout(total=grace_ms / 1000)
                async with (
                    aiohttp.ClientSession(timeout=timeout) as s,
                    s.get(f"http://{HOST}:{pod.port}{action.path}") as r,
                ):
                    await r.read()
            except TimeoutError:
                length = grace_ms  # given up at the grace period
            except aiohttp.ClientError:
                length = -1
        if hook.kind == FAILS or length < 0:
            self.clock.event("Warning", "FailedPreStopHook", pod, FAILED_MESSAGE)
            length = 0
        planned = min(length, grace_ms)
        pod.run.in_hook = True
        try:
            await asyncio.sleep(max(planned / 1000 - (time.monotonic() - began), 0.0))
        finally:
            pod.run.in_hook = False
        return int(stop_plan(grace_ms, planned)[1])

    async def _restart(self, pod: Pod, decide: float) -> None:
        """The next container, ``containerRestartDelay`` after the exit (the kubelet seeing it
        and the runtime creating the next), and as much after each back-off expiry, as
        simulated; not running, so not ready, meanwhile."""
        delay_ms = self.scenario.spec.cluster.container_restart_delay
        self.status.update()
        await asyncio.sleep(max(0.0, pod.run.last_exit + delay_ms / 1000 - time.monotonic()))
        while not pod.deleting:
            now = self.clock.now_ms()
            if decide < 0:
                break
            allowed, backoff = back_off(now, self.clock.ms(decide), pod.run.backoff, pod.run.backoff_updated)
            if allowed:
                pod.run.backoff, pod.run.backoff_updated = int(backoff), now
                break
            self.clock.event(
                "Warning",
                "BackOff",
                pod,
                f"Back-off restarting failed container {pod.container.name} in pod {pod.name}_default",
            )
            decide = pod.run.last_exit
            expiry = self.clock.ms(pod.run.last_exit) + pod.run.backoff + delay_ms
            await asyncio.sleep(max(0.0, (expiry - self.clock.now_ms()) / 1000))
        await self.start(pod)

    async def watch(self, pod: Pod) -> None:
        """Restart a container that exits by itself, as its restartPolicy says."""
        while True:
            if pod.run.proc is None or pod.run.killing:
                await asyncio.sleep(0.05)
                continue
            proc = pod.run.proc
            code = await proc.wait()
            if pod.run.killing or pod.run.proc is not proc:
                continue
            self._ended(pod)
            if (
                pod.command
                and pod.run.instance == 0
                and not pod.run.listened
                and pod.run.last_exit - pod.run.started_at < 2
            ):
                raise InputError(
                    f"--command {pod.command[0]}: pod {pod.name}'s process exited with code {code} "
                    f"{pod.run.last_exit - pod.run.started_at:.1f}s after it started, before listening on "
                    f"$PORT ({pod.port}){self._output_of(pod)}"
                )
            self.clock.event(
                "Warning", "Exited", pod, f"Container {pod.container.name} exited with code {code}"
            )
            if not restarts_with(pod.spec.restart_policy, code):
                self.status.update()
                return
            await self._restart(pod, pod.run.last_exit)

    async def halt(self, pod: Pod) -> None:
        """A pod's container killed at once, whatever it is doing (SIGKILL works on a stopped
        process): the container of a pod on a down node, evicted or gone with its crashed node.
        No event: the kubelet that would say so is down."""
        proc = pod.run.proc
        if proc is None:
            return
        pod.run.killing = True  # its exit is not a crash to restart
        try:
            await stop(proc, None, group=bool(pod.command))
        finally:
            if pod.run.proc is proc:
                self._ended(pod)
            pod.run.killing = False

    async def terminate(self, pod: Pod, grace_s: float | None = None) -> None:
        """``kubectl delete pod`` as the kubelet does it (as simulated, ``engine.loop._delete``):
        out of the endpoints at once; liveness and startup stop, readiness goes on; the container
        gets SIGTERM and, after the pod's grace period (``grace_s``: the deletion's own, as a
        drain's --grace-period), SIGKILL; it is not restarted."""
        grace = pod.grace_s if grace_s is None else grace_s
        pod.deleting = True
        for kind in ("liveness", "startup"):
            task = pod.tasks.pop(kind, None)
            if task is not None:
                task.cancel()
        self.status.update()
        self.status.push_endpoints()  # a terminating pod leaves the endpoints even while Ready
        proc = pod.run.proc
        if proc is not None and proc.returncode is None:
            pod.run.killing = True  # its exit is not a crash to restart
            self.clock.event("Normal", "Killing", pod, f"Stopping container {pod.container.name}")
            left = await self._pre_stop(pod, int(grace * 1000))
            await stop(proc, left / 1000)
            self._ended(pod)
            self.status.update()  # not Ready as its container exits, not after the clean-up below
        pod.gone = True
        for task in pod.tasks.values():
            task.cancel()
        warm, pod.run.warm = pod.run.warm, []
        for w in warm:  # those loaded for restarts that will not come
            w.control.close()
            await stop(w.proc, None)
        self.status.update()

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
                pod.run.listened = True
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
        if isinstance(pod.run.log, int):
            return ""
        pod.run.log.flush()
        with open(pod.run.log.name, errors="replace") as f:
            tail = f.read()[-600:].strip()
        return f"; its last output:\n{tail}" if tail else " (it printed nothing)"

    def open_log(self, pod: Pod) -> None:
        """A --command's output goes to a file in the run's folder (for its error messages)."""
        if pod.command and isinstance(pod.run.log, int):
            pod.run.log = open(self.folder().path / f"{pod.name}.log", "w+")  # noqa: SIM115

    async def reap(self, pods: list[Pod]) -> None:
        """On the way out, whatever happened: every child killed and waited for, every pod's
        process group ended, control sockets and logs closed."""
        await asyncio.gather(*self.prestarts, return_exceptions=True)  # bounded: a spawn each
        await asyncio.gather(*(d.stop() for d in self.dependencies), return_exceptions=True)
        await asyncio.gather(*(sp.stop() for sp in self.services), return_exceptions=True)
        await asyncio.gather(*(stop(proc, None) for proc in self.spawned))  # all killed, then waited for
        for pod in pods:
            if pod.command and pod.run.proc is not None:
                end_group(pod.run.proc)
            for warm in pod.run.warm:
                warm.control.close()
            if pod.run.listening is not None:
                pod.run.listening.close()
            if not isinstance(pod.run.log, int):
                pod.run.log.close()
