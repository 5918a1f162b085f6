"""Thresholds judged on a run: each ``Threshold`` (probesim.model.threshold) against a Result,
a ``Verdict`` with the value measured and whether it holds.

A threshold without a tag holds for every route (errors, latency, time without endpoints) or
every workload (ready, available) and shows the worst one's value; restarts without a tag are
the run's total. A figure that cannot be measured (no request answered for a latency, a
workload that never had all its replicas Ready for the fewest ready after the ramp, no route
at all) crosses the threshold, saying why: a verdict that passes is one that was measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probesim.model.threshold import Threshold
from probesim.results.result import Result

EXIT_CROSSED = 99  # k6's exit code when a threshold is crossed


@dataclass(frozen=True)
class Verdict:
    threshold: Threshold
    value: float | None  # in the threshold's unit (ms, a fraction, a count); None: not measured
    of: str  # what the value is of: "route /api", "workload web", "all workloads"
    ok: bool
    note: str = ""  # why there is no value

    def to_json(self) -> dict[str, Any]:
        th = self.threshold
        return {
            "threshold": th.text,
            "metric": th.metric,
            "aggregation": th.aggregation,
            "tag": None if th.tag is None else {th.tag[0]: th.tag[1]},
            "op": th.op,
            "limit": th.value,
            "value": self.value,
            "unit": UNITS[th.kind] if not th.percent else "fraction of spec.replicas",
            "of": self.of,
            "ok": self.ok,
            **({"note": self.note} if self.note else {}),
        }


UNITS = {"rate": "fraction", "count": "count", "duration": "ms", "replicas": "replicas"}
Item = tuple[str, float | None, str]  # what, value, why there is none


def evaluate(thresholds: Sequence[Threshold], result: Result) -> list[Verdict]:
    return [judge(th, result) for th in thresholds]


def crossed(verdicts: Sequence[Verdict]) -> bool:
    return not all(v.ok for v in verdicts)


def judge(th: Threshold, result: Result) -> Verdict:
    items = _items(th, result)
    if not items:
        what = "route" if th.metric in ("errors", "latency", "no_endpoints") else "workload"
        named = f" {th.tag[0]} {th.tag[1]!r}" if th.tag else ""
        return Verdict(th, None, "", False, f"nothing to measure: no {what}{named} in this run")
    missing = next((i for i in items if i[1] is None), None)
    if missing is not None:
        return Verdict(th, None, missing[0], False, missing[2])
    measured = [(of, v) for of, v, _ in items if v is not None]
    if th.op in ("<", "<="):
        of, value = max(measured, key=lambda i: i[1])
    elif th.op in (">", ">="):
        of, value = min(measured, key=lambda i: i[1])
    else:  # == and !=: the first that does not hold, else the first
        of, value = next((i for i in measured if not th.holds(i[1])), measured[0])
    return Verdict(th, value, of, th.holds(value))


def _items(th: Threshold, result: Result) -> list[Item]:
    tag = th.tag
    if th.metric in ("errors", "latency", "no_endpoints"):
        routes = [
            r
            for r in result.routes
            if tag is None or (r.service if tag[0] == "service" else r.name) == tag[1]
        ]
        items: list[Item] = []
        for r in routes:
            of = f"route {r.name}"
            if th.metric == "errors":
                items.append((of, r.error_rate if th.aggregation == "rate" else r.failed_total, ""))
            elif th.metric == "latency":
                why = (
                    "no request answered"
                    if not r.ok
                    else "no latency: this scenario's requests cost no time (give the route a cost in "
                    "spec.behavior.<workload>.containers.<name>.routes)"
                )
                items.append((of, r.latency_ms.get(th.aggregation), why))
            else:
                items.append((of, r.no_endpoint_s * 1000, ""))
        return items
    workloads = [w for w in result.workloads if tag is None or w.name == tag[1]]
    if th.metric == "restarts":
        if not workloads:
            return []
        of = f"workload {tag[1]}" if tag else "all workloads"
        return [(of, sum(w.total_restarts for w in workloads), "")]
    out: list[Item] = []
    for w in workloads:
        of = f"workload {w.name}"
        after = result.after_ramp(w.name)
        if after is None:
            out.append((of, None, f"never had all {w.replicas} replicas Ready"))
            continue
        n = after[0] if th.metric == "ready" else after[1]
        out.append((of, n / w.replicas if th.percent else n, ""))
    return out
