"""Where a pod may run, as its spec says: tolerations, node selection and (anti-)affinity, topology
spread constraints (``v1.Toleration``, ``v1.Affinity``, ``v1.TopologySpreadConstraint``), each
checked as the API server checks it (ValidateTolerations, ValidateAffinity,
validateTopologySpreadConstraints); the scheduler's rules over them are kube/scheduling.py's."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made.
import re
from typing import Annotated, Literal

from pydantic import Field, Strict, model_validator

from probesim.model.base import OpenModel, SInt
from probesim.model.selectors import LabelSelector


class Toleration(OpenModel):
    """A pod's toleration of node taints (``v1.Toleration``), checked as ValidateTolerations does:
    an empty key needs the Exists operator, Exists takes no value, and tolerationSeconds only goes
    with the NoExecute effect."""

    key: str = ""
    operator: Literal["Exists", "Equal", ""] = ""  # "": Equal
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] = ""  # "": every effect
    toleration_seconds: Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1)] | None = None

    @model_validator(mode="after")
    def _valid(self) -> "Toleration":
        if not self.key and self.operator != "Exists":
            raise ValueError(
                'operator must be Exists when `key` is empty, which means "match all values and all keys"'
            )
        if self.operator == "Exists" and self.value:
            raise ValueError("value must be empty when `operator` is 'Exists'")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("effect must be 'NoExecute' when `tolerationSeconds` is set")
        return self


class NodeSelectorRequirement(OpenModel):
    """One expression of a node selector term (``v1.NodeSelectorRequirement``)."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _valid(self) -> "NodeSelectorRequirement":
        """validateNodeSelectorRequirement: In/NotIn need values, Exists/DoesNotExist take none,
        Gt/Lt one integer."""
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError("values must be specified when `operator` is 'In' or 'NotIn'")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError("values may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
        one = len(self.values) == 1 and re.fullmatch(r"-?[0-9]+", self.values[0])
        if self.operator in ("Gt", "Lt") and not one:
            raise ValueError("must be specified single value when `operator` is 'Lt' or 'Gt', an integer")
        return self

    def matches(self, value: str | None) -> bool:
        """As nodeaffinity's requirement on a node's label value (None: no such label)."""
        op = self.operator
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if value is None or not re.fullmatch(r"-?[0-9]+", value):
            return False  # Gt/Lt on a label that is no integer: no match
        return int(value) > int(self.values[0]) if op == "Gt" else int(value) < int(self.values[0])


class NodeSelectorTerm(OpenModel):
    """Expressions ANDed: on the node's labels (matchExpressions) and fields (matchFields, of
    which the API allows metadata.name)."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    @model_validator(mode="after")
    def _fields(self) -> "NodeSelectorTerm":
        for r in self.match_fields:
            if r.key != "metadata.name":
                raise ValueError(f"matchFields: {r.key!r} is not a supported field (metadata.name is)")
            if r.operator not in ("In", "NotIn") or len(r.values) != 1:
                raise ValueError("matchFields: metadata.name takes operator In or NotIn with one value")
        return self

    def matches(self, labels: dict[str, str], name: str) -> bool:
        """An empty term matches no node (nodeaffinity's NodeSelectorTerms)."""
        if not self.match_expressions and not self.match_fields:
            return False
        return all(r.matches(labels.get(r.key)) for r in self.match_expressions) and all(
            r.matches(name) for r in self.match_fields
        )


class NodeSelector(OpenModel):
    node_selector_terms: Annotated[tuple[NodeSelectorTerm, ...], Field(min_length=1)]

    def matches(self, labels: dict[str, str], name: str) -> bool:
        """Terms ORed."""
        return any(t.matches(labels, name) for t in self.node_selector_terms)


Weight = Annotated[SInt, Field(ge=1, le=100)]


class PreferredSchedulingTerm(OpenModel):
    weight: Weight
    preference: NodeSelectorTerm


class NodeAffinity(OpenModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: tuple[PreferredSchedulingTerm, ...] = ()


class PodAffinityTerm(OpenModel):
    """Pods (labelSelector, in namespaces) that must or must not run in the same topology domain
    (the nodes with the same value of topologyKey)."""

    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    topology_key: Annotated[str, Field(min_length=1)]


class WeightedPodAffinityTerm(OpenModel):
    weight: Weight
    pod_affinity_term: PodAffinityTerm


class PodAffinity(OpenModel):
    required_during_scheduling_ignored_during_execution: tuple[PodAffinityTerm, ...] = ()
    preferred_during_scheduling_ignored_during_execution: tuple[WeightedPodAffinityTerm, ...] = ()


class Affinity(OpenModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(OpenModel):
    """How evenly matching pods spread over the domains of topologyKey
    (validateTopologySpreadConstraints: maxSkew at least 1, minDomains only with DoNotSchedule)."""

    max_skew: Annotated[SInt, Field(ge=1, le=2**31 - 1)]
    topology_key: Annotated[str, Field(min_length=1)]
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: Annotated[SInt, Field(ge=1, le=2**31 - 1)] | None = None
    node_affinity_policy: Literal["Honor", "Ignore"] = "Honor"
    node_taints_policy: Literal["Honor", "Ignore"] = "Ignore"
    match_label_keys: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _min_domains(self) -> "TopologySpreadConstraint":
        if self.min_domains is not None and self.when_unsatisfiable != "DoNotSchedule":
            raise ValueError("minDomains can only be set when whenUnsatisfiable is 'DoNotSchedule'")
        return self
