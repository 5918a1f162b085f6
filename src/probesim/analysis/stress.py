"""The stress suite: each workload on its own, behind its own Services, simulated under built-in
stresses, with a verdict per stress against thresholds. Runs fan out over local processes.

A workload is stressed alone: its Services, its behaviour and the traffic a given scenario sends
to its Services (other workloads, their traffic and the scenario's actions are left out), so
one workload's failure is never blamed on another. Without a scenario, its HPA and the Istio
rules naming its Services among the files are in its stresses (own_scenario; a VirtualService
that routes to pods it does not have is left out, and said). Without a scenario (or traffic for
it), the workload gets the default load model (kube/load_model.py): 100 requests per second per
core of CPU request per replica on "/", 5 ms of CPU each (half the request at base load), from
1m on; and unless a scenario says what the app does, its app answers after its profile's
typical start (at once for an app probesim does not know; start-x2 doubles it), and the
stop-the-world stress pauses it for its profile's longest pause when longer than 2 s.

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
or a default cluster: ``node-down`` and ``zone-down`` crash the busiest node or its zone at 2m;
``node-drain`` upgrades the node pool from 2m as GKE does by default, each node drained in turn
through the PodDisruptionBudgets that select the workload, and fails on an upgrade that does not
complete (a budget that allows no eviction stalls it), errors, the lowest ready fraction or
restarts.

This module holds the suite's entry points: its stresses, each stress's scenario, and the runs
with their verdicts. The workload's own scenario from the files, the Services nearest it and
what its app profile gives a stress are analysis/own_scenario.py's; the node stresses' scenarios
and verdicts analysis/node_stresses.py's; the thresholds, a stress's result and the other
verdicts analysis/stress_verdicts.py's.
"""

from __future__ import annotations

import copy
import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from probesim.analysis.node_stresses import NotApplied, guards, judge_drain, judge_node, node_stress
from probesim.analysis.own_scenario import (
    DURATION_MS,
    STOP_THE_WORLD_MS,
    alone_note,
    dump,
    nearest_services,
    own_scenario,
    pause_ms,
    profile_note,
)
from probesim.analysis.stress_verdicts import (
    StressResult,
    StressThresholds,
    judge_after_ramp,
    judge_rollout,
    too_costly,
)
from probesim.cost import DEFAULT_MAX_COST, run_cost
from probesim.engine import simulate
from probesim.engine.controllers.templates import PlanError
from probesim.engine.kernel_choice import KERNEL_STEPS, kernels
from probesim.engine.warm import together
from probesim.kube.load_model import app_profiles, default_rate, workload_behavior
from probesim.kube.rolling import rolling_update
from probesim.kube.selectors import selects
from probesim.manifests.kubernetes import SIMULATED_KINDS, Objects
from probesim.model.disruption import PodDisruptionBudget
from probesim.model.duration import parse_ms
from probesim.model.kubernetes import Probe, Service, Workload
from probesim.model.scenario import Hang, Scenario, service_calls
from probesim.profiles import ProfileCorrection, Resolved
from probesim.results.result import Result

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
# judged from its start on (judge_rollout). Not in the tuner's runs: a release that never
# becomes Ready may be restarted by liveness by design, which its objectives would count.
ROLLOUTS = ("rollout", "rollout-never-ready")
# A node's or a zone's failure at EVENT_AT_MS, judged from then on (judge_node): the node that
# holds the most of the workload's replicas crashes (``node-down``), or its zone goes (``zone-down``).
# ``node-drain``: a node pool upgrade at EVENT_AT_MS (GKE's surge defaults) drains each node in
# turn through the workload's PodDisruptionBudgets (judge_drain).
NODE_STRESSES = ("node-down", "zone-down", "node-drain")
SUITE = (*STRESSES, *ROLLOUTS, *NODE_STRESSES)
# The stresses that are the baseline until EVENT_AT_MS: they go on from its warm-up
# (engine/warm.py) instead of simulating the same start-up again.
LATER_STRESSES = ("stop-the-world-2s",)
EVENT_AT_MS = 2 * 60_000


