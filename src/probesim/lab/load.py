"""An open-loop load generator: requests start at a constant rate whatever the answers do (no
coordinated omission), with a cap on requests in flight and a per-request timeout; it counts
answers by status as a client sees them. Either each request is balanced on its own, or, like
k6's VUs, clients keep their HTTP/1.1 connection and stay with the pod they got when it opened
(kube-proxy's per-connection balancing). Only 127.0.0.1.

A refusal the scenario did not decide is counted as the lab's (cause ``lab``, left out of the
route's failed requests and named beside the result: ``lab.headroom``): a descriptor or port
this machine would not give, an Envoy's circuit-breaker overflow, or a connection refused (by
the pod, or by its sidecar's connect to it) while the scenario has the app up and listening."""

from __future__ import annotations

import asyncio
import errno
import itertools
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp
from hdrh.histogram import HdrHistogram

from probesim.engine.connections import SYN_AT_MS, SYN_GIVE_UP_MS
from probesim.lab.timeouts import exact

MAX_BODY = 1 << 20  # an answer's body is read and dropped; more than this is a broken server


@dataclass
class LoadResult:
    sent: int = 0
    dropped: int = 0  # no free slot (in-flight cap)
    interrupted: int = 0  # still unanswered when the generator stopped waiting (gracefulStop)
    statuses: Counter[int] = field(default_factory=Counter)  # answers by HTTP status
    sent_at: list[float] = field(default_factory=list)  # each request's send time (Unix s), as k6 logs it
    # Each request that ended (answered or failed, not interrupted): its end (Unix s), how long it
    # took in ms and whether it failed, as k6's http_req_duration and http_req_failed samples.
    trail: list[tuple[float, float, bool]] = field(default_factory=list)
    ok: int = 0  # 2xx and 3xx
    failed: Counter[str] = field(default_factory=Counter)  # by the simulation's cause names
    # answered requests' latency in µs, 1 µs to 10 min at 3 significant digits
    latency_us: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, 600_000_000, 3))
    behind_s: float = 0.0  # the most a request was sent after its scheduled time (a busy machine)

    def latency_ms(self) -> dict[str, float]:
        """p50, p90, p95, p99 and max, as the simulation reports them (empty when nothing answered)."""
        h = self.latency_us
        if h.get_total_count() == 0:
            return {}
        qs = {f"p{q}": h.get_value_at_percentile(q) / 1000 for q in (50, 90, 95, 99)}
        return {k: round(v, 1) for k, v in {**qs, "max": h.get_max_value() / 1000}.items()}


# Errors a connection gets from this machine, never from the app: out of descriptors or ports.
MACHINE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.ENOBUFS, errno.ENOMEM})
# Envoy's local reply when a circuit breaker is full: its own limit, never the app's.
OVERFLOW = b"reset reason: overflow"


def refused_by(err: int | None, listening: bool) -> str:
    """Whose a refused connection is: the lab's when the machine gave no descriptor or port, or
    when the scenario has the app listening; else the app's (restarting, as simulated)."""
    return "lab" if err in MACHINE_ERRNOS or listening else "restarting"


def cause_of(status: int, body: bytes, listening: bool = False) -> str:
    """A failed answer's cause as the simulation names it, from Envoy's local replies (a sidecar
    answers 503 "no healthy upstream" with no endpoint, "upstream connect error" when the pod
    refuses — or, with the reset reason "connection timeout", when nothing answers at all, as a
    dead host — 504 "upstream request timeout") and the test app's 503 "overloaded".
    ``listening``: the scenario has the app behind the answering sidecar up and listening, so
    that a connect failure of its sidecar is the lab's (as an overflow of Envoy's circuit
    breakers always is)."""
    if status == 503 and body.startswith(b"no healthy upstream"):
        return "no_endpoint"
    if status == 503 and body.startswith(b"upstream connect error"):
        if b"reset reason: connection termination" in body:
            return "killed"
        if b"reset reason: connection timeout" in body:
            return "not_answering"  # no answer to its SYNs at all: a dead host (lab.nodes)
        return "lab" if OVERFLOW in body or listening else "restarting"
    if status == 504 and body.startswith(b"upstream request timeout"):
        return "timeout"
    if status == 503 and body == b"overloaded\n":
        return "rejected"
    return "error_status"


@dataclass(frozen=True)
class KeepAlive:
    """Clients that keep their connection (a traffic route's ``keepAlive``): ``vus`` of them at
    first, up to ``max_vus`` when all are busy (k6's preAllocatedVUs and maxVUs)."""

    vus: int = 1
    max_vus: int = 1000


class NoEndpoint(Exception):
    """No Ready endpoint, and the client is told so at once (kube-proxy's REJECT)."""


