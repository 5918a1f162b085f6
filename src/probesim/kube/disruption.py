"""The disruption controller's arithmetic and the Eviction API's decision, pure.

pkg/controller/disruption/disruption.go ``getExpectedPodCount``: with ``maxUnavailable`` the
expected count is the controllers' scale and desiredHealthy = expected − maxUnavailable (a
percent of the scale, rounded up) and at least 0; with an integer ``minAvailable`` desiredHealthy
is that number; with a percent one it is that share of the scale, rounded up
(``intstr.GetScaledValueFromIntOrPercent(…, true)``). ``countHealthyPods``: Ready pods not being
deleted. ``updatePdbStatus``: disruptionsAllowed = currentHealthy − desiredHealthy, at least 0.

pkg/registry/core/pod/storage/eviction.go ``Create``: a pod not yet running or already being
deleted is deleted without a look at the budgets (``canIgnorePDB``); a pod two budgets select is
refused (500); a not-Ready pod is evicted when the policy is AlwaysAllow, or (IfHealthyBudget)
when currentHealthy ≥ desiredHealthy > 0; otherwise ``checkAndDecrement``: 429 while
disruptionsAllowed is 0, else one less allowed and the pod deleted.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

PERCENT = re.compile(r"[0-9]+%")
TOO_MANY_REQUESTS = "Cannot evict pod as it would violate the pod's disruption budget."
MORE_THAN_ONE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)


def scaled(value: int | str, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as it is, a percent of ``total``
    (rounded up or down)."""
    if isinstance(value, int):
        return value
    share = int(value.removesuffix("%")) * total / 100
    return math.ceil(share) if round_up else math.floor(share)


def percent_error(value: int | str) -> str | None:
    """The API server's word on a field that takes a count or a percent
    (``ValidatePositiveIntOrPercent`` and the 100% bound); None when it is valid."""
    if isinstance(value, int):
        if value > 2**31 - 1:
            return "must be at most 2147483647 (an int32)"
        return "must be greater than or equal to 0" if value < 0 else None
    if not PERCENT.fullmatch(value):
        return (
            f"{value!r}: a valid percent string must be a numeric string followed by an ending '%' "
            "(e.g. '1%', or '93%'), or an integer"
        )
    if int(value[:-1]) > 100:
        return "must not be greater than 100%"
    return None


def desired_healthy(min_available: int | str | None, max_unavailable: int | str | None, scale: int) -> int:
    """``getExpectedPodCount``'s desiredHealthy, given the controllers' scale."""
    if max_unavailable is not None:
        return max(0, scale - scaled(max_unavailable, scale, True))
    if min_available is not None:
        return scaled(min_available, scale, True)
    return 0


@dataclass(frozen=True)
class Status:
    """A budget's status as the disruption controller writes it."""

    current_healthy: int
    desired_healthy: int

    @property
    def allowed(self) -> int:
        """disruptionsAllowed."""
        return max(0, self.current_healthy - self.desired_healthy)


@dataclass(frozen=True)
class Verdict:
    """The Eviction API's answer: 201 (evicted: the pod is deleted), 429 or 500, with its message."""

    code: int
    message: str = ""

    @property
    def evicted(self) -> bool:
        return self.code == 201


def evict(running: bool, deleting: bool, ready: bool, budgets: list[tuple[Status, bool]]) -> Verdict:
    """The Eviction API on one pod: ``budgets`` are the (status, AlwaysAllow) of the budgets
    that select it."""
    if not running or deleting:
        return Verdict(201)  # canIgnorePDB: Pending, or already being deleted
    if len(budgets) > 1:
        return Verdict(500, MORE_THAN_ONE)
    if not budgets:
        return Verdict(201)
    status, always = budgets[0]
    if not ready and (always or status.current_healthy >= status.desired_healthy > 0):
        return Verdict(201)  # an unhealthy pod: not counted as healthy, nothing to decrement
    if status.allowed == 0:
        return Verdict(429, TOO_MANY_REQUESTS)
    return Verdict(201)
