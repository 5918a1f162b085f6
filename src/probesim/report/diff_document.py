"""The diff document's schema: what ``probesim diff --format json`` writes, field by field, in
one place, and ``probesim schema --diff`` prints as JSON Schema for whoever reads it (a CI step,
a bot). report/diff_outputs.py's ``to_json`` writes it; tests/report/test_diff_outputs.py holds
them together (the document validates against the schema, and a field the schema does not name
is refused: ``additionalProperties: false``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from probesim.report.diff_outputs import DIFF_VERSION


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ObjectDoc(_Doc):
    """An object of one side: its key (Kind/namespace/name) and where it is written."""

    key: str
    kind: str
    namespace: str
    name: str
    file: str
    line: int


class FieldDoc(_Doc):
    """One field that changed: its path, and its value on each side (null: not set)."""

    path: str
    before: str | None
    after: str | None


class ChangeDoc(_Doc):
    """An object changed field by field, or on one side only."""

    key: str
    status: Literal["changed", "added", "removed"]
    before: ObjectDoc | None
    after: ObjectDoc | None
    fields: list[FieldDoc]
    note: str | None


class BandDoc(_Doc):
    """How far apart two values must be to differ beyond the noise: more than ``absolute`` and
    more than ``relative`` (a fraction) of the better one."""

    absolute: float
    relative: float


class FigureDoc(_Doc):
    """One figure on both sides, a value per seed (null: never, for a time); the verdict by the
    noise band."""

    figure: str
    run: str | None  # null: over all the runs
    unit: str | None
    before: list[float | None]
    after: list[float | None]
    verdict: Literal["better", "worse", "same", "n/a"]
    noiseBand: BandDoc


class WorkloadDoc(_Doc):
    """A workload on both sides whose objects changed: the changes, and its figures when simulated."""

    key: str
    kind: str
    namespace: str
    name: str
    before: ObjectDoc
    after: ObjectDoc
    verdict: Literal["worse", "better", "same", "not simulated"]
    simulated: bool
    note: str | None
    changes: list[ChangeDoc]
    figures: list[FigureDoc]


class FindingDoc(_Doc):
    """A check finding, as ``probesim check --format json`` writes it."""

    rule: str
    name: str
    severity: Literal["info", "warning", "error"]
    message: str
    object: str
    namespace: str
    container: str | None
    file: str
    line: int
    field: str | None
    source: str | None
    fix: str
    patch: dict[str, Any] | None
    patchType: str | None
    help: str
    assumed: dict[str, Any] | None


class SummaryDoc(_Doc):
    workloadsChanged: int
    workloadsSimulated: int
    figuresWorse: int
    figuresBetter: int
    added: int
    removed: int
    otherChanged: int
    unchanged: int
    newFindings: int
    resolvedFindings: int


class DiffDoc(_Doc):
    """What a change of manifests does: ``verdict`` worse when a figure is, better when none is
    worse and one is better, same when something changed but no figure moved beyond the noise,
    no change when every object is the same on both sides."""

    apiVersion: Literal["probesim.dev/v1alpha1"]
    kind: Literal["DiffReport"]
    before: str
    after: str
    scenario: str | None
    seeds: list[int]
    noise: str
    verdict: Literal["worse", "better", "same", "no change"]
    summary: SummaryDoc
    workloads: list[WorkloadDoc]
    added: list[ObjectDoc]
    removed: list[ObjectDoc]
    otherChanges: list[ChangeDoc]
    newFindings: list[FindingDoc]
    resolvedFindings: list[FindingDoc]
    warnings: list[str]
    beforeErrors: list[str]


def json_schema() -> dict[str, Any]:
    """The diff document's JSON Schema (draft 2020-12), as ``probesim schema --diff`` prints it."""
    doc = DiffDoc.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{DIFF_VERSION}/DiffReport",
        **doc,
    }