class Refused(Exception):
    """The pod refused the connection: nothing listens on its port (or, with ``err`` one of
    ``MACHINE_ERRNOS``, this machine would not open it)."""

    def __init__(self, err: int | None = None) -> None:
        super().__init__(err)
        self.err = err


class Stale(Exception):
    """A reused connection was closed by the server before it answered: try a new one (as Go's
    and most clients do for a request that never reached the server)."""


class Conn:
    """One client's kept-alive HTTP/1.1 connection to one pod."""

    def __init__(self, url: str) -> None:
        self.url = url
        u = urlsplit(url)
        assert u.hostname is not None and u.port is not None  # the load generator checked it is 127.0.0.1
        self.host, self.port = u.hostname, u.port
        self.path = u.path + (f"?{u.query}" if u.query else "") or "/"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @property
    def closed(self) -> bool:
        """The server has closed it (or it was never opened)."""
        return self.writer is None or self.writer.is_closing() or self.reader is None or self.reader.at_eof()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, method: str, headers: dict[str, str]) -> tuple[int, bytes]:
        reused = self.writer is not None
        if self.closed:
            self.close()
            try:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            except OSError as e:
                raise Refused(e.errno) from e
            reused = False
        assert self.reader is not None and self.writer is not None
        lines = [f"{method} {self.path} HTTP/1.1"]
        if not any(k.lower() == "host" for k in headers):
            lines.append(f"Host: {self.host}:{self.port}")
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        try:
            await self.writer.drain()
            status_line = await self.reader.readline()
        except ConnectionError:
            status_line = b""
        if not status_line:
            self.close()
            if reused:
                raise Stale
            raise ConnectionResetError("closed before answering")
        try:
            status, head, body = await self._answer(status_line)
        except (ValueError, IndexError) as e:  # not HTTP: as broken as a reset
            self.close()
            raise ConnectionResetError(f"malformed answer: {e}") from None
        if head.get("connection", "").lower() == "close":
            self.close()
        return status, body

    async def _answer(self, status_line: bytes) -> tuple[int, dict[str, str], bytes]:
        """The rest of an HTTP/1.1 answer: status, headers (lower-case names) and body."""
        assert self.reader is not None
        status = int(status_line.split()[1])
        head: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b"\n", b""):
            k, _, v = line.decode("latin-1").partition(":")
            head[k.strip().lower()] = v.strip()
        if "content-length" in head:
            body = await self.reader.readexactly(min(int(head["content-length"]), MAX_BODY))
        elif head.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                body = (body + await self.reader.readexactly(size))[:MAX_BODY]
                await self.reader.readline()
            while await self.reader.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
        elif status in (204, 304) or 100 <= status < 200:
            body = b""
        else:
            body = await self.reader.read(MAX_BODY)  # ends with the connection
            head["connection"] = "close"
        return status, head, body


