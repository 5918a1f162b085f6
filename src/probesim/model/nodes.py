"""The cluster's nodes as a scenario gives them (spec.cluster.nodes): a pool of alike nodes or a
list, each with its zone, allocatable CPU, memory and pods, labels and taints; and the actions
that fail them and bring them back (nodeDown, zoneDown, nodeUp, zoneUp)."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made.
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag

from probesim.model.base import Model, SBool, SInt
from probesim.model.duration import Duration
from probesim.model.quantities import Bytes, Millicores


def _zone(v: str) -> str:
    if not v or len(v) > 63 or not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", v):
        raise ValueError(
            "a zone is a label value: at most 63 characters, letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit"
        )
    return v


def _node_name(v: str) -> str:
    if (
        not v
        or len(v) > 253
        or not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", v)
    ):
        raise ValueError(
            "a node name is a lowercase RFC 1123 subdomain of at most 253 characters: a-z, 0-9, '-' and "
            "'.', starting and ending with a letter or digit"
        )
    return v


ZoneName = Annotated[str, AfterValidator(_zone)]


class NodeTaint(Model):
    """A taint the node carries from the start (``kubectl taint``): pods that do not tolerate it
    are not scheduled there (NoSchedule, NoExecute) or less willingly (PreferNoSchedule)."""

    key: Annotated[str, Field(min_length=1)]
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class _NodeShape(Model):
    cpu: Millicores | None = Field(
        default=None, description="Allocatable CPU (cores or '3500m'); default: cluster.nodeCpu."
    )
    memory: Bytes = Field(default=16 * 2**30, description="Allocatable memory ('15Gi').")
    pods: Annotated[SInt, Field(ge=1, le=100_000)] = Field(
        default=110, description="Pods it takes at most (the kubelet's maxPods)."
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="More node labels (kubernetes.io/hostname and topology.kubernetes.io/zone are set).",
    )
    taints: tuple[NodeTaint, ...] = ()


class Node(_NodeShape):
    """One node, by name."""

    name: Annotated[str, AfterValidator(_node_name)]
    zone: ZoneName | None = Field(default=None, description="topology.kubernetes.io/zone.")


class NodePool(_NodeShape):
    """``count`` alike nodes, named node-1, node-2, …, spread over ``zones`` in turn."""

    count: Annotated[SInt, Field(ge=1, le=5000)]
    zones: tuple[ZoneName, ...] = Field(
        default=(), description="Zones the nodes go to in turn (node-1 the first, node-2 the second, …)."
    )

    def nodes(self) -> list[Node]:
        shape = {k: getattr(self, k) for k in _NodeShape.model_fields}
        zones = self.zones or (None,)
        return [
            Node.model_construct(name=f"node-{i + 1}", zone=zones[i % len(zones)], **shape)
            for i in range(self.count)
        ]


def _nodes_form(v: Any) -> str | None:
    """A pool (a mapping) or a list of nodes: each checked as what it is, so that an error names
    the field it is about."""
    if isinstance(v, dict | NodePool):
        return "pool"
    return "list" if isinstance(v, list | tuple) else None


Nodes = Annotated[
    Annotated[NodePool, Tag("pool")] | Annotated[tuple[Node, ...], Tag("list")],
    Discriminator(_nodes_form, custom_error_type="nodes", custom_error_message=(
        "give a pool ({count: 3, zones: [a, b, c]}) or a list of nodes ([{name: node-1}, …])")),
]  # fmt: skip


class NodeDown(Model):
    """A node fails: ``crash`` (it loses power: its processes stop, its kubelet is gone) or
    ``partition`` (cut off from the network: its processes and kubelet go on, but nothing reaches
    it from the other nodes and its kubelet cannot reach the API server). Either way its pods stop
    answering at once; the node lifecycle controller notices after its grace period."""

    kind: Literal["nodeDown"]
    node: str = Field(description="A node of spec.cluster.nodes.")
    at: Duration
    mode: Literal["crash", "partition"] = Field(
        default="crash", description="crash: it stops; partition: it runs on, cut off."
    )


class ZoneDown(Model):
    """Every node of a zone fails at once (a zone outage), as ``nodeDown`` each."""

    kind: Literal["zoneDown"]
    zone: str = Field(description="A zone of spec.cluster.nodes.")
    at: Duration
    mode: Literal["crash", "partition"] = "crash"


class NodeUp(Model):
    """A failed node comes back: after a crash it boots (its kubelet starts the pods still bound
    to it again, new containers, and removes those deleted meanwhile); after a partition its
    kubelet reports again (its containers ran on; it stops the pods deleted meanwhile)."""

    kind: Literal["nodeUp"]
    node: str
    at: Duration


class ZoneUp(Model):
    """Every failed node of a zone comes back, as ``nodeUp`` each."""

    kind: Literal["zoneUp"]
    zone: str
    at: Duration


class Drain(Model):
    """``kubectl drain NODE``: the node cordoned (no new pod goes there), then every pod on it
    evicted through the Eviction API, which honours the PodDisruptionBudgets; an eviction a budget
    refuses is tried again every 5 s, until every pod is gone or ``timeout`` passes."""

    kind: Literal["drain"]
    node: str = Field(description="A node of spec.cluster.nodes.")
    at: Duration
    timeout: Duration = Field(
        default=0, description="kubectl drain --timeout: give up after this long (0s: wait for ever)."
    )
    grace_period: Duration | None = Field(
        default=None,
        description="kubectl drain --grace-period: each pod's termination grace period instead of its own.",
    )
    force: SBool = Field(
        default=False,
        description="kubectl drain --force: also evict pods no controller manages (bare Pods, not "
        "recreated); without it kubectl refuses to drain a node that has one.",
    )


class Uncordon(Model):
    """``kubectl uncordon NODE``: new pods may go to the node again."""

    kind: Literal["uncordon"]
    node: str = Field(description="A node of spec.cluster.nodes.")
    at: Duration


class NodePoolUpgrade(Model):
    """A GKE node pool surge upgrade of spec.cluster.nodes: each node is replaced by a new one.
    Up to ``maxSurge + maxUnavailable`` nodes are upgraded at once: for up to ``maxSurge`` of
    them a new node is created first (Ready after ``nodeStartup``), then the old node is cordoned,
    drained (PodDisruptionBudgets respected for up to ``drainTimeout``, GKE's 1 hour) and
    removed; for the others (``maxUnavailable``) the old node is drained and removed first and
    its replacement created after."""

    kind: Literal["nodePoolUpgrade"]
    at: Duration
    max_surge: Annotated[SInt, Field(ge=0, le=100)] = Field(
        default=1, description="Nodes created beyond the pool's size during the upgrade (GKE's default 1)."
    )
    max_unavailable: Annotated[SInt, Field(ge=0, le=100)] = Field(
        default=0,
        description="Nodes that may be unavailable at once, drained before their replacement exists.",
    )
    node_startup: Duration = Field(
        default=60_000,
        description="From a new node's creation to its being Ready (VM boot, kubelet registration).",
    )
    drain_timeout: Duration = Field(
        default=3_600_000,
        description="How long GKE respects the PodDisruptionBudgets while draining a node before it "
        "removes the node anyway (1 hour).",
    )
