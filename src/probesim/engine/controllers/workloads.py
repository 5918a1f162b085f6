"""The controllers run over the fleet: each step the loop hands them its pods' state; the
Deployment controller syncs (``deployment``), then each ReplicaSet's controller creates pods from
its pool of slots or deletes the pods ``replicasets.pods_to_delete`` ranks first. Scenario
actions on workloads (rollout, rollback, restart, scale, pause, resume) change the Deployments'
specs here. The loop keeps the kubelet's side: creating a pod's containers, stopping a deleted
pod's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.controllers.deployment import (
    NEW_RS_REASON,
    Condition,
    DeploymentController,
    DeploymentState,
    ReplicaSetState,
    template_hash,
)
from probesim.engine.controllers.replicaset import PENDING, RUNNING, PodRank, pods_to_delete
from probesim.engine.controllers.templates import WorkloadPlan
from probesim.engine.events import EventLog
from probesim.model.scenario import Pause, Restart, Resume, Rollback, Rollout, Scale, Scenario

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


@dataclass
class PodArrays:
    """The loop's view of its pods this step (references, not copies)."""

    admitted: B
    deleting: B
    gone: B
    ready: B
    ready_since: I64
    admitted_at: I64
    started: B  # every container has started at least once (the pod left Pending)
    restarts: I64  # the most restarts of any of its containers


@dataclass
class _ReplicaSetRun:
    wi: int
    pool: I64  # the slots its pods may take, in creation order
    name: str


