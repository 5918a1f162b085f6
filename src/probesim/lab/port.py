"""A port on 127.0.0.1 that an aiohttp runner serves and stops serving at chosen moments (the
test app's start and hangs, a dependency's outages). While refusing it is held bound but not
listening — connections are refused — so that serving again is one listen() away."""

from __future__ import annotations

import socket
from pathlib import Path

from aiohttp import web

HOST = "127.0.0.1"


def _somaxconn() -> int:
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        return socket.SOMAXCONN


# Every listening socket of the lab's takes the longest accept queue the kernel allows
# (net.core.somaxconn), as Envoy's listeners do by default: a queue that overflows drops SYNs,
# and the client waits a second or more for its resend — the lab's delay, not the app's. It is
# passed to aiohttp too, whose SockSite would otherwise listen() again with its default of 128
# (seed 004's app ports overflowed 96,000 times in one run at 128).
BACKLOG = _somaxconn()


def bound_socket(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    return sock


class Port:
    def __init__(self, port: int, bound: socket.socket | None = None) -> None:
        """``bound``: the port's socket if already bound (0 for ``port``: any free one)."""
        sock = bound if bound is not None else bound_socket(port)
        self.number: int = sock.getsockname()[1]
        self.bound: socket.socket | None = sock
        self.site: web.SockSite | None = None

    async def serve(self, runner: web.BaseRunner, on: bool) -> None:
        if on and self.site is None:
            sock = self.bound if self.bound is not None else bound_socket(self.number)
            self.bound = None
            sock.listen(BACKLOG)
            self.site = web.SockSite(runner, sock, backlog=BACKLOG)
            await self.site.start()
        elif not on and self.site is not None:
            await self.site.stop()
            self.site = None
            self.bound = bound_socket(self.number)
        elif (
            not on
            and self.bound is not None
            and self.bound.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        ):
            self.bound.close()  # handed over listening: what waits in its backlog is reset, as refused
            self.bound = bound_socket(self.number)

    def close(self) -> None:
        if self.bound is not None:
            self.bound.close()
            self.bound = None
