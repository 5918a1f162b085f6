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
result."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import os
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probesim.errors import InputError
from probesim.model.kubernetes import Workload
from probesim.model.scenario import (
    Capacity,
    ContainerBehavior,
    Deadlock,
    DelayFault,
    Hang,
    Scenario,
)
from probesim.model.traffic import Traffic

# A run may plan to use this share of a limit: the rest is for what no estimate counts (Python's
# and Envoy's own files, probes, Envoy's admin and stats connections, sockets in TIME_WAIT).
PLAN_SHARE = 0.8
BASE_FDS = 150  # a process's own files beside its connections (Python's, Envoy's threads' pipes)
DEFAULT_TIMEOUT_S = 60.0  # a route's client timeout when it gives none (k6's)
DEFAULT_VUS = 1000  # a route's cap on requests in flight when it gives none (the lab's and k6's)
# Judged starved: the event loop or the load generator this far behind their schedule, on a
# machine this busy.
LAG_LIMIT_S = 0.25
BUSY_SHARE = 0.9
FD_WARN_SHARE = 0.95
# Judged starved too: a process that waited for a CPU (runnable, not running: the kernel's
# schedstat run delay) this share of the time it wanted one, and at least this long — its CPU
# per request (the app's scripted costs) then took that much longer than scripted.
WAIT_SHARE = 0.2
WAIT_MIN_S = 1.0
# The CPU one request costs the lab's own processes (the load generator's client, the pod's
# Envoy, the test app's HTTP server and its calls' client) beside the app's scripted ``cpu``:
# about 1 ms, as measured on seed 004 on a 2-core machine. A run plans on three quarters of the
# machine's cores for its requests; the rest is the event loops' slack and the probes.
LAB_CPU_PER_REQUEST_S = 0.001
CPU_PLAN_SHARE = 0.75
SCALED = (
    "traffic rates, the clients' pools (preAllocatedVUs, maxVUs), the app's worker pools and "
    "queues, dependencies' capacities; times, probes and CPU per request are unchanged"
)


def raise_nofile() -> int:
    """This process's RLIMIT_NOFILE soft limit raised to its hard limit (children inherit it):
    the descriptors each of the lab's processes may hold."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard
    if hard == resource.RLIM_INFINITY:
        want = _nr_open()
    if soft == resource.RLIM_INFINITY or soft >= want:
        return int(soft if soft != resource.RLIM_INFINITY else want)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        return int(soft)
    return int(want)


def _nr_open() -> int:
    try:
        return int(Path("/proc/sys/fs/nr_open").read_text())
    except (OSError, ValueError):
        return 1 << 20


def port_range() -> int:
    """How many ephemeral ports this machine gives connections to one address."""
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        return 28_232  # Linux's default range, 32768-60999
    return hi - lo + 1


# -- before the run ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hold:
    """What a route's requests hold: ``share`` of them wait ``seconds`` at the client (up to
    its timeout), and their calls to ``dependency`` stay open ``call_s`` at the app."""

    share: float
    seconds: float
    dependency: str | None
    call_s: float
    what: str  # "delayed calls to httpbin"


def _served_by(scenario: Scenario, t: Traffic, workloads: list[Workload]) -> list[Workload]:
    from probesim.lab.status import selects

    name = scenario.service_for(t).name
    service = next((v for v in scenario.services if v.name == name), None)
    return [w for w in workloads if selects(service, w.pod_labels)]


def _behavior(scenario: Scenario, w: Workload) -> ContainerBehavior:
    c = w.pod_spec.containers[0]
    return scenario.behavior(w.name).containers.get(c.name, ContainerBehavior())


def holds(scenario: Scenario, t: Traffic, w: Workload) -> list[Hold]:
    """The long holds the lab foresees for a route's requests to one workload: its path's calls
    to a dependency with a delay fault or a hanging outage, and the app's hangs."""
    b = _behavior(scenario, w)
    timeout = (t.timeout or DEFAULT_TIMEOUT_S * 1000) / 1000
    out = []
    cost = b.routes.get(t.path) or b.routes.get("*")
    for call in cost.calls if cost is not None else ():
        dep = scenario.spec.dependencies.get(call.dependency or "")
        if dep is None:
            continue
        limit = call.timeout / 1000 if call.timeout is not None else math.inf
        for f in dep.faults:
            if isinstance(f, DelayFault) and f.percent > 0:
                d = f.delay / 1000
                out.append(
                    Hold(f.percent / 100, min(d, timeout), call.dependency, min(d, limit),
                         f"{f.delay / 1000:g} s delayed calls to {call.dependency}")
                )  # fmt: skip
    for ep in b.episodes:
        if isinstance(ep, Hang | Deadlock):
            length = ep.for_ / 1000 if isinstance(ep, Hang) else math.inf
            out.append(Hold(1.0, min(length, timeout), None, 0.0, "requests held by the app's hang"))
    return out


