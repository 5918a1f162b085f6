"""The run's nodes: where each pod is bound (the scheduler, kube/scheduling.py), which nodes failed
(the scenario's nodeDown / zoneDown / nodeUp actions), and what the control plane does about it:
the node lifecycle controller's passes (kube/node_lifecycle.py: Ready Unknown after the grace,
its pods marked not Ready, the unreachable taints, the zones' eviction rates) and the taint
eviction controller (each pod deleted when its toleration of the NoExecute taint runs out, or
its deletion cancelled when the taint goes).

Without spec.cluster.nodes there is one node, node-1, that takes every pod as it comes: no
placement rule is applied and nothing happens to it (``explicit`` False).

The loop (engine/loop.py) owns the pods and their containers and does what each decision means
for them; this module decides, and says what it decided in the event log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.events import EventLog
from probesim.engine.fleet import Fleet
from probesim.kube.node_lifecycle import FULL, NORMAL, eviction_rate, seen_at, unknown_at, zone_state
from probesim.kube.pod_shapes import HOSTNAME, ZONE, Group, NodeFacts, shapes_of
from probesim.kube.scheduling import Placed, Scheduler
from probesim.kube.taints import CORDONED, UNREACHABLE, Taint, min_toleration_ms
from probesim.model.nodes import NodePoolUpgrade
from probesim.model.scenario import Scenario

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

UP, CRASHED, PARTITIONED = 0, 1, 2
NO_SCHEDULE = Taint(UNREACHABLE, "", "NoSchedule")
NO_EXECUTE = Taint(UNREACHABLE, "", "NoExecute")
CONTROLLER = "node-controller"
EVICTOR = "taint-eviction-controller"


@dataclass
class PassResult:
    """What a step of the control plane decided for the loop to carry out."""

    not_ready: list[int] = field(default_factory=list)  # pods MarkPodsNotReady sets not Ready
    evict: list[int] = field(default_factory=list)  # pods the taint eviction controller deletes


class Nodes:
    """The nodes of one run and the control plane's view of them."""

    def __init__(self, scenario: Scenario, fleet: Fleet, log: EventLog) -> None:
        self.log = log
        self.fleet = fleet
        cluster = scenario.spec.cluster
        listed = cluster.node_list()
        self.explicit = listed is not None
        n_pods = fleet.n_pods
        self.pod_node = np.full(n_pods, -1, np.int64)  # the node a pod is bound to (-1: none)
        self.bound_at = np.full(n_pods, INF, np.int64)
        self.pending: list[int] = []  # pods waiting for a node, in the order they came
        self.said: dict[int, str] = {}  # each pending pod's last FailedScheduling message
        self.tried: object = None  # the state the pending pods were last tried in
        self.version = 0  # bumps whenever what the scheduler reads of the nodes changes
        self.wake = int(INF)
        if listed is None:
            self.names = ["node-1"]
            self.zones = [""]
            return
        # A node pool upgrade's new nodes, made ahead: one per node of the pool, named after the
        # pool's last, in the zone of the node each replaces; absent until created.
        upgrade = any(isinstance(a, NodePoolUpgrade) for a in scenario.spec.actions)
        self.pool_size = len(listed)
        if upgrade:
            taken = {n.name for n in listed}
            fresh = []
            i = len(listed)
            for old in listed[: self.pool_size]:
                i += 1
                while f"node-{i}" in taken:
                    i += 1
                fresh.append(old.model_copy(update={"name": f"node-{i}"}))
            listed = [*listed, *fresh]
        self.names = [n.name for n in listed]
        self.zones = [n.zone or "" for n in listed]
        facts = []
        for n in listed:
            labels = {**n.labels, HOSTNAME: n.name}
            if n.zone is not None:
                labels[ZONE] = n.zone
            taints = tuple(Taint(t.key, t.value, t.effect) for t in n.taints)
            facts.append(NodeFacts(n.name, labels, int(n.cpu or 0), n.memory, n.pods, taints))
        self.facts = facts
        pl = fleet.pod_labels
        assert pl is not None
        self.group_of = pl.group_of
        groups = []
        for (wi, tpl), labels in zip(pl.keys, pl.groups, strict=True):
            w = scenario.workloads[wi]
            rw = fleet.plans[wi].revisions[tpl].workload if wi in fleet.plans else w
            groups.append(Group(wi, tpl, w.kind, w.metadata.namespace, labels, rw.pod_spec, w.spec.selector))
        services = [(s.metadata.namespace, s.spec.selector) for s in scenario.services]
        toleration_s = cluster.default_unreachable_toleration // 1000
        self.shapes = shapes_of(groups, services, toleration_s, scenario.namespace_labels)
        self.scheduler = Scheduler(facts, self.shapes)
        self.cpu_of = np.array([s.cpu_m for s in self.shapes], np.int64)
        self.memory_of = np.array([s.memory for s in self.shapes], np.int64)
        self.nz_cpu_of = np.array([s.nonzero_cpu_m for s in self.shapes], np.int64)
        self.nz_memory_of = np.array([s.nonzero_memory for s in self.shapes], np.int64)
        k = len(facts)
        self.period = cluster.node_monitor_period
        self.grace = cluster.node_monitor_grace_period
        # The machines: up, crashed or partitioned, since when.
        self.failed = np.zeros(k, np.int64)
        self.failed_at = np.full(k, INF, np.int64)
        # The control plane's view: the Ready condition (False: Unknown), when it will go
        # Unknown, the unreachable taints, the pass that will see a node back.
        self.ready = np.ones(k, bool)
        self.unknown_due = np.full(k, INF, np.int64)
        self.back_seen = np.full(k, INF, np.int64)
        self.no_schedule = np.zeros(k, bool)
        self.no_execute = np.zeros(k, bool)
        self.cordoned = np.zeros(k, bool)  # spec.unschedulable (kubectl cordon / drain)
        self.zone_keys = list(dict.fromkeys(self.zones))
        self.queue: dict[str, list[int]] = {z: [] for z in self.zone_keys}  # awaiting the NoExecute taint
        self.token_at: dict[str, int] = {z: -int(INF) for z in self.zone_keys}  # bucket full
        self.rate: dict[str, float] = {z: eviction_rate(NORMAL, 0) for z in self.zone_keys}
        self.zone_state: dict[str, str] = dict.fromkeys(self.zone_keys, NORMAL)
        self.evict_at = np.full(n_pods, INF, np.int64)
        # Whether each node exists (in the API) now, and since / until when.
        self.present = np.arange(k) < self.pool_size
        self.ready &= self.present
        self.created_at = np.where(self.present, 0, INF).astype(np.int64)
        self.removed_at = np.full(k, INF, np.int64)

    # -- placement ---------------------------------------------------------------------------

    def _placed(self, live: B, deleting: B) -> Placed:
        k, g = len(self.facts), len(self.shapes)
        bound = np.zeros((k, g), np.int64)
        active = np.zeros((k, g), np.int64)
        on = live & (self.pod_node >= 0)
        np.add.at(bound, (self.pod_node[on], self.group_of[on]), 1)
        act = on & ~deleting
        np.add.at(active, (self.pod_node[act], self.group_of[act]), 1)
        gs = self.group_of[on]
        nodes = self.pod_node[on]

        def per_node(values: I64) -> list[int]:
            out = [0] * k
            for n, v in zip(nodes.tolist(), values[gs].tolist(), strict=True):
                out[n] += v
            return out

        return Placed(
            bound=bound,
            active=active,
            cpu_m=per_node(self.cpu_of),
            memory=per_node(self.memory_of),
            pods=np.bincount(nodes, minlength=k).tolist(),
            nonzero_cpu_m=per_node(self.nz_cpu_of),
            nonzero_memory=per_node(self.nz_memory_of),
            taints=[self.taints(n) for n in range(k)],
            cordoned=self.cordoned.tolist(),
            present=None if self.present.all() else self.present.tolist(),
        )

    def taints(self, n: int) -> tuple[Taint, ...]:
        """Node ``n``'s taints now: its own, then the node controller's."""
        out = self.facts[n].taints
        if self.cordoned[n]:
            out += (CORDONED,)
        if self.no_schedule[n]:
            out += (NO_SCHEDULE,)
        if self.no_execute[n]:
            out += (NO_EXECUTE,)
        return out

    def schedule(
        self, new: list[int], t: int, live: B, deleting: B, namespace: Callable[[int], str]
    ) -> list[int]:
        """The scheduler takes ``new`` pods (and those still pending) in order: each bound to the
        node it picks (Scheduled), or left pending with FailedScheduling (again only when its
        reason changed). Returns the pods bound now."""
        names = self.fleet.pod_names
        if not self.explicit:
            for p in new:
                self.pod_node[p] = 0
                self.bound_at[p] = t
                msg = f"Successfully assigned {namespace(p)}/{names[p]} to node-1"
                self.log.add(t, "Normal", "Scheduled", f"pod/{names[p]}", msg, "default-scheduler")
            return new
        queue = [p for p in self.pending if live[p] and not deleting[p]] + list(new)
        self.pending = []
        if not queue:
            return []
        placed = self._placed(live, deleting)
        bound = []
        for p in queue:
            g = int(self.group_of[p])
            given = self.shapes[g].spec.node_name
            if given is not None:
                # spec.nodeName: bound by its author, the scheduler never sees it (no event).
                self._place(p, g, self.names.index(given), t, placed)
                bound.append(p)
                continue
            d = self.scheduler.decide(g, placed)
            if d.node is None:
                self.pending.append(p)
                if self.said.get(p) != d.message:
                    self.said[p] = d.message
                    obj = f"pod/{names[p]}"
                    self.log.add(t, "Warning", "FailedScheduling", obj, d.message, "default-scheduler")
                continue
            n = d.node
            self.said.pop(p, None)
            msg = f"Successfully assigned {namespace(p)}/{names[p]} to {self.names[n]}"
            self.log.add(t, "Normal", "Scheduled", f"pod/{names[p]}", msg, "default-scheduler")
            self._place(p, g, n, t, placed)
            bound.append(p)
        if bound:
            self.version += 1
        self._rewake(t)
        return bound

    def _place(self, p: int, g: int, n: int, t: int, placed: Placed) -> None:
        """Pod ``p`` (of group ``g``) bound to node ``n``; what the next decisions read updated."""
        self.pod_node[p] = n
        self.bound_at[p] = t
        placed.bound[n, g] += 1
        placed.active[n, g] += 1
        placed.cpu_m[n] += int(self.cpu_of[g])
        placed.memory[n] += int(self.memory_of[g])
        placed.pods[n] += 1
        placed.nonzero_cpu_m[n] += int(self.nz_cpu_of[g])
        placed.nonzero_memory[n] += int(self.nz_memory_of[g])
        if self.no_execute[n]:
            self._toleration(p, n, t)

    def forget(self, pods: list[int]) -> None:
        """Pods deleted before any node took them: no longer pending."""
        gone = set(pods)
        self.pending = [p for p in self.pending if p not in gone]
        for p in gone:
            self.said.pop(p, None)

    # -- failures ----------------------------------------------------------------------------

    def nodes_of(self, node: str | None = None, zone: str | None = None) -> list[int]:
        """The nodes an action names: one by name, or every node of a zone."""
        if node is not None:
            return [self.names.index(node)]
        return [n for n, z in enumerate(self.zones) if z == zone]

    def fail(self, n: int, t: int, mode: int) -> None:
        """Node ``n`` crashes or is cut off at ``t``: its heartbeats stop."""
        self.failed[n] = mode
        self.failed_at[n] = t
        if self.ready[n]:
            self.unknown_due[n] = unknown_at(t, self.period, self.grace)
        self.back_seen[n] = INF
        what = (
            "went down: its processes stopped and its kubelet with them"
            if mode == CRASHED
            else "is cut off from the network: nothing reaches its pods, its kubelet cannot reach "
            "the API server"
        )
        reason = "NodeDown" if mode == CRASHED else "NodePartitioned"
        msg = f"Node {self.names[n]} {what} (scenario action)"
        self.log.add(t, "Warning", reason, f"node/{self.names[n]}", msg, "probesim")
        self._rewake(t)

    def back(self, n: int, t: int) -> None:
        """Node ``n`` is back at ``t``: its kubelet (restarted after a crash) reports again and sets
        the Ready condition True; the NoSchedule taint follows it at once, the controller's next
        pass removes the NoExecute one."""
        name = self.names[n]
        crashed = self.failed[n] == CRASHED
        self.failed[n] = UP
        self.failed_at[n] = INF
        self.unknown_due[n] = INF
        obj = f"node/{name}"
        self.log.add(t, "Normal", "NodeUp", obj, f"Node {name} is back (scenario action)", "probesim")
        if crashed:
            self.log.add(t, "Normal", "Starting", obj, "Starting kubelet.", "kubelet")
        if not self.ready[n]:
            self.ready[n] = True
            self.no_schedule[n] = False
            self.version += 1
            self.log.add(t, "Normal", "NodeReady", obj, f"Node {name} status is now: NodeReady", "kubelet")
            self.back_seen[n] = seen_at(t, self.period)
        self._rewake(t)

    def create(self, n: int, t: int) -> None:
        """New node ``n`` (a pool upgrade's) registers, Ready: the scheduler may place pods there."""
        name = self.names[n]
        obj = f"node/{name}"
        self.present[n] = True
        self.ready[n] = True
        self.created_at[n] = t
        self.version += 1
        self.log.add(t, "Normal", "Starting", obj, "Starting kubelet.", "kubelet")
        self.log.add(t, "Normal", "NodeReady", obj, f"Node {name} status is now: NodeReady", "kubelet")
        msg = f"Node {name} event: Registered Node {name} in Controller"
        self.log.add(t, "Normal", "RegisteredNode", obj, msg, CONTROLLER)
        self._rewake(t)

    def remove(self, n: int, t: int) -> None:
        """Node ``n`` is deleted (its VM with it): it leaves the API and the controllers' view."""
        name = self.names[n]
        self.present[n] = False
        self.ready[n] = False
        self.removed_at[n] = t
        self.version += 1
        self.log.add(t, "Normal", "RemovingNode", f"node/{name}",
                     f"Node {name} event: Removing Node {name} from Controller", CONTROLLER)  # fmt: skip
        self._rewake(t)

    def cordon(self, n: int, t: int, on: bool, source: str = "kubectl") -> None:
        """``kubectl cordon`` (``on``) or ``uncordon``: spec.unschedulable set or cleared. kubectl
        says so; the node's kubelet records the NodeNotSchedulable or NodeSchedulable event
        (recordNodeSchedulableEvent); the node lifecycle controller adds or removes the
        node.kubernetes.io/unschedulable:NoSchedule taint (TaintNodesByCondition)."""
        if bool(self.cordoned[n]) == on:
            name = self.names[n]
            said = "already cordoned" if on else "already uncordoned"
            self.log.add(t, "Normal", "Cordon" if on else "Uncordon", f"node/{name}", f"node/{name} {said}",
                         source)  # fmt: skip
            return
        self.cordoned[n] = on
        self.version += 1
        name = self.names[n]
        obj = f"node/{name}"
        self.log.add(t, "Normal", "Cordon" if on else "Uncordon", obj,
                     f"node/{name} {'cordoned' if on else 'uncordoned'}", source)  # fmt: skip
        state = "NodeNotSchedulable" if on else "NodeSchedulable"
        self.log.add(t, "Normal", state, obj, f"Node {name} status is now: {state}", "kubelet")

    # -- the control plane's steps -------------------------------------------------------------

    def step(self, t: int, live: B, deleting: B, api_ready: B, namespace: Callable[[int], str]) -> PassResult:
        """What the node lifecycle controller's pass (on the multiples of its period), its
        tainting pass and the taint eviction controller do at ``t``."""
        out = PassResult()
        if t % self.period == 0:
            self._monitor(t, live, api_ready, out)
        self._taint(t, live)
        due = np.flatnonzero(self.evict_at <= t)
        for p in due.tolist():
            self.evict_at[p] = INF
            if not live[p]:
                continue
            name = self.fleet.pod_names[p]
            msg = f"Marking for deletion Pod {namespace(p)}/{name}"
            self.log.add(t, "Normal", "TaintManagerEviction", f"pod/{name}", msg, EVICTOR)
            out.evict.append(p)
        self._rewake(t)
        return out

    def _monitor(self, t: int, live: B, api_ready: B, out: PassResult) -> None:
        """``monitorNodeHealth``: each node's health, then ``handleDisruption``."""
        observed = self.ready.copy()
        for n in range(len(self.facts)):
            if not self.present[n]:
                continue
            name = self.names[n]
            if observed[n] and self.failed[n] != UP and t >= self.unknown_due[n]:
                # tryUpdateNodeHealth: Ready Unknown; the NoSchedule taint follows the condition.
                self.ready[n] = False
                self.no_schedule[n] = True
                self.unknown_due[n] = INF
                self.version += 1
                msg = f"Node {name} status is now: NodeNotReady"
                self.log.add(t, "Normal", "NodeNotReady", f"node/{name}", msg, CONTROLLER)
                on = np.flatnonzero(live & (self.pod_node == n) & api_ready)
                for p in on.tolist():
                    pod = self.fleet.pod_names[p]
                    self.log.add(t, "Warning", "NodeNotReady", f"pod/{pod}", "Node is not ready", CONTROLLER)
                out.not_ready += on.tolist()
            elif not observed[n]:
                # processTaintBaseEviction on an Unknown node: queue it for the NoExecute taint.
                zone = self.zones[n]
                if not self.no_execute[n] and n not in self.queue[zone]:
                    self.queue[zone].append(n)
            elif t >= self.back_seen[n]:
                self.back_seen[n] = INF
                self._reachable(n, t, live)
        self._disruption(t, live)

    def _reachable(self, n: int, t: int, live: B) -> None:
        """``markNodeAsReachable``: the NoExecute taint removed (the taint eviction controller
        cancels the deletions it scheduled) and the node out of its zone's queue."""
        zone = self.zones[n]
        if n in self.queue[zone]:
            self.queue[zone].remove(n)
        if not self.no_execute[n]:
            return
        self.no_execute[n] = False
        self.version += 1
        name = self.names[n]
        self.log.add(t, "Normal", "NodeUntainted", f"node/{name}",
                     f"Taint {UNREACHABLE}:NoExecute removed from node {name}", "probesim")  # fmt: skip
        for p in np.flatnonzero((self.pod_node == n) & (self.evict_at < INF)).tolist():
            self.cancel(p, t)

    def cancel(self, p: int, t: int) -> None:
        """A pod's scheduled eviction is cancelled (its taint went, or the pod did)."""
        if self.evict_at[p] >= INF:
            return
        self.evict_at[p] = INF
        wl = self.fleet.scenario.workloads[int(self.fleet.pod_workload[p])]
        name = self.fleet.pod_names[p]
        msg = f"Cancelling deletion of Pod {wl.metadata.namespace}/{name}"
        self.log.add(t, "Normal", "TaintManagerEviction", f"pod/{name}", msg, EVICTOR)

    def _disruption(self, t: int, live: B) -> None:
        """``handleDisruption``: each zone's state from its nodes' Ready conditions sets its
        tainting rate; every zone fully disrupted stops all tainting and removes the taints."""
        states = {}
        for z in self.zone_keys:
            members = [n for n, zz in enumerate(self.zones) if zz == z and self.present[n]]
            ready = int(self.ready[members].sum())
            states[z] = zone_state(ready, len(members) - ready)
        all_full = all(s == FULL for s in states.values())
        was_full = all(s == FULL for s in self.zone_state.values())
        if all_full and was_full:
            return
        if all_full:
            # Master disruption mode: every taint removed, every queue stopped.
            for n in range(len(self.facts)):
                self._reachable(n, t, live)
            for z in self.zone_keys:
                self._set_rate(z, 0.0, t)
                self.zone_state[z] = FULL
            return
        if was_full:
            # Leaving it: every node's probeTimestamp is now (a silent node gets its grace again).
            for n in np.flatnonzero((self.failed != UP) & self.ready).tolist():
                self.unknown_due[n] = ((t + self.grace) // self.period + 1) * self.period
        for z, s in states.items():
            if was_full or s != self.zone_state[z]:
                size = sum(1 for zz in self.zones if zz == z)
                self._set_rate(z, eviction_rate(s, size), t)
                self.zone_state[z] = s

    def _set_rate(self, z: str, rate: float, t: int) -> None:
        """``SwapLimiter``: a new token bucket, full, unless the old one was empty (drained)."""
        if rate == self.rate[z]:
            return
        empty = t < self.token_at[z]
        self.rate[z] = rate
        self.token_at[z] = t + _interval(rate) if empty and rate > 0 else -int(INF)

    def _taint(self, t: int, live: B) -> None:
        """``doNoExecuteTaintingPass``: each zone's queue, a node per token."""
        for z, queue in self.queue.items():
            while queue and self.rate[z] > 0 and t >= self.token_at[z]:
                n = queue.pop(0)
                self.token_at[z] = t + _interval(self.rate[z])
                if self.ready[n] or self.failed[n] == UP:
                    continue  # Ready again: no taint (the token is spent all the same)
                self.no_execute[n] = True
                self.version += 1
                name = self.names[n]
                self.log.add(t, "Warning", "NodeTainted", f"node/{name}",
                             f"Taint {UNREACHABLE}:NoExecute added to node {name}: pods that do not "
                             "tolerate it for longer are evicted", "probesim")  # fmt: skip
                for p in np.flatnonzero(live & (self.pod_node == n)).tolist():
                    self._toleration(p, n, t)

    def _toleration(self, p: int, n: int, t: int) -> None:
        """The taint eviction controller's ``processPodOnNode`` for a pod on a NoExecute-tainted
        node: its deletion scheduled when its toleration runs out (never when it tolerates the
        taint forever)."""
        taints = [x for x in self.taints(n) if x.effect == "NoExecute"]
        wait = min_toleration_ms(taints, self.shapes[int(self.group_of[p])].tolerations)
        if wait is not None and self.evict_at[p] >= INF:
            self.evict_at[p] = t + wait

    def _rewake(self, t: int = -1) -> None:
        """The next time the control plane has something to do: a failed node to notice, an
        Unknown one to queue for the taint, a node back to untaint, a queue's next token, an
        eviction (each a time on the run's grid)."""
        if not self.explicit:
            return
        w = min(int(self.unknown_due.min()), int(self.back_seen.min()), int(self.evict_at.min()))
        queued = {n for q in self.queue.values() for n in q}
        waiting = np.flatnonzero((self.failed != UP) & ~self.ready & ~self.no_execute).tolist()
        if any(n not in queued for n in waiting):
            w = min(w, (max(t, -1) // self.period + 1) * self.period)  # the next pass queues it
        for z, queue in self.queue.items():
            if queue and self.rate[z] > 0:
                w = min(w, max(self.token_at[z], t + 1))
        self.wake = w

    def due(self, t: int) -> bool:
        """Whether ``step`` has anything to do at ``t``."""
        return self.wake <= t


def _interval(rate: float) -> int:
    """The wait between two tokens at ``rate`` per second, in ms."""
    return round(1000 / rate)