class Controllers:
    """Every ReplicaSet-managed workload's controllers (Deployments with their revisions, bare
    ReplicaSets). ``desired`` is each workload's spec.replicas, which the HPA and scale actions
    set; StatefulSets and bare Pods are admitted by the loop."""

    def __init__(
        self,
        scenario: Scenario,
        pod_workload: I64,
        pod_template: I64,
        plans: dict[int, WorkloadPlan],
        replica_set: list[bool],
        log: EventLog,
    ) -> None:
        self.scenario = scenario
        self.log = log
        self.desired = [w.spec.replicas for w in scenario.workloads]
        self.min_ready = [w.spec.min_ready_seconds * 1000 for w in scenario.workloads]
        self.deployments: dict[int, DeploymentController] = {}
        self.rs: dict[tuple[int, int], _ReplicaSetRun] = {}  # (workload, template) → its ReplicaSet
        for wi, w in enumerate(scenario.workloads):
            if not replica_set[wi]:
                continue
            if w.kind == "Deployment":
                revisions = plans[wi].revisions
                names = {t: f"{w.name}-{template_hash(r.key)}" for t, r in enumerate(revisions)}
            else:
                names = {0: w.name}
            for t, name in names.items():
                pool = np.flatnonzero((pod_workload == wi) & (pod_template == t))
                self.rs[(wi, t)] = _ReplicaSetRun(wi, pool, name)
            if w.kind == "Deployment":
                strategy = w.spec.strategy
                assert strategy is not None
                ru = strategy.rolling_update
                d = DeploymentState(
                    name=w.name,
                    replicas=w.spec.replicas,
                    template=0,
                    strategy=strategy.type,
                    max_surge=ru.max_surge if ru else "25%",
                    max_unavailable=ru.max_unavailable if ru else "25%",
                    paused=w.spec.paused,
                    progress_deadline_s=_deadline(w.spec.progress_deadline_seconds),
                    revision_history_limit=w.spec.revision_history_limit,
                    revision=1,
                )
                # The run starts as the Deployment is created: its first ReplicaSet has every
                # replica at once (no ScalingReplicaSet event: the pods are the run's first).
                d.rs.append(
                    ReplicaSetState(
                        name=names[0],
                        template=0,
                        revision=1,
                        created=0,
                        replicas=d.replicas,
                        desired_annotation=d.replicas,
                        max_annotation=d.replicas + d.max_surge_n(),
                    )
                )
                d.status.set_condition(
                    Condition(
                        "Progressing", "True", NEW_RS_REASON, f'Created new replica set "{names[0]}"', 0, 0
                    )
                )
                self.deployments[wi] = DeploymentController(d, names)
        self.plans = plans
        self.dirty = True
        self.seen_version = -1
        self.seen_desired: list[int] = []
        self.wake: int = int(INF)

    # -- actions --------------------------------------------------------------------------

    def act(self, t: int, index: int, a: Rollout | Rollback | Restart | Scale | Pause | Resume) -> None:
        """An action of spec.actions (``index``) on workload ``a.workload``."""
        wi = next(i for i, w in enumerate(self.scenario.workloads) if w.name == a.workload)
        self.dirty = True
        if isinstance(a, Scale):
            self.desired[wi] = a.replicas
            return
        ctl = self.deployments.get(wi)
        if ctl is None:
            return
        d = ctl.d
        if isinstance(a, Pause | Resume):
            d.paused = isinstance(a, Pause)
            return
        target = self.plans[wi].template_of[index]
        if isinstance(a, Rollback) and not any(r.template == target for r in d.rs):
            msg = (
                f"unable to find specified revision {a.to_revision} in history"
                if a.to_revision
                else "the previous revision's ReplicaSet was deleted (revisionHistoryLimit)"
            )
            self.log.add(t, "Warning", "RollbackRevisionNotFound", f"deployment/{d.name}", msg, "kubectl")
            return
        d.template = target

    # -- the step -------------------------------------------------------------------------

    def reconcile(self, t: int, s: PodArrays, version: int) -> tuple[list[int], list[int]]:
        """Deployment syncs, then every ReplicaSet's: the pods to create and to delete now.
        Skipped when nothing they read changed (``version``: the loop's pods; ``desired``;
        actions) and no time-driven change is due (a pod becoming available, a deadline)."""
        due = (
            self.dirty or version != self.seen_version or self.desired != self.seen_desired or t >= self.wake
        )
        if not due:
            return [], []
        self.dirty = False
        self.seen_version = version
        self.seen_desired = list(self.desired)
        self.wake = int(INF)
        create: list[int] = []
        delete: list[int] = []
        for wi, ctl in self.deployments.items():
            self._fill(wi, s, t)
            ctl.d.replicas = self.desired[wi]
            for e in ctl.sync(t):
                self.log.add(
                    t, e.type, e.reason, f"deployment/{ctl.d.name}", e.message, "deployment-controller"
                )
            deadline = ctl.deadline_at()
            if deadline is not None:
                self.wake = min(self.wake, deadline + 1)
        wanted = {(wi, r.template): r.replicas for wi, ctl in self.deployments.items() for r in ctl.d.rs}
        for (wi, tpl), run in self.rs.items():
            want = wanted.get((wi, tpl), 0) if wi in self.deployments else self.desired[wi]
            pods = run.pool
            live = pods[s.admitted[pods] & ~s.deleting[pods]]
            if live.size < want:
                free = pods[~s.admitted[pods]][: want - live.size]
                if free.size < want - live.size:
                    msg = "probesim ran out of pod slots for this ReplicaSet in this run"
                    self.log.add(
                        t, "Warning", "FailedCreate", f"replicaset/{run.name}", msg, "replicaset-controller"
                    )
                create += free.tolist()
            elif live.size > want:
                ranks = [
                    PodRank(
                        index=int(p),
                        phase=RUNNING if s.started[p] else PENDING,
                        ready=bool(s.ready[p]),
                        ready_since=int(s.ready_since[p]),
                        restarts=int(s.restarts[p]),
                        created=int(s.admitted_at[p]),
                    )
                    for p in live
                ]
                delete += pods_to_delete(ranks, live.size - want, t)
        return create, delete

    def _fill(self, wi: int, s: PodArrays, t: int) -> None:
        """ReplicaSet status from its pods (``calculateStatus``): active pods, Ready ones, and
        available ones (Ready for minReadySeconds; the controller looks again when one becomes
        available)."""
        min_ready = self.min_ready[wi]
        for r in self.deployments[wi].d.rs:
            pods = self.rs[(wi, r.template)].pool
            active = s.admitted[pods] & ~s.deleting[pods]
            ready = active & s.ready[pods]
            r.status_replicas = int(active.sum())
            r.ready = int(ready.sum())
            if min_ready:
                at = s.ready_since[pods][ready] + min_ready
                r.available = int((at <= t).sum())
                if (at > t).any():
                    self.wake = min(self.wake, int(at[at > t].min()))
            else:
                r.available = r.ready
            r.pods = int((s.admitted[pods] & ~s.gone[pods]).sum())


def _deadline(seconds: int | None) -> int | None:
    """``HasProgressDeadline``: MaxInt32 means none."""
    return None if seconds is None or seconds == 2**31 - 1 else seconds
