"""The lab's test app, as a real process on 127.0.0.1: it acts out the behaviour in real time.

Started as the lab starts it: loaded first (Python's start-up takes a moment, seconds on a busy
machine), then given the go and its port; its times count from the go."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PROBESIM = Path(sys.executable).parent / "probesim"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def app(behavior: str, *extra: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The app, loaded and started: its behaviour's times count from when this yields."""
    port = free_port()
    parent, child = socket.socketpair()
    with parent:
        try:
            proc = subprocess.Popen(
                [str(PROBESIM), "app", "--port", str(port), "--behavior", behavior, *extra],
                env={**os.environ, "PROBESIM_CONTROL_FD": str(child.fileno())},
                pass_fds=(child.fileno(),),
            )
        finally:
            child.close()
        try:
            parent.settimeout(60)  # bounded: loaded within a minute, however busy the machine
            assert parent.recv(1) == b"r", "the app did not load"
            with socket.socket() as listening:  # bound, not listening: it listens when it starts
                listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listening.bind(("127.0.0.1", port))
                now = time.monotonic()
                socket.send_fds(parent, [f"{now!r} {now!r}".encode()], [listening.fileno()])
            yield proc, port
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


def get(port: int, path: str = "/", timeout: float = 5.0) -> int | None:
    """The status, or None when the connection is refused."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except (ConnectionRefusedError, urllib.error.URLError):
        return None


def wait_until(started: float, seconds: float) -> None:
    time.sleep(max(0.0, started + seconds - time.monotonic()))


def poll(port: int, path: str, want: int, started: float, by: float) -> float:
    """Seconds after ``started`` when ``path`` first answered ``want``; fails after ``by``.
    (The app's Python start-up takes a moment, longer on a busy machine.)"""
    while time.monotonic() < started + by:
        if get(port, path, timeout=1) == want:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"{path} did not answer {want} within {by}s")


def test_refuses_until_started_then_answers_per_path() -> None:
    with app("{start: 2s, paths: {/missing: 404}}") as (_, port):
        t0 = time.monotonic()
        wait_until(t0, 1.2)
        assert get(port) is None
        assert poll(port, "/", 200, t0, 6.0) >= 1.9
        assert get(port, "/missing") == 404


def test_a_routes_error_share_fails_that_share_of_its_requests() -> None:
    with app("{routes: {/api: {errors: {percent: 20, status: 503}}}}") as (_, port):
        poll(port, "/", 200, time.monotonic(), 30.0)
        got = [get(port, "/api") for _ in range(400)]
        assert got.count(503) == 80 and got.count(200) == 320  # every count holds the share
        assert got[:5] == [200, 200, 200, 200, 503]
        assert {get(port, "/other") for _ in range(20)} == {200}  # other paths: no share


def test_a_cpu_limit_holds_the_app_to_its_quota() -> None:
    # 20 ms of CPU a request at a quarter of a core: at most 12.5 a second, however fast the
    # machine (the quota of each 100 ms period, then the whole process waits).
    with app("{routes: {/api: {cpu: 20ms}}}", "--cpu-limit", "0.25") as (_, port):
        poll(port, "/", 200, time.monotonic(), 30.0)
        began = time.monotonic()
        assert [get(port, "/api", timeout=30) for _ in range(20)] == [200] * 20
        assert time.monotonic() - began >= 20 * 0.020 / 0.25 - 0.15


def test_error_window_and_hang_in_real_time() -> None:
    behavior = "{episodes: [{kind: errors, after: 1500ms, for: 2s, status: 503, paths: [/api]}, {kind: hang, after: 4s, for: 1500ms}]}"
    with app(behavior) as (_, port):
        t0 = time.monotonic()
        assert 1.4 <= poll(port, "/api", 503, t0, 3.4) < 3.5
        assert get(port, "/other") == 200
        wait_until(t0, 4.3)
        before = time.monotonic()
        assert get(port) == 200  # answered once the hang ends (5.5 s)
        assert 0.8 < time.monotonic() - before < 1.7


