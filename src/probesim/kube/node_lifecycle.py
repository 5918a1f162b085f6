"""The node lifecycle controller's timing (pkg/controller/nodelifecycle/node_lifecycle_controller.go)
and the kubelet heartbeat it reads, as pure arithmetic the engine (engine/nodes.py) applies.

- The kubelet renews its node Lease every 10 s (pkg/kubelet/nodelease: renewIntervalFraction 0.25
  of the 40 s nodeLeaseDurationSeconds); probesim renews at the multiples of 10 s of the run.
- The controller's ``monitorNodeHealth`` runs every ``--node-monitor-period`` (5 s), at the
  multiples of that period; ``tryUpdateNodeHealth`` sets a node's probeTimestamp to the pass that
  first sees a renewal, and once ``now.After(probeTimestamp + --node-monitor-grace-period)``
  (50 s since Kubernetes 1.32, kubernetes/kubernetes#126287; 40 s before) sets its Ready
  condition to Unknown ("Kubelet stopped posting node status.").
- In that same pass (observedReadyCondition True, current not True) it records NodeNotReady on the
  node and runs ``MarkPodsNotReady`` (pkg/controller/util/node/controller_utils.go) on its pods.
- ``processTaintBaseEviction`` reads the condition the pass *observed*: the next pass finds it
  Unknown and queues the node for the ``node.kubernetes.io/unreachable:NoExecute`` taint
  (``markNodeForTainting``); ``doNoExecuteTaintingPass`` (every 100 ms) takes the zone's queue
  through a token bucket of ``--node-eviction-rate`` (0.1 node/s, burst 1: one node every 10 s),
  as ``handleDisruption`` sets it from the zone's state: normal and fully disrupted zones at the
  healthy rate, a partially disrupted one (more than 2 nodes and at least 55 % not Ready) at
  ``--secondary-node-eviction-rate`` (0.01) when larger than ``--large-cluster-size-threshold``
  (50 nodes), else 0; and when every zone is fully disrupted, no taint at all (master disruption
  mode: the taints are removed and the queues stopped).
- The NoSchedule taint of the same key follows the condition at once (doNoScheduleTaintingPass
  on the node update).
"""

from __future__ import annotations

LEASE_RENEW_MS = 10_000  # the kubelet's Lease renewal interval
EVICTION_RATE = 0.1  # --node-eviction-rate: nodes per second and zone
SECONDARY_EVICTION_RATE = 0.01  # --secondary-node-eviction-rate
LARGE_CLUSTER = 50  # --large-cluster-size-threshold
UNHEALTHY_ZONE = 0.55  # --unhealthy-zone-threshold

NORMAL, PARTIAL, FULL = "Normal", "PartialDisruption", "FullDisruption"


def last_renewal(down_at: int) -> int:
    """The kubelet's last Lease renewal before its node failed at ``down_at`` (one due at that
    very time does not happen)."""
    return ((down_at - 1) // LEASE_RENEW_MS) * LEASE_RENEW_MS


def seen_at(t: int, period: int) -> int:
    """The first monitor pass at or after ``t``: when the controller sees what happened then."""
    return -(-t // period) * period


def unknown_at(down_at: int, period: int, grace: int) -> int:
    """The pass at which the controller sets the Ready condition of a node that failed at
    ``down_at`` to Unknown: the first one strictly after its probeTimestamp + the grace period."""
    probe = seen_at(last_renewal(down_at), period)
    return ((probe + grace) // period + 1) * period


def zone_state(ready: int, not_ready: int) -> str:
    """``ComputeZoneState``: fully disrupted with no Ready node; partially with more than 2 not
    Ready making at least 55 %; else normal."""
    if ready == 0 and not_ready > 0:
        return FULL
    if not_ready > 2 and not_ready / (not_ready + ready) >= UNHEALTHY_ZONE:
        return PARTIAL
    return NORMAL


def eviction_rate(state: str, zone_size: int) -> float:
    """The zone's tainting rate in ``state`` (``setLimiterInZone``: ``HealthyQPSFunc`` for a fully
    disrupted zone, ``ReducedQPSFunc`` for a partially disrupted one)."""
    if state == PARTIAL:
        return SECONDARY_EVICTION_RATE if zone_size > LARGE_CLUSTER else 0.0
    return EVICTION_RATE
