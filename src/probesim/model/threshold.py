"""The threshold language: one line, ``metric{tag:value}: condition``, in k6's spirit
(``errors: rate<0.01``, ``p95{route:/api}: <500ms``, ``restarts: ==0``, ``ready: min>=2``).

This module reads a line into a ``Threshold`` and says clearly what is wrong with one it
cannot read; the names a tag gives are checked against a scenario in probesim.model.judged.
What a threshold measures on a run is probesim.results.thresholds'.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from probesim.model.duration import parse_ms_float

Op = Literal["<", "<=", ">", ">=", "==", "!="]
Kind = Literal["rate", "count", "duration", "replicas"]  # how a value is written and shown


@dataclass(frozen=True)
class Metric:
    name: str
    what: str  # said in errors and docs
    aggregations: dict[str, Kind]  # the first is the default when there is only one
    tags: tuple[str, ...]
    example: str


_QUANTILES = ("p50", "p90", "p95", "p99")
_LATENCY_AGGS: dict[str, Kind] = {**dict.fromkeys(_QUANTILES, "duration"), "max": "duration"}
_ROUTE_TAGS = ("route", "service")
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric(
            "errors",
            "failed requests of a route: rate (their share of the requests answered or failed, "
            "0-1 or a percentage) or count",
            {"rate": "rate", "count": "count"},
            _ROUTE_TAGS,
            "errors: rate<0.01",
        ),
        Metric(
            "latency",
            "the time to an answer (a request given up on counts its timeout): p(50), p(90), "
            "p(95), p(99) or max",
            _LATENCY_AGGS,
            _ROUTE_TAGS,
            "latency: p(95)<500ms",
        ),
        *(
            Metric(q, f"the latency's {q}", {q: "duration"}, _ROUTE_TAGS, f"{q}: <500ms")
            for q in (*_QUANTILES, "max")
        ),
        Metric("restarts", "container restarts", {"count": "count"}, ("workload",), "restarts: ==0"),
        Metric(
            "ready",
            "the fewest Ready replicas after the start-up ramp (from the first time all were Ready), "
            "a number or a percentage of spec.replicas",
            {"min": "replicas"},
            ("workload",),
            "ready: min>=2",
        ),
        Metric(
            "available",
            "the fewest available replicas (Ready for minReadySeconds) after the start-up ramp, "
            "a number or a percentage of spec.replicas",
            {"min": "replicas"},
            ("workload",),
            "available: min>=50%",
        ),
        Metric(
            "no_endpoints",
            "the time a route's Service had no Ready endpoint while the route sent requests",
            {"time": "duration"},
            _ROUTE_TAGS,
            "no_endpoints: <5s",
        ),
    )
}
OPS: tuple[Op, ...] = ("<", "<=", ">", ">=", "==", "!=")  # k6's === reads as ==
ALLOWED = (
    "write 'metric: condition' as k6 does, e.g. 'errors: rate<0.01', 'p95{route:/api}: <500ms', "
    "'restarts: ==0', 'ready{workload:web}: min>=2', 'no_endpoints: <5s' (metrics: "
    + ", ".join(METRICS)
    + "; see docs/scenarios.md#thresholds)"
)

_HEAD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\{(.*?)\}\s*)?:(.*)\Z", re.DOTALL)
_AGG = re.compile(
    r"\s*(?:(p\(\s*([0-9]+)\s*\)|[a-z][a-z0-9]*)\s*)?(===|<=|>=|==|!=|<|>)\s*(.*?)\s*\Z", re.DOTALL
)
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?\Z")


@dataclass(frozen=True)
class Threshold:
    """One line, read: ``metric`` is one of METRICS' names with the latency shorthands folded
    into ``latency``; ``value`` is in the kind's unit (ms, a fraction, a count; with
    ``percent``, a fraction of spec.replicas)."""

    text: str
    metric: str
    aggregation: str
    kind: Kind
    op: Op
    value: float
    tag: tuple[str, str] | None = None
    percent: bool = False

    def holds(self, value: float) -> bool:
        v, x = value, self.value
        return {
            "<": v < x,
            "<=": v <= x,
            ">": v > x,
            ">=": v >= x,
            "==": v == x,
            "!=": v != x,
        }[self.op]


def parse(text: str) -> Threshold:
    """A threshold line; ValueError saying what is wrong and what is allowed."""
    if not isinstance(text, str):
        raise ValueError(f"a threshold is a line of text; {ALLOWED}")
    line = text.strip()
    head = _HEAD.match(line)
    if head is None:
        raise ValueError(f"{line!r}: no 'metric:' before the condition; {ALLOWED}")
    name, tag_text, condition = head.group(1), head.group(2), head.group(3)
    metric = METRICS.get(name)
    if metric is None:
        raise ValueError(f"{line!r}: unknown metric {name!r}; {ALLOWED}")
    tag = None if tag_text is None else _tag(metric, tag_text)
    m = _AGG.match(condition)
    if m is None:
        raise ValueError(
            f"{line!r}: no comparison in {condition.strip()!r}; the condition is an aggregation (if any), "
            f"one of < <= > >= == != and a value, e.g. '{metric.example}'"
        )
    agg_text, quantile, op_text, value_text = m.groups()
    op: Op = "==" if op_text == "===" else op_text  # type: ignore[assignment]
    aggregation = _aggregation(metric, agg_text, quantile, line)
    kind = metric.aggregations[aggregation]
    if not value_text:
        raise ValueError(f"{line!r}: no value after {op_text!r}; e.g. '{metric.example}'")
    value, percent = _value(kind, value_text, line)
    out = "latency" if metric.name in (*_QUANTILES, "max") else metric.name
    return Threshold(line, out, aggregation, kind, op, value, tag, percent)


def _tag(metric: Metric, text: str) -> tuple[str, str]:
    key, colon, value = text.partition(":")
    key, value = key.strip(), value.strip()
    allowed = " or ".join(metric.tags)
    example = f"{metric.name}{{{metric.tags[0]}:NAME}}: {metric.example.split(': ', 1)[1]}"
    if not colon or not value:
        raise ValueError(
            f"the tag {{{text}}} is not {{key:value}}; {metric.name} takes {allowed}, e.g. {example}"
        )
    if key not in metric.tags:
        raise ValueError(f"{metric.name} has no tag {key!r}; it takes {allowed}, e.g. {example}")
    return key, value


def _aggregation(metric: Metric, text: str | None, quantile: str | None, line: str) -> str:
    aggs = list(metric.aggregations)
    if quantile is not None:
        text = f"p{quantile}"
    if text is None or text == "med":
        if text == "med" and "p50" in aggs:
            return "p50"
        if len(aggs) == 1:
            return aggs[0]
        raise ValueError(
            f"{line!r}: {metric.name} needs an aggregation: {metric.what}; e.g. '{metric.example}'"
        )
    if text not in aggs:
        if metric.name in (*_QUANTILES, "max") and len(aggs) == 1:
            raise ValueError(
                f"{line!r}: {metric.name} is already the aggregation; write the comparison alone, "
                f"e.g. '{metric.example}'"
            )
        raise ValueError(
            f"{line!r}: {metric.name} has no aggregation {text!r}: {metric.what}; e.g. '{metric.example}'"
        )
    return text


def _value(kind: Kind, text: str, line: str) -> tuple[float, bool]:
    if _NUMBER.match(text) and not math.isfinite(float(text)):
        raise ValueError(f"{line!r}: {text[:20]}… is too large a number")
    if kind == "duration":
        if _NUMBER.match(text):  # a bare number is milliseconds, as k6's http_req_duration
            return float(text), False
        try:
            return parse_ms_float(text), False
        except ValueError:
            raise ValueError(
                f"{line!r}: {text!r} is not a duration; write e.g. 500ms, 1.5s or 2m (a bare number is "
                "milliseconds, as in k6)"
            ) from None
    if text.endswith("%") and kind in ("rate", "replicas"):
        number = text[:-1].strip()
        if not _NUMBER.match(number) or float(number) > 100:
            raise ValueError(f"{line!r}: {text!r} is not a percentage from 0% to 100%")
        return float(number) / 100, kind == "replicas"
    if not _NUMBER.match(text):
        what = {
            "rate": "a share from 0 to 1 or a percentage (0.01 or 1%)",
            "count": "a whole number",
            "replicas": "a whole number of replicas or a percentage of spec.replicas (2 or 50%)",
        }[kind]
        raise ValueError(f"{line!r}: {text!r} is not {what}")
    value = float(text)
    if kind == "rate" and value > 1:
        raise ValueError(f"{line!r}: a rate is a share from 0 to 1 (or write a percentage: {text}%)")
    if kind in ("count", "replicas") and value != int(value):
        raise ValueError(f"{line!r}: {text!r} is not a whole number")
    return value, False


def _line(value: Any) -> str:
    """A line, or the one-key mapping YAML makes of an unquoted ``- errors: rate<0.01``."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, condition),) = value.items()
        if (
            isinstance(key, str)
            and isinstance(condition, str | int | float)
            and not isinstance(condition, bool)
        ):
            return f"{key}: {condition}"
    if isinstance(value, dict) and len(value) > 1:
        raise ValueError("one threshold per item: give each 'metric: condition' a '- ' line of its own")
    if not isinstance(value, str):
        raise ValueError(f"a threshold is one line of text; {ALLOWED}")
    return value


def _checked(value: str) -> str:
    parse(value)
    return value.strip()


ThresholdLine = Annotated[
    str,
    BeforeValidator(_line, json_schema_input_type=str | dict[str, str]),
    AfterValidator(_checked),
    Field(
        description="'metric: condition' as in k6, e.g. 'errors: rate<0.01', 'p95{route:/api}: <500ms', "
        "'restarts: ==0', 'ready{workload:web}: min>=2', 'available: min>=50%', 'no_endpoints: <5s'. "
        "Metrics: " + ", ".join(METRICS) + ". Quote a condition that starts with > or !: YAML reads them "
        "as its own."
    ),
]