async def constant_rate(
    targets: list[str] | Callable[[], list[str]],
    rate: float,
    duration_s: float,
    timeout_s: float = 10.0,
    max_inflight: int = 1000,
    headers: dict[str, str] | None = None,
    method: str = "GET",
    out: LoadResult | None = None,
    keep_alive: KeepAlive | None = None,
    retransmit: bool = False,
    graceful_stop_s: float | None = None,
    listening: Callable[[str], bool] | None = None,
) -> LoadResult:
    """``targets``: the URLs, or a function giving the current ones (a Service's Ready endpoints).
    None at a request's time counts as a refused connection, as kube-proxy refuses then, or with
    ``retransmit`` the request waits for an endpoint at its SYN's resends (1, 3, 7 … s), as a
    client whose rejection was lost does. With ``keep_alive``, requests go out on free clients'
    kept connections (new clients only when all are busy; ``max_inflight`` does not apply).
    ``out`` is filled as answers come (for a live display). Requests still unanswered
    ``graceful_stop_s`` after the last one was sent are interrupted (k6's gracefulStop; default:
    wait for every answer up to the timeout). ``listening``: whether the scenario has the app
    behind a URL up and listening now (a refusal there is the lab's)."""
    given = targets if callable(targets) else lambda: targets

    def current() -> list[str]:
        urls = given()
        if not all(u.startswith("http://127.0.0.1:") for u in urls):
            raise ValueError("the lab only sends load to 127.0.0.1")
        return urls

    out = out if out is not None else LoadResult()
    slots = asyncio.Semaphore(max_inflight)
    pending: set[asyncio.Task[None]] = set()
    cursor = itertools.count()
    hdrs = dict(headers or {})
    # Idle clients (k6's VU pool, first in first out), each holding its connection or none.
    free: deque[list[Conn | None]] = deque([None] for _ in range(keep_alive.vus if keep_alive else 0))

    async def pick(since: float) -> str:
        """The endpoint a new connection gets (round robin over the Ready ones)."""
        for at in (*SYN_AT_MS[1:], None):
            urls = current()
            if urls:
                return urls[next(cursor) % len(urls)]
            if not retransmit:
                raise NoEndpoint
            if at is None:  # no SYN left: TCP gives up
                await asyncio.sleep(max(0.0, since + SYN_GIVE_UP_MS / 1000 - time.monotonic()))
                raise TimeoutError
            await asyncio.sleep(max(0.0, since + at / 1000 - time.monotonic()))
        raise AssertionError("unreachable")

    up = listening or (lambda url: False)

    def answered(t: float, status: int, body: bytes, url: str) -> bool:
        """Count an answer; whether it failed (k6 expects 200-399)."""
        out.statuses[status] += 1
        out.latency_us.record_value(max(1, round((time.monotonic() - t) * 1e6)))
        if status < 400:
            out.ok += 1
            return False
        out.failed[cause_of(status, body, status == 503 and up(url))] += 1
        return True

    def ended(t: float, failed: bool | None) -> None:
        """A request's k6 samples (none when it was interrupted: k6 logs no sample for it)."""
        if failed is not None:
            out.trail.append((time.time(), (time.monotonic() - t) * 1000, failed))

    async with aiohttp.ClientSession(timeout=exact(timeout_s)) as session:

        async def one(url: str | None) -> None:
            t = time.monotonic()
            failed: bool | None = True
            try:
                async with asyncio.timeout(timeout_s):
                    url = url or await pick(t)
                    async with session.request(method, url, headers=headers) as r:
                        body = await r.read()
                failed = answered(t, r.status, body, url)
            except TimeoutError:
                out.failed["timeout"] += 1
            except NoEndpoint:
                out.failed["no_endpoint"] += 1
            except aiohttp.ClientConnectorError as e:  # refused: nothing listens (or the lab's own)
                out.failed[refused_by(e.os_error.errno, url is not None and up(url))] += 1
            except aiohttp.ClientError:
                out.failed["killed"] += 1  # reset or closed after connecting
            except asyncio.CancelledError:
                failed = None
                raise
            finally:
                ended(t, failed)
                slots.release()

        async def kept(vu: list[Conn | None]) -> None:
            t = time.monotonic()
            failed: bool | None = True
            try:
                async with asyncio.timeout(timeout_s):
                    for _ in range(2):
                        conn = vu[0]
                        if conn is None or conn.closed:
                            # Its connection is gone: the next one may land on another pod.
                            if conn is not None:
                                conn.close()
                            conn = vu[0] = Conn(await pick(t))
                        try:
                            status, body = await conn.request(method, hdrs)
                            break
                        except Stale:
                            vu[0] = None
                    else:
                        raise ConnectionResetError("closed before answering, twice")
                failed = answered(t, status, body, conn.url)
            except TimeoutError:
                out.failed["timeout"] += 1
                _drop(vu)  # a client closes a connection it gave up on
            except NoEndpoint:
                out.failed["no_endpoint"] += 1
            except Refused as e:
                url = vu[0].url if vu[0] is not None else ""
                out.failed[refused_by(e.err, bool(url) and up(url))] += 1
                _drop(vu)
            except (ConnectionError, asyncio.IncompleteReadError):
                out.failed["killed"] += 1  # reset, or cut off mid-answer
                _drop(vu)
            except asyncio.CancelledError:
                failed = None
                raise
            finally:
                ended(t, failed)
                free.append(vu)

        start = time.monotonic()
        n = int(rate * duration_s)
        clients = len(free)
        for i in range(n):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            out.behind_s = max(out.behind_s, time.monotonic() - start - i / rate)
            task: asyncio.Task[None]
            urls = current()  # also where the lab's own URLs are checked, before any is used
            if keep_alive is not None:
                if not free and clients < keep_alive.max_vus:
                    free.append([None])
                    clients += 1
                if not free:
                    out.dropped += 1
                    continue
                out.sent += 1
                out.sent_at.append(time.time())
                task = asyncio.create_task(kept(free.popleft()))
            else:
                if slots.locked():
                    out.dropped += 1
                    continue
                out.sent += 1
                out.sent_at.append(time.time())
                if not urls and not retransmit:
                    out.failed["no_endpoint"] += 1
                    ended(time.monotonic(), True)
                    continue
                await slots.acquire()
                # Round robin when there are several; none yet: wait for one (retransmit).
                task = asyncio.create_task(one(urls[i % len(urls)] if urls else None))
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.wait(pending, timeout=timeout_s + 1 if graceful_stop_s is None else graceful_stop_s)
        if pending:
            out.interrupted += len(pending)
            for task in list(pending):
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for vu in free:
            _drop(vu)
    return out


def _drop(vu: list[Conn | None]) -> None:
    if vu[0] is not None:
        vu[0].close()
    vu[0] = None
