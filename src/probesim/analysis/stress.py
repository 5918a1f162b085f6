"""The stress suite: each workload on its own, behind its own Services, simulated under built-in
stresses, with a verdict per stress against thresholds. Runs fan out over local processes.

A workload is stressed alone: its Services, its behaviour and the traffic a given scenario sends
to its Services (other workloads, their traffic and the scenario's actions are left out), so
one workload's failure is never blamed on another. Without a scenario (or traffic for it), the
workload gets the default load model (kube/load_model.py): its app answers at once and takes
100 requests per second per core of CPU request per replica on "/", 5 ms of CPU each (half the
request at base load), from 1m on.

The verdict looks at the run after the start-up ramp (from the first time all replicas were
Ready, or after ``warmUp``): failed requests and the lowest ready fraction; restarts count over
the whole run, and a workload that never has all replicas Ready fails. Stresses whose fault
itself fails requests (a dependency that hangs, one pod answering 500) are judged on what the
probes do about it — restarts and readiness — not on those errors; one pod of one answering 500
is not judged at all, since no probe setting can serve around it.

Two stresses roll the workload out at 2m (a Deployment's or StatefulSet's rolling update; the
others have none to stress): ``rollout``, a new version that behaves as the last (the template
changed by an annotation), fails on requests failed from the rollout's start to the run's end
(new pods still warming up after the rollout completes count), available replicas below the
controller's floor (replicas − maxUnavailable, as it rounds), restarts, or a rollout that does not
complete; ``rollout-never-ready``, a version whose readiness check answers 503 for good (one
whose readiness cannot fail so — no readiness probe, or tcpSocket — never answers at all),
fails on the same requests and floor — the old pods must keep serving while the rollout stalls —
or if the release rolls out to every replica. A StatefulSet of one replica is down while its pod
is replaced, whatever its settings: the errors of either rollout are not counted against it.

Three node stresses, for workloads of two replicas or more, run 10 minutes on the scenario's nodes
or a default cluster: ``node-down`` and ``zone-down`` (_judge_node) crash the busiest node or its
zone at 2m; ``node-drain`` (_judge_drain) upgrades the node pool from 2m as GKE does by default,
each node drained in turn through the PodDisruptionBudgets that select the workload, and fails on
an upgrade that does not complete (a budget that allows no eviction stalls it), errors, the lowest
ready fraction or restarts.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from probesim.cost import DEFAULT_MAX_COST, run_cost
from probesim.engine import simulate
from probesim.engine.controllers.templates import PlanError
from probesim.engine.kernel_choice import KERNEL_STEPS, kernels
from probesim.engine.warm import together
from probesim.kube.load_model import default_rate, workload_behavior
from probesim.kube.rolling import rolling_update
from probesim.kube.selectors import selects
from probesim.manifests.kubernetes import SIMULATED_KINDS, Objects
from probesim.model.disruption import PodDisruptionBudget
from probesim.model.duration import format_ms, parse_ms
from probesim.model.kubernetes import Probe, Service, Workload, parse_cpu
from probesim.model.scenario import Scenario, service_calls
from probesim.results.result import CAUSES, Result

# The faults, judged after the start-up ramp (probesim tune judges a setting by these too).
STRESSES = (
    "baseline",
    "traffic-x2",
    "traffic-x3",
    "start-x2",
    "dependency-hangs",
    "one-pod-500",
    "stop-the-world-2s",
    "cpu-limit-at-request",
)
# The fault itself fails requests: judged on restarts and readiness only.
FAULT_ERRORS = ("dependency-hangs", "one-pod-500")
# A rolling update at EVENT_AT_MS, of the same version and of one that never becomes Ready,
# judged from its start on (_judge_rollout). Not in the tuner's runs: a release that never
# becomes Ready may be restarted by liveness by design, which its objectives would count.
ROLLOUTS = ("rollout", "rollout-never-ready")
# A node's or a zone's failure at EVENT_AT_MS, judged from then on (_judge_node): the node that
# holds the most of the workload's replicas crashes (``node-down``), or its zone goes (``zone-down``).
# ``node-drain``: a node pool upgrade at EVENT_AT_MS (GKE's surge defaults) drains each node in
# turn through the workload's PodDisruptionBudgets (_judge_drain).
NODE_STRESSES = ("node-down", "zone-down", "node-drain")
SUITE = (*STRESSES, *ROLLOUTS, *NODE_STRESSES)
# The stresses that are the baseline until EVENT_AT_MS: they go on from its warm-up
# (engine/warm.py) instead of simulating the same start-up again.
LATER_STRESSES = ("stop-the-world-2s",)
DURATION_MS = 5 * 60_000
EVENT_AT_MS = 2 * 60_000


@dataclass(frozen=True)
class StressThresholds:
    max_error_percent: float = 1.0
    max_restarts: int = 0
    min_ready_fraction: float = 0.5
    warm_up_ms: int | None = None  # judged from then on instead of from all replicas Ready

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StressThresholds:
        warm = d.get("warmUp")
        return cls(
            max_error_percent=float(d.get("maxErrorPercent", cls.max_error_percent)),
            max_restarts=int(d.get("maxRestarts", cls.max_restarts)),
            min_ready_fraction=float(d.get("minReadyFraction", cls.min_ready_fraction)),
            warm_up_ms=parse_ms(warm) if warm is not None else None,
        )


@dataclass(frozen=True)
class StressResult:
    index: int  # the workload's position among the manifests' workloads
    workload: str  # Deployment/frontend
    namespace: str
    stress: str
    error_percent: float
    restarts: int
    min_ready_fraction: float
    no_endpoint_s: float
    verdict: str  # pass | fail | skipped
    why: str = ""
    ramp_ms: int | None = None  # when all replicas were first Ready (the judged span starts)

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "namespace": self.namespace,
            "stress": self.stress,
            "errorPercent": round(self.error_percent, 2),
            "restarts": self.restarts,
            "minReadyFraction": round(self.min_ready_fraction, 3),
            "noEndpointSeconds": self.no_endpoint_s,
            "rampSeconds": None if self.ramp_ms is None else self.ramp_ms / 1000,
            "verdict": self.verdict,
            "why": self.why,
        }


def _dump(m: Any) -> Any:
    return m.model_dump(mode="json", by_alias=True, exclude_none=True)


def base_scenario(
    w: Workload,
    services: list[Service],
    given: Scenario | None,
    budgets: list[PodDisruptionBudget] | None = None,
) -> dict[str, Any]:
    """The workload alone (as a Scenario document): its Services, its behaviour and the traffic
    the given scenario sends them, or the default load model; and the PodDisruptionBudgets (of
    ``budgets``, or else the given scenario's) that guard its pods, which only evictions (the
    node-drain stress) consult."""
    own, names = services, {s.name for s in services}
    spec: dict[str, Any] = {"duration": f"{DURATION_MS // 1000}s"}
    traffic: list[dict[str, Any]] = []
    doc: dict[str, Any] = {"name": f"{w.name}-stress"}
    if given is not None:
        g = given.to_doc()
        gs = g["spec"]
        spec.update(
            {k: gs[k] for k in ("seed", "step", "endpointDelay", "cluster", "dependencies") if k in gs}
        )
        spec["duration"] = f"{max(DURATION_MS, given.spec.duration) // 1000}s"
        if w.name in gs.get("behavior", {}):
            spec["behavior"] = {w.name: gs["behavior"][w.name]}
        for t, raw in zip(given.spec.traffic, gs.get("traffic", []), strict=True):
            if given.services and given.service_for(t).name in names:
                traffic.append({**raw, "service": given.service_for(t).name})
        doc["autoscalers"] = [_dump(h) for h in given.autoscalers if given.autoscaler_for(w) is h]
        doc["destinationRules"] = [
            _dump(r) for r in given.destination_rules if r.spec.host.split(".")[0] in names
        ]
        doc["virtualServices"] = [
            _dump(v) for v in given.virtual_services if any(h.split(".")[0] in names for h in v.spec.hosts)
        ]
        # What it calls goes with it, as the scenario has it: a stress of the workload reaches
        # what it calls, and a call to a Service that is not there would be a refusal.
        for callee, its in _callees(given, w):
            doc["workloads"] = [*doc.get("workloads", []), _dump(callee)]
            if callee.name in gs.get("behavior", {}):
                spec.setdefault("behavior", {})[callee.name] = gs["behavior"][callee.name]
            services = [*services, *(x for x in its if x not in services)]
    if w.name not in spec.get("behavior", {}):
        spec.setdefault("behavior", {})[w.name] = workload_behavior(w, own)
    if not traffic and own:  # a worker (no Service) gets none: nothing sends it requests
        traffic = [{"service": own[0].name, "path": "/", "rate": default_rate(w), "start": "1m"}]
    spec["traffic"] = traffic
    doc["spec"] = spec
    doc["workloads"] = [_dump(w), *doc.get("workloads", [])]
    doc["services"] = [_dump(s) for s in services]
    pdbs = [b for b in (budgets if budgets is not None else given.disruption_budgets if given else [])
            if guards(b, w)]  # fmt: skip
    if pdbs:
        doc["disruptionBudgets"] = [_dump(b) for b in pdbs]
    return doc


def guards(b: PodDisruptionBudget, w: Workload) -> bool:
    """Whether budget ``b`` selects ``w``'s pods (its namespace; a null selector selects none, an
    empty one every pod of the namespace, as policy/v1 has it)."""
    sel = b.spec.selector
    labels = w.spec.template.metadata.labels
    return b.metadata.namespace == w.metadata.namespace and sel is not None and sel.matches(labels)


def _callees(given: Scenario, w: Workload) -> list[tuple[Workload, list[Service]]]:
    """The workloads behind the Services ``w``'s pods call (``calls: [{service: …}]``), and
    theirs in turn, each with the Services of the scenario that select it."""
    out: list[tuple[Workload, list[Service]]] = []
    todo, seen = [w], {w.name}
    while todo:
        caller = todo.pop(0)
        wb = given.spec.behavior.get(caller.name)
        if wb is None:
            continue
        called = {c.service for c in service_calls(wb.container_behaviors()).values()}
        for svc in (s for s in given.services if s.name in called):
            for callee in (x for x in given.workloads if x.name not in seen and selects(svc, x)):
                seen.add(callee.name)
                out.append((callee, [s for s in given.services if selects(s, callee)]))
                todo.append(callee)
    return out


def apply(base: dict[str, Any], w: Workload, stress: str) -> Scenario | None:
    """The base scenario under one stress; None when the stress does not apply."""
    doc = copy.deepcopy(base)
    spec = doc["spec"]
    containers = spec.setdefault("behavior", {}).setdefault(w.name, {}).setdefault("containers", {})
    for c in w.pod_spec.containers:
        containers.setdefault(c.name, {})
    if stress in NEEDS_TRAFFIC and not spec.get("traffic"):
        return None  # a worker: no traffic to multiply, no request to answer 500
    if stress in ("traffic-x2", "traffic-x3"):
        k = 2.0 if stress.endswith("2") else 3.0
        for t in spec.get("traffic", []):
            for key in ("rate", "startRate"):
                if t.get(key) is not None:
                    t[key] *= k
            for st in t.get("stages", []):
                st["target"] *= k
            t["points"] = [[ms, r * k] for ms, r in t.get("points", [])]
            for sp in t.get("spikes", []):
                sp["rate"] *= k
    elif stress == "start-x2":
        for b in containers.values():
            b["start"] = f"{2 * parse_ms(b.get('start', '0s'))}ms"
    elif stress == "dependency-hangs":
        if not spec.get("dependencies"):
            return None
        for d in spec["dependencies"].values():
            d.setdefault("faults", []).append({"delay": "1h", "percent": 50})
    elif stress == "one-pod-500":
        if w.spec.replicas < 2:
            return None
        paths = {t.get("path", "/"): 500 for t in spec.get("traffic", [])}
        bad = {n: {**b, "paths": {**b.get("paths", {}), **paths}} for n, b in containers.items()}
        spec["behavior"][w.name].setdefault("pods", []).append({"ordinals": [0], "containers": bad})
    elif stress == "stop-the-world-2s":
        for b in containers.values():
            b.setdefault("episodes", []).append({"kind": "hang", "at": f"{EVENT_AT_MS}ms", "for": "2s"})
    elif stress == "cpu-limit-at-request":
        pod = doc["workloads"][0]["spec"]["template"]["spec"]
        if not any((c.get("resources", {}).get("requests") or {}).get("cpu") for c in pod["containers"]):
            return None
        for c in pod["containers"]:
            res = c.setdefault("resources", {})
            cpu = (res.get("requests") or {}).get("cpu")
            if cpu is not None:
                res.setdefault("limits", {})["cpu"] = cpu
    elif stress in ROLLOUTS:
        if rolling_update(w) is None or w.spec.paused:
            return None
        # A new version: the template changed by an annotation only (kubectl rollout restart's
        # way), to a value it does not have yet.
        key = "probesim.dev/stress-rollout"
        value = "2" if w.spec.template.metadata.annotations.get(key) == "1" else "1"
        action: dict[str, Any] = {
            "kind": "rollout",
            "workload": w.name,
            "at": f"{EVENT_AT_MS}ms",
            "template": {"metadata": {"annotations": {key: value}}},
        }
        if stress == "rollout-never-ready":
            action["behavior"] = _never_ready(spec["behavior"][w.name], w)
        spec.setdefault("actions", []).append(action)
    elif stress in NODE_STRESSES:
        return _node_fault(doc, w, stress)
    elif stress != "baseline":
        raise ValueError(stress)
    return Scenario.model_validate(doc)


# The cluster a node stress gives a workload whose scenario gives no nodes: three nodes in three
# zones, each with room for every replica (so that losing one never leaves a replacement Pending
# for want of room: the stress is about the workload, not the cluster's size).
DEFAULT_NODES = {"count": 3, "zones": ["a", "b", "c"]}
DEFAULT_LABEL = "probesim.dev/stress-default-node"  # marks them, to say so in the verdict
DEFAULT_NODES_SAID = (
    "3 nodes in zones a, b, c, each with room for every replica (no spec.cluster.nodes given)"
)
NODE_DURATION_MS = 10 * 60_000
_PLACED_MS = 2_000  # the pre-run that finds where the replicas are: placement is at once


def with_nodes(doc: dict[str, Any], w: Workload) -> bool:
    """Give ``doc`` (a stress scenario) the default cluster when it has no nodes; whether it did."""
    cluster = doc["spec"].setdefault("cluster", {})
    if cluster.get("nodes") is not None:
        return False
    n = max(w.spec.replicas, 1)
    cpu = sum(c.resources.requests.cpu or 0 for c in w.pod_spec.containers) * n
    mem = sum(c.resources.requests.memory or 0 for c in w.pod_spec.containers) * n
    node_cpu = parse_cpu(cluster.get("nodeCpu", 4))
    # The well-known labels a node has, and those the pods select (nodeSelector): they fit.
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        **(w.pod_spec.node_selector or {}),
        DEFAULT_LABEL: "true",
    }
    cluster["nodes"] = {**DEFAULT_NODES, "cpu": f"{max(cpu, node_cpu)}m", "memory": max(mem, 16 * 2**30),
                        "labels": labels}  # fmt: skip
    return True


def busiest_node(doc: dict[str, Any], w: Workload) -> tuple[str, str | None, int]:
    """The node holding the most of ``w``'s replicas once they are placed (the first listed of a
    tie), its zone and how many: from a short run of the scenario without its traffic or actions
    (once for both node stresses of a workload)."""
    pre = copy.deepcopy(doc)
    pre["spec"].update({"duration": f"{_PLACED_MS}ms", "traffic": [], "actions": []})
    return _busiest(json.dumps(pre, sort_keys=True), f"{w.name}-")


@functools.lru_cache(maxsize=64)
def _busiest(pre: str, prefix: str) -> tuple[str, str | None, int]:
    r = simulate(Scenario.model_validate(json.loads(pre)))
    counts = [(sum(p.startswith(prefix) for p in n.pods_at_end), -i, n) for i, n in enumerate(r.nodes)]
    most, _, node = max(counts, key=lambda c: (c[0], c[1]))
    return node.name, node.zone, most


class NotApplied(Exception):
    """A stress that does not apply to this workload, and why (said in its verdict)."""


def _node_fault(doc: dict[str, Any], w: Workload, stress: str) -> Scenario | None:
    """The workload's busiest node crashes at EVENT_AT_MS (``node-down``), or every node of its zone
    (``zone-down``: only when the nodes have two zones or more, and the zone more nodes than that
    one: else it is node-down again). A workload of one replica is not run: its node's loss is an
    outage whatever its settings."""
    if w.spec.replicas < 2:
        lost = "eviction" if stress == "node-drain" else "node's loss"
        raise NotApplied(f"one replica: its {lost} is an outage whatever the settings")
    with_nodes(doc, w)
    # Long enough to see the replacements: the node controller notices after its grace (about
    # 50 s), the pods are evicted DefaultTolerationSeconds (300 s) after the NoExecute taint.
    doc["spec"]["duration"] = f"{max(parse_ms(doc['spec']['duration']), NODE_DURATION_MS) // 1000}s"
    if stress == "node-drain":
        return _pool_upgrade(doc)
    # The run's cost, checked before the pre-run that finds the node (as stress_scenario checks
    # every stress's): a node's failure costs the same whichever node it is.
    probe = copy.deepcopy(doc)
    first = Scenario.model_validate(probe).spec.cluster.node_list() or []
    probe["spec"].setdefault("actions", []).append({"kind": "nodeDown", "node": first[0].name, "at": "0s"})
    cost = run_cost(Scenario.model_validate(probe))
    if cost.units > DEFAULT_MAX_COST:
        raise NotApplied(too_costly(cost))
    node, zone, _ = busiest_node(doc, w)
    if stress == "zone-down":
        sc = Scenario.model_validate(doc)
        zones = {n.zone for n in sc.spec.cluster.node_list() or () if n.zone is not None}
        if zone is None or len(zones) < 2:
            return None
        if sum(n.zone == zone for n in sc.spec.cluster.node_list() or ()) == 1:
            raise NotApplied(f"zone {zone} holds only node {node}, the node node-down crashes")
        action: dict[str, Any] = {"kind": "zoneDown", "zone": zone, "at": f"{EVENT_AT_MS}ms"}
    else:
        action = {"kind": "nodeDown", "node": node, "at": f"{EVENT_AT_MS}ms"}
    doc["spec"].setdefault("actions", []).append(action)
    return Scenario.model_validate(doc)


# A node pool upgrade rather than kubectl drains at set times: it drains each node only once the
# last is done (so a budget that stalls one drain stalls the whole upgrade, as it does on GKE),
# and its surge node gives the evicted pods room (the stress is about the budget and the app's
# start-up, not the cluster's size). GKE's defaults: maxSurge 1, maxUnavailable 0, a new node
# Ready after about a minute, the budgets respected for an hour.
UPGRADE_PER_NODE_MS = 2 * 60_000  # the run's length per node, after EVENT_AT_MS


def _pool_upgrade(doc: dict[str, Any]) -> Scenario:
    """``node-drain``: every node of the pool upgraded from EVENT_AT_MS on, one at a time."""
    n = len(Scenario.model_validate(doc).spec.cluster.node_list() or ())
    spec = doc["spec"]
    length = max(NODE_DURATION_MS, EVENT_AT_MS + n * UPGRADE_PER_NODE_MS)
    spec["duration"] = f"{max(parse_ms(spec['duration']), length) // 1000}s"
    action = {"kind": "nodePoolUpgrade", "at": f"{EVENT_AT_MS}ms", "maxSurge": 1, "maxUnavailable": 0}
    spec.setdefault("actions", []).append(action)
    sc = Scenario.model_validate(doc)
    cost = run_cost(sc)
    if cost.units > DEFAULT_MAX_COST:
        raise NotApplied(too_costly(cost))
    return sc


def _check_key(p: Probe | None) -> str | None:
    """The behaviour key that fails a probe's check (errors episodes' ``paths``); None for a
    tcpSocket probe or none."""
    if p is None:
        return None
    if p.http_get is not None:
        return p.http_get.path
    return "exec" if p.exec is not None else "grpc" if p.grpc is not None else None


def _never_ready(behavior: dict[str, Any], w: Workload) -> dict[str, Any]:
    """The same app, released so that it never becomes Ready: its readiness check answers 503
    for good; a container whose readiness cannot be failed so (no readiness probe, or tcpSocket)
    never starts answering at all — the closest a release without a readiness check comes."""
    beh = copy.deepcopy(behavior)
    for c in w.pod_spec.containers:
        b = beh.setdefault("containers", {}).setdefault(c.name, {})
        key = _check_key(c.readiness_probe)
        if key is None:
            b["start"] = "1h"
        else:
            fail = {"kind": "errors", "after": "0s", "status": 503, "paths": [key]}
            b["episodes"] = [*b.get("episodes", []), fail]
    return beh


# The stresses of requests, which a workload no Service sends traffic to (a worker) does not take.
NEEDS_TRAFFIC = ("traffic-x2", "traffic-x3", "one-pod-500")
_NOT_APPLIED = {
    "dependency-hangs": "no dependency calls to hang (give --scenario with dependencies)",
    "one-pod-500": "one pod of one answering 500: no probe setting can serve around it",
    "cpu-limit-at-request": "no CPU request to cap at",
    "zone-down": "the scenario's nodes are in fewer than two zones",
    **dict.fromkeys(
        ROLLOUTS, "no rolling update to run (Recreate, OnDelete, paused, or a kind that does not roll out)"
    ),
}


def stress_scenario(base: dict[str, Any], w: Workload, stress: str) -> tuple[Scenario | None, str]:
    """The stress's scenario, or why it is not run: it does not apply, the workload's values make
    no valid scenario (a rate of 10 per replica over the limit), or it would cost more than
    ``probesim run`` allows by default (checked before it starts, as run does)."""
    try:
        sc = apply(base, w, stress)
    except NotApplied as e:
        return None, str(e)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        return None, f"cannot simulate this workload under it: {where}: {first['msg']}"
    if sc is None:
        if stress in NEEDS_TRAFFIC and not base["spec"].get("traffic"):
            return None, "no traffic: no Service sends this workload requests"
        return None, _NOT_APPLIED[stress]
    cost = run_cost(sc)
    if cost.units > DEFAULT_MAX_COST:
        return None, too_costly(cost)
    return sc, ""


def too_costly(cost: Any) -> str:
    return (
        f"too costly to simulate: {cost.explain()}, more than {DEFAULT_MAX_COST:,} "
        "(probesim run's --max-cost default)"
    )


Job = tuple[int, str, str, str, Scenario | None, StressThresholds, str]


def run_one(args: Job, simulated: Result | None = None) -> StressResult:
    """A stress's verdict: its scenario simulated (``simulated``: its Result, already made)."""
    index, shown, namespace, stress, sc, th, not_run = args
    if sc is None:
        return StressResult(index, shown, namespace, stress, 0.0, 0, 1.0, 0.0, "skipped", not_run)
    try:
        r = simulated if simulated is not None else simulate(sc)
    except PlanError as e:  # a rollout the controllers would not start
        return StressResult(index, shown, namespace, stress, 0.0, 0, 1.0, 0.0, "skipped", str(e))
    w = sc.workloads[0]
    if stress in ROLLOUTS:
        return _judge_rollout(index, shown, namespace, stress, r, w, th)
    if stress == "node-drain":
        return _judge_drain(index, shown, namespace, stress, r, sc, th)
    if stress in NODE_STRESSES:
        return _judge_node(index, shown, namespace, stress, r, sc, th)
    summary = r.workload(w.name)
    ready = r.series[f"workload.{w.name}.ready"]
    desired = np.maximum(r.series[f"workload.{w.name}.desired"], 1)
    ramp = summary.all_ready_ms if th.warm_up_ms is None else th.warm_up_ms
    judged = r.time_ms >= (ramp if ramp is not None else r.duration_ms)
    errors = _errors(r, judged)
    min_ready = float((ready[judged] / desired[judged]).min()) if judged.any() else 0.0
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    why = []
    if ramp is None:
        why.append(f"never had all {w.spec.replicas} replicas Ready in {format_ms(r.duration_ms)}")
    after = f" after the start-up ramp ({format_ms(ramp)})" if ramp else ""
    if errors > th.max_error_percent and stress not in FAULT_ERRORS and ramp is not None:
        why.append(f"errors {errors:.1f} % > {th.max_error_percent:g} %{after}")
    if summary.total_restarts > th.max_restarts:
        why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
    if ramp is not None and min_ready < th.min_ready_fraction:
        why.append(f"ready fell to {100 * min_ready:.0f} % < {100 * th.min_ready_fraction:.0f} %{after}")
    verdict = "fail" if why else "pass"
    return StressResult(
        index,
        shown,
        namespace,
        stress,
        errors,
        summary.total_restarts,
        min_ready,
        gap,
        verdict,
        "; ".join(why),
        ramp,
    )


