"""The lab's probe handlers against a real server on 127.0.0.1: kube-probe's headers and their
overrides, same-host redirects followed (10 at most), other hosts a warning, messages as the
kubelet words them, and exec processes never left behind."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from probesim.lab.probes import exec_check, http_check, tcp_check
from probesim.model.kubernetes import ExecAction, HTTPGetAction
from tests.lab.procs import children_left


@asynccontextmanager
async def server(seen: list[dict[str, str]]) -> AsyncIterator[int]:
    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        p = request.path
        if p == "/ok":
            return web.Response(text="ok")
        if p == "/to-broken":
            raise web.HTTPFound("/broken")
        if p == "/broken":
            return web.Response(status=500)
        if p == "/to-ok":
            raise web.HTTPFound(f"http://127.0.0.1:{request.url.port}/ok")
        if p == "/away":
            raise web.HTTPFound("http://example.com/", text="moved away")
        if p.startswith("/loop/"):
            raise web.HTTPFound(f"/loop/{int(p.rsplit('/', 1)[1]) + 1}")
        if p == "/slow":
            await asyncio.sleep(2)
        return web.Response(status=404)

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield port
    finally:
        await runner.cleanup()


def probe(path: str, **fields: Any) -> HTTPGetAction:
    return HTTPGetAction.model_validate({"path": path, "port": 8080, **fields})


def run(path: str, timeout: float = 1.0, **fields: Any) -> tuple[tuple[str, str], list[dict[str, str]]]:
    seen: list[dict[str, str]] = []

    async def go() -> tuple[str, str]:
        async with server(seen) as port:
            return await http_check(port, probe(path, **fields), timeout)

    return asyncio.run(go()), seen


def test_kube_probe_headers_by_default_and_overridden_or_removed() -> None:
    (result, _), seen = run("/ok")
    assert result == "success"
    assert seen[0]["User-Agent"] == "kube-probe/1.33" and seen[0]["Accept"] == "*/*"
    (result, _), seen = run(
        "/ok",
        httpHeaders=[
            {"name": "user-agent", "value": ""},
            {"name": "Accept", "value": "application/json"},
            {"name": "Host", "value": "web.example"},
            {"name": "X-Probe", "value": "1"},
        ],
    )
    assert result == "success"
    assert "User-Agent" not in seen[0]
    assert (seen[0]["Accept"], seen[0]["Host"], seen[0]["X-Probe"]) == (
        "application/json",
        "web.example",
        "1",
    )


def test_same_host_redirects_are_followed_and_judged_by_where_they_end() -> None:
    (outcome, seen) = run("/to-broken")
    assert outcome == ("failure", "HTTP probe failed with statuscode: 500")
    assert len(seen) == 2
    assert run("/to-ok")[0] == ("success", "")


def test_a_redirect_to_another_host_is_a_warning_not_followed() -> None:
    (result, message), seen = run("/away")
    assert result == "warning"
    assert message == "Probe terminated redirects, Response body: moved away"
    assert len(seen) == 1  # example.com was never asked


def test_the_eleventh_redirect_fails() -> None:
    (result, message), seen = run("/loop/0")
    assert result == "failure" and message.endswith("stopped after 10 redirects")
    assert len(seen) == 11


def test_messages_for_refused_and_timed_out_as_the_kubelet_words_them() -> None:
    (result, message), _ = run("/slow", timeout=0.3)
    assert result == "failure"
    assert message.endswith("context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        result, message = asyncio.run(http_check(port, probe("/"), 1.0))
        assert result == "failure"
        assert (
            message
            == f'Get "http://127.0.0.1:{port}/": dial tcp 127.0.0.1:{port}: connect: connection refused'
        )
        assert asyncio.run(tcp_check(port, 1.0)) == (
            "failure",
            f"dial tcp 127.0.0.1:{port}: connect: connection refused",
        )


@pytest.mark.parametrize(("command", "expected"), [(["true"], "success"), (["false"], "failure")])
def test_exec_by_exit_code(command: list[str], expected: str) -> None:
    assert asyncio.run(exec_check(ExecAction(command=tuple(command)), 1.0))[0] == expected


def test_an_exec_that_overruns_fails_and_is_killed() -> None:
    # with what it started: its process group goes
    action = ExecAction(command=("sh", "-c", "sleep 30 & sleep 30"))
    started = time.monotonic()
    assert asyncio.run(exec_check(action, 0.3)) == ("failure", "command timed out after 0.3s")
    assert time.monotonic() - started < 2
    assert children_left() == []


def test_an_exec_cancelled_with_the_lab_is_killed_too() -> None:
    action = ExecAction(command=("sh", "-c", "sleep 31 & sleep 31"))

    async def go() -> None:
        task = asyncio.create_task(exec_check(action, 10.0))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert children_left() == []
