"""The controllers run over the fleet: each step the loop hands them its pods' state; the
Deployment controller syncs (``deployment``), then each ReplicaSet's controller creates pods from
its pool of slots or deletes the pods ``replicasets.pods_to_delete`` ranks first. Scenario
actions on workloads (rollout, rollback, restart, scale, pause, resume, partition) change their
specs here. The loop keeps the kubelet's side: creating a pod's containers, stopping a deleted
pod's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.controllers.adoption import DESIRED, MAX, REVISION, adoptions, annotation_int
from probesim.engine.controllers.conditions import Condition
from probesim.engine.controllers.deployment import (
    NEW_RS_REASON,
    TIMED_OUT_REASON,
    DeploymentController,
    DeploymentState,
    ReplicaSetState,
)
from probesim.engine.controllers.replicaset import PENDING, RUNNING, PodRank, pods_to_delete
from probesim.engine.controllers.statefulset import SetPod, StatefulSetState, reconcile
from probesim.engine.controllers.templates import WorkloadPlan
from probesim.engine.events import EventLog
from probesim.kube.arithmetic import replica_set_name
from probesim.model.kubernetes import Workload
from probesim.model.scenario import Partition, Pause, Restart, Resume, Rollback, Rollout, Scale, Scenario

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
    stopped: B  # no container running (a deleted pod's are all done: the pod is as good as gone)


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
        pod_ordinal: I64,
        plans: dict[int, WorkloadPlan],
        replica_set: list[bool],
        log: EventLog,
    ) -> None:
        self.scenario = scenario
        self.pod_template = pod_template
        self.pod_ordinal = pod_ordinal
        self.sets: dict[int, StatefulSetState] = {}
        self.set_pods: dict[int, I64] = {}
        for wi, w in enumerate(scenario.workloads):
            if w.kind != "StatefulSet":
                continue
            us = w.spec.update_strategy
            ru = us.rolling_update if us is not None else None
            self.sets[wi] = StatefulSetState(
                replicas=w.spec.replicas,
                update_revision=0,
                current_revision=0,
                policy=w.spec.pod_management_policy or "OrderedReady",
                strategy=us.type if us is not None else "RollingUpdate",
                partition=ru.partition if ru is not None else 0,
                max_unavailable=ru.max_unavailable if ru is not None else None,
            )
            self.set_pods[wi] = np.flatnonzero(pod_workload == wi)
        self.seen_sets_version = -1
        self.sets_dirty = True
        self.sets_wake: int = int(INF)
        self.log = log
        self.desired = [w.spec.replicas for w in scenario.workloads]
        self.min_ready = [w.spec.min_ready_seconds * 1000 for w in scenario.workloads]
        self.deployments: dict[int, DeploymentController] = {}
        self.rs: dict[tuple[int, int], _ReplicaSetRun] = {}  # (workload, template) → its ReplicaSet
        # ReplicaSets their Deployment claims (adoption.py): run as its own, under its key.
        self.adopted = adoptions(scenario)
        self.adopted_as: dict[int, tuple[int, int]] = {}  # ReplicaSet → (Deployment, template)
        self.adopting: list[int] = []  # Deployments whose run starts rolling from an adopted one
        for wi, w in enumerate(scenario.workloads):
            if not replica_set[wi] or wi in self.adopted:
                continue
            claimed: list[tuple[int, int]] = []  # (ReplicaSet, template)
            if w.kind == "Deployment":
                revisions = plans[wi].revisions
                names = {t: replica_set_name(w.name, r.key) for t, r in enumerate(revisions)}
                for rw, t in plans[wi].adopted.items():
                    names[t] = scenario.workloads[rw].name
                    claimed.append((rw, t))
                    self.adopted_as[rw] = (wi, t)
            else:
                names = {0: w.name}
            for t, name in names.items():
                owner = next((r for r, tt in claimed if tt == t), None)
                if owner is None:
                    pool = np.flatnonzero((pod_workload == wi) & (pod_template == t))
                else:
                    pool = np.flatnonzero(pod_workload == owner)
                self.rs[(wi, t)] = _ReplicaSetRun(wi, pool, name)
            if w.kind == "Deployment":
                strategy = w.spec.strategy
                assert strategy is not None
                rolling = strategy.rolling_update
                d = DeploymentState(
                    name=w.name,
                    replicas=w.spec.replicas,
                    template=0,
                    strategy=strategy.type,
                    max_surge=rolling.max_surge if rolling else "25%",
                    max_unavailable=rolling.max_unavailable if rolling else "25%",
                    paused=w.spec.paused,
                    progress_deadline_s=_deadline(w.spec.progress_deadline_seconds),
                    revision_history_limit=w.spec.revision_history_limit,
                    revision=1,
                )
                self.deployments[wi] = DeploymentController(d, names)
                for rw, t in claimed:
                    d.rs.append(_adopted_state(scenario.workloads[rw], t))
                if claimed:
                    # Its first sync (at 0) goes on from them: the adopted one of its template
                    # is scaled to the Deployment's replicas, or a new ReplicaSet is created with
                    # the revision after theirs and the old ones are scaled down as it comes up.
                    d.revision = 0
                    if not d.paused and any(r.template != 0 and r.replicas > 0 for r in d.rs):
                        self.adopting.append(wi)
                    continue
                if d.paused:
                    # Created paused: no ReplicaSet until it is resumed.
                    d.revision = 0
                    continue
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
        self.plans = plans
        # Each Deployment's ReplicaSets' spec.replicas as they change: (time, name, size), the
        # run's ``replicaset.<name>.replicas`` series (``size_series``).
        self.sizes: list[tuple[int, str, int]] = []
        self._size_of: dict[str, int] = {}
        self._note_sizes(0)
        self.dirty = True
        self.seen_version = -1
        self.seen_desired: list[int] = []
        self.wake: int = int(INF)

    def _note_sizes(self, t: int) -> None:
        for ctl in self.deployments.values():
            for r in ctl.d.rs:
                if self._size_of.get(r.name) != r.replicas:
                    self._size_of[r.name] = r.replicas
                    self.sizes.append((t, r.name, r.replicas))

    def spec_total(self, wi: int) -> int:
        """What a Deployment's unavailableReplicas counts against: the sum of its ReplicaSets'
        spec.replicas (surge included, kubelet.md §5.4); other workloads' desired count."""
        ctl = self.deployments.get(wi)
        if ctl is None:
            return self.desired[wi]
        return sum(r.replicas for r in ctl.d.rs)

    def names_of(self, wi: int) -> dict[int, str]:
        """ReplicaSet names by template."""
        return {t: run.name for (w, t), run in self.rs.items() if w == wi}

    # -- actions --------------------------------------------------------------------------

    def act(
        self, t: int, index: int, a: Rollout | Rollback | Restart | Scale | Pause | Resume | Partition
    ) -> None:
        """An action of spec.actions (``index``) on workload ``a.workload``."""
        wi = next(i for i, w in enumerate(self.scenario.workloads) if w.name == a.workload)
        self.dirty = self.sets_dirty = True
        if isinstance(a, Scale):
            self.desired[wi] = a.replicas
            return
        if wi in self.sets:
            if isinstance(a, Partition):
                # The next sync reads it: ordinals from it up go to the update revision
                # (updateStatefulSet's loop down to updateMin), those below stay.
                self.sets[wi].partition = a.partition
            elif not isinstance(a, Pause | Resume):
                self.sets[wi].update_revision = self.plans[wi].template_of[index]
            return
        ctl = self.deployments.get(wi)
        if ctl is None:
            return
        d = ctl.d
        if isinstance(a, Pause | Resume):
            d.paused = isinstance(a, Pause)
            return
        target = self.plans[wi].template_of[index]
        if isinstance(a, Rollback):
            # kubectl's deploymentRevision / previousReplicaSet (polymorphichelpers/rollback.go):
            # the revision among the ReplicaSets that exist now, not the plan's numbering,
            # which knows neither revisionHistoryLimit's cleanup nor a failed --to-revision.
            rs = d.revision_rs(a.to_revision or 0)
            if rs is None:
                msg = (
                    f"unable to find specified revision {a.to_revision} in history"
                    if a.to_revision
                    else "the previous revision's ReplicaSet was deleted (revisionHistoryLimit)"
                )
                self.log.add(t, "Warning", "RollbackRevisionNotFound", f"deployment/{d.name}", msg, "kubectl")
                return
            target = rs.template
        d.template = target

    # -- the step -------------------------------------------------------------------------

    def reconcile_sets(
        self, t: int, view: Callable[[], PodArrays], version: int
    ) -> tuple[list[int], list[int]]:
        """Every StatefulSet's controller (``statefulset.reconcile``) over its pods by ordinal:
        the slots to create (a free one of that ordinal and revision) and the pods to delete."""
        due = self.sets_dirty or version != self.seen_sets_version or t >= self.sets_wake
        if not self.sets or not due:
            return [], []
        s = view()
        self.sets_dirty = False
        self.seen_sets_version = version
        self.sets_wake = int(INF)
        create: list[int] = []
        delete: list[int] = []
        for wi, st in self.sets.items():
            st.replicas = self.desired[wi]
            min_ready = self.min_ready[wi]
            pods = self.set_pods[wi]
            live = pods[s.admitted[pods] & ~s.gone[pods]]
            by_ordinal: dict[int, int] = {}
            setpods: dict[int, SetPod] = {}
            for p in live.tolist():
                o = int(self.pod_ordinal[p])
                by_ordinal[o] = p
                ready = bool(s.ready[p] and s.started[p] and not s.deleting[p])
                since = int(s.ready_since[p]) + min_ready
                if ready and since > t:
                    self.sets_wake = min(self.sets_wake, since)
                setpods[o] = SetPod(
                    o, int(self.pod_template[p]), bool(s.deleting[p]), ready, ready and since <= t
                )
            d = reconcile(st, setpods)
            for o, rev in d.create:
                slot = pods[
                    (self.pod_ordinal[pods] == o) & (self.pod_template[pods] == rev) & ~s.admitted[pods]
                ]
                if slot.size == 0:
                    name = self.scenario.workloads[wi].name
                    msg = (
                        f"create Pod {name}-{o} in StatefulSet {name} failed: probesim ran out of its "
                        "pod slots, sized before the run (a probesim limit, not the cluster's)"
                    )
                    self.log.add(
                        t, "Warning", "FailedCreate", f"statefulset/{name}", msg, "statefulset-controller"
                    )
                    continue
                create.append(int(slot[0]))
            delete += [by_ordinal[o] for o in d.delete]
            # completeRollingUpdate: every replica at the update revision and Ready.
            updated = [v for o, v in setpods.items() if o < st.replicas and v.revision == st.update_revision]
            if len(updated) == st.replicas and all(v.running_ready for v in updated):
                st.current_revision = st.update_revision
        return create, delete

    def set_done(self, wi: int, s: PodArrays, t: int) -> bool:
        """``kubectl rollout status statefulset``: the replicas from the partition up are at the
        update revision, and every replica is Ready."""
        st = self.sets[wi]
        pods = self.set_pods[wi]
        live = pods[s.admitted[pods] & ~s.gone[pods] & ~s.deleting[pods]]
        ords = self.pod_ordinal[live]
        mine = live[ords < st.replicas]
        if mine.size != st.replicas or not bool(s.ready[mine].all()):
            return False
        upper = mine[self.pod_ordinal[mine] >= st.partition]
        return bool((self.pod_template[upper] == st.update_revision).all())

    def reconcile(self, t: int, view: Callable[[], PodArrays], version: int) -> tuple[list[int], list[int]]:
        """Deployment syncs, then every ReplicaSet's: the pods to create and to delete now.
        Skipped when nothing they read changed (``version``: the loop's pods; ``desired``;
        actions) and no time-driven change is due (a pod becoming available, a deadline)."""
        due = (
            self.dirty or version != self.seen_version or self.desired != self.seen_desired or t >= self.wake
        )
        if not due:
            return [], []
        s = view()
        self.dirty = False
        self.seen_version = version
        self.seen_desired = list(self.desired)
        self.wake = int(INF)
        create: list[int] = []
        delete: list[int] = []
        for wi, ctl in self.deployments.items():
            self._fill(wi, s, t)
            ctl.d.replicas = self.desired[wi]
            # Each sync's ReplicaSet updates bring the next sync at once (watch events): sync
            # until nothing more moves.
            before = ctl.d.status.condition("Progressing")
            was = (before.status, before.reason) if before is not None else None
            for _ in range(8):
                events = ctl.sync(t)
                for e in events:
                    obj = f"deployment/{ctl.d.name}"
                    self.log.add(t, e.type, e.reason, obj, e.message, "deployment-controller")
                if not events:
                    break
            after = ctl.d.status.condition("Progressing")
            if after is not None and after.reason == TIMED_OUT_REASON and was != ("False", TIMED_OUT_REASON):
                # No event in a cluster: kubectl rollout status and describe show the condition.
                msg = f"Deployment condition Progressing changed to False: {after.message}"
                self.log.add(
                    t, "Warning", TIMED_OUT_REASON, f"deployment/{ctl.d.name}", msg, "deployment-controller"
                )
            deadline = ctl.deadline_at()
            if deadline is not None:
                self.wake = min(self.wake, deadline + 1)
        self._note_sizes(t)
        for rw, (dw, tpl) in self.adopted_as.items():
            # An adopted ReplicaSet's spec.replicas is its Deployment's to set.
            r = next((r for r in self.deployments[dw].d.rs if r.template == tpl), None)
            self.desired[rw] = self.seen_desired[rw] = r.replicas if r is not None else 0
        wanted = {(wi, r.template): r.replicas for wi, ctl in self.deployments.items() for r in ctl.d.rs}
        for (wi, tpl), run in self.rs.items():
            want = wanted.get((wi, tpl), 0) if wi in self.deployments else self.desired[wi]
            pods = run.pool
            live = pods[s.admitted[pods] & ~s.deleting[pods]]
            if live.size < want:
                free = pods[~s.admitted[pods]][: want - live.size]
                if free.size < want - live.size:
                    msg = (
                        f"{want - live.size - free.size} pods not created: probesim ran out of this "
                        "ReplicaSet's pod slots, sized before the run from the replicas, the autoscaler "
                        "and the actions (a probesim limit, not the cluster's)"
                    )
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

    def rollout_done(self, wi: int, s: PodArrays, t: int) -> bool:
        """``kubectl rollout status``'s test on the pods as they are now: every replica updated
        and available, no old pod active (terminating ones do not count)."""
        ctl = self.deployments[wi]
        self._fill(wi, s, t)
        new = ctl.d.new_rs()
        n = ctl.d.replicas
        total = sum(r.status_replicas for r in ctl.d.rs)
        return new is not None and new.status_replicas == n and new.available == n and total == n

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
                # IsPodAvailable (pkg/api/v1/pod/util.go): LastTransitionTime + minReadySeconds
                # strictly before now; the ReplicaSet controller's updatePod requeues the set
                # MinReadySeconds*time.Second + time.Second after the pod turns Ready
                # (enqueueRSAfter, replica_set.go), when it first sees the pod available.
                at = s.ready_since[pods][ready] + min_ready
                r.available = int((at < t).sum())
                if (at >= t).any():
                    self.wake = min(self.wake, int(at[at >= t].min()) + 1000)
            else:
                r.available = r.ready
            r.pods = int((s.admitted[pods] & ~s.gone[pods] & ~(s.deleting[pods] & s.stopped[pods])).sum())