def run_together(jobs: tuple[Job, ...]) -> list[StressResult]:
    """``run_one`` of each job (in worker processes). A workload's baseline and its
    LATER_STRESSES go on from one warm-up (engine/warm.py): the baseline's scenario (the first
    job's) simulated up to EVENT_AT_MS; the baseline goes on last, from the warm-up's own state."""
    scenarios = [j[4] for j in jobs]
    if len(jobs) == 1 or any(sc is None for sc in scenarios):
        return [run_one(j) for j in jobs]
    results = together([sc for sc in scenarios if sc is not None], EVENT_AT_MS)
    return [run_one(j, r) for j, r in zip(jobs, results, strict=True)]


def _counts(r: Result, judged: Any) -> tuple[int, int]:
    """Requests answered and failed over the ``judged`` steps."""
    ok = failed = 0
    for route in r.routes:
        ok += int(r.series[f"route.{route.name}.ok"][judged].sum())
        failed += sum(int(r.series[f"route.{route.name}.{c}"][judged].sum()) for c in CAUSES)
    return ok, failed


def _errors(r: Result, judged: Any) -> float:
    """Failed requests as a percentage of those answered, over the ``judged`` steps."""
    ok, failed = _counts(r, judged)
    return 100.0 * failed / (ok + failed) if ok + failed else 0.0


