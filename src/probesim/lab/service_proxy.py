"""kube-proxy for the calls the lab's apps make to a Service (``calls: [{service: …}]``): a
TCP address on 127.0.0.1 per Service called, each new connection sent to the next of the
Service's endpoints at that moment (the status manager's, round robin) and its bytes relayed
both ways. With no endpoint the connection is reset at once, as kube-proxy's REJECT rule
refuses it; a pod that refuses resets it too. The apps open a connection per call, so each call
is balanced on its own (docs/fidelity.md).

Each call is also counted as the simulation counts its call route (``calls:<service><path>``):
the answer's status from the first bytes the pod sends back, the time to them, and what became
of those without one (no endpoint, refused, reset by the pod, or given up by the caller)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable

from probesim.lab.load import LoadResult, cause_of, refused_by
from probesim.lab.port import BACKLOG, HOST
from probesim.model.scenario import Scenario, call_name, service_calls

CONNECT_TIMEOUT_S = 30.0  # a pod that never answers the SYN: the caller's own timeout comes first
CHUNK = 65536
REQUEST_LINE = re.compile(rb"^[A-Z]+ (\S+) HTTP/")
STATUS_LINE = re.compile(rb"^HTTP/\d\.\d (\d{3})")


def env_names(service: str) -> tuple[str, str]:
    """The variables a container finds a Service's address in, as the kubelet sets them:
    backend → BACKEND_SERVICE_HOST, BACKEND_SERVICE_PORT."""
    base = re.sub(r"[^A-Za-z0-9]", "_", service).upper()
    return f"{base}_SERVICE_HOST", f"{base}_SERVICE_PORT"


def call_names(scenario: Scenario, service: str) -> dict[str, str]:
    """Per path of ``service`` that the pods call, the call route the simulation counts it in;
    a path called with several ports or client timeouts (several routes) is left out."""
    calls = [c for c in service_calls(scenario.container_behaviors()).values() if c.service == service]
    paths = [c.path for c in calls]
    return {c.path: call_name(c) for c in calls if paths.count(c.path) == 1}


class ServiceProxy:
    def __init__(
        self, service: str, endpoints: Callable[[], list[tuple[str, int]]], names: dict[str, str]
    ) -> None:
        """``names``: per path called, the call route it is counted in (paths not named are
        relayed, not counted)."""
        self.service = service
        self.endpoints = endpoints
        self.names = names
        self.loads: dict[str, LoadResult] = {name: LoadResult() for name in names.values()}
        self.cursor = 0
        self.server: asyncio.Server | None = None
        self.port = 0
        self.open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._relay, HOST, 0, backlog=BACKLOG)
        self.port = self.server.sockets[0].getsockname()[1]

    def _load(self, request: bytes) -> LoadResult:
        m = REQUEST_LINE.match(request)
        path = m.group(1).decode(errors="replace").split("?", 1)[0] if m else ""
        name = self.names.get(path)
        return self.loads[name] if name is not None else LoadResult()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        began = time.monotonic()
        self.open.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            request = await reader.read(CHUNK)  # the caller sends it at once, or gives up
            res = self._load(request)
            res.sent += 1
            eps = self.endpoints()
            if not eps or not request:
                res.failed["no_endpoint" if not eps else "timeout"] += 1
                writer.transport.abort()
                return
            host, port = eps[self.cursor % len(eps)]
            self.cursor += 1
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port), CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError) as e:
                res.failed[refused_by(e.errno if isinstance(e, OSError) else None, False)] += 1
                writer.transport.abort()
                return
            upstream = up_writer
            self.open.add(up_writer)
            up_writer.write(request)
            forward = asyncio.create_task(_pipe(reader, up_writer))
            first = await _answer(up_reader, forward)
            if first is None:  # no answer: the caller gave up first, or the pod reset it
                res.failed["timeout" if forward.done() else "killed"] += 1
                forward.cancel()
                return
            m = STATUS_LINE.match(first)
            status = int(m.group(1)) if m else 0
            res.latency_us.record_value(max(1, min(round((time.monotonic() - began) * 1e6), 600_000_000)))
            res.statuses[status] += 1
            if 200 <= status < 400:
                res.ok += 1
            else:
                res.failed[cause_of(status, first.split(b"\r\n\r\n", 1)[-1])] += 1
            writer.write(first)
            await asyncio.gather(forward, _pipe(up_reader, writer), return_exceptions=True)
        except (OSError, ConnectionError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    self.open.discard(w)
                    w.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        for w in list(self.open):
            w.transport.abort()
        if self.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2.0)


async def _answer(up: asyncio.StreamReader, forward: asyncio.Task[None]) -> bytes | None:
    """The pod's first bytes, or None when the pod closed without any or the caller's side
    ended first (``forward`` done: it gave up)."""
    read = asyncio.ensure_future(up.read(CHUNK))
    try:
        await asyncio.wait({read, forward}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        read.cancel()
        raise
    if not read.done():
        read.cancel()
        return None
    try:
        chunk = read.result()
    except (OSError, ConnectionError):
        return None
    return chunk or None


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """Bytes from ``src`` to ``dst`` until either side ends; the end passed on."""
    try:
        while chunk := await src.read(CHUNK):
            dst.write(chunk)
            await dst.drain()
        if dst.can_write_eof():
            dst.write_eof()
    except (OSError, ConnectionError):
        dst.transport.abort()
