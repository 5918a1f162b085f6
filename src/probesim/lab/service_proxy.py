"""kube-proxy for the calls the lab's apps make to a Service (``calls: [{service: …}]``): a
TCP address on 127.0.0.1 per Service called, each new connection sent to the next of the
Service's endpoints at that moment (the status manager's, round robin) and its bytes relayed
both ways. With no endpoint the connection is reset at once, as kube-proxy's REJECT rule
refuses it; a pod that refuses resets it too. The apps open a connection per call, so each call
is balanced on its own (docs/fidelity.md)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable

from probesim.lab.port import HOST

CONNECT_TIMEOUT_S = 30.0  # a pod that never answers the SYN: the caller's own timeout comes first
CHUNK = 65536


def env_names(service: str) -> tuple[str, str]:
    """The variables a container finds a Service's address in, as the kubelet sets them:
    backend → BACKEND_SERVICE_HOST, BACKEND_SERVICE_PORT."""
    base = re.sub(r"[^A-Za-z0-9]", "_", service).upper()
    return f"{base}_SERVICE_HOST", f"{base}_SERVICE_PORT"


class ServiceProxy:
    def __init__(self, service: str, endpoints: Callable[[], list[tuple[str, int]]]) -> None:
        self.service = service
        self.endpoints = endpoints
        self.cursor = 0
        self.connections = 0  # every connection the callers opened
        self.reset = 0  # those reset at once: no endpoint, or the pod refused
        self.server: asyncio.Server | None = None
        self.port = 0
        self.open: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._relay, HOST, 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open.add(writer)
        upstream: asyncio.StreamWriter | None = None
        try:
            eps = self.endpoints()
            if not eps:
                self.reset += 1
                writer.transport.abort()
                return
            host, port = eps[self.cursor % len(eps)]
            self.cursor += 1
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection(host, port), CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError):
                self.reset += 1
                writer.transport.abort()
                return
            upstream = up_writer
            self.open.add(up_writer)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
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
