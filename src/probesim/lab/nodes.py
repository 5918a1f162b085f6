"""The lab's nodes (issue 45): a node is a group of the lab's pod processes, all on this machine.
The engine's ``engine.nodes.Nodes`` decides, over the lab's pods (each at its simulation slot, as
the Deployment controller numbers them): the scheduler binds each pod to a node by the same rules
(``kube.scheduling``), and the node lifecycle and taint eviction controllers follow the same
timings (``kube.node_lifecycle``: Ready Unknown after the monitor grace, MarkPodsNotReady, the
unreachable NoExecute taint, each pod's eviction when its toleration runs out). This module
carries the decisions out on real processes, as ``engine.node_faults`` does on simulated ones:

- ``nodeDown`` (crash or partition) / ``zoneDown``: the node's pods' processes are stopped with
  SIGSTOP at once — they hold their sockets and answer nothing, so clients time out as they do
  against a dead host — and its kubelet stops: no probes of its pods, no status reported (their
  Ready condition stays as it was until the node controller sets it False);
- the eviction: the pod is deleted (its ReplicaSet replaces it at once, on another node) and its
  stopped processes are killed (SIGKILL), freeing this machine; the pod stays Terminating until
  its node comes back, as its kubelet is not there to confirm its end;
- ``nodeUp`` / ``zoneUp``: after a partition the processes go on (SIGCONT) and the kubelet with
  them; after a crash the old processes are killed and the pods get new containers. Either way the
  pods deleted meanwhile go.

Every process it stops is remembered, and ``release`` sends each SIGCONT on the way out, however
the run ends (the reaping then kills them as any other); a child also dies with the lab when the
lab is killed (``hygiene``), SIGKILL reaching a stopped process all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from collections.abc import Callable, Coroutine

import numpy as np

from probesim.engine.events import EventLog
from probesim.engine.fleet import Fleet
from probesim.engine.nodes import CONTROLLER, CRASHED, PARTITIONED, UP, Nodes
from probesim.lab.clock import Clock
from probesim.lab.drains import DRAIN_ACTIONS, LabDrains
from probesim.lab.headroom_monitor import netstat
from probesim.lab.pods import Pod
from probesim.lab.port import BACKLOG
from probesim.lab.prober import Prober
from probesim.lab.runtime import Runtime
from probesim.lab.status import StatusManager
from probesim.model.nodes import NodeDown, NodeUp, ZoneDown, ZoneUp
from probesim.model.scenario import Scenario
from probesim.results import Event

NODE_ACTIONS = (NodeDown, ZoneDown, NodeUp, ZoneUp)
MAX_PASSES = 10_000  # the control plane's steps caught up in one round, at most (a bound)

Admit = Callable[[Pod, float], Coroutine[None, None, None]]


def runs_nodes(scenario: Scenario) -> bool:
    """Whether the lab runs the scenario's nodes: it lists several, or scripts node faults."""
    listed = scenario.spec.cluster.node_list()
    acts = any(isinstance(a, (*NODE_ACTIONS, *DRAIN_ACTIONS)) for a in scenario.spec.actions)
    return listed is not None and (len(listed) > 1 or acts)


