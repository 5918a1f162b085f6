"""The default load model: what probesim assumes of an app it knows only from its manifests.
One model, used by the stress suite (``probesim check --stress``), by the scenario
``probesim run`` generates from manifests (manifests/generated.py) and by the runs
``probesim tune`` judges settings on.

- Start: each container's app answers at once. No field of a manifest says when an app is
  warm, and the ones that look like it (a probe's ``initialDelaySeconds``) are what the tuner and
  the checker's fixes change: patched manifests must run as the tuner simulated them.
  ``--start`` (run) or a scenario's behaviour says otherwise, and so does the app's profile where
  its image or its hints name a family probesim knows (:func:`app_profiles`: the stress suite
  starts it in the profile's typical time, the tuner adds a run of its slowest start).
- Cost: a fixed service time: a request to "/" costs 5 ms of CPU, any other path (a probe's)
  1 ms, whatever the CPU request.
- Traffic: sized to the request instead, so that base load uses half of it: 100 requests per
  second per core of the first container's CPU request (its limit when it requests none, else
  100m: 10 per replica) per replica, at least 0.1 per replica; at most 1e8, so that a rate
  tripled by the stress suite is still a valid rate.
- Ports: a container that declares ports listens on them and on the port numbers its probes
  and its Services' targetPorts use (the kubelet and kube-proxy reach undeclared ports: a
  healthy app answers there); one that declares none listens on every port.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from probesim.model.kubernetes import Container, Service, Workload
from probesim.profiles import ProfileCorrection, Resolved, resolve

REQUEST_CPU_MS = 5.0  # CPU per request to "/"
PROBE_CPU_MS = 1.0  # CPU per request to any other path (health handlers are cheap)
BASE_LOAD = 0.5  # the share of the CPU request base traffic uses
MIN_RATE_PER_REPLICA = 0.1
MAX_DEFAULT_RATE = 1e8
DEFAULT_CPU_M = 100  # what a container that requests no CPU is taken to have


def app_profiles(w: Workload, corrections: Sequence[ProfileCorrection] = ()) -> dict[str, Resolved]:
    """Each container's app profile (profiles.resolve: the catalog family its image, probe paths,
    environment or command name, as ``corrections`` from .probesim.yaml amend it), by container
    name: its typical and worst start and its longest pause."""
    raw = w.model_dump(mode="json", by_alias=True, exclude_none=True)["spec"]["template"]["spec"]
    return {c["name"]: resolve(w.name, c["name"], c, tuple(corrections)) for c in raw["containers"]}


def cpu_cores(c: Container) -> float:
    """The container's CPU request in cores (its limit when it requests none, else 100m)."""
    return (c.resources.requests.cpu or c.resources.limits.cpu or DEFAULT_CPU_M) / 1000


def rate_per_replica(w: Workload) -> float:
    """Requests per second one replica takes: half its first container's CPU request at the
    fixed service time."""
    cs = w.pod_spec.containers
    cores = cpu_cores(cs[0]) if cs else DEFAULT_CPU_M / 1000
    return max(BASE_LOAD * cores * 1000 / REQUEST_CPU_MS, MIN_RATE_PER_REPLICA)


def default_rate(w: Workload) -> float:
    """Requests per second the workload takes: ``rate_per_replica`` per replica (at least one)."""
    return min(rate_per_replica(w) * max(w.spec.replicas, 1), MAX_DEFAULT_RATE)


def workload_behavior(
    w: Workload, services: Sequence[Service] = (), start: str | None = None
) -> dict[str, Any]:
    """The workload's behaviour, as a scenario writes it (``spec.behavior.<workload>``): each
    container starts after ``start`` (default: at once), costs its fixed CPU per request and
    listens where its probes and ``services`` reach it."""
    containers: dict[str, dict[str, Any]] = {}
    extra = _undeclared_ports(w, services)
    for c in w.pod_spec.containers:
        begin = start if start is not None else "0s"
        routes = {"/": {"cpu": f"{REQUEST_CPU_MS:g}ms"}, "*": {"cpu": f"{PROBE_CPU_MS:g}ms"}}
        containers[c.name] = {"start": begin, "routes": routes}
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
