"""``probesim app``: an HTTP server that acts out a container's scripted behaviour for real —
start delay, hangs and deadlocks (with or without accepting connections), crashes, error
windows, status per path, request costs (CPU and waiting) with a bounded worker pool, and
shutdown on SIGTERM — so the lab can probe it as the kubelet would.

It binds only to 127.0.0.1. Times are measured from the process start (``after``) or from
``PROBESIM_T0`` (``at``; Unix seconds when the scenario started, default: the process start).
With ``PROBESIM_LISTEN_FD`` it serves first on that inherited listening socket, opened by the lab
when the container starts, so that Python's own start-up time is not taken for the scenario's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import time
from dataclasses import dataclass

from aiohttp import web

from probesim.model.scenario import ContainerBehavior, Crash, Deadlock, Errors, Hang

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Window:
    begin: float  # seconds on the process clock
    end: float  # inf: never ends


class App:
    def __init__(self, behavior: ContainerBehavior, port: int, t0: float | None = None) -> None:
        self.b = behavior
        self.port = port
        wall_now = time.time()
        # Ages count from when the process was started, not from when Python got here.
        self.started = time.monotonic() - process_age()
        # Scenario time 0 on the process clock.
        self.scenario_zero = self.started - (wall_now - t0) if t0 is not None else self.started
        self.hangs: list[tuple[Window, bool]] = []
        self.errors: list[tuple[Window, int, tuple[str, ...] | None]] = []
        self.crashes: list[tuple[float, int]] = []
        for ep in behavior.episodes:
            base = self.started if ep.after is not None else self.scenario_zero
            begin = base + (ep.after if ep.after is not None else ep.at or 0) / 1000
            if isinstance(ep, Hang):
                self.hangs.append((Window(begin, begin + ep.for_ / 1000), ep.accepts_tcp))
            elif isinstance(ep, Deadlock):
                self.hangs.append((Window(begin, float("inf")), ep.accepts_tcp))
            elif isinstance(ep, Errors):
                end = begin + ep.for_ / 1000 if ep.for_ is not None else float("inf")
                self.errors.append((Window(begin, end), ep.status, ep.paths))
            elif isinstance(ep, Crash):
                self.crashes.append((begin, ep.exit_code))
        workers = behavior.capacity.workers
        self.slots = asyncio.Semaphore(workers) if workers else None
        self.queue_limit = behavior.capacity.queue
        self.waiting = 0
        self.runner: web.AppRunner | None = None
        self.site: web.BaseSite | None = None
        self.inherited: socket.socket | None = None

    # -- what the app does at a given moment -----------------------------------------------------

    def _hang_end(self, now: float) -> float | None:
        ends = [w.end for w, _ in self.hangs if w.begin <= now < w.end]
        return max(ends) if ends else None

    def _refusing(self, now: float) -> bool:
        starting = now < self.started + self.b.start / 1000 and not self.b.starting_status
        return starting or any(w.begin <= now < w.end and not accepts for w, accepts in self.hangs)

    def status_for(self, path: str, now: float) -> int:
        if now < self.started + self.b.start / 1000 and self.b.starting_status:
            return self.b.starting_status
        for w, status, paths in self.errors:
            if w.begin <= now < w.end and (paths is None or path in paths):
                return status
        return self.b.paths.get(path, 200)

    async def handle(self, request: web.Request) -> web.Response:
        now = time.monotonic()
        end = self._hang_end(now)
        if end is not None:
            await asyncio.sleep(min(end, now + 3600) - now)  # hung: no answer until it ends
        path = request.path
        cost = self.b.routes.get(path) or self.b.routes.get("*")
        if cost is not None and (cost.cpu or cost.wall):
            full = self.queue_limit is not None and self.waiting >= self.queue_limit
            if self.slots is not None and self.slots.locked() and full:
                return web.Response(status=503, text="overloaded\n")
            self.waiting += 1
            try:
                if self.slots is not None:
                    await self.slots.acquire()
            finally:
                self.waiting -= 1
            try:
                await asyncio.sleep(cost.wall / 1000)
                spin_until = time.process_time() + cost.cpu / 1000
                while time.process_time() < spin_until:
                    pass
            finally:
                if self.slots is not None:
                    self.slots.release()
        status = self.status_for(path, time.monotonic())
        return web.Response(status=status, text=f"{status}\n")

    # -- serving, listening on and off, crashing, shutting down ----------------------------------

    async def _listen(self, on: bool) -> None:
        if on and self.site is None:
            assert self.runner is not None
            if self.inherited is not None:
                self.site = web.SockSite(self.runner, self.inherited)
                self.inherited = None
            else:
                self.site = web.TCPSite(self.runner, HOST, self.port, reuse_address=True)
            await self.site.start()
        elif not on and self.inherited is not None:
            self.inherited.close()  # connections waiting in its backlog are reset, as if refused
            self.inherited = None
        elif not on and self.site is not None:
            await self.site.stop()
            self.site = None

    async def run(self) -> None:
        server = web.Application()
        server.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(server, handle_signals=False, access_log=None)
        await self.runner.setup()
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        crash_at = min(self.crashes, default=None)
        while not stop.is_set():
            now = time.monotonic()
            if crash_at is not None and now >= crash_at[0]:
                os._exit(crash_at[1])
            await self._listen(not self._refusing(now))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=0.02)
        if not self.b.ignores_sigterm:
            await asyncio.sleep(self.b.shutdown / 1000)
            await self.runner.cleanup()
            return
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


def serve(behavior: ContainerBehavior, port: int) -> None:
    t0 = os.environ.get("PROBESIM_T0")
    app = App(behavior, port, float(t0) if t0 else None)
    fd = os.environ.get("PROBESIM_LISTEN_FD")
    if fd is not None:
        app.inherited = socket.socket(fileno=int(fd))
    asyncio.run(app.run())
