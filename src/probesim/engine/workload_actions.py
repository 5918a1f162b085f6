"""What the scenario's workload and pod actions do, carried out over the run's pods: the loop's
Simulation inherits these steps (as it inherits the node faults' of engine/node_faults.py).

``kubectl delete pod NAME`` finds the pod of that name that exists now; a rollout, rollback,
restart, scale, pause, resume or partition goes to the controllers (engine/controllers) before
their sync; a readiness-gate change to the pods' gates. Each rollout is then tracked until
``kubectl rollout status`` would say it is done, or until Progressing goes False (stalled).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.controllers.deployment import TIMED_OUT_REASON
from probesim.engine.controllers.workloads import Controllers, PodArrays
from probesim.engine.events import EventLog
from probesim.engine.fleet import Fleet
from probesim.engine.pod_status import PodStatus
from probesim.engine.readiness_gates import ReadinessGates
from probesim.engine.summary import TrackedRollout
from probesim.model.nodes import Drain, NodeDown, NodePoolUpgrade, NodeUp, Uncordon, ZoneDown, ZoneUp
from probesim.model.scenario import DeletePod, Partition, Scenario, ScenarioSpec, SetReadinessGate

I64 = npt.NDArray[np.int64]


class WorkloadActions:
    """The workload and pod action steps of a run (engine/loop.py's Simulation, which sets these)."""

    scenario: Scenario
    spec: ScenarioSpec
    fleet: Fleet
    pods: PodStatus
    log: EventLog
    controllers: Controllers
    gates: ReadinessGates
    admitted_at: I64
    rollouts: list[TrackedRollout]
    rolled_to: dict[int, int]  # per Deployment: the template its last rollout went to
    dirty: bool

    def _view(self) -> PodArrays:
        raise NotImplementedError  # (the Simulation's)

    def _named(self, t: int, names: list[str]) -> list[int]:
        """``kubectl delete pod NAME``: the pod of that name that exists now — a StatefulSet's
        replacement keeps its predecessor's name, so after a rollout (or an earlier deletion)
        the name is the live replacement's. None: ``pods "NAME" not found``."""
        f = self.fleet
        out = []
        for name in names:
            live = [
                p
                for p, n in enumerate(f.pod_names)
                if n == name and self.pods.admitted[p] and not self.pods.gone[p]
            ]
            if live:
                out.append(live[-1])
                continue
            msg = f'Error from server (NotFound): pods "{name}" not found'
            self.log.add(t, "Warning", "NotFound", f"pod/{name}", msg, "kubectl")
        return out

    def _act(self, t: int, indices: list[int]) -> None:
        """Workload actions (rollout, rollback, restart, scale, pause, resume) and readiness-gate
        changes, at their time, before the controllers' sync."""
        for i in indices:
            a = self.spec.actions[i]
            if isinstance(a, SetReadinessGate):
                self.gates.set(t, a, self.pods.admitted, self.pods.gone, self.admitted_at)
                self.dirty = True
                continue
            assert not isinstance(
                a, DeletePod | NodeDown | ZoneDown | NodeUp | ZoneUp | Drain | Uncordon | NodePoolUpgrade
            )
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
            # A partition lowered (or raised) while pods wait for the update revision: kubectl
            # rollout status waits again, for the ordinals from the new partition up.
            repartition = isinstance(a, Partition) and st is not None and st.current_revision != target
            if target == self.rolled_to.get(wi, 0) and not repartition:
                continue
            for r in self.rollouts:
                if r.wi == wi and r.end is None and r.superseded is None:
                    r.superseded = t
            self.rollouts.append(TrackedRollout(wi, a.kind, target, t))
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
