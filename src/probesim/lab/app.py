"""``probesim app``: an HTTP server that acts out a container's scripted behaviour for real —
start delay, hangs and deadlocks (with or without accepting connections), crashes, error
windows, status per path, request costs (CPU and waiting) with a bounded worker pool, and
shutdown on SIGTERM — so the lab can probe it as the kubelet would.

With a metrics port (``--metrics-port``, $METRICS_PORT) it also serves ``/metrics`` there: an
HTTP server histogram per route under OpenTelemetry's stable name,
``http_server_request_duration_seconds{http_request_method, http_route,
http_response_status_code}`` with its advisory buckets (reference/telemetry.md §5.2), each
request timed from its arrival to its answer (hangs and queueing included). The metrics port is
served by a thread of its own and answers also while the app hangs, refuses or is busy, as a
metrics thread of a real app would.

It binds only to 127.0.0.1. Times are measured from the container's start (``after``) or from
the scenario's start (``at``); run by hand, both are the process's start.
With ``PROBESIM_CONTROL_FD`` (the lab's way) it is started ahead of its container, loads, and
waits for the lab to hand it the scenario's t0 and a listening socket at the container's start,
so that Python's own start-up time is not taken for the scenario's.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from probesim.lab.calls import Calls
from probesim.lab.collector import hold_back
from probesim.lab.port import HOST, Port
from probesim.model.scenario import ContainerBehavior, Crash, Deadlock, Errors, Hang, generic

# Listening starts and stops, and crashes happen, this much before their time: at an edge the new
# state holds, as in the simulation's steps, even for a probe landing on the edge itself while
# this process's timer fires late (by tens of ms on a busy machine: 10 ms proved too little).
LEAD_S = 0.05
# OpenTelemetry's advisory bucket boundaries for http.server.request.duration (seconds).
OTEL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


@dataclass(frozen=True)
class Window:
    begin: float  # seconds on the process clock
    end: float  # inf: never ends


class CpuQuota:
    """The CPU a container uses, kept by the process itself (the lab runs no cgroup): each
    request costs its scripted CPU in all, and with a CPU limit the CFS quota holds: in each
    100 ms period the process may use ``cores`` × 100 ms of CPU, and once that is used the whole
    process stops until the next period — requests, probes and all, as a throttled container
    does. Without a limit, or with one of a core or more (the app works on one core), CPU is
    used as it comes.

    Every CPU second the process uses counts, as the kernel counts a cgroup's: what it used
    outside the requests' own work since the last look (parsing requests, the event loop, the
    metrics thread) is charged to the quota and taken off the request being worked on, so that
    the framework's overhead does not make a request dearer than its script (a request's 40 ms
    would cost some 41 ms, 2 % more demand: enough to tip an overload the simulation is scripted
    to hold). At most ``SLICE_S`` of it is taken at one look, so that what an idle process used
    over minutes does not make one request free.

    With a limit and a ``stat`` file, it counts as the kernel's cgroup ``cpu.stat`` does and
    writes the counts there (cAdvisor's source): ``nr_periods`` (periods in which it used CPU),
    ``nr_throttled`` (those in which it used up its quota) and ``throttled_usec`` (time stopped
    for it), rewritten whole as each period ends."""

    PERIOD_S = 0.1
    SLICE_S = 0.002  # CPU spent between two looks at the quota

    def __init__(self, cores: float | None, stat: Path | None = None) -> None:
        self.cores = cores if cores is not None and cores < 1 else None
        self.stat = stat if cores is not None else None  # no quota, no CFS periods
        self.period = -1.0
        self.used = 0.0
        self.nr_periods = 0
        self.nr_throttled = 0
        self.throttled_s = 0.0
        self.throttled_now = False  # in this period
        self.mark = time.process_time()  # the process's CPU at the last look

    def _at(self, now: float) -> float:
        """The period ``now`` falls in, counted when new."""
        period = math.floor(now / self.PERIOD_S) * self.PERIOD_S
        if period != self.period:
            if self.stat is not None and self.period >= 0:
                self._write()
            self.period, self.used, self.throttled_now = period, 0.0, False
            self.nr_periods += 1
        return period

    def _write(self) -> None:
        assert self.stat is not None
        text = (
            f"nr_periods {self.nr_periods}\nnr_throttled {self.nr_throttled}\n"
            f"throttled_usec {round(self.throttled_s * 1e6)}\n"
        )
        tmp = self.stat.with_suffix(".tmp")
        with contextlib.suppress(OSError):  # the lab gone: nobody reads it
            tmp.write_text(text)
            os.replace(tmp, self.stat)

    def _charge(self, cap: float) -> float:
        """The process's CPU since the last look (at most ``cap``), charged to this period."""
        cpu = time.process_time()
        used = min(max(cpu - self.mark, 0.0), cap)
        self.mark = cpu
        self.used += used
        return used

    async def spend(self, seconds: float, shared: bool = False) -> None:
        """Work ``seconds`` of CPU for one request, a slice at a time. ``shared``: the app's
        worker pool holds it, and the requests its workers hold share the CPU as threads do —
        it yields to the event loop after each slice, which meanwhile answers what needs no
        worker and lets the next worker run. Otherwise (an async app) the work holds the event
        loop, as CPU-bound code in a handler does."""
        left = seconds
        while True:
            now = time.monotonic()
            period = self._at(now)
            left -= self._charge(self.SLICE_S)  # the framework's, since the last look
            if left <= 0:
                return
            room = math.inf if self.cores is None else self.cores * self.PERIOD_S - self.used
            if room <= 0:
                if not self.throttled_now:
                    self.nr_throttled += 1
                    self.throttled_now = True
                wait = period + self.PERIOD_S - now
                self.throttled_s += wait
                time.sleep(wait)  # all of it waits: a blocking sleep
                continue
            _spin(min(left, room, self.SLICE_S))
            left -= self._charge(math.inf)  # this slice's own
            if left > 0 and shared:
                await asyncio.sleep(0)


def _spin(seconds: float) -> None:
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


class App:
    def __init__(
        self,
        behavior: ContainerBehavior,
        port: int,
        zero: float | None = None,
        started: float | None = None,
        grpc_port: int | None = None,
        dependencies: dict[str, str] | None = None,
        metrics_port: int | None = None,
        cpu_limit: float | None = None,
        cpu_stat: Path | None = None,
        probe_paths: frozenset[str] = frozenset(),
    ) -> None:
        """``dependencies``: each dependency's URL; ``metrics_port``: where /metrics is served;
        ``cpu_limit``: the container's CPU limit in cores (the app holds itself to it);
        ``cpu_stat``: where to write its CFS counts (CpuQuota); ``probe_paths``: the paths its
        HTTP probes get (they wait for a worker as ``capacity.probes`` says).
        ``started`` and ``zero`` (the container's
        start and the scenario's t0) are on the system-wide monotonic clock the lab reads too; by
        default, when the process started."""
        self.b = behavior
        self.port = port
        self.grpc_port = grpc_port
        self.dependencies = Calls(dependencies or {})
        self.served: dict[str, int] = {}  # per path with an error share: requests that reached it
        self.quota = CpuQuota(cpu_limit, cpu_stat)
        self.idling: asyncio.Task[None] | None = None  # spending idleCpu
        self.grpc: Any = None  # the gRPC server while listening
        self.started = started if started is not None else time.monotonic() - process_age()
        self.scenario_zero = zero if zero is not None else self.started
        self.hangs: list[tuple[Window, bool]] = []
        self.errors: list[tuple[Window, int, tuple[str, ...] | None]] = []
        self.crashes: list[tuple[float, int]] = []
        for ep in behavior.episodes:
            base = self.started if ep.after is not None else self.scenario_zero
            begin = base + (ep.after if ep.after is not None else ep.at or 0) / 1000
            if isinstance(ep, Hang):
                self.hangs.append((Window(begin, begin + ep.for_ / 1000), ep.accepts_tcp))
            elif isinstance(ep, Deadlock) and (ep.after is not None or self.started < begin - LEAD_S):
                # A clock-anchored deadlock holds only the process running then: its restart,
                # started up to LEAD_S early, answers (as simulated).
                self.hangs.append((Window(begin, float("inf")), ep.accepts_tcp))
            elif isinstance(ep, Errors):
                end = begin + ep.for_ / 1000 if ep.for_ is not None else float("inf")
                self.errors.append((Window(begin, end), ep.status, ep.paths))
            elif isinstance(ep, Crash) and (ep.after is not None or self.started < begin - LEAD_S):
                # A clock-anchored crash hits only an instance started before it, as simulated;
                # the one restarted for it starts up to LEAD_S early, and is spared.
                self.crashes.append((begin, ep.exit_code))
        workers = behavior.capacity.workers
        self.slots = asyncio.Semaphore(workers) if workers else None
        self.queue_limit = behavior.capacity.queue
        self.probe_paths = probe_paths
        self.waiting = 0
        self.runner: web.AppRunner | None = None
        self.port_: Port | None = None  # the HTTP port: served, or held bound while refusing
        self.metrics_port = metrics_port
        self.registry: Any = None
        self.duration: Any = None
        if metrics_port is not None:
            from prometheus_client import CollectorRegistry, Histogram

            self.registry = CollectorRegistry()
            self.duration = Histogram(
                "http_server_request_duration_seconds", "Duration of HTTP server requests.",
                ["http_request_method", "http_route", "http_response_status_code"],
                buckets=OTEL_BUCKETS, registry=self.registry,
            )  # fmt: skip

    # -- what the app does at a given moment -----------------------------------------------------

    def _edges(self) -> list[float]:
        """When listening or living changes: the start's end, hangs' ends, crashes."""
        out = [self.started + self.b.start / 1000]
        for w, _ in self.hangs:
            out += [w.begin, w.end]
        out += [t for t, _ in self.crashes]
        return [e for e in out if e != float("inf")]

    def _hang_end(self, now: float) -> float | None:
        ends = [w.end for w, _ in self.hangs if w.begin <= now < w.end]
        return max(ends) if ends else None

    def _refusing(self, now: float) -> bool:
        starting = now < self.started + self.b.start / 1000 and not self.b.starting_status
        return starting or any(w.begin <= now < w.end and not accepts for w, accepts in self.hangs)

    def status_for(self, path: str, now: float) -> int:
        """The answer to ``path`` (also 'grpc' / 'grpc:<service>', as the simulation keys them)."""
        if now < self.started + self.b.start / 1000 and self.b.starting_status:
            return self.b.starting_status
        shared = generic(path)
        for w, status, paths in self.errors:
            if w.begin <= now < w.end and (paths is None or path in paths or shared in paths):
                return status
        default = 302 if path in self.b.redirects else 200
        return self.b.paths.get(path, self.b.paths.get(shared, default))

    async def handle(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        end = self._hang_end(now)
        if end is not None:
            await asyncio.sleep(min(end, now + 3600) - now)  # hung: no answer until it ends
        path = request.path
        probe = path in self.probe_paths
        # With a worker pool every request waits for a worker, a probe too (probes: shared):
        # behind the queue, as a thread pool serves /healthz; a probe served apart (separate)
        # skips it. A probe is never refused for a full queue and is not counted in it (the
        # simulation's probes wait and add no load).
        slots = None if probe and self.b.capacity.probes == "separate" else self.slots
        if slots is not None and not probe:
            if slots.locked() and self.queue_limit is not None and self.waiting >= self.queue_limit:
                return web.Response(status=503, text="overloaded\n")
            self.waiting += 1
            try:
                await slots.acquire()
            finally:
                self.waiting -= 1
        elif slots is not None:
            await slots.acquire()
        try:
            failed_call = await self._work(path)
        finally:
            if slots is not None:
                slots.release()
        status = failed_call if failed_call is not None else self.status_for(path, time.monotonic())
        if 300 <= status < 400 and path in self.b.redirects:
            return web.Response(status=status, headers={"Location": self.b.redirects[path]})
        return web.Response(status=status, text=f"{status}\n")

    async def _work(self, path: str) -> int | None:
        """What ``path`` costs (``routes``): its wait, its CPU, its calls one after another;
        the status a failed call or the route's error share answers, None for the path's own."""
        cost = self.b.routes.get(path) or self.b.routes.get("*")
        if cost is None:
            return None
        if cost.wall:
            await asyncio.sleep(cost.wall / 1000)
        if cost.cpu:
            await self.quota.spend(cost.cpu / 1000, shared=self.slots is not None)
        for call in cost.calls:
            if not await self.dependencies.call(call):
                return call.on_error
        if cost.errors is not None and self._fails(path, cost.errors.percent):
            return cost.errors.status
        return None

    async def _idle(self) -> None:
        """The app's own CPU besides requests (``idleCpu``), spent a slice each quota period,
        within its quota."""
        share = self.b.idle_cpu / 1000 * CpuQuota.PERIOD_S
        while True:
            await self.quota.spend(share, shared=self.slots is not None)
            await asyncio.sleep(max(CpuQuota.PERIOD_S - share, 0.0))

    def _fails(self, path: str, percent: float) -> bool:
        """Whether this request of ``path`` is one of its error share: the n-th fails when
        n × share crosses a whole number, so that every count of requests holds the share to
        within one (a short run shows the share it was given; which ones fail is immaterial)."""
        n = self.served.get(path, 0)
        self.served[path] = n + 1
        return math.floor((n + 1) * percent / 100) > math.floor(n * percent / 100)

    async def observed(self, request: web.Request) -> web.Response:
        """``handle``, timed into the request histogram (when there is one)."""
        began = time.monotonic()
        response = await self.handle(request)
        if self.duration is not None:
            labels = (request.method, request.path, str(response.status))
            self.duration.labels(*labels).observe(time.monotonic() - began)
        return response

    def _serve_metrics(self) -> None:
        """/metrics on the metrics port, from a thread of its own (prometheus_client's server),
        as a real app's: it answers while the app's loop is busy with requests, hung or
        throttled, so that Prometheus's scrapes do not miss the busiest moments."""
        if self.metrics_port is None:
            return
        from prometheus_client import start_http_server

        start_http_server(self.metrics_port, addr=HOST, registry=self.registry)

    async def health_status(self, service: str = "") -> str:
        """The gRPC health answer: the check behaves as an HTTP path named ``grpc:<service>``,
        else ``grpc`` (as the simulation has it): it waits out a hang, then is SERVING unless
        that path answers >= 400."""
        now = time.monotonic()
        end = self._hang_end(now)
        if end is not None:
            await asyncio.sleep(min(end, now + 3600) - now)
        key = f"grpc:{service}" if service else "grpc"
        return "SERVING" if self.status_for(key, time.monotonic()) < 400 else "NOT_SERVING"

    async def _grpc_listen(self, on: bool) -> None:
        """gRPC health (grpc.health.v1) on its own port, listening when the HTTP port does."""
        if self.grpc_port is None or on == (self.grpc is not None):
            return
        if not on:
            server, self.grpc = self.grpc, None
            await server.stop(None)
            return
        from grpc import aio  # loaded before the container starts (serve), as the rest
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        app = self

        class Health(health_pb2_grpc.HealthServicer):  # type: ignore[misc]
            async def Check(self, request: Any, context: Any) -> Any:
                status = await app.health_status(request.service)
                return health_pb2.HealthCheckResponse(
                    status=health_pb2.HealthCheckResponse.ServingStatus.Value(status)
                )

        self.grpc = aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(Health(), self.grpc)
        self.grpc.add_insecure_port(f"{HOST}:{self.grpc_port}")
        await self.grpc.start()

    # -- serving, listening on and off, crashing, shutting down ----------------------------------

    async def _listen(self, on: bool) -> None:
        if self.port_ is None:
            self.port_ = Port(self.port)
        assert self.runner is not None
        await self.port_.serve(self.runner, on)

    async def run(self) -> None:
        server = web.Application()
        server.router.add_route("*", "/{tail:.*}", self.observed)
        self._serve_metrics()
        # the drain is the behaviour's `shutdown`, slept before; then in-flight requests are dropped
        self.runner = web.AppRunner(server, handle_signals=False, access_log=None, shutdown_timeout=0.1)
        await self.runner.setup()
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        def on_term(signum: int, frame: object) -> None:
            # The exit is due `shutdown` after SIGTERM, as simulated, whatever the loop is busy
            # with: a loop held by a request's CPU work (an async app's) reaches its callbacks
            # only once that work is done, seconds late; so a timer ends it, not the loop.
            if not self.b.ignores_sigterm:
                left = self.b.shutdown / 1000 - LEAD_S
                if left <= 0:
                    os._exit(0)
                timer = threading.Timer(left, os._exit, (0,))
                timer.daemon = True
                timer.start()
            loop.call_soon_threadsafe(stop.set)  # the drain (no new connections) meanwhile

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)
        crash_at = min(self.crashes, default=None)
        edges = sorted(self._edges())
        self.idling = asyncio.create_task(self._idle()) if self.b.idle_cpu else None
        while not stop.is_set():
            now = time.monotonic() + LEAD_S
            if crash_at is not None and now >= crash_at[0]:
                os._exit(crash_at[1])
            await self._listen(not self._refusing(now))
            await self._grpc_listen(not self._refusing(now))
            edge = next((e for e in edges if e > now), now + 0.5)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=edge - now)
        if not self.b.ignores_sigterm:
            # Draining, as the simulation's killed container: no new connection is accepted and
            # kept-alive ones close once their request is done; in-flight requests get
            # `shutdown` to finish.
            await self._listen(False)
            handlers = self.runner.server
            for handler in handlers.connections if handlers is not None else []:
                handler.close()
            # Then it exits at once when the timer set at SIGTERM fires (LEAD_S early, like every
            # edge), dropping what is still in flight: a clean-up that waits on hung calls would
            # make the restart late.
            while True:
                await asyncio.sleep(3600)
        while True:  # ignores SIGTERM: only SIGKILL ends it
            await asyncio.sleep(3600)


