"""What a run produced: per-tick series, events and a summary (``Result``)."""

from probesim.results.result import (
    CAUSES,
    Event,
    NodeSummary,
    Result,
    RolloutSummary,
    RouteSummary,
    Span,
    WorkloadSummary,
)

__all__ = [
    "CAUSES",
    "Event",
    "NodeSummary",
    "Result",
    "RolloutSummary",
    "RouteSummary",
    "Span",
    "WorkloadSummary",
]