@dataclass
class Demand:
    """What a run holds open at once at its peak, per process of the lab."""

    per_process: dict[str, int] = field(default_factory=dict)  # "lab", "app patient-0", "sidecar patient-0"
    per_address: dict[str, int] = field(default_factory=dict)  # connections to one address (ports)
    why: dict[str, str] = field(default_factory=dict)  # per process: what holds them


def _peak(rate: float, active_s: float, run_s: float, cap: int, hold: Hold) -> tuple[float, float, float]:
    """A route's clients held at once, calls held at once and the held calls' rate at their
    peak, second by second: requests start at ``rate``, ``share`` of them hold a client for
    ``seconds`` (no more than ``cap`` at once: arrivals beyond find no free client) and their
    call for ``call_s`` (to the run's end at most)."""
    steps = max(math.ceil(run_s), 1)
    started = [0.0] * steps
    busy_peak = calls_peak = 0.0
    for i in range(steps):
        busy = sum(started[max(0, i - math.ceil(hold.seconds) + 1) : i])
        n = min(rate * hold.share, max(cap - busy, 0.0)) if i < active_s else 0.0
        started[i] = n
        busy_peak = max(busy_peak, busy + n)
        span = math.ceil(min(hold.call_s, run_s))
        calls_peak = max(calls_peak, sum(started[max(0, i - span + 1) : i + 1]))
    return busy_peak, calls_peak, max(started)


def demand(scenario: Scenario, workloads: list[Workload], routes: list[Traffic], run_s: float) -> Demand:
    """The connections each of the lab's processes holds at the run's peak (``BASE_FDS`` each
    beside them), from the routes' rates, clients and the holds the lab foresees."""
    from probesim.engine.fleet import injected
    from probesim.lab.traffic import meshed
    from probesim.model.kubernetes import pod_names_of

    d = Demand()
    lab = float(BASE_FDS)
    why: list[str] = []
    per_pod: dict[str, float] = {}
    sidecar: dict[str, float] = {}
    calls_to: dict[str, float] = {}
    for t in routes:
        rate = t.rate or 0.0
        start = t.start / 1000
        stop = min(t.stop / 1000 if t.stop is not None else run_s, run_s)
        active = max(stop - start, 0.0)
        cap = t.max_vus or DEFAULT_VUS
        served = _served_by(scenario, t, workloads)
        clients = float(min(cap, t.pre_allocated_vus or 1)) if t.keep_alive else 0.0
        for w in served:
            share = 1 / len(served)
            for h in holds(scenario, t, w):
                busy, calls, started = _peak(rate * share, active, run_s - start, cap, h)
                clients += busy
                if h.dependency is not None:
                    calls_to[h.dependency] = calls_to.get(h.dependency, 0.0) + calls
                    why.append(f"{started:,.0f}/s × {h.call_s:g} s {h.what.split(' ', 2)[-1]}")
                else:
                    why.append(f"{t.label}: {busy:,.0f} {h.what}")
                pods = pod_names_of(w)
                for p in pods:
                    per_pod[p] = per_pod.get(p, 0.0) + (busy + calls) / len(pods)
                    if injected(w, scenario):
                        sidecar[p] = sidecar.get(p, 0.0) + 2 * busy / len(pods)
        clients = min(clients, cap)
        if clients >= 1:
            why.append(f"{clients:,.0f} {t.label} clients")
        if meshed(scenario, t):  # through client sidecars: each holds both sides
            for i in range(t.clients):
                key = f"client sidecar {i}"
                d.per_process[key] = d.per_process.get(key, BASE_FDS) + round(2 * clients / t.clients)
        lab += clients
    for name, n in calls_to.items():
        lab += n  # served by the lab's own process
        d.per_address[f"dependency {name}"] = round(n)
    d.per_process["lab"] = round(lab)
    d.why["lab"] = ", ".join(why)
    for p, n in per_pod.items():
        d.per_process[f"app {p}"] = round(BASE_FDS + n)
        d.why[f"app {p}"] = ", ".join(why)
    for p, n in sidecar.items():
        d.per_process[f"sidecar {p}"] = round(BASE_FDS + n)
        d.why[f"sidecar {p}"] = ", ".join(why)
    return d


