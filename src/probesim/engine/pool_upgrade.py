"""A GKE node pool surge upgrade carried out over the run's nodes (the loop's Simulation inherits
these steps, as it inherits the drains' of engine/drains.py).

GKE's surge upgrade (cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies,
"Surge upgrades"; the UpgradeSettings of the GKE API): ``maxSurge + maxUnavailable`` nodes are
upgraded at once. For up to ``maxSurge`` of them a new node is created first; once it is Ready
the old node is cordoned and drained, then deleted. For the ``maxUnavailable`` others the old node
is drained and deleted first, and its replacement created after. A drain respects the
PodDisruptionBudgets for up to an hour; then GKE goes on and the node's pods are deleted with it.
When one node's upgrade is done the next begins, until every node of the pool is replaced.

The drain is GKE's, not kubectl's: probesim carries it out as kubectl's (engine/drains.py: an
eviction refused by a budget tried again every 5 s) and records what it does under the source
``node-pool-upgrade``, with the reasons of the drains (probesim's own names); the nodes' events
are the kubelet's and the node controller's (Starting, NodeReady, RegisteredNode, RemovingNode).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.drains import DrainRun
from probesim.engine.events import EventLog
from probesim.engine.nodes import Nodes
from probesim.engine.pod_status import PodStatus
from probesim.model.duration import format_ms
from probesim.model.nodes import NodePoolUpgrade

I64 = npt.NDArray[np.int64]
SOURCE = "node-pool-upgrade"


@dataclass
class Slot:
    """One node being upgraded: ``old`` replaced by ``new``; ``surge``: the new node first."""

    old: int
    new: int
    surge: bool
    ready_at: int = int(INF)  # when the new node is Ready (while it is being created)
    drain: DrainRun | None = None
    drained: bool = False


@dataclass
class UpgradeRun:
    a: NodePoolUpgrade
    todo: list[int]  # old nodes not yet begun, in order
    fresh: list[int]  # new nodes not yet used
    slots: list[Slot] = field(default_factory=list)


class PoolUpgrades:
    """The node pool upgrade steps of a run (engine/loop.py's Simulation, which sets these)."""

    nodes: Nodes
    pods: PodStatus
    log: EventLog
    upgrades: list[UpgradeRun]

    def _start_drain(
        self, n: int, t: int, timeout: int, grace: int | None, force: bool, source: str
    ) -> DrainRun | None:
        raise NotImplementedError  # (engine/drains.py's)

    def _delete(self, t: int, victims: list[int], grace: int | None = None) -> None:
        raise NotImplementedError

    def _on_node(self, n: int) -> I64:
        raise NotImplementedError

    def _upgrade_action(self, t: int, a: NodePoolUpgrade) -> None:
        nodes = self.nodes
        k = nodes.pool_size
        run = UpgradeRun(a, list(range(k)), list(range(k, 2 * k)))
        msg = (f"Upgrading the node pool's {k} node(s): maxSurge {a.max_surge}, maxUnavailable "
               f"{a.max_unavailable}, new nodes Ready after {format_ms(a.node_startup)}")  # fmt: skip
        self.log.add(t, "Normal", "NodePoolUpgrade", "nodepool/default", msg, SOURCE)
        self.upgrades.append(run)
        for surge in [True] * a.max_surge + [False] * a.max_unavailable:
            self._begin(run, t, surge)
        self._upgrade_step(t)

    def _begin(self, run: UpgradeRun, t: int, surge: bool) -> None:
        """The next old node's upgrade begins: its new node created (surge), or it drained."""
        if not run.todo:
            return
        slot = Slot(run.todo.pop(0), run.fresh.pop(0), surge)
        run.slots.append(slot)
        if surge:
            self._new_node(run, slot, t)
        else:
            self._drain(run, slot, t)

    def _new_node(self, run: UpgradeRun, slot: Slot, t: int) -> None:
        slot.ready_at = t + run.a.node_startup
        name = self.nodes.names[slot.new]
        msg = f"Creating node {name} to replace {self.nodes.names[slot.old]}"
        self.log.add(t, "Normal", "CreatingNode", f"node/{name}", msg, SOURCE)

    def _drain(self, run: UpgradeRun, slot: Slot, t: int) -> None:
        slot.drain = self._start_drain(slot.old, t, run.a.drain_timeout, None, True, SOURCE)

    def _upgrade_step(self, t: int) -> None:
        """Each upgrade's nodes that became Ready, drains that ended, and what follows."""
        for run in self.upgrades:
            for slot in list(run.slots):
                if slot.ready_at <= t:
                    slot.ready_at = int(INF)
                    self.nodes.create(slot.new, t)
                    if slot.surge:
                        self._drain(run, slot, t)
                    else:
                        self._finish(run, slot, t)
                        continue
                if slot.drain is not None and slot.drain.finished and not slot.drained:
                    slot.drained = True
                    self._remove(slot.old, t)
                    if slot.surge:
                        self._finish(run, slot, t)
                    else:
                        self._new_node(run, slot, t)
            if not run.slots and not run.todo:
                msg = f"Every node of the pool replaced ({self.nodes.pool_size})"
                self.log.add(t, "Normal", "NodePoolUpgraded", "nodepool/default", msg, SOURCE)
        self.upgrades = [r for r in self.upgrades if r.slots or r.todo]

    def _finish(self, run: UpgradeRun, slot: Slot, t: int) -> None:
        run.slots.remove(slot)
        self._begin(run, t, slot.surge)

    def _remove(self, n: int, t: int) -> None:
        """The old node deleted with its VM: the pods still on it (a drain that timed out) deleted
        at once."""
        left = [p for p in self._on_node(n).tolist() if not self.pods.deleting[p]]
        if left:
            self._delete(t, left, 0)
        self.nodes.remove(n, t)

    def _upgrade_due(self, t: int) -> bool:
        return any(
            s.ready_at <= t or (s.drain is not None and s.drain.finished and not s.drained)
            for r in self.upgrades
            for s in r.slots
        )
