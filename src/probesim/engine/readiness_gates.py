"""A run's readiness gates (a pod's ``spec.readinessGates``): when every condition a pod's gates
name is True, as each pod's time from which its gates let it be Ready. Without a gate action a
pod's gates are True the behaviour's delay after it is created (INF: never); once an action sets
a condition, each condition's time is kept per pod and the gates follow them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.fleet import Fleet
from probesim.model.scenario import SetReadinessGate

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


class ReadinessGates:
    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.at = np.full(fleet.n_pods, INF, np.int64)  # per pod: from when its gates are True
        self.times: set[int] = set()  # every pod's ``at``, to look a step's time up
        # Per condition type, when it is True on each pod (INF: False); None until an action
        # sets one (then ``at`` follows these).
        self.true: dict[str, I64] | None = None

    def created(self, new: I64, t: int) -> None:
        """Pods created at ``t``: their gates True after their behaviour's delay."""
        self.at[new] = np.minimum(t + self.fleet.pod_gate_delay[new], INF)
        self.times.update(self.at[new].tolist())
        if self.true is not None:
            self._at_creation(new, t)

    def set(self, t: int, a: SetReadinessGate, admitted: B, gone: B, admitted_at: I64) -> None:
        """A gate's condition set on existing pods; pods created later get theirs as the
        behaviour's readinessGates delay says."""
        f = self.fleet
        if self.true is None:
            self.true = {}
            for p in np.flatnonzero(admitted):
                self._at_creation(np.array([p]), int(admitted_at[p]))
        if a.pod is not None:
            pods = np.array([f.pod_names.index(a.pod)], np.int64)
        else:
            wi = next(j for j, w in enumerate(f.scenario.workloads) if w.name == a.workload)
            pods = np.flatnonzero((f.pod_workload == wi) & admitted & ~gone)
        arr = self.true.setdefault(a.condition, np.full(f.n_pods, -1, np.int64))
        arr[pods] = t if a.status else INF
        self._from_conditions(pods)

    def _at_creation(self, new: I64, t: int) -> None:
        """Each declared gate of the new pods True after its behaviour delay (INF: never)."""
        assert self.true is not None
        f = self.fleet
        for p in new.tolist():
            wi, tpl = int(f.pod_workload[p]), int(f.pod_template[p])
            w = f.plans[wi].revisions[tpl] if wi in f.plans else None
            rw = w.workload if w is not None else f.scenario.workloads[wi]
            wb = w.behavior if w is not None else f.scenario.behavior(rw.name)
            for g in rw.pod_spec.readiness_gates:
                arr = self.true.setdefault(g.condition_type, np.full(f.n_pods, -1, np.int64))
                arr[p] = (
                    min(t + wb.readiness_gates[g.condition_type], int(INF))
                    if g.condition_type in wb.readiness_gates
                    else INF
                )
        self._from_conditions(new)

    def _from_conditions(self, pods: I64) -> None:
        assert self.true is not None
        at = np.zeros(pods.size, np.int64)
        for arr in self.true.values():
            at = np.maximum(at, arr[pods])
        self.at[pods] = at
        self.times.update(at.tolist())
