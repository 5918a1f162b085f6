"""The probe-timing model: what a probe's fields mean in time (how long failures are tolerated, the
worst case before the kubelet acts, the start-up budget), shared by every rule that reads or fixes
a probe."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Target
from probesim.model.kubernetes import Probe, ProbeType


def _probes(t: Target) -> Iterator[tuple[ProbeType, Probe]]:
    kinds: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")
    for kind in kinds:
        p = t.container.probe(kind)
        if p is not None:
            yield kind, p


def _threshold_for(start_ms: int, p: Probe) -> int:
    """The failureThreshold whose budget (initialDelay + threshold × period) is 1.5 × ``start_ms``."""
    need_ms = 1.5 * start_ms - p.initial_delay_seconds * 1000
    return max(3, -int(-need_ms // (p.period_seconds * 1000)))


def _path(p: Probe) -> str | None:
    return p.http_get.path if p.http_get is not None else None
