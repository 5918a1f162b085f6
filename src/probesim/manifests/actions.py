"""Checks of a scenario's workload actions (rollout, rollback, restart, scale, pause, resume,
partition, readinessGate) against its workloads: names, kinds, what kubectl would refuse, and every
rolled-out pod template validated as the API server validates a Deployment's, with the file and
line of the action that made it; and of its node actions (nodeDown, zoneDown, nodeUp, zoneUp,
drain, uncordon, nodePoolUpgrade) against spec.cluster.nodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from probesim.errors import InputError
from probesim.manifests.builtin_kinds import read_workload
from probesim.manifests.durations import durations
from probesim.manifests.yamlsrc import Doc, Path_
from probesim.model.duration import format_ms
from probesim.model.kubernetes import Workload
from probesim.model.nodes import Drain, NodeDown, NodePoolUpgrade, NodeUp, Uncordon, ZoneDown, ZoneUp
from probesim.model.scenario import (
    Partition,
    Pause,
    Restart,
    Resume,
    Rollback,
    Rollout,
    Scale,
    Scenario,
    SetReadinessGate,
)

Fail = Callable[[Path_, str], InputError]


def check_actions(s: Scenario, head: Doc, fail: Fail, is_pod: Callable[[str], bool]) -> None:
    check_node_actions(s, fail)
    names = {w.name: w for w in s.workloads}
    known = ", ".join(names)
    planned: set[str] = set()
    for i, a in enumerate(s.spec.actions):
        base: Path_ = ("spec", "actions", i)
        if isinstance(a, SetReadinessGate):
            if a.pod is not None and not is_pod(a.pod):
                raise fail((*base, "pod"), f"no pod {a.pod!r} when the run starts")
            wname = a.workload if a.workload is not None else _owner(s, a.pod or "")
            if wname not in names:
                raise fail((*base, "workload"), f"no workload named {wname!r}; known: {known}")
            gates = [g.condition_type for g in names[wname].pod_spec.readiness_gates]
            if a.condition not in gates:
                listed = ", ".join(gates) or "none"
                raise fail(
                    (*base, "condition"),
                    f"{wname}'s pods declare no readiness gate {a.condition!r} "
                    f"(spec.template.spec.readinessGates: {listed})",
                )
            continue
        if not isinstance(a, Rollout | Rollback | Restart | Scale | Pause | Resume | Partition):
            continue
        if a.workload not in names:
            raise fail((*base, "workload"), f"no workload named {a.workload!r}; known: {known}")
        w = names[a.workload]
        if isinstance(a, Partition):
            _check_partition(w, fail, base)
            continue
        if isinstance(a, Scale):
            if w.kind not in ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"):
                raise fail((*base, "workload"), f"a {w.kind} does not scale (kubectl scale takes a "
                           "Deployment, ReplicaSet or StatefulSet)")  # fmt: skip
            if w.kind == "ReplicaSet":
                _check_not_adopted(s, w, fail, base)
            continue
        if a.workload not in planned:
            planned.add(a.workload)
            _plan(s, head, fail, w)


def _check_not_adopted(s: Scenario, w: Workload, fail: Fail, base: Path_) -> None:
    """A ReplicaSet its Deployment adopts is sized by the Deployment's controller, which would
    scale it straight back: the scale belongs to the Deployment."""
    from probesim.engine.controllers.adoption import adoptions  # the engine loads numpy

    a = next((a for a in adoptions(s).values() if s.workloads[a.replica_set] is w), None)
    if a is not None:
        d = s.workloads[a.deployment].name
        raise fail((*base, "workload"), f"ReplicaSet {w.name} is Deployment {d}'s (it adopts it: its "
                   f"selector matches the ReplicaSet's labels): scale the Deployment")  # fmt: skip


def _check_partition(w: Workload, fail: Fail, base: Path_) -> None:
    """A partition belongs to a StatefulSet's RollingUpdate strategy (the API server refuses
    rollingUpdate with OnDelete: "only allowed for updateStrategy 'RollingUpdate'")."""
    if w.kind != "StatefulSet":
        raise fail((*base, "workload"), f"a partition is a StatefulSet's (spec.updateStrategy.rollingUpdate."
                   f"partition); {w.name} is a {w.kind}")  # fmt: skip
    us = w.spec.update_strategy
    if us is not None and us.type != "RollingUpdate":
        raise fail((*base, "workload"), f"StatefulSet {w.name} has updateStrategy {us.type}: a partition "
                   "applies to the RollingUpdate strategy only")  # fmt: skip


def _owner(s: Scenario, pod: str) -> str:
    for w in s.workloads:
        if pod == w.name or pod.removeprefix(f"{w.name}-").isdigit():
            return w.name
    return ""


def _plan(s: Scenario, head: Doc, fail: Fail, w: Workload) -> None:
    def build(data: dict[str, Any], i: int) -> Workload:
        """Validate a rolled-out template as the API server would the Deployment it belongs to,
        with errors at the action's lines."""
        prefix: Path_ = ("spec", "actions", i, "template")
        lines = {
            ("spec", "template", *p[len(prefix) :]): ln
            for p, ln in head.lines.items()
            if p[: len(prefix)] == prefix
        }
        a = s.spec.actions[i]
        doc = Doc(file=head.file, data=data, line=head.line_of(prefix), lines=lines)
        obj = f"{a.kind} of {w.kind} {w.name} at {format_ms(a.at)}"
        full = {"apiVersion": "apps/v1", **data}
        new, _ = read_workload(doc, (), full, obj)
        return new

    # Imported here: the engine (numpy) loads only for scenarios that roll something out.
    from probesim.engine.controllers.templates import PlanError, plan

    try:
        p = plan(s, w.name, build)
    except PlanError as e:
        raise fail(("spec", "actions", e.action, *e.path), e.message) from None

    step = s.spec.step
    for i, t in p.template_of.items():
        a = s.spec.actions[i]
        if not isinstance(a, Rollout) or a.behavior is None:
            continue
        rev = p.revisions[t].workload
        cnames = [c.name for c in (*rev.pod_spec.init_containers, *rev.pod_spec.containers)]
        for cname in a.behavior.containers:
            if cname not in cnames:
                raise fail(
                    ("spec", "actions", i, "behavior", "containers", cname),
                    f"the rolled-out template has no container {cname!r}; containers: {', '.join(cnames)}",
                )
        alone = s.spec.model_copy(update={"behavior": {w.name: a.behavior}, "actions": (), "traffic": ()})
        for path, ms in durations(alone):
            if path[:2] == ("spec", "behavior") and ms % step:
                where = ("spec", "actions", i, "behavior", *path[3:])
                raise fail(where, f"{format_ms(ms)} is not a multiple of the step ({format_ms(step)})")


