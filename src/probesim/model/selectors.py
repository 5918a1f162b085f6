"""Label selectors (``metav1.LabelSelector``) as probesim reads them: a workload's selector, a
pod affinity term's and a topology spread constraint's."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made.
from pydantic import Field

from probesim.model.base import OpenModel


class LabelSelectorRequirement(OpenModel):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist: checked by the loader, which knows the line
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """As labels.Requirement.Matches: NotIn and DoesNotExist match a label left out."""
        if self.operator == "In":
            return labels.get(self.key) in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


class LabelSelector(OpenModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether pods with ``labels`` are selected (every label and every expression)."""
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.matches(labels) for r in self.match_expressions
        )
