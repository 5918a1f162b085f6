"""The lab's headroom while a run goes on (``Monitor``; lab/headroom.py judges what it measured):
every process's descriptors in use against its limit, CPU time against wall time and time waited
for a CPU, the event loop's lag behind its timers, the machine's CPU, Python's garbage collector
in the lab's process, and the kernel's accept-queue overflows (TcpExt ListenOverflows and
ListenDrops in /proc/net/netstat)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Judged starved: the event loop or the load generator this far behind their schedule, on a
# machine this busy.
LAG_LIMIT_S = 0.25
BUSY_SHARE = 0.9


def netstat() -> dict[str, int]:
    """The kernel's TcpExt counters of accept-queue overflows (system-wide)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return {}
    for head, values in zip(lines[::2], lines[1::2], strict=False):
        if head.startswith("TcpExt:"):
            d = dict(zip(head.split()[1:], (int(v) for v in values.split()[1:]), strict=False))
            return {k: d[k] for k in ("ListenOverflows", "ListenDrops") if k in d}
    return {}


def cpu_busy() -> tuple[float, float]:
    """The machine's busy and total CPU time so far (/proc/stat, all cores), in ticks."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    total = sum(f[:8])
    return float(total - idle), float(total)


def _waited(pid: int) -> float:
    """Seconds the process has waited for a CPU while runnable (/proc/PID/schedstat's second
    field, the scheduler's run delay; 0 where the kernel does not keep it)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _proc(pid: int) -> tuple[int, float, int, float] | None:
    """A process's descriptors open, CPU seconds, descriptor limit and seconds waited for a CPU;
    None once it is gone."""
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
        limit = 0
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                v = line.split()[3]
                limit = int(v) if v.isdigit() else 0
    except (OSError, ValueError, IndexError):
        return None
    return fds, cpu, limit, _waited(pid)


@dataclass
class ProcFigures:
    """One of the lab's processes over the run."""

    name: str
    fds_peak: int = 0
    fds_limit: int = 0
    cpu_s: float = 0.0
    waited_s: float = 0.0  # runnable but waiting for a CPU (the machine's other work, or the lab's)


class Monitor:
    """Samples the lab's processes every ``period_s`` and the event loop's lag every tenth of it."""

    def __init__(self, names: Any, period_s: float = 1.0) -> None:
        """``names``: a function giving the lab's processes now, PID → name."""
        self.names = names
        self.period_s = period_s
        self.procs: dict[int, ProcFigures] = {}
        self.lag_max_s = 0.0
        self.lags: list[float] = []
        self.busy: list[float] = []  # the machine's busy share of all its cores, each period
        self.starved_periods = 0
        self.net0 = netstat()
        self.cpu0 = cpu_busy()
        # Accept-queue overflows the scenario made on purpose: a down node's pods answer no SYN
        # (lab.nodes shrinks their queues), counted over the time any was so.
        self.dead_hosts: dict[str, int] = {}
        self.t0 = time.monotonic()
        self.t1 = self.t0
        self.task: asyncio.Task[None] | None = None
        self.gc_s = 0.0  # this process's time in Python's garbage collector during the run
        self.gc_max_s = 0.0
        self._gc_began = 0.0

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_began = time.perf_counter()
        elif self._gc_began:
            took = time.perf_counter() - self._gc_began
            self.gc_s += took
            self.gc_max_s = max(self.gc_max_s, took)

    def start(self) -> None:
        self.net0 = netstat()
        self.cpu0 = cpu_busy()
        self.t0 = self.t1 = time.monotonic()
        gc.callbacks.append(self._gc)
        self.task = asyncio.create_task(self._run())

    def sample(self) -> None:
        for pid, name in dict(self.names()).items():
            got = _proc(pid)
            if got is None:
                continue
            fds, cpu, limit, waited = got
            p = self.procs.setdefault(pid, ProcFigures(name))
            p.fds_peak = max(p.fds_peak, fds)
            p.fds_limit = limit
            p.cpu_s = cpu
            p.waited_s = waited

    async def _run(self) -> None:
        tick = self.period_s / 10
        last = cpu_busy()
        n = 0
        while True:
            at = time.monotonic()
            await asyncio.sleep(tick)
            lag = max(time.monotonic() - at - tick, 0.0)
            self.lags.append(lag)
            self.lag_max_s = max(self.lag_max_s, lag)
            n += 1
            if n % 10 == 0:
                self.sample()
                now = cpu_busy()
                busy = (now[0] - last[0]) / max(now[1] - last[1], 1.0)
                self.busy.append(busy)
                if busy >= BUSY_SHARE and max(self.lags[-10:]) > LAG_LIMIT_S:
                    self.starved_periods += 1
                last = now

    async def stop(self) -> None:
        """The last sample, once (the run stops it as its load ends, or as it is cut short)."""
        if self.task is None:
            return
        task, self.task = self.task, None
        self.t1 = time.monotonic()
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._gc)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self.sample()
