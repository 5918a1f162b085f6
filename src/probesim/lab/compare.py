"""The simulation and the lab, figure by figure: event times per pod and per client sidecar
(Envoy's outlier event log), first Ready and restarts per workload, ready replicas second by
second, the times each of a Deployment's ReplicaSets grew and shrank and its rollouts' ends, and per route
the failed requests by what the client saw and the ejections. Each row says
whether the two agree within its tolerance; the comparison agrees when every row does."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from probesim.engine.sidecar.outlier import Detector
from probesim.model.scenario import ContainerBehavior, Rollout, Scenario, WorkloadBehavior
from probesim.results import CAUSES, Event, Result

POD_EVENTS = (
    "Started",
    "Killing",
    "BackOff",
    "PodReady",
    "PodNotReady",
    "TaintManagerEviction",
    "SandboxChanged",
    "EvictingPod",
    "EvictionRefused",
    "PodEvicted",
)
NODE_EVENTS = (
    "NodeDown",
    "NodePartitioned",
    "NodeNotReady",
    "NodeTainted",
    "NodeUntainted",
    "NodeUp",
    "NodeReady",
    "Cordon",
    "Uncordon",
    "NodeNotSchedulable",
    "NodeSchedulable",
    "Drained",
    "DrainFailed",
    "CreatingNode",
    "RemovingNode",
)
POOL_EVENTS = ("NodePoolUpgrade", "NodePoolUpgraded")  # a node pool upgrade's start and end
# What splits a run with node faults into phases, for its failed requests: a node's failure, the
# node controller noticing it (its pods not Ready), the pods' eviction, the node's return.
PHASE_EVENTS = ("NodeDown", "NodePartitioned", "NodeNotReady", "TaintManagerEviction", "NodeUp")
OUTLIER_EVENTS = ("OutlierEject", "OutlierUneject")
TIME_TOLERANCE_MS = 1000
# The step of the simulation beside a lab run. The lab's times are continuous; a step of 1 s puts
# a container's start, and the probe ticks anchored on it, up to a second off, and on a knife's
# edge that decides a kill: pool-upgrade-slow-start-killed's restarted pods, Ready 0.9 s earlier
# in the lab than at a 1 s step, left the Service 0.9 s earlier, drained their queue that much
# longer before the next liveness probe and survived it (killed every 70 s, not 50 s); at 100 ms
# the simulation has the lab's 70 s, its kills and its failed requests within 6 %.
LAB_STEP_MS = 100
# A rollout's moves follow Ready changes, each up to a probe period late in the simulation (its
# steps and probe ticks) or early in the lab (a container's exit is seen at once): each move of
# a ReplicaSet's size, and a rollout's end, may fall this far from the simulated one.
ROLLOUT_TOLERANCE_MS = 2000

# What a client can tell apart: the simulation's causes grouped as a client sees them.
CLIENT_VIEW = {
    "refused": ("no_endpoint", "restarting"),
    "reset": ("killed",),
    "timed out": ("not_answering", "timeout"),
    "error status": ("error_status", "rejected"),
}

Row = dict[str, Any]


def _row(obj: str, reason: str, unit: str, sim: list[Any], lab: list[Any], tol: int, agree: bool) -> Row:
    return {
        "object": obj,
        "reason": reason,
        "unit": unit,  # ms: event times; count; replicas: one value per second
        "simulated": sim,
        "measured": lab,
        "tolerance": tol,
        "agree": agree,
    }


def _time_lists(
    obj: str, reason: str, a: list[int], b: list[int], tol: int, end: int | None = None
) -> Row | None:
    """Times agree when they pair up in order, each pair within ``tol``; an event without a
    partner is allowed only within ``tol`` of the run's ``end`` (it may fall on either side)."""
    if not a and not b:
        return None
    n = min(len(a), len(b))
    extra = a[n:] + b[n:]
    agree = all(abs(x - y) <= tol for x, y in zip(a[:n], b[:n], strict=True)) and all(
        end is not None and t > end - tol for t in extra
    )
    return _row(obj, reason, "ms", a, b, tol, agree)


def _times(obj: str, reason: str, sim: Result, lab: Result, tol: int) -> Row | None:
    end = lab.duration_ms
    a = [e.time_ms for e in sim.events_for(obj, reason) if e.time_ms <= end]
    b = [e.time_ms for e in lab.events_for(obj, reason) if e.time_ms <= end]
    return _time_lists(obj, reason, a, b, tol, end)