class LabNodes:
    def __init__(
        self,
        scenario: Scenario,
        fleet: Fleet,
        clock: Clock,
        runtime: Runtime,
        prober: Prober,
        status: StatusManager,
    ) -> None:
        self.scenario = scenario
        self.fleet = fleet
        self.clock = clock
        self.runtime = runtime
        self.prober = prober
        self.status = status
        self.log = EventLog()
        self.nodes = Nodes(scenario, fleet, self.log)
        self.spaces = [w.metadata.namespace for w in scenario.workloads]
        self.actions = [
            (int(a.at), a)
            for a in sorted(
                (a for a in scenario.spec.actions if isinstance(a, NODE_ACTIONS)), key=lambda a: a.at
            )
        ]
        self.applied = 0
        # kubectl drain / uncordon: the engine's drain steps over these pods (lab.drains).
        self.drains: LabDrains | None = None
        if any(isinstance(a, DRAIN_ACTIONS) for a in scenario.spec.actions):
            self.drains = LabDrains(scenario, fleet, self.nodes, self.log, runtime)
        self.waiting: dict[int, Pod] = {}  # created, not yet bound: by slot
        # SIGSTOPped (and whether as a process group): each gets SIGCONT on every way out.
        self.stopped: list[tuple[asyncio.subprocess.Process, bool]] = []
        # Per stopped pod, the connection that fills its listening socket's one queue slot.
        self.plugs: dict[str, socket.socket] = {}
        self.chores: set[asyncio.Task[None]] = set()
        # The kernel's accept-queue counters when the first down node's queues were shrunk (None:
        # none is now), and what they counted while any was: the scenario's dead hosts, not the
        # lab's overflows (lab.headroom leaves them out).
        self.window0: dict[str, int] | None = None
        self.dead_hosts: dict[str, int] = {}

    # -- what the engine's decisions read ------------------------------------------------------

    def _namespace(self, p: int) -> str:
        return self.spaces[int(self.fleet.pod_workload[p])]

    def _arrays(self, pods: list[Pod]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per slot: the pods that exist (created, not gone), those being deleted, those Ready in
        the API."""
        n = self.fleet.n_pods
        live, deleting, ready = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        for p in pods:
            if 0 <= p.slot < n and not p.gone:
                live[p.slot] = True
                deleting[p.slot] = p.deleting
                ready[p.slot] = p.ready
        return live, deleting, ready

    def _take(self) -> list[Event]:
        return self.log.take()

    # -- placement -----------------------------------------------------------------------------

    def place(self, new: list[Pod], pods: list[Pod], t: int) -> list[Pod]:
        """The scheduler takes ``new`` pods (and those still pending), in order: returns those
        bound now, each with its node; the others wait (FailedScheduling) for a change."""
        for pod in new:
            self.waiting[pod.slot] = pod
        if not self.waiting:
            return []
        live, deleting, _ = self._arrays(pods)
        bound = self.nodes.schedule([p.slot for p in new], t, live, deleting, self._namespace)
        out = []
        for s in bound:
            pod = self.waiting.pop(s)
            pod.node = self.nodes.names[int(self.nodes.pod_node[s])]
            out.append(pod)
        self.clock.events += self._take()
        return out

    def bind(self, pods: list[Pod], t: int, admit: Admit, tasks: list[asyncio.Task[None]]) -> None:
        """The pods the controllers created (and those pending) placed; each bound one admitted
        after the cluster's pod start delay. One bound to a node that is down waits for it."""
        fresh = [p for p in pods if p.slot in self.waiting and self.waiting[p.slot] is p]
        if not fresh and not self.nodes.pending:
            return
        known = set(self.nodes.pending)
        bound = self.place([p for p in fresh if p.slot not in known], pods, t)
        delay = self.scenario.spec.cluster.pod_start_delay / 1000
        for pod in bound:
            if self.nodes.failed[self.nodes.names.index(pod.node)] != UP:
                pod.frozen = True  # its kubelet takes it when the node is back
                continue
            tasks.append(asyncio.create_task(admit(pod, delay)))

    def wait_for_node(self, pod: Pod) -> None:
        """A pod the Deployment controller created: to place (``bind``)."""
        self.waiting[pod.slot] = pod

    # -- faults and the control plane ----------------------------------------------------------

    def tick(self, pods: list[Pod], now: int, admit: Admit, tasks: list[asyncio.Task[None]]) -> None:
        """The node actions due by ``now`` (each at its own time), then the control plane's steps
        due by then, each at the time the engine takes it."""
        while self.applied < len(self.actions) and self.actions[self.applied][0] <= now:
            t, a = self.actions[self.applied]
            self.applied += 1
            for n in self.targets(a):
                if isinstance(a, NodeDown | ZoneDown) and self.nodes.failed[n] == UP:
                    self.nodes.fail(n, t, CRASHED if a.mode == "crash" else PARTITIONED)
                    self.clock.events += self._take()
                    for pod in self._on(pods, n):
                        self._freeze(pod)
                elif isinstance(a, NodeUp | ZoneUp) and self.nodes.failed[n] != UP:
                    crashed = self.nodes.failed[n] == CRASHED
                    self.nodes.back(n, t)
                    self.clock.events += self._take()
                    for pod in self._on(pods, n):
                        self._back(pod, t, crashed, admit, tasks)
        if self.drains is not None:
            self.drains.tick(pods, now)
            self.clock.events += self._take()
        if self.window0 is not None and not any(p.frozen and p.run.listening is not None for p in pods):
            self._close_window()
        passes = 0
        while self.nodes.wake <= now and passes < MAX_PASSES:
            passes += 1
            t = int(self.nodes.wake)
            live, deleting, ready = self._arrays(pods)
            res = self.nodes.step(t, live, deleting, ready, self._namespace)
            self.clock.events += self._take()
            by_slot = {p.slot: p for p in pods if not p.gone}
            for s in res.not_ready:
                self._mark_not_ready(by_slot[s], t)
            for s in res.evict:
                self._evict(by_slot[s])

    def targets(self, a: NodeDown | ZoneDown | NodeUp | ZoneUp) -> list[int]:
        """The nodes an action names: one, or every node of a zone."""
        if isinstance(a, NodeDown | NodeUp):
            return self.nodes.nodes_of(node=a.node)
        return self.nodes.nodes_of(zone=a.zone)

    def rebooting(self, pods: list[Pod]) -> list[Pod]:
        """The pods on a node the scenario crashes and brings back: each will start a new
        container then (one test app more to load ahead)."""
        crashed: set[int] = set()
        out: set[int] = set()
        for _, a in self.actions:
            for n in self.targets(a):
                if isinstance(a, NodeDown | ZoneDown) and a.mode == "crash":
                    crashed.add(n)
                elif isinstance(a, NodeUp | ZoneUp) and n in crashed:
                    out.add(n)
        names = {self.nodes.names[n] for n in out}
        return [p for p in pods if p.node in names and p.slot not in self.waiting]

    def _on(self, pods: list[Pod], n: int) -> list[Pod]:
        name = self.nodes.names[n]
        return [p for p in pods if p.node == name and not p.gone and p.slot not in self.waiting]

    def _freeze(self, pod: Pod) -> None:
        """The node went: the pod's processes stopped where they are, its kubelet (probe workers,
        restarts) with them."""
        pod.frozen = True
        for task in pod.tasks.values():
            task.cancel()
        pod.tasks.clear()
        proc = pod.run.proc
        listening = pod.run.listening
        if listening is not None:
            if self.window0 is None:
                self.window0 = netstat()
            # A dead host answers no SYN: its backlog shrunk to nothing, new connections wait for
            # an answer that never comes until the client's connect timeout, as the simulation's.
            listening.listen(0)
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if pod.command:
                    os.killpg(proc.pid, signal.SIGSTOP)
                else:
                    proc.send_signal(signal.SIGSTOP)
                self.stopped.append((proc, bool(pod.command)))
        if listening is not None:
            # Linux keeps one connection in a zero backlog's queue: the lab's own takes it, once
            # the app can no longer accept it, so that no client's new connection completes its
            # handshake with a dead host (a request on it would hang instead of failing to
            # connect). The connections the clients already had hang, as on a dead node.
            plug = socket.socket(listening.family, socket.SOCK_STREAM)
            plug.setblocking(False)
            plug.connect_ex(listening.getsockname())
            self.plugs[pod.name] = plug

    def _mark_not_ready(self, pod: Pod, t: int) -> None:
        """``MarkPodsNotReady``: the node controller sets the pod's Ready condition False (its
        kubelet cannot); the endpoints drop it now."""
        if not pod.ready:
            return
        pod.ready = False
        pod.ready_since = t
        msg = "Pod condition Ready changed to False"
        self.clock.events.append(Event(t, "Warning", "PodNotReady", f"pod/{pod.name}", msg, CONTROLLER))
        self.status.push_endpoints()

    def _evict(self, pod: Pod) -> None:
        """The taint eviction controller deleted the pod: Terminating (its ReplicaSet replaces it),
        its stopped processes killed to free this machine; it goes once its node is back."""
        pod.deleting = True
        self._unplug(pod)
        self.status.push_endpoints()
        self._chore(self.runtime.halt(pod))

    def _back(self, pod: Pod, t: int, crashed: bool, admit: Admit, tasks: list[asyncio.Task[None]]) -> None:
        """The pod's node is back: deleted meanwhile, it goes; else after a partition its
        processes go on, after a crash it gets new containers (the old ones died with the node)."""
        self._unplug(pod)
        self._continue(pod)
        if pod.deleting:
            pod.frozen = False
            pod.gone = True
            self._chore(self.runtime.halt(pod))
            self.status.update()
            return
        if pod.run.instance < 0:  # bound while the node was down: its kubelet takes it now
            pod.frozen = False
            tasks.append(asyncio.create_task(admit(pod, self.scenario.spec.cluster.pod_start_delay / 1000)))
            return
        if crashed:
            msg = "Pod sandbox changed, it will be killed and re-created."
            self.clock.events.append(Event(t, "Normal", "SandboxChanged", f"pod/{pod.name}", msg))
            self._chore(self._reboot(pod, tasks))
            return
        pod.frozen = False
        if pod.run.listening is not None:
            pod.run.listening.listen(BACKLOG)
        for w in pod.workers.values():
            self._task(pod, w.kind, self.prober.worker(pod, w, resumed=True), tasks)
        self._task(pod, "watch", self.runtime.watch(pod), tasks)
        self.status.update()

    async def _reboot(self, pod: Pod, tasks: list[asyncio.Task[None]]) -> None:
        """A crashed node's pod after its return: its old container gone, a new one started after
        containerRestartDelay (as simulated: a new kubelet, no back-off), its test app loaded
        ahead (``rebooting``)."""
        began = asyncio.get_running_loop().time()
        await self.runtime.halt(pod)
        pod.frozen = False
        self.status.update()
        for w in pod.workers.values():
            self._task(pod, w.kind, self.prober.worker(pod, w, resumed=True), tasks)
        delay = self.scenario.spec.cluster.container_restart_delay / 1000
        await asyncio.sleep(max(0.0, began + delay - asyncio.get_running_loop().time()))
        await self.runtime.start(pod)
        if not pod.deleting:
            self._task(pod, "watch", self.runtime.watch(pod), tasks)

    def _task(
        self, pod: Pod, name: str, coro: Coroutine[None, None, None], tasks: list[asyncio.Task[None]]
    ) -> None:
        task = asyncio.create_task(coro)
        pod.tasks[name] = task
        tasks.append(task)

    def _chore(self, coro: Coroutine[None, None, None]) -> None:
        task = asyncio.create_task(coro)
        self.chores.add(task)
        task.add_done_callback(self.chores.discard)

    def _unplug(self, pod: Pod) -> None:
        plug = self.plugs.pop(pod.name, None)
        if plug is not None:
            plug.close()

    def _continue(self, pod: Pod) -> None:
        for item in [x for x in self.stopped if x[0] is pod.run.proc]:
            self.stopped.remove(item)
            _cont(*item)

    def _close_window(self) -> None:
        if self.window0 is None:
            return
        now = netstat()
        for k, v in now.items():
            self.dead_hosts[k] = self.dead_hosts.get(k, 0) + v - self.window0.get(k, 0)
        self.window0 = None

    def release(self) -> None:
        """Every process this module stopped, and still there, continued: none stays stopped
        whatever ends the run (the reaping kills them next)."""
        self._close_window()
        for plug in self.plugs.values():
            plug.close()
        self.plugs.clear()
        stopped, self.stopped = self.stopped, []
        for proc, group in stopped:
            _cont(proc, group)

    def tasks(self) -> list[asyncio.Task[None]]:
        return list(self.chores)


def _cont(proc: asyncio.subprocess.Process, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if proc.returncode is None:
            proc.send_signal(signal.SIGCONT)
        if group:
            os.killpg(proc.pid, signal.SIGCONT)
