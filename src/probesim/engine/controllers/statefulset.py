"""The StatefulSet controller's order of work (pkg/controller/statefulset/stateful_set_control.go,
``updateStatefulSet``): create missing ordinals (lowest first; with OrderedReady one at a time,
each once its predecessors are Running and available), delete ordinals beyond ``replicas``
(highest first), then — RollingUpdate only — replace pods of the old revision from the
**highest ordinal down** to ``partition``, one at a time waiting for each replacement to be
healthy, or with ``maxUnavailable`` several at once. OnDelete replaces nothing: a pod deleted by
hand comes back at the update revision.

One sync: ``reconcile`` reads the pods by ordinal and says which ordinals to create (and at
which revision) and which to delete. The caller creates a pod once the old one of that ordinal
is gone (a StatefulSet pod keeps its name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from probesim.kube.arithmetic import IntOrPercent, statefulset_max_unavailable


@dataclass(frozen=True)
class SetPod:
    ordinal: int
    revision: int  # the controller-revision-hash it was created from (the caller's index)
    terminating: bool = False
    running_ready: bool = False  # isRunningAndReady
    available: bool = False  # isRunningAndAvailable (Ready for minReadySeconds)


@dataclass
class StatefulSetState:
    replicas: int
    update_revision: int
    current_revision: int
    policy: Literal["OrderedReady", "Parallel"] = "OrderedReady"
    strategy: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    partition: int = 0
    max_unavailable: IntOrPercent | None = None  # None: the field unset (one at a time)


@dataclass
class Decision:
    create: list[tuple[int, int]] = field(default_factory=list)  # (ordinal, revision)
    delete: list[int] = field(default_factory=list)  # ordinals


def created_revision(s: StatefulSetState, ordinal: int) -> int:
    """``newVersionedStatefulSetPod``: below the partition (RollingUpdate) a pod is created at
    the current revision, otherwise at the update revision — OnDelete included."""
    if s.strategy == "RollingUpdate" and ordinal < s.partition:
        return s.current_revision
    return s.update_revision


def _healthy(p: SetPod) -> bool:
    return p.available and not p.terminating


def reconcile(s: StatefulSetState, pods: dict[int, SetPod]) -> Decision:
    """One ``updateStatefulSet`` pass over the pods that exist (by ordinal)."""
    out = Decision()
    monotonic = s.policy == "OrderedReady"
    for i in range(s.replicas):
        p = pods.get(i)
        if p is None:
            out.create.append((i, created_revision(s, i)))
            if monotonic:
                return out
            continue
        if p.terminating and monotonic:
            return out
        if not p.available and monotonic:
            return out
    condemned = sorted((o for o in pods if o >= s.replicas), reverse=True)
    unhealthy = [o for o in sorted(pods) if not _healthy(pods[o])]
    first_unhealthy = unhealthy[0] if unhealthy else None
    for o in condemned:
        p = pods[o]
        if p.terminating:
            if monotonic:
                return out
            continue
        if monotonic and not p.running_ready and o != first_unhealthy:
            return out
        out.delete.append(o)
        if monotonic:
            return out
    if s.strategy == "OnDelete":
        return out
    replicas = [pods.get(i) for i in range(s.replicas)]
    if s.max_unavailable is None:
        for target in range(s.replicas - 1, s.partition - 1, -1):
            p = replicas[target]
            if p is None:
                return out
            if p.revision != s.update_revision and not p.terminating:
                out.delete.append(target)
                return out
            if not _healthy(p):
                return out
        return out
    # MaxUnavailableStatefulSet: up to maxUnavailable pods down at once, highest ordinals first.
    limit = statefulset_max_unavailable(s.max_unavailable, s.replicas)
    down = sum(1 for p in replicas if p is None or not _healthy(p))
    if down >= limit:
        return out
    for target in range(s.replicas - 1, s.partition - 1, -1):
        if len(out.delete) >= limit - down:
            break
        p = replicas[target]
        if p is not None and p.revision != s.update_revision and not p.terminating:
            out.delete.append(target)
    return out