def _outlier(e: Event, hosts: Mapping[str, str]) -> tuple[str, bool]:
    """An outlier event's host (its pod's name when ``hosts`` knows the address Envoy logs)
    and whether it was enforced: Envoy logs detections that pass the cap but are not enforced
    as EJECT lines with ``"enforced": false`` (Istio's defaults detect by success rate and
    gateway errors without ejecting). A line that is not Envoy's JSON counts as enforced."""
    try:
        doc = json.loads(e.message)
    except ValueError:
        return "", True
    if not isinstance(doc, dict):
        return "", True
    url = str(doc.get("upstream_url", ""))
    return hosts.get(url, ""), e.reason != "OutlierEject" or doc.get("enforced", True) is not False


def _outlier_rows(obj: str, sim: Result, lab: Result, tol: int, hosts: Mapping[str, str]) -> list[Row | None]:
    """A sidecar's enforced ejections and unejections, per host by pod name when every event's
    host is known (else per sidecar), and its detections that were not enforced, as a count."""
    end = lab.duration_ms
    rows: list[Row | None] = []
    parsed = {
        side: [
            (e, *_outlier(e, hosts))
            for e in r.events_for(obj)
            if e.reason in OUTLIER_EVENTS and e.time_ms <= end
        ]
        for side, r in (("sim", sim), ("lab", lab))
    }
    by_host = all(host for side in parsed.values() for _, host, _ in side)
    targets = sorted({host for side in parsed.values() for _, host, _ in side}) if by_host else [""]
    for host in targets:
        name = f"{obj} → pod/{host}" if host else obj
        for reason in OUTLIER_EVENTS:
            a, b = (
                [
                    e.time_ms
                    for e, h, enforced in parsed[side]
                    if e.reason == reason and enforced and h == host
                ]
                for side in ("sim", "lab")
            )
            rows.append(_time_lists(name, reason, a, b, tol, end))
    x, y = (sum(1 for e, _, enforced in parsed[side] if not enforced) for side in ("sim", "lab"))
    rows.append(_count(obj, "detected, not enforced", x, y, 2))
    return rows


