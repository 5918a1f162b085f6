"""A run's summary as flat, named figures (one number each), and their statistics over runs.

The names are the columns of ``probesim sweep``'s rows and the lines of ``probesim run
--runs``: ``route[NAME].ok``, ``route[NAME].failed.timeout``, ``route[NAME].latency.p95_ms``,
``workload[NAME].restarts``, ``workload[NAME].min_ready``… (docs/sweeps.md lists them). Counts
are integers; a figure that was not measured (no request answered: no latency) is None.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probesim.results.result import CAUSES, Result

Figure = int | float | None
LATENCIES = ("p50", "p95", "p99", "max")


def figures(result: Result) -> dict[str, Figure]:
    """The summary figures of one run, in a fixed order (routes, then workloads, as the run
    lists them)."""
    out: dict[str, Figure] = {}
    for r in result.routes:
        p = f"route[{r.name}]"
        out[f"{p}.offered"] = r.offered
        out[f"{p}.ok"] = r.ok
        out[f"{p}.failed"] = r.failed_total
        for cause in CAUSES:
            out[f"{p}.failed.{cause}"] = r.failed.get(cause, 0)
        out[f"{p}.dropped"] = r.dropped
        out[f"{p}.interrupted"] = r.interrupted
        out[f"{p}.in_flight"] = r.in_flight
        out[f"{p}.error_rate"] = r.error_rate
        for q in LATENCIES:
            v = r.latency_ms.get(q)
            out[f"{p}.latency.{q}_ms"] = None if v is None else float(v)
        out[f"{p}.no_endpoint_s"] = float(r.no_endpoint_s)
    for w in result.workloads:
        p = f"workload[{w.name}]"
        out[f"{p}.restarts"] = w.total_restarts
        out[f"{p}.min_ready"] = w.min_ready
        out[f"{p}.min_available"] = w.min_available
        out[f"{p}.avg_ready"] = float(w.avg_ready)
        out[f"{p}.first_ready_s"] = None if w.first_ready_ms is None else w.first_ready_ms / 1000
        out[f"{p}.all_ready_s"] = None if w.all_ready_ms is None else w.all_ready_ms / 1000
        after_ramp = getattr(result, "after_ramp", None)  # the fewest Ready after the start-up ramp
        if callable(after_ramp):
            ramp = after_ramp(w.name)
            out[f"{p}.min_ready_after_ramp"] = None if ramp is None else int(ramp[0])
            out[f"{p}.min_available_after_ramp"] = None if ramp is None else int(ramp[1])
    return out


@dataclass(frozen=True)
class Stats:
    """One figure over runs: over the runs that measured it (``n`` of them)."""

    n: int
    mean: float | None
    std: float | None  # the sample standard deviation (n - 1); None below two values
    min: Figure
    max: Figure

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "std": self.std, "min": self.min, "max": self.max}


def stats(values: Sequence[Figure]) -> Stats:
    """Mean, standard deviation and range of ``values`` in the order given (None: not measured).

    ``statistics`` computes exactly (fractions) before rounding once, so the figures do not
    depend on the order or grouping the runs finished in."""
    xs = [v for v in values if v is not None]
    if not xs:
        return Stats(0, None, None, None, None)
    mean = float(statistics.mean(xs))
    std = float(statistics.stdev(xs)) if len(xs) > 1 else None
    return Stats(len(xs), mean, std, min(xs), max(xs))


def aggregate(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Stats]:
    """``stats`` of each named figure over ``rows`` (a row without the figure: not measured)."""
    return {n: stats([row.get(n) for row in rows]) for n in names}
