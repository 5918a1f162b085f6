"""The fixed-step loop. Each tick, in order: admit pods; container exits, crashes and starts;
process state; probe workers (startup, readiness, liveness); kills for failed liveness/startup
and their same-sync restarts; readiness manual triggers for pods that synced; pod conditions;
endpoints; traffic over [t, t + step); the record.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import numpy.typing as npt

from probesim.engine.autoscaler import METRIC_WINDOW_MS, SYNC_PERIOD_MS, Autoscaler, PodViews
from probesim.engine.behavior import INF
from probesim.engine.capacity import GRID, CapacityModel, grid_quantiles, grouped_cdfs, mixture_cdf, timed_out
from probesim.engine.containers import Containers
from probesim.engine.controllers.deployment import TIMED_OUT_REASON, replica_set_name
from probesim.engine.controllers.workloads import Controllers, PodArrays, size_series
from probesim.engine.events import EventLog
from probesim.engine.fleet import FAILURE, RUNNING, SUCCESS, TERMINATING, Fleet, Route, build
from probesim.engine.kubelet import ProbeWorkers
from probesim.engine.mesh import build_mesh
from probesim.model.scenario import (
    DeletePod,
    Scenario,
    SetReadinessGate,
)
from probesim.results import CAUSES, Result, RolloutSummary, RouteSummary, WorkloadSummary

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
ROUTE_SERIES = (
    "offered",
    "ok",
    *CAUSES,
    "inflight",
    "dropped",
    "interrupted",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "fault_aborts",
    "ejections_active",
)


def simulate(scenario: Scenario) -> Result:
    """Run ``scenario``; the same scenario (including its seed) always gives the same Result."""
    return _Run(scenario).run()


# When a client's TCP sends its SYN again, after the first, if nothing answers (Linux: initial
# RTO 1 s, doubled each time, tcp_syn_retries 6); it gives up at 127 s.
SYN_AT_MS = (0, 1_000, 3_000, 7_000, 15_000, 31_000, 63_000)
SYN_GIVE_UP_MS = 127_000


@dataclass
class _Rollout:
    """A rollout under way: what started it, toward which template, and how it went."""

    wi: int
    kind: str  # the action that started it
    template: int
    start: int
    end: int | None = None
    stalled: int | None = None
    superseded: int | None = None


class _Connections:
    """A route's client connections: with keep-alive, the open ones per pod (with the instance
    of the container they reached) and the clients (k6 VUs) holding none; and the requests
    whose connection is still being opened (``noEndpoint: retransmit``)."""

    def __init__(self, n_pods: int) -> None:
        self.open = np.zeros(n_pods, np.int64)
        self.instance = np.full(n_pods, -1, np.int64)
        self.loose = 0
        self.connecting: list[list[int]] = []  # [first SYN ms, SYNs sent, requests]
        self.waited: list[tuple[int, int]] = []  # this step's: (requests, ms they waited to connect)

    @property
    def waiting(self) -> int:
        """Requests still waiting for their SYN to be answered."""
        return sum(e[2] for e in self.connecting) if self.connecting else 0

    def wait(self, t: int, n: int) -> None:
        """``n`` requests sent a SYN at ``t`` that nothing answered."""
        if n:
            self.connecting.append([t, 1, n])

    def due(self, t: int, ready: bool, timeout: int) -> tuple[int, int]:
        """Requests whose SYN is resent now: how many get through (``ready``: an endpoint
        answers) and how many the client gives up on (its timeout, or TCP's)."""
        go = late = 0
        keep = []
        limit = min(timeout, SYN_GIVE_UP_MS)
        for e in self.connecting:
            first, sent, n = e
            if t - first >= limit:
                late += n
            elif sent < len(SYN_AT_MS) and t >= first + SYN_AT_MS[sent]:
                if ready:
                    go += n
                    self.waited.append((n, t - first))
                    continue
                e[1] += 1
                keep.append(e)
            else:
                keep.append(e)
        self.connecting = keep
        return go, late


class _Run:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.spec = scenario.spec
        self.fleet: Fleet = build(scenario)
        f = self.fleet
        self.rng = np.random.default_rng(self.spec.seed)  # every random draw of the run comes from here
        self.log = EventLog()
        self.ctr = Containers(f)
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
        self.rollouts: list[_Rollout] = []
        self.rolled_to: dict[int, int] = {}  # per Deployment: the template its last rollout went to
        # Readiness gates set by actions: per condition type, when it is True on each pod (INF:
        # False); None until an action sets one (then gates_at follows these).
        self.gate_true: dict[str, I64] | None = None
        self.autoscalers = {
            i: Autoscaler(h)
            for i, w in enumerate(scenario.workloads)
            if (h := scenario.autoscaler_for(w)) is not None
        }
        self.ready_transition = np.zeros(n, np.int64)
        # CPU used per container over the metric window (what metrics-server reports).
        self.cpu_window = np.zeros((max(METRIC_WINDOW_MS // self.spec.step, 1), f.n_containers))
        self.admitted = np.zeros(n, bool)
        self.deleting = np.zeros(n, bool)  # has a deletionTimestamp
        self.any_deleting = False
        self.gone = np.zeros(n, bool)  # all containers stopped: removed from the API
        self.admitted_at = np.full(n, INF, np.int64)
        self.ready = np.zeros(n, bool)
        self.ready_since = np.full(n, INF, np.int64)
        self.first_ready = np.full(n, INF, np.int64)
        self.gates_at = np.full(n, INF, np.int64)
        self.gate_times: set[int] = set()  # every pod's gates_at, to look the step's time up
        self.dirty = True
        self.version = 0  # bumps whenever what traffic sees may have changed
        delay = self.spec.endpoint_delay
        self.visible_history: deque[tuple[int, B]] = deque([(-delay - 1, np.zeros(n, bool))])
        self.mesh = build_mesh(scenario, f, self.rng)
        self.route_cache: list[tuple[int, I64, I64]] = [
            (-1, np.empty(0, np.int64), np.empty(0, np.int64))
        ] * len(f.routes)
        self.conns = [_Connections(n) for _ in f.routes]
        self.uniform = [-1] * len(f.routes)
        self.mesh_view: dict[int, tuple[B, I64, I64]] = {}

    # -- steps -------------------------------------------------------------------------------

    def _admit(self, t: int) -> None:
        """Bare Pods: created when the run starts."""
        self._create(np.flatnonzero(self.eligible & ~self.admitted), t)

    def _create(self, new: I64, t: int) -> None:
        """New pods: scheduled now, their containers start after the pod start delay."""
        f = self.fleet
        if new.size == 0:
            return
        self.admitted[new] = True
        self.admitted_at[new] = t
        self.ready_transition[new] = t
        self.version += 1
        self.gates_at[new] = np.minimum(t + f.pod_gate_delay[new], INF)
        self.gate_times.update(self.gates_at[new].tolist())
        if self.gate_true is not None:
            self._gates_at_creation(new, t)
        conts = np.flatnonzero(np.isin(f.container_pod, new))
        self.ctr.admit(new, t + self.spec.cluster.pod_start_delay)
        for w in self.workers.values():
            w.admit(conts, t)
        spaces = [w.metadata.namespace for w in self.scenario.workloads]
        for p, wi in zip(new.tolist(), f.pod_workload[new].tolist(), strict=True):
            name = f.pod_names[p]
            self.log.add(
                t,
                "Normal",
                "Scheduled",
                f"pod/{name}",
                f"Successfully assigned {spaces[wi]}/{name} to node-1",
                "default-scheduler",
            )
        self.dirty = True

    def _delete(self, t: int, victims: list[int]) -> None:
        """``kubectl delete pod``: liveness and startup stop (quietly, as Success), readiness goes
        on; every container is stopped within the pod's grace period and not restarted (§2.2.14,
        §2.4.33); a ReplicaSet replaces the pod at once."""
        f = self.fleet
        for p in victims:
            if not self.admitted[p] or self.deleting[p]:
                continue
            self.deleting[p] = True
            self.any_deleting = True
            conts = np.arange(*self._containers_of(p).indices(f.n_containers))
            for kind in ("liveness", "startup"):
                w = self.workers[kind]
                w.release(conts, t)
                w.active[conts] = False
                w.busy_until[conts] = INF
                w.seen[conts] = self.ctr.instance[conts]
                w.cached[conts] = SUCCESS
            self.ctr.stop_pod(p, t, self.log)
        self.dirty = True
        self.version += 1

    def _containers_of(self, p: int) -> slice:
        """Pod ``p``'s containers (contiguous, from its first to the next pod's)."""
        first = self.fleet.pod_first_container
        return slice(int(first[p]), int(first[p + 1]) if p + 1 < first.size else self.fleet.n_containers)

    def _view(self) -> PodArrays:
        """The pods as the controllers read them now."""
        f = self.fleet
        first = f.pod_first_container
        if f.n_pods:
            started = np.minimum.reduceat(self.ctr.instance >= 0, first)
            restarts = np.maximum.reduceat(self.ctr.restart_count, first)
            stopped = ~np.maximum.reduceat(self.ctr.alive(), first)
        else:
            started, restarts, stopped = np.zeros(0, bool), np.zeros(0, np.int64), np.zeros(0, bool)
        return PodArrays(
            admitted=self.admitted,
            deleting=self.deleting,
            gone=self.gone,
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
        create, delete = self.controllers.reconcile(t, self._view, self.version)
        if sets:
            # StatefulSets move once a step, seeing the Ready changes of the step before.
            more, gone = self.controllers.reconcile_sets(t, self._view, self.version)
            create += more
            delete += gone
        if create:
            self._create(np.array(create, np.int64), t)
        if delete:
            self._delete(t, delete)

    def _act(self, t: int, indices: list[int]) -> None:
        """Workload actions (rollout, rollback, restart, scale, pause, resume) and readiness-gate
        changes, at their time, before the controllers' sync."""
        for i in indices:
            a = self.spec.actions[i]
            if isinstance(a, SetReadinessGate):
                self._set_gate(t, a)
                continue
            assert not isinstance(a, DeletePod)
            self.controllers.act(t, i, a)
            wi = next(j for j, w in enumerate(self.scenario.workloads) if w.name == a.workload)
            ctl = self.controllers.deployments.get(wi)
            st = self.controllers.sets.get(wi)
            if ctl is not None and not ctl.d.paused:
                target = ctl.d.template
            elif st is not None:
                target = st.update_revision
            else:
                continue
            if target == self.rolled_to.get(wi, 0):
                continue
            for r in self.rollouts:
                if r.wi == wi and r.end is None and r.superseded is None:
                    r.superseded = t
            self.rollouts.append(_Rollout(wi, a.kind, target, t))
            self.rolled_to[wi] = target

    def _track_rollouts(self, t: int) -> None:
        """A rollout ends when ``kubectl rollout status`` would say so (updated = replicas =
        available, no old pods left active); it stalls when Progressing goes False."""
        under_way = [r for r in self.rollouts if r.end is None and r.superseded is None]
        if not under_way:
            return
        view = self._view()
        for r in under_way:
            if r.wi in self.controllers.sets:
                if self.controllers.set_done(r.wi, view, t):
                    r.end = t
                continue
            d = self.controllers.deployments[r.wi].d
            if d.template == r.template and self.controllers.rollout_done(r.wi, view, t):
                r.end = t
                continue
            cond = d.status.condition("Progressing")
            if r.stalled is None and cond is not None and cond.reason == TIMED_OUT_REASON:
                r.stalled = t

    def _rollout_summaries(self, times: I64, rec: dict[str, I64]) -> list[RolloutSummary]:
        f = self.fleet
        out = []
        for r in self.rollouts:
            w = self.scenario.workloads[r.wi]
            stop = r.end if r.end is not None else r.superseded
            span = (times >= r.start) & (times <= stop if stop is not None else True)
            key = f"workload.{w.name}"
            failed: dict[str, int] = {}
            for route in f.routes:
                if not (route.selects & (f.pod_workload == r.wi)).any():
                    continue
                for c in CAUSES:
                    failed[c] = failed.get(c, 0) + int(rec[f"route.{route.name}.{c}"][span].sum())
            plan = f.plans[r.wi]
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
                    min_ready=int(rec[f"{key}.ready"][span].min()) if span.any() else 0,
                    min_available=int(rec[f"{key}.available"][span].min()) if span.any() else 0,
                    failed={c: n for c, n in failed.items() if n},
                )
            )
        return out

    def _set_gate(self, t: int, a: SetReadinessGate) -> None:
        """A readiness gate's condition set on existing pods; pods created later get theirs as
        the behaviour's readinessGates delay says."""
        f = self.fleet
        if self.gate_true is None:
            self.gate_true = {}
            for p in np.flatnonzero(self.admitted):
                self._gates_at_creation(np.array([p]), int(self.admitted_at[p]))
        cond = a.condition
        if a.pod is not None:
            pods = np.array([f.pod_names.index(a.pod)], np.int64)
        else:
            wi = next(j for j, w in enumerate(self.scenario.workloads) if w.name == a.workload)
            pods = np.flatnonzero((f.pod_workload == wi) & self.admitted & ~self.gone)
        arr = self.gate_true.setdefault(cond, np.full(f.n_pods, -1, np.int64))
        arr[pods] = t if a.status else INF
        self._gates_from_conditions(pods)
        self.dirty = True

    def _gates_at_creation(self, new: I64, t: int) -> None:
        """Each declared gate of the new pods True after its behaviour delay (INF: never)."""
        assert self.gate_true is not None
        f = self.fleet
        for p in new.tolist():
            wi, tpl = int(f.pod_workload[p]), int(f.pod_template[p])
            w = f.plans[wi].revisions[tpl] if wi in f.plans else None
            rw = w.workload if w is not None else self.scenario.workloads[wi]
            wb = w.behavior if w is not None else self.scenario.behavior(rw.name)
            for g in rw.pod_spec.readiness_gates:
                arr = self.gate_true.setdefault(g.condition_type, np.full(f.n_pods, -1, np.int64))
                arr[p] = (
                    min(t + wb.readiness_gates[g.condition_type], int(INF))
                    if g.condition_type in wb.readiness_gates
                    else INF
                )
        self._gates_from_conditions(new)

    def _gates_from_conditions(self, pods: I64) -> None:
        assert self.gate_true is not None
        at = np.zeros(pods.size, np.int64)
        for arr in self.gate_true.values():
            at = np.maximum(at, arr[pods])
        self.gates_at[pods] = at
        self.gate_times.update(at.tolist())

    def _autoscale(self, t: int) -> None:
        """HPA syncs every 15 s from the start of the run."""
        if t % SYNC_PERIOD_MS or not self.autoscalers:
            return
        f = self.fleet
        cap = self.capacity
        ctr = self.ctr
        first = f.pod_first_container
        # Per pod, over its containers (contiguous from its first): all running, all sampled
        # over the metric window, all with a CPU request (and their sum), all created.
        alive = ctr.alive()
        running = np.minimum.reduceat(alive.astype(np.int8), first).astype(bool)
        old = np.minimum.reduceat((t - ctr.started_at >= METRIC_WINDOW_MS).astype(np.int8), first)
        sampled = running & old.astype(bool)
        has_request = np.minimum.reduceat((cap.request_m > 0).astype(np.int8), first).astype(bool)
        request = np.add.reduceat(cap.request_m, first)
        created = np.minimum.reduceat((ctr.instance >= 0).astype(np.int8), first).astype(bool)
        n_cont = np.diff(np.append(first, f.n_containers))
        rows = self.cpu_window.shape[0]
        for wi, hpa in self.autoscalers.items():
            pods = np.flatnonzero((f.pod_workload == wi) & self.admitted & ~self.gone)
            usage = np.full(pods.size, np.nan)
            for nc in np.unique(n_cont[pods]).tolist():
                sel = np.flatnonzero(n_cont[pods] == nc)
                grp = pods[sel]
                conts = first[grp][:, None] + np.arange(nc)[None, :]  # pods × containers
                # Summed in the order a pod's own window[:, conts].sum() takes (time slot, then
                # container), one row per pod, so that the float sums are the same.
                window = self.cpu_window[:, conts].transpose(1, 0, 2).reshape(grp.size, rows * nc)
                usage[sel] = np.ascontiguousarray(window).sum(axis=1) / rows
            views = PodViews(
                request_m=np.where(has_request[pods], request[pods], 0.0),
                usage_m=np.where(sampled[pods], usage, np.nan),
                pending=~created[pods],
                deleting=self.deleting[pods],
                ready=self.ready[pods],
                transition=self.ready_transition[pods],
                start=self.admitted_at[pods],
            )
            current = self.desired[wi]
            new, reason = hpa.sync(views, current, t)
            if new != current:
                self.desired[wi] = new
                obj = f"horizontalpodautoscaler/{hpa.hpa.name}"
                msg = f"New size: {new}; reason: {reason}"
                self.log.add(t, "Normal", "SuccessfulRescale", obj, msg, "horizontal-pod-autoscaler")

    def _reap(self) -> None:
        """Deleted pods whose containers have all stopped leave the API (and the endpoints)."""
        alive = self.ctr.alive()
        for p in np.flatnonzero(self.deleting & ~self.gone):
            if not alive[self._containers_of(int(p))].any():
                self.gone[p] = True
                self.dirty = True
                self.version += 1

    def _started(self) -> B:
        s = self.workers["startup"]
        return self.ctr.alive() & (~s.spec.has | (s.visible(self.ctr.instance) == SUCCESS))

    def _lifecycle(self, t: int) -> None:
        self.ctr.step(t, self.log)
        beh = self.fleet.behaviors
        if self.ctr.changed or beh.wakeup <= t:
            # A container being killed stops answering, unless it ignores SIGTERM.
            serving = self.ctr.running() | ((self.ctr.state == TERMINATING) & beh.ignores_sigterm)
            beh.evaluate(t, serving, self.ctr.started_at)
            self.ctr.changed = False
            self.dirty = True
            self.version += 1

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
        running = self.ctr.state == RUNNING
        live = self.workers["liveness"]
        start = self.workers["startup"]
        for kind, w in (("liveness", live), ("startup", start)):
            for c in np.flatnonzero(running & w.spec.has & (w.visible(inst) == FAILURE)):
                if self.ctr.state[c] == RUNNING:
                    self.ctr.kill(int(c), t, kind, int(w.spec.grace[c]), self.log)
        self._lifecycle(t)

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
        if not self.dirty and t not in self.gate_times:
            return
        self.dirty = False
        f = self.fleet
        r = self.workers["readiness"]
        started = self._started()
        c_ready = started & (~r.spec.has | (r.visible(self.ctr.instance) == SUCCESS))
        pod_ready = np.minimum.reduceat(c_ready.astype(np.int8), f.pod_first_container).astype(bool)
        pod_ready &= self.admitted & ~self.gone & (self.gates_at <= t)
        # A container replaced since the last step (an exit and a restart within one step) was
        # not ready in between: the kubelet reports the dead one not ready and the new one starts at
        # readiness Failure, so Ready went False and back, with a new transition time.
        replaced = np.zeros(f.n_pods, bool)
        replaced[f.container_pod[self.ctr.restarted_at > t - self.spec.step]] = True
        for p in np.flatnonzero(replaced & pod_ready & self.ready):
            name = f.pod_names[p]
            self.log.add(t, "Warning", "PodNotReady", f"pod/{name}", "Pod condition Ready changed to False")
            self.log.add(t, "Normal", "PodReady", f"pod/{name}", "Pod condition Ready changed to True")
            self.ready_transition[p] = self.ready_since[p] = t
            self.version += 1
        flips = np.flatnonzero(pod_ready != self.ready)
        if flips.size == 0:
            return
        self.version += 1
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
        self.visible_history.append((t, pod_ready.copy()))

    def _visible_ready(self, t: int) -> B:
        """Pod Ready as clients see it, ``endpointDelay`` late."""
        cutoff = t - self.spec.endpoint_delay
        h = self.visible_history
        while len(h) > 1 and h[1][0] <= cutoff:
            h.popleft()
            self.version += 1
        return h[0][1]

    def _traffic(self, t: int, k: int, rec: dict[str, I64]) -> None:
        f = self.fleet
        beh = f.behaviors
        step = self.spec.step
        visible = self._visible_ready(t)
        for m in self.mesh.values():
            m.tick(t)
        if self.capacity.any:
            # What containers that stopped or were replaced held is lost before new arrivals:
            # queued requests and answers still on their way fail now (connection reset).
            cap = self.capacity
            alive = self.ctr.alive()
            # Only containers that took requests may hold any (the rest stay out of the masks:
            # the answer buffers are slots × containers).
            gone = np.flatnonzero(self.touched & (~alive | (self.ctr.instance != cap.instance)))
            self.touched[gone] = False
            cap.drop(alive, self.ctr.instance)
            for ri, route in enumerate(f.routes):
                self.step_cdf[ri] = 0.0
                self._give_up(ri, k, rec)  # their client gave up by now, before the stop was seen
                if gone.size == 0:
                    continue
                pend = self.pending[ri][:, :, gone]
                queued = self.queued[ri][:, gone].sum(axis=1)
                n_pend, n_queued = int(pend.sum()), int(queued.sum())
                self.queued_rows[ri] -= queued
                self.pending_n[ri] -= n_pend
                self.queued_n[ri] -= n_queued
                rec[f"route.{route.name}.killed"][k] += n_queued + n_pend
                self.pending[ri][:, :, gone] = 0
                self.queued[ri][:, gone] = 0
                self.orphans[ri][gone] = 0  # already timeouts
                # The client sees those fail now, after waiting since they were sent.
                per_slot = pend.sum(axis=(0, 2))
                for slot in np.flatnonzero(per_slot):
                    waited = t - self.later_t[ri][slot] / self.later_n[ri][slot]
                    self.step_cdf[ri] += per_slot[slot] * (waited <= GRID)
                for row in np.flatnonzero(queued):
                    waited = ((k - row) % queued.size) * step
                    self.step_cdf[ri] += queued[row] * (waited <= GRID)
            self._deliver(t, k, rec)
            cap.begin_step(float(step))
        for ri, route in enumerate(f.routes):
            key, col = f"route.{route.name}", self.cols[ri]
            conns, end = self.conns[ri], route.traffic.end()
            conns.waited.clear()
            if conns.waiting and end is not None and t > end + route.traffic.graceful_stop:
                col["interrupted"][k] += conns.waiting  # still connecting
                conns.connecting.clear()
            if route.mirror_of >= 0:
                # The copies a client sidecar mirrored this step (fire and forget).
                primary = self.mesh.get(route.mirror_of)
                n = primary.mirrored_now if primary is not None else 0
                if n == 0:
                    continue
            else:
                rate = float(self.rates[ri, k])
                if rate <= 0 and route.acc < 1 and not conns.waiting:
                    continue
                route.acc += rate * step / 1000
                n = int(route.acc + 1e-9)
                route.acc -= n
            vus = route.traffic.max_vus
            if vus is not None:
                # k6 constant-arrival-rate: an iteration needs a free VU; requests still
                # waiting for an answer hold theirs. The rest are dropped iterations.
                busy = int(self._held(ri).sum()) + conns.waiting
                sent = min(n, max(vus - busy, 0))
                col["offered"][k] = n
                col["dropped"][k] = n - sent
                n = sent
            else:
                col["offered"][k] = n
            if n == 0 and not conns.waiting:
                continue
            version, eps, cat = self.route_cache[ri]
            mesh = self.mesh.get(ri)
            if version != self.version:
                publish = f.publish_not_ready.get(route.service.name, False)
                ep_ready = (self.admitted & ~self.gone) if publish else (visible & ~self.deleting)
                eps = np.flatnonzero(route.selects & ep_ready & (route.target_container >= 0))
                cat = self._categories(route, eps)
                self.route_cache[ri] = (self.version, eps, cat)
                # All the endpoints in one category (a request's fate): its index, else -1.
                self.uniform[ri] = int(cat[0]) if cat.size and bool((cat == cat[0]).all()) else -1
                if mesh is not None:
                    # The sidecars' view of the hosts: which are endpoints, what each answers.
                    in_eps = np.isin(mesh.pods, eps)
                    tc_all = route.target_container[mesh.pods]
                    cat_pod = np.zeros(mesh.pods.size, np.int64)
                    status_pod = np.zeros(mesh.pods.size, np.int64)
                    pos = np.searchsorted(eps, mesh.pods[in_eps])
                    cat_pod[in_eps] = cat[pos]
                    status_pod[in_eps] = beh.status[route.target, tc_all[in_eps]]
                    self.mesh_view[ri] = (in_eps, cat_pod, status_pod)
            kk = eps.size
            if mesh is not None:
                # Through the clients' sidecars: their load balancing, ejections and faults.
                in_eps, cat_pod, status_pod = self.mesh_view[ri]
                got, aborted, uh = mesh.send(t, n, in_eps, cat_pod, status_pod)
                per_ep = got[in_eps]
                col["no_endpoint"][k] += uh
                col["error_status"][k] += aborted  # FI: answered by the client's sidecar
                col["fault_aborts"][k] += aborted
                col["ejections_active"][k] = mesh.ejections_active()
            elif route.traffic.keep_alive:
                eps, per_ep = self._keep_alive(ri, n, eps, t, k, rec, key)
                cat = self._categories(route, eps)
                kk = eps.size
            else:
                if conns.waiting:
                    go, late = conns.due(t, kk > 0, route.timeout)
                    col["timeout"][k] += late
                    n += go
                if kk == 0:
                    if route.traffic.no_endpoint == "retransmit":
                        conns.wait(t, n)
                    else:
                        col["no_endpoint"][k] += n
                    continue
                if self.uniform[ri] >= 0 and not self.capacity.any:
                    # Every endpoint in one category: the split changes no count.
                    route.cursor = (route.cursor + n) % kk
                    counts = np.zeros(5, np.int64)
                    counts[self.uniform[ri]] = n
                else:
                    per_ep = np.full(kk, n // kk, np.int64)
                    per_ep[(route.cursor + np.arange(n % kk)) % kk] += 1
                    route.cursor = (route.cursor + n) % kk
                    counts = np.bincount(cat, weights=per_ep, minlength=5).astype(np.int64)
            if mesh is not None or route.traffic.keep_alive:
                counts = (
                    np.bincount(cat, weights=per_ep, minlength=5).astype(np.int64)
                    if kk
                    else np.zeros(5, np.int64)
                )
            col["restarting"][k] += counts[1]
            col["not_answering"][k] += counts[2]
            col["error_status"][k] += counts[3]
            ok_now = int(counts[4])
            cap = self.capacity
            if cap.any and kk:
                # Requests to loaded containers join their backlog; they finish (or time out)
                # when served, in _serve. What does not fit is refused at once.
                tc = route.target_container[eps]
                queued = (cat == 4) & cap.loaded[tc] & (per_ep > 0)
                if queued.any():
                    qc = tc[queued]
                    offered = per_ep[queued]
                    took = cap.accept(ri, qc, offered, self.ctr.instance[qc])
                    self.touched[qc] = True
                    q = self.queued[ri]
                    np.add.at(q, (k % q.shape[0], qc), took)
                    self.queued_n[ri] += int(took.sum())
                    self.queued_rows[ri][k % q.shape[0]] += int(took.sum())
                    ok_now -= int(offered.sum())
                    col["rejected"][k] += int(offered.sum() - took.sum())
            col["ok"][k] += ok_now

    def _held(self, ri: int) -> I64:
        """Per container, route ``ri``'s requests in flight: queued, or served with the answer
        (or the client's timeout) still to come. Each holds its client (a k6 VU) and its
        connection; one the client gave up on holds neither."""
        return self.pending[ri].sum(axis=(0, 1)) + self.queued[ri].sum(axis=0)

    def _in_flight(self, ri: int) -> int:
        """Route ``ri``'s requests whose client still waits: queued, answers (or timeouts) on
        their way, and those still connecting."""
        return self.queued_n[ri] + self.pending_n[ri] + self.conns[ri].waiting

    def _queue_slots(self, route: Route) -> int:
        """Arrival steps the client's side of a route's backlog keeps: up to its timeout (one,
        ages untracked, without a timeout)."""
        if route.timeout >= INF:
            return 1
        return -(-int(route.timeout) // self.spec.step) + 1

    def _give_up(self, ri: int, k: int, rec: dict[str, I64]) -> None:
        """Requests still queued at their client's deadline (sent ``timeout`` ago) are timeouts
        now, whatever their container does with them later."""
        q = self.queued[ri]
        route = self.fleet.routes[ri]
        if q.shape[0] == 1:
            return
        oldest = (k - (q.shape[0] - 1)) % q.shape[0]
        if self.queued_rows[ri][oldest] == 0:
            return
        row = q[oldest]
        n = int(row.sum())
        rec[f"route.{route.name}.timeout"][k] += n
        self.orphans[ri] += row
        row[:] = 0
        self.queued_n[ri] -= n
        self.queued_rows[ri][oldest] = 0
        self.step_cdf[ri] += n * (float(route.timeout) <= GRID)

    def _cohorts(self, ri: int, k: int, srv: I64) -> tuple[I64, I64, I64, I64]:
        """What route ``ri``'s containers served this step (``srv``: per outcome class and
        container), oldest first: requests whose client gave up are dropped, the rest taken off
        the client's side of the backlog by arrival step. Returns (class, container, steps
        waited, count) per cohort, each class's count shared among the arrival steps in
        proportion (the remainders by a north-west corner)."""
        q = self.queued[ri]
        s = q.shape[0]
        tot = srv.sum(axis=0)
        cols = np.flatnonzero(tot)
        if cols.size == 0:
            e = np.empty(0, np.int64)
            return e, e, e, e
        orph = np.minimum(self.orphans[ri][cols], tot[cols])
        self.orphans[ri][cols] -= orph
        need = tot[cols] - orph
        ages = np.arange(s - 1, -1, -1)  # oldest first
        rows = (k - ages) % s
        # Only the arrival steps that still hold requests (FIFO: a few), and the newest, which
        # takes what was untracked: the rest hold nothing to take (slots × containers per step).
        held: B = (self.queued_rows[ri] > 0)[rows]
        held[-1] = True
        ages, rows = ages[held], rows[held]
        at = np.ix_(rows, cols)
        sub = q[at]
        before = np.cumsum(sub, axis=0) - sub
        take = np.minimum(sub, np.maximum(need - before, 0))
        q[at] -= take
        self.queued_n[ri] -= int(take.sum())
        self.queued_rows[ri][rows] -= take.sum(axis=1)
        take[-1] += need - take.sum(axis=0)  # none untracked, but fresh if there were
        if srv.shape[0] == 1:
            # One outcome class: each container's cohorts are its arrival steps' takes, in
            # (container, age) order, what the general split below gives with one class.
            cc, j = np.nonzero(take.T)
            return np.zeros(cc.size, np.int64), cols[cc], ages[j], take[j, cc]
        buckets = np.vstack([orph[None, :], take])  # (1 + s) × containers: orphans, then by age
        waited = np.concatenate([[-1], ages])
        part = srv[:, cols]
        multi = (buckets > 0).sum(axis=0) > 1
        one = np.flatnonzero(~multi)
        vs, cc = np.nonzero(part[:, one])
        cc = one[cc]
        bs = np.argmax(buckets > 0, axis=0)[cc]
        counts = part[vs, cc]
        if multi.any():
            m = np.flatnonzero(multi)
            # Only the classes and arrival steps these containers hold (FIFO: a few steps).
            kv = np.flatnonzero(part[:, m].any(axis=1))
            kb = np.flatnonzero(buckets[:, m].any(axis=1))
            n, b = part[np.ix_(kv, m)], buckets[np.ix_(kb, m)]
            joint = n[:, None, :] * b[None, :, :] // b.sum(axis=0)
            r, c = n - joint.sum(axis=1), b - joint.sum(axis=0)
            rh, ch = np.cumsum(r, axis=0), np.cumsum(c, axis=0)
            lo = np.maximum((rh - r)[:, None, :], (ch - c)[None, :, :])
            joint += np.maximum(np.minimum(rh[:, None, :], ch[None, :, :]) - lo, 0)
            jv, jb, jm = np.nonzero(joint)
            vs = np.concatenate([vs, kv[jv]])
            bs = np.concatenate([bs, kb[jb]])
            cc = np.concatenate([cc, m[jm]])
            counts = np.concatenate([counts, joint[jv, jb, jm]])
            order = np.lexsort((bs, cc, vs))
            vs, bs, cc, counts = vs[order], bs[order], cc[order], counts[order]
        live = waited[bs] >= 0
        return vs[live], cols[cc[live]], waited[bs][live], counts[live]

    def _with_connect_wait(self, ri: int, mix: F64, n: int) -> F64:
        """The weighted latency distribution of ``n`` answers given now (``mix``), the requests
        that first waited for their SYN to be answered (``noEndpoint: retransmit``) taken out and
        put back that much later, at the typical latency of the others."""
        waited = self.conns[ri].waited
        total = sum(c for c, _ in waited)
        if total == 0 or n == 0:
            return mix * n
        share = min(total, n) / total
        typical = grid_quantiles(mix, (0.5,))[0]
        out = mix * (n - min(total, n))
        for count, ms in waited:
            out += count * share * (ms + typical <= GRID)
        return out

    def _categories(self, route: Route, pods: I64) -> I64:
        """What a request meets on each of ``pods``: 1 nothing listening, 2 hung, 3 an error
        status, 4 an answer (0 is unused)."""
        beh = self.fleet.behaviors
        tc = route.target_container[pods]
        status = beh.status[route.target, tc]
        return np.where(
            ~beh.listening[tc] | route.closed[pods],
            1,
            np.where(beh.hung[tc], 2, np.where((status >= 400) | (status < 200), 3, 4)),
        )

    def _keep_alive(
        self, ri: int, n: int, ready: I64, t: int, k: int, rec: dict[str, I64], key: str
    ) -> tuple[I64, I64]:
        """Spread ``n`` requests of a keep-alive route over the pods its clients hold connections
        to; returns the pods and their counts. kube-proxy picks a pod per connection, so an open
        connection stays with its pod whatever its readiness (kubernetes/kubernetes#100492).
        Connections close when their pod goes, and when the container serving them stops or is
        replaced, unless an Istio sidecar holds them (it answers 503 while the app is down).
        Clients reuse idle connections first; a new one opens for each request that finds none
        idle (k6 adds VUs only then) and for each client whose connection closed. Opening one
        with no Ready endpoint is refused at once (kube-proxy's REJECT), or waits for the next
        SYN (``noEndpoint: retransmit``)."""
        f, c = self.fleet, self.conns[ri]
        refused = rec[f"{key}.no_endpoint"]
        route = f.routes[ri]
        tc = route.target_container
        has = tc >= 0
        inst = np.full(f.n_pods, -1, np.int64)
        running = np.zeros(f.n_pods, bool)
        inst[has] = self.ctr.instance[tc[has]]
        running[has] = self.ctr.state[tc[has]] == RUNNING
        closed = self.gone | ~self.admitted | ~has | (~f.pod_sidecar & (~running | (inst != c.instance)))
        c.loose += int(c.open[closed].sum())
        c.open[closed] = 0
        c.instance = inst
        busy = np.bincount(f.container_pod, weights=self._held(ri), minlength=f.n_pods).astype(np.int64)
        tr = route.traffic
        want = int(busy.sum()) + c.waiting + min(n, tr.pre_allocated_vus or 1)
        if tr.max_vus is not None:
            want = min(want, tr.max_vus)
        c.loose += max(want - int(c.open.sum()) - c.loose - c.waiting, 0)
        per = np.zeros(f.n_pods, np.int64)

        def connect(m: int) -> None:
            """``m`` requests open a connection first (their clients hold none)."""
            if ready.size:
                got = np.full(ready.size, m // ready.size, np.int64)
                got[(route.cursor + np.arange(m % ready.size)) % ready.size] += 1
                route.cursor = (route.cursor + m) % ready.size
                per[ready] += got
                c.open[ready] += got
            elif tr.no_endpoint == "retransmit":
                c.wait(t, m)
            else:
                refused[k] += m
                c.loose += m

        go, late = c.due(t, ready.size > 0, route.timeout) if c.waiting else (0, 0)
        rec[f"{key}.timeout"][k] += late
        c.loose += late
        opening = min(c.loose, n)
        c.loose -= opening
        if opening or go:
            connect(opening + go)
        rest = n - opening
        idle = np.maximum(c.open - busy, 0)
        weight = idle if idle.any() else c.open
        if rest and not weight.any():
            connect(rest)
        elif rest:
            share = rest * weight / weight.sum()
            base = np.floor(share).astype(np.int64)
            top = np.argsort(base - share, kind="stable")[: rest - int(base.sum())]
            base[top] += 1
            per += base
        pods = np.flatnonzero(per)
        return pods, per[pods]

    def _deliver(self, t: int, k: int, rec: dict[str, I64]) -> None:
        """Answers due now reach the client; after the load generator stopped waiting
        (``stop`` + ``gracefulStop``) they are interrupted instead."""
        for ri, route in enumerate(self.fleet.routes):
            wheel = self.pending[ri]
            col = self.cols[ri]
            end = route.traffic.end()
            if end is not None and t > end + route.traffic.graceful_stop:
                # The load generator stopped waiting: every answer still to come is interrupted.
                q = self.queued[ri]
                if self.pending_n[ri] or self.queued_n[ri]:
                    col["interrupted"][k] += self.pending_n[ri] + self.queued_n[ri]
                    wheel[:] = 0
                    self.orphans[ri] += q.sum(axis=0)  # the server still holds them
                    q[:] = 0
                    self.pending_n[ri] = self.queued_n[ri] = 0
                    self.queued_rows[ri][:] = 0
                    self.later_n[ri][:] = self.later_t[ri][:] = 0.0
                    self.later_cdf[ri][:] = 0.0
                continue
            slot = k % wheel.shape[1]
            due = wheel[:, slot].sum(axis=1)
            recorded = self.later_n[ri][slot]
            if recorded > 0 and due.any():
                self.step_cdf[ri] += self.later_cdf[ri][slot] * (float(due.sum()) / recorded)
            # The slot is free for the next round even when a kill took all it held.
            self.later_n[ri][slot] = self.later_t[ri][slot] = 0.0
            self.later_cdf[ri][slot] = 0.0
            if not due.any():
                continue
            wheel[:, slot] = 0
            self.pending_n[ri] -= int(due.sum())
            col["ok"][k] += int(due[0])
            col["error_status"][k] += int(due[1])
            col["timeout"][k] += int(due[2])

    def _serve(self, t: int, k: int, rec: dict[str, I64]) -> None:
        """Loaded containers serve their backlog. Finished requests count as ok, as the route's
        error status when a dependency call failed, or as timeouts when they took longer than
        the client's timeout."""
        cap = self.capacity
        served, wait, service = cap.step(float(self.spec.step), self.ctr.started_at, t)
        K = cap.k
        step = float(self.spec.step)
        for ri, route in enumerate(self.fleet.routes):
            col = self.cols[ri]
            sl = slice(ri * K, (ri + 1) * K)
            vs, cs, ages, n_served = self._cohorts(ri, k, served[sl])
            if cs.size == 0:
                continue
            sv = service[sl][vs, cs]
            # Latency counts from the step a request was sent: those sent now waited for the
            # backlog ahead of them; older ones, at the head of the queue, for their steps.
            waited = ages * step
            d = np.where(ages == 0, wait[cs], waited)
            limit = float(route.timeout)
            to = timed_out(n_served, d, sv, cap.sigma[cs], limit, self.rng)
            failed = cap.failed[sl][vs, cs]
            # The client sees each answer at min(latency, its timeout): those later than this
            # step are delivered by _deliver when due (and lost if their container stops first).
            seen = np.minimum(np.minimum(d + sv, limit) - waited, (self.pending[ri].shape[1] - 1) * step)
            later = seen >= step
            if later.any():
                slots = (k + np.ceil(seen[later] / step).astype(np.int64)) % self.pending[ri].shape[1]
                # Their latency counts when the client gets the answer (or loses it), in _deliver.
                n_l = n_served[later]
                used, group = np.unique(slots, return_inverse=True)
                self.later_cdf[ri][used] += grouped_cdfs(
                    n_l, d[later], sv[later], cap.sigma[cs][later], group, used.size
                )
                np.add.at(self.later_n[ri], slots, n_l)
                np.add.at(self.later_t[ri], slots, (float(t) - waited[later]) * n_l)  # when sent
                ok_later = n_served[later] - to[later]
                np.add.at(
                    self.pending[ri][0],
                    (slots[~failed[later]], cs[later][~failed[later]]),
                    ok_later[~failed[later]],
                )
                np.add.at(
                    self.pending[ri][1],
                    (slots[failed[later]], cs[later][failed[later]]),
                    ok_later[failed[later]],
                )
                np.add.at(self.pending[ri][2], (slots, cs[later]), to[later])
                self.pending_n[ri] += int(n_l.sum())
            now = ~later
            n_ok = int(n_served[now & ~failed].sum() - to[now & ~failed].sum())
            col["ok"][k] += n_ok
            col["timeout"][k] += int(to[now].sum())
            col["error_status"][k] += int((n_served[now & failed] - to[now & failed]).sum())
            # Answered within the step, and immediate answers (0 ms).
            instant = max(int(col["ok"][k]) - n_ok, 0)
            counts = np.append(n_served[now], instant)
            sg = cap.sigma[cs][now]
            mix = mixture_cdf(counts, np.append(d[now], 0.0), np.append(sv[now], 0.0), np.append(sg, 0.0))
            self.step_cdf[ri] += self._with_connect_wait(ri, mix, int(counts.sum()))
        for ri, route in enumerate(self.fleet.routes):
            # Latency quantiles of what clients got (or lost) this step, and of the run so far.
            seen_now = self.step_cdf[ri]
            total = float(seen_now[-1])
            if total <= 0:
                continue
            self.latency_cdf[ri] += seen_now
            limit = float(route.timeout)
            qs = grid_quantiles(seen_now / total, (0.5, 0.95, 0.99, 1 - 0.5 / max(round(total), 1)))
            for name, v in zip(("p50_ms", "p95_ms", "p99_ms", "max_ms"), qs, strict=True):
                self.cols[ri][name][k] = round(min(v, limit))
        if cap.calls_any:
            cap.load_dependencies(served, float(self.spec.step))
            cap.breakers(t + self.spec.step, served)
            cap.update_classes(t + self.spec.step)

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> Result:
        f = self.fleet
        spec = self.spec
        ticks = spec.duration // spec.step
        times = np.arange(ticks, dtype=np.int64) * spec.step
        self.rates = np.array([[r.traffic.rate_at(int(t)) for t in times] for r in f.routes]).reshape(
            len(f.routes), ticks
        )
        rec: dict[str, I64] = {}
        for w in self.scenario.workloads:
            for s in ("desired", "current", "ready", "available", "unavailable", "restarts"):
                rec[f"workload.{w.name}.{s}"] = np.zeros(ticks, np.int64)
        self.latency_cdf = np.zeros((len(f.routes), GRID.size))
        self.step_cdf = np.zeros((len(f.routes), GRID.size))  # what clients saw answered this step
        # Answers on their way to clients, per route: (ok, error status, timeout) × due step × container.
        horizon = max(
            [int(r.timeout) for r in f.routes if r.timeout < INF]
            + [
                int(c.timeout or 0) * c.retries.attempts
                for b in f.container_behavior
                for rc in b.routes.values()
                for c in rc.calls
            ]
            + [60_000]
        )
        slots = horizon // spec.step + 2
        self.pending = [np.zeros((3, slots, f.n_containers), np.int64) for _ in f.routes]
        # Per due slot: the latency distribution of those answers (weighted), how many, and the
        # sum of the times they were served (ms).
        self.later_cdf = [np.zeros((slots, GRID.size)) for _ in f.routes]
        self.later_n = [np.zeros(slots) for _ in f.routes]
        self.later_t = [np.zeros(slots) for _ in f.routes]
        # The client's side of the backlog, per route: requests queued on each container that
        # their client still waits for, by arrival step (a ring over the timeout, oldest given
        # up on at their deadline); and those it gave up on that the server still holds
        # (``orphans``: served first, as the oldest, and then counted for nothing).
        self.queued = [np.zeros((self._queue_slots(r), f.n_containers), np.int64) for r in f.routes]
        self.orphans = [np.zeros(f.n_containers, np.int64) for _ in f.routes]
        # How many requests each route's buffers hold (their sums, kept as they change).
        self.pending_n = [0] * len(f.routes)
        self.queued_n = [0] * len(f.routes)
        self.queued_rows = [np.zeros(q.shape[0], np.int64) for q in self.queued]  # per arrival step
        self.touched = np.zeros(f.n_containers, bool)  # took requests since it last lost them
        for r in f.routes:
            for s in ROUTE_SERIES:
                rec[f"route.{r.name}.{s}"] = np.zeros(ticks, np.int64)
        self.cols = [{s: rec[f"route.{r.name}.{s}"] for s in ROUTE_SERIES} for r in f.routes]
        inflight_cols = [rec[f"route.{r.name}.inflight"] for r in f.routes]
        # EndpointSlice conditions as clients see them (§4.8): ready, serving, terminating.
        svc_cols = {
            name: [
                rec.setdefault(f"service.{name}.{c}", np.zeros(ticks, np.int64))
                for c in ("ready", "serving", "terminating")
            ]
            for name in f.service_pods
        }
        svc_counts: dict[str, tuple[int, int, int]] = {}
        wl_pods = [np.flatnonzero(f.pod_workload == i) for i in range(len(self.scenario.workloads))]
        wl_containers = [np.flatnonzero(f.pod_workload[f.container_pod] == i) for i in range(len(wl_pods))]
        cpu_cols = [
            [
                rec.setdefault(f"workload.{w.name}.{s}", np.zeros(ticks, np.int64))
                for s in ("cpu_m", "cpu_max_m", "throttled")
            ]
            for w in self.scenario.workloads
        ]
        columns = [
            [
                rec[f"workload.{w.name}.{s}"]
                for s in ("desired", "current", "ready", "available", "unavailable", "restarts")
            ]
            for w in self.scenario.workloads
        ]
        hpa_cols = {}
        for wi, h in self.autoscalers.items():
            hpa_cols[wi] = tuple(
                rec.setdefault(f"hpa.{h.hpa.name}.{s}", np.zeros(ticks, np.int64))
                for s in ("desired", "utilization")
            )
        min_ready = [w.spec.min_ready_seconds * 1000 for w in self.scenario.workloads]
        counted_version = -1
        admit_version, to_admit = -1, False
        counts: list[tuple[int, int, int]] = []  # per workload: current, ready, restarts
        actions: dict[int, list[int]] = {}
        others: dict[int, list[int]] = {}
        for i, a in enumerate(spec.actions):
            if isinstance(a, DeletePod):
                actions.setdefault(a.at, []).append(f.pod_names.index(a.pod))
            else:
                others.setdefault(a.at, []).append(i)
        for k in range(ticks):
            t = int(times[k])
            self.log.synced_pods.clear()
            if t in others:
                self._act(t, others[t])
            if t in actions:
                self._delete(t, actions[t])
            if self.any_deleting:
                self._reap()
            if self.autoscalers:
                self._autoscale(t)
            self._reconcile(t)
            if admit_version != self.version:  # eligible and admitted change with the version
                admit_version = self.version
                to_admit = bool((self.eligible & ~self.admitted).any())
            if to_admit:
                self._admit(t)
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
            self._traffic(t, k, rec)
            if self.capacity.any:
                self._serve(t, k, rec)
                used = self.capacity.cpu_used_m
                self.cpu_window[k % self.cpu_window.shape[0]] = used
                per_pod = np.bincount(f.container_pod, weights=used, minlength=f.n_pods)
                throttled = (
                    np.bincount(f.container_pod, weights=self.capacity.throttled, minlength=f.n_pods) > 0
                )
                for i, cols in enumerate(cpu_cols):
                    pods = wl_pods[i]
                    cols[0][k] = round(float(per_pod[pods].sum()))
                    cols[1][k] = round(float(per_pod[pods].max())) if pods.size else 0
                    cols[2][k] = int(throttled[pods].sum())
            for ri, column in enumerate(inflight_cols):
                column[k] = self._in_flight(ri)
            if counted_version != self.version:
                counted_version = self.version
                visible = self._visible_ready(t)
                listed = self.admitted & ~self.gone
                for name, sel in f.service_pods.items():
                    members = sel & listed
                    in_rotation = members if f.publish_not_ready[name] else members & visible & ~self.deleting
                    svc_counts[name] = (
                        int(in_rotation.sum()),
                        int((members & visible).sum()),
                        int((members & self.deleting).sum()),
                    )
                active = self.admitted & ~self.deleting
                counts = [
                    (
                        int(active[pods].sum()),
                        int((self.ready & active)[pods].sum()),
                        int(self.ctr.restart_count[wl_containers[i]].sum()),
                    )
                    for i, pods in enumerate(wl_pods)
                ]
            for wi, (d_col, u_col) in hpa_cols.items():
                d_col[k] = self.desired[wi]
                u_col[k] = self.autoscalers[wi].last_utilization
            for name, svc_col in svc_cols.items():
                for column, value in zip(svc_col, svc_counts[name], strict=True):
                    column[k] = value
            for i in range(len(self.scenario.workloads)):
                current, ready, restarts = counts[i]
                if min_ready[i]:
                    pods = wl_pods[i]
                    ready_pods = (
                        self.ready[pods] & ~self.deleting[pods] & (self.ready_since[pods] + min_ready[i] <= t)
                    )
                    available = int(ready_pods.sum())
                else:
                    available = ready
                col = columns[i]
                col[0][k] = self.desired[i]
                col[1][k] = current
                col[2][k] = ready
                col[3][k] = available
                col[4][k] = max(0, self.controllers.spec_total(i) - available)
                col[5][k] = restarts
        self.rec_ref = rec
        self.events = self.log.take()
        for m in self.mesh.values():
            self.events.extend(m.events)
        self.events.sort(key=attrgetter("time_ms"))
        return self._result(times, rec, wl_pods)

    def _route_latency(self, ri: int, max_series: I64) -> dict[str, float]:
        """p50/p90/p95/p99 of every answered request of the run, and the largest seen."""
        cdf = self.latency_cdf[ri]
        if cdf[-1] <= 0:
            return {}
        # As a load generator sees it: a request it gave up on took its timeout.
        cap = float(self.fleet.routes[ri].timeout)
        p50, p90, p95, p99 = (min(q, cap) for q in grid_quantiles(cdf / cdf[-1], (0.5, 0.9, 0.95, 0.99)))
        return {
            "p50": round(p50, 1),
            "p90": round(p90, 1),
            "p95": round(p95, 1),
            "p99": round(p99, 1),
            # Each step's max is read at its own count's top quantile: over many light steps the
            # run's p99 can lie above all of them, and a max below p99 is no max.
            "max": max(float(max_series.max()), round(p99, 1)),
        }

    def _no_endpoint_seconds(self, ri: int) -> float:
        """How long route ``ri``'s Service had no ready endpoint while the route sent traffic."""
        # By index: routes.index() compares Routes field by field, and two equal traffic
        # entries reach their numpy fields, whose truth value is ambiguous.
        route = self.fleet.routes[ri]
        ready = self.rec_ref[f"service.{route.service.name}.ready"]
        active = self.rates[ri] > 0
        return float(((ready == 0) & active).sum() * self.spec.step / 1000)

    def _result(self, times: I64, rec: dict[str, I64], wl_pods: list[I64]) -> Result:
        f = self.fleet
        spec = self.spec
        routes = []
        for ri, r in enumerate(f.routes):
            key = f"route.{r.name}"
            routes.append(
                RouteSummary(
                    name=r.name,
                    service=r.service.name,
                    offered=int(rec[f"{key}.offered"].sum()),
                    ok=int(rec[f"{key}.ok"].sum()),
                    failed={c: int(rec[f"{key}.{c}"].sum()) for c in CAUSES},
                    dropped=int(rec[f"{key}.dropped"].sum()),
                    interrupted=int(rec[f"{key}.interrupted"].sum()),
                    in_flight=int(rec[f"{key}.inflight"][-1]) if times.size else 0,
                    latency_ms=self._route_latency(ri, rec[f"{key}.max_ms"]),
                    no_endpoint_s=self._no_endpoint_seconds(ri),
                    envoy=dict(vars(self.mesh[ri].stats)) if ri in self.mesh else {},
                )
            )
        workloads = []
        pod_restarts = np.zeros(f.n_pods, np.int64)
        np.add.at(pod_restarts, f.container_pod, self.ctr.restart_count)
        for i, w in enumerate(self.scenario.workloads):
            pods = wl_pods[i][self.admitted_at[wl_pods[i]] < INF]  # pods that existed
            key = f"workload.{w.name}"
            ready = rec[f"{key}.ready"]
            full = np.flatnonzero(ready >= w.spec.replicas)
            fr = self.first_ready[pods]
            restarts = {f.pod_names[p]: int(pod_restarts[p]) for p in pods.tolist()}
            workloads.append(
                WorkloadSummary(
                    name=w.name,
                    kind=w.kind,
                    replicas=w.spec.replicas,
                    restarts=restarts,
                    first_ready_ms=int(fr.min()) if fr.size and fr.min() < INF else None,
                    all_ready_ms=int(times[full[0]]) if full.size and w.spec.replicas > 0 else None,
                    min_ready=int(ready.min()) if ready.size else 0,
                    avg_ready=float(ready.mean()) if ready.size else 0.0,
                    min_available=int(rec[f"{key}.available"].min()) if ready.size else 0,
                )
            )
        return Result(
            rollouts=self._rollout_summaries(times, rec),
            scenario=self.scenario.name,
            seed=spec.seed,
            step_ms=spec.step,
            duration_ms=spec.duration,
            time_ms=times,
            series=rec | size_series(times, self.controllers.sizes),
            events=self.events,
            workloads=workloads,
            routes=routes,
        )
