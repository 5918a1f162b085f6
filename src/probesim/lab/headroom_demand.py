"""The lab's headroom before a run starts (lab/headroom.py judges it after): what one machine
can hold of a run. The connections the run holds open at once — requests held by the clients
(k6's VUs, each a connection), the app's calls held by a delayed or hung dependency (they outlive
the client's timeout: the app does not cancel them) — per process of the lab, against its
file-descriptor limit (RLIMIT_NOFILE, raised from its soft to its hard value first, for the lab
and every child: ``raise_nofile``) and against the ephemeral ports to one address, and the cores
its requests keep busy. A run past them is refused in one line that names the limit and the scale
that fits (``check_headroom``; ``--scale``: ``scaled``)."""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass, field
from pathlib import Path

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
