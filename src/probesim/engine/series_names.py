"""The run record's series names per workload and per route (engine/recording.py makes them),
and where each route series sits in a route's block of series (``route_block``: routes × series ×
steps), for the compiled kernels that write them (engine/kernels_capacity.py,
engine/kernels_states.py)."""

from __future__ import annotations

from probesim.results import CAUSES

WORKLOAD_SERIES = ("desired", "current", "ready", "available", "unavailable", "restarts")
CPU_SERIES = ("cpu_m", "cpu_max_m", "throttled")
QUANTILE_SERIES = ("p50_ms", "p95_ms", "p99_ms", "max_ms")
ROUTE_SERIES = (
    "offered",
    "ok",
    *CAUSES,
    "inflight",
    "dropped",
    "interrupted",
    *QUANTILE_SERIES,
    "fault_aborts",
    "ejections_active",
)
OK_AT = ROUTE_SERIES.index("ok")
RESTARTING_AT = ROUTE_SERIES.index("restarting")
NOT_ANSWERING_AT = ROUTE_SERIES.index("not_answering")
ERROR_STATUS_AT = ROUTE_SERIES.index("error_status")
REJECTED_AT = ROUTE_SERIES.index("rejected")
TIMEOUT_AT = ROUTE_SERIES.index("timeout")
P50_AT = ROUTE_SERIES.index("p50_ms")  # the quantiles follow it, in QUANTILE_SERIES order
assert ROUTE_SERIES[P50_AT : P50_AT + len(QUANTILE_SERIES)] == QUANTILE_SERIES
