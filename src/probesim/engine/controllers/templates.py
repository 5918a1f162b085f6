"""The pod templates a workload goes through in a run, known before it starts: the manifest's,
then one per ``rollout`` (a strategic-merge patch of the template), ``restart`` (the template
with kubectl's ``restartedAt`` annotation) or ``rollback`` (an earlier revision's template), in
the order of the actions. Each distinct template is a revision with its own ReplicaSet (a
Deployment) and its app's behaviour; the engine builds pods for every revision at set-up.

``plan`` raises ``PlanError`` (with the action's index and the field at fault) for what kubectl
or the API server would refuse; the scenario loader turns it into an error with file and line.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from probesim.engine.controllers.adoption import REVISION, adoptions, annotation_int
from probesim.model.kubernetes import Workload
from probesim.model.scenario import (
    Pause,
    Restart,
    Resume,
    Rollback,
    Rollout,
    Scale,
    Scenario,
    WorkloadAction,
    WorkloadBehavior,
)

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
# The wall-clock time probesim gives the run's start, for kubectl's restartedAt annotation.
RUN_START = datetime(2026, 1, 1, tzinfo=UTC)

# patchMergeKey of the list fields a pod template holds (k8s.io/api/core/v1 types.go): items
# with the same key are merged, others appended; every other list is replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "ports": "containerPort",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
}


class PlanError(ValueError):
    def __init__(self, action: int, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.action = action
        self.path = path
        self.message = message


class MergeError(ValueError):
    """A patch that cannot be merged, at ``path`` inside it."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(f"{'.'.join(map(str, path))}: {message}" if path else message)
        self.path = path
        self.message = message


