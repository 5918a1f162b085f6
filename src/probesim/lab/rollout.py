"""The lab's Deployment controller: the engine's controllers (``engine.controllers.workloads``:
the Deployment controller's syncs, each ReplicaSet's creations and deletions ranked as the
ReplicaSet controller ranks them) run over the lab's pods. The pods take the simulation's pod
slots (``engine.fleet``: names, revisions, templates, behaviours), so a rollout creates, names and
deletes the pods ``probesim run`` does, and its ScalingReplicaSet events and ReplicaSet sizes are
the simulation's rules applied to what really happened. ``lab.controller`` drives it over the
lab's pods; the runtime (``lab.runtime``) starts the new ones and stops the deleted ones with
their grace period.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from probesim.engine.behavior import INF
from probesim.engine.controllers.adoption import adoptions
from probesim.engine.controllers.deployment import TIMED_OUT_REASON
from probesim.engine.controllers.workloads import Controllers, PodArrays, size_series
from probesim.engine.events import EventLog
from probesim.engine.fleet import build
from probesim.errors import InputError
from probesim.kube.arithmetic import replica_set_name, resolve_fenceposts
from probesim.model.kubernetes import Container, PodSpec, Workload, pod_names_of
from probesim.model.scenario import (
    ContainerBehavior,
    DeletePod,
    Partition,
    Pause,
    Restart,
    Resume,
    Rollback,
    Rollout,
    Scale,
    Scenario,
    SetReadinessGate,
)
from probesim.results import CAUSES, Event, RolloutSummary

WORKLOAD_ACTIONS = (Rollout, Rollback, Restart, Scale, Pause, Resume, Partition)  # partition: refused below


@dataclass
class PodState:
    """What the controllers read of one lab pod (``lab.controller`` keeps it up to date)."""

    created_ms: int
    deleting: bool = False
    gone: bool = False
    ready: bool = False
    ready_since_ms: int = 0
    started: bool = False
    restarts: int = 0
    stopped: bool = True


@dataclass
class Slot:
    """A pod the controllers may create: its name, revision (template index) and what it runs."""

    index: int
    name: str
    template: int
    ordinal: int
    container: Container
    behavior: ContainerBehavior
    spec: PodSpec  # its revision's pod spec
    labels: dict[str, str]  # its revision's template's labels


@dataclass
class _Rollout:
    kind: str
    template: int
    start: int
    end: int | None = None
    stalled: int | None = None
    superseded: int | None = None


def has_actions(scenario: Scenario) -> bool:
    return any(isinstance(a, WORKLOAD_ACTIONS) for a in scenario.spec.actions)


def deletions_of(scenario: Scenario, workload: Workload) -> list[DeletePod]:
    """The scenario's ``kubectl delete pod`` actions of this workload's pods."""
    names = set(pod_names_of(workload))
    return [a for a in scenario.spec.actions if isinstance(a, DeletePod) and a.pod in names]


def has_actions_of(scenario: Scenario, workload: Workload) -> bool:
    """Whether the scenario's actions change this workload or delete its pods (its controller
    must run: a deleted pod's ReplicaSet replaces it)."""
    return any(
        isinstance(a, WORKLOAD_ACTIONS) and a.workload == workload.name for a in scenario.spec.actions
    ) or bool(deletions_of(scenario, workload))


def peak_pods(scenario: Scenario, workload: Workload) -> tuple[int, int]:
    """The most pods the workload has at once during the run (replicas + maxSurge at its
    largest size, when a rollout may run), and that largest size."""
    sizes = [workload.spec.replicas] + [
        a.replicas for a in scenario.spec.actions if isinstance(a, Scale) and a.workload == workload.name
    ]
    if workload.kind != "Deployment" or not has_actions_of(scenario, workload):
        return workload.spec.replicas, workload.spec.replicas
    strategy = workload.spec.strategy
    ru = strategy.rolling_update if strategy is not None else None
    rolling = strategy is None or strategy.type == "RollingUpdate"
    surge, unavailable = (ru.max_surge, ru.max_unavailable) if ru is not None else ("25%", "25%")
    peak = max(n + (resolve_fenceposts(surge, unavailable, n)[0] if rolling else 0) for n in sizes)
    if deletions_of(scenario, workload):  # a deleted pod's replacement starts as it terminates
        peak = max(peak, max(sizes) + 1)
    return peak, max(sizes)