def test_hang_without_accepting_connections_refuses() -> None:
    with app("{episodes: [{kind: hang, after: 2500ms, for: 1500ms, acceptsTcp: false}]}") as (_, port):
        t0 = time.monotonic()
        poll(port, "/", 200, t0, 2.4)
        wait_until(t0, 2.8)
        assert get(port) is None
        assert poll(port, "/", 200, t0, 8.0) >= 3.9


def test_crash_exits_with_its_code() -> None:
    with app("{episodes: [{kind: crash, after: 1500ms, exitCode: 3}]}") as (proc, _):
        t0 = time.monotonic()
        assert proc.wait(timeout=10) == 3
        assert 1.3 < time.monotonic() - t0 < 4.0


@pytest.mark.parametrize(
    ("behavior", "exits"), [("{shutdown: 500ms}", True), ("{ignoresSigterm: true}", False)]
)
def test_sigterm(behavior: str, exits: bool) -> None:
    with app(behavior) as (proc, port):
        deadline = time.monotonic() + 5
        while get(port, timeout=1) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=2)
            assert exits
            assert time.monotonic() - sent >= 0.45  # it took its shutdown time
        except subprocess.TimeoutExpired:
            assert not exits
            proc.kill()
            assert proc.wait(timeout=5) == -signal.SIGKILL