def _count(obj: str, reason: str, x: int, y: int, slack: int) -> Row | None:
    """Counts agree within 10 % or ``slack``, whichever is larger."""
    if not x and not y:
        return None
    return _row(obj, reason, "count", [x], [y], max(slack, x // 10), abs(x - y) <= max(slack, x // 10))


def per_second(result: Result, key: str, seconds: int) -> list[int]:
    """A series' value at each whole second (the last sample at or before it)."""
    t, v = result.time_ms, result.series[key]
    idx = np.searchsorted(t, np.arange(seconds) * 1000, side="right") - 1
    return [int(v[i]) if i >= 0 else 0 for i in idx]


def _ready_over_time(name: str, sim: Result, lab: Result) -> Row | None:
    """Ready replicas each second; the lab's value at a second must lie between values the
    simulation has within the time tolerance of it (an edge may fall a second apart, and pods
    whose edges the simulation puts at one instant may, for real, fall either side of the
    second: 1 of 2 Ready while the simulation goes from 2 to 0)."""
    key = f"workload.{name}.ready"
    if key not in sim.series or key not in lab.series:
        return None
    n = lab.duration_ms // 1000
    a, b = per_second(sim, key, n), per_second(lab, key, n)
    w = TIME_TOLERANCE_MS // 1000
    before = [0] * w  # nothing is Ready before the scenario starts
    windows = [(before + a)[s : s + 2 * w + 1] for s in range(n)]
    agree = all(min(win) <= b[s] <= max(win) for s, win in enumerate(windows))
    return _row(f"workload/{name}", "ready replicas", "replicas", a, b, TIME_TOLERANCE_MS, agree)


def replica_steps(result: Result, key: str) -> tuple[list[int], list[int]]:
    """When a ReplicaSet's size went up and down, one time per replica added or removed (a move
    from 3 to 1 is two removals at its time), from 0 before the first sample."""
    if key not in result.series:
        return [], []
    v = result.series[key].astype(np.int64)
    diff = np.diff(v, prepend=0)
    up: list[int] = []
    down: list[int] = []
    for i in np.flatnonzero(diff).tolist():
        t, d = int(result.time_ms[i]), int(diff[i])
        (up if d > 0 else down).extend([t] * abs(d))
    return up, down


def _replica_sets(sim: Result, lab: Result) -> list[Row | None]:
    """Each ReplicaSet of the workloads the lab ran: the times a replica was added to it and
    removed from it (its spec.replicas as the Deployment controller sets it), paired in order,
    each within ``ROLLOUT_TOLERANCE_MS`` (one simulated move from 3 to 1 may be two moves a few ms
    apart for real); then the rollouts' ends, paired in order."""
    ran = {w.name for w in lab.workloads}

    def sets(r: Result) -> list[str]:
        return [
            k
            for k in r.series
            if k.startswith("replicaset.") and k.endswith(".replicas") and k[11:-9].rsplit("-", 1)[0] in ran
        ]

    # A lab without workload actions runs the pods without its Deployment controller.
    keys = sorted({*sets(sim), *sets(lab)}) if sets(lab) else []
    rows: list[Row | None] = []
    end = lab.duration_ms
    for key in keys:
        obj = f"replicaset/{key[11:-9]}"
        (a_up, a_down), (b_up, b_down) = replica_steps(sim, key), replica_steps(lab, key)
        cut = [[t for t in x if t <= end] for x in (a_up, a_down, b_up, b_down)]
        rows.append(_time_lists(obj, "replica added", cut[0], cut[2], ROLLOUT_TOLERANCE_MS, end))
        rows.append(_time_lists(obj, "replica removed", cut[1], cut[3], ROLLOUT_TOLERANCE_MS, end))
    for name in sorted(ran):
        mine = [[r for r in res.rollouts if r.workload == name] for res in (sim, lab)]
        obj = f"deployment/{name}"
        ends = [[r.end_ms for r in side if r.end_ms is not None] for side in mine]
        rows.append(
            _time_lists(obj, "rollout complete", ends[0], ends[1], ROLLOUT_TOLERANCE_MS, lab.duration_ms)
        )
        # Requests failed during each rollout are not compared (the route's total is): the
        # simulation counts a step's requests whole, so its count moves by a step's traffic
        # with where the rollout ends.
    return rows


def _node_of(r: Result, obj: str) -> str | None:
    """The node a pod was bound to, from its Scheduled event (None: none)."""
    said = r.events_for(obj, "Scheduled")
    return said[0].message.rsplit(" ", 1)[1] if said else None


def _placement(obj: str, sim: Result, lab: Result) -> Row | None:
    """The node the scheduler bound a pod to, in both (when the scenario gives its nodes)."""
    a, b = _node_of(sim, obj), _node_of(lab, obj)
    if a is None or b is None or not sim.nodes:
        return None
    return _row(obj, "node", "node", [a], [b], 0, a == b)


def phase_bounds(sim: Result, end: int) -> list[tuple[int, int, str]]:
    """The run cut at the simulation's node events (``PHASE_EVENTS``): each phase's start, end
    and what began it."""
    marks: dict[int, str] = {}
    for e in sim.events:
        if e.reason in PHASE_EVENTS and 0 < e.time_ms < end:
            marks.setdefault(e.time_ms, e.reason)
    if not marks:
        return []
    starts = [(0, "start"), *sorted(marks.items())]
    return [(t, nxt, why) for (t, why), nxt in zip(starts, [*(t for t, _ in starts[1:]), end], strict=True)]


def _phases(obj: str, route: str, sim: Result, lab: Result) -> list[Row | None]:
    """With node faults, the route's failed requests by phase (``phase_bounds``), each request
    counted at its send time (the simulation's step of arrival; the lab's ``failed_sent``)."""
    sent = lab.series.get(f"route.{route}.failed_sent")
    bounds = phase_bounds(sim, lab.duration_ms)
    if sent is None or not bounds:
        return []
    per_step = np.zeros(sim.time_ms.size, np.int64)
    for c in CAUSES:
        if f"route.{route}.{c}" in sim.series:
            per_step += np.asarray(sim.series[f"route.{route}.{c}"], np.int64)
    rows: list[Row | None] = []
    for a, b, why in bounds:
        x = int(np.sum(per_step[(sim.time_ms >= a) & (sim.time_ms < b)]))
        at = np.searchsorted(lab.time_ms, [a, b], side="left")
        ends = [int(sent[min(i, sent.size - 1)]) if sent.size else 0 for i in at]
        y = ends[1] - (ends[0] if a > 0 else 0)
        # Every phase shown, none failing included: the timeline reads whole.
        tol = max(2, x // 10)
        rows.append(
            _row(
                obj,
                f"failed, sent {a / 1000:g}-{b / 1000:g}s (from {why})",
                "count",
                [x],
                [y],
                tol,
                abs(x - y) <= tol,
            )
        )
    return rows


def as_the_lab_runs(scenario: Scenario) -> Scenario:
    """The scenario as the lab's test app acts it out, to simulate beside the lab's run: every
    request costs exactly its route's cost (``variability`` 0), as the app spends it — the
    simulation's log-normal spread of service times would otherwise put a tail into one side
    only (timeouts near the client's timeout that the lab's app cannot have)."""

    def exact(wb: WorkloadBehavior) -> WorkloadBehavior:
        def each(cbs: dict[str, ContainerBehavior]) -> dict[str, ContainerBehavior]:
            return {name: cb.model_copy(update={"variability": 0.0}) for name, cb in cbs.items()}

        pods = tuple(ov.model_copy(update={"containers": each(ov.containers)}) for ov in wb.pods)
        return wb.model_copy(update={"containers": each(wb.containers), "pods": pods})

    spec = scenario.spec
    actions = tuple(
        a.model_copy(update={"behavior": exact(a.behavior)})
        if isinstance(a, Rollout) and a.behavior is not None
        else a
        for a in spec.actions
    )
    behavior = {name: exact(wb) for name, wb in spec.behavior.items()}
    exact_spec = spec.model_copy(update={"behavior": behavior, "actions": actions})
    return scenario.model_copy(update={"spec": exact_spec})


def outlier_interval_ms(scenario: Scenario) -> int:
    """The tolerance on ejection and unejection times: one outlier detection interval (Envoy
    unejects on its interval timer), the longest of the scenario's DestinationRules."""
    intervals = [
        Detector.from_istio(od).interval
        for r in scenario.destination_rules
        if r.spec.traffic_policy is not None and (od := r.spec.traffic_policy.outlier_detection) is not None
    ]
    return max(intervals, default=Detector().interval)


def compare(
    sim: Result,
    lab: Result,
    outlier_tolerance_ms: int = Detector().interval,
    hosts: Mapping[str, str] | None = None,
) -> list[Row]:
    """The rows; ``hosts`` maps the addresses Envoy logs (``ip:port``, the simulation's and the
    lab's) to pod names, so that ejections are compared per pod (see ``simulated_hosts``)."""
    rows: list[Row | None] = []
    ran = {f"pod/{p}" for w in lab.workloads for p in w.restarts}  # the pods of the workloads it ran
    objects = sorted({e.object for e in (*sim.events, *lab.events)})
    for obj in objects:
        if obj.startswith("pod/") and obj in ran:
            rows += [_times(obj, r, sim, lab, TIME_TOLERANCE_MS) for r in POD_EVENTS]
        elif obj.startswith("node/"):
            rows += [_times(obj, r, sim, lab, TIME_TOLERANCE_MS) for r in NODE_EVENTS]
        elif obj.startswith("nodepool/"):
            rows += [_times(obj, r, sim, lab, TIME_TOLERANCE_MS) for r in POOL_EVENTS]
        elif obj.startswith("sidecar/"):
            rows += _outlier_rows(obj, sim, lab, outlier_tolerance_ms, hosts or {})
    measured_workloads = {w.name: w for w in lab.workloads}
    for w in sim.workloads:
        mw = measured_workloads.get(w.name)
        if mw is None:
            continue
        obj = f"workload/{w.name}"
        a = [] if w.first_ready_ms is None else [w.first_ready_ms]
        b = [] if mw.first_ready_ms is None else [mw.first_ready_ms]
        rows.append(_time_lists(obj, "first ready", a, b, TIME_TOLERANCE_MS))
        rows.append(_count(obj, "restarts", w.total_restarts, mw.total_restarts, 1))
        rows.append(_ready_over_time(w.name, sim, lab))
    rows += _replica_sets(sim, lab)
    rows += [_placement(obj, sim, lab) for obj in objects if obj in ran]
    measured_routes = {r.name: r for r in lab.routes}
    for r in sim.routes:
        m = measured_routes.get(r.name)
        if m is None:
            continue
        obj = f"route/{r.name}"
        rows.append(_count(obj, "failed requests", r.failed_total, m.failed_total, 2))
        for view, causes in CLIENT_VIEW.items():
            x = sum(r.failed.get(c, 0) for c in causes)
            y = sum(m.failed.get(c, 0) for c in causes)
            if (x or y) and (x, y) != (r.failed_total, m.failed_total):  # not the total again
                rows.append(_count(obj, f"failed: {view}", x, y, 2))
        rows += _phases(obj, r.name, sim, lab)
        rows.append(
            _count(
                obj,
                "ejections",
                r.envoy.get("ejections_enforced_total", 0),
                m.envoy.get("ejections_enforced_total", 0),
                0,
            )
        )
    return _by_workload([r for r in rows if r is not None], lab)


def _by_workload(rows: list[Row], lab: Result) -> list[Row]:
    """Each row tagged with the workload it is about (its pods, ReplicaSets, rollouts, its own
    figures; "" for a route or a client sidecar), so that a lab running several workloads is
    judged workload by workload too."""
    of_pod = {p: w.name for w in lab.workloads for p in w.restarts}
    names = {w.name for w in lab.workloads}
    for r in rows:
        kind, _, name = str(r["object"]).partition("/")
        name = name.split(" ")[0]
        if kind == "pod":
            r["workload"] = of_pod.get(name, "")
        elif kind in ("workload", "deployment"):
            r["workload"] = name
        elif kind == "replicaset":
            r["workload"] = name.rsplit("-", 1)[0] if name.rsplit("-", 1)[0] in names else ""
        else:
            r["workload"] = ""
    return rows


def beside(scenario: Scenario, lab: Result, exact: bool = True) -> tuple[Result, list[Row]]:
    """The simulation of the span the lab ran and the comparison with it, figure by figure: the
    scenario as the lab's test app acts it out (``as_the_lab_runs``) unless ``exact`` is False
    (the user's own command ran), at a step of ``LAB_STEP_MS`` at most, ejections matched per pod
    by the simulation's and the lab's upstream addresses, their times within one outlier
    detection interval."""
    from probesim.engine import simulate

    span = scenario.cut_to(lab.duration_ms)
    step = math.gcd(span.spec.step, LAB_STEP_MS)  # (a step divides 1 s and every duration)
    span = span.model_copy(update={"spec": span.spec.model_copy(update={"step": step})})
    if exact:
        span = as_the_lab_runs(span)
    sim = simulate(span)
    hosts = {**simulated_hosts(span), **lab.hosts}
    return sim, compare(sim, lab, outlier_interval_ms(scenario), hosts=hosts)


def simulated_hosts(scenario: Scenario) -> dict[str, str]:
    """The simulation's upstream addresses (as its sidecars log them) → pod names."""
    from probesim.engine.fleet import build
    from probesim.engine.sidecar.build import build_mesh

    fleet = build(scenario)
    out: dict[str, str] = {}
    for m in build_mesh(scenario, fleet, np.random.default_rng(0)).values():
        out.update({u: fleet.pod_names[int(p)] for u, p in zip(m.upstreams, m.pods, strict=True)})
    return out


def agree(rows: list[Row]) -> bool:
    return all(bool(r["agree"]) for r in rows)


# ``probesim lab --compare``'s exit codes: every figure agrees; a figure the lab measured
# faithfully differs beyond its tolerance (the app, the scenario or probesim is wrong); every
# figure it measured faithfully agrees, but it could not hold the run faithfully for some (the
# machine's limits: a verdict on those is not possible).
AGREES, DIFFERS, NOT_FAITHFUL = 0, 1, 3


def keep_values(rows: list[Row]) -> None:
    """Each row's verdict on its values alone (``withinTolerance``), kept before the lab's
    headroom marks the rows it could not measure faithfully as not agreeing."""
    for r in rows:
        r.setdefault("withinTolerance", bool(r["agree"]))


def outcome(rows: list[Row]) -> int:
    """The comparison's exit code: DIFFERS when a row measured faithfully disagrees, else
    NOT_FAITHFUL when a row could not be measured faithfully, else AGREES."""
    if any(not r["agree"] and r.get("faithful", True) for r in rows):
        return DIFFERS
    if any(r.get("faithful", True) is False for r in rows):
        return NOT_FAITHFUL
    return AGREES
