"""``kubectl drain``, ``kubectl uncordon`` and GKE's node pool upgrade in the lab (issue 45): the
engine's drain steps
(``engine.drains.Drains``: the cordon, each pod's eviction through the Eviction API and the
PodDisruptionBudgets of ``engine.disruption``, a refused eviction tried again every 5 s, the
evicted pods waited for) decide over the lab's pods, each at its simulation slot; this module
carries the evictions out on real processes. An allowed eviction deletes the pod as ``kubectl
delete pod`` does (``Runtime.terminate``: out of the endpoints, its preStop hook, SIGTERM, the
grace period — the drain's ``--grace-period`` if it gives one — then SIGKILL); its ReplicaSet
replaces it at once and the scheduler (``lab.nodes``) binds the replacement to another node, the
drained one being cordoned.

A node pool upgrade (``nodePoolUpgrade``) is the engine's too (``engine.pool_upgrade.PoolUpgrades``,
GKE's surge upgrade): its new nodes created (Ready ``nodeStartup`` after), each old node cordoned
and drained by the same drain steps (its evictions refused by a budget tried again every 5 s),
then removed, one slot after the other. A new node is a name the scheduler may bind pods to, as
every node of the lab: all run on this machine.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.containers import Containers
from probesim.engine.disruption import Budgets
from probesim.engine.drains import DrainRun, Drains
from probesim.engine.events import EventLog
from probesim.engine.fleet import Fleet
from probesim.engine.nodes import Nodes
from probesim.engine.pod_status import PodStatus
from probesim.engine.pool_upgrade import PoolUpgrades, UpgradeRun
from probesim.lab.pods import Pod
from probesim.lab.runtime import Runtime
from probesim.model.nodes import Drain, NodePoolUpgrade, Uncordon
from probesim.model.scenario import Scenario

B = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]
DRAIN_ACTIONS = (Drain, Uncordon, NodePoolUpgrade)
MAX_STEPS = 10_000  # the drain steps caught up in one round, at most (a bound)


@dataclass
class PodView:
    """The lab's pods as the drain steps read them, per slot (``engine.pod_status``'s names)."""

    admitted: B
    gone: B
    deleting: B


@dataclass
class ContainerView:
    """Per slot (one container a pod): whether its container was ever started."""

    created: B


class LabDrains(Drains, PoolUpgrades):
    """The scenario's drains, uncordons and node pool upgrades over the lab's pods (the engine's
    Simulation inherits the same two classes, in the same order)."""

    def __init__(
        self, scenario: Scenario, fleet: Fleet, nodes: Nodes, log: EventLog, runtime: Runtime
    ) -> None:
        n = fleet.n_pods
        self.fleet = fleet
        self.nodes = nodes
        self.log = log
        self.runtime = runtime
        self.spaces = [w.metadata.namespace for w in scenario.workloads]
        self.scenario_kinds = [w.kind for w in scenario.workloads]
        self.desired = [w.spec.replicas if w.kind != "Pod" else 1 for w in scenario.workloads]
        self.budgets = Budgets(scenario, fleet)
        self.drains: list[DrainRun] = []
        self.upgrades: list[UpgradeRun] = []
        self._views(
            PodView(np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)), ContainerView(np.zeros(n, bool))
        )
        self.ready = np.zeros(n, bool)
        self.by_slot: dict[int, Pod] = {}
        self.actions = sorted(
            ((int(a.at), a) for a in scenario.spec.actions if isinstance(a, DRAIN_ACTIONS)),
            key=lambda x: x[0],
        )
        self.applied = 0

    def _look(self, pods: list[Pod]) -> None:
        """The pods now, as the API server has them."""
        n = self.fleet.n_pods
        admitted, gone, deleting, ready, created = (np.zeros(n, bool) for _ in range(5))
        self.by_slot = {}
        for p in pods:
            if 0 <= p.slot < n:
                admitted[p.slot] = True
                gone[p.slot] = p.gone
                deleting[p.slot] = p.deleting
                ready[p.slot] = p.ready and not p.gone
                created[p.slot] = p.run.instance >= 0
                if not p.gone:
                    self.by_slot[p.slot] = p
        self._views(PodView(admitted, gone, deleting), ContainerView(created))
        self.ready = ready

    def _views(self, pods: PodView, ctr: ContainerView) -> None:
        # The drain steps read only these arrays of the engine's PodStatus and Containers.
        self.pods = cast(PodStatus, pods)
        self.ctr = cast(Containers, ctr)

    def _on_node(self, n: int) -> I64:
        return np.flatnonzero((self.nodes.pod_node == n) & self.pods.admitted & ~self.pods.gone)

    def _containers_of(self, p: int) -> slice:
        return slice(p, p + 1)

    def _delete(self, t: int, victims: list[int], grace: int | None = None) -> None:
        """An allowed eviction: the pod deleted (Terminating now, for the budgets and its
        ReplicaSet), its processes stopped with its grace period."""
        for p in victims:
            pod = self.by_slot.get(p)
            if pod is None or pod.deleting:
                continue
            pod.deleting = True
            self.pods.deleting[p] = True
            self.ready[p] = False
            grace_s = None if grace is None else grace / 1000
            self.runtime.kills.add(asyncio.create_task(self.runtime.terminate(pod, grace_s)))

    def _next(self) -> int:
        """When the next action, drain attempt or poll, or new node's Ready is due."""
        due = self.actions[self.applied][0] if self.applied < len(self.actions) else int(INF)
        for r in self.drains:
            due = min([due, *r.retry_at.values(), *r.poll_at.values()])
        for u in self.upgrades:
            due = min([due, *(s.ready_at for s in u.slots)])
        return int(due)

    def tick(self, pods: list[Pod], now: int) -> None:
        """The actions due by ``now``, then the drains' attempts and polls and the upgrades' steps
        due by then: each at the time the engine takes it, in the order of its loop (the
        actions, the drains' step, the upgrades' step)."""
        steps = 0
        while steps < MAX_STEPS:
            t = self._next()
            if t > now:
                break
            steps += 1
            self._look(pods)
            while self.applied < len(self.actions) and self.actions[self.applied][0] <= t:
                a = self.actions[self.applied][1]
                self.applied += 1
                if isinstance(a, NodePoolUpgrade):
                    self._upgrade_action(t, a)
                else:
                    self._drain_action(t, a)
            if self.drains and self._drains_due(t):
                self._drain_step(t)
            if self.upgrades and self._upgrade_due(t):
                self._upgrade_step(t)