def _judge_rollout(
    index: int, shown: str, namespace: str, stress: str, r: Result, w: Workload, th: StressThresholds
) -> StressResult:
    """A rollout stress, judged from the rollout's start to the run's end (new pods still warming
    up after ``kubectl rollout status`` says done count): failed requests, the fewest available
    replicas against the controller's floor (replicas − maxUnavailable, as it rounds), and for a
    release that behaves as the last one, restarts and whether it completed; a release that never
    becomes Ready must stall, the old pods serving on."""
    summary = r.workload(w.name)
    ro = rolling_update(w)
    assert ro is not None
    floor = ro.replicas - ro.unavailable
    rec = next((x for x in r.rollouts if x.workload == w.name), None)
    if rec is None:
        return StressResult(
            index, shown, namespace, stress, 0.0, 0, 1.0, 0.0, "skipped", "no rollout started"
        )
    judged = r.time_ms >= rec.start_ms
    errors = _errors(r, judged)
    ready = r.series[f"workload.{w.name}.ready"][judged]
    min_ready = float(ready.min()) / max(ro.replicas, 1) if judged.any() else 0.0
    at = f"from the rollout at {format_ms(rec.start_ms)} on"
    why = []
    if summary.all_ready_ms is None or summary.all_ready_ms > rec.start_ms:
        why.append(f"never had all {w.spec.replicas} replicas Ready before the rollout")
    # A StatefulSet of one replica is down while its pod is replaced, whatever its settings: the
    # errors of that outage are not the settings' failure (the restarts and completion still are).
    single = w.kind == "StatefulSet" and ro.replicas == 1
    if errors > th.max_error_percent and not single:
        why.append(f"errors {errors:.1f} % > {th.max_error_percent:g} % {at}")
    if rec.min_available < floor:
        why.append(f"available fell to {rec.min_available} < {floor} (replicas − maxUnavailable) during it")
    if stress == "rollout":
        if summary.total_restarts > th.max_restarts:
            why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
        if rec.outcome != "complete":
            why.append(f"the rollout did not complete in {format_ms(r.duration_ms - rec.start_ms)}")
    elif rec.outcome == "complete":
        why.append("a release that never becomes Ready rolled out to every replica")
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    verdict = "fail" if why else "pass"
    if single and stress == "rollout-never-ready" and not why:
        verdict = "skipped"
        why = ["a single instance is down while its pod is replaced: a release that never becomes Ready "
               "is an outage whatever the settings"]  # fmt: skip
    restarts = summary.total_restarts
    return StressResult(
        index,
        shown,
        namespace,
        stress,
        errors,
        restarts,
        min_ready,
        gap,
        verdict,
        "; ".join(why),
        rec.start_ms,
    )