def check_actions(scenario: Scenario, workloads: list[Workload], max_pods: int) -> None:
    """What the lab's controllers run: a Deployment's rollout, rollback, restart, scale, pause and
    resume, and the deletion of its pods, of the workloads the lab runs, with at most
    ``max_pods`` pods at once for each (replicas + maxSurge at the largest size)."""
    ran = {w.name: w for w in workloads}
    for claim in adoptions(scenario).values():
        d, rs = scenario.workloads[claim.deployment], scenario.workloads[claim.replica_set]
        if d.name in ran or rs.name in ran:
            raise InputError(
                f"Deployment {d.name} adopts ReplicaSet {rs.name} (its selector matches the ReplicaSet's "
                "labels): the lab does not run an adoption; probesim run simulates it",
                field="manifests",
            )
    for i, a in enumerate(scenario.spec.actions):
        where = f"spec.actions[{i}]"
        if isinstance(a, DeletePod):
            owner = next(w for w in scenario.workloads if a.pod in pod_names_of(w))  # (checked on load)
            if owner.name not in ran:
                raise InputError(
                    f"deletePod of {a.pod}: the lab runs {', '.join(ran)} only (--workload); run the lab "
                    f"with --workload {owner.name}, or drop the action",
                    field=where,
                )
            if owner.kind != "Deployment":
                raise InputError(
                    f"deletePod of {a.pod}: the lab deletes a Deployment's pods only (its ReplicaSet "
                    f"replaces them); probesim run simulates the deletion of {owner.kind} {owner.name}'s",
                    field=where,
                )
            continue
        if isinstance(a, SetReadinessGate):
            raise InputError(
                "the lab does not run readinessGate actions (no API server sets pod conditions here); "
                "probesim run simulates them",
                field=where,
            )
        if not isinstance(a, WORKLOAD_ACTIONS):
            continue
        workload = ran.get(a.workload)
        if workload is None:
            raise InputError(
                f"{a.kind} of {a.workload}: the lab runs {', '.join(ran)} only (--workload); run the lab "
                f"with --workload {a.workload}, or drop the action",
                field=where,
            )
        if workload.kind != "Deployment":
            raise InputError(
                f"{a.kind} of {workload.kind} {workload.name}: the lab runs a Deployment's rollouts only "
                "(probesim run simulates a StatefulSet's)",
                field=where,
            )
    for workload in workloads:
        peak, largest = peak_pods(scenario, workload)
        if has_actions_of(scenario, workload) and peak > max_pods:
            raise InputError(
                f"workload {workload.name}: up to {peak} pods at once during its rollout (replicas "
                f"{largest} + maxSurge): the lab runs at most {max_pods} pods (processes on this "
                "machine); lower its replicas or its maxSurge",
                field="spec.actions",
            )


