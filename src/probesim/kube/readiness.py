"""When a container can first be Ready, from its probes and its app's scripted behaviour: when
a probed path first answers with success for good (after the start, past the error and hang
episodes anchored to the start), gated by a startup probe and initialDelaySeconds, plus
successThreshold − 1 periods. The rollout rules reason with it."""

from __future__ import annotations

import math

from probesim.model.kubernetes import Container, Probe
from probesim.model.scenario import ContainerBehavior, Deadlock, Errors, Hang, generic


def ready_after(b: ContainerBehavior, target: str, http: bool) -> float:
    """When (ms after the container starts) ``target`` — an HTTP path, or a probe's behaviour key —
    first answers with success and keeps doing so: after ``start`` (at once when a
    ``startingStatus`` below 400 is answered meanwhile), past the ``errors`` and ``hang``
    episodes anchored ``after`` a start that cover it then; never (inf) when it fails for good."""
    if b.paths.get(target, b.paths.get(generic(target), 200)) >= 400:
        return math.inf
    t = 0.0 if b.starting_status is not None and b.starting_status < 400 else float(b.start)
    moved = True
    while moved:
        moved = False
        for e in b.episodes:
            if e.after is None or e.after > t:
                continue
            if (
                isinstance(e, Errors)
                and e.status >= 400
                and (e.paths is None or target in e.paths or generic(target) in e.paths)
            ):
                end = math.inf if e.for_ is None else e.after + e.for_
            elif isinstance(e, Hang) and (http or not e.accepts_tcp):
                end = e.after + e.for_
            elif isinstance(e, Deadlock) and (http or not e.accepts_tcp):
                end = math.inf
            else:
                continue
            if end > t:
                t, moved = end, True
    return t


def probe_key(p: Probe) -> tuple[str, bool]:
    """A probe's behaviour key (as the engine looks it up) and whether it needs an HTTP answer."""
    if p.http_get is not None:
        return p.http_get.path, True
    if p.exec is not None:
        return "exec:" + " ".join(p.exec.command), True
    if p.grpc is not None:
        return "grpc:" + (p.grpc.service or ""), True
    return "tcp", False  # a tcpSocket probe passes once the app listens


def earliest_ready(c: Container, b: ContainerBehavior) -> float:
    """The earliest a new container can be Ready (ms after it starts): at once without a
    readiness probe (kubelet: Ready when running); else when its check first passes, not before
    initialDelaySeconds (kubelet.md §2.2.15; readiness is probed as soon as it can be, §2.1.5),
    after a startup probe's earliest success, plus successThreshold − 1 periods."""
    p = c.readiness_probe
    if p is None:
        return 0.0
    gate = 0.0
    s = c.startup_probe
    if s is not None:
        key, http = probe_key(s)
        gate = max(s.initial_delay_seconds * 1000, ready_after(b, key, http))
    key, http = probe_key(p)
    first = max(gate, p.initial_delay_seconds * 1000, ready_after(b, key, http))
    return first + (p.success_threshold - 1) * p.period_seconds * 1000