def _nice_scale(fits: float) -> float:
    """The largest of 0.9, 0.8 … 0.1, 0.09 … that is at most ``fits``."""
    if fits <= 0:
        return 0.0
    unit = 10.0 ** math.floor(math.log10(fits))
    return float(round(math.floor(fits / unit) * unit, 12))


def cpu_needed(
    scenario: Scenario, workloads: list[Workload], routes: list[Traffic]
) -> tuple[float, float, float]:
    """The cores a run keeps busy at its peak: each route's rate × (its path's scripted CPU +
    ``LAB_CPU_PER_REQUEST_S``) while the routes overlap, taken whole, a workload's scripted CPU
    no more than its pods can spend (a test app works on one core, or its CPU limit: it holds
    itself to its quota); and the requests per second and mean scripted CPU per request (s)."""
    from probesim.model.kubernetes import pod_names_of

    rate = cpu = 0.0
    scripted: dict[str, float] = {}
    for t in routes:
        served = _served_by(scenario, t, workloads)
        for w in served:
            b = _behavior(scenario, w)
            cost = b.routes.get(t.path) or b.routes.get("*")
            r = (t.rate or 0.0) / len(served)
            rate += r
            scripted[w.name] = scripted.get(w.name, 0.0) + r * (cost.cpu / 1000 if cost is not None else 0.0)
    for w in workloads:
        limit = w.pod_spec.containers[0].resources.limits.cpu
        per_pod = min(limit / 1000, 1.0) if limit else 1.0
        cpu += min(scripted.get(w.name, 0.0), len(pod_names_of(w)) * per_pod)
    return cpu + rate * LAB_CPU_PER_REQUEST_S, rate, cpu / rate if rate else 0.0


