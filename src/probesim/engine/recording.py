"""The run's record: one value a step per series (``workload.<name>.<figure>``,
``route.<name>.<figure>``, ``service.<name>.{ready,serving,terminating}``,
``hpa.<name>.{desired,utilization}``, with spec.cluster.nodes ``node.<name>.{ready,pods}``, per
PodDisruptionBudget ``pdb.<name>.{allowed,healthy}``),
as Result.series carries them.

The Recorder makes the columns (in the order results list them) and fills the workload,
Service, HPA and CPU ones at the end of each step from the run's state; the traffic phases
fill the route columns themselves (``route_columns``). Counts that only change when the pods'
state does (the run's ``version``) are recounted only then.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import span
from probesim.engine.kernel_choice import loaded_kernels
from probesim.engine.series_names import CPU_SERIES, ROUTE_SERIES, WORKLOAD_SERIES
from probesim.kube.endpoints import endpoint_ready

I64 = npt.NDArray[np.int64]
_NO_IDLE = np.zeros(0)  # no app uses CPU of its own (read only)
_NO_IDLE.flags.writeable = False


class RunState(Protocol):
    """What the record reads of the run (engine/loop.py's Simulation)."""

    fleet: Any
    scenario: Any
    controllers: Any
    autoscalers: dict[int, Any]
    ctr: Any
    capacity: Any
    pods: Any  # PodStatus
    traffic: Any  # Traffic
    ready: Any
    ready_since: Any
    desired: Any
    nodes: Any  # engine/nodes.py's Nodes
    budgets: Any  # engine/disruption.py's Budgets


class Recorder:
    """The series of one run, ``ticks`` steps long."""

    def __init__(self, run: RunState, ticks: int) -> None:
        f, workloads = run.fleet, run.scenario.workloads
        rec: dict[str, I64] = {}
        for w in workloads:
            for s in WORKLOAD_SERIES:
                rec[f"workload.{w.name}.{s}"] = np.zeros(ticks, np.int64)
        # Per route, its series (ROUTE_SERIES) as rows of one block (route names are distinct).
        self.route_block = np.zeros((len(f.routes), len(ROUTE_SERIES), ticks), np.int64)
        for ri, r in enumerate(f.routes):
            for j, s in enumerate(ROUTE_SERIES):
                rec[f"route.{r.name}.{s}"] = self.route_block[ri, j]
        self.route_columns = [{s: rec[f"route.{r.name}.{s}"] for s in ROUTE_SERIES} for r in f.routes]
        self.inflight = [rec[f"route.{r.name}.inflight"] for r in f.routes]
        # EndpointSlice conditions as clients see them (§4.8): ready, serving, terminating.
        self.services = {
            name: [
                rec.setdefault(f"service.{name}.{c}", np.zeros(ticks, np.int64))
                for c in ("ready", "serving", "terminating")
            ]
            for name in f.service_pods
        }
        self.service_counts: dict[str, tuple[int, int, int]] = {}
        # A Deployment's pods are its ReplicaSets' (status.replicas counts them), adopted ones too.
        family = [[i] for i in range(len(workloads))]
        for rw, (dw, _) in run.controllers.adopted_as.items():
            family[dw].append(rw)
        self.wl_pods = [np.flatnonzero(np.isin(f.pod_workload, ws)) for ws in family]
        self.wl_containers = [np.flatnonzero(np.isin(f.pod_workload[f.container_pod], ws)) for ws in family]
        self.wl_span = [span(pods) for pods in self.wl_pods]  # (a workload's pods: usually consecutive views)
        # Per workload, its CPU_SERIES as rows of one block (workloads of one name share theirs).
        row_of: dict[str, int] = {}
        for w in workloads:
            row_of.setdefault(w.name, len(row_of))
        self.cpu_block = np.zeros((len(row_of), len(CPU_SERIES), ticks), np.int64)
        self.cpu_rows = np.array([row_of[w.name] for w in workloads], np.int64)
        for w in workloads:
            for j, s in enumerate(CPU_SERIES):
                rec.setdefault(f"workload.{w.name}.{s}", self.cpu_block[row_of[w.name], j])
        self.cpu = [[rec[f"workload.{w.name}.{s}"] for s in CPU_SERIES] for w in workloads]
        # Every workload's pods, one after another (``wl_ends``: where each workload's end).
        self.wl_flat = np.concatenate([*self.wl_pods, np.empty(0, np.int64)]).astype(np.int64)
        self.wl_ends = np.cumsum([p.size for p in self.wl_pods], dtype=np.int64)
        self.workloads = [[rec[f"workload.{w.name}.{s}"] for s in WORKLOAD_SERIES] for w in workloads]
        self.hpas = {
            wi: tuple(
                rec.setdefault(f"hpa.{h.hpa.name}.{s}", np.zeros(ticks, np.int64))
                for s in ("desired", "utilization")
            )
            for wi, h in run.autoscalers.items()
        }
        self.min_ready = [w.spec.min_ready_seconds * 1000 for w in workloads]
        # Per node (when the scenario gives them): its Ready condition (1: True) and its pods.
        self.node_cols = (
            [(rec.setdefault(f"node.{n}.ready", np.zeros(ticks, np.int64)),
              rec.setdefault(f"node.{n}.pods", np.zeros(ticks, np.int64))) for n in run.nodes.names]
            if run.nodes.explicit
            else []
        )  # fmt: skip
        self.node_counts: list[tuple[int, int]] = []
        # Per PodDisruptionBudget: its status.disruptionsAllowed and status.currentHealthy.
        self.pdb_cols = [
            (rec.setdefault(f"pdb.{n}.allowed", np.zeros(ticks, np.int64)),
             rec.setdefault(f"pdb.{n}.healthy", np.zeros(ticks, np.int64))) for n in run.budgets.names
        ]  # fmt: skip
        self.pdb_key: tuple[int, tuple[int, ...]] | None = None
        self.pdb_counts: list[tuple[int, int]] = []
        self.counted_version = -1
        self.counts: list[tuple[int, int, int]] = []  # per workload: current, ready, restarts
        self.series = rec

    def resized(self, run: RunState, ticks: int, done: int) -> Recorder:
        """This record for a run of ``ticks`` steps (one gone on as a longer or shorter scenario,
        engine/warm.py), with the values of its first ``done`` steps."""
        new = Recorder(run, ticks)
        kept = min(done, ticks)
        for name, values in self.series.items():
            new.series[name][:kept] = values[:kept]
        new.service_counts = dict(self.service_counts)
        new.counted_version = self.counted_version
        new.counts = list(self.counts)
        new.node_counts = list(self.node_counts)
        return new

    def record_cpu(self, k: int, run: RunState) -> None:
        """The CPU the capacity model's containers used this step, per workload (sum and busiest
        pod, in millicores) and its throttled pods."""
        f, capacity = run.fleet, run.capacity
        nb = loaded_kernels()
        if nb is not None:  # engine/kernels.py: the same figures
            idle = capacity.idle_m * run.ctr.running() if capacity.any_idle else _NO_IDLE
            nb.record_cpu(
                k, f.container_pod, f.n_pods, capacity.active, capacity.used_m, capacity.throttled, idle,
                self.wl_flat, self.wl_ends, self.cpu_rows, self.cpu_block,
            )  # fmt: skip
            return
        # Only the containers the capacity model stepped use CPU or are throttled (the others'
        # 0.0 adds nothing to a pod's sum, to the bit).
        act_pod = f.container_pod[capacity.active]
        per_pod = np.bincount(act_pod, weights=capacity.used_m, minlength=f.n_pods)
        if capacity.any_idle:  # the apps' own CPU, while they run
            idle = capacity.idle_m * run.ctr.running()
            per_pod = per_pod + np.bincount(f.container_pod, weights=idle, minlength=f.n_pods)
        throttled = np.zeros(f.n_pods, bool)
        throttled[act_pod[capacity.throttled[capacity.active_ix]]] = True
        for i, cols in enumerate(self.cpu):
            at = self.wl_span[i]
            cols[0][k] = round(float(per_pod[at].sum()))
            cols[1][k] = round(float(per_pod[at].max())) if self.wl_pods[i].size else 0
            cols[2][k] = int(throttled[at].sum())

    def record_state(self, k: int, t: int, run: RunState) -> None:
        """Requests in flight per route, the Services' endpoint conditions, the HPAs' figures
        and each workload's replicas at the end of step ``k`` (time ``t``)."""
        f = run.fleet
        for ri, column in enumerate(self.inflight):
            column[k] = run.traffic.in_flight(ri)
        version = run.pods.version + (run.nodes.version if self.node_cols else 0)
        if self.counted_version != version:
            self.counted_version = version
            visible = run.pods.visible_ready(t)
            listed = run.pods.admitted & ~run.pods.gone
            for name, sel in f.service_pods.items():
                members = sel & listed
                in_rotation = members & endpoint_ready(
                    visible, run.pods.deleting, f.publish_not_ready[name], members
                )
                self.service_counts[name] = (
                    int(in_rotation.sum()),
                    int((members & visible).sum()),
                    int((members & run.pods.deleting).sum()),
                )
            active = run.pods.admitted & ~run.pods.deleting
            self.counts = [
                (
                    int(active[pods].sum()),
                    int((run.ready & active)[pods].sum()),
                    int(run.ctr.restart_count[self.wl_containers[i]].sum()),
                )
                for i, pods in enumerate(self.wl_span)
            ]
            if self.node_cols:
                nodes = run.nodes
                on = listed & (nodes.pod_node >= 0)
                per = np.bincount(nodes.pod_node[on], minlength=len(self.node_cols))
                self.node_counts = [(int(r), int(c)) for r, c in zip(nodes.ready, per, strict=True)]
        for (r_col, p_col), (ready_n, pods_n) in zip(self.node_cols, self.node_counts, strict=True):
            r_col[k] = ready_n
            p_col[k] = pods_n
        if self.pdb_cols:
            # A budget's status changes with the pods (their version) or the replicas wanted.
            key = (run.pods.version, tuple(run.desired))
            if key != self.pdb_key:
                self.pdb_key = key
                pods = run.pods
                live = pods.admitted & ~pods.gone
                self.pdb_counts = [
                    (st.allowed, st.current_healthy)
                    for st in (
                        run.budgets.status(i, live, pods.deleting, run.ready, run.desired)
                        for i in range(len(self.pdb_cols))
                    )
                ]
            for (a_col, h_col), (allowed, healthy) in zip(self.pdb_cols, self.pdb_counts, strict=True):
                a_col[k] = allowed
                h_col[k] = healthy
        for wi, (d_col, u_col) in self.hpas.items():
            d_col[k] = run.desired[wi]
            u_col[k] = run.autoscalers[wi].last_utilization
        for name, svc_col in self.services.items():
            for column, value in zip(svc_col, self.service_counts[name], strict=True):
                column[k] = value
        for i, col in enumerate(self.workloads):
            current, ready, restarts = self.counts[i]
            if self.min_ready[i]:
                pods = self.wl_span[i]
                ready_pods = (
                    run.ready[pods]
                    & ~run.pods.deleting[pods]
                    & (run.ready_since[pods] + self.min_ready[i] < t)
                )
                available = int(ready_pods.sum())
            else:
                available = ready
            col[0][k] = run.desired[i]
            col[1][k] = current
            col[2][k] = ready
            col[3][k] = available
            col[4][k] = max(0, run.controllers.spec_total(i) - available)
            col[5][k] = restarts
