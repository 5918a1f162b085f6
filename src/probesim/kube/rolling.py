"""A workload's rolling update as its controller bounds it: the pods it may take down at once
and add above the replicas (a Deployment's maxUnavailable and maxSurge, a StatefulSet's
maxUnavailable), rounded as the controllers round them (kube/arithmetic.py). The check rules
and the stress suite reason with it; the engine's controllers use the same arithmetic."""

from __future__ import annotations

from dataclasses import dataclass

from probesim.kube.arithmetic import deployment_limits, statefulset_max_unavailable
from probesim.model.kubernetes import Workload


@dataclass(frozen=True)
class Rolling:
    """What a rolling update takes away, as the controllers round it."""

    replicas: int
    unavailable: int  # pods the controller may take down at once
    surge: int  # pods it may add above replicas (0 for a StatefulSet)
    knob: str  # the field, for messages

    @property
    def wave(self) -> int:
        """The first new pods counted Ready together, each of which lets an old pod go: maxSurge
        of them, or the pods taken down when there is no surge."""
        return self.surge or self.unavailable


def rolling_update(w: Workload, replicas: int | None = None) -> Rolling | None:
    """The workload's rolling update (with ``replicas`` instead of its own, if given), or None
    when it has none (Recreate, OnDelete, a partition above every ordinal, other kinds)."""
    n = w.spec.replicas if replicas is None else replicas
    if w.kind == "Deployment":
        strategy = w.spec.strategy
        ru = strategy.rolling_update if strategy is not None else None
        if strategy is None or strategy.type != "RollingUpdate" or ru is None or n == 0:
            return None
        surge, unavailable = deployment_limits(ru.max_surge, ru.max_unavailable, n)
        knob = f"maxSurge {ru.max_surge}, maxUnavailable {ru.max_unavailable}"
        return Rolling(n, unavailable, surge, knob)
    if w.kind == "StatefulSet":
        us = w.spec.update_strategy
        sru = us.rolling_update if us is not None else None
        if us is None or us.type != "RollingUpdate" or n == 0 or (sru is not None and sru.partition >= n):
            return None
        v = sru.max_unavailable if sru is not None else None
        knob = "one pod at a time" if v is None else f"maxUnavailable {v}"
        return Rolling(n, min(statefulset_max_unavailable(v, n), n), 0, knob)
    return None