def check_headroom(
    scenario: Scenario,
    workloads: list[Workload],
    routes: list[Traffic],
    run_s: float,
    nofile: int,
    cores: int | None = None,
    scale: float = 1.0,
) -> Demand:
    """Refuse, in one line naming the limit, a run whose connections one process of the lab
    cannot hold (``nofile`` descriptors each), whose calls to one address need more ephemeral
    ports than the machine has, or whose requests need more than ``CPU_PLAN_SHARE`` of its
    ``cores``; the scale it names (of the scenario's own load: the run is at ``scale`` of it)
    fits all three."""
    d = demand(scenario, workloads, routes, run_s)
    cores = cores if cores is not None else machine_cores()
    room = nofile * PLAN_SHARE
    name, most = max(d.per_process.items(), key=lambda kv: kv[1], default=("lab", 0))
    ports = port_range() * PLAN_SHARE
    need, rate, each = cpu_needed(scenario, workloads, routes)
    fits = {
        "fds": (room - BASE_FDS) / max(most - BASE_FDS, 1),
        "ports": min((ports / n for n in d.per_address.values() if n), default=math.inf),
        "cpu": cores * CPU_PLAN_SHARE / need if need else math.inf,
    }
    scale = _nice_scale(min(fits.values()) * scale)
    if fits["fds"] < 1:
        raise InputError(
            f"lab: this run holds up to ~{most - BASE_FDS:,} connections open at once in one process "
            f"({name}: {d.why.get(name, '')}); this machine allows {nofile:,} file descriptors per process "
            f"(ulimit -n) — run with --scale {scale:g} or raise the limit"
        )
    for what, n in d.per_address.items():
        if n > ports:
            raise InputError(
                f"lab: this run holds up to ~{n:,} connections to one address ({what}) at once; this "
                f"machine has {port_range():,} ephemeral ports (net.ipv4.ip_local_port_range) — run with "
                f"--scale {scale:g} or widen the range"
            )
    if fits["cpu"] < 1:
        raise InputError(
            f"lab: this run keeps ~{need:.1f} cores busy ({rate:,.0f} requests/s × {each * 1000:.2g} ms "
            f"of the app's scripted CPU and ~{LAB_CPU_PER_REQUEST_S * 1000:g} ms of the lab's own each); "
            f"this machine has {cores} cores and the lab plans on {CPU_PLAN_SHARE:.0%} of them — run with "
            f"--scale {scale:g} or on a bigger machine"
        )
    return d


def machine_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def scaled(scenario: Scenario, scale: float) -> Scenario:
    """The scenario at ``scale`` of its load (``SCALED``): each endpoint's failed share stays
    comparable where what decides it is a time or a share, not a count."""
    if scale == 1:
        return scenario
    if not 0 < scale < 1:
        raise InputError(
            f"{scale:g}: give a scale between 0 and 1 (0.1: a tenth of the rates)", field="--scale"
        )

    def up(n: int | None) -> int | None:
        return None if n is None else max(1, math.ceil(n * scale))

    traffic = []
    for t in scenario.spec.traffic:
        if t.rate is None:
            raise InputError(
                f"spec.traffic {t.label}: --scale scales constant rates (rate:) only", field="--scale"
            )
        traffic.append(
            t.model_copy(update={
                "rate": t.rate * scale,
                "max_vus": up(t.max_vus or DEFAULT_VUS),
                "pre_allocated_vus": up(t.pre_allocated_vus),
            })
        )  # fmt: skip

    def cap(c: Capacity) -> Capacity:
        q = None if c.queue is None else max(0, math.ceil(c.queue * scale))
        return c.model_copy(update={"workers": up(c.workers), "queue": q})

    def behaving(b: ContainerBehavior) -> ContainerBehavior:
        return b.model_copy(update={"capacity": cap(b.capacity)})

    behavior = {}
    for name, wb in scenario.spec.behavior.items():
        containers = {k: behaving(v) for k, v in wb.containers.items()}
        pods = tuple(
            ov.model_copy(update={"containers": {k: behaving(v) for k, v in ov.containers.items()}})
            for ov in wb.pods
        )
        behavior[name] = wb.model_copy(update={"containers": containers, "pods": pods})
    deps = {
        k: v.model_copy(update={"capacity": up(v.capacity)}) for k, v in scenario.spec.dependencies.items()
    }
    spec = scenario.spec.model_copy(
        update={"traffic": tuple(traffic), "behavior": behavior, "dependencies": deps}
    )
    return scenario.model_copy(update={"spec": spec})


# -- while it runs -------------------------------------------------------------------------------


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


def _cpu_busy() -> tuple[float, float]:
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
        self.cpu0 = _cpu_busy()
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
        self.cpu0 = _cpu_busy()
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
        last = _cpu_busy()
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
                now = _cpu_busy()
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
    end = _cpu_busy()
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
