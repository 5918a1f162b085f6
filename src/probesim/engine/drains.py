"""``kubectl drain`` and ``kubectl uncordon`` carried out over the run's pods: the loop's
Simulation inherits these steps (as it inherits the node faults' of engine/node_faults.py).

A drain (staging/src/k8s.io/kubectl/pkg/drain/drain.go, its ``evictPods``): the node cordoned,
then each pod on it evicted through the Eviction API (engine/disruption.py) at once, one
goroutine a pod. A refused eviction (429: a budget allows no disruption now) is tried again
after ``EvictErrorRetryDelay``, 5 s (pkg/cmd/drain/drain.go); an evicted pod is waited for
(``waitForDelete``, polling every 1 s) until it is gone; with ``--timeout`` the drain gives up on
the first attempt or poll at or after it. Bare pods (no controller) stop the drain before any
eviction unless ``--force`` (drain/filters.go ``unreplicatedFilter``).

What a user sees: kubectl's lines, recorded as events from ``kubectl`` under reasons that are
probesim's own (Cordon, Uncordon, EvictingPod, EvictionRefused, EvictionFailed, PodEvicted,
Drained, DrainFailed, DrainRefused); the kubelet's NodeNotSchedulable / NodeSchedulable and
Killing events, as the kubelet writes them. The Eviction API itself writes no event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.containers import Containers
from probesim.engine.disruption import Budgets
from probesim.engine.events import EventLog
from probesim.engine.fleet import Fleet
from probesim.engine.nodes import Nodes
from probesim.engine.pod_status import PodStatus
from probesim.model.duration import format_ms
from probesim.model.nodes import Drain, Uncordon

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

RETRY_MS = 5_000  # kubectl drain's EvictErrorRetryDelay (pkg/cmd/drain/drain.go: 5 * time.Second)
POLL_MS = 1_000  # waitForDelete's interval (pkg/drain/drain.go: 1 * time.Second)
KUBECTL = "kubectl"


@dataclass
class DrainRun:
    """One ``kubectl drain`` under way."""

    node: int
    deadline: int
    grace: int | None
    timeout: int
    source: str = "kubectl"
    finished: bool = False
    retry_at: dict[int, int] = field(default_factory=dict)  # pod → its next eviction attempt
    poll_at: dict[int, int] = field(default_factory=dict)  # evicted pod → its next poll
    errors: list[str] = field(default_factory=list)


class Drains:
    """The drain steps of a run (engine/loop.py's Simulation, which sets these)."""

    nodes: Nodes
    pods: PodStatus
    fleet: Fleet
    ctr: Containers
    log: EventLog
    ready: B
    desired: list[int]
    spaces: list[str]
    budgets: Budgets
    drains: list[DrainRun]
    scenario_kinds: list[str]

    def _delete(self, t: int, victims: list[int], grace: int | None = None) -> None:
        raise NotImplementedError  # (the Simulation's)

    def _on_node(self, n: int) -> I64:
        raise NotImplementedError

    def _containers_of(self, p: int) -> slice:
        raise NotImplementedError

    def _drain_action(self, t: int, a: Drain | Uncordon) -> None:
        n = self.nodes.names.index(a.node)
        if not self.nodes.present[n]:  # (a pool upgrade removed it)
            msg = f'Error from server (NotFound): nodes "{a.node}" not found'
            self.log.add(t, "Warning", "NotFound", f"node/{a.node}", msg, KUBECTL)
            return
        if isinstance(a, Uncordon):
            self.nodes.cordon(n, t, False)
            return
        self._start_drain(n, t, a.timeout, a.grace_period, a.force, KUBECTL)

    def _start_drain(
        self, n: int, t: int, timeout: int, grace: int | None, force: bool, source: str
    ) -> DrainRun | None:
        """Node ``n`` cordoned, then its pods' evictions begun (None: refused, bare pods)."""
        self.nodes.cordon(n, t, True, source)
        f = self.fleet
        pods = self._on_node(n).tolist()
        bare = [p for p in pods if self.scenario_kinds[int(f.pod_workload[p])] == "Pod"]
        name = self.nodes.names[n]
        if bare:
            listed = ", ".join(f"{self.spaces[int(f.pod_workload[p])]}/{f.pod_names[p]}" for p in bare)
            if not force:
                # GetPodsForDeletion's error: nothing is evicted, the node stays cordoned.
                msg = (f'unable to drain node "{name}" due to error: cannot delete Pods that declare no '
                       f"controller (use --force to override): {listed}")  # fmt: skip
                self.log.add(t, "Warning", "DrainRefused", f"node/{name}", msg, source)
                return None
            msg = f"Deleting pods that declare no controller: {listed}"
            self.log.add(t, "Warning", "DrainWarning", f"node/{name}", msg, source)
        run = DrainRun(n, t + timeout if timeout else int(INF), grace, timeout, source)
        run.retry_at = dict.fromkeys(pods, t)
        self.drains.append(run)
        self._drain_step(t)
        return run

    def _drain_step(self, t: int) -> None:
        """Each drain's attempts and polls due at ``t``, in pod order."""
        for run in self.drains:
            for p in sorted(p for p, at in run.retry_at.items() if at <= t):
                del run.retry_at[p]
                self._attempt(run, p, t)
            for p in sorted(p for p, at in run.poll_at.items() if at <= t):
                self._poll(run, p, t)
            if not run.retry_at and not run.poll_at:
                run.finished = True
                name = self.nodes.names[run.node]
                if run.errors:
                    msg = f'unable to drain node "{name}" due to error: {run.errors[0]}'
                    self.log.add(t, "Warning", "DrainFailed", f"node/{name}", msg, run.source)
                else:
                    self.log.add(t, "Normal", "Drained", f"node/{name}", f"node/{name} drained", run.source)
        self.drains = [r for r in self.drains if not r.finished]

    def _pod_ref(self, p: int) -> tuple[str, str]:
        return self.spaces[int(self.fleet.pod_workload[p])], self.fleet.pod_names[p]

    def _attempt(self, run: DrainRun, p: int, t: int) -> None:
        """One eviction of pod ``p`` (evictPods' loop body)."""
        ns, name = self._pod_ref(p)
        obj = f"pod/{name}"
        pods = self.pods
        if not pods.admitted[p] or pods.gone[p]:
            return  # NotFound: done with it
        self.log.add(t, "Normal", "EvictingPod", obj, f"evicting pod {ns}/{name}", run.source)
        if t >= run.deadline:
            limit = format_ms(run.timeout)
            why = f'error when evicting pods/"{name}" -n "{ns}": global timeout reached: {limit}'
            self.log.add(t, "Warning", "EvictionFailed", obj, why, run.source)
            run.errors.append(why)
            return
        live = pods.admitted & ~pods.gone
        running = self.nodes.pod_node[p] >= 0 and bool(self.ctr.created[self._containers_of(p)].any())
        verdict, _ = self.budgets.evict(p, running, live, pods.deleting, self.ready, self.desired)
        if verdict.evicted:
            self._delete(t, [p], run.grace)
            run.poll_at[p] = t
            return
        if verdict.code == 429:
            why = (f'error when evicting pods/"{name}" -n "{ns}" (will retry after '
                   f"{format_ms(RETRY_MS)}): {verdict.message}")  # fmt: skip
            self.log.add(t, "Warning", "EvictionRefused", obj, why, run.source)
            run.retry_at[p] = t + RETRY_MS
            return
        why = f'error when evicting pods/"{name}" -n "{ns}": {verdict.message}'
        self.log.add(t, "Warning", "EvictionFailed", obj, why, run.source)
        run.errors.append(why)

    def _poll(self, run: DrainRun, p: int, t: int) -> None:
        """waitForDelete's look at an evicted pod: gone, or looked at again in a second."""
        ns, name = self._pod_ref(p)
        if self.pods.gone[p]:
            del run.poll_at[p]
            self.log.add(t, "Normal", "PodEvicted", f"pod/{name}", f"pod/{name} evicted", run.source)
            return
        if t >= run.deadline:
            del run.poll_at[p]
            why = (f'error when waiting for pod "{name}" in namespace "{ns}" to terminate: global timeout '
                   f"reached: {format_ms(run.timeout)}")  # fmt: skip
            self.log.add(t, "Warning", "EvictionFailed", f"pod/{name}", why, run.source)
            run.errors.append(why)
            return
        run.poll_at[p] = t + POLL_MS

    def _drains_due(self, t: int) -> bool:
        return any(
            min([*r.retry_at.values(), *r.poll_at.values()], default=int(INF)) <= t for r in self.drains
        )