def base_scenario(
    w: Workload,
    services: list[Service],
    given: Scenario | None,
    budgets: list[PodDisruptionBudget] | None = None,
    app: dict[str, Resolved] | None = None,
) -> dict[str, Any]:
    """The workload alone (as a Scenario document): its Services, its behaviour and the traffic
    the given scenario sends them, or the default load model; and the PodDisruptionBudgets (of
    ``budgets``, or else the given scenario's) that guard its pods, which only evictions (the
    node-drain stress) consult. ``app``: each container's app profile (suite_base), whose typical
    start the default load model's app takes; a scenario's behaviour for the workload wins."""
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
        doc["autoscalers"] = [dump(h) for h in given.autoscalers if given.autoscaler_for(w) is h]
        doc["destinationRules"] = [
            dump(r) for r in given.destination_rules if r.spec.host.split(".")[0] in names
        ]
        doc["virtualServices"] = [
            dump(v) for v in given.virtual_services if any(h.split(".")[0] in names for h in v.spec.hosts)
        ]
        if given.namespace_labels:  # Istio injects by them
            doc["namespaceLabels"] = given.namespace_labels
        # What it calls goes with it, as the scenario has it: a stress of the workload reaches
        # what it calls, and a call to a Service that is not there would be a refusal.
        for callee, its in _callees(given, w):
            doc["workloads"] = [*doc.get("workloads", []), dump(callee)]
            if callee.name in gs.get("behavior", {}):
                spec.setdefault("behavior", {})[callee.name] = gs["behavior"][callee.name]
            services = [*services, *(x for x in its if x not in services)]
    if w.name not in spec.get("behavior", {}):
        spec.setdefault("behavior", {})[w.name] = workload_behavior(w, own)
        for name, b in spec["behavior"][w.name]["containers"].items():
            p = (app or {}).get(name)
            if p is not None and p.timed and p.start_ms[0] > 0:
                b["start"] = f"{p.start_ms[0]}ms"
    if not traffic and own:  # a worker (no Service) gets none: nothing sends it requests
        traffic = [{"service": own[0].name, "path": "/", "rate": default_rate(w), "start": "1m"}]
    spec["traffic"] = traffic
    doc["spec"] = spec
    doc["workloads"] = [dump(w), *doc.get("workloads", [])]
    doc["services"] = [dump(s) for s in services]
    pdbs = [b for b in (budgets if budgets is not None else given.disruption_budgets if given else [])
            if guards(b, w)]  # fmt: skip
    if pdbs:
        doc["disruptionBudgets"] = [dump(b) for b in pdbs]
    return doc


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


def suite_base(
    objects: Objects,
    w: Workload,
    services: list[Service],
    given: Scenario | None,
    corrections: tuple[ProfileCorrection, ...] = (),
) -> tuple[dict[str, Any], dict[str, Resolved] | None, str]:
    """The base scenario the suite stresses ``w`` from (base_scenario: in the given scenario, or
    in its own, own_scenario), its containers' app profiles (``corrections``: .probesim.yaml's)
    when no scenario says what the app does (None when one does), and what of the files was left
    out (own_scenario's text)."""
    app = app_profiles(w, corrections) if given is None or w.name not in given.spec.behavior else None
    alone, left = (given, "") if given is not None else own_scenario(objects, w, services)
    return base_scenario(w, services, alone, objects.pdbs, app), app, left


