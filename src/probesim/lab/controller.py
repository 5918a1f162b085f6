"""Driving the lab's Deployment controller (``lab.rollout``, the engine's controllers) over the
lab's pods, one round per sample: what the pods really did goes in, the actions due and the
ReplicaSets' syncs run, and the pods they create are admitted (the runtime starts them after
the cluster's pod start delay) and those they delete are terminated with their grace period.
The pods a run's rollouts will likely create are made (and their test apps loaded) ahead."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine

from probesim.lab.clock import Clock
from probesim.lab.pods import Pod, new_pod
from probesim.lab.rollout import LabDeployment, PodState, deletions_of
from probesim.lab.runtime import Runtime
from probesim.model.kubernetes import Workload
from probesim.model.scenario import Scenario
from probesim.results import Event


class Controller:
    def __init__(
        self,
        scenario: Scenario,
        workload: Workload,
        clock: Clock,
        runtime: Runtime,
        commands: dict[str, list[str]],
        command: list[str] | None,
    ) -> None:
        """``commands``: a command per revision (``--command-for``: its number or ReplicaSet
        name), else ``command`` for all."""
        self.scenario = scenario
        self.workload = workload
        self.clock = clock
        self.runtime = runtime
        self.deployment = LabDeployment(scenario, workload)
        self.command = command
        self.commands = {self.deployment.template_named(k): argv for k, argv in commands.items()}
        self.future: dict[int, Pod] = {}  # pods the controllers will likely create, loaded ahead
        # With nodes (lab.nodes): the pods it creates go to the scheduler, which admits them.
        self.to_place: Callable[[Pod], None] | None = None
        # ``kubectl delete pod`` of its pods, by time (as the simulation: before the syncs).
        self.deletions = sorted((a.at, a.pod) for a in deletions_of(scenario, workload))
        self.deleted = 0

    def slot_pod(self, p: int) -> Pod:
        """The pod of the simulation's slot ``p``: its name, revision, pod spec, container and
        behaviour."""
        slot = self.deployment.slot(p)
        pod = new_pod(
            slot.name,
            slot.ordinal,
            self.workload.name,
            slot.spec,
            slot.labels,
            slot.container,
            slot.behavior,
            self.commands.get(slot.template, self.command),
        )
        pod.slot, pod.template = p, slot.template
        return pod

    def first_pods(self) -> list[Pod]:
        """The first ReplicaSet's pods (created as the run starts), and those of the rollouts
        and deletions to come, made ahead."""
        self.future = {p: self.slot_pod(p) for p in self.deployment.likely_slots()}
        for p in self.replacement_slots(len(self.deletions)):
            self.future.setdefault(p, self.slot_pod(p))
        return [self.slot_pod(p) for p in self.deployment.first_slots()]

    def replacement_slots(self, k: int) -> list[int]:
        """The slots the first ReplicaSet fills next, as it replaces ``k`` of its pods."""
        first = set(self.deployment.first_slots())
        pool = [int(p) for p in self.deployment.controllers.rs[(self.deployment.wi, 0)].pool]
        return [p for p in pool if p not in first][:k]

    def begin(self, pods: list[Pod]) -> None:
        for pod in pods:  # the first ReplicaSet's, as the run starts
            if pod.workload == self.workload.name:
                self.deployment.state[pod.slot] = PodState(created_ms=0)

    def _delete_due(self, mine: list[Pod], now: int) -> list[Event]:
        """``kubectl delete pod NAME`` at its time (engine/workload_actions.py ``_named``): the pod
        of that name, Terminating now (its ReplicaSet replaces it in this round's sync), its
        container stopped with its grace period; ``pods "NAME" not found`` when none is left."""
        events = []
        while self.deleted < len(self.deletions) and self.deletions[self.deleted][0] <= now:
            name = self.deletions[self.deleted][1]
            self.deleted += 1
            live = [p for p in mine if p.name == name and not p.gone]
            if not live:
                msg = f'Error from server (NotFound): pods "{name}" not found'
                events.append(Event(now, "Warning", "NotFound", f"pod/{name}", msg, "kubectl"))
                continue
            pod = live[-1]
            if pod.deleting:  # a second delete does not shorten its grace period
                continue
            pod.deleting = True
            self.deployment.state[pod.slot].deleting = True
            self.runtime.kills.add(asyncio.create_task(self.runtime.terminate(pod)))
        return events

    def round(
        self,
        pods: list[Pod],
        admit: Callable[[Pod, float], Coroutine[None, None, None]],
        tasks: list[asyncio.Task[None]],
    ) -> list[Event]:
        """One round (``lab.rollout``): the actions due, the ReplicaSets' sizes, the pods they
        create (appended to ``pods`` and admitted) and delete (terminated); the events."""
        mine = [p for p in pods if p.workload == self.workload.name]
        for pod in mine:
            st = self.deployment.state[pod.slot]
            st.deleting, st.gone, st.ready = pod.deleting, pod.gone, pod.ready and not pod.gone
            st.ready_since_ms, st.restarts = pod.ready_since, pod.run.restarts
            st.started, st.stopped = pod.run.instance >= 0, pod.run.proc is None
        now = self.clock.now_ms()
        deleted = self._delete_due(mine, now)
        create, delete, events = self.deployment.step(now)
        events = deleted + events
        delay = self.scenario.spec.cluster.pod_start_delay / 1000
        for p in create:
            pod = self.future.pop(p) if p in self.future else self.slot_pod(p)
            pod.created_ms = now
            self.runtime.open_log(pod)
            pods.append(pod)
            if self.to_place is not None:
                self.to_place(pod)
                continue
            events.append(
                Event(
                    now,
                    "Normal",
                    "Scheduled",
                    f"pod/{pod.name}",
                    f"Successfully assigned {self.workload.metadata.namespace}/{pod.name} to node-1",
                    "default-scheduler",
                )
            )
            tasks.append(asyncio.create_task(admit(pod, delay)))
        for p in delete:
            pod = next(x for x in pods if x.workload == self.workload.name and x.slot == p)
            self.runtime.kills.add(asyncio.create_task(self.runtime.terminate(pod)))
        return events