def test_bad_behavior_is_a_clear_error() -> None:
    done = subprocess.run(
        [str(PROBESIM), "app", "--port", "1", "--behavior", "{start: 5}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "no unit" in done.stderr
    assert "Traceback" not in done.stderr


def test_grpc_health_answers_as_the_path_grpc() -> None:
    # SERVING once started; NOT_SERVING in an errors window on "grpc" (HTTP unaffected); a hang
    # holds the answer past the probe's deadline; the kubelet's messages for each.
    import asyncio

    from probesim.lab.probes import grpc_check

    grpc_port = free_port()
    behavior = (
        "{start: 1s, episodes: [{kind: errors, after: 3s, for: 2s, status: 503, paths: [grpc]},"
        " {kind: hang, after: 6s, for: 2s}]}"
    )
    with app(behavior, "--grpc-port", str(grpc_port)) as (_, port):
        started = time.monotonic()
        poll(port, "/", 200, started, by=10)
        assert asyncio.run(grpc_check(grpc_port, "", 1.0)) == ("success", "")
        wait_until(started, 3.5)
        assert asyncio.run(grpc_check(grpc_port, "any.Service", 1.0)) == (
            "failure",
            'service unhealthy (responded with "NOT_SERVING")',
        )
        assert get(port, "/") == 200
        wait_until(started, 6.5)
        assert asyncio.run(grpc_check(grpc_port, "", 0.5)) == (
            "failure",
            "timeout: health rpc did not complete within 0.5s",
        )
    result, why = asyncio.run(grpc_check(grpc_port, "", 0.3))  # nothing listens any more
    assert result == "failure" and why.startswith("timeout: failed to connect service")


def test_redirects_carry_their_location() -> None:
    # urllib follows a redirect: /old → /new answers 503, so the client sees 503, as the
    # simulation's clients and the kubelet's prober do; the raw answer is a 302 with Location.
    behavior = "{redirects: {/old: /new, /sso: 'https://sso.example.com/'}, paths: {/new: 503, /sso: 301}}"
    with app(behavior) as (_, port):
        t0 = time.monotonic()
        poll(port, "/", 200, t0, 10.0)
        assert get(port, "/old") == 503
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /sso HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            head = s.recv(4096).decode()
        assert head.startswith("HTTP/1.1 301") and "Location: https://sso.example.com/" in head


def test_metrics_port_serves_a_request_histogram_per_route() -> None:
    metrics = free_port()
    behavior = "{paths: {/missing: 404}, routes: {/api: {wall: 30ms}}}"
    with app(behavior, "--metrics-port", str(metrics)) as (_, port):
        t0 = time.monotonic()
        poll(port, "/api", 200, t0, 20.0)
        for _ in range(4):
            assert get(port, "/api") == 200
        assert get(port, "/missing") == 404
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as r:
            text = r.read().decode()
    api = 'http_request_method="GET",http_response_status_code="200",http_route="/api"'
    assert f"http_server_request_duration_seconds_count{{{api}}} 5.0" in text
    # Each waited its 30 ms: none is in a bucket below it (a busy machine only adds time, so the
    # upper buckets are not asserted).
    assert f'http_server_request_duration_seconds_bucket{{{api},le="0.025"}} 0.0' in text
    missing = 'http_request_method="GET",http_response_status_code="404",http_route="/missing"'
    assert f"http_server_request_duration_seconds_count{{{missing}}} 1.0" in text


def test_a_deadlock_at_a_scenario_time_spares_the_restarted_process() -> None:
    # As simulated (engine/behavior.py): a clock-anchored deadlock holds the process running at
    # that time; its restart, started after it, answers. Times on the process clock, in seconds.
    from probesim.lab.app import App
    from probesim.model.scenario import ContainerBehavior

    b = ContainerBehavior.model_validate({"episodes": [{"kind": "deadlock", "at": "2m"}]})
    before = App(b, free_port(), zero=0.0, started=10.0)
    assert before._hang_end(121.0) == float("inf")
    restarted = App(b, free_port(), zero=0.0, started=121.0)
    assert restarted._hang_end(121.0) is None and restarted._hang_end(500.0) is None


def _probe_behind(behavior: str, probe: str = "/healthz", slow: int = 4) -> tuple[float, list[int | None]]:
    """``slow`` requests to /slow (1 s of waiting each, 2 workers) sent at once, then ``probe``:
    how long the probe took, and what the slow ones got."""
    from concurrent.futures import ThreadPoolExecutor

    with app(behavior, "--probe-path", "/healthz") as (_, port), ThreadPoolExecutor(slow) as pool:
        poll(port, "/healthz", 200, time.monotonic(), 30.0)
        slows = [pool.submit(get, port, "/slow", 30.0) for _ in range(slow)]
        time.sleep(0.3)  # they are in: two at work, the others queued
        began = time.monotonic()
        assert get(port, probe, timeout=30.0) == 200
        took = time.monotonic() - began
        return took, [f.result() for f in slows]


def test_a_probe_waits_for_a_worker_behind_the_queued_requests() -> None:
    # Two workers busy for 1 s, two requests queued behind them: the probe (probes: shared, the
    # default) gets a worker when one of the queued ones is done, ~1.7 s after it was sent — as
    # the simulation's probe waits behind the backlog.
    took, slows = _probe_behind("{routes: {/slow: {wall: 1s}}, capacity: {workers: 2, queue: 10}}")
    assert took >= 1.5 and slows == [200] * 4


def test_a_probe_served_apart_does_not_wait_and_is_never_refused_for_a_full_queue() -> None:
    took, _ = _probe_behind(
        "{routes: {/slow: {wall: 1s}}, capacity: {workers: 2, queue: 10, probes: separate}}"
    )
    assert took < 0.9
    # A full queue (2 at work, 1 waiting) refuses the fourth request, not the probe, which waits.
    took, slows = _probe_behind("{routes: {/slow: {wall: 1s}}, capacity: {workers: 2, queue: 1}}")
    assert sorted(slows, key=str) == [200, 200, 200, 503] and took >= 0.5
    # Any other path is a request like the others: it waits for a worker.
    took, _ = _probe_behind(
        "{routes: {/slow: {wall: 1s}}, capacity: {workers: 2, queue: 10}}", probe="/other"
    )
    assert took >= 1.5


def test_an_app_busy_on_the_cpu_exits_at_sigterm_as_simulated() -> None:
    # An async app (no worker pool) spends a request's CPU on its event loop: 2 s of it hold the
    # loop, and a SIGTERM's callback on that loop ran only when the request was done (issue 45:
    # an evicted pod under load left the endpoints a second late in the lab). With no shutdown
    # time the simulation's container exits at SIGTERM; the app does too, whatever it is doing.
    with app("{routes: {/: {cpu: 2s}}, variability: 0}") as (proc, port):
        deadline = time.monotonic() + 5
        while get(port, "/healthz", timeout=1) is None and time.monotonic() < deadline:
            time.sleep(0.1)

        def send() -> None:
            with contextlib.suppress(OSError, http.client.HTTPException):  # cut off by the exit
                get(port, "/", 10.0)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        time.sleep(0.5)  # its CPU under way, the loop held
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=5)
        assert time.monotonic() - sent < 0.5
