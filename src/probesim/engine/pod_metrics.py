"""What a HorizontalPodAutoscaler reads of its target's pods at a sync: metrics-server's CPU
usage of each pod (its containers' CPU averaged over the metric window) and the pod states the
replica calculator weighs (pending, being deleted, Ready and since when, started when).

The window is a ring of the CPU each container used per step, filled as the run goes."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import distinct
from probesim.engine.autoscaler import METRIC_WINDOW_MS, PodViews

F64 = npt.NDArray[np.float64]


class RunState(Protocol):
    """What the HPA's view reads of the run (engine/loop.py's Simulation)."""

    fleet: Any
    capacity: Any
    ctr: Any
    autoscalers: dict[int, Any]
    pods: Any  # PodStatus
    ready: Any
    ready_transition: Any
    admitted_at: Any

    def _per_pod(self, op: np.ufunc, x: Any) -> Any: ...


class PodMetrics:
    def __init__(self, n_containers: int, step_ms: int) -> None:
        # CPU used per container over the metric window (what metrics-server reports).
        self.window = np.zeros((max(METRIC_WINDOW_MS // step_ms, 1), n_containers))

    def sample(self, k: int, used_m: F64) -> None:
        """The CPU each container used in step ``k``."""
        self.window[k % self.window.shape[0]] = used_m

    def views(self, run: RunState, t: int) -> dict[int, PodViews]:
        """Per autoscaled workload, the HPA's view of its pods at ``t``."""
        f, cap, ctr = run.fleet, run.capacity, run.ctr
        first = f.pod_first_container
        # Per pod, over its containers (contiguous from its first): all running, all sampled
        # over the metric window, all with a CPU request (and their sum), all created.
        alive = ctr.alive()
        running = run._per_pod(np.minimum, alive.astype(np.int8)).astype(bool)
        old = run._per_pod(np.minimum, (t - ctr.started_at >= METRIC_WINDOW_MS).astype(np.int8))
        sampled = running & old.astype(bool)
        has_request = run._per_pod(np.minimum, (cap.request_m > 0).astype(np.int8)).astype(bool)
        request = run._per_pod(np.add, cap.request_m)
        created = run._per_pod(np.minimum, (ctr.instance >= 0).astype(np.int8)).astype(bool)
        n_cont = np.diff(np.append(first, f.n_containers))
        rows = self.window.shape[0]
        out = {}
        for wi in run.autoscalers:
            pods = np.flatnonzero((f.pod_workload == wi) & run.pods.admitted & ~run.pods.gone)
            usage = np.full(pods.size, np.nan)
            for nc in distinct(n_cont[pods]).tolist():
                sel = np.flatnonzero(n_cont[pods] == nc)
                grp = pods[sel]
                conts = first[grp][:, None] + np.arange(nc)[None, :]  # pods × containers
                # Summed in the order a pod's own window[:, conts].sum() takes (time slot, then
                # container), one row per pod, so that the float sums are the same.
                window = self.window[:, conts].transpose(1, 0, 2).reshape(grp.size, rows * nc)
                usage[sel] = np.ascontiguousarray(window).sum(axis=1) / rows
            out[wi] = PodViews(
                request_m=np.where(has_request[pods], request[pods], 0.0),
                usage_m=np.where(sampled[pods], usage, np.nan),
                pending=~created[pods],
                deleting=run.pods.deleting[pods],
                ready=run.ready[pods],
                transition=run.ready_transition[pods],
                start=run.admitted_at[pods],
            )
        return out