def strategic_merge(base: Any, patch: Any, where: tuple[str | int, ...] = ()) -> Any:
    """``kubectl patch --type strategic`` of pod-template data: maps merge key by key (``null``
    removes a key; ``$patch: replace`` replaces the map), lists of MERGE_KEYS merge item by
    item on their key (``$patch: delete`` removes an item), other lists and scalars replace."""
    if not isinstance(patch, dict) or not isinstance(base, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    out = dict(base)
    for k, v in patch.items():
        if k == "$patch":
            raise MergeError(where, "$patch may only be 'replace' in a map (or 'delete' in a list item)")
        if v is None:
            out.pop(k, None)
        elif k in MERGE_KEYS and isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = _merge_list(out[k], v, MERGE_KEYS[k], (*where, k))
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = strategic_merge(out[k], v, (*where, k))
        else:
            out[k] = v
    return out


def _merge_list(base: list[Any], patch: list[Any], key: str, where: tuple[str | int, ...]) -> list[Any]:
    items = list(base)
    for i, p in enumerate(patch):
        if not isinstance(p, dict) or key not in p:
            raise MergeError((*where, i), f"each item of {where[-1]!r} needs its merge key {key!r}")
        at = next((j for j, x in enumerate(items) if isinstance(x, dict) and x.get(key) == p[key]), None)
        if p.get("$patch") == "delete":
            if at is not None:
                items.pop(at)
            continue
        clean = {k: v for k, v in p.items() if k != "$patch"}
        if at is None:
            items.append(clean)
        else:
            items[at] = strategic_merge(items[at], clean, (*where, i))
    return items


@dataclass
class Revision:
    """One pod template of a workload, and what its pods' app does."""

    workload: Workload  # the workload with this template
    behavior: WorkloadBehavior
    key: str  # the template as JSON: equal templates are one revision (one ReplicaSet)
    origin: str  # "the manifest's", "rollout at 1m", …


@dataclass
class WorkloadPlan:
    revisions: list[Revision]
    # Per action index (of spec.actions): the template it makes current (rollout, restart,
    # rollback), the revision number it targets (rollback), in the Deployment's numbering.
    template_of: dict[int, int] = field(default_factory=dict)
    # Per ReplicaSet the Deployment adopts (adoption.py, its workload index): its template here,
    # 0 when it is the manifest's, else a revision of its own, numbered by its annotation.
    adopted: dict[int, int] = field(default_factory=dict)


Build = Callable[[dict[str, Any], int], Workload]


def _default_build(data: dict[str, Any], action: int) -> Workload:
    return Workload.model_validate(data)


def _when(ms: int) -> str:
    s = ms / 1000
    return f"{s:g}s" if s < 60 or s % 60 else f"{int(s // 60)}m"


def plan(scenario: Scenario, name: str, build: Build = _default_build) -> WorkloadPlan:
    """The revisions of workload ``name`` over the run (index 0: the manifest's)."""
    w = scenario.workload(name)
    data = w.model_dump(mode="json", by_alias=True, exclude_none=True)
    first = Revision(w, scenario.behavior(name), _key(data), "the manifest's")
    out = WorkloadPlan([first])
    current = 0
    paused = bool(w.spec.paused) if w.kind == "Deployment" else False
    # Template → its ReplicaSet's revision number; a Deployment created paused has none yet.
    numbers: dict[int, int] = {} if paused else {0: 1}
    if w.kind == "Deployment":
        _adopt(scenario, w, out, numbers)
    pending: int | None = 0 if paused else None  # a template changed while paused: on resume
    actions: list[tuple[int, int, WorkloadAction]] = []
    for i, any_action in enumerate(scenario.spec.actions):
        if isinstance(any_action, Rollout | Rollback | Restart | Scale | Pause | Resume):
            actions.append((any_action.at, i, any_action))
    actions.sort(key=lambda x: (x[0], x[1]))

    def make_current(t: int) -> None:
        nonlocal current, pending
        current = t
        if paused:
            pending = t
            return
        pending = None
        top = max(numbers.values(), default=0)
        if numbers.get(t) != top:
            numbers[t] = top + 1

    for at, i, a in actions:
        if a.workload != name:
            continue
        if isinstance(a, Pause | Resume):
            if w.kind != "Deployment":
                raise PlanError(i, ("kind",), f"only a Deployment pauses ({name} is a {w.kind})")
            if isinstance(a, Pause) == paused:
                state = "already paused" if paused else "not paused"
                raise PlanError(i, ("kind",), f"Deployment {name} is {state} at {_when(at)}")
            paused = isinstance(a, Pause)
            if not paused and pending is not None:
                make_current(pending)
            continue
        if isinstance(a, Scale):
            continue
        if w.kind not in ("Deployment", "StatefulSet"):
            raise PlanError(
                i, ("workload",), f"a {w.kind} does not roll out a new template: only a Deployment or "
                "StatefulSet does (a ReplicaSet keeps its pods; its Deployment replaces them)",
            )  # fmt: skip
        base = out.revisions[current]
        if isinstance(a, Rollback):
            if paused:
                raise PlanError(
                    i, ("kind",), "kubectl refuses to roll back a paused Deployment ('resume it first with "
                    "kubectl rollout resume'): add a resume action before",
                )  # fmt: skip
            target = _rollback_target(numbers, a, i, name, out)
            out.template_of[i] = target
            if target != current:
                make_current(target)
            continue
        if isinstance(a, Restart):
            if paused:
                raise PlanError(
                    i, ("kind",), "kubectl refuses to restart a paused Deployment (resume it first)"
                )
            tdata = json.loads(
                json.dumps(base.workload.model_dump(mode="json", by_alias=True, exclude_none=True))
            )
            meta = tdata["spec"]["template"].setdefault("metadata", {})
            stamp = (RUN_START + timedelta(milliseconds=at)).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta.setdefault("annotations", {})[RESTARTED_AT] = stamp
            behavior = base.behavior
            origin = f"restart at {_when(at)}"
        else:
            assert isinstance(a, Rollout)
            tdata = base.workload.model_dump(mode="json", by_alias=True, exclude_none=True)
            try:
                merged = strategic_merge(tdata["spec"]["template"], a.template)
            except MergeError as e:
                raise PlanError(i, ("template", *e.path), e.message) from None
            tdata = {**tdata, "spec": {**tdata["spec"], "template": merged}}
            behavior = a.behavior if a.behavior is not None else base.behavior
            origin = f"rollout at {_when(at)}"
        key = _key(tdata)
        same = next((j for j, r in enumerate(out.revisions) if r.key == key), None)
        if same is not None:
            if same == current and isinstance(a, Rollout):
                raise PlanError(
                    i, ("template",), "this rollout leaves the pod template as it is, so the Deployment "
                    "controller starts no rollout; change something in it, e.g. the image: "
                    "template: {spec: {containers: [{name: app, image: app:2}]}}",
                )  # fmt: skip
            if (
                isinstance(a, Rollout)
                and a.behavior is not None
                and a.behavior != out.revisions[same].behavior
            ):
                raise PlanError(
                    i, ("behavior",), f"the template is the same as {out.revisions[same].origin}, whose "
                    "pods behave as that revision says: give a different template for a different behaviour",
                )  # fmt: skip
            out.template_of[i] = same
            make_current(same)
            continue
        out.revisions.append(Revision(build(tdata, i), behavior, key, origin))
        out.template_of[i] = len(out.revisions) - 1
        make_current(len(out.revisions) - 1)
    return out


def _adopt(scenario: Scenario, w: Workload, out: WorkloadPlan, numbers: dict[int, int]) -> None:
    """The ReplicaSets ``w`` adopts when the run starts: one of the manifest's template is its
    new ReplicaSet (its revision kept if higher: ``SetNewReplicaSetAnnotations``), another is
    an old revision with the number its annotation gives (0 without one, as ``Revision`` reads
    it) — so a later rollout to that template, or a rollback, finds it. The Deployment's own
    first ReplicaSet takes the revision after the highest (``getNewReplicaSet``)."""
    wi = next(i for i, x in enumerate(scenario.workloads) if x is w)
    first = out.revisions[0].key
    own: int | None = None
    for a in adoptions(scenario).values():
        if a.deployment != wi:
            continue
        rs = scenario.workloads[a.replica_set]
        number = annotation_int(rs, REVISION, 64) or 0
        if a.key == first and 0 not in out.adopted.values():
            out.adopted[a.replica_set] = 0
            own = number
            continue
        origin = f"adopted ReplicaSet {rs.name}"
        out.revisions.append(Revision(rs, scenario.behavior(rs.name), a.key, origin))
        out.adopted[a.replica_set] = len(out.revisions) - 1
        numbers[len(out.revisions) - 1] = number
    if 0 in numbers:
        after = max((n for t, n in numbers.items() if t), default=0) + 1
        numbers[0] = max(after, own or 0)


def _rollback_target(numbers: dict[int, int], a: Rollback, i: int, name: str, out: WorkloadPlan) -> int:
    """kubectl rollout undo's choice: ``--to-revision`` N, or the revision before the newest."""
    by_number = sorted(numbers.items(), key=lambda kv: kv[1], reverse=True)
    listing = ", ".join(
        f"{n} ({out.revisions[t].origin})" for t, n in sorted(by_number, key=lambda kv: kv[1])
    )
    if a.to_revision is None:
        if len(by_number) < 2:
            raise PlanError(
                i, ("kind",), f'no rollout history found for deployment "{name}" (revisions: {listing})'
            )
        return by_number[1][0]
    for t, n in by_number:
        if n == a.to_revision:
            return t
    raise PlanError(
        i,
        ("toRevision",),
        f"unable to find specified revision {a.to_revision} in history (revisions then: {listing})",
    )


def _key(data: dict[str, Any]) -> str:
    """A template's identity (its ReplicaSet's name hashes it). Memory requests and limits are
    left out: read only since nodes are simulated, they would rename every ReplicaSet of a
    template that sets them (a rollout of a memory change alone keeps its ReplicaSet, as before)."""
    template = data["spec"]["template"]
    spec = template.get("spec", {})
    if any("memory" in c.get("resources", {}).get(part, {})
           for group in ("containers", "initContainers") for c in spec.get(group, ())
           for part in ("requests", "limits")):  # fmt: skip
        template = copy.deepcopy(template)
        for group in ("containers", "initContainers"):
            for c in template["spec"].get(group, ()):
                for part in ("requests", "limits"):
                    c.get("resources", {}).get(part, {}).pop("memory", None)
    return json.dumps(template, sort_keys=True, separators=(",", ":"))