def _judge_node(
    index: int, shown: str, namespace: str, stress: str, r: Result, sc: Scenario, th: StressThresholds
) -> StressResult:
    """A node's or a zone's failure, judged from it on. The requests sent to the lost pods fail
    until the node lifecycle controller notices (its grace period): no probe can see a dead node,
    so those errors are reported, not judged (a mesh's outlier detection is what shortens them).
    Judged: whether capacity holds — the lowest ready fraction after the failure against
    minReadyFraction (every replica on the lost node or zone takes it to 0) — whether every
    replica is Ready again by the run's end (replacements placed and started elsewhere), and
    restarts."""
    w = sc.workloads[0]
    fault = next(a for a in sc.spec.actions if getattr(a, "kind", "") in ("nodeDown", "zoneDown"))
    nodes = sc.spec.cluster.node_list() or []
    lost_nodes = [n.name for n in nodes if n.name == getattr(fault, "node", None)
                  or (n.zone is not None and n.zone == getattr(fault, "zone", None))]  # fmt: skip
    prefix = f"{w.name}-"
    lost = sum(p.startswith(prefix) for n in r.nodes if n.name in lost_nodes for p in n.pods)
    summary = r.workload(w.name)
    judged = r.time_ms >= fault.at
    errors = _errors(r, judged)
    ready = r.series[f"workload.{w.name}.ready"]
    desired = np.maximum(r.series[f"workload.{w.name}.desired"], 1)
    frac = ready[judged] / desired[judged]
    min_ready = float(frac.min()) if judged.any() else 0.0
    # When the controller noticed: the first lost node's Ready condition no longer True.
    down = [r.series[f"node.{n}.ready"] for n in lost_nodes if f"node.{n}.ready" in r.series]
    unknown = np.flatnonzero(judged & (np.min(down, axis=0) < 1)) if down else np.array([], int)
    noticed = int(r.time_ms[unknown[0]]) if unknown.size else None
    full = np.flatnonzero(judged & (ready >= desired))
    after_dip = (
        full[full > np.argmax(judged & (ready < desired))] if (judged & (ready < desired)).any() else full
    )
    back = int(r.time_ms[after_dip[0]]) if after_dip.size else None
    what = f"node {lost_nodes[0]}" if fault.kind == "nodeDown" else f"zone {fault.zone}"  # type: ignore[union-attr]
    of = f"{w.spec.replicas} replica" + ("" if w.spec.replicas == 1 else "s")
    said = [f"{what} ({lost} of {of}) crashed at {format_ms(fault.at)}"]
    until = r.time_ms < (noticed if noticed is not None else r.duration_ms + 1)
    ok, failed = _counts(r, judged & until)
    if noticed is not None:
        said.append(f"the node controller noticed at {format_ms(noticed)}")
    else:
        said.append("the node controller did not notice by the run's end")
    said.append(f"{failed} of {ok + failed} requests failed meanwhile")
    if lost and back is not None:
        said.append(f"all {w.spec.replicas} Ready again at {format_ms(back)}")
    if any(n.labels.get(DEFAULT_LABEL) for n in nodes):
        said.append(f"on {DEFAULT_NODES_SAID}")
    if summary.all_ready_ms is None or summary.all_ready_ms > fault.at:  # the baseline says why
        return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, 0.0,
                            "skipped", f"never had all {w.spec.replicas} replicas Ready before the failure "
                            "(see the baseline)", int(fault.at))  # fmt: skip
    why = []
    if w.spec.replicas > 1:
        if min_ready < th.min_ready_fraction:
            why.append(f"ready fell to {100 * min_ready:.0f} % < {100 * th.min_ready_fraction:.0f} %")
        if ready[-1] < desired[-1] and w.kind == "StatefulSet":  # what a StatefulSet does: said
            said.append(
                f"{int(ready[-1])} of {int(desired[-1])} Ready at the run's end: a StatefulSet replaces "
                "a pod of an unreachable node only once that node is deleted or back"
            )
        elif ready[-1] < desired[-1]:
            why.append(f"only {int(ready[-1])} of {int(desired[-1])} replicas Ready at the run's end")
    if summary.total_restarts > th.max_restarts:
        why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    verdict = "fail" if why else "pass"
    return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, gap,
                        verdict, "; ".join([*why, *said]), int(fault.at))  # fmt: skip


