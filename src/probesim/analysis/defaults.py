"""The default load model: what probesim assumes of an app it knows only from its manifests.
One model, used by the stress suite (``probesim check --stress``) and by the scenario
``probesim run`` generates from manifests (analysis/default_scenario.py).

- Start: each container answers once its readiness probe's ``initialDelaySeconds`` have passed
  (the author's own estimate of when it is worth looking at); at once without a readiness probe.
- Traffic: 10 requests per second per replica on "/" (at most 1e8, so that a rate tripled by
  the stress suite is still a valid rate).
- Cost: a request to "/" costs a container 50 ms of CPU per core of its CPU request (its
  limit when it requests none, else 100m): half its request at 10 requests per second.
- Ports: a container that declares ports listens on them and on the port numbers its probes
  and its Services' targetPorts use (the kubelet and kube-proxy reach undeclared ports: a
  healthy app answers there); one that declares none listens on every port.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from probesim.model.kubernetes import Container, Service, Workload

RATE_PER_REPLICA = 10.0
MAX_DEFAULT_RATE = 1e8


def start_seconds(c: Container) -> int:
    """When the container's app answers, in seconds after it starts: its readiness probe's
    initialDelaySeconds, 0 without a readiness probe."""
    return c.readiness_probe.initial_delay_seconds if c.readiness_probe else 0


def default_rate(w: Workload) -> float:
    """Requests per second the workload takes: 10 per replica (at least one replica)."""
    return min(RATE_PER_REPLICA * max(w.spec.replicas, 1), MAX_DEFAULT_RATE)


def workload_behavior(
    w: Workload, services: Sequence[Service] = (), start: str | None = None
) -> dict[str, Any]:
    """The workload's behaviour, as a scenario writes it (``spec.behavior.<workload>``): each
    container starts after ``start`` (default: ``start_seconds``), costs CPU per request and
    listens where its probes and ``services`` reach it."""
    containers: dict[str, dict[str, Any]] = {}
    extra = _undeclared_ports(w, services)
    for c in w.pod_spec.containers:
        request = (c.resources.requests.cpu or c.resources.limits.cpu or 100) / 1000
        begin = start if start is not None else f"{start_seconds(c)}s"
        containers[c.name] = {"start": begin, "routes": {"/": {"cpu": f"{50 * request:g}ms"}}}
        if extra[c.name]:
            containers[c.name]["ports"] = sorted({p.container_port for p in c.ports} | extra[c.name])
    return {"containers": containers}


def _undeclared_ports(w: Workload, services: Sequence[Service]) -> dict[str, set[int]]:
    """Per container that declares ports, the port numbers its probes use that it does not
    declare, and those of the Services' targetPorts no container declares (kube-proxy sends
    them to the first container, as the engine does)."""
    cs = w.pod_spec.containers
    out: dict[str, set[int]] = {c.name: set() for c in cs}
    declared = {c.name: {p.container_port for p in c.ports} for c in cs}
    for c in cs:
        for p in (c.startup_probe, c.readiness_probe, c.liveness_probe):
            handler = None if p is None else p.http_get or p.tcp_socket or p.grpc
            if handler is not None and isinstance(handler.port, int):
                out[c.name].add(handler.port)
    if cs:
        for s in services:
            for sp in s.spec.ports:
                port = sp.effective_target
                tcp = sp.protocol == "TCP"
                if tcp and isinstance(port, int) and not any(port in d for d in declared.values()):
                    out[cs[0].name].add(port)
    return {n: (ports - declared[n]) if declared[n] else set() for n, ports in out.items()}
