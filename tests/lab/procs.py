"""The processes a test started, and only those: found under the test's own process (or a lab it
started) in /proc, each known by its PID and start time so that a PID reused by someone else's
process is never taken for ours; bounded waits on conditions instead of fixed sleeps; and what the
node tests (test_lab_nodes, test_lab_drains, test_lab_pool_upgrade) read of a lab run's Result:
an event's times, the node a pod was scheduled to, the failed requests sent in a span. Their CPU
hog (``busy``) is a fixture of conftest.py."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from probesim.results import Result

Proc = tuple[int, int]  # PID, start time (clock ticks since boot)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """State, parent PID and start time of a process; None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def descendants(root: int | None = None) -> set[Proc]:
    """The live (not zombie) processes under ``root`` (default: this one), at any depth."""
    root = os.getpid() if root is None else root
    children: dict[int, list[tuple[int, str, int]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            children.setdefault(st[1], []).append((int(entry), st[0], st[2]))
    out: set[Proc] = set()
    todo = [root]
    while todo:
        for pid, state, ticks in children.get(todo.pop(), []):
            todo.append(pid)
            if state not in ("Z", "X"):
                out.add((pid, ticks))
    return out


def alive(procs: set[Proc]) -> set[Proc]:
    """Those of ``procs`` still running (the same process: same PID and start time)."""
    out = set()
    for pid, ticks in procs:
        st = _stat(pid)
        if st is not None and st[0] not in ("Z", "X") and st[2] == ticks:
            out.add((pid, ticks))
    return out


def command_of(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def listening_tcp_ports(pid: int) -> set[int]:
    """The TCP ports a process listens on (its sockets' inodes in /proc/net/tcp{,6})."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # gone
        return set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                ports.add(int(f[1].split(":")[1], 16))
    return ports


def children_left() -> list[int]:
    """Processes this test process started, directly or not, still running."""
    return sorted(pid for pid, _ in descendants())


def wait_until(condition: Callable[[], bool], timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll ``condition`` until it holds or ``timeout_s`` has passed; whether it held."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)


def at(r: Result, obj: str, reason: str) -> list[int]:
    """The times (ms) of ``obj``'s events of ``reason``."""
    return [e.time_ms for e in r.events_for(obj, reason)]


def node_of(r: Result, pod: str) -> str:
    """The node ``pod`` was scheduled to (its one Scheduled event)."""
    (e,) = r.events_for(f"pod/{pod}", "Scheduled")
    return e.message.rsplit(" ", 1)[1]


def failed_sent(r: Result, a: int, b: int) -> int:
    """The lab's failed requests sent in [a, b) ms."""
    sent = r.series["route./.failed_sent"]
    i, j = (int(x) for x in r.time_ms.searchsorted([a, b]))
    return int(sent[min(j, sent.size - 1)] - sent[min(i, sent.size - 1)])