class LabDeployment:
    """One Deployment's controllers over the lab's pods, keyed by the simulation's slot index."""

    def __init__(self, scenario: Scenario, workload: Workload) -> None:
        self.scenario = scenario
        f = build(scenario)
        self.fleet = f
        self.wi = next(i for i, w in enumerate(scenario.workloads) if w.name == workload.name)
        self.log = EventLog()
        mine = [i == self.wi for i in range(len(scenario.workloads))]
        plans = {self.wi: f.plans[self.wi]}
        self.controllers = Controllers(
            scenario, f.pod_workload, f.pod_template, f.pod_ordinal, plans, mine, self.log
        )
        self.n = f.n_pods
        self.state: dict[int, PodState] = {}
        self.actions = sorted(
            (a.at, i)
            for i, a in enumerate(scenario.spec.actions)
            if isinstance(a, WORKLOAD_ACTIONS) and a.workload == workload.name
        )
        self.applied = 0
        self.rollouts: list[_Rollout] = []
        self.rolled_to = 0
        self.version = 0

    def slot(self, p: int) -> Slot:
        """Slot ``p``: the pod the simulation would create there."""
        f = self.fleet
        tpl = int(f.pod_template[p])
        rw = f.plans[self.wi].revisions[tpl].workload
        name = rw.pod_spec.containers[0].name
        first = int(f.pod_first_container[p])
        c = next(c for c in range(first, f.n_containers) if f.container_name[c] == name)
        labels = rw.pod_labels
        if f.pod_labels is not None:
            labels = f.pod_labels.groups[int(f.pod_labels.group_of[p])]
        return Slot(
            p,
            f.pod_names[p],
            tpl,
            int(f.pod_ordinal[p]),
            f.container_spec[c],
            f.container_behavior[c],
            rw.pod_spec,
            labels,
        )

    def first_slots(self) -> list[int]:
        """The pods the Deployment's first ReplicaSet starts with (created as the run starts);
        none for a Deployment created paused (its first ReplicaSet comes when it is resumed)."""
        if not self.controllers.deployments[self.wi].d.rs:
            return []
        pool = self.controllers.rs[(self.wi, 0)].pool
        return [int(p) for p in pool[: self.scenario.workloads[self.wi].spec.replicas]]

    def likely_slots(self) -> list[int]:
        """The slots a run's rollouts will most likely fill: each revision an action makes
        current, up to the largest size (loaded ahead, before the clock starts)."""
        w = self.scenario.workloads[self.wi]
        plan = self.fleet.plans[self.wi]
        largest = max(
            [w.spec.replicas]
            + [
                a.replicas
                for a in self.scenario.spec.actions
                if isinstance(a, Scale) and a.workload == w.name
            ]
        )
        out: list[int] = []
        first = set(self.first_slots())
        if not first:  # created paused: its first pods come when it is resumed
            out += [int(p) for p in self.controllers.rs[(self.wi, 0)].pool[: w.spec.replicas]]
            first = set(out)
        for tpl in range(len(plan.revisions)):
            times = sum(1 for x in plan.template_of.values() if x == tpl)
            pool = [int(p) for p in self.controllers.rs[(self.wi, tpl)].pool if int(p) not in first]
            out += pool[: times * largest]
        return out

    def revision_names(self) -> list[tuple[str, str]]:
        """Each revision's ReplicaSet name and where its template comes from."""
        w = self.scenario.workloads[self.wi]
        return [(replica_set_name(w.name, r.key), r.origin) for r in self.fleet.plans[self.wi].revisions]

    def template_named(self, key: str) -> int:
        """A revision as ``--command-for`` names it: its number in the order the run makes them
        (1 the manifest's, 2 the first rollout's or restart's, …) or its ReplicaSet's name."""
        names = self.revision_names()
        for i, (name, _) in enumerate(names):
            if key in (str(i + 1), name):
                return i
        known = ", ".join(f"{i + 1} or {name} ({origin})" for i, (name, origin) in enumerate(names))
        raise InputError(
            f"{key!r} is not a revision of the scenario's workload; it has: {known}", field="--command-for"
        )

    def _view(self) -> PodArrays:
        n = self.n
        admitted = np.zeros(n, bool)
        deleting = np.zeros(n, bool)
        gone = np.zeros(n, bool)
        ready = np.zeros(n, bool)
        ready_since = np.zeros(n, np.int64)
        admitted_at = np.full(n, INF, np.int64)
        started = np.zeros(n, bool)
        restarts = np.zeros(n, np.int64)
        stopped = np.zeros(n, bool)
        for p, s in self.state.items():
            admitted[p] = True
            deleting[p] = s.deleting
            gone[p] = s.gone
            ready[p] = s.ready
            ready_since[p] = s.ready_since_ms
            admitted_at[p] = s.created_ms
            started[p] = s.started
            restarts[p] = s.restarts
            stopped[p] = s.stopped
        return PodArrays(
            admitted, deleting, gone, ready, ready_since, admitted_at, started, restarts, stopped
        )

    def step(self, t: int) -> tuple[list[int], list[int], list[Event]]:
        """At ``t`` (ms): the actions due, the controllers' syncs over the pods as they are; the
        slots to create, the slots to delete, and the events recorded."""
        c = self.controllers
        while self.applied < len(self.actions) and self.actions[self.applied][0] <= t:
            i = self.actions[self.applied][1]
            self.applied += 1
            a = self.scenario.spec.actions[i]
            assert isinstance(a, WORKLOAD_ACTIONS)
            c.act(t, i, a)
            d = c.deployments[self.wi].d
            if not d.paused and d.template != self.rolled_to:
                for r in self.rollouts:
                    if r.end is None and r.superseded is None:
                        r.superseded = t
                self.rollouts.append(_Rollout(a.kind, d.template, t))
                self.rolled_to = d.template
        self.version += 1  # the pods change for real between steps: always look
        create, delete = c.reconcile(t, self._view, self.version)
        for p in create:
            self.state[p] = PodState(created_ms=t)
        view = self._view()
        d = c.deployments[self.wi].d
        for r in self.rollouts:
            if r.end is not None or r.superseded is not None:
                continue
            if d.template == r.template and c.rollout_done(self.wi, view, t):
                r.end = t
                continue
            cond = d.status.condition("Progressing")
            if r.stalled is None and cond is not None and cond.reason == TIMED_OUT_REASON:
                r.stalled = t
        events, self.log.events = self.log.events, []
        return create, delete, events

    def series(self, times: np.ndarray) -> dict[str, np.ndarray]:
        """``replicaset.<name>.replicas`` over the lab's sample times, as the simulation records it."""
        return size_series(times.astype(np.int64), self.controllers.sizes)

    def summaries(
        self, times: np.ndarray, ready: np.ndarray, available: np.ndarray, failed: list[dict[str, int]]
    ) -> list[RolloutSummary]:
        """Each rollout as the simulation summarises it; ``failed``: per sample, the requests
        failed so far by cause (the workload's routes together)."""
        w = self.scenario.workloads[self.wi]
        plan = self.fleet.plans[self.wi]
        out = []
        for r in self.rollouts:
            stop = r.end if r.end is not None else r.superseded
            span = (times >= r.start) & (times <= stop if stop is not None else True)
            idx = np.flatnonzero(span)
            by_cause: dict[str, int] = {}
            if idx.size:
                before = failed[idx[0] - 1] if idx[0] > 0 else {}
                last = failed[idx[-1]]
                by_cause = {c: last.get(c, 0) - before.get(c, 0) for c in CAUSES}
            out.append(
                RolloutSummary(
                    workload=w.name,
                    action=r.kind,
                    revision=replica_set_name(w.name, plan.revisions[r.template].key),
                    origin=plan.revisions[r.template].origin,
                    start_ms=r.start,
                    end_ms=r.end,
                    stalled_ms=r.stalled,
                    superseded_ms=r.superseded,
                    min_ready=int(ready[span].min()) if idx.size else 0,
                    min_available=int(available[span].min()) if idx.size else 0,
                    failed={c: n for c, n in by_cause.items() if n},
                )
            )
        return out