def apply(
    base: dict[str, Any], w: Workload, stress: str, app: dict[str, Resolved] | None = None
) -> Scenario | None:
    """The base scenario under one stress; None when the stress does not apply. ``app``: the
    containers' app profiles (suite_base): a pause longer than the suite's 2 s is theirs, and
    an app that speaks no HTTP does not answer 500."""
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
        binary = sorted({p.profile.protocol for p in (app or {}).values() if p.known} - {"http", "grpc"})
        if binary and all(p.known and p.profile.protocol in binary for p in (app or {}).values()):
            names = ", ".join(dict.fromkeys(p.profile.name for p in (app or {}).values()))
            raise NotApplied(f"{names} speaks the {', '.join(binary)} protocol, not HTTP (its profile): "
                             "no request answers 500 (give --scenario with its behaviour to stress its "
                             "errors)")  # fmt: skip
        paths = {t.get("path", "/"): 500 for t in spec.get("traffic", [])}
        bad = {n: {**b, "paths": {**b.get("paths", {}), **paths}} for n, b in containers.items()}
        spec["behavior"][w.name].setdefault("pods", []).append({"ordinals": [0], "containers": bad})
    elif stress == "stop-the-world-2s":
        for name, b in containers.items():
            pause = max(STOP_THE_WORLD_MS, pause_ms(app, name))
            episode = {"kind": "hang", "at": f"{EVENT_AT_MS}ms", "for": f"{pause}ms"}
            b.setdefault("episodes", []).append(episode)
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
        return node_stress(doc, w, stress, EVENT_AT_MS)
    elif stress != "baseline":
        raise ValueError(stress)
    return Scenario.model_validate(doc)


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


def stress_scenario(
    base: dict[str, Any], w: Workload, stress: str, app: dict[str, Resolved] | None = None
) -> tuple[Scenario | None, str]:
    """The stress's scenario, or why it is not run: it does not apply, the workload's values make
    no valid scenario (a rate of 10 per replica over the limit), or it would cost more than
    ``probesim run`` allows by default (checked before it starts, as run does). ``app``: apply's."""
    try:
        sc = apply(base, w, stress, app)
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
        return judge_rollout(index, shown, namespace, stress, r, w, th)
    if stress == "node-drain":
        return judge_drain(index, shown, namespace, stress, r, sc, th)
    if stress in NODE_STRESSES:
        return judge_node(index, shown, namespace, stress, r, sc, th)
    judged = judge_after_ramp(
        index, shown, namespace, stress, r, w, th, stress not in FAULT_ERRORS, _pause_span(sc, stress)
    )
    if stress in FAULT_ERRORS and judged.error_percent > 0:
        return replace(judged, why="; ".join(x for x in (judged.why, fault_note(stress, sc, judged)) if x))
    return judged


def _pause_span(sc: Scenario, stress: str) -> tuple[int, int] | None:
    """stop-the-world's pause (from, to): the span every container of every replica is paused."""
    if stress != "stop-the-world-2s":
        return None
    w = sc.workloads[0]
    wb = sc.behavior(w.name)
    lengths = [
        e.for_
        for c in w.pod_spec.containers
        for e in wb.containers[c.name].episodes
        if isinstance(e, Hang) and e.at == EVENT_AT_MS
    ]
    return (EVENT_AT_MS, EVENT_AT_MS + min(lengths)) if lengths else None


def fault_note(stress: str, sc: Scenario, r: StressResult) -> str:
    """Why a stress whose fault fails requests itself leaves those errors unjudged, what serves
    around them, and what it judges instead."""
    w = sc.workloads[0]
    judged = (f"judged instead: what the probes do about it — restarts ({r.restarts}) and the lowest "
              f"ready fraction ({100 * r.min_ready_fraction:.0f} %) after the start-up ramp")  # fmt: skip
    if stress == "dependency-hangs":
        return (f"the {r.error_percent:.1f} % failed are the requests whose dependency call hangs, the "
                "fault itself: no probe setting serves them (a probe that checks the dependency takes "
                f"every pod out or restarts it for nothing); {judged}")  # fmt: skip
    paths = sorted({t.path for t in sc.spec.traffic})
    said = ", ".join(paths)
    ready = w.pod_spec.containers[0].readiness_probe if w.pod_spec.containers else None
    key = _check_key(ready)
    if ready is None:
        sees = "it has no readiness probe"
    elif key is None:
        sees = "its tcpSocket readiness probe connects and cannot see a status"
    elif key in paths:
        sees = f"its readiness probe checks {key} too, and takes it out only after its failures"
    else:
        sees = f"its readiness probe checks {key}, which still answers"
    names = {s.name for s in sc.services}
    rules = [x for x in sc.destination_rules if x.spec.host.split(".")[0] in names
             and x.spec.traffic_policy is not None
             and x.spec.traffic_policy.outlier_detection is not None]  # fmt: skip
    mesh = (
        f"DestinationRule {rules[0].metadata.name}'s outlier detection, in this run, ejects it from the "
        "callers' load balancing"
        if rules
        else "only a mesh's outlier detection (none here) would eject it from the callers' load balancing"
    )
    return (f"the {r.error_percent:.1f} % failed are the injected fault itself, not judged: pod 0 answers "
            f"500 on {said} and {sees}; {mesh}; {judged}")  # fmt: skip


