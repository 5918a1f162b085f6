"""The test app's client for its dependencies, as a scenario route's ``calls`` describe it: one
shared HTTP client (as the seed-004 app's one HttpClient, with no connection limit), the client
timeout per try, retries with a backoff and an optional budget, and a circuit breaker per
dependency. A call fails on a refused connection, a timeout or an answer outside 2xx."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import aiohttp

from probesim.lab.timeouts import exact
from probesim.model.scenario import CircuitBreaker, DependencyCall


@dataclass
class Breaker:
    """Closed → open after ``failures`` in a row; after ``open``, half-open: up to
    ``halfOpenCalls`` trial calls, closed again on a success, open again on a failure."""

    spec: CircuitBreaker
    failures: int = 0
    open_until: float = 0.0
    trials: int = 0

    def allow(self, now: float) -> bool:
        if self.failures < self.spec.failures:
            return True
        if now < self.open_until:
            return False
        if self.trials >= self.spec.half_open_calls:
            return False
        self.trials += 1
        return True

    def record(self, ok: bool, now: float) -> None:
        if ok:
            self.failures, self.trials = 0, 0
            return
        self.failures += 1
        if self.failures >= self.spec.failures:
            self.open_until, self.trials = now + self.spec.open / 1000, 0


class Calls:
    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls
        self.session: aiohttp.ClientSession | None = None
        self.per_call: aiohttp.ClientSession | None = None
        self.breakers: dict[str, Breaker] = {}
        self.first_tries = 0
        self.retries = 0

    def _session(self, per_call: bool) -> aiohttp.ClientSession:
        """The shared client; ``per_call``: the one for Services, a connection per call (so that
        kube-proxy balances each call, as the simulation does)."""
        if per_call:
            if self.per_call is None:
                self.per_call = aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0, force_close=True)
                )
                # aiohttp resends an idempotent request once when a fresh connection closes before
                # the answer (RFC 9112 §9.3.1 allows it for a reused one only): a refused call
                # would be two. Its own test client turns it off the same way.
                self.per_call._retry_connection = False
            return self.per_call
        if self.session is None:
            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        return self.session

    async def _try(self, url: str, timeout_ms: int | None, service: str | None) -> bool:
        timeout = exact(None if timeout_ms is None else timeout_ms / 1000)
        # A Service is called by its name, as a client in the cluster addresses it: the caller's
        # sidecar, when it has one, picks the Service's route by the Host header.
        headers = {"Host": service} if service is not None else None
        try:
            async with self._session(service is not None).get(url, timeout=timeout, headers=headers) as r:
                await r.read()
                return 200 <= r.status < 300
        except (TimeoutError, aiohttp.ClientError, OSError):
            return False

    async def call(self, c: DependencyCall) -> bool:
        """One call as the route makes it; True when it got its answer."""
        url = self.urls.get(c.target)
        if url is None:
            return False  # nothing to call: as a refused connection
        if c.service is not None:
            url = url.rstrip("/") + c.path  # the Service's address, as kube-proxy takes it
        breaker = None
        if c.circuit_breaker is not None:
            breaker = self.breakers.setdefault(c.target, Breaker(c.circuit_breaker))
            if not breaker.allow(time.monotonic()):
                return False  # open: failed at once
        ok = False
        for attempt in range(c.retries.attempts):
            if attempt == 0:
                self.first_tries += 1
            else:
                budget = c.retries.budget
                if budget is not None and self.retries + 1 > budget / 100 * self.first_tries:
                    break
                self.retries += 1
                await asyncio.sleep(c.retries.backoff / 1000)
            ok = await self._try(url, c.timeout, c.service)
            if ok:
                break
        if breaker is not None:
            breaker.record(ok, time.monotonic())
        return ok

    async def close(self) -> None:
        for session in (self.session, self.per_call):
            if session is not None:
                await session.close()
