"""The HorizontalPodAutoscaler controller (autoscaling/v2, CPU utilization), as
reference/kubelet.md §6 describes it: a sync every 15 s; pods grouped into ready, unready,
missing and ignored; utilization truncated to an integer percent before the ratio; a 10 %
tolerance; missing and unready pods filled in and the ratio recomputed; then the legacy
normalization (5 min downscale stabilization, scale-up limit max(2 × current, 4)) or the
``behavior`` path (stabilization windows, Pods/Percent policies over their periods).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.model.kubernetes import HorizontalPodAutoscaler, HPAScalingRules

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

SYNC_PERIOD_MS = 15_000
TOLERANCE = 0.1
CPU_INITIALIZATION_PERIOD_MS = 300_000
INITIAL_READINESS_DELAY_MS = 30_000
DOWNSCALE_STABILIZATION_MS = 300_000
METRIC_WINDOW_MS = 15_000


@dataclass
class PodView:
    """What the HPA sees of one pod of its target."""

    request_m: float  # summed CPU requests of its containers (0: some container has none)
    usage_m: float | None  # CPU usage over the metric window; None: no sample yet
    pending: bool  # not all containers started (phase Pending)
    deleting: bool
    ready: bool
    transition: int  # the Ready condition's lastTransitionTime (ms; the pod's start if it never flipped)
    start: int  # status.startTime (ms)


@dataclass
class PodViews:
    """The HPA's view of its target's pods, as arrays (one entry per pod, a ``PodView`` field
    each; ``usage_m`` NaN where there is no sample yet)."""

    request_m: F64
    usage_m: F64
    pending: B
    deleting: B
    ready: B
    transition: I64
    start: I64

    @classmethod
    def of(cls, pods: list[PodView]) -> PodViews:
        return cls(
            np.array([p.request_m for p in pods], np.float64),
            np.array([np.nan if p.usage_m is None else p.usage_m for p in pods], np.float64),
            np.array([p.pending for p in pods], bool),
            np.array([p.deleting for p in pods], bool),
            np.array([p.ready for p in pods], bool),
            np.array([p.transition for p in pods], np.int64),
            np.array([p.start for p in pods], np.int64),
        )


def group_masks(v: PodViews, t: int) -> tuple[B, B, B]:
    """(ready, unready, missing) per ``groupPods`` for CPU (§6.5), as masks over ``v``'s pods;
    deleting pods are in none."""
    live = ~v.deleting
    pending = live & v.pending
    sampled = live & ~v.pending & ~np.isnan(v.usage_m)
    missing = live & ~v.pending & np.isnan(v.usage_m)
    # Still initializing: count it only once a full metric window follows its Ready.
    init = sampled & (t < v.start + CPU_INITIALIZATION_PERIOD_MS)
    fresh = t < v.transition + METRIC_WINDOW_MS
    init_unready = init & (~v.ready | fresh)
    later = sampled & ~init
    never = later & ~v.ready & (v.transition < v.start + INITIAL_READINESS_DELAY_MS)  # never became ready
    ready = (init & ~init_unready) | (later & ~never)
    return ready, pending | init_unready | never, missing


def group(pods: list[PodView], t: int) -> tuple[list[PodView], list[PodView], list[PodView]]:
    """(ready, unready, missing) per ``groupPods`` for CPU (§6.5); deleting pods are ignored."""
    masks = group_masks(PodViews.of(pods), t)
    return tuple([p for p, m in zip(pods, mask.tolist(), strict=True) if m] for mask in masks)  # type: ignore[return-value]


def _sum(x: F64) -> float:
    """``sum(x)`` as Python adds a list of floats: left to right (numpy's sum adds pairwise,
    which can differ in the last bit)."""
    return float(np.cumsum(x)[-1]) if x.size else 0.0


def utilization_ratio(usage: F64, requests: F64, target: int) -> tuple[float, int]:
    """(ratio, utilization %) with the integer truncation of GetResourceUtilizationRatio (§6.4)."""
    total_request = _sum(requests)
    utilization = int(_sum(usage) * 100 // total_request) if total_request > 0 else 0
    return utilization / target, utilization


def desired_from_metrics(
    pods: list[PodView] | PodViews,
    current: int,
    target: int,
    t: int,
    tolerance: tuple[float, float] = (TOLERANCE, TOLERANCE),
) -> tuple[int, int] | None:
    """GetResourceReplicas (§6.6): the replica count the CPU metric asks for, and the current
    utilization; None when it cannot be computed (no metrics, a pod without request).
    ``tolerance``: (down, up); a ratio r is within it when 1 - down ≤ r ≤ 1 + up (§6.2)."""

    def within(r: float) -> bool:
        return 1 - tolerance[0] <= r <= 1 + tolerance[1]

    v = PodViews.of(pods) if isinstance(pods, list) else pods
    if (v.request_m[~v.deleting] <= 0).any():
        return None
    ready, unready, missing = group_masks(v, t)
    n_ready = int(ready.sum())
    if not n_ready:
        return None
    usage, requests = v.usage_m[ready], v.request_m[ready]
    ratio, utilization = utilization_ratio(usage, requests, target)
    scale_up_with_unready = bool(unready.any()) and ratio > 1.0
    if not scale_up_with_unready and not missing.any():
        if within(ratio):
            return current, utilization
        return math.ceil(ratio * n_ready), utilization
    if missing.any():
        if ratio < 1.0:
            fallback = max(100, target)
            usage = np.concatenate([usage, v.request_m[missing] * fallback / 100])
        else:
            usage = np.concatenate([usage, np.zeros(int(missing.sum()))])
        requests = np.concatenate([requests, v.request_m[missing]])
    if scale_up_with_unready:
        usage = np.concatenate([usage, np.zeros(int(unready.sum()))])
        requests = np.concatenate([requests, v.request_m[unready]])
    new_ratio, _ = utilization_ratio(usage, requests, target)
    if within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current, utilization
    new = math.ceil(new_ratio * usage.size)
    if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
        return current, utilization
    return new, utilization


@dataclass
class Autoscaler:
    hpa: HorizontalPodAutoscaler
    recommendations: list[tuple[int, int]] = field(default_factory=list)  # (time, replicas)
    up_events: list[tuple[int, int]] = field(default_factory=list)  # (time, replicas added)
    down_events: list[tuple[int, int]] = field(default_factory=list)
    last_utilization: int = 0

    def sync(self, pods: list[PodView] | PodViews, current: int, t: int) -> tuple[int, str]:
        """The new scale for the target and why (an empty reason: unchanged or not computable)."""
        spec = self.hpa.spec
        if not self.recommendations:
            # recordInitialRecommendation (horizontal.go, reconcileAutoscaler): the first sync
            # records the current size, so no scale-down in the first stabilization window.
            self.recommendations.append((t, current))
        if current == 0 and spec.min_replicas != 0:
            return current, ""
        if current > spec.max_replicas:
            return spec.max_replicas, "Current number of replicas above Spec.MaxReplicas"
        if current < spec.min_replicas:
            return spec.min_replicas, "Current number of replicas below Spec.MinReplicas"
        got = desired_from_metrics(pods, current, self.hpa.target_utilization, t, self._tolerance())
        if got is None:
            return current, ""
        proposal, self.last_utilization = got
        up, down = self.hpa.scale_up, self.hpa.scale_down
        if up is None or down is None:
            desired = self._legacy(proposal, current, t)
        else:
            desired = self._with_behavior(proposal, current, t, up, down)
        if desired != current:
            self._record_event(current, desired, t)
            direction = "above" if desired > current else "below"
            return desired, f"cpu resource utilization (percentage of request) {direction} target"
        return current, ""

    def _tolerance(self) -> tuple[float, float]:
        """Per-HPA tolerances (behavior.scaleDown/scaleUp.tolerance), else the controller's 0.1."""
        b = self.hpa.spec.behavior
        down = b.scale_down.tolerance if b and b.scale_down and b.scale_down.tolerance is not None else None
        up = b.scale_up.tolerance if b and b.scale_up and b.scale_up.tolerance is not None else None
        return (TOLERANCE if down is None else down / 1000, TOLERANCE if up is None else up / 1000)

    def _legacy(self, proposal: int, current: int, t: int) -> int:
        """§6.8: the max recommendation of the last 5 minutes, then the rate limit."""
        self.recommendations = [
            (ts, r) for ts, r in self.recommendations if ts > t - DOWNSCALE_STABILIZATION_MS
        ]
        self.recommendations.append((t, proposal))
        stabilized = max(r for _, r in self.recommendations)
        spec = self.hpa.spec
        up_limit = max(2 * current, 4)
        return max(spec.min_replicas, min(stabilized, spec.max_replicas, up_limit))

    def _with_behavior(
        self, proposal: int, current: int, t: int, up: HPAScalingRules, down: HPAScalingRules
    ) -> int:
        """§6.10-6.11: clamp into [min of the scale-up window, max of the scale-down window],
        then the policies' limits."""
        up_w = (up.stabilization_window_seconds or 0) * 1000
        down_w = (down.stabilization_window_seconds or 0) * 1000
        up_rec = down_rec = proposal
        for ts, r in self.recommendations:
            if ts > t - up_w:
                up_rec = min(up_rec, r)
            if ts > t - down_w:
                down_rec = max(down_rec, r)
        keep = max(up_w, down_w)
        self.recommendations = [(ts, r) for ts, r in self.recommendations if ts > t - keep]
        self.recommendations.append((t, proposal))
        desired = min(max(current, up_rec), down_rec)
        spec = self.hpa.spec
        if desired > current:
            limit = self._up_limit(current, t, up)
            return max(spec.min_replicas, min(desired, spec.max_replicas, limit))
        if desired < current:
            limit = self._down_limit(current, t, down)
            return min(spec.max_replicas, max(desired, spec.min_replicas, limit))
        return desired

    def _changes(self, events: list[tuple[int, int]], period_s: int, t: int) -> int:
        return sum(n for ts, n in events if ts > t - period_s * 1000)

    def _up_limit(self, current: int, t: int, rules: HPAScalingRules) -> int:
        if rules.select_policy == "Disabled":
            return current
        limits = []
        for p in rules.policies:
            start = (
                current
                - self._changes(self.up_events, p.period_seconds, t)
                + self._changes(self.down_events, p.period_seconds, t)
            )
            limits.append(start + p.value if p.type == "Pods" else math.ceil(start * (1 + p.value / 100)))
        return min(limits) if rules.select_policy == "Min" else max(limits)

    def _down_limit(self, current: int, t: int, rules: HPAScalingRules) -> int:
        if rules.select_policy == "Disabled":
            return current
        limits = []
        for p in rules.policies:
            start = (
                current
                + self._changes(self.down_events, p.period_seconds, t)
                - self._changes(self.up_events, p.period_seconds, t)
            )
            limits.append(start - p.value if p.type == "Pods" else int(start * (1 - p.value / 100)))
        return max(limits) if rules.select_policy == "Min" else min(limits)

    def _record_event(self, current: int, desired: int, t: int) -> None:
        longest = 1800_000
        self.up_events = [(ts, n) for ts, n in self.up_events if ts > t - longest]
        self.down_events = [(ts, n) for ts, n in self.down_events if ts > t - longest]
        if desired > current:
            self.up_events.append((t, desired - current))
        else:
            self.down_events.append((t, current - desired))