def _judge_drain(
    index: int, shown: str, namespace: str, stress: str, r: Result, sc: Scenario, th: StressThresholds
) -> StressResult:
    """A node pool upgrade, judged from its start: whether it completes (every node drained and
    replaced by the run's end; a budget that allows no eviction stalls it), failed requests, the
    lowest ready fraction, restarts (a replacement killed by liveness before it has started is the
    classic) and how long the upgrade took."""
    w = sc.workloads[0]
    at = int(next(a for a in sc.spec.actions if getattr(a, "kind", "") == "nodePoolUpgrade").at)
    summary = r.workload(w.name)
    judged = r.time_ms >= at
    errors = _errors(r, judged)
    ok, failed = _counts(r, judged)
    ready = r.series[f"workload.{w.name}.ready"]
    desired = np.maximum(r.series[f"workload.{w.name}.desired"], 1)
    min_ready = float((ready[judged] / desired[judged]).min()) if judged.any() else 0.0
    nodes = sc.spec.cluster.node_list() or []
    prefix = f"{w.name}-"
    held = [n.name for n in r.nodes if n.name in {x.name for x in nodes} and any(p.startswith(prefix)
            for p in n.pods)]  # fmt: skip
    drained = {e.object.removeprefix("node/") for e in r.events if e.reason == "Drained" and e.time_ms >= at}
    done = next((e.time_ms for e in r.events if e.reason == "NodePoolUpgraded"), None)
    refused = [e for e in r.events if e.reason == "EvictionRefused" and e.object.startswith(f"pod/{prefix}")]
    count = sum(n in drained for n in held)
    said = [f"a node pool upgrade (maxSurge 1, maxUnavailable 0) from {format_ms(at)}: "
            f"{count} of the {len(held)} nodes holding replicas drained"]  # fmt: skip
    if done is not None:
        said.append(f"every node replaced at {format_ms(done)} ({format_ms(done - at)})")
    said.append(f"{failed} of {ok + failed} requests failed from its start")
    if any(n.labels.get(DEFAULT_LABEL) for n in nodes):
        said.append(f"on {DEFAULT_NODES_SAID}")
    if summary.all_ready_ms is None or summary.all_ready_ms > at:  # the baseline says why
        return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, 0.0,
                            "skipped", f"never had all {w.spec.replicas} replicas Ready before the upgrade "
                            "(see the baseline)", at)  # fmt: skip
    why = []
    if done is None:
        left = format_ms(r.duration_ms - at)
        if refused:
            budgets = ", ".join(b.name for b in sc.disruption_budgets if guards(b, w))
            steps = np.searchsorted(r.time_ms, [e.time_ms for e in refused])
            steps = np.minimum(steps, r.time_ms.size - 1)
            # Refused with every replica Ready: the budget itself allows no eviction (PS035); else
            # it waits for a replacement that is not Ready.
            because = ("it allows no eviction even with every replica Ready (PS035)"
                       if (ready[steps] >= desired[steps]).any()
                       else "a replacement was never Ready, so it allowed no further eviction")  # fmt: skip
            why.append(f"the upgrade stalled: {len(refused)} evictions refused from "
                       f"{format_ms(refused[0].time_ms)} to the run's end by PodDisruptionBudget {budgets}: "
                       f"{because} (GKE deletes the node with its pods after an hour)")  # fmt: skip
        else:
            why.append(f"the upgrade did not complete in {left}")
    if errors > th.max_error_percent:
        why.append(f"errors {errors:.1f} % > {th.max_error_percent:g} % from its start")
    if min_ready < th.min_ready_fraction:
        why.append(f"ready fell to {100 * min_ready:.0f} % < {100 * th.min_ready_fraction:.0f} %")
    if summary.total_restarts > th.max_restarts:
        why.append(f"{summary.total_restarts} restarts > {th.max_restarts}")
        # The classic: a replacement (a pod first started during the upgrade) killed by liveness.
        before = {e.object for e in r.events if e.reason == "Started" and e.time_ms < at}
        killed = [e.object for e in r.events if e.reason == "Killing" and e.time_ms >= at
                  and "liveness" in e.message and e.object not in before]  # fmt: skip
        for pod in dict.fromkeys(killed):
            name, times = pod.removeprefix("pod/"), killed.count(pod)
            why.append(f"replacement pod {name} killed by its liveness probe {times} times (a liveness "
                       "that acts before the app has started: a startupProbe covers the start)")  # fmt: skip
    gap = max((x.no_endpoint_s for x in r.routes), default=0.0)
    verdict = "fail" if why else "pass"
    return StressResult(index, shown, namespace, stress, errors, summary.total_restarts, min_ready, gap,
                        verdict, "; ".join([*why, *said]), at)  # fmt: skip


