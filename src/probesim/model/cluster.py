"""The cluster a scenario runs in, as far as it is not in the manifests (spec.cluster): its nodes
(model/nodes.py), the node lifecycle controller's and the API server's timings, and the time a
pod and a container take to start."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made.
from pydantic import Field, model_validator

from probesim.model.base import Model
from probesim.model.duration import Duration
from probesim.model.nodes import Node, NodePool, Nodes
from probesim.model.quantities import Millicores


class Cluster(Model):
    """Cluster facts that are not in the manifests."""

    nodes: Nodes | None = Field(
        default=None,
        description="The cluster's nodes: a pool ({count: 3, zones: [a, b, c], cpu: 4, memory: 16Gi}) or a "
        "list of nodes ([{name: node-1, zone: a}, …]). Pods are then placed by the scheduler's rules "
        "(requests, node selectors and affinity, pod anti-affinity, topology spread, taints) and nodes "
        "can fail (spec.actions nodeDown, zoneDown, nodeUp). Omitted: one node, node-1, that fits "
        "every pod and never fails (placement rules not applied).",
    )
    node_monitor_period: Duration = Field(
        default=5_000,
        description="kube-controller-manager --node-monitor-period: how often the node lifecycle "
        "controller looks at the nodes' heartbeats.",
    )
    node_monitor_grace_period: Duration = Field(
        default=50_000,
        description="kube-controller-manager --node-monitor-grace-period (50s since Kubernetes 1.32, "
        "40s before): a node silent for longer becomes NotReady (Unknown) and its pods not Ready.",
    )
    default_unreachable_toleration: Duration = Field(
        default=300_000,
        description="kube-apiserver --default-unreachable-toleration-seconds: how long a pod that "
        "declares no toleration of node.kubernetes.io/unreachable stays on an unreachable node "
        "before it is evicted.",
    )

    pod_start_delay: Duration = Field(
        default=0,
        description="From pod creation to its containers starting (scheduling, image pull, create).",
    )
    node_cpu: Millicores = Field(
        default=4000, description="CPU a container without a CPU limit can use (cores or '1500m')."
    )
    container_restart_delay: Duration = Field(
        default=100,
        description="From a container's exit (or the end of its kill) to its replacement starting: the "
        "kubelet's pod sync and the runtime creating the container (any value; a start within a step "
        "counts from its exact time). After a crash a real kubelet may add up to 1 s, until its PLEG "
        "relist sees the exit.",
    )

    @model_validator(mode="after")
    def _distinct_nodes(self) -> "Cluster":
        if isinstance(self.nodes, tuple):
            if not self.nodes:
                raise ValueError("nodes: give at least one node (or leave nodes out)")
            seen: set[str] = set()
            for i, n in enumerate(self.nodes):
                if n.name in seen:
                    raise ValueError(f"nodes[{i}]: a second node named {n.name!r}; node names are unique")
                seen.add(n.name)
        if self.node_monitor_period <= 0:
            raise ValueError("nodeMonitorPeriod must be longer than 0s")
        return self

    def node_list(self) -> "list[Node] | None":
        """The nodes, a pool's made one by one, each with its allocatable CPU (nodeCpu when not
        given); None when the scenario gives none."""
        if self.nodes is None:
            return None
        listed = self.nodes.nodes() if isinstance(self.nodes, NodePool) else list(self.nodes)
        return [n if n.cpu is not None else n.model_copy(update={"cpu": self.node_cpu}) for n in listed]
