"""The run's PodDisruptionBudgets: which pods each selects, its status as the disruption
controller computes it (kube/disruption.py) from the pods now, and the Eviction API's answer
for a pod.

The controller's status follows every pod change at once here (the real controller recomputes
on each pod event, within milliseconds), so the ``DisruptedPods`` map the Eviction API fills
between a decrement and that recomputation needs no keeping: an evicted pod is being deleted
from the instant of its eviction, and a pod being deleted is not healthy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.fleet import Fleet
from probesim.kube.disruption import Status, Verdict, desired_healthy, evict
from probesim.model.scenario import Scenario

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


class Budgets:
    """The scenario's PodDisruptionBudgets over the run's pods."""

    def __init__(self, scenario: Scenario, fleet: Fleet) -> None:
        self.budgets = list(scenario.disruption_budgets)
        self.names = [b.name for b in self.budgets]
        pl = fleet.pod_labels
        self.selects: list[B] = []
        self.workloads: list[list[int]] = []  # per budget: the workloads whose pods it selects
        spaces = [w.metadata.namespace for w in scenario.workloads]
        for b in self.budgets:
            sel = b.spec.selector
            if pl is None or sel is None:
                # A null selector matches nothing; an empty one ({}) every pod of the budget's
                # namespace, in policy/v1 — in the disruption controller and, since
                # kubernetes/kubernetes#119732 (1.29, backported to 1.27 and 1.28), the Eviction API.
                hit = np.zeros(fleet.n_pods, bool)
            else:
                groups = np.array(
                    [sel.matches(labels) and spaces[wi] == b.metadata.namespace
                     for (wi, _), labels in zip(pl.keys, pl.groups, strict=True)],
                    bool,
                )  # fmt: skip
                hit = groups[pl.group_of] if pl.group_of.size else np.zeros(0, bool)
            self.selects.append(hit)
            self.workloads.append(sorted(set(fleet.pod_workload[hit].tolist())))
        self.kinds = [w.kind for w in scenario.workloads]
        # Per pod: the budgets that select it.
        self.of_pod: list[list[int]] = [[] for _ in range(fleet.n_pods)]
        for i, hit in enumerate(self.selects):
            for p in np.flatnonzero(hit).tolist():
                self.of_pod[p].append(i)

    def status(self, i: int, live: B, deleting: B, ready: B, desired: list[int]) -> Status:
        """Budget ``i``'s status now (``updatePdbStatus``). ``desired``: each workload's
        spec.replicas, the scale ``getExpectedScale`` sums over the pods' controllers (a budget
        over a pod no controller manages, with a percent or maxUnavailable, allows nothing:
        the controller's failSafe)."""
        spec = self.budgets[i].spec
        sel = self.selects[i]
        healthy = int((sel & live & ~deleting & ready).sum())
        needs_scale = spec.max_unavailable is not None or isinstance(spec.min_available, str)
        if needs_scale:
            mine = self.workloads[i]
            if any(self.kinds[wi] == "Pod" for wi in mine):
                return Status(healthy, healthy)  # "found no controllers": disruptionsAllowed 0
            scale = sum(desired[wi] for wi in mine)
        else:
            scale = 0
        return Status(healthy, desired_healthy(spec.min_available, spec.max_unavailable, scale))

    def evict(
        self, p: int, running: bool, live: B, deleting: B, ready: B, desired: list[int]
    ) -> tuple[Verdict, int | None]:
        """The Eviction API on pod ``p``: its answer, and the budget it was judged by (if one)."""
        mine = self.of_pod[p]
        statuses = [
            (self.status(i, live, deleting, ready, desired), self.budgets[i].always_allow) for i in mine
        ]
        v = evict(running, bool(deleting[p]), bool(ready[p]), statuses)
        return v, (mine[0] if len(mine) == 1 else None)
