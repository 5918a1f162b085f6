"""Container lifecycle on the kubelet: start, exit, kill with a grace period (after the
preStop hook), restart by restartPolicy, and CrashLoopBackOff exactly as ``doBackOff`` does it
(reference/kubelet.md §3); native sidecars (restartable init containers, KEP-753) started in
order before the app containers, always restarted, and stopped after them.

The rules themselves (back-off, the restart decision, the minimum grace, the preStop hook's
timing) are the kubelet's, in kube/containers.py and kube/hooks.py, which the lab follows too;
this module applies them over the arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probesim.engine.behavior import INF
from probesim.engine.events import EventLog
from probesim.engine.fleet import EXITED, RUNNING, TERMINATING, WAITING, Fleet
from probesim.kube.containers import back_off, restarts
from probesim.kube.hooks import FAILED_MESSAGE, FAILS, HTTP_TO_APP, NO_HOOK, stop_plan


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
        # When a container being killed gets SIGTERM, its preStop hook done (INF: it has had it,
        # or is not being killed); until then it goes on serving.
        self.sigterm_at = np.full(n, INF, np.int64)
        self.stop_code = np.zeros(n, np.int64)
        self.crash_at = np.full(n, INF, np.int64)
        self.crash_code = np.zeros(n, np.int64)
        self.waiting_reason = [""] * n
        self.pod_deleting = np.zeros(fleet.n_pods, bool)
        self.restart_delay = fleet.scenario.spec.cluster.container_restart_delay
        self.restarted_at = np.full(n, -1, np.int64)  # when the newest replacement instance started
        self.wakeup = INF
        # On a crashed node: the process is gone and nothing runs its lifecycle until the node
        # is back; its state stays what its kubelet last reported.
        self.halted = np.zeros(n, bool)
        self.changed = False  # any start, exit or kill since the flag was cleared
        self.epoch = 0  # bumps at every start, exit or kill
        # Per container: whether its pod's restartPolicy restarts it when it exits (Always;
        # OnFailure when the exit code is not 0). A sidecar is restarted whatever the policy:
        # computeInitContainerActions puts an exited restartable init container back in
        # InitContainersToStart (pkg/kubelet/kuberuntime/kuberuntime_manager.go).
        always = np.array([x == "Always" for x in fleet.pod_restart_policy], bool)
        on_failure = np.array([x == "OnFailure" for x in fleet.pod_restart_policy], bool)
        self._sidecar = fleet.container_sidecar
        self._always = always[fleet.container_pod] | self._sidecar
        self._on_failure = on_failure[fleet.container_pod]
        # Containers whose first start waits for the sidecar before them to be started (its
        # startup probe passed, or it has none and runs): computeInitContainerActions starts
        # init container i+1 only once i is initialized, and the app containers once all are.
        # (Sidecars come first in a pod's containers: each waits for the one before it, the app
        # containers for the last.)
        last = np.maximum.accumulate(np.where(self._sidecar, np.arange(n), -1)) if n else np.zeros(0, int)
        before = np.concatenate(([-1], last[:-1])) if n else last
        same_pod = before >= 0
        same_pod[same_pod] = fleet.container_pod[before[same_pod]] == fleet.container_pod[same_pod]
        self.gate = np.where(same_pod, before, -1).astype(np.int64)  # -1: none (or no more)
        self.any_gated = bool(same_pod.any())

    def running(self) -> np.ndarray:
        """Running processes (not those of a crashed node, which the API still shows running)."""
        return (self.state == RUNNING) & ~self.halted

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
            self.next_start[lo:hi] = np.where(self.gate[lo:hi] >= 0, INF, t)
        self._rewake()

    def release(self, started: np.ndarray, t: int, log: EventLog) -> None:
        """Start the containers whose sidecar is now started (``started``: per container, running
        and its startup probe passed or absent), and so on down each pod's chain: a sidecar with
        no startup probe is started as it runs, so the next one starts in the same sync."""
        while True:  # each round starts some, or ends
            waiting = np.flatnonzero(self.gate >= 0)
            if waiting.size == 0:
                self.any_gated = False
                return
            due = waiting[started[self.gate[waiting]] & self.created[waiting] & ~self.halted[waiting]]
            due = due[self.state[due] == WAITING]
            if due.size == 0:
                return
            self.gate[due] = -1
            self.next_start[due] = t
            self.wakeup = min(self.wakeup, np.int64(t))
            self.step(t, log)
            # What just started, without a startup probe of its own, is started at once.
            started = started.copy()
            started[due] = (self.state[due] == RUNNING) & ~self.fleet.probes["startup"].has[due]

    def step(self, t: int, log: EventLog) -> None:
        """Everything due at ``t``: exits, scripted crashes, start attempts (until settled; a
        process that exits at once is restarted immediately once, then backs off)."""
        for _ in range(8):
            if self.wakeup > t:
                return
            signalled = np.flatnonzero((self.state == TERMINATING) & (self.sigterm_at <= t))
            if signalled.size:  # their preStop hooks are over: SIGTERM, and they stop serving
                self.sigterm_at[signalled] = INF
                self.changed = True
                self.epoch += signalled.size
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
        grace = np.where(probe_grace >= 0, probe_grace, f.pod_tgps[pods])
        names, cont = f.pod_names, f.container_name
        for c, p in zip(idx.tolist(), pods.tolist(), strict=True):
            # An init container's message as computeInitContainerActions words it.
            what = f"Init container {cont[c]}" if self._sidecar[c] else f"Container {cont[c]}"
            msg = f"{what} failed {reason} probe" + ("" if self._sidecar[c] else ", will be restarted")
            log.add(t, "Normal", "Killing", f"pod/{names[p]}", msg)
        hook = np.full(idx.size, -1, np.int64)
        for j in np.flatnonzero(f.hook_kind[idx] != NO_HOOK).tolist():
            h = self._hook(int(idx[j]), t, int(grace[j]), log)
            hook[j] = -1 if h is None else h
        self._stop(idx, t, grace, hook)
        # The same sync restarts it; its back-off check still sees the runtime status read
        # before the kill, i.e. the previous exited instance (§3.8).
        self.decide_exit[idx] = self.last_exit[idx]
        self.changed = True
        self.epoch += idx.size  # what probe workers depend on changed
        log.synced_pods.update(pods.tolist())
        # Their exits are the new times (the wake-up stays at most the earliest due: a step
        # woken early finds nothing due and rewakes).
        self._rewake()

    def _hook(self, c: int, t: int, grace: int, log: EventLog) -> int | None:
        """How long container ``c``'s preStop hook runs when it is killed at ``t`` with grace
        period ``grace`` (None: no hook, or no grace left to run it in); a hook that fails
        (``FailedPreStopHook``) takes no time."""
        f = self.fleet
        kind = int(f.hook_kind[c])
        if kind == NO_HOOK or grace <= 0:
            return None
        hook = int(f.hook_length[c])
        failed = kind == FAILS
        if kind == HTTP_TO_APP:
            beh = f.behaviors
            # A hung app holds the hook's request until the kubelet gives up at the grace
            # period; an app that refuses connections fails it at once.
            failed = not beh.listening[c]
            hook = int(INF) if beh.hung[c] and not failed else hook
        if failed:
            pod = f.pod_names[int(f.container_pod[c])]
            log.add(t, "Warning", "FailedPreStopHook", f"pod/{pod}", FAILED_MESSAGE)
            return 0
        return hook

    def _stop(self, idx: Any, t: int, grace: Any, hook: Any, turn: Any = 0) -> None:
        """``killContainer`` for containers ``idx`` from ``t`` with grace periods ``grace`` (ms):
        the preStop hook first (``hook`` ms, -1: none; it serves meanwhile), then SIGTERM with
        what is left of the grace (after ``turn`` ms more of waiting for its turn, a sidecar on
        pod termination), at least 2 s, and SIGKILL at its end (exit code 137; 143 when the app
        exits on SIGTERM in time)."""
        idx = np.atleast_1d(np.asarray(idx, np.int64))
        wait, left = stop_plan(grace, hook, turn)
        left = np.broadcast_to(left, idx.shape)
        stop = self.fleet.behaviors.stop_time(idx, left)
        self.state[idx] = TERMINATING
        self.sigterm_at[idx] = np.where(wait > 0, t + wait, INF)
        self.stop_at[idx] = t + wait + stop
        self.stop_code[idx] = np.where((stop >= left) & (stop > 0), 137, 143)

    def stop_pod(self, p: int, t: int, log: EventLog, grace_ms: int | None = None) -> None:
        """Stop every container of a pod being deleted, with the pod's grace period; none
        restarts. Sidecars go last, in reverse order: each, its preStop hook done, waits for the
        app containers and the sidecars after it to exit, within what is left of its grace
        (terminationOrdering in pkg/kubelet/kuberuntime/kuberuntime_termination_order.go)."""
        # What fell due inside the step before this boundary happened before the deletion (a
        # container started at 10.5 s is running when the pod is deleted at 11 s).
        self.step(t - 1, log)
        self.pod_deleting[p] = True
        grace = int(self.fleet.pod_tgps[p]) if grace_ms is None else grace_ms  # (a deletion's own)
        pod = self.fleet.pod_names[p]
        first = self.fleet.pod_first_container
        end = int(first[p + 1]) if p + 1 < first.size else self.fleet.n_containers
        conts = range(int(first[p]), end)  # a pod's containers are contiguous, sidecars first
        for c in conts:
            if self.state[c] == RUNNING:
                name = self.fleet.container_name[c]
                log.add(t, "Normal", "Killing", f"pod/{pod}", f"Stopping container {name}")
        apps = [c for c in conts if not self._sidecar[c]]
        for c in apps:
            if self.state[c] == RUNNING:
                h = self._hook(c, t, grace, log)
                self._stop(c, t, grace, -1 if h is None else h)
        # When the containers a sidecar waits for are gone (those already being killed included).
        gone = max([int(self.stop_at[c]) for c in apps if self.state[c] == TERMINATING], default=t)
        for c in reversed([c for c in conts if self._sidecar[c]]):
            if self.state[c] == RUNNING:
                h = self._hook(c, t, grace, log)
                hook = -1 if h is None else h
                hook_end = t + int(stop_plan(grace, hook)[0])
                self._stop(c, t, grace, hook, max(gone - hook_end, 0))
            if self.state[c] == TERMINATING:
                gone = max(gone, int(self.stop_at[c]))
        for c in conts:
            self.gate[c] = -1
            if self.state[c] == WAITING:
                self.state[c] = EXITED
                self.next_start[c] = INF
        self.changed = True
        self.epoch += 1  # what probe workers depend on changed
        log.synced_pods.add(p)
        self._rewake()

    def halt(self, idx: np.ndarray) -> None:
        """Containers ``idx`` whose node crashed: their processes are gone, and nothing starts,
        stops or restarts them (their kubelet went with the node) until it is back."""
        self.halted[idx] = True
        for due in (self.next_start, self.stop_at, self.sigterm_at, self.crash_at):
            due[idx] = INF
        self.changed = True
        self.epoch += 1
        self._rewake()

    def reboot(self, idx: np.ndarray, t: int, down_at: int) -> None:
        """The crashed node of containers ``idx`` booted at ``t``: every container that ran died
        with it at ``down_at`` (the runtime reports exit code 255) and the kubelet, started afresh
        with no back-off remembered, starts each again as its pod's restartPolicy says (a sidecar
        always), after the restart delay; one that was waiting starts then too."""
        if idx.size == 0:
            return
        self.halted[idx] = False
        ran = idx[(self.state[idx] == RUNNING) | (self.state[idx] == TERMINATING)]
        self.last_exit[ran] = down_at
        self.backoff[idx] = 0
        self.decide_exit[idx] = -1
        waiting = idx[self.state[idx] == WAITING]
        restart = self._restarts(ran, np.full(ran.size, 255, np.int64))
        self.state[ran] = np.where(restart, WAITING, EXITED)
        again = np.concatenate([ran[restart], waiting[self.gate[waiting] < 0]])
        self.next_start[again] = t + self.restart_delay
        self.changed = True
        self.epoch += 1
        self._rewake()

    def discard(self, idx: np.ndarray) -> None:
        """Containers ``idx`` of pods deleted while their node was down, found dead when it is
        back: gone for good (their pods can leave the API)."""
        self.halted[idx] = False
        self.state[idx] = EXITED
        self.next_start[idx] = INF
        self.changed = True
        self.epoch += 1
        self._rewake()

    def _restarts(self, conts: Any, code: Any) -> Any:
        """Whether containers ``conts`` are restarted after exiting with ``code``: by their pod's
        restartPolicy, a sidecar always (not in a pod being deleted)."""
        pods = self.fleet.container_pod[conts]
        return restarts(self._always[conts], self._on_failure[conts], code, self.pod_deleting[pods])

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
        if self._restarts(c, code):
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
        restart = self._restarts(idx, code)
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
        arrays = ((self.next_start, WAITING), (self.stop_at, TERMINATING), (self.sigterm_at, TERMINATING),
                  (self.crash_at, RUNNING))  # fmt: skip
        for arr, st in arrays:
            m = self.state == st
            if m.any():
                w = min(w, np.int64(arr[m].min()))
        self.wakeup = w
