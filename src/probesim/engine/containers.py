"""Container lifecycle on the kubelet: start, exit, kill with a grace period, restart by
restartPolicy, and CrashLoopBackOff exactly as ``doBackOff`` does it (reference/kubelet.md §3).

The rules themselves (back-off, the restart decision, the minimum grace) are the kubelet's,
in kube/containers.py, which the lab follows too; this module applies them over the arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probesim.engine.behavior import INF
from probesim.engine.events import EventLog
from probesim.engine.fleet import EXITED, RUNNING, TERMINATING, WAITING, Fleet
from probesim.kube.containers import MIN_GRACE, back_off, restarts


class Containers:
    def __init__(self, fleet: Fleet) -> None:
        n = fleet.n_containers
        self.fleet = fleet
        self.state = np.full(n, WAITING, np.int64)
        self.created = np.zeros(n, bool)  # the pod was admitted: the kubelet knows the container
        self.instance = np.full(n, -1, np.int64)  # container ID; -1 before the first start
        self.started_at = np.zeros(n, np.int64)
        self.restart_count = np.zeros(n, np.int64)
        self.last_exit = np.full(n, -1, np.int64)  # finishedAt of the newest exited instance
        self.decide_exit = np.full(n, -1, np.int64)  # finishedAt the next start's back-off check uses
        self.backoff = np.zeros(n, np.int64)  # 0: no back-off entry
        self.backoff_updated = np.zeros(n, np.int64)
        self.next_start = np.full(n, INF, np.int64)
        self.stop_at = np.full(n, INF, np.int64)
        self.stop_code = np.zeros(n, np.int64)
        self.crash_at = np.full(n, INF, np.int64)
        self.crash_code = np.zeros(n, np.int64)
        self.waiting_reason = [""] * n
        self.pod_deleting = np.zeros(fleet.n_pods, bool)
        self.restart_delay = fleet.scenario.spec.cluster.container_restart_delay
        self.restarted_at = np.full(n, -1, np.int64)  # when the newest replacement instance started
        self.wakeup = INF
        self.changed = False  # any start, exit or kill since the flag was cleared
        self.epoch = 0  # bumps at every start, exit or kill
        # Per pod: whether its restartPolicy restarts an exited container (Always; OnFailure
        # when the exit code is not 0).
        self._always = np.array([x == "Always" for x in fleet.pod_restart_policy], bool)
        self._on_failure = np.array([x == "OnFailure" for x in fleet.pod_restart_policy], bool)

    def running(self) -> np.ndarray:
        return self.state == RUNNING

    def alive(self, below: int | None = None) -> np.ndarray:
        """Running as the runtime reports it: a container being killed is still running (of
        the containers below ``below``, default all)."""
        state = self.state if below is None else self.state[:below]
        return (state == RUNNING) | (state == TERMINATING)

    def admit(self, pods: np.ndarray, t: int) -> None:
        first = self.fleet.pod_first_container
        n = self.fleet.n_containers
        for p in pods:  # a pod's containers are contiguous, from its first to the next pod's
            lo = int(first[p])
            hi = int(first[p + 1]) if p + 1 < first.size else n
            self.created[lo:hi] = True
            self.next_start[lo:hi] = t
        self._rewake()

    def step(self, t: int, log: EventLog) -> None:
        """Everything due at ``t``: exits, scripted crashes, start attempts (until settled; a
        process that exits at once is restarted immediately once, then backs off)."""
        for _ in range(8):
            if self.wakeup > t:
                return
            done = np.flatnonzero((self.state == TERMINATING) & (self.stop_at <= t))
            if done.size:
                self._killed_exit(done, log)
            crashed = np.flatnonzero((self.state == RUNNING) & (self.crash_at <= t))
            for c in crashed:
                self._exit(int(c), t, int(self.crash_at[c]), int(self.crash_code[c]), log)
            due = np.flatnonzero((self.state == WAITING) & (self.next_start <= t))
            # A start due within the step counts from its exact time (a restart's delay is
            # usually below the step): the next probe tick sees a container started before it.
            if due.size:
                self._try_start(due, log)
            self._rewake()

    def kill(self, idx: np.ndarray, t: int, reason: str, probe_grace: np.ndarray, log: EventLog) -> None:
        """Kill running containers ``idx`` for a failed liveness or startup probe (``reason``),
        each with its probe's grace period (-1: the pod's)."""
        f = self.fleet
        pods = f.container_pod[idx]
        grace = np.maximum(np.where(probe_grace >= 0, probe_grace, f.pod_tgps[pods]), MIN_GRACE)
        stop = f.behaviors.stop_time(idx, grace)
        names, cont = f.pod_names, f.container_name
        for c, p in zip(idx.tolist(), pods.tolist(), strict=True):
            msg = f"Container {cont[c]} failed {reason} probe, will be restarted"
            log.add(t, "Normal", "Killing", f"pod/{names[p]}", msg)
        self.state[idx] = TERMINATING
        self.stop_at[idx] = t + stop
        self.stop_code[idx] = np.where((stop >= grace) & (stop > 0), 137, 143)
        # The same sync restarts it; its back-off check still sees the runtime status read
        # before the kill, i.e. the previous exited instance (§3.8).
        self.decide_exit[idx] = self.last_exit[idx]
        self.changed = True
        self.epoch += idx.size  # what probe workers depend on changed
        log.synced_pods.update(pods.tolist())
        # Their exits are the new times (the wake-up stays at most the earliest due: a step
        # woken early finds nothing due and rewakes).
        self.wakeup = min(self.wakeup, np.int64(t + stop.min()))

    def stop_pod(self, p: int, t: int, log: EventLog) -> None:
        """Stop every container of a pod being deleted, with the pod's grace period; none restarts."""
        # What fell due inside the step before this boundary happened before the deletion (a
        # container started at 10.5 s is running when the pod is deleted at 11 s).
        self.step(t - 1, log)
        self.pod_deleting[p] = True
        grace = max(int(self.fleet.pod_tgps[p]), MIN_GRACE)
        pod = self.fleet.pod_names[p]
        first = self.fleet.pod_first_container
        end = int(first[p + 1]) if p + 1 < first.size else self.fleet.n_containers
        for c in range(int(first[p]), end):  # a pod's containers are contiguous
            if self.state[c] == RUNNING:
                stop = int(self.fleet.behaviors.stop_time(np.array([c]), np.array([grace]))[0])
                name = self.fleet.container_name[c]
                log.add(t, "Normal", "Killing", f"pod/{pod}", f"Stopping container {name}")
                self.state[c] = TERMINATING
                self.stop_at[c] = t + stop
                self.stop_code[c] = 137 if stop >= grace and stop > 0 else 143
            elif self.state[c] == WAITING:
                self.state[c] = EXITED
                self.next_start[c] = INF
        self.changed = True
        self.epoch += 1  # what probe workers depend on changed
        log.synced_pods.add(p)
        self._rewake()

    def _restarts(self, pods: Any, code: Any) -> Any:
        """Whether the restart policy of ``pods`` restarts a container that exited with ``code``."""
        return restarts(self._always[pods], self._on_failure[pods], code, self.pod_deleting[pods])

    def _exit(self, c: int, t: int, finished: int, code: int, log: EventLog) -> None:
        """Container ``c`` exited by itself (a crash) at ``finished``."""
        pod, name = self.fleet.container_label(c)
        p = int(self.fleet.container_pod[c])
        self.last_exit[c] = finished
        self.stop_at[c] = INF
        self.crash_at[c] = INF
        self.changed = True
        self.epoch += 1  # what probe workers depend on changed
        log.synced_pods.add(p)
        self.decide_exit[c] = finished
        msg = f"Container {name} exited with code {code}"
        log.add(finished, "Warning", "Exited", f"pod/{pod}", msg, "probesim")  # when it exited
        if self._restarts(p, code):
            # Not at once: the kubelet sees the exit and the runtime creates the replacement
            # (spec.cluster.containerRestartDelay); meanwhile the container is not ready.
            self.state[c] = WAITING
            self.next_start[c] = finished + self.restart_delay
        else:
            self.state[c] = EXITED

    def _killed_exit(self, idx: np.ndarray, log: EventLog) -> None:
        """``_exit`` for killed containers ``idx`` at once (a kill's exit writes no event)."""
        finished = self.stop_at[idx]
        pods = self.fleet.container_pod[idx]
        self.last_exit[idx] = finished
        self.stop_at[idx] = INF
        self.crash_at[idx] = INF
        self.changed = True
        self.epoch += idx.size
        log.synced_pods.update(pods.tolist())
        code = self.stop_code[idx]
        restart = self._restarts(pods, code)
        self.state[idx] = np.where(restart, WAITING, EXITED)
        self.next_start[idx[restart]] = finished[restart] + self.restart_delay

    def _try_start(self, idx: np.ndarray, log: EventLog) -> None:
        """Start attempts of containers ``idx``, each at its ``next_start``: ``doBackOff`` (as
        ``back_off``) refuses those whose exited instance finished too recently."""
        now = self.next_start[idx]
        finished = self.decide_exit[idx]
        checked = finished >= 0
        if not checked.any():
            self._start(idx, now, log)  # no back-off to check: every one starts
            return
        may, later = back_off(now, finished, self.backoff[idx], self.backoff_updated[idx])
        refused = checked & ~may
        allowed = checked & may
        if allowed.any():
            self.backoff[idx[allowed]] = later[allowed]
            self.backoff_updated[idx[allowed]] = now[allowed]
        if not refused.any():
            self._start(idx, now, log)
            return
        # Refused: retried when the back-off measured from the newest exit expires (the sync at
        # expiry creates the container, taking the same restart delay).
        r = idx[refused]
        self.decide_exit[r] = self.last_exit[r]
        self.next_start[r] = self.last_exit[r] + self.backoff[r] + self.restart_delay
        start = idx[~refused]
        if start.size:
            self._started(start, now[~refused], log)
        f = self.fleet
        names, cont = f.pod_names, f.container_name
        workloads = f.scenario.workloads
        for c, p, at, no in zip(
            idx.tolist(), f.container_pod[idx].tolist(), now.tolist(), refused.tolist(), strict=True
        ):
            pod = names[p]
            if no:
                self.waiting_reason[c] = "CrashLoopBackOff"
                ns = workloads[int(f.pod_workload[p])].metadata.namespace
                msg = f"Back-off restarting failed container {cont[c]} in pod {pod}_{ns}"
                log.add(at, "Warning", "BackOff", f"pod/{pod}", msg)
            else:
                self.waiting_reason[c] = ""
                log.add(at, "Normal", "Created", f"pod/{pod}", f"Created container: {cont[c]}")
                log.add(at, "Normal", "Started", f"pod/{pod}", f"Started container {cont[c]}")

    def _start(self, idx: np.ndarray, now: np.ndarray, log: EventLog) -> None:
        """Containers ``idx`` start at ``now``, none refused by a back-off."""
        pods = self._started(idx, now, log)
        names, cont = self.fleet.pod_names, self.fleet.container_name
        for c, p, at in zip(idx.tolist(), pods, now.tolist(), strict=True):
            self.waiting_reason[c] = ""
            log.add(at, "Normal", "Created", f"pod/{names[p]}", f"Created container: {cont[c]}")
            log.add(at, "Normal", "Started", f"pod/{names[p]}", f"Started container {cont[c]}")

    def _started(self, idx: np.ndarray, now: np.ndarray, log: EventLog) -> list[int]:
        """The state of containers ``idx`` starting at ``now`` (a new instance, a restart counted
        if not the first); returns their pods. Their events are the caller's."""
        first = self.instance[idx] < 0
        self.instance[idx] += 1
        again = idx[~first]
        self.restart_count[again] += 1
        self.restarted_at[again] = now[~first]
        self.state[idx] = RUNNING
        self.started_at[idx] = now
        self.next_start[idx] = INF
        when, code = self.fleet.behaviors.crash_at(idx, self.started_at)
        self.crash_at[idx], self.crash_code[idx] = when, code
        self.changed = True
        self.epoch += idx.size
        pods: list[int] = self.fleet.container_pod[idx].tolist()
        log.synced_pods.update(pods)
        return pods

    def _rewake(self) -> None:
        w = INF
        for arr, st in ((self.next_start, WAITING), (self.stop_at, TERMINATING), (self.crash_at, RUNNING)):
            m = self.state == st
            if m.any():
                w = min(w, np.int64(arr[m].min()))
        self.wakeup = w
