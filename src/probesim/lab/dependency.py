"""The scenario's dependencies, served for real on 127.0.0.1 while the lab runs: each answers
after its latency (log-normal around it, seeded), turns calls beyond its capacity away with 503,
refuses connections or hangs during its outages, and applies its faults — a delay for a share of
calls, an abort with a status for a share — which Istio would apply in the caller's sidecar; from
the calling app the two look the same (docs/fidelity.md)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import re
import time

from aiohttp import web

from probesim.lab.port import HOST, Port
from probesim.model.scenario import AbortFault, DelayFault, Dependency


def env_name(dependency: str) -> str:
    """The variable a --command finds a dependency's URL in: httpbin → HTTPBIN_URL."""
    return re.sub(r"[^A-Za-z0-9]", "_", dependency).upper() + "_URL"


class DependencyServer:
    def __init__(self, name: str, spec: Dependency, seed: int) -> None:
        self.name = name
        self.spec = spec
        self.zero = time.monotonic()  # the scenario's t0 on the monotonic clock (begin)
        self.rng = random.Random(f"{seed}:{name}")
        self.inflight = 0
        self.calls = 0
        self.port = Port(0)
        self.runner: web.AppRunner | None = None
        self.task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port.number}/"

    def _outage(self, now: float) -> tuple[str, float] | None:
        t = (now - self.zero) * 1000
        for o in self.spec.outages:
            if o.at <= t < o.at + o.for_:
                return o.mode, self.zero + (o.at + o.for_) / 1000
        return None

    def _latency_s(self) -> float:
        """Log-normal with the given mean and ``variability`` as its sigma."""
        s = self.spec.variability
        return self.spec.latency / 1000 * math.exp(self.rng.gauss(0.0, s) - s * s / 2)

    async def handle(self, request: web.Request) -> web.Response:
        self.calls += 1
        for f in self.spec.faults:  # the caller's sidecar: delay, then maybe abort
            if isinstance(f, DelayFault) and self.rng.random() * 100 < f.percent:
                await asyncio.sleep(f.delay / 1000)
        for f in self.spec.faults:
            if isinstance(f, AbortFault) and self.rng.random() * 100 < f.percent:
                return web.Response(status=f.abort, text="fault filter abort")
        outage = self._outage(time.monotonic())
        if outage is not None and outage[0] == "hang":
            await asyncio.sleep(max(outage[1] - time.monotonic(), 0.0))
        if self.spec.capacity is not None and self.inflight >= self.spec.capacity:
            return web.Response(status=503, text="over capacity\n")
        self.inflight += 1
        try:
            await asyncio.sleep(self._latency_s())
        finally:
            self.inflight -= 1
        return web.Response(text=f"{self.name} OK\n")

    async def _listen(self, on: bool) -> None:
        assert self.runner is not None
        await self.port.serve(self.runner, on)

    async def _keep(self) -> None:
        """Listening except during 'refuse' outages, switched on their edges."""
        edges = sorted(
            {
                self.zero + t / 1000
                for o in self.spec.outages
                if o.mode == "refuse"
                for t in (o.at, o.at + o.for_)
            }
        )
        while True:
            now = time.monotonic()
            outage = self._outage(now)
            await self._listen(outage is None or outage[0] != "refuse")
            edge = next((e for e in edges if e > now), None)
            await asyncio.sleep(0.5 if edge is None else max(edge - now, 0.0))

    async def start(self) -> None:
        """Serving, before the scenario's clock starts (see ``begin``)."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self.runner.setup()
        await self._listen(True)

    def begin(self, zero: float) -> None:
        """The scenario's clock starts: outages and their edges count from ``zero``."""
        self.zero = zero
        self.task = asyncio.create_task(self._keep())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        if self.runner is not None:
            await self.runner.cleanup()
        self.port.close()