def process_age() -> float:
    """Seconds since this process was started (from /proc; 0 where there is none)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime, in ticks
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(uptime - ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return 0.0


def wait_for_go(control: socket.socket) -> tuple[float, float, socket.socket] | None:
    """A pre-started container: say it is loaded, then wait for the lab's go — the scenario's
    t0 and the listening socket, handed over (SCM_RIGHTS) at the container's start. None when
    the lab went away first."""
    with control:
        control.sendall(b"r")
        msg, fds, _, _ = socket.recv_fds(control, 256, 1)
    if not msg or not fds:
        return None
    zero, started = (float(x) for x in msg.decode().split())
    return zero, started, socket.socket(fileno=fds[0])


def serve(
    behavior: ContainerBehavior,
    port: int,
    grpc_port: int | None = None,
    dependencies: dict[str, str] | None = None,
    metrics_port: int | None = None,
    cpu_limit: float | None = None,
    cpu_stat_dir: Path | None = None,
    probe_paths: frozenset[str] = frozenset(),
) -> None:
    """Serve until stopped; with ``cpu_stat_dir``, the CFS counts go to its file named by this
    process's PID (where the lab's cAdvisor looks)."""
    stat = cpu_stat_dir / str(os.getpid()) if cpu_stat_dir is not None else None
    if grpc_port is not None:  # import now, not at the start edge (it takes a good 100 ms)
        import grpc.aio  # noqa: F401
        import grpc_health.v1.health_pb2_grpc  # noqa: F401
    control = os.environ.get("PROBESIM_CONTROL_FD")
    hold_back()  # loaded: what is loaded stays out of every collection (lab.collector)
    if control is not None:
        go = wait_for_go(socket.socket(fileno=int(control)))
        if go is None:
            return
        app = App(
            behavior, port, go[0], go[1], grpc_port, dependencies, metrics_port, cpu_limit, stat, probe_paths
        )
        app.port_ = Port(port, go[2])
    else:
        app = App(behavior, port, grpc_port=grpc_port, dependencies=dependencies, metrics_port=metrics_port,
                  cpu_limit=cpu_limit, cpu_stat=stat, probe_paths=probe_paths)  # fmt: skip
    asyncio.run(app.run())
