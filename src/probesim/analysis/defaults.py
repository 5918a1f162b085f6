"""The default load model: what probesim assumes of an app it knows only from its manifests.
One model, used by the stress suite (``probesim check --stress``) and by the scenario
``probesim run`` generates from manifests (analysis/default_scenario.py).

- Start: each container answers once its readiness probe's ``initialDelaySeconds`` have passed
  (the author's own estimate of when it is worth looking at); at once without a readiness probe.
- Traffic: 10 requests per second per replica on "/" (at most 1e8, so that a rate tripled by
  the stress suite is still a valid rate).
- Cost: a request to "/" costs a container 50 ms of CPU per core of its CPU request (its
  limit when it requests none, else 100m): half its request at 10 requests per second.
"""

from __future__ import annotations

from typing import Any

from probesim.model.kubernetes import Container, Workload

RATE_PER_REPLICA = 10.0
MAX_DEFAULT_RATE = 1e8


def start_seconds(c: Container) -> int:
    """When the container's app answers, in seconds after it starts: its readiness probe's
    initialDelaySeconds, 0 without a readiness probe."""
    return c.readiness_probe.initial_delay_seconds if c.readiness_probe else 0


def default_rate(w: Workload) -> float:
    """Requests per second the workload takes: 10 per replica (at least one replica)."""
    return min(RATE_PER_REPLICA * max(w.spec.replicas, 1), MAX_DEFAULT_RATE)


def workload_behavior(w: Workload, start: str | None = None) -> dict[str, Any]:
    """The workload's behaviour, as a scenario writes it (``spec.behavior.<workload>``): each
    container starts after ``start`` (default: ``start_seconds``) and costs CPU per request."""
    containers = {}
    for c in w.pod_spec.containers:
        request = (c.resources.requests.cpu or c.resources.limits.cpu or 100) / 1000
        begin = start if start is not None else f"{start_seconds(c)}s"
        containers[c.name] = {"start": begin, "routes": {"/": {"cpu": f"{50 * request:g}ms"}}}
    return {"containers": containers}