def run_together(jobs: tuple[Job, ...]) -> list[StressResult]:
    """``run_one`` of each job (in worker processes). A workload's baseline and its
    LATER_STRESSES go on from one warm-up (engine/warm.py): the baseline's scenario (the first
    job's) simulated up to EVENT_AT_MS; the baseline goes on last, from the warm-up's own state."""
    scenarios = [j[4] for j in jobs]
    if len(jobs) == 1 or any(sc is None for sc in scenarios):
        return [run_one(j) for j in jobs]
    results = together([sc for sc in scenarios if sc is not None], EVENT_AT_MS)
    return [run_one(j, r) for j, r in zip(jobs, results, strict=True)]


def stress_suite(
    objects: Objects,
    given: Scenario | None,
    th: StressThresholds,
    processes: int | None = None,
    corrections: tuple[ProfileCorrection, ...] = (),
) -> list[StressResult]:
    """Every simulated workload behind a Service, under every stress (``corrections``: the app
    profiles' from .probesim.yaml)."""
    jobs = []
    notes: list[str] = []
    names = [(w.kind, w.metadata.namespace, w.name) for w in objects.workloads]
    for i, w in enumerate(objects.workloads):
        selected = nearest_services(objects, w, [s for s in objects.services if selects(s, w)])
        if w.kind not in SIMULATED_KINDS or not selected:
            continue
        base, app, left = suite_base(objects, w, selected, given, corrections)
        shown = f"{w.kind}/{w.name}"
        if names.count(names[i]) > 1:  # variants (a base and its overlays): say which
            shown += f" ({os.path.dirname(objects.origin(w).doc.file) or '.'})"
        alone = alone_note(objects, w, selected)
        for stress in SUITE:
            sc, not_run = stress_scenario(base, w, stress, app)
            jobs.append((i, shown, w.metadata.namespace, stress, sc, th, not_run))
            one = sc is None and w.spec.replicas < 2 and stress in ("one-pod-500", *NODE_STRESSES)
            note = profile_note(stress, base, w, app) if sc is not None else alone if one else ""
            notes.append("; ".join(x for x in (note, left if stress == "baseline" else "") if x))
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
    for j, k, note in zip(jobs, keys, notes, strict=True):
        if k is None:
            r = run_one(j)  # not simulated: why not
            out.append(replace(r, why="; ".join(x for x in (r.why, note) if x)))
        else:
            r = replace(result[k], index=j[0], workload=j[1], namespace=j[2], stress=j[3])
            out.append(replace(r, why="; ".join(x for x in (r.why, note) if x)))
    return out


def _judged_as(stress: str) -> str:
    """How run_one judges a stress's run: a rollout's by its own rule, a fault that fails
    requests itself on restarts and readiness only, the others alike."""
    if stress in (*ROLLOUTS, *NODE_STRESSES, *LATER_STRESSES):
        return stress
    return "fault" if stress in FAULT_ERRORS else ""


def _units(sc: Scenario | None) -> int:
    return run_cost(sc).units if sc is not None else 0