def _adopted_state(w: Workload, template: int) -> ReplicaSetState:
    """An adopted ReplicaSet as the Deployment controller reads it: its spec.replicas, its
    revision annotation (0 when it has none, as ``Revision`` reads a missing one) and the
    replicas annotations a Deployment left on it, if any. It existed before the run."""
    revision = annotation_int(w, REVISION, 64)
    return ReplicaSetState(
        name=w.name,
        template=template,
        revision=revision if revision is not None else 0,
        created=-1,
        replicas=w.spec.replicas,
        desired_annotation=annotation_int(w, DESIRED, 32),
        max_annotation=annotation_int(w, MAX, 32),
    )


def size_series(times: I64, sizes: list[tuple[int, str, int]]) -> dict[str, I64]:
    """``replicaset.<name>.replicas`` over ``times`` from the size changes (a change at ``t``
    holds from the first sample at or after ``t``; 0 before a ReplicaSet exists)."""
    out: dict[str, I64] = {}
    for t, name, n in sizes:
        col = out.setdefault(f"replicaset.{name}.replicas", np.zeros(times.size, np.int64))
        col[int(np.searchsorted(times, t, side="left")) :] = n
    return out


def _deadline(seconds: int | None) -> int | None:
    """``HasProgressDeadline``: MaxInt32 means none."""
    return None if seconds is None or seconds == 2**31 - 1 else seconds
