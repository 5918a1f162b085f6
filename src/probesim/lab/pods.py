"""The lab's pods as data: each pod carries its own pod spec (restart policy, grace period), its
labels, its container and that container's scripted behaviour, and the state the lab's parts
keep on it — the runtime's process and back-off (``lab.runtime``), the probe workers' results
(``lab.prober``), its Ready condition and deletion (``lab.status``), its slot under the lab's
Deployment controller (``lab.controller``). The restart-policy decision is here too, once.
"""

from __future__ import annotations

import asyncio
import math
import random
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from probesim.errors import InputError
from probesim.kube.containers import restarts_with
from probesim.model.kubernetes import PROBE_TYPES, Container, PodSpec, Probe, ProbeType
from probesim.model.scenario import ContainerBehavior, Crash, Deadlock, Hang

HOST = "127.0.0.1"


def free_port() -> int:
    """A port free now on 127.0.0.1, for something that binds it later (a pod's container at
    each start, an Envoy): below the kernel's ephemeral range, so that no outgoing connection of
    the lab's own (load, probes, Envoys' upstreams) takes it in between; any free one else. Never
    one this process was given before: two draws made before either is bound both find it free,
    and the second to bind it fails (a container's start did, once: address already in use)."""
    low = _ephemeral_low()
    for _ in range(64 if low > 2048 else 0):
        port = _draws.randrange(max(low - 12_000, 1024), low)
        if port in _given:
            continue
        with socket.socket() as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
        _given.add(port)
        return port
    for _ in range(64):
        with socket.socket() as s:
            s.bind((HOST, 0))
            port = int(s.getsockname()[1])
        if port not in _given:
            _given.add(port)
            return port
    raise InputError("no free port on 127.0.0.1 for the lab: too many in use on this machine")


_draws = random.SystemRandom()
_given: set[int] = set()  # every port free_port handed out in this process


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


KILLED = 137  # what a container killed for a failed probe exits with (restarts unless Never)


@dataclass
class Worker:
    """One probe's worker state: its cached result for the container instance ``seen``, on
    hold after a liveness failure or a startup result, the consecutive-run counter."""

    kind: ProbeType
    probe: Probe
    cached: bool | None = None
    seen: int = -1
    on_hold: bool = False
    last: bool = False
    run: int = 0


@dataclass
class Warm:
    """A test app started ahead of its container: loaded, waiting for the go on ``control``."""

    proc: asyncio.subprocess.Process
    control: socket.socket
    loaded: asyncio.Future[bytes]  # b"r" once loaded; b"" if it died first


@dataclass
class Run:
    """A pod's container as the runtime (``lab.runtime``) runs it: its process (None while not
    running), the test apps loaded ahead for its next starts, instance and restart counts, the
    last exit and the back-off entry (doBackOff's), whether it is being killed."""

    proc: asyncio.subprocess.Process | None = None
    warm: list[Warm] = field(default_factory=list)
    listened: bool = False  # a --command accepted a connection at least once
    log: int | TextIO = asyncio.subprocess.DEVNULL  # a --command's output
    instance: int = -1  # the container's ID: -1 before its first start
    started_at: float = 0.0  # monotonic clock
    last_exit: float = -1.0
    backoff: int = 0  # ms; 0: no back-off entry
    backoff_updated: int = 0
    restarts: int = 0
    killing: bool = False
    in_hook: bool = False  # being killed, in its preStop hook: not signalled yet, still serving
    # The lab's copy of the test app's listening socket, kept while it runs when its node may go
    # down (lab.nodes): a down node's backlog is shrunk through it, so that new connections get
    # no answer, as from a dead host, rather than wait in the stopped app's queue.
    listening: socket.socket | None = None


@dataclass
class Pod:
    name: str
    ordinal: int
    workload: str  # the workload (Deployment or StatefulSet) it belongs to
    spec: PodSpec  # its own pod spec: restart policy, grace period (its revision's, in a rollout)
    labels: dict[str, str]
    container: Container
    behavior: ContainerBehavior
    port: int
    command: list[str] | None
    grpc_port: int | None = None  # where gRPC probes go ($GRPC_PORT for a --command)
    inbound: int | None = None  # the port of its Istio sidecar's inbound listener
    run: Run = field(default_factory=Run)  # its container as the runtime runs it
    # -- the prober's (lab.prober) and the status manager's (lab.status) -------------------------
    workers: dict[str, Worker] = field(default_factory=dict)
    ready: bool = False
    ready_since: int = 0
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    first_start: asyncio.Event = field(default_factory=asyncio.Event)
    # -- under the lab's Deployment controller (lab.controller): the simulation's pod slot, its
    # revision, and the pod's life as the controllers read it ------------------------------------
    slot: int = -1
    template: int = 0
    created_ms: int = 0
    deleting: bool = False
    gone: bool = False
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    # -- its node (lab.nodes): where the scheduler bound it, and whether that node is down now
    # (its processes SIGSTOPped, its kubelet gone: no probes, no status reported) ---------------
    node: str = "node-1"
    frozen: bool = False

    @property
    def grace_s(self) -> int:
        return self.spec.termination_grace_period_seconds

    def may_restart(self) -> bool:
        """Whether its container may ever restart: killed by a probe or exiting by itself (the
        test app exits only in a crash episode), under a policy that restarts."""
        may_exit = any(k in self.workers for k in ("liveness", "startup")) or any(
            isinstance(e, Crash) for e in self.behavior.episodes
        )
        return may_exit and restarts_with(self.spec.restart_policy, KILLED)


def new_pod(
    name: str,
    ordinal: int,
    workload: str,
    spec: PodSpec,
    labels: dict[str, str],
    c: Container,
    b: ContainerBehavior,
    command: list[str] | None,
) -> Pod:
    """A pod on a free port, with a worker per probe of its container (and a gRPC port of its
    own when a probe is gRPC)."""
    pod = Pod(name, ordinal, workload, spec, labels, c, b, free_port(), command)
    for kind in PROBE_TYPES:
        p = c.probe(kind)
        if p is not None:
            pod.workers[kind] = Worker(kind, p)
        if p is not None and p.grpc is not None and pod.grpc_port is None:
            pod.grpc_port = free_port()  # gRPC health on a port of its own
    return pod


EDGE_S = 0.5  # so close to a change of the app's listening, a refusal is not judged the lab's


def up_and_listening(pod: Pod, t0: float, now: float) -> bool:
    """Whether the scenario has the pod's test app running and listening at ``now`` (monotonic
    clock; ``t0``: the scenario's start), at least ``EDGE_S`` away from any change of it. False
    for a --command (the lab cannot tell) and whenever in doubt."""
    run = pod.run
    if pod.command or pod.deleting or run.killing or run.proc is None or run.proc.returncode is not None:
        return False
    b = pod.behavior
    if now < run.started_at + b.start / 1000 + EDGE_S:
        return False
    for ep in b.episodes:
        base = run.started_at if ep.after is not None else t0
        begin = base + (ep.after if ep.after is not None else ep.at or 0) / 1000
        if isinstance(ep, Crash) and abs(now - begin) < EDGE_S:
            return False
        if isinstance(ep, Hang | Deadlock) and not ep.accepts_tcp:
            end = begin + ep.for_ / 1000 if isinstance(ep, Hang) else math.inf
            if begin - EDGE_S <= now < end + EDGE_S:
                return False
    return True
