"""The fixed-step loop. Each tick, in order: admit pods; container exits, crashes and starts;
process state; probe workers (startup, readiness, liveness); kills for failed liveness/startup
and their same-sync restarts; readiness manual triggers for pods that synced; pod conditions;
endpoints; traffic over [t, t + step); the record.

This module keeps that order and the state no part owns; the run's parts are components it
holds: the pods' status clients see (engine/pod_status.py), the traffic and serving with their
buffers (engine/traffic.py's Traffic), the probe workers (engine/kubelet.py), the capacity
model, the controllers, the HPAs' metrics, the record (engine/recording.py), and the summary
made after the loop (engine/summary.py).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import distinct
from probesim.engine.autoscaler import SYNC_PERIOD_MS, Autoscaler
from probesim.engine.behavior import INF
from probesim.engine.capacity import CapacityModel
from probesim.engine.containers import Containers
from probesim.engine.controllers.workloads import Controllers, PodArrays
from probesim.engine.disruption import Budgets
from probesim.engine.drains import DrainRun, Drains
from probesim.engine.draws import generator
from probesim.engine.events import EventLog
from probesim.engine.fleet import FAILURE, RUNNING, SUCCESS, TERMINATING, Fleet, build
from probesim.engine.kernel_choice import run_with
from probesim.engine.kubelet import ProbeWorkers
from probesim.engine.node_faults import NodeFaults
from probesim.engine.nodes import UP, Nodes
from probesim.engine.pod_metrics import PodMetrics
from probesim.engine.pod_status import PodStatus
from probesim.engine.pool_upgrade import PoolUpgrades, UpgradeRun
from probesim.engine.readiness_gates import ReadinessGates
from probesim.engine.recording import Recorder
from probesim.engine.sidecar.build import build_mesh
from probesim.engine.summary import Summary, TrackedRollout
from probesim.engine.traffic import Traffic
from probesim.engine.workload_actions import WorkloadActions
from probesim.model.nodes import Drain, NodeDown, NodePoolUpgrade, NodeUp, Uncordon, ZoneDown, ZoneUp
from probesim.model.scenario import DeletePod, Scenario
from probesim.results import Result

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]


def simulate(scenario: Scenario) -> Result:
    """Run ``scenario``; the same scenario (including its seed) always gives the same Result."""
    return Simulation(scenario).run()


class Simulation(NodeFaults, Drains, PoolUpgrades, WorkloadActions):
    """One run of a scenario: its state, set up as it is made. ``run`` runs it whole; ``begin``,
    ``advance`` and ``finish`` in parts (engine/warm.py goes on from a part as another scenario)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.spec = scenario.spec
        self.fleet: Fleet = build(scenario)
        f = self.fleet
        self.rng = generator(self.spec.seed)  # every random draw of the run comes from here
        self.log = EventLog()
        self.ctr = Containers(f)
        # One container per pod (pod p's is container p): a reduction over a pod's containers
        # is that container's value.
        self._one_per_pod = f.n_pods == f.n_containers and bool(
            (f.pod_first_container == np.arange(f.n_pods)).all()
        )
        self.capacity = CapacityModel(
            f, f.container_behavior, f.container_spec, self.rng, list(f.behaviors.targets)
        )
        self.workers = {
            k: ProbeWorkers(k, f.probes[k], f, self.capacity, self.rng, self.spec.step)
            for k in ("startup", "readiness", "liveness")
        }
        for kind in ("readiness", "liveness"):
            self.workers[kind].gate = self.workers["startup"]  # their started gate reads it
        n = f.n_pods
        # Pods created without a ReplicaSet decision: bare Pods, StatefulSet pods (their
        # replacement slots once the old pod is gone). ReplicaSet pods come from _reconcile.
        # Bare Pods are created at the start; ReplicaSet and StatefulSet pods when their
        # controller (engine/controllers) says.
        managed = [
            rs or w.kind == "StatefulSet" for rs, w in zip(f.replica_set, scenario.workloads, strict=True)
        ]
        self.eligible = ~np.array(managed, bool)[f.pod_workload] if n else np.zeros(0, bool)
        self.controllers = Controllers(
            scenario, f.pod_workload, f.pod_template, f.pod_ordinal, f.plans, f.replica_set, self.log
        )
        self.desired = self.controllers.desired  # spec.replicas, which the HPA and scale actions set
        self.rollouts: list[TrackedRollout] = []
        self.rolled_to: dict[int, int] = {}  # per Deployment: the template its last rollout went to
        for wi in self.controllers.adopting:
            # Created next to an adopted ReplicaSet of another template: it rolls out from it.
            self.rollouts.append(TrackedRollout(wi, "adopt", 0, 0))
        self.autoscalers = {
            i: Autoscaler(h)
            for i, w in enumerate(scenario.workloads)
            if (h := scenario.autoscaler_for(w)) is not None
        }
        self.ready_transition = np.zeros(n, np.int64)
        self.pod_metrics = PodMetrics(f.n_containers, self.spec.step)
        self.pods = PodStatus(n, self.spec.endpoint_delay)
        self.any_deleting = False
        self.admitted_at = np.full(n, INF, np.int64)
        self.ready = np.zeros(n, bool)
        self.ready_since = np.full(n, INF, np.int64)
        self.first_ready = np.full(n, INF, np.int64)
        self.gates = ReadinessGates(f)
        self.dirty = True
        self.mesh = build_mesh(scenario, f, self.rng)
        self.nodes = Nodes(scenario, f, self.log)
        self.spaces = [w.metadata.namespace for w in scenario.workloads]  # per workload
        self.scenario_kinds = [w.kind for w in scenario.workloads]
        self.budgets = Budgets(scenario, f)
        self.drains: list[DrainRun] = []  # kubectl drains under way
        self.upgrades: list[UpgradeRun] = []  # node pool upgrades under way

    # -- steps -------------------------------------------------------------------------------

    def _admit(self, t: int) -> None:
        """Bare Pods: created when the run starts."""
        self._create(np.flatnonzero(self.eligible & ~self.pods.admitted), t)

    def _create(self, new: I64, t: int) -> None:
        """New pods: the scheduler places them (engine/nodes.py); the kubelet of each one's node
        starts its containers after the pod start delay."""
        if new.size == 0:
            return
        self.pods.admitted[new] = True
        self.admitted_at[new] = t
        self.ready_transition[new] = t
        self.pods.version += 1
        self._bind(self._schedule(new.tolist(), t), t)
        self.dirty = True

    def _schedule(self, new: list[int], t: int) -> list[int]:
        """The scheduler over ``new`` pods and those still pending; returns the pods bound now."""
        pods = self.pods
        return self.nodes.schedule(new, t, pods.admitted & ~pods.gone, pods.deleting, self._namespace)

    def _bind(self, bound: list[int], t: int) -> None:
        """Pods bound to a node: its kubelet takes them, unless the node failed (it will once back)."""
        if not bound:
            return
        new = np.array(bound, np.int64)
        nodes = self.nodes
        if nodes.explicit:
            away = nodes.failed[nodes.pod_node[new]] != UP
            if away.any():
                self.pods.cut_off(new[away])
                new = new[~away]
        self._kubelet_admit(new, t)

    def _kubelet_admit(self, new: I64, t: int) -> None:
        """The kubelet takes pods: their containers start after the pod start delay, their probe
        workers start with them."""
        if new.size == 0:
            return
        f = self.fleet
        self.gates.created(new, t)
        conts = np.flatnonzero(np.isin(f.container_pod, new))
        self.ctr.admit(new, t + self.spec.cluster.pod_start_delay)
        for w in self.workers.values():
            w.admit(conts, t)
        self.dirty = True

    def _delete(self, t: int, victims: list[int], grace: int | None = None) -> None:
        """``kubectl delete pod``: liveness and startup stop (quietly, as Success), readiness goes
        on; every container is stopped within the pod's grace period (``grace``: the deletion's
        own, in ms) and not restarted (§2.2.14, §2.4.33); a ReplicaSet replaces the pod at once."""
        unbound = []
        for p in victims:
            if not self.pods.admitted[p] or self.pods.deleting[p]:
                continue
            self.pods.deleting[p] = True
            self.any_deleting = True
            if self.nodes.pod_node[p] < 0:
                unbound.append(p)
            if self.pods.unreachable[p]:
                continue  # its node failed: its kubelet learns of the deletion when it is back
            self._kubelet_stop(p, t, grace)
        if unbound:
            self.nodes.forget(unbound)
        self.dirty = True
        self.pods.version += 1

    def _kubelet_stop(self, p: int, t: int, grace: int | None = None) -> None:
        """The kubelet's side of a pod's deletion: its liveness and startup probes stop, its
        containers are stopped within its grace period."""
        conts = np.arange(*self._containers_of(p).indices(self.fleet.n_containers))
        for kind in ("liveness", "startup"):
            w = self.workers[kind]
            w.release(conts, t)
            w.active[conts] = False
            w.busy_until[conts] = INF
            w.seen[conts] = self.ctr.instance[conts]
            w.cached[conts] = SUCCESS
        self.ctr.stop_pod(p, t, self.log, grace)

    def _per_pod(self, op: np.ufunc, x: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """``op`` over each pod's containers of per-container ``x`` (its reduceat)."""
        if self._one_per_pod:
            return x.copy()
        return np.asarray(op.reduceat(x, self.fleet.pod_first_container))

    def _containers_of(self, p: int) -> slice:
        """Pod ``p``'s containers (contiguous, from its first to the next pod's)."""
        first = self.fleet.pod_first_container
        return slice(int(first[p]), int(first[p + 1]) if p + 1 < first.size else self.fleet.n_containers)

    def _view(self) -> PodArrays:
        """The pods as the controllers read them now."""
        f = self.fleet
        if f.n_pods:
            started = self._per_pod(np.minimum, self.ctr.instance >= 0)
            restarts = self._per_pod(np.maximum, self.ctr.restart_count)
            stopped = ~self._per_pod(np.maximum, self.ctr.alive())
        else:
            started, restarts, stopped = np.zeros(0, bool), np.zeros(0, np.int64), np.zeros(0, bool)
        return PodArrays(
            admitted=self.pods.admitted,
            deleting=self.pods.deleting,
            gone=self.pods.gone,
            ready=self.ready,
            ready_since=self.ready_since,
            admitted_at=self.admitted_at,
            started=started,
            restarts=restarts,
            stopped=stopped,
        )

    def _reconcile(self, t: int, sets: bool = True) -> None:
        """The Deployment, ReplicaSet and StatefulSet controllers (engine/controllers): they say
        which pods to create and which to delete; the kubelet's side of both is here."""
        create, delete = self.controllers.reconcile(t, self._view, self.pods.version)
        if sets:
            # StatefulSets move once a step, seeing the Ready changes of the step before.
            more, gone = self.controllers.reconcile_sets(t, self._view, self.pods.version)
            create += more
            delete += gone
        if create:
            self._create(np.array(create, np.int64), t)
        if delete:
            self._delete(t, delete)
            # IsPodActive: a pod being deleted leaves its ReplicaSet's status at once, and the
            # Deployment sees that status change (its progress) in the same instant.
            for _ in range(4):
                create, delete = self.controllers.reconcile(t, self._view, self.pods.version)
                if create:
                    self._create(np.array(create, np.int64), t)
                if not delete:
                    break
                self._delete(t, delete)

    def _autoscale(self, t: int) -> None:
        """HPA syncs every 15 s from the start of the run."""
        if t % SYNC_PERIOD_MS or not self.autoscalers:
            return
        for wi, views in self.pod_metrics.views(self, t).items():
            hpa = self.autoscalers[wi]
            current = self.desired[wi]
            new, reason = hpa.sync(views, current, t)
            if new != current:
                self.desired[wi] = new
                obj = f"horizontalpodautoscaler/{hpa.hpa.name}"
                msg = f"New size: {new}; reason: {reason}"
                self.log.add(t, "Normal", "SuccessfulRescale", obj, msg, "horizontal-pod-autoscaler")

    def _reap(self, t: int) -> None:
        """Deleted pods whose containers have all stopped leave the API (and the endpoints); on a
        failed node nothing confirms it: they stay (Terminating) until the node is back."""
        alive = self.ctr.alive()
        for p in np.flatnonzero(self.pods.deleting & ~self.pods.gone & ~self.pods.unreachable):
            if not alive[self._containers_of(int(p))].any():
                self.pods.gone[p] = True
                self.dirty = True
                self.pods.version += 1
                if self.nodes.explicit:
                    self.nodes.cancel(int(p), t)

    def _started(self) -> B:
        s = self.workers["startup"]
        return self.ctr.alive() & (~s.spec.has | (s.visible(self.ctr.instance) == SUCCESS))

    def _lifecycle(self, t: int, synced: bool = False) -> None:
        """Container starts, exits and kills due at ``t``, and what the processes do then
        (``synced``: a pod sync for a probe result, which may start what waits for a sidecar)."""
        ctr = self.ctr
        ctr.step(t, self.log)
        if ctr.any_gated and (ctr.changed or synced):
            ctr.release(self._started(), t, self.log)
        beh = self.fleet.behaviors
        if ctr.changed or beh.wakeup <= t:
            # A container being killed stops answering once it gets SIGTERM (after its preStop
            # hook), unless it ignores SIGTERM.
            terminating = ctr.state == TERMINATING
            serving = ctr.running() | (terminating & (beh.ignores_sigterm | (ctr.sigterm_at < INF)))
            beh.evaluate(t, serving, self.ctr.started_at)
            self.ctr.changed = False
            self.dirty = True
            self.pods.version += 1

    def _probes(self, t: int) -> None:
        w = self.workers
        if not any(x.due(t, self.ctr) for x in w.values()):
            return
        # Workers read `started` from the status as the step began: a startup success reaches
        # them through the pod sync it causes (which triggers readiness), not in the same instant.
        started = self._started()
        for x in w.values():
            x.started_version = w["startup"].version
        changed = {
            kind: w[kind].step(t, self.ctr, started, self.log)
            for kind in ("startup", "readiness", "liveness")
        }
        for c in changed.values():
            self.log.synced_pods.update(self.fleet.container_pod[c].tolist())
        if any(c.size for c in changed.values()):
            self.dirty = True
        if changed["liveness"].size or changed["startup"].size:
            self._kill(t)

    def _kill(self, t: int) -> None:
        """A pod sync kills containers whose liveness (checked first) or startup result is Failure."""
        inst = self.ctr.instance
        running = self.ctr.running()
        live = self.workers["liveness"]
        start = self.workers["startup"]
        for kind, w in (("liveness", live), ("startup", start)):
            kill = np.flatnonzero(running & w.spec.has & (w.visible(inst) == FAILURE))
            kill = kill[self.ctr.running()[kill]]  # (not killed for liveness just now)
            if kill.size:
                self.ctr.kill(kill, t, kind, w.spec.grace[kill], self.log)
        self._lifecycle(t, synced=True)

    def _triggers(self, t: int) -> None:
        if not self.log.synced_pods:
            return
        synced = np.zeros(self.fleet.n_pods, bool)
        synced[list(self.log.synced_pods)] = True
        r = self.workers["readiness"]
        conts = np.flatnonzero(synced[self.fleet.container_pod])
        started = self._started()
        sel = conts[
            r.spec.has[conts]
            & (self.ctr.state[conts] == RUNNING)
            & started[conts]
            & (r.visible(self.ctr.instance)[conts] != SUCCESS)
        ]
        if sel.size and r.trigger(sel, t, self.ctr, started, self.log).size:
            self.dirty = True

    def _conditions(self, t: int) -> None:
        if not self.dirty and t not in self.gates.times:
            return
        self.dirty = False
        f = self.fleet
        r = self.workers["readiness"]
        started = self._started()
        c_ready = started & (~r.spec.has | (r.visible(self.ctr.instance) == SUCCESS))
        pod_ready = self._per_pod(np.minimum, c_ready.astype(np.int8)).astype(bool)
        pod_ready &= self.pods.admitted & ~self.pods.gone & (self.gates.at <= t)
        # A container replaced since the last step (an exit and a restart within one step) was
        # not ready in between: the kubelet reports the dead one not ready and the new one starts at
        # readiness Failure, so Ready went False and back, with a new transition time.
        replaced = np.zeros(f.n_pods, bool)
        replaced[f.container_pod[self.ctr.restarted_at > t - self.spec.step]] = True
        if self.pods.unreachable_n:
            # A failed node's kubelet reports nothing: the API keeps what it had (or what the node
            # controller set).
            away = self.pods.unreachable
            pod_ready = np.where(away, self.ready, pod_ready)
            replaced &= ~away
        for p in np.flatnonzero(replaced & pod_ready & self.ready):
            name = f.pod_names[p]
            self.log.add(t, "Warning", "PodNotReady", f"pod/{name}", "Pod condition Ready changed to False")
            self.log.add(t, "Normal", "PodReady", f"pod/{name}", "Pod condition Ready changed to True")
            self.ready_transition[p] = self.ready_since[p] = t
            self.pods.version += 1
        flips = np.flatnonzero(pod_ready != self.ready)
        if flips.size == 0:
            return
        self.pods.version += 1
        self.ready_transition[flips] = t
        up = pod_ready[flips]
        self.ready_since[flips] = np.where(up, t, INF)
        self.first_ready[flips[up]] = np.minimum(self.first_ready[flips[up]], t)
        for flip, is_up in zip(flips.tolist(), up.tolist(), strict=True):
            name = f.pod_names[flip]
            if is_up:
                self.log.add(t, "Normal", "PodReady", f"pod/{name}", "Pod condition Ready changed to True")
            else:
                self.log.add(
                    t, "Warning", "PodNotReady", f"pod/{name}", "Pod condition Ready changed to False"
                )
        self.ready = pod_ready
        self.pods.ready_set(t, pod_ready.copy())

    # -- the loop ----------------------------------------------------------------------------

    def _end_ramps(self, t: int, route_wls: list[list[int]], wl_span: list[Any], want: list[int]) -> None:
        """Close the start-up ramp of each route whose workloads all have every replica Ready at
        ``t`` (counted as the workload series count Ready); requests from ``t`` on are steady."""
        ready = self.ready & self.pods.admitted & ~self.pods.deleting
        tr = self.traffic
        for ri in np.flatnonzero(tr.ramp_open).tolist():
            if all(int(ready[wl_span[i]].sum()) >= want[i] for i in route_wls[ri]):
                tr.ramp_open[ri] = False
                tr.ramp_end[ri] = t

    def run(self) -> Result:
        self.begin()
        self.advance(self.ticks)
        return self.finish()

    def begin(self) -> None:
        """What the loop needs before its first step: the steps' times, the rates the traffic
        wants, the record and the traffic phases."""
        f = self.fleet
        spec = self.spec
        self.ticks = spec.duration // spec.step
        self.done = 0  # the steps run so far
        self.times = np.arange(self.ticks, dtype=np.int64) * spec.step
        self.recorder = Recorder(self, self.ticks)
        # The start-up ramp, per route: open until every workload behind it first has all its
        # replicas Ready (as WorkloadSummary.all_ready_ms has it); its answers' latency apart.
        self.route_wls = [distinct(f.pod_workload[r.selects]).tolist() for r in f.routes]
        self.want = [w.spec.replicas for w in self.scenario.workloads]
        ramp_open = np.array([bool(ws) and all(self.want[i] > 0 for i in ws) for ws in self.route_wls], bool)
        self.traffic = Traffic(
            spec,
            f,
            self.rng,
            self.ctr,
            self.capacity,
            self.mesh,
            self.pods,
            self.rates(),
            self.recorder.route_columns,
            self.recorder.route_block,
            ramp_open,
        )
        self.admit_version, self.to_admit = -1, False
        self.timed_actions()
        self.ramps = bool(self.traffic.ramp_open.any())  # (a ramp once closed stays so)

    def rates(self, known: F64 | None = None) -> F64:
        """Per route and step: the requests per second its traffic wants (``known``: those of
        the first steps, the same traffic's)."""
        routes = self.fleet.routes
        kept = 0 if known is None else min(known.shape[1], self.ticks)
        times = self.times[kept:].tolist()
        wanted = [[r.traffic.rate_at(t) for t in times] for r in routes]
        rates = np.array(wanted, np.float64).reshape(len(routes), len(times))
        if known is None:
            return rates
        return np.concatenate([known[:, :kept], rates], axis=1)

    def timed_actions(self) -> None:
        """The scenario's actions by their time: pod deletions (by name) and the others (by index)."""
        self.deletions: dict[int, list[str]] = {}
        self.others: dict[int, list[int]] = {}
        self.node_actions: dict[
            int, list[NodeDown | ZoneDown | NodeUp | ZoneUp | Drain | Uncordon | NodePoolUpgrade]
        ] = {}
        for i, a in enumerate(self.spec.actions):
            if isinstance(a, DeletePod):
                self.deletions.setdefault(a.at, []).append(a.pod)
            elif isinstance(a, NodeDown | ZoneDown | NodeUp | ZoneUp | Drain | Uncordon | NodePoolUpgrade):
                self.node_actions.setdefault(a.at, []).append(a)
            else:
                self.others.setdefault(a.at, []).append(i)

    def advance(self, until: int) -> None:
        """Run the steps from the next one up to (not including) step ``until``."""
        rec = self.recorder.series
        recorder = self.recorder
        wl_span, route_wls, want = self.recorder.wl_span, self.route_wls, self.want
        others, actions, node_actions = self.others, self.deletions, self.node_actions
        admit_version, to_admit, ramps = self.admit_version, self.to_admit, self.ramps
        nodes = self.nodes
        start = self.done
        run_with(self.capacity.compiled)  # (another run may have gone between this one's steps)
        for k, t in enumerate(self.times[start:until].tolist(), start):
            self.log.synced_pods.clear()
            if t in node_actions:
                for a in node_actions[t]:
                    if isinstance(a, Drain | Uncordon):
                        self._drain_action(t, a)
                    elif isinstance(a, NodePoolUpgrade):
                        self._upgrade_action(t, a)
                    else:
                        self._node_action(t, a)
            if t in others:
                self._act(t, others[t])
            if t in actions:
                self._delete(t, self._named(t, actions[t]))
            if nodes.wake <= t:
                self._node_controller(t)
            if self.any_deleting:
                self._reap(t)
            if self.drains and self._drains_due(t):
                self._drain_step(t)
            if self.upgrades and self._upgrade_due(t):
                self._upgrade_step(t)
            if self.autoscalers:
                self._autoscale(t)
            self._reconcile(t)
            if admit_version != self.pods.version:  # eligible and admitted change with the version
                admit_version = self.pods.version
                to_admit = bool((self.eligible & ~self.pods.admitted).any())
            if to_admit:
                self._admit(t)
            if nodes.pending:
                # The scheduler tries its pending pods again once something changed that may let
                # them in (a pod deleted or gone, a node back or untainted, another bound): the
                # cluster events that requeue them.
                state = (int(self.pods.deleting.sum()), int(self.pods.gone.sum()), nodes.version)
                if nodes.tried != state:
                    nodes.tried = state
                    self._bind(self._schedule([], t), t)
            self._lifecycle(t)
            self._probes(t)
            self._triggers(t)
            self._conditions(t)
            if self.controllers.deployments:
                # The Deployment controller sees a pod's Ready change within the same instant (a
                # watch event), not a step later: a rollout's next move follows at once.
                self._reconcile(t, sets=False)
            if self.rollouts:
                self._track_rollouts(t)
            if ramps:
                self._end_ramps(t, route_wls, wl_span, want)
                ramps = bool(self.traffic.ramp_open.any())
            self.traffic.send(t, k, rec)
            if self.capacity.any:
                self.traffic.serve(t, k, rec)
                if self.autoscalers:  # (what metrics-server reports: only an HPA reads it)
                    self.pod_metrics.sample(k, self.capacity.cpu_in_use(self.ctr.running()))
                recorder.record_cpu(k, self)
            recorder.record_state(k, t, self)
        self.admit_version, self.to_admit, self.ramps = admit_version, to_admit, ramps
        self.done = max(start, min(until, self.ticks))

    def finish(self) -> Result:
        """The run's Result, once every step has run."""
        f = self.fleet
        events = self.log.take()
        for m in self.mesh.values():
            events.extend(m.events)
        events.sort(key=attrgetter("time_ms"))
        summary = Summary(
            self.scenario, f, self.ctr, self.controllers, self.mesh, self.rollouts, self.admitted_at,
            self.first_ready, self.traffic, events, self.nodes, self.pods,
        )  # fmt: skip
        return summary.result(self.times, self.recorder.series, self.recorder.wl_pods)
