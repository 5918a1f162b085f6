"""``probesim lab``: a local kubelet for one workload, put together from its parts as the
kubelet's are — the runtime (``lab.runtime``: processes, the one stop sequence, restarts with
back-off), the prober (``lab.prober``: a worker per probe), the status manager (``lab.status``:
conditions and endpoints), traffic and Envoys (``lab.traffic``), the Deployment controller
(``lab.controller``), the figures (``lab.result``). This module only builds them, orders a run's
phases, and stops on signals; what the lab refuses up front is ``lab.limits``.

Its pods are real processes (the test app acting out the scenario's behaviour, or the user's
command with $PORT) on 127.0.0.1. Every wait is bounded, everything binds to 127.0.0.1, and every
child is stopped on the way out (success, error, Ctrl-C, SIGTERM or SIGHUP); children die with
the lab even when it is killed (``hygiene``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from probesim.engine.fleet import injected
from probesim.errors import InputError
from probesim.lab.clock import Clock
from probesim.lab.collector import hold_back
from probesim.lab.controller import Controller
from probesim.lab.dependency import DependencyServer
from probesim.lab.envoy import Envoy
from probesim.lab.headroom import Headroom, judge
from probesim.lab.headroom_demand import Demand, check_headroom, raise_nofile
from probesim.lab.headroom_monitor import Monitor
from probesim.lab.hygiene import RunFolder
from probesim.lab.limits import MAX_PODS, check_envoy, check_limits, found, parse_command_for, routes_to
from probesim.lab.load import LoadResult
from probesim.lab.nodes import LabNodes, runs_nodes
from probesim.lab.pods import HOST, Pod, new_pod
from probesim.lab.prober import Prober
from probesim.lab.result import Recorder
from probesim.lab.rollout import has_actions_of
from probesim.lab.runtime import LISTEN_TIMEOUT_S, WARM_TIMEOUT_S, Runtime
from probesim.lab.service_proxy import ServiceProxy, call_names
from probesim.lab.status import StatusManager, selects
from probesim.lab.telemetry import Queries, Telemetry
from probesim.lab.traffic import TrafficRunner, meshed_calls
from probesim.model.kubernetes import Workload, pod_names_of
from probesim.model.nodes import NodePoolUpgrade
from probesim.model.scenario import ContainerBehavior, Scenario
from probesim.results import Result

# Each stops a run the same way: every child stopped, files removed, then Stopped (SIGINT:
# KeyboardInterrupt, from run_lab).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SAMPLE_S = 0.05
RECANCEL_S = 0.2  # how often a stopped run's cancellation is sent again until its clean-up begins


def workload_pods(scenario: Scenario, w: Workload, command: list[str] | None) -> list[Pod]:
    """A workload's pods as its manifest makes them, each acting out its behaviour (a pod
    override by ordinal wins)."""
    wb = scenario.behavior(w.name)
    c = w.pod_spec.containers[0]
    out = []
    for i, name in enumerate(pod_names_of(w)):
        b = wb.containers.get(c.name, ContainerBehavior())
        for ov in wb.pods:
            if i in ov.ordinals and c.name in ov.containers:
                b = ov.containers[c.name]
        out.append(new_pod(name, i, w.name, w.pod_spec, w.pod_labels, c, b, command))
    return out


class Lab:
    def __init__(
        self,
        scenario: Scenario,
        workload: Workload | None = None,
        command: list[str] | None = None,
        command_for: dict[str, list[str]] | None = None,
        prometheus: Path | None = None,
        queries: Queries | None = None,
    ) -> None:
        """Every workload of the scenario, each with its own pods, probes, restarts and (for a
        Deployment with actions) rollouts; or only ``workload``, with the Deployments its
        routes' Services also select beside it (a canary's other version)."""
        self.scenario = scenario
        self.workloads = [workload] if workload is not None else list(scenario.workloads)
        self.command = command
        self.clock = Clock()
        self.pods: list[Pod] = []  # shared by the parts; the controllers add to it
        self.folder: RunFolder | None = None  # made as the run starts (--command output, Envoys' files)
        self.status = StatusManager(scenario, self.clock, self.pods)
        self.runtime = Runtime(scenario, self.clock, self.status, self.run_folder)
        self.prober = Prober(self.clock, self.status, self.runtime)
        # lab --prometheus: the run's telemetry scraped by a real Prometheus, saved for fit.
        self.telemetry = Telemetry(self, prometheus, queries or (lambda w, s: {})) if prometheus else None
        self.tasks: list[asyncio.Task[None]] = []
        self.progress: Callable[[Lab], None] | None = None  # called a few times a second
        self.finishing = False  # past the duration, waiting for answers on their way
        self.cleaning = False  # in the run's last clean-up, which a signal must not interrupt
        self.stop_signal: int | None = None  # a stop signal received: stop as soon as can be
        # The lab's own headroom (lab.headroom): measured while it runs, judged at its end.
        self.scale = 1.0
        self.nofile = 0
        self.planned = Demand()
        self.monitor = Monitor(self.processes)
        self.headroom: Headroom | None = None
        # A Deployment's rollouts run for real: the engine's controllers over the lab's pods.
        # With nodes (lab.nodes), every Deployment's controller runs: it replaces evicted pods.
        with_nodes = runs_nodes(scenario)
        changed = [
            w
            for w in self.workloads
            if w.kind == "Deployment" and (with_nodes or has_actions_of(scenario, w))
        ]
        for key, argv in (command_for or {}).items():
            if not changed:
                raise InputError(
                    f"{key}={shlex.join(argv)}: a command per revision needs rollout, rollback or restart "
                    "actions of a Deployment in the scenario",
                    field="--command-for",
                )
            if len(changed) > 1:
                raise InputError(
                    f"{key}={shlex.join(argv)}: the scenario has actions of several Deployments "
                    f"({', '.join(w.name for w in changed)}); run one with --workload",
                    field="--command-for",
                )
        self.controllers = {
            w.name: Controller(scenario, w, self.clock, self.runtime, command_for or {}, command)
            for w in changed
        }
        # The routes to a Service of these workloads; others' traffic is not sent (run_lab says so).
        self.routes = routes_to(scenario, self.workloads)
        self.traffic = TrafficRunner(scenario, self.routes, self.clock, self.status, self.run_folder)
        for w in self.workloads:
            ctl = self.controllers.get(w.name)
            self.pods += ctl.first_pods() if ctl is not None else workload_pods(scenario, w, command)
        # A canary: the other Deployments whose pods the routes' Services also select run beside
        # it (their own pods, labels and behaviour), so that a split by subset finds them.
        for other in self.companions():
            self.pods += workload_pods(scenario, other, command)
        self.nodes: LabNodes | None = None
        if with_nodes and self.controllers:
            self.nodes = self._place_first()
        if self.companions() and len(self.pods) > MAX_PODS:
            names = ", ".join(w.name for w in (*self.workloads, *self.companions()))
            raise InputError(
                f"workloads {names} behind one Service: {len(self.pods)} pods: the lab runs at most "
                f"{MAX_PODS} pods (processes on this machine); lower their replicas"
            )

    def _place_first(self) -> LabNodes:
        """The first pods bound to their nodes as the run starts (the scheduler's decisions,
        the simulation's at 0 s); the Deployment controllers' new pods go to the scheduler; and
        the replacements of the pods on the nodes the scenario fails or a pool upgrade replaces,
        loaded ahead."""
        fleet = next(iter(self.controllers.values())).deployment.fleet
        nodes = LabNodes(self.scenario, fleet, self.clock, self.runtime, self.prober, self.status)
        self.runtime.keep_listening = True
        nodes.place(sorted(self.pods, key=lambda p: p.slot), self.pods, 0)
        failing = {
            nodes.nodes.names[n]
            for _, a in nodes.actions
            if a.kind in ("nodeDown", "zoneDown")
            for n in nodes.targets(a)
        }
        if any(isinstance(a, NodePoolUpgrade) for a in self.scenario.spec.actions):
            failing |= set(nodes.nodes.names[: nodes.nodes.pool_size])  # every node of the pool
        for ctl in self.controllers.values():
            ctl.to_place = nodes.wait_for_node
            mine = [p for p in self.pods if p.workload == ctl.workload.name]
            k = sum(1 for p in mine if p.node in failing and p.slot not in nodes.waiting) + len(ctl.deletions)
            for p in ctl.replacement_slots(k):
                ctl.future.setdefault(p, ctl.slot_pod(p))
        return nodes

    # What its live view and tests read.
    @property
    def t0(self) -> float:
        return self.clock.t0

    @property
    def envoys(self) -> list[Envoy]:
        return self.traffic.envoys

    @property
    def listen(self) -> list[int]:
        return self.traffic.listen

    @property
    def loads(self) -> dict[str, LoadResult]:
        return self.traffic.loads

    def companions(self) -> list[Workload]:
        """With one workload chosen (and no controller of it): the Deployments without actions
        beside it whose pods a Service of its routes selects too (v2 beside v1), in the order of
        the manifests."""
        if self.controllers:
            return []
        services = [self.status.service(self.scenario.service_for(t).name) for t in self.routes]
        return [
            w
            for w in self.scenario.workloads
            if w not in self.workloads
            and w.kind == "Deployment"
            and any(selects(s, w.pod_labels) for s in services)
        ]

    def processes(self) -> dict[int, str]:
        """The lab's processes now, PID → what it is: this one, the pods' apps, the Envoys."""
        out = {os.getpid(): "lab (load generator, dependencies, probes)"}
        for pod in self.pods:
            if pod.run.proc is not None:
                out[pod.run.proc.pid] = f"app {pod.name}"
        named = [(f"client sidecar {i}", e) for i, e in enumerate(self.traffic.envoys)]
        named += [(f"calls sidecar {s}", e) for s, e in self.traffic.callers.items()]
        named += [
            (f"sidecar {p}", e) for p, e in zip(self.traffic.sidecar_pods, self.traffic.sidecars, strict=True)
        ]
        for name, envoy in named:
            if envoy.proc is not None:
                out[envoy.proc.pid] = name
        return out

    def run_folder(self) -> RunFolder:
        """The run's folder, made (and earlier killed runs' removed) at its first use."""
        if self.folder is None:
            self.folder = RunFolder()
        return self.folder

    def _future(self) -> list[Pod]:
        return [p for c in self.controllers.values() for p in c.future.values()]

    def _task(self, pod: Pod, name: str, coro: Coroutine[None, None, None]) -> None:
        task = asyncio.create_task(coro)
        pod.tasks[name] = task
        self.tasks.append(task)

    async def prepare(self) -> None:
        """Before the scenario's clock starts: the pods' test apps loaded and waiting, and the
        client sidecars' Envoys up (with no endpoint yet), so neither start-up counts as
        scenario time."""
        self.run_folder()
        if self.telemetry is not None:  # before any app starts: each serves its metrics port
            await self.telemetry.start([*self.pods, *self._future()])
        for pod in [*self.pods, *self._future()]:
            self.runtime.open_log(pod)
        for name, spec in self.scenario.spec.dependencies.items():
            server = DependencyServer(name, spec, self.scenario.spec.seed)
            self.runtime.dependencies.append(server)
            await server.start()
        for service in self.scenario.called_services():
            endpoints: Callable[[], list[tuple[str, int]]] = partial(self.status.proxied, service)
            if meshed_calls(self.scenario, service):  # the relay sends every call to the sidecar
                endpoints = partial(list, [(HOST, await self.traffic.call_sidecar(service))])
            proxy = ServiceProxy(service, endpoints, call_names(self.scenario, service))
            self.runtime.services.append(proxy)
            await proxy.start()
        sidecars = {w.name for w in (*self.workloads, *self.companions()) if injected(w, self.scenario)}
        for i, pod in enumerate(self.pods):
            if pod.workload in sidecars:
                await self.traffic.start_sidecar(pod, i)
        for pod in self.pods:
            for _ in range(self.runtime.loaded_ahead(pod)):
                await self.runtime.prestart(pod)
        for pod in self.nodes.rebooting(self.pods) if self.nodes is not None else []:
            if not pod.command:  # a crashed node back: its pods' new containers
                await self.runtime.prestart(pod)
        for pod in self._future():  # the rollouts' pods: one loaded each, the next after it starts
            if not pod.command:
                await self.runtime.prestart(pod)
        await self.traffic.prepare()
        for warm in (w for pod in [*self.pods, *self._future()] for w in pod.run.warm):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(warm.loaded), WARM_TIMEOUT_S)
        hold_back()  # before the clock starts: a full collection now costs no scenario time
        self.clock.start()
        for server in self.runtime.dependencies:
            server.begin(self.clock.t0)

    async def admit(self, pod: Pod, delay_s: float = 0.0) -> None:
        """A pod admitted: probe workers from its creation, its container after ``delay_s``
        (the cluster's pod start delay for one the controller creates)."""
        for w in pod.workers.values():
            self._task(pod, w.kind, self.prober.worker(pod, w))
        await asyncio.sleep(delay_s)
        await self.runtime.start(pod)
        if not pod.deleting and not pod.frozen:
            self._task(pod, "watch", self.runtime.watch(pod))
            if pod.command:
                self._task(pod, "listens", self.runtime.listens(pod))

    async def run(self, duration_s: float) -> Result:
        tasks = self.tasks
        rec = Recorder(self.scenario, self.workloads, self.companions())
        try:
            await self.prepare()
            for ctl in self.controllers.values():
                ctl.begin(self.pods)
            waiting = self.nodes.waiting if self.nodes is not None else {}
            first = [p for p in self.pods if waiting.get(p.slot) is not p]  # bound to a node
            for pod in first:  # admitted: probe workers first, their first run finds no container
                for wk in pod.workers.values():
                    self._task(pod, wk.kind, self.prober.worker(pod, wk))
            await asyncio.sleep(0)
            for pod in first:
                await self.runtime.start(pod)
                self._task(pod, "watch", self.runtime.watch(pod))
                if pod.command:
                    self._task(pod, "listens", self.runtime.listens(pod))
            load = asyncio.create_task(self.traffic.run(duration_s))
            tasks.append(load)
            self.monitor.start()
            end = self.clock.t0 + duration_s
            while time.monotonic() < end:
                if self.stop_signal is not None:  # in case its cancellation was lost (_until_stopped)
                    raise Stopped(self.stop_signal)
                for t in list(tasks):  # a bad --command or an app that would not load ends the run
                    if t.done() and not t.cancelled() and (exc := t.exception()) is not None:
                        raise exc
                self.status.update()
                now = self.clock.now_ms()
                if self.nodes is not None:  # node faults, the node controllers' passes, evictions
                    self.nodes.tick(self.pods, now, self.admit, tasks)
                for ctl in self.controllers.values():
                    self.clock.events += ctl.round(self.pods, self.admit, tasks)
                if self.nodes is not None:  # the pods they created, placed and admitted
                    self.nodes.bind(self.pods, now, self.admit, tasks)
                rec.take(self.clock.now_ms(), self.pods, self.traffic)
                if self.progress is not None and len(rec.failed_so_far) % 5 == 1:
                    self.progress(self)
                await asyncio.sleep(SAMPLE_S)
            self.finishing = True
            if self.progress is not None:
                self.progress(self)
            # Answers still on their way, until each route's gracefulStop.
            await asyncio.wait_for(asyncio.shield(load), timeout=self.traffic.linger_s() + 10)
            await self.monitor.stop()
            self.clock.events += await self.traffic.collect()
            if self.telemetry is not None:
                await self.telemetry.save()
        finally:
            if self.nodes is not None:  # nothing stays SIGSTOPped, however the run ends
                self.nodes.release()
            await self.monitor.stop()
            self.cleaning = self.runtime.closing = True
            await _finish([*tasks, *self.runtime.kills, *(self.nodes.tasks() if self.nodes else [])])
            if self.nodes is not None:  # (a reboot's process started as its task was cancelled)
                self.nodes.release()
            await self.traffic.stop()
            if self.telemetry is not None:
                await self.telemetry.stop()
            await self.runtime.reap([*self.pods, *self._future()])
            if self.folder is not None:
                self.folder.cleanup()
        if self.nodes is not None:
            self.monitor.dead_hosts = self.nodes.dead_hosts
        loads = [*self.traffic.loads.items(), *(i for sp in self.runtime.services for i in sp.loads.items())]
        self.headroom = judge(
            self.monitor,
            self.scale,
            self.nofile,
            self.planned,
            {name: res.failed.get("lab", 0) for name, res in loads},
            {name: res.behind_s for name, res in self.traffic.loads.items()},
        )
        deployments = {name: c.deployment for name, c in self.controllers.items()}
        return rec.result(
            self.scenario,
            duration_s,
            self.pods,
            self.clock.events,
            self.traffic,
            deployments,
            self.runtime.services,
            self.clock.wall_t0,
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


class Stopped(BaseException):
    """The lab was stopped by a signal (SIGINT, SIGTERM or SIGHUP), its children stopped and its
    files removed. A BaseException, as KeyboardInterrupt: raised by a signal handler wherever
    the program is (stopping_on_signals), it must not be taken by an ``except Exception`` on its
    way out for an error of that code's own."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


@contextlib.contextmanager
def stopping_on_signals() -> Iterator[None]:
    """For a program around a run (the CLI): a stop signal ends it wherever it is, with the
    signal's 128 + n however early or late it comes (not by the signal's default action, as
    before the run starts or after it ended): SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP
    Stopped. During the run the lab notes them itself (``_until_stopped``).

    Python drops what a signal handler raises while a finalizer or a weakref callback runs (seen
    as the comparison imported numpy.random: "Exception ignored in: WeakSet._remove", and the
    command went on to exit 0): each signal is also noted, and raised again as the block ends if
    it was lost on the way. Main thread only."""
    got: list[int] = []

    def stop(signum: int, frame: object) -> None:
        got.append(signum)
        raise _stopped(signum)

    before: dict[signal.Signals, Any] = {}
    try:
        for s in STOP_SIGNALS:
            before[s] = signal.signal(s, stop)
        yield
    except (KeyboardInterrupt, Stopped):
        raise
    except BaseException as e:  # (an error, or typer.Exit) after a signal whose raise was dropped
        if got:
            raise _stopped(got[0]) from e
        raise
    else:
        if got:
            raise _stopped(got[0])
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def _stopped(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Stopped(signum)


@contextlib.contextmanager
def _noting(signals: tuple[signal.Signals, ...], note: Callable[[int], None]) -> Iterator[None]:
    """``note`` as these signals' handler, the handlers before put back after; in the main
    thread only (elsewhere: nothing, signals go to the main thread).

    A Python handler, not the event loop's (loop.add_signal_handler): Python runs it as soon as
    the main thread runs again, whatever it runs, so a signal is never lost. The loop's own
    handler runs later, as a callback, and a signal that came while the loop was no longer
    running callbacks — the run's last synchronous steps, before its handlers were removed —
    was dropped: SIGTERM as the lab finished its run left it to exit 0. The loop is woken for
    it through a wakeup fd of its own (a signal that comes just before the loop waits would
    otherwise wait with it). ``note`` runs between any two bytecodes: it must only note."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    wake, woken = socket.socketpair()
    before_fd: int | None = None
    before: dict[signal.Signals, Any] = {}
    try:
        wake.setblocking(False)
        woken.setblocking(False)
        loop.add_reader(woken.fileno(), _drain, woken)
        before_fd = signal.set_wakeup_fd(wake.fileno(), warn_on_full_buffer=False)
        for s in signals:
            before[s] = signal.signal(s, lambda signum, frame: note(signum))
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        if before_fd is not None:
            signal.set_wakeup_fd(before_fd)
        loop.remove_reader(woken.fileno())
        wake.close()
        woken.close()


def _drain(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while sock.recv(4096):
            pass


async def _until_stopped(lab: Lab, seconds: float) -> Result:
    """``lab.run``, stopped by any of ``STOP_SIGNALS``: the run is cancelled and cleans up, then
    Stopped. A signal during the last clean-up waits for its end (nothing cuts it short: an
    Envoy or Prometheus not stopped, the run's folder left behind).

    Ctrl-C is handled here as SIGTERM is, not by asyncio.run's own SIGINT handler: that one
    cancels the run once, and Python 3.11's asyncio.wait_for loses a cancellation that comes as
    what it waits for completes (a pre-started app saying it is loaded), after which the lab
    ran on to its end; a second Ctrl-C raised KeyboardInterrupt wherever the loop was, the
    clean-up included. Here the cancellation is sent again until the clean-up has begun, and
    further signals are only noted."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    got: list[int] = []
    cancels = [0]  # ours, taken back (uncancel) once handled: asyncio.run counts what is left

    def cancel_until_cleaning() -> None:
        if not lab.cleaning and not main.done():
            main.cancel()
            cancels[0] += 1
            loop.call_later(RECANCEL_S, cancel_until_cleaning)

    def note(signum: int) -> None:  # in a signal handler: noted, the cancelling done by the loop
        if not got:
            got.append(signum)
            lab.stop_signal = signum
            loop.call_soon_threadsafe(cancel_until_cleaning)

    with _noting(STOP_SIGNALS, note):
        try:
            result = await lab.run(seconds)
        except asyncio.CancelledError:
            if got:
                raise Stopped(got[0]) from None
            raise
        finally:
            for _ in range(cancels[0]):
                main.uncancel()
            # Any task still about (an app's load report never read, a kill that came during
            # the clean-up) is ended here, bounded: asyncio.run's close waits for them unbounded.
            await _finish([t for t in asyncio.all_tasks() if t is not main], rounds=4)
    if got:  # (a signal from here on is for the handler before ours: the CLI's raises Stopped)
        raise Stopped(got[0])
    return result


def run_lab(
    scenario: Scenario,
    duration_s: float | None = None,
    command: list[str] | None = None,
    progress: Callable[[Lab], None] | None = None,
    listen_timeout_s: float = LISTEN_TIMEOUT_S,
    workload: str | None = None,
    allow_exec: bool = False,
    command_for: list[str] | None = None,
    prometheus: Path | None = None,
    queries: Queries | None = None,
    scale: float = 1.0,
    headroom: Callable[[Headroom], None] | None = None,
) -> Result:
    """Run the scenario's workloads for real (only ``workload``, if given), ``scale`` being the
    share of its load it was scaled to (``lab.headroom.scaled``: said beside the result); a run
    whose connections this machine cannot hold is refused first, in one line naming the limit,
    and what the lab measured of itself goes to ``headroom`` at the end. A manifest's
    exec probes run on this machine, only with ``allow_exec``. ``command_for``: ``REVISION=COMMAND``
    items, a command for one revision's pods (``parse_command_for``). Raises ``Stopped`` on SIGTERM
    or SIGHUP (KeyboardInterrupt on Ctrl-C) once every child is stopped."""
    if command:
        command = found(command, "--command")
    per_revision = parse_command_for(command_for or [])
    if not scenario.workloads:
        raise InputError("the scenario has no Deployment or StatefulSet to run")
    w: Workload | None = None
    if workload is not None:
        named = [x for x in scenario.workloads if x.name == workload]
        if not named:
            known = ", ".join(x.name for x in scenario.workloads)
            raise InputError(
                f"{workload!r} is not a workload of the scenario (it has: {known})", field="--workload"
            )
        w = named[0]
    seconds = duration_s if duration_s is not None else scenario.spec.duration / 1000
    ran = [w] if w is not None else list(scenario.workloads)
    check_limits(scenario, ran, seconds, allow_exec)
    nofile = raise_nofile()  # for this process and every child it starts
    planned = check_headroom(scenario, ran, routes_to(scenario, ran), seconds, nofile, scale=scale)
    check_envoy(scenario, ran)
    lab = Lab(scenario, w, command, per_revision, prometheus, queries)
    lab.scale, lab.nofile, lab.planned = scale, nofile, planned
    lab.progress = progress
    lab.runtime.listen_timeout_s = listen_timeout_s
    try:
        result = asyncio.run(_until_stopped(lab, seconds))
        if headroom is not None and lab.headroom is not None:
            headroom(lab.headroom)
        return result
    except Stopped as e:
        if e.signum == signal.SIGINT:  # Ctrl-C, as Python reports it
            raise KeyboardInterrupt from None
        raise
