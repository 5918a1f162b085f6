"""The controllers' arithmetic, as the Kubernetes code computes it: a percentage of replicas
rounded as ``intstr`` rounds it, the rolling update's fenceposts, Go's rounding, and the names of
ReplicaSets (pod-template-hash). Pure functions: the Deployment, ReplicaSet and StatefulSet
controllers, the fleet, the lab and the check rules share them."""

from __future__ import annotations

import math

IntOrPercent = int | str


def scaled_value(v: IntOrPercent, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an integer as is, a percentage of ``total``
    rounded up or down (exactly, in integers: Go's float product never misrounds at these
    sizes)."""
    if isinstance(v, int):
        return v
    pct = int(v.rstrip("%"))
    return -(-pct * total // 100) if round_up else pct * total // 100


def resolve_fenceposts(
    max_surge: IntOrPercent, max_unavailable: IntOrPercent, desired: int
) -> tuple[int, int]:
    """``ResolveFenceposts``: maxSurge rounds **up**, maxUnavailable rounds **down**, and when
    both come to 0 (e.g. 10 % of 5 each: 1 and 0 — no; 0 % and 1 % of 50: 0 and 0) maxUnavailable
    becomes 1, "on the theory that surge might not work due to quota"."""
    surge = scaled_value(max_surge, desired, True)
    unavailable = scaled_value(max_unavailable, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def deployment_limits(
    max_surge: IntOrPercent, max_unavailable: IntOrPercent, replicas: int
) -> tuple[int, int]:
    """A RollingUpdate Deployment's ``MaxSurge`` and ``MaxUnavailable``: the fenceposts, the
    latter at most ``replicas`` (0 with none)."""
    surge, unavailable = resolve_fenceposts(max_surge, max_unavailable, replicas)
    return surge, 0 if replicas == 0 else min(unavailable, replicas)


def statefulset_max_unavailable(v: IntOrPercent | None, replicas: int) -> int:
    """``getStatefulSetMaxUnavailable``: default 1; a percentage rounds **down** (unlike a
    Deployment's surge) and the result is at least 1."""
    n = scaled_value(1 if v is None else v, replicas, False)
    return max(n, 1)


_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand alphanums


def template_hash(text: str) -> str:
    """A pod-template-hash as the controller renders one (``rand.SafeEncodeString`` of the
    decimal FNV-32a sum), here of probesim's own serialisation of the template: it looks like
    the real one and is stable across runs, but is not the value a cluster would compute."""
    h = 0x811C9DC5
    for b in text.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(h))


def replica_set_name(deployment: str, template_key: str) -> str:
    """``<deployment>-<pod-template-hash>``."""
    return f"{deployment}-{template_hash(template_key)}"


def round_to_int(x: float) -> int:
    """``integer.RoundToInt32``: Go's ``math.Round``, halves away from zero."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)
