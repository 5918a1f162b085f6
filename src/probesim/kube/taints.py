"""Node taints and pod tolerations as the control plane matches them: the scheduler's
TaintToleration filter, the DefaultTolerationSeconds admission plugin and the taint eviction
controller's toleration time (staging/src/k8s.io/api/core/v1/toleration.go,
plugin/pkg/admission/defaulttolerationseconds/admission.go,
pkg/controller/tainteviction/taint_eviction.go)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from probesim.model.placement import Toleration

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


# The taint the node lifecycle controller puts on a cordoned node (TaintNodesByCondition), which
# the scheduler's NodeUnschedulable filter reads as the pod's leave to go there.
CORDONED = Taint(UNSCHEDULABLE, "", "NoSchedule")


def tolerates(t: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint`` (staging/src/k8s.io/api/core/v1/toleration.go): an empty
    effect matches every effect, an empty key (with Exists) every key; Equal compares values."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    return True if t.operator == "Exists" else t.value == taint.value


def untolerated(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: Sequence[str]
) -> Taint | None:
    """``FindMatchingUntoleratedTaint``: the first taint of ``effects`` no toleration matches."""
    for taint in taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def with_default_tolerations(
    tolerations: Sequence[Toleration], unreachable_s: int = 300, not_ready_s: int = 300
) -> tuple[Toleration, ...]:
    """The DefaultTolerationSeconds admission plugin
    (plugin/pkg/admission/defaulttolerationseconds/admission.go): a pod with no NoExecute
    toleration of node.kubernetes.io/not-ready or /unreachable (an empty key or effect counts)
    gets one (kube-apiserver --default-not-ready-toleration-seconds and
    --default-unreachable-toleration-seconds, 300 each by default)."""
    out = list(tolerations)
    for key, seconds in ((NOT_READY, not_ready_s), (UNREACHABLE, unreachable_s)):
        if not any(t.key in ("", key) and t.effect in ("", "NoExecute") for t in tolerations):
            out.append(Toleration(key=key, operator="Exists", effect="NoExecute", tolerationSeconds=seconds))
    return tuple(out)


def min_toleration_ms(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int | None:
    """How long a pod stays on a node with these NoExecute ``taints`` before the taint eviction
    controller deletes it (pkg/controller/tainteviction/taint_eviction.go processPodOnNode and
    getMinTolerationTime): 0 when a taint is not tolerated or a matching toleration's seconds are
    0 or less, the least tolerationSeconds of the matching tolerations, None (forever) when none of
    them sets any."""
    used: list[Toleration] = []
    for taint in taints:
        matching = [t for t in tolerations if tolerates(t, taint)]
        if not matching:
            return 0
        used += matching
    if not used:
        return 0
    secs = [t.toleration_seconds for t in used if t.toleration_seconds is not None]
    if not secs:
        return None
    return 0 if min(secs) <= 0 else min(secs) * 1000
