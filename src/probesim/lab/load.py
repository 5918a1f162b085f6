"""An open-loop load generator: requests start at a constant rate whatever the answers do (no
coordinated omission), with a cap on requests in flight and a per-request timeout; it counts
answers by status as a client sees them. Only 127.0.0.1."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp
from hdrh.histogram import HdrHistogram


@dataclass
class LoadResult:
    sent: int = 0
    dropped: int = 0  # no free slot (in-flight cap)
    statuses: Counter[int] = field(default_factory=Counter)  # answers by HTTP status
    ok: int = 0  # 2xx and 3xx
    failed: Counter[str] = field(default_factory=Counter)  # by the simulation's cause names
    # answered requests' latency in µs, 1 µs to 10 min at 3 significant digits
    latency_us: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, 600_000_000, 3))

    def latency_ms(self) -> dict[str, float]:
        """p50, p95, p99 and max, as the simulation reports them (empty when nothing answered)."""
        h = self.latency_us
        if h.get_total_count() == 0:
            return {}
        qs = {f"p{q}": h.get_value_at_percentile(q) / 1000 for q in (50, 95, 99)}
        return {k: round(v, 1) for k, v in {**qs, "max": h.get_max_value() / 1000}.items()}


def cause_of(status: int, body: bytes) -> str:
    """A failed answer's cause as the simulation names it, from Envoy's local replies (a sidecar
    answers 503 "no healthy upstream" with no endpoint, "upstream connect error" when the pod
    refuses, 504 "upstream request timeout") and the test app's 503 "overloaded"."""
    if status == 503 and body.startswith(b"no healthy upstream"):
        return "no_endpoint"
    if status == 503 and body.startswith(b"upstream connect error"):
        return "killed" if b"reset reason: connection termination" in body else "restarting"
    if status == 504 and body.startswith(b"upstream request timeout"):
        return "timeout"
    if status == 503 and body == b"overloaded\n":
        return "rejected"
    return "error_status"


async def constant_rate(
    targets: list[str] | Callable[[], list[str]],
    rate: float,
    duration_s: float,
    timeout_s: float = 10.0,
    max_inflight: int = 1000,
    headers: dict[str, str] | None = None,
    method: str = "GET",
    out: LoadResult | None = None,
) -> LoadResult:
    """``targets``: the URLs, or a function giving the current ones (a Service's Ready endpoints);
    none at a request's time counts as a refused connection, as kube-proxy refuses then. ``out``
    is filled as answers come (for a live display)."""
    current = targets if callable(targets) else lambda: targets
    out = out if out is not None else LoadResult()
    slots = asyncio.Semaphore(max_inflight)
    pending: set[asyncio.Task[None]] = set()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:

        async def one(url: str) -> None:
            t = time.monotonic()
            try:
                async with session.request(method, url, headers=headers) as r:
                    body = await r.read()
                    out.statuses[r.status] += 1
                out.latency_us.record_value(max(1, round((time.monotonic() - t) * 1e6)))
                if r.status < 400:
                    out.ok += 1
                else:
                    out.failed[cause_of(r.status, body)] += 1
            except TimeoutError:
                out.failed["timeout"] += 1
            except aiohttp.ClientConnectorError:
                out.failed["restarting"] += 1  # refused: nothing listens
            except aiohttp.ClientError:
                out.failed["killed"] += 1  # reset or closed after connecting
            finally:
                slots.release()

        start = time.monotonic()
        n = int(rate * duration_s)
        for i in range(n):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            if slots.locked():
                out.dropped += 1
                continue
            urls = current()
            if not all(u.startswith("http://127.0.0.1:") for u in urls):
                raise ValueError("the lab only sends load to 127.0.0.1")
            out.sent += 1
            if not urls:
                out.failed["no_endpoint"] += 1
                continue
            await slots.acquire()
            task = asyncio.create_task(one(urls[i % len(urls)]))  # round robin when there are several
            pending.add(task)
            task.add_done_callback(pending.discard)
        if pending:
            await asyncio.wait(pending, timeout=timeout_s + 1)
    return out
