"""The lab's own headroom: what one machine can hold of a run, said before it starts and
measured while it runs, so that the machine's limits are never reported as the app's failures.

Before the run (``check_headroom``): the connections the run holds open at once — requests
held by the clients (k6's VUs, each a connection), the app's calls held by a delayed or hung
dependency (they outlive the client's timeout: the app does not cancel them) — per process of
the lab, against its file-descriptor limit (RLIMIT_NOFILE, raised from its soft to its hard
value first, for the lab and every child: ``raise_nofile``) and against the ephemeral ports to
one address. A run past them is refused in one line that names the limit and the scale that
fits (``--scale``: ``scaled``).

While it runs (``Monitor``): every process's descriptors in use against its limit, CPU time
against wall time, the event loop's lag behind its timers, the machine's CPU, and the kernel's
accept-queue overflows (TcpExt ListenOverflows and ListenDrops in /proc/net/netstat); the load
generator's lag behind its schedule and the refusals the scenario did not decide (``lab`` in a
route's causes: a connection refused or an Envoy's connect failure while the scenario has the
app up and listening, or a descriptor or port the machine would not give). ``Headroom``
judges them: a figure the lab could not measure faithfully is named as such, beside the
result.

What is worked out before the run is in lab/headroom_demand.py, what is measured while it runs in
lab/headroom_monitor.py; this module judges the measures (``judge``) and says the judgement
(``Headroom``, ``mark_unfaithful``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from probesim.lab.headroom_demand import SCALED, Demand, machine_cores
from probesim.lab.headroom_monitor import LAG_LIMIT_S, Monitor, ProcFigures, cpu_busy, netstat

# Judged run out: a process's descriptors at this share of its limit.
FD_WARN_SHARE = 0.95
# Judged starved: a process that waited for a CPU (runnable, not running: the kernel's
# schedstat run delay) this share of the time it wanted one, and at least this long — its CPU
# per request (the app's scripted costs) then took that much longer than scripted.
WAIT_SHARE = 0.2
WAIT_MIN_S = 1.0


@dataclass
class Headroom:
    """What the lab measured of itself, and what follows for the figures of its result."""

    scale: float
    nofile: int
    planned: Demand
    processes: list[ProcFigures]
    wall_s: float
    cores: int
    machine_busy: float  # the machine's busy share of all its cores over the run
    lag_max_s: float
    lag_p99_s: float
    gc_s: float  # the lab process's time in Python's garbage collector, and its longest pause
    gc_max_s: float
    starved_s: int  # seconds the loop lagged past LAG_LIMIT_S on a machine busy past BUSY_SHARE
    listen_overflows: int
    listen_drops: int
    lab_refused: dict[str, int]  # per route: refusals the scenario did not decide
    behind_s: dict[str, float]  # per route: the load generator's worst lag behind its schedule
    notes: list[str] = field(default_factory=list)  # what could not be measured faithfully
    unfaithful_routes: set[str] = field(default_factory=set)
    all_unfaithful: bool = False

    @property
    def faithful(self) -> bool:
        return not self.notes

    def to_json(self) -> dict[str, Any]:
        return {
            "faithful": self.faithful,
            "notes": self.notes,
            "scale": self.scale,
            "scaled": SCALED if self.scale != 1 else "",
            "fileDescriptorLimit": self.nofile,
            "planned": {"connections": self.planned.per_process, "perAddress": self.planned.per_address},
            "processes": [
                {
                    "name": p.name,
                    "fdsPeak": p.fds_peak,
                    "fdsLimit": p.fds_limit,
                    "cpuSeconds": round(p.cpu_s, 2),
                    "waitedForCpuSeconds": round(p.waited_s, 2),
                }
                for p in self.processes
            ],
            "wallSeconds": round(self.wall_s, 2),
            "cores": self.cores,
            "machineBusy": round(self.machine_busy, 3),
            "loopLagMaxSeconds": round(self.lag_max_s, 3),
            "loopLagP99Seconds": round(self.lag_p99_s, 3),
            "gcSeconds": round(self.gc_s, 3),
            "gcMaxPauseSeconds": round(self.gc_max_s, 3),
            "starvedSeconds": self.starved_s,
            "listenOverflows": self.listen_overflows,
            "listenDrops": self.listen_drops,
            "labRefused": self.lab_refused,
            "loadBehindSeconds": {k: round(v, 3) for k, v in self.behind_s.items()},
            "unfaithfulRoutes": sorted(self.unfaithful_routes),
            "allUnfaithful": self.all_unfaithful,
        }

    def lines(self) -> list[str]:
        """The text beside the result."""
        out = [
            f"Lab headroom (scale {self.scale:g}"
            + (f": {SCALED}" if self.scale != 1 else "")
            + f"; {self.nofile:,} file descriptors per process):"
        ]
        for p in self.processes:
            share = p.fds_peak / p.fds_limit if p.fds_limit else 0.0
            cpu = p.cpu_s / self.wall_s if self.wall_s else 0.0
            out.append(
                f"  {p.name}: {p.fds_peak:,} of {p.fds_limit:,} descriptors at most ({share:.0%}), "
                f"CPU {p.cpu_s:.1f} s ({cpu:.0%} of a core), waited {p.waited_s:.1f} s for one"
            )
        out.append(
            f"  machine: {self.machine_busy:.0%} busy over its {self.cores} cores; the lab's event loop "
            f"{self.lag_max_s * 1000:.0f} ms behind its timers at worst "
            f"(p99 {self.lag_p99_s * 1000:.0f} ms), "
            f"starved {self.starved_s} s; its garbage collection {self.gc_s:.1f} s "
            f"(longest pause {self.gc_max_s * 1000:.0f} ms)"
        )
        behind = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in self.behind_s.items())
        out.append(f"  load generator behind its schedule at worst: {behind or '-'}")
        out.append(
            f"  accept queues overflowed {self.listen_overflows:,} times, SYNs dropped {self.listen_drops:,} "
            "(the kernel's counts, every process's on this machine)"
        )
        refused = ", ".join(f"{k} {v:,}" for k, v in self.lab_refused.items() if v)
        out.append(f"  refused by the lab itself, not by the scenario: {refused or 'none'}")
        for n in self.notes:
            out.append(f"  NOT FAITHFUL: {n}")
        return out


def _by_name(procs: Iterable[ProcFigures]) -> list[ProcFigures]:
    """One line per name: a pod's app over its restarts (each a process of its own) at its
    highest descriptors, with the CPU of all of them."""
    out: dict[str, ProcFigures] = {}
    for p in procs:
        q = out.setdefault(p.name, ProcFigures(p.name))
        q.fds_peak = max(q.fds_peak, p.fds_peak)
        q.fds_limit = max(q.fds_limit, p.fds_limit)
        q.cpu_s += p.cpu_s
        q.waited_s += p.waited_s
    return sorted(out.values(), key=lambda p: p.name)


def judge(
    monitor: Monitor,
    scale: float,
    nofile: int,
    planned: Demand,
    lab_refused: dict[str, int],
    behind_s: dict[str, float],
) -> Headroom:
    """The run's headroom, and the figures it could not measure faithfully."""
    lags = sorted(monitor.lags)
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] if lags else 0.0
    busy = monitor.cpu0
    end = cpu_busy()
    machine = (end[0] - busy[0]) / max(end[1] - busy[1], 1.0)
    net = netstat()
    h = Headroom(
        scale=scale,
        nofile=nofile,
        planned=planned,
        processes=_by_name(monitor.procs.values()),
        wall_s=monitor.t1 - monitor.t0,
        cores=machine_cores(),
        machine_busy=machine,
        lag_max_s=monitor.lag_max_s,
        lag_p99_s=p99,
        gc_s=monitor.gc_s,
        gc_max_s=monitor.gc_max_s,
        starved_s=monitor.starved_periods,
        listen_overflows=max(
            0,
            net.get("ListenOverflows", 0)
            - monitor.net0.get("ListenOverflows", 0)
            - monitor.dead_hosts.get("ListenOverflows", 0),
        ),
        listen_drops=max(
            0,
            net.get("ListenDrops", 0)
            - monitor.net0.get("ListenDrops", 0)
            - monitor.dead_hosts.get("ListenDrops", 0),
        ),
        lab_refused=lab_refused,
        behind_s=behind_s,
    )
    for route, n in lab_refused.items():
        if n:
            h.notes.append(
                f"route {route}: {n:,} requests were refused by the lab itself while the scenario had the "
                "app up and listening (left out of its failed requests)"
            )
            h.unfaithful_routes.add(route)
    full = [p for p in h.processes if p.fds_limit and p.fds_peak >= FD_WARN_SHARE * p.fds_limit]
    if full:
        h.notes.append(
            "descriptors ran out: "
            + ", ".join(f"{p.name} {p.fds_peak:,} of {p.fds_limit:,}" for p in full)
            + " — run with a smaller --scale or raise ulimit -n"
        )
        h.all_unfaithful = True
    late = {k: v for k, v in behind_s.items() if v > LAG_LIMIT_S}
    if h.starved_s or late:
        behind = ", ".join(f"{k} {v:.2f} s" for k, v in late.items())
        h.notes.append(
            f"the machine was short of CPU ({h.machine_busy:.0%} busy; the lab's loop up to "
            f"{h.lag_max_s * 1000:.0f} ms late"
            + (f", the load generator up to {behind} behind" if late else "")
            + "): event times, latencies and timeouts may be the machine's — run with a smaller --scale "
            "or on a quieter machine"
        )
        h.all_unfaithful = True
    waited = [
        p
        for p in h.processes
        if p.waited_s >= WAIT_MIN_S and p.waited_s >= WAIT_SHARE * (p.cpu_s + p.waited_s)
    ]
    if waited:
        h.notes.append(
            "processes waited for a CPU: "
            + ", ".join(f"{p.name} {p.waited_s:.1f} s beside {p.cpu_s:.1f} s of CPU" for p in waited)
            + " — their CPU per request took longer than scripted, so latencies, timeouts and throttling "
            "may be the machine's; run with a smaller --scale or on a quieter machine"
        )
        h.all_unfaithful = True
    if h.listen_overflows:
        h.notes.append(
            f"accept queues overflowed {h.listen_overflows:,} times on this machine during the run: "
            "connections waited for a SYN resend (1 s and more), so latencies and timeouts may be the lab's"
        )
        h.all_unfaithful = True
    return h


def mark_unfaithful(rows: list[dict[str, Any]], h: Headroom) -> None:
    """--compare's rows the lab could not measure faithfully: each marked ``faithful: false``
    and not agreeing — every row when the machine ran out of descriptors or CPU or its accept
    queues overflowed, else a route's rows when the lab refused some of its requests."""
    for r in rows:
        obj = str(r["object"])
        if h.all_unfaithful or (
            obj.startswith("route/") and obj.removeprefix("route/") in h.unfaithful_routes
        ):
            r["faithful"] = False
            r["agree"] = False
