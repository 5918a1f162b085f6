"""The Deployment controller: ``syncDeployment`` and what it calls, one sync at a time, over a
Deployment's state and its ReplicaSets' (pkg/controller/deployment: deployment_controller.go,
sync.go, rolling.go, recreate.go, progress.go, util/deployment_util.go).

The caller fills each ReplicaSet's status (``status_replicas``, ``ready``, ``available``, ``pods``)
from its pods before a sync and applies what the sync decided: the ReplicaSets' ``replicas``
(their ReplicaSet controller creates or deletes pods to match), ReplicaSets created (a template
with no ReplicaSet yet) or deleted (``revisionHistoryLimit``), and the events returned, recorded
on the Deployment as kubectl shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from probesim.engine.controllers.conditions import Condition, DeploymentStatus
from probesim.kube.arithmetic import (
    IntOrPercent,
    deployment_limits,
    round_to_int,
)

# Condition reasons (deployment_util.go).
NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"
MIN_AVAILABLE_REASON = "MinimumReplicasAvailable"
MIN_UNAVAILABLE_REASON = "MinimumReplicasUnavailable"


@dataclass
class ReplicaSetState:
    """A ReplicaSet the Deployment owns: its spec, the annotations the controller reads back,
    and its status (filled by the caller before each sync)."""

    name: str
    template: int  # which pod template (the caller's index); a ReplicaSet never changes it
    revision: int  # deployment.kubernetes.io/revision
    created: int  # creationTimestamp, ms: ReplicaSetsByCreationTimestamp (then name)
    replicas: int = 0  # spec.replicas
    desired_annotation: int | None = None  # deployment.kubernetes.io/desired-replicas
    max_annotation: int | None = None  # deployment.kubernetes.io/max-replicas
    status_replicas: int = 0  # active pods (not terminal, not being deleted)
    ready: int = 0
    available: int = 0
    pods: int = 0  # pods that exist, terminating ones included (Recreate waits for them)


@dataclass
class ControllerEvent:
    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass
class DeploymentState:
    """A Deployment's spec (as the scenario's actions change it) and status, and its
    ReplicaSets. ``template`` is the current pod template (the caller's index); ``name_of``
    gives the name of a ReplicaSet for a template (``<deployment>-<pod-template-hash>``)."""

    name: str
    replicas: int
    template: int
    strategy: Literal["RollingUpdate", "Recreate"] = "RollingUpdate"
    max_surge: IntOrPercent = "25%"
    max_unavailable: IntOrPercent = "25%"
    paused: bool = False
    progress_deadline_s: int | None = 600  # None: no deadline (the API's MaxInt32 sentinel)
    revision_history_limit: int | None = 10
    rs: list[ReplicaSetState] = field(default_factory=list)
    status: DeploymentStatus = field(default_factory=DeploymentStatus)
    revision: int = 0  # the Deployment's deployment.kubernetes.io/revision

    # -- the fenceposts -------------------------------------------------------------------

    def max_surge_n(self) -> int:
        """``MaxSurge``: 0 unless RollingUpdate."""
        if self.strategy != "RollingUpdate":
            return 0
        return deployment_limits(self.max_surge, self.max_unavailable, self.replicas)[0]

    def max_unavailable_n(self) -> int:
        """``MaxUnavailable``: 0 unless RollingUpdate or with 0 replicas; at most ``replicas``."""
        if self.strategy != "RollingUpdate":
            return 0
        return deployment_limits(self.max_surge, self.max_unavailable, self.replicas)[1]

    # -- queries --------------------------------------------------------------------------

    def new_rs(self) -> ReplicaSetState | None:
        """``FindNewReplicaSet``: the oldest ReplicaSet whose template is the Deployment's."""
        same = [r for r in self.rs if r.template == self.template]
        return min(same, key=lambda r: (r.created, r.name)) if same else None

    def old_rs(self) -> list[ReplicaSetState]:
        new = self.new_rs()
        return [r for r in self.rs if r is not new]

    def revision_rs(self, revision: int) -> ReplicaSetState | None:
        """kubectl rollout undo's ``deploymentRevision``: the ReplicaSet of ``revision``, or with
        0 the one before the newest."""
        if revision:
            return next((r for r in self.rs if r.revision == revision), None)
        ordered = sorted(self.rs, key=lambda r: r.revision, reverse=True)
        return ordered[1] if len(ordered) > 1 else None


class DeploymentController:
    """One Deployment's controller. ``name_of(template)`` names a new ReplicaSet."""

    def __init__(self, d: DeploymentState, name_of: dict[int, str]) -> None:
        self.d = d
        self.name_of = name_of
        self.events: list[ControllerEvent] = []

    # -- scaling --------------------------------------------------------------------------

    def _scale(self, rs: ReplicaSetState, n: int, operation: str = "") -> bool:
        """``scaleReplicaSet``: the size and the replicas annotations; an event when the size
        changes ("Scaled up replica set web-6d8f from 1 to 2")."""
        d = self.d
        size_changed = rs.replicas != n
        rs.desired_annotation = d.replicas
        rs.max_annotation = d.replicas + d.max_surge_n()
        if not size_changed:
            return False
        verb = "up" if rs.replicas < n else "down"
        self.events.append(
            ControllerEvent(
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {verb} replica set {rs.name} from {rs.replicas} to {n}",
            )
        )
        rs.replicas = n
        return True

    def _new_rs_replicas(self, all_rs: list[ReplicaSetState], new: ReplicaSetState) -> int:
        """``NewRSNewReplicas``: RollingUpdate grows the new ReplicaSet up to ``replicas +
        maxSurge`` pods in all (counting every ReplicaSet's spec.replicas, not its pods), never
        beyond ``replicas``; Recreate takes it to ``replicas`` at once."""
        d = self.d
        if d.strategy == "Recreate":
            return d.replicas
        current = sum(r.replicas for r in all_rs)
        max_total = d.replicas + d.max_surge_n()
        if current >= max_total:
            return new.replicas
        return new.replicas + min(max_total - current, d.replicas - new.replicas)

    # -- getAllReplicaSetsAndSyncRevision ---------------------------------------------------

    def _sync_revision(self, now: int, create: bool) -> ReplicaSetState | None:
        d = self.d
        old = d.old_rs()
        new_revision = max((r.revision for r in old), default=0) + 1
        new = d.new_rs()
        if new is not None:
            # A rollback to this template, or a resync: the revision moves to the newest.
            if new.revision < new_revision:
                new.revision = new_revision
            d.revision = new.revision
            cond = d.status.condition("Progressing")
            if d.progress_deadline_s is not None and cond is None:
                d.status.set_condition(
                    Condition(
                        "Progressing",
                        "True",
                        FOUND_NEW_RS_REASON,
                        f'Found new replica set "{new.name}"',
                        now,
                        now,
                    )
                )
            return new
        if not create:
            return None
        rs = ReplicaSetState(
            name=self.name_of[d.template], template=d.template, revision=new_revision, created=now
        )
        rs.replicas = self._new_rs_replicas([*old, rs], rs)
        rs.desired_annotation = d.replicas
        rs.max_annotation = d.replicas + d.max_surge_n()
        d.rs.append(rs)
        d.revision = new_revision
        if rs.replicas > 0:
            self.events.append(
                ControllerEvent(
                    "Normal", "ScalingReplicaSet", f"Scaled up replica set {rs.name} from 0 to {rs.replicas}"
                )
            )
        if d.progress_deadline_s is not None:
            d.status.set_condition(
                Condition(
                    "Progressing", "True", NEW_RS_REASON, f'Created new replica set "{rs.name}"', now, now
                )
            )
        return rs

    # -- syncDeployment -------------------------------------------------------------------

    def sync(self, now: int) -> list[ControllerEvent]:
        """One ``syncDeployment`` at ``now`` (ms); returns the events it recorded."""
        self.events = []
        d = self.d
        self._check_paused(now)
        if d.paused or self._is_scaling_event(now):
            self._sync_scale(now)
        elif d.strategy == "Recreate":
            self._rollout_recreate(now)
        else:
            self._rollout_rolling(now)
        return self.events

    def _check_paused(self, now: int) -> None:
        """``checkPausedConditions``: Progressing Unknown while paused, and on resuming."""
        d = self.d
        if d.progress_deadline_s is None:
            return
        cond = d.status.condition("Progressing")
        paused_cond = cond is not None and cond.reason == PAUSED_REASON
        if d.paused and not paused_cond:
            d.status.set_condition(
                Condition("Progressing", "Unknown", PAUSED_REASON, "Deployment is paused", now, now)
            )
        elif not d.paused and paused_cond:
            d.status.set_condition(
                Condition("Progressing", "Unknown", RESUMED_REASON, "Deployment is resumed", now, now)
            )

    def _is_scaling_event(self, now: int) -> bool:
        """``isScalingEvent``: an active ReplicaSet's desired-replicas annotation differs from
        the Deployment's replicas (someone — the HPA, a scale action — changed them)."""
        d = self.d
        if d.new_rs() is None:
            return False
        self._sync_revision(now, create=False)
        return any(
            r.desired_annotation is not None and r.desired_annotation != d.replicas
            for r in d.rs
            if r.replicas > 0
        )

    def _sync_scale(self, now: int) -> None:
        """``sync``: scale (proportionally during a rollout), no new ReplicaSet; cleanup when
        paused; status without touching Progressing."""
        d = self.d
        new = self._sync_revision(now, create=False)
        self._proportional(new)
        if d.paused:
            self._cleanup()
        self._status(now, rollout=False)

    def _proportional(self, new: ReplicaSetState | None) -> None:
        """``scale``: the one active ReplicaSet (or the newest) takes the Deployment's replicas;
        a saturated new one scales the old ones to 0; otherwise, in a RollingUpdate, the
        difference to ``replicas + maxSurge`` is shared in proportion to each active
        ReplicaSet's size (``GetProportion``: size × new max / the max it was last scaled for,
        rounded), largest first (newer first among equals when adding, older first when
        removing), and what rounding leaves over goes to the largest."""
        d = self.d
        old = d.old_rs()
        active = [r for r in d.rs if r.replicas > 0]
        target: ReplicaSetState | None = None
        if len(active) == 1:
            target = active[0]
        elif not active:
            target = new if new is not None else max(old, key=lambda r: (r.created, r.name), default=None)
        if target is not None or not d.rs:
            if target is not None and target.replicas != d.replicas:
                self._scale(target, d.replicas)
            return
        if new is not None and self._saturated(new):
            for r in old:
                if r.replicas > 0:
                    self._scale(r, 0)
            return
        if d.strategy != "RollingUpdate":
            return
        total = sum(r.replicas for r in active)
        allowed = d.replicas + d.max_surge_n() if d.replicas > 0 else 0
        to_add = allowed - total
        if to_add > 0:  # ReplicaSetsBySizeNewer
            active.sort(key=lambda r: (-r.replicas, -r.created, r.name))
        elif to_add < 0:  # ReplicaSetsBySizeOlder
            active.sort(key=lambda r: (-r.replicas, r.created, r.name))
        added = 0
        sizes = []
        for r in active:
            p = self._proportion(r, to_add, added) if to_add else 0
            sizes.append(r.replicas + p)
            added += p
        for i, r in enumerate(active):
            size = sizes[i]
            if i == 0 and to_add:
                size = max(size + to_add - added, 0)
            self._scale(r, size)

    def _proportion(self, rs: ReplicaSetState, to_add: int, added: int) -> int:
        """``GetProportion`` / ``getReplicaSetFraction``."""
        d = self.d
        if rs.replicas == 0 or to_add == 0 or to_add == added:
            return 0
        if d.replicas == 0:
            fraction = -rs.replicas
        else:
            max_now = d.replicas + d.max_surge_n()
            before = rs.max_annotation or d.status.replicas
            fraction = round_to_int(rs.replicas * max_now / before) - rs.replicas if before else 0
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    def _saturated(self, rs: ReplicaSetState) -> bool:
        """``IsSaturated``: the new ReplicaSet has all the replicas, wants them, and has them available."""
        d = self.d
        return (
            rs.replicas == d.replicas and rs.desired_annotation == d.replicas and rs.available == d.replicas
        )

    # -- RollingUpdate --------------------------------------------------------------------

    def _rollout_rolling(self, now: int) -> None:
        """``rolloutRolling``: scale the new ReplicaSet up if it may; else the old ones down if
        they may; else clean up history once complete. Then the rollout status."""
        d = self.d
        new = self._sync_revision(now, create=True)
        assert new is not None
        all_rs = d.rs
        if self._reconcile_new(all_rs, new):
            self._status(now, rollout=True)
            return
        scaled_old = self._reconcile_old(all_rs, new)
        if scaled_old is None:
            return  # the sync failed (cleanupUnhealthyReplicas); requeued with fresh status
        if scaled_old:
            self._status(now, rollout=True)
            return
        if self._complete(d.status):
            self._cleanup()
        self._status(now, rollout=True)

    def _reconcile_new(self, all_rs: list[ReplicaSetState], new: ReplicaSetState) -> bool:
        d = self.d
        if new.replicas == d.replicas:
            return False
        if new.replicas > d.replicas:
            return self._scale(new, d.replicas)
        return self._scale(new, self._new_rs_replicas(all_rs, new))

    def _reconcile_old(self, all_rs: list[ReplicaSetState], new: ReplicaSetState) -> bool | None:
        """``reconcileOldReplicaSets``: at most ``all − (replicas − maxUnavailable) − the new
        ReplicaSet's unavailable`` come down: first old pods that are not available
        (``cleanupUnhealthyReplicas``), then available ones while the available count stays
        above ``replicas − maxUnavailable``, oldest ReplicaSet first. None: the sync failed, as
        when a stale available count above an old ReplicaSet's size (it was just scaled down
        proportionally) would scale it up ("got invalid request to scale down")."""
        d = self.d
        old = sorted((r for r in d.rs if r is not new and r.replicas > 0), key=lambda r: (r.created, r.name))
        if sum(r.replicas for r in old) == 0:
            return False
        all_pods = sum(r.replicas for r in all_rs)
        min_available = d.replicas - d.max_unavailable_n()
        new_unavailable = new.replicas - new.available
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        cleaned = 0
        for r in old:
            if cleaned >= max_scaled_down:
                break
            if r.replicas == 0 or r.replicas == r.available:
                continue
            n = min(max_scaled_down - cleaned, r.replicas - r.available)
            if n < 0:
                return None  # cleanupUnhealthyReplicas never scales an old ReplicaSet up
            self._scale(r, r.replicas - n)
            cleaned += n
        # scaleDownOldReplicaSetsForRollingUpdate
        available = sum(r.available for r in all_rs)
        scaled = 0
        if available > min_available:
            budget = available - min_available
            for r in old:
                if scaled >= budget:
                    break
                if r.replicas == 0:
                    continue
                n = min(r.replicas, budget - scaled)
                self._scale(r, r.replicas - n)
                scaled += n
        return cleaned + scaled > 0

    # -- Recreate -------------------------------------------------------------------------

    def _rollout_recreate(self, now: int) -> None:
        """``rolloutRecreate``: every old ReplicaSet to 0; nothing more while any old pod exists
        (terminating ones too); then the new ReplicaSet, created only now, at full size."""
        d = self.d
        new = self._sync_revision(now, create=False)
        old = [r for r in d.rs if r is not new]
        scaled = False
        for r in old:
            if r.replicas:
                scaled = self._scale(r, 0) or scaled
        if scaled or any(r.pods > 0 or r.status_replicas > 0 for r in old):
            self._status(now, rollout=True)
            return
        if new is None:
            new = self._sync_revision(now, create=True)
            assert new is not None
        self._scale(new, d.replicas)
        if self._complete(d.status):
            self._cleanup()
        self._status(now, rollout=True)

    # -- history and status ---------------------------------------------------------------

    def _cleanup(self) -> None:
        """``cleanupDeployment``: old ReplicaSets beyond ``revisionHistoryLimit`` are deleted,
        lowest revision first, once they are at 0 replicas with no active pod."""
        d = self.d
        if d.revision_history_limit is None:
            return
        new = d.new_rs()
        old = sorted((r for r in d.rs if r is not new), key=lambda r: r.revision)
        diff = len(old) - d.revision_history_limit
        for r in old[: max(diff, 0)]:
            if r.replicas == 0 and r.status_replicas == 0:
                d.rs.remove(r)

    def _complete(self, s: DeploymentStatus) -> bool:
        """``DeploymentComplete``."""
        n = self.d.replicas
        return s.updated == n and s.replicas == n and s.available == n

    def _calculate(self, now: int) -> DeploymentStatus:
        """``calculateStatus``: sums over the ReplicaSets; ``unavailable`` against the sum of
        their spec.replicas (surge included); the Available condition."""
        d = self.d
        new = d.new_rs()
        s = d.status.copy()
        s.replicas = sum(r.status_replicas for r in d.rs)
        s.updated = new.status_replicas if new is not None else 0
        s.ready = sum(r.ready for r in d.rs)
        s.available = sum(r.available for r in d.rs)
        s.unavailable = max(sum(r.replicas for r in d.rs) - s.available, 0)
        if s.available >= d.replicas - d.max_unavailable_n():
            s.set_condition(
                Condition(
                    "Available",
                    "True",
                    MIN_AVAILABLE_REASON,
                    "Deployment has minimum availability.",
                    now,
                    now,
                )
            )
        else:
            s.set_condition(
                Condition(
                    "Available",
                    "False",
                    MIN_UNAVAILABLE_REASON,
                    "Deployment does not have minimum availability.",
                    now,
                    now,
                )
            )
        return s

    def _status(self, now: int, rollout: bool) -> None:
        """``syncRolloutStatus`` (``rollout``) or ``syncDeploymentStatus``. Progressing: True
        NewReplicaSetAvailable when complete; True ReplicaSetUpdated, with a new update time,
        whenever the new ReplicaSet grew, an old one shrank or more pods are ready or
        available; False ProgressDeadlineExceeded once the last update is more than
        ``progressDeadlineSeconds`` old (``from.Add(delta).Before(now)``: strictly after)."""
        d = self.d
        old_status = d.status
        s = self._calculate(now)
        if not rollout:
            d.status = s
            return
        if d.progress_deadline_s is None:
            s.remove_condition("Progressing")
        cur = old_status.condition("Progressing")
        complete_before = (
            s.replicas == s.updated and cur is not None and cur.reason == NEW_RS_AVAILABLE_REASON
        )
        new = d.new_rs()
        subject = f'ReplicaSet "{new.name}"' if new is not None else f'Deployment "{d.name}"'
        if d.progress_deadline_s is not None and not complete_before:
            if self._complete(s):
                s.set_condition(
                    Condition(
                        "Progressing",
                        "True",
                        NEW_RS_AVAILABLE_REASON,
                        f"{subject} has successfully progressed.",
                        now,
                        now,
                    )
                )
            elif self._progressing(old_status, s):
                c = Condition(
                    "Progressing", "True", RS_UPDATED_REASON, f"{subject} is progressing.", now, now
                )
                if cur is not None:
                    if cur.status == "True":
                        c.last_transition = cur.last_transition
                    s.remove_condition("Progressing")
                s.set_condition(c)
            elif self._timed_out(s, now):
                s.set_condition(
                    Condition(
                        "Progressing",
                        "False",
                        TIMED_OUT_REASON,
                        f"{subject} has timed out progressing.",
                        now,
                        now,
                    )
                )
        d.status = s

    @staticmethod
    def _progressing(old: DeploymentStatus, new: DeploymentStatus) -> bool:
        """``DeploymentProgressing``."""
        return (
            new.updated > old.updated
            or (new.replicas - new.updated) < (old.replicas - old.updated)
            or new.ready > old.ready
            or new.available > old.available
        )

    def _timed_out(self, s: DeploymentStatus, now: int) -> bool:
        """``DeploymentTimedOut``."""
        d = self.d
        c = s.condition("Progressing")
        if d.progress_deadline_s is None or c is None or c.reason == NEW_RS_AVAILABLE_REASON:
            return False
        if c.reason == TIMED_OUT_REASON:
            return True
        return c.last_update + d.progress_deadline_s * 1000 < now

    def deadline_at(self) -> int | None:
        """When the Progressing condition would time out (the controller requeues itself for
        it), if it is counting."""
        d = self.d
        c = d.status.condition("Progressing")
        if d.progress_deadline_s is None or c is None or d.paused:
            return None
        if c.reason in (NEW_RS_AVAILABLE_REASON, TIMED_OUT_REASON, PAUSED_REASON):
            return None
        return c.last_update + d.progress_deadline_s * 1000
