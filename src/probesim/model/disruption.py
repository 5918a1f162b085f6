"""PodDisruptionBudgets (policy/v1) as probesim reads them: the selector, ``minAvailable`` or
``maxUnavailable`` (a count or a percent) and ``unhealthyPodEvictionPolicy``. The loader
(manifests/builtin_kinds.py) checks them as the API server does, and more: a budget with neither
field is refused (the API server takes it, and it then guards nothing)."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made.
from typing import Literal

from probesim.model.base import OpenModel, SInt
from probesim.model.kubernetes import Named, ObjectMeta
from probesim.model.selectors import LabelSelector


class PodDisruptionBudgetSpec(OpenModel):
    selector: LabelSelector | None = None
    min_available: SInt | str | None = None
    max_unavailable: SInt | str | None = None
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = None


class PodDisruptionBudget(OpenModel, Named):
    kind: Literal["PodDisruptionBudget"] = "PodDisruptionBudget"
    metadata: ObjectMeta
    spec: PodDisruptionBudgetSpec

    @property
    def always_allow(self) -> bool:
        """unhealthyPodEvictionPolicy AlwaysAllow (the default, IfHealthyBudget, when not set)."""
        return self.spec.unhealthy_pod_eviction_policy == "AlwaysAllow"
