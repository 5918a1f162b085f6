"""PodDisruptionBudgets as check reads them, for the disruption rules (rules/disruption.py): each
budget's selector, minAvailable or maxUnavailable, and the disruption controller's arithmetic
over the replicas of the workloads it selects.

The arithmetic is the engine's (kube/disruption.py); this reader keeps each budget's document
and line for the findings, which the engine's model (model/disruption.py) does not. A budget
whose fields the API server would refuse (a string that is not a percentage, both minAvailable
and maxUnavailable) is not judged."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from probesim.kube.disruption import Status, desired_healthy
from probesim.manifests.yamlsrc import Doc, Path_
from probesim.model.kubernetes import Workload
from probesim.model.selectors import LabelSelector

API_VERSIONS = ("policy/v1", "policy/v1beta1")
_PERCENT = re.compile(r"^(\d+)%$")

IntOrPercent = int | str


@dataclass(frozen=True)
class Budget:
    """One PodDisruptionBudget."""

    name: str
    namespace: str
    api_version: str
    doc: Doc
    base: Path_
    min_available: IntOrPercent | None
    max_unavailable: IntOrPercent | None
    # None: no selector. policy/v1 selects no pod then; an empty selector selects every pod of
    # the namespace in policy/v1 and none in policy/v1beta1 (the API's documented change).
    selector: LabelSelector | None

    @property
    def obj(self) -> str:
        return f"PodDisruptionBudget/{self.name}"

    @property
    def set_field(self) -> str:
        return "minAvailable" if self.min_available is not None else "maxUnavailable"

    @property
    def value(self) -> IntOrPercent:
        v = self.min_available if self.min_available is not None else self.max_unavailable
        assert v is not None
        return v

    def selects(self, w: Workload) -> bool:
        """Whether the budget counts ``w``'s pods (same namespace, the selector matches the pod
        template's labels)."""
        if w.metadata.namespace != self.namespace or self.selector is None:
            return False
        if self.selector.empty:
            return self.api_version == "policy/v1"
        return self.selector.matches(w.pod_labels)

    def desired_healthy(self, expected: int) -> int:
        """The healthy pods the budget keeps, of ``expected`` (the disruption controller's
        getExpectedPodCount, as the engine follows it: kube/disruption.py)."""
        return desired_healthy(self.min_available, self.max_unavailable, expected)

    def allowed(self, expected: int) -> int:
        """disruptionsAllowed with all ``expected`` pods healthy: currentHealthy − desiredHealthy."""
        return Status(expected, self.desired_healthy(expected)).allowed


def _int_or_percent(v: Any) -> IntOrPercent | None:
    if isinstance(v, bool):
        raise ValueError
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, str) and _PERCENT.match(v):
        return v
    raise ValueError


def _items(data: Any) -> Iterator[tuple[Path_, Any]]:
    """A document's objects: itself, or the items of a List / ``<Kind>List`` (items that leave out
    apiVersion and kind take them from the list)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        for i, item in enumerate(data["items"]):
            if isinstance(item, dict):
                fill = {"apiVersion": data.get("apiVersion"), "kind": kind.removesuffix("List") or None}
                yield ("items", i), {**{k: v for k, v in fill.items() if v and k not in item}, **item}
        return
    yield (), data


def read_budgets(docs: Iterable[Doc]) -> list[Budget]:
    """The PodDisruptionBudgets of ``docs``, in file order; each name once per namespace (the
    first: variants of one budget in several folders are judged as the first)."""
    out: list[Budget] = []
    seen: set[tuple[str, str]] = set()
    for doc in docs:
        for base, data in _items(doc.data):
            if not isinstance(data, dict) or data.get("kind") != "PodDisruptionBudget":
                continue
            api = data.get("apiVersion")
            meta = data.get("metadata")
            spec = data.get("spec")
            if api not in API_VERSIONS or not isinstance(meta, dict) or not isinstance(spec, dict):
                continue
            name, ns = meta.get("name"), meta.get("namespace") or "default"
            if not isinstance(name, str) or not isinstance(ns, str) or (ns, name) in seen:
                continue
            try:
                lo = _int_or_percent(spec.get("minAvailable"))
                hi = _int_or_percent(spec.get("maxUnavailable"))
                raw_sel = spec.get("selector")
                sel = None if raw_sel is None else LabelSelector.model_validate(raw_sel)
            except (ValueError, ValidationError):
                continue
            if (lo is None) == (hi is None):  # neither, or both (the API server refuses both)
                continue
            seen.add((ns, name))
            out.append(Budget(name, ns, str(api), doc, base, lo, hi, sel))
    return out