def nearest_services(objects: Objects, w: Workload, services: list[Service]) -> list[Service]:
    """``services``, one of each name: of Services of one name in several variants' folders (a
    base and its overlays), the one whose file is nearest ``w``'s."""
    here = objects.origin(w).doc.file.split(os.sep)

    def near(s: Service) -> int:
        there = objects.origin(s).doc.file.split(os.sep)
        return -next((i for i, (a, b) in enumerate(zip(here, there, strict=False)) if a != b), len(here))

    best: dict[str, Service] = {}
    for s in services:
        if s.name not in best or near(s) < near(best[s.name]):
            best[s.name] = s
    return [s for s in services if best[s.name] is s]


def stress_suite(
    objects: Objects, given: Scenario | None, th: StressThresholds, processes: int | None = None
) -> list[StressResult]:
    """Every simulated workload behind a Service, under every stress."""
    jobs = []
    names = [(w.kind, w.metadata.namespace, w.name) for w in objects.workloads]
    for i, w in enumerate(objects.workloads):
        selected = nearest_services(objects, w, [s for s in objects.services if selects(s, w)])
        if w.kind not in SIMULATED_KINDS or not selected:
            continue
        base = base_scenario(w, selected, given, objects.pdbs)
        shown = f"{w.kind}/{w.name}"
        if names.count(names[i]) > 1:  # variants (a base and its overlays): say which
            shown += f" ({os.path.dirname(objects.origin(w).doc.file) or '.'})"
        for stress in SUITE:
            sc, not_run = stress_scenario(base, w, stress)
            jobs.append((i, shown, w.metadata.namespace, stress, sc, th, not_run))
    # A stress may give the very scenario of another (twice a start of 0 s is the baseline's),
    # variants the same workload again: each distinct simulation, judged alike, runs once.
    keys = [
        None if sc is None else (json.dumps(sc.to_doc()), _judged_as(stress))
        for _, _, _, stress, sc, _, _ in jobs
    ]
    first: dict[tuple[str, str], int] = {}
    for i, k in enumerate(keys):
        if k is not None:
            first.setdefault(k, i)
    # A workload's baseline and the stresses that are the baseline until EVENT_AT_MS run
    # together, from one warm-up; the costliest first, so that the last to finish is a short one.
    together: dict[int, list[int]] = {}
    tasks: list[list[int]] = []
    for i in sorted(first.values()):
        if jobs[i][3] in ("baseline", *LATER_STRESSES):
            group = together.setdefault(jobs[i][0], [])
            if not group:
                tasks.append(group)
            group.append(i)
        else:
            tasks.append([i])
    tasks.sort(key=lambda t: (-sum(_units(jobs[i][4]) for i in t), t[0]))
    todo = [i for t in tasks for i in t]
    workers = processes or min(len(tasks), os.cpu_count() or 1) or 1
    # Loaded here, the capacity model's kernels are the workers' from their first run, instead of
    # each worker's after its numpy forms have run long enough to pay for loading them.
    steps = sum(sc.spec.duration // sc.spec.step for i in todo if (sc := jobs[i][4]) is not None)
    if steps >= KERNEL_STEPS:
        kernels(steps)
    grouped = [tuple(jobs[i] for i in t) for t in tasks]
    if workers <= 1 or len(tasks) <= 1:
        done = [r for g in grouped for r in run_together(g)]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = [r for rs in pool.map(run_together, grouped) for r in rs]
    result = {keys[i]: r for i, r in zip(todo, done, strict=True)}
    out = []
    for j, k in zip(jobs, keys, strict=True):
        if k is None:
            out.append(run_one(j))  # not simulated: why not
        else:
            out.append(replace(result[k], index=j[0], workload=j[1], namespace=j[2], stress=j[3]))
    return out


def _judged_as(stress: str) -> str:
    """How run_one judges a stress's run: a rollout's by its own rule, a fault that fails
    requests itself on restarts and readiness only, the others alike."""
    return stress if stress in (*ROLLOUTS, *NODE_STRESSES) else "fault" if stress in FAULT_ERRORS else ""


def _units(sc: Scenario | None) -> int:
    return run_cost(sc).units if sc is not None else 0
