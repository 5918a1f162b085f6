"""The result document's schema: what ``probesim run --json`` (and ``lab --json``) write, field
by field, in one place. ``Result.to_json`` writes it, the HTML report reads it through
``parse_result``, and ``probesim schema --result`` prints it as JSON Schema for whoever
consumes results (a dashboard, a CI step). tests/results/test_document.py holds them together:
every built-in's result parses with no field left unknown and dumps back to the same JSON."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from probesim.errors import InputError
from probesim.results.result import RESULT_VERSION
from probesim.safe import NAME_LIMIT


class _Doc(BaseModel):
    # Strict types. A field this version does not know is kept (a newer probesim's result can
    # still be shown); the round-trip test sees that this version writes none.
    model_config = ConfigDict(extra="allow", strict=True)

    @property
    def extra(self) -> dict[str, Any]:
        return self.model_extra or {}


class SpanDoc(_Doc):
    """A route's requests over the start-up ramp or the steady state after it."""

    start: float
    end: float
    offered: int
    ok: int
    failed: int
    failedByCause: dict[str, int]
    dropped: int
    interrupted: int
    inFlight: int
    errorRate: float
    latencyMs: dict[str, float]


class RouteDoc(_Doc):
    """One route's requests over the whole run; ``ramp``/``steady`` when the run has a ramp."""

    name: str
    service: str
    offered: int
    ok: int
    failed: int
    failedByCause: dict[str, int]
    dropped: int = 0
    interrupted: int = 0
    inFlight: int = 0
    latencyMs: dict[str, float] = {}
    noEndpointSeconds: float = 0.0
    envoy: dict[str, int] = {}
    errorRate: float
    ramp: SpanDoc | None = None
    steady: SpanDoc | None = None
    statusCodes: dict[str, int] = {}


class WorkloadDoc(_Doc):
    """One workload's replicas, readiness and restarts."""

    name: str
    kind: str
    replicas: int
    restarts: int
    restartsByPod: dict[str, int]
    firstReady: float | None
    allReady: float | None
    minReady: int
    avgReady: float
    minAvailable: int
    minReadyAfterRamp: int | None = None
    minAvailableAfterRamp: int | None = None


class RolloutDoc(_Doc):
    """One rollout of a workload: what started it, how it ended, what it cost."""

    workload: str
    action: str
    replicaSet: str
    template: str
    outcome: str
    start: float
    end: float | None
    seconds: float | None
    stalled: float | None
    superseded: float | None
    minReady: int
    minAvailable: int
    failedByCause: dict[str, int]
    failed: int


class NodeDoc(_Doc):
    """One node (a run with spec.cluster.nodes): the pods bound to it, its time not Ready."""

    name: str
    zone: str | None
    pods: list[str]
    podsAtEnd: list[str]
    terminating: list[str] = []
    notReadySeconds: float


class SummaryDoc(_Doc):
    routes: list[RouteDoc]
    workloads: list[WorkloadDoc]
    rollouts: list[RolloutDoc] = []
    nodes: list[NodeDoc] = []
    pendingPods: list[str] = []


class EventDoc(_Doc):
    """One event, in ``kubectl get events`` vocabulary; ``time`` in seconds from the start."""

    time: float
    type: str
    reason: str
    object: str
    message: str
    source: str = ""


class VerdictDoc(_Doc):
    """One threshold and its verdict (``run --threshold`` and the scenario's spec.thresholds)."""

    threshold: str
    metric: str
    aggregation: str | None
    tag: dict[str, str] | None
    op: str
    limit: float
    value: float | None
    unit: str
    of: str
    ok: bool
    note: str = ""


class ResultDoc(_Doc):
    """A run's result, simulated or measured by the lab (``source``)."""

    apiVersion: str
    kind: str
    scenario: str
    source: str = "simulation"
    seed: int
    step: float
    duration: float
    summary: SummaryDoc
    events: list[EventDoc]
    series: dict[str, list[float | None]] | None = None
    thresholds: list[VerdictDoc] = []
    # lab --compare: each figure of the lab beside the simulation's (lab/compare.py's rows).
    comparison: dict[str, Any] | None = None
    # lab: the lab's own headroom as it measured it (lab/headroom.py: descriptors and CPU per
    # process, its loop's lag, accept-queue overflows, refusals that were the lab's, the scale,
    # and whether it held the run faithfully).
    headroom: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _series_line_up(self) -> ResultDoc:
        if self.series is None:
            return self
        if "time" not in self.series:
            raise ValueError("series has no 'time'")
        n = len(self.series["time"])
        for k, v in self.series.items():
            if len(v) != n:
                raise ValueError(f"series {k!r} has {len(v)} values, series 'time' {n}: they must line up")
        return self


def parse_result(doc: Any, file: str | None = None) -> ResultDoc:
    """A result document checked: the kind and version first, then each field (the error names
    the first wrong one, as ``summary.routes[0].name``)."""
    where = "the result"
    if not isinstance(doc, dict):
        raise InputError(
            f"not a probesim result: {where} is a JSON {type(doc).__name__}, not an object "
            "(write one with probesim run --json)",
            file=file,
        )
    if doc.get("kind") != "Result":
        raise InputError(
            f'not a probesim result: kind is {json.dumps(doc.get("kind"))[:NAME_LIMIT]}, not "Result" '
            "(write one with probesim run --json)",
            file=file,
            field="kind",
        )
    if doc.get("apiVersion") != RESULT_VERSION:
        raise InputError(
            f"written by another version of probesim: apiVersion "
            f"{json.dumps(doc.get('apiVersion'))[:NAME_LIMIT]}; this probesim reads {RESULT_VERSION} "
            "(run the scenario again with this version's probesim run --json)",
            file=file,
            field="apiVersion",
        )
    try:
        return ResultDoc.model_validate(doc)
    except ValidationError as e:
        first = e.errors()[0]
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"]).lstrip(".")
        msg = "missing" if first["type"] == "missing" else first["msg"]
        raise InputError(
            f"{msg} (is this a probesim run --json result?)", file=file, field=path or None
        ) from None


def json_schema() -> dict[str, Any]:
    """The result document's JSON Schema (draft 2020-12), as ``probesim schema --result`` prints it."""
    doc = ResultDoc.model_json_schema()
    draft = "https://json-schema.org/draft/2020-12/schema"
    return {"$schema": draft, "$id": f"{RESULT_VERSION}/Result", **doc}
