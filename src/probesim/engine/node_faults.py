"""What a node's failure and return do to the pods bound to it, and the control plane's
decisions (engine/nodes.py) carried out: the loop's Simulation inherits these steps (as Traffic
inherits the serving phase), over the state it holds.

A failed node's pods answer nothing (PodStatus ``unreachable``: no answer, no reset, what they
held times out) and their status in the API stays as it was; after a crash their containers and
probes stop (the kubelet went with the node), after a partition the kubelet goes on unheard. Its
return: a crashed node's kubelet starts the containers of the pods still bound anew and removes
those deleted meanwhile; a partitioned node's stops the deleted ones with their grace period.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.containers import Containers
from probesim.engine.events import EventLog
from probesim.engine.fleet import Fleet
from probesim.engine.kubelet import ProbeWorkers
from probesim.engine.nodes import CRASHED, PARTITIONED, UP, Nodes
from probesim.engine.pod_status import PodStatus
from probesim.engine.traffic import Traffic
from probesim.model.nodes import NodeDown, NodeUp, ZoneDown, ZoneUp

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


class NodeFaults:
    """The node steps of a run (engine/loop.py's Simulation, which sets these)."""

    nodes: Nodes
    pods: PodStatus
    fleet: Fleet
    ctr: Containers
    workers: dict[str, ProbeWorkers]
    traffic: Traffic
    log: EventLog
    ready: B
    ready_transition: I64
    ready_since: I64
    spaces: list[str]
    dirty: bool

    def _delete(self, t: int, victims: list[int], grace: int | None = None) -> None:
        raise NotImplementedError  # (the Simulation's)

    def _kubelet_admit(self, new: I64, t: int) -> None:
        raise NotImplementedError

    def _kubelet_stop(self, p: int, t: int, grace: int | None = None) -> None:
        raise NotImplementedError

    def _containers_of(self, p: int) -> slice:
        raise NotImplementedError

    def _node_action(self, t: int, a: NodeDown | ZoneDown | NodeUp | ZoneUp) -> None:
        """A node (or every node of a zone) fails or comes back."""
        nodes = self.nodes
        if isinstance(a, NodeDown | NodeUp):
            which = nodes.nodes_of(node=a.node)
        else:
            which = nodes.nodes_of(zone=a.zone)
        for n in which:
            if isinstance(a, NodeDown | ZoneDown) and nodes.failed[n] == UP:
                self._node_down(n, t, CRASHED if a.mode == "crash" else PARTITIONED)
            elif isinstance(a, NodeUp | ZoneUp) and nodes.failed[n] != UP:
                self._node_up(n, t)

    def _on_node(self, n: int) -> I64:
        """The pods bound to node ``n`` and not yet removed."""
        return np.flatnonzero((self.nodes.pod_node == n) & self.pods.admitted & ~self.pods.gone)

    def _conts_of(self, pods: I64) -> I64:
        return np.flatnonzero(np.isin(self.fleet.container_pod, pods))

    def _node_down(self, n: int, t: int, mode: int) -> None:
        """Node ``n`` crashes or is cut off: nothing reaches its pods any more (what they held never
        answers: no reset comes from a dead or unreachable host), their status in the API stays as
        it was; after a crash their processes are gone and nothing runs their lifecycle or probes
        (the kubelet went with them), after a partition the kubelet goes on, unheard."""
        self.nodes.fail(n, t, mode)
        pods = self._on_node(n)
        self.pods.cut_off(pods)
        conts = self._conts_of(pods)
        self.traffic.cut_off(conts)
        if mode == CRASHED and conts.size:
            self.ctr.step(t - 1, self.log)  # (what fell due inside the step before came first)
            self.ctr.halt(conts)
            for w in self.workers.values():
                w.suspend(conts, t)
        self.dirty = True

    def _node_up(self, n: int, t: int) -> None:
        """Node ``n`` is back. After a crash its kubelet starts again: the pods deleted meanwhile
        are removed, the others get new containers (the old ones died with the machine); after a
        partition the kubelet stops the pods deleted meanwhile (with their grace period) and the
        others go on. Either way it takes the pods bound to it meanwhile, and reports their status
        again (their Ready condition follows their probes from now)."""
        crashed = self.nodes.failed[n] == CRASHED
        down_at = int(self.nodes.failed_at[n])
        self.nodes.back(n, t)
        pods = self._on_node(n)
        self.pods.reconnect(pods)
        self.traffic.reconnect(self._conts_of(pods))
        f = self.fleet
        known = np.array([bool(self.ctr.created[self._containers_of(int(p))].any()) for p in pods], bool)
        deleted = self.pods.deleting[pods]
        if crashed:
            gone = self._conts_of(pods[deleted])
            self.ctr.discard(gone)
            again = pods[~deleted & known]
            for p in again.tolist():
                msg = "Pod sandbox changed, it will be killed and re-created."
                self.log.add(t, "Normal", "SandboxChanged", f"pod/{f.pod_names[p]}", msg)
            conts = self._conts_of(again)
            self.ctr.reboot(conts, t, down_at)
            for w in self.workers.values():
                w.admit(conts, t)
        else:
            for p in pods[deleted & known].tolist():
                self._kubelet_stop(int(p), t)
        # Pods bound to it while it was down: the kubelet takes them now.
        self._kubelet_admit(pods[~deleted & ~known], t)
        self.pods.version += 1
        self.dirty = True

    def _node_controller(self, t: int) -> None:
        """The node lifecycle and taint eviction controllers' decisions at ``t``, carried out."""
        pods = self.pods
        res = self.nodes.step(t, pods.admitted & ~pods.gone, pods.deleting, self.ready, self._namespace)
        if res.not_ready:
            self._mark_not_ready(t, res.not_ready)
        if res.evict:
            self._delete(t, res.evict)

    def _namespace(self, p: int) -> str:
        return self.spaces[int(self.fleet.pod_workload[p])]

    def _mark_not_ready(self, t: int, victims: list[int]) -> None:
        """``MarkPodsNotReady``: the node controller sets the pods' Ready condition False in the API
        (their kubelet cannot): endpoints drop them from now."""
        f = self.fleet
        idx = np.array(victims, np.int64)
        self.ready = self.ready.copy()
        self.ready[idx] = False
        self.ready_transition[idx] = t
        self.ready_since[idx] = INF
        for p in victims:
            name = f.pod_names[p]
            self.log.add(t, "Warning", "PodNotReady", f"pod/{name}", "Pod condition Ready changed to False",
                         "node-controller")  # fmt: skip
        self.pods.version += 1
        self.pods.ready_set(t, self.ready.copy())
        self.dirty = True
