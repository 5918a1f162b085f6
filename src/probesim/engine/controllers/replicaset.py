"""The ReplicaSet controller's rules: how many pods to create or delete (``manageReplicas``) and
which pods go first when it deletes (``getPodsToDelete``, ranked by
``controller.ActivePodsWithRanks``, pkg/controller/controller_utils.go).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cmp_to_key

PENDING, UNKNOWN, RUNNING = 0, 1, 2  # podPhaseToOrdinal


@dataclass(frozen=True)
class PodRank:
    """What the ranking reads of one active pod (not terminal, not being deleted)."""

    index: int  # the caller's pod id; also the tie-break probesim uses for the pod's random UID
    phase: int  # PENDING (a container not started yet), RUNNING
    ready: bool
    ready_since: int  # Ready condition's lastTransitionTime, ms (when ready)
    restarts: int  # the most restarts of any of its containers
    created: int  # creationTimestamp, ms
    assigned: bool = True  # has a node (probesim schedules at creation)


def _log_rank(t: int, now: int) -> int:
    """``logarithmicRankDiff``'s rank: floor(log2(age in ns)), -1 for no age."""
    d = (now - t) * 1_000_000
    return int(math.log2(d)) if d > 0 else -1


def _less(a: PodRank, b: PodRank, now: int) -> bool:
    """``ActivePodsWithRanks.Less`` with LogarithmicScaleDown (on by default since v1.22, GA):
    1 unassigned first; 2 Pending before Running; 3 not Ready before Ready; (4 deletion cost
    and 5 pods doubled up on a node: probesim has one node and no cost annotations); 6 of two
    Ready pods the one Ready for less time, compared in powers of two of the time since; 7 more
    restarts first; 8 the newer first, again in powers of two of the age; then the UID, which
    is random in a cluster (probesim: the pod id, so runs repeat)."""
    if a.assigned != b.assigned:
        return not a.assigned
    if a.phase != b.phase:
        return a.phase < b.phase
    if a.ready != b.ready:
        return not a.ready
    if a.ready and b.ready and a.ready_since != b.ready_since:
        diff = _log_rank(a.ready_since, now) - _log_rank(b.ready_since, now)
        if diff:
            return diff < 0
        return a.index < b.index
    if a.restarts != b.restarts:
        return a.restarts > b.restarts
    if a.created != b.created:
        diff = _log_rank(a.created, now) - _log_rank(b.created, now)
        if diff:
            return diff < 0
        return a.index < b.index
    return False


def pods_to_delete(pods: list[PodRank], diff: int, now: int) -> list[int]:
    """``getPodsToDelete``: the ``diff`` pods to delete first (their ``index``); all of them,
    unsorted, when ``diff`` covers every pod."""
    if diff >= len(pods):
        return [p.index for p in pods]

    def cmp(a: PodRank, b: PodRank) -> int:
        return -1 if _less(a, b, now) else (1 if _less(b, a, now) else 0)

    return [p.index for p in sorted(pods, key=cmp_to_key(cmp))[:diff]]


def replicas_diff(active: int, desired: int) -> int:
    """``manageReplicas``: pods to create (> 0) or delete (< 0); pods being deleted do not
    count as active, so a deleted pod is replaced at once."""
    return desired - active