def check_node_actions(s: Scenario, fail: Fail) -> None:
    """Node actions name nodes and zones of spec.cluster.nodes, in an order that can happen (a
    node goes down when it is up, comes back when it is down); pods' spec.nodeName names a node."""
    nodes = s.spec.cluster.node_list()
    kinds = NodeDown | ZoneDown | NodeUp | ZoneUp | Drain | Uncordon | NodePoolUpgrade
    acts = [(i, a) for i, a in enumerate(s.spec.actions) if isinstance(a, kinds)]
    if nodes is None:
        if acts:
            i, a = acts[0]
            raise fail(("spec", "actions", i, "kind"), f"{a.kind} needs the cluster's nodes: give "
                       "spec.cluster.nodes (e.g. {count: 3, zones: [a, b, c]}); without it every pod runs "
                       "on one implicit node that never fails")  # fmt: skip
        return
    names = [n.name for n in nodes]
    zones = list(dict.fromkeys(n.zone for n in nodes if n.zone is not None))
    for w in s.workloads:
        given = w.pod_spec.node_name
        if given is not None and given not in names:
            raise fail(("spec", "cluster", "nodes"), f"{w.kind} {w.name} sets spec.nodeName {given!r}, "
                       f"which is not one of spec.cluster.nodes ({_listed(names)})")  # fmt: skip
    down: dict[str, int] = {}  # node → the action that took it down
    for i, a in sorted(acts, key=lambda x: (x[1].at, x[0])):
        base: Path_ = ("spec", "actions", i)
        if isinstance(a, NodePoolUpgrade):
            if a.max_surge + a.max_unavailable == 0:
                raise fail((*base, "maxSurge"), "maxSurge and maxUnavailable cannot both be 0: nothing "
                           "could be upgraded (GKE's default is maxSurge 1, maxUnavailable 0)")  # fmt: skip
            if sum(isinstance(x, NodePoolUpgrade) for _, x in acts) > 1:
                raise fail((*base, "kind"), "give one nodePoolUpgrade: the pool is upgraded once")
            continue
        if isinstance(a, Drain | Uncordon):
            if a.node not in names:
                raise fail((*base, "node"), f"no node {a.node!r} in spec.cluster.nodes ({_listed(names)})")
            continue
        if isinstance(a, NodeDown | NodeUp):
            if a.node not in names:
                raise fail((*base, "node"), f"no node {a.node!r} in spec.cluster.nodes ({_listed(names)})")
            which = [a.node]
        else:
            if a.zone not in zones:
                known = _listed(zones) if zones else "none: give the nodes zones"
                raise fail((*base, "zone"), f"no zone {a.zone!r} among spec.cluster.nodes (zones: {known})")
            which = [n.name for n in nodes if n.zone == a.zone]
        when = format_ms(a.at)
        if isinstance(a, NodeDown):
            if a.node in down:
                by = f"spec.actions[{down[a.node]}]"
                raise fail((*base, "node"), f"{a.node} is already down at {when} ({by} took it down): give "
                           "a nodeUp first")  # fmt: skip
        elif isinstance(a, ZoneDown):
            if all(n in down for n in which):
                raise fail((*base, "zone"), f"every node of zone {a.zone} is already down at {when}")
        elif isinstance(a, NodeUp):
            if a.node not in down:
                raise fail((*base, "node"), f"{a.node} is not down at {when}: a nodeUp follows a nodeDown or "
                           "zoneDown of it")  # fmt: skip
        elif not any(n in down for n in which):
            raise fail((*base, "zone"), f"no node of zone {a.zone} is down at {when}: a zoneUp follows a "
                       "zoneDown or nodeDown there")  # fmt: skip
        for n in which:
            if isinstance(a, NodeDown | ZoneDown):
                down.setdefault(n, i)
            else:
                down.pop(n, None)


def _listed(items: list[str]) -> str:
    return ", ".join(items[:20]) + (", …" if len(items) > 20 else "")
