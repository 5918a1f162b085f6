"""The lab's load generator: latency percentiles from its HdrHistogram, open-loop counting."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from probesim.lab.load import KeepAlive, LoadResult, cause_of, constant_rate
from probesim.lab.pods import free_port


def test_latency_percentiles_as_the_simulation_reports_them() -> None:
    r = LoadResult()
    assert r.latency_ms() == {}
    for us in (1000, 2000, 3000, 150_000):
        r.latency_us.record_value(us)
    assert r.latency_ms() == {"p50": 2.0, "p90": 150.0, "p95": 150.0, "p99": 150.0, "max": 150.0}


def test_no_endpoint_counts_as_refused_and_only_127_0_0_1_is_loaded() -> None:
    out = asyncio.run(constant_rate(list, rate=50, duration_s=0.2, timeout_s=1))
    assert (out.sent, out.failed["no_endpoint"], out.statuses, out.latency_ms()) == (10, 10, {}, {})
    for keep in (None, KeepAlive()):
        with pytest.raises(ValueError, match=r"only sends load to 127\.0\.0\.1"):
            asyncio.run(constant_rate(["http://10.0.0.1:80/"], rate=10, duration_s=0.2, keep_alive=keep))


@pytest.mark.parametrize(
    ("status", "body", "cause"),
    [
        (503, b"no healthy upstream", "no_endpoint"),
        (
            503,
            b"upstream connect error or disconnect/reset before headers. reset reason: connection failure, "
            b"transport failure reason: delayed connect error: Connection refused",
            "restarting",
        ),
        (
            503,
            b"upstream connect error or disconnect/reset before headers. reset reason: connection termination",
            "killed",
        ),
        (504, b"upstream request timeout", "timeout"),
        (503, b"overloaded\n", "rejected"),  # the test app's full queue
        (503, b"maintenance", "error_status"),  # the app's own 503
        (500, b"no healthy upstream", "error_status"),
    ],
)
def test_failed_answers_get_the_simulations_cause_from_envoys_local_replies(
    status: int, body: bytes, cause: str
) -> None:
    assert cause_of(status, body) == cause


def test_answers_are_counted_as_they_come_into_the_result_given() -> None:
    out = LoadResult()
    ret = asyncio.run(constant_rate(list, rate=50, duration_s=0.2, timeout_s=1, out=out))
    assert ret is out
    assert (out.ok, dict(out.failed)) == (0, {"no_endpoint": 10})


async def _serve(handler: Callable[[web.Request], Awaitable[web.Response]]) -> tuple[web.AppRunner, str]:
    """An HTTP server on 127.0.0.1 answering / with ``handler``, and its URL."""
    app = web.Application()
    app.router.add_get("/", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}/"


async def _servers(n: int) -> tuple[list[web.AppRunner], list[str], Counter[int]]:
    """``n`` HTTP servers on 127.0.0.1; the counter says how many requests each got."""
    hits: Counter[int] = Counter()
    runners, urls = [], []
    for i in range(n):

        async def handler(_: web.Request, i: int = i) -> web.Response:
            hits[i] += 1
            return web.Response(text="ok")

        runner, url = await _serve(handler)
        runners.append(runner)
        urls.append(url)
    return runners, urls, hits


def test_kept_connections_stay_with_their_pod_when_it_leaves_the_endpoints() -> None:
    async def go(keep: KeepAlive | None) -> tuple[LoadResult, Counter[int]]:
        runners, urls, hits = await _servers(2)
        t0 = time.monotonic()
        # Both Ready for 0.3 s, then only the first (the second is NotReady but still answers).
        targets = lambda: urls if time.monotonic() - t0 < 0.3 else urls[:1]  # noqa: E731
        try:
            out = await constant_rate(targets, rate=40, duration_s=1.0, timeout_s=2, keep_alive=keep)
        finally:
            for r in runners:
                await r.cleanup()
        return out, hits

    out, hits = asyncio.run(go(KeepAlive(vus=2, max_vus=2)))
    assert out.ok == out.sent == 40
    assert hits[1] >= 15  # half of the second's requests, as before
    out, hits = asyncio.run(go(None))
    assert out.ok == 40
    assert hits[1] <= 7  # only while it was Ready


def test_a_closed_connection_reopens_on_a_ready_pod() -> None:
    async def go() -> tuple[LoadResult, Counter[int]]:
        runners, urls, hits = await _servers(2)
        t0 = time.monotonic()
        targets = lambda: urls if time.monotonic() - t0 < 0.3 else urls[:1]  # noqa: E731
        load = asyncio.create_task(
            constant_rate(
                targets, rate=40, duration_s=1.0, timeout_s=2, keep_alive=KeepAlive(vus=2, max_vus=2)
            )
        )
        await asyncio.sleep(0.4)
        await runners[1].cleanup()  # the second pod's server goes: its connections close
        out = await load
        await runners[0].cleanup()
        return out, hits

    out, hits = asyncio.run(go())
    assert out.sent == 40
    assert out.ok >= 39  # at most one request raced the close
    assert hits[0] >= 30


def test_with_a_lost_rejection_requests_wait_for_an_endpoint() -> None:
    async def go() -> tuple[LoadResult, float]:
        runners, urls, _ = await _servers(1)
        t0 = time.monotonic()
        targets = lambda: urls if time.monotonic() - t0 > 1.2 else []  # noqa: E731
        try:
            out = await constant_rate(targets, rate=10, duration_s=0.5, timeout_s=5, retransmit=True)
        finally:
            await runners[0].cleanup()
        return out, time.monotonic() - t0

    out, took = asyncio.run(go())
    assert (out.sent, out.ok, sum(out.failed.values())) == (5, 5, 0)
    # SYNs resent 1 s and 3 s after the first: those sent before 0.2 s got through at ~3 s.
    assert out.latency_ms()["max"] >= 1000
    assert took < 4.5


def test_requests_unanswered_at_the_graceful_stop_are_interrupted() -> None:
    async def go() -> LoadResult:
        hang = asyncio.Event()

        async def handler(_: web.Request) -> web.Response:
            await hang.wait()
            return web.Response(text="late")

        runner, url = await _serve(handler)
        try:
            return await constant_rate([url], rate=10, duration_s=0.5, timeout_s=30, graceful_stop_s=0.3)
        finally:
            hang.set()
            await runner.cleanup()

    t0 = time.monotonic()
    out = asyncio.run(go())
    assert (out.sent, out.ok, out.interrupted, sum(out.failed.values())) == (5, 0, 5, 0)
    assert out.trail == []  # k6 logs no sample of an interrupted request
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("keep", [None, KeepAlive()])
def test_each_ended_request_leaves_its_duration_and_whether_it_failed(keep: KeepAlive | None) -> None:
    """As k6's http_req_duration and http_req_failed: every answered or failed request once, at
    its end, failed when its status is not 200-399; a timeout lasts its timeout."""

    async def go() -> LoadResult:
        n = 0

        async def handler(_: web.Request) -> web.Response:
            nonlocal n
            n += 1
            if n % 4 == 0:
                await asyncio.sleep(5)  # beyond the timeout
            return web.Response(text="no" if n % 4 == 2 else "ok", status=500 if n % 4 == 2 else 200)

        runner, url = await _serve(handler)
        try:
            return await constant_rate([url], rate=20, duration_s=0.4, timeout_s=1.0, keep_alive=keep)
        finally:
            await runner.cleanup()

    before = time.time()
    out = asyncio.run(go())
    assert out.sent == 8 and len(out.trail) == 8
    assert sum(failed for _, _, failed in out.trail) == out.sent - out.ok == 4  # two 500s, two timeouts
    assert (out.ok, out.failed["error_status"], out.failed["timeout"]) == (4, 2, 2)
    slow = sorted(ms for _, ms, _ in out.trail)[-2:]
    assert all(1000 <= ms < 2500 for ms in slow), out.trail
    assert all(before <= end <= time.time() for end, _, _ in out.trail)


def test_a_malformed_answer_on_a_kept_connection_counts_as_a_reset() -> None:
    async def go() -> LoadResult:
        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            writer.write(b"not http at all\r\n\r\n")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(garbage, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            return await constant_rate(
                [f"http://127.0.0.1:{port}/"], rate=10, duration_s=0.3, timeout_s=2, keep_alive=KeepAlive()
            )

    out = asyncio.run(go())
    assert (out.sent, out.ok, dict(out.failed)) == (3, 0, {"killed": 3})


def test_free_port_never_hands_out_a_port_twice_and_stays_below_the_ephemeral_range() -> None:
    # The lab draws a port for each pod, Envoy and server before any of them binds it: two
    # draws alike would both find it free, and the second to bind it fails. 1,500 draws from
    # 12,000 ports would repeat one (birthday bound: near certainly) if it did not remember them.
    from probesim.lab.pods import _ephemeral_low

    ports = [free_port() for _ in range(1500)]
    assert len(set(ports)) == len(ports)
    low = _ephemeral_low()
    assert all(max(low - 12_000, 1024) <= p < low for p in ports)
