"""The lab's probe handlers, each as the kubelet's prober runs it (reference/kubelet.md §1.3-1.6):
httpGet (kube-probe headers, httpHeaders, Host, same-host redirects, 10 KiB of body), tcpSocket,
exec (with its timeout, the process killed however the probe ends) and gRPC health. Each returns
a result — success, warning (counts as success, with a ProbeWarning event), failure or error
(thrown away) — and the kubelet's message. Everything goes to 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Literal
from urllib.parse import urljoin, urlsplit

import aiohttp

from probesim.lab.hygiene import dies_with_parent
from probesim.lab.runtime import stop
from probesim.lab.timeouts import exact
from probesim.model.kubernetes import ExecAction, HTTPGetAction

HOST = "127.0.0.1"
USER_AGENT = "kube-probe/1.33"
MAX_REDIRECTS = 10
MAX_BODY = 10 * 1024

Result = Literal["success", "warning", "failure", "error"]
Outcome = tuple[Result, str]


def http_headers(action: HTTPGetAction) -> tuple[dict[str, str], set[str]]:
    """The request's headers: httpHeaders as given, then kube-probe's User-Agent and Accept */*
    unless given; a header given empty is sent empty, except User-Agent, which is then left out
    (Go's client sends none). Returns the headers and those aiohttp must not add itself."""
    given: dict[str, str] = {}
    for h in action.http_headers:
        given.setdefault(h.name.title(), h.value)  # the first of a repeated header decides
    headers = {"User-Agent": USER_AGENT, "Accept": "*/*", **given}
    skip = {"User-Agent"} if headers["User-Agent"] == "" else set()
    if "User-Agent" in skip:
        del headers["User-Agent"]
    return headers, skip


async def http_check(port: int, action: HTTPGetAction, timeout: float) -> Outcome:
    headers, skip = http_headers(action)
    scheme = action.scheme.lower()
    url = f"{scheme}://{HOST}:{port}{action.path}"
    client_timeout = exact(timeout)
    try:
        async with aiohttp.ClientSession(timeout=client_timeout, skip_auto_headers=skip) as s:
            for _ in range(MAX_REDIRECTS + 1):
                async with s.get(url, headers=headers, allow_redirects=False, ssl=False) as r:
                    body = await r.content.read(MAX_BODY)
                    status, location = r.status, r.headers.get("Location")
                if 300 <= status < 400 and location:
                    target = urljoin(url, location)
                    if urlsplit(target).hostname != HOST:  # another host: not followed
                        text = body.decode(errors="replace")
                        return "warning", f"Probe terminated redirects, Response body: {text}"
                    url = target
                    continue
                if 200 <= status < 400:
                    return "success", ""
                return "failure", f"HTTP probe failed with statuscode: {status}"
            return "failure", f'Get "{url}": stopped after {MAX_REDIRECTS} redirects'
    except TimeoutError:
        return "failure", (
            f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
        )
    except aiohttp.ClientConnectorError as e:
        return "failure", f'Get "{url}": dial tcp {e.host}:{e.port}: connect: {_reason(e.os_error)}'
    except aiohttp.ServerDisconnectedError:
        return "failure", f'Get "{url}": EOF'
    except (OSError, aiohttp.ClientError) as e:
        return "failure", f'Get "{url}": {e}'


def _reason(e: OSError) -> str:
    """An OS error as Go words it: "connection refused"."""
    return os.strerror(e.errno).lower() if e.errno else str(e)


async def tcp_check(port: int, timeout: float) -> Outcome:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), timeout)
    except TimeoutError:
        return "failure", f"dial tcp {HOST}:{port}: i/o timeout"
    except OSError as e:
        return "failure", f"dial tcp {HOST}:{port}: connect: {_reason(e)}"
    writer.close()
    return "success", ""


async def exec_check(action: ExecAction, timeout: float) -> Outcome:
    """The command runs on this machine, as the user running the lab, without a shell (there is
    no container to exec into; the lab runs it only with --allow-exec). It runs in a process
    group of its own, killed whole however the probe ends, and dies with the lab."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *action.command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            process_group=0,
            preexec_fn=dies_with_parent(),
        )
    except OSError as e:
        return "error", f"exec {action.command[0]}: {e.strerror or e}"
    try:
        code = await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        return "failure", f"command timed out after {timeout:g}s"
    finally:
        # Timed out, or the lab is stopping: no process left behind, nor any it started.
        await stop(proc, None, group=True)
    return ("success", "") if code == 0 else ("failure", f"command exited with {code}")


async def grpc_check(port: int, service: str, timeout: float) -> Outcome:
    """grpc.health.v1.Health/Check; SERVING passes, any other answer, a failed connection, a
    timeout or Unimplemented fails; one deadline for connecting and the call (§1.6)."""
    import grpc
    from grpc import aio
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + timeout
    # A connection of its own per probe, as each kubelet probe dials anew: gRPC core would share
    # subchannels (and their reconnect back-off) between channels to the same address.
    options = [("grpc.primary_user_agent", USER_AGENT), ("grpc.use_local_subchannel_pool", 1)]
    async with aio.insecure_channel(f"{HOST}:{port}", options=options) as channel:
        try:
            await asyncio.wait_for(channel.channel_ready(), timeout)
        except TimeoutError:
            return "failure", f'timeout: failed to connect service "{HOST}:{port}" within {timeout:g}s'
        try:
            resp = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service),
                timeout=max(deadline - time.monotonic(), 0.001),
            )
        except aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                return "failure", (
                    "error: this server does not implement the grpc health protocol (grpc.health.v1.Health)"
                )
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return "failure", f"timeout: health rpc did not complete within {timeout:g}s"
            return "failure", f"error: health rpc probe failed: {e.code().name}"
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    if status == "SERVING":
        return "success", ""
    return "failure", f'service unhealthy (responded with "{status}")'
