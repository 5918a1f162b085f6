"""What a simulation will cost, estimated before it starts, so that a scenario asking for two
billion replicas, a year in 1 ms steps or thousands of routes is refused in one line instead of
running for hours or exhausting memory.

The estimate is in work units, about a microsecond of engine time each (measured on the
built-in scenarios and on synthetic ones from 1 to 1000 pods and 1 to 100 routes: 0.3 to
2.5 µs per unit). Per step the engine does a fixed amount of work, then some per container, then
per route a split of its requests over the endpoints and their outcome classes, and it evaluates
each route's rate schedule row by row::

    units = steps × (100 + containers + Σ routes (500 + pods × (1 + calls) + rate rows)
                     + loaded routes × containers × slots / 20)
            + 100 × containers + (3 × routes × slots + queue slots) × containers / 8

The ``100 × containers`` term is the set-up (building the fleet, admitting and starting each
pod: about 85 µs a container; 100,000 pods for 12 s ran 15 s of CPU, which the steps alone put
at 2 s), with ``5 × pods × nodes`` more when the scenario gives its nodes (each placement weighs
every node); the last counts the answer and backlog buffers the engine allocates per route and
container. A loaded route is one whose containers have route costs (the capacity model), and
``slots`` the steps an answer may be due later (the longest client timeout or dependency call's
timeout × tries, at least 60 s, at most the run's duration, over the step): its answers on their
way are kept per slot and container (gke-surge-defaults with an HPA of 20,000 pods: 58 s of CPU,
which the estimate without that term put at 7 s).
``pods`` counts each workload at its largest size (replicas, its HPA's maxReplicas, or a scale
action's) plus the replacements deletePod actions start, the largest size per scale action and
per node failure (each may evict every pod, each replaced), and
for a rollout, restart or rollback about three times the largest size (the new ReplicaSet's
pods with their surge, and room to scale the old ones proportionally); ``calls`` is the most
dependency calls a route of the workload's behaviour makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module for its default; models load with a scenario
    from probesim.model.scenario import Scenario

DEFAULT_MAX_COST = 10_000_000  # about 10 s of engine time at most; the built-ins are below 3M
DEFAULT_MAX_TOTAL_COST = 1_000_000_000  # many runs together (run --runs, a sweep): about 17 min


MIN_HORIZON_MS = 60_000  # answers are kept at least this far ahead (runs of a minute or less: the run)


def answer_slots(waits_ms: list[int], duration: int, step: int) -> int:
    """The steps ahead the engine keeps answers on their way (engine/loop.py): up to the longest
    wait (a client timeout, a dependency call's timeout × its tries), at least a minute, and
    never past the run's end: an answer due later is never delivered within the run, so a
    timeout of a year sizes nothing by a year."""
    return min(max([MIN_HORIZON_MS, *waits_ms]), max(duration, 0)) // max(step, 1) + 2


def queue_slots(timeout: int | None, duration: int, step: int) -> int:
    """The arrival steps a route's client-side backlog keeps (engine/traffic.py): up to its
    timeout (one without a timeout), never past the run's end (a request then times out after
    the run)."""
    if timeout is None:
        return 1
    return min(-(-timeout // max(step, 1)) + 1, max(duration, 0) // max(step, 1) + 2)


@dataclass(frozen=True)
class RunCost:
    steps: int
    pods: int
    containers: int
    routes: int
    calls: int
    rate_rows: int
    units: int

    def explain(self) -> str:
        return (
            f"{self.steps:,} steps × ({self.containers:,} containers in {self.pods:,} pods, "
            f"{self.routes:,} routes, up to {self.calls} dependency calls a request, "
            f"{self.rate_rows:,} rate rows) ≈ {self.units:,} units"
        )


def run_cost(s: Scenario) -> RunCost:
    """The estimated work of simulating ``s`` (see the module docstring)."""
    steps = s.spec.duration // s.spec.step if s.spec.step > 0 else 0
    pods = containers = 0
    for w in s.workloads:
        hpa = s.autoscaler_for(w)
        n = 1 if w.kind == "Pod" else max(w.spec.replicas, hpa.spec.max_replicas if hpa else 0)
        pods += n
        containers += n * (len(w.pod_spec.containers) + len(w.pod_spec.init_containers))
    from probesim.model.nodes import Drain, NodeDown, NodePoolUpgrade, ZoneDown
    from probesim.model.scenario import DeletePod, Restart, Rollback, Rollout, Scale, service_calls

    replaced = sum(isinstance(a, DeletePod) for a in s.spec.actions)
    pool = len(s.spec.cluster.node_list() or [])
    faults = sum(
        pool if isinstance(a, NodePoolUpgrade) else 1
        for a in s.spec.actions
        if isinstance(a, NodeDown | ZoneDown | Drain | NodePoolUpgrade)
    )
    pods += replaced
    containers += replaced
    for w in s.workloads:
        # A rollout's pods: a revision's slots are its largest size and surge each time it
        # becomes the template, plus its largest size once (engine/fleet.py _rollout_slots).
        mine = [a for a in s.spec.actions if getattr(a, "workload", None) == w.name]
        scales = [a.replicas for a in mine if isinstance(a, Scale)]
        hpa = s.autoscaler_for(w)
        n = max([w.spec.replicas, hpa.spec.max_replicas if hpa else 0, *scales])
        rolls = sum(isinstance(a, Rollout | Rollback | Restart) for a in mine)
        extra = (len(scales) + faults) * n + (rolls * (3 * n + 1) + n if rolls else 0)
        pods += extra
        containers += extra * (len(w.pod_spec.containers) + len(w.pod_spec.init_containers))
    behaviors = s.container_behaviors()
    calls = max((len(r.calls) for cb in behaviors for r in cb.routes.values()), default=0)
    rows = sum(len(t.points) + len(t.stages) + len(t.spikes) for t in s.spec.traffic)
    # Each Service a pod calls is a route too (engine/routing.py's call routes), one per path,
    # port and client timeout called.
    routes = len(s.spec.traffic) + len(service_calls(behaviors))
    loaded = any(cb.loaded for cb in behaviors)
    timeouts = [int(t.timeout) for t in s.spec.traffic if t.timeout is not None]
    call_waits = [
        int(c.timeout or 0) * c.retries.attempts
        for cb in behaviors
        for r in cb.routes.values()
        for c in r.calls
        if c.timeout is not None
    ]
    slots = answer_slots([*timeouts, *call_waits], s.spec.duration, s.spec.step)
    per_step = 100 + containers + routes * (500 + pods * (1 + calls)) + rows
    per_step += routes * containers * slots // 20 if loaded else 0
    # What the engine allocates for answers on their way and the client-side backlog, per route
    # (3 outcome classes × slots × containers, and queue slots × containers, 8 bytes a cell):
    # a unit per 8 cells, about what zeroing and summing them costs.
    queued = sum(queue_slots(t, s.spec.duration, s.spec.step) for t in timeouts) + routes - len(timeouts)
    setup = 100 * containers + (routes * 3 * slots + queued) * containers // 8
    # With spec.cluster.nodes each pod's placement filters and scores every node (about 5 µs a
    # pod and node, engine/nodes.py).
    nodes = s.spec.cluster.node_list()
    setup += 5 * pods * len(nodes) if nodes is not None else 0
    return RunCost(steps, pods, containers, routes, calls, rows, steps * per_step + setup)
