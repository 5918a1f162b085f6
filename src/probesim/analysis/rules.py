"""The check rules. Each one has an ID, a severity, a one-line title and a docs entry (what goes
wrong, the source, the fix); ``docs/rules.md`` is generated from here."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from probesim.analysis.context import Context, Target, selects
from probesim.analysis.defaults import default_rate, workload_behavior
from probesim.analysis.findings import REGISTRY, Finding
from probesim.engine.capacity import probe_cost
from probesim.engine.controllers.deployment import DeploymentState
from probesim.engine.controllers.statefulset import max_unavailable as sts_max_unavailable
from probesim.manifests.kubernetes import container_port
from probesim.manifests.yamlsrc import get_path
from probesim.model.duration import format_ms
from probesim.model.kubernetes import Container, Probe, ProbeType, Workload
from probesim.model.scenario import Cluster, ContainerBehavior, Deadlock, Errors, Hang, Traffic, generic

rule = REGISTRY.rule


def _probes(t: Target) -> Iterator[tuple[ProbeType, Probe]]:
    kinds: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")
    for kind in kinds:
        p = t.container.probe(kind)
        if p is not None:
            yield kind, p


def _threshold_for(start_ms: int, p: Probe) -> int:
    """The failureThreshold whose budget (initialDelay + threshold × period) is 1.5 × ``start_ms``."""
    need_ms = 1.5 * start_ms - p.initial_delay_seconds * 1000
    return max(3, -int(-need_ms // (p.period_seconds * 1000)))


def _path(p: Probe) -> str | None:
    return p.http_get.path if p.http_get is not None else None


# -- parity with existing linters, done right ------------------------------------------------


@rule(
    "PS001", "readiness-probe-missing", "warning",
    "A container a Service sends traffic to has no readiness probe.",
    "Without readiness, the Service sends requests to a pod as soon as its container runs: "
    "still starting, warming up or shutting down (seed 000: 3 of 12 requests lost to a pod "
    "that needed 3 s to start). Only containers whose port a Service targets (by number or "
    "name) are checked — helper containers are not, nor are Jobs and CronJobs.",
    "Add a readinessProbe on a cheap, local endpoint that answers only when the pod can serve.",
)  # fmt: skip
def readiness_missing(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        if t.serves and t.container.readiness_probe is None:
            target = t.serves[0][2]
            via = ", ".join(dict.fromkeys(f"{sv.name}:{p}" for sv, p, _ in t.serves))
            msg = f"container {t.container.name} serves Service {via} with no readinessProbe"
            port_text = f'"{target}"' if isinstance(target, str) else str(target)
            fix = (f"add readinessProbe: {{httpGet: {{path: <a local readiness path>, port: {port_text}}}, "
                   "periodSeconds: 5}")  # fmt: skip
            yield ctx.finding("PS001", t, msg, fix=fix)


@rule(
    "PS002", "probe-port-not-declared", "error",
    "A probe's named port is not a port of its container.",
    "The kubelet cannot resolve the name, the probe errors, and the error is discarded: "
    "readiness then never passes and liveness never fires (reference/kubelet.md §2.3.26).",
    "Use a port name declared in the container's ports, or a number.",
)  # fmt: skip
def port_not_declared(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in _probes(t):
            handler = p.http_get or p.tcp_socket
            if handler is not None and container_port(t.container, handler.port) is None:
                h = "httpGet" if p.http_get is not None else "tcpSocket"
                names = [cp.name for cp in t.container.ports if cp.name]
                fix = (f"use one of the declared port names ({', '.join(names)}) or a number" if names
                       else "use the port number, or declare the name in the container's ports")  # fmt: skip
                yield ctx.finding(
                    "PS002",
                    t,
                    f"{kind}Probe port {handler.port!r} is not a named port of {t.container.name}",
                    (f"{kind}Probe", h, "port"),
                    fix,
                )


@rule(
    "PS004", "probe-port-not-exposed", "info",
    "A probe's port number is not among the ports its container declares.",
    "The kubelet probes the pod IP and port directly, so an undeclared port still works; but the "
    "probe often targets a port the app does not listen on after a port change (kube-linter's "
    "liveness-port / readiness-port checks). Containers that declare no ports are not checked.",
    "Declare the port in the container's ports, by name, and probe it by that name.",
)  # fmt: skip
def port_not_exposed(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        declared = {cp.container_port for cp in t.container.ports}
        if not declared:
            continue
        for kind, p in _probes(t):
            handler = p.http_get or p.tcp_socket
            if handler is not None and isinstance(handler.port, int) and handler.port not in declared:
                h = "httpGet" if p.http_get is not None else "tcpSocket"
                msg = f"{kind}Probe port {handler.port} is not declared (ports: {sorted(declared)})"
                fix = f"declare it: ports: [{{name: health, containerPort: {handler.port}}}]"
                yield ctx.finding("PS004", t, msg, (f"{kind}Probe", h, "port"), fix)


@rule(
    "PS003", "liveness-as-strict-as-readiness", "warning",
    "Liveness acts as fast as readiness on the same check: a pod that should leave rotation is restarted.",
    "When liveness and readiness probe the same thing and liveness gives up no later than "
    "readiness, every slow spell restarts the container instead of only taking it out of "
    "rotation (seed 002). Identical probes are fine when liveness is more tolerant — the "
    "false positive users report against kube-score — so this rule compares failure budgets.",
    "Give liveness a larger failure budget (periodSeconds × failureThreshold) than readiness, or "
    "point it at a cheaper, self-contained endpoint.",
)  # fmt: skip
def liveness_as_strict(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        live, ready = t.container.liveness_probe, t.container.readiness_probe
        if live is None or ready is None:
            continue
        same = (live.http_get, live.tcp_socket, live.exec, live.grpc) == (
            ready.http_get,
            ready.tcp_socket,
            ready.exec,
            ready.grpc,
        )
        live_budget = live.period_seconds * live.failure_threshold
        ready_budget = ready.period_seconds * ready.failure_threshold
        if same and live_budget <= ready_budget:
            threshold = -(-2 * ready_budget // live.period_seconds)  # liveness at twice readiness's budget
            yield ctx.finding(
                "PS003",
                t,
                f"liveness gives up after {live_budget}s, readiness after {ready_budget}s, on the same check",
                ("livenessProbe",),
                f"livenessProbe.failureThreshold: {threshold} (gives up after "
                f"{threshold * live.period_seconds}s, readiness after {ready_budget}s)",
            )


# -- what none of them check -----------------------------------------------------------------


@rule(
    "PS010", "liveness-failure-threshold-one", "error",
    "Liveness restarts the container on a single failed probe.",
    "One GC pause, one slow answer under load, one dropped packet kills the container (seed 002; "
    "seed 004: failureThreshold 1 on liveness turned a partial outage into a total one).",
    "Use failureThreshold 3 or more; size period × threshold to how long a real hang may last.",
)  # fmt: skip
def liveness_threshold_one(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is not None and p.failure_threshold == 1:
            msg = "livenessProbe.failureThreshold is 1"
            if t.workload.kind == "DaemonSet":
                msg += ": one slow answer kills this node's only pod of the DaemonSet"
            fix = f"livenessProbe.failureThreshold: 3 (acts after {3 * p.period_seconds}s)"
            yield ctx.finding("PS010", t, msg, ("livenessProbe", "failureThreshold"), fix)


@rule(
    "PS011", "probe-timeout-not-below-period", "warning",
    "A probe's timeout is not shorter than its period.",
    "The next tick comes while the probe still waits; the kubelet runs it once when the probe "
    "returns, so checks bunch up and the period no longer means what it says (§2.1.7).",
    "Keep timeoutSeconds below periodSeconds.",
)  # fmt: skip
def timeout_ge_period(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in _probes(t):
            if p.timeout_seconds >= p.period_seconds:
                fix = f"{kind}Probe.periodSeconds: {p.timeout_seconds + 1}"
                if p.period_seconds > 1:
                    fix = f"{kind}Probe.timeoutSeconds: {p.period_seconds - 1}, or " + fix
                yield ctx.finding(
                    "PS011",
                    t,
                    f"{kind}Probe timeoutSeconds {p.timeout_seconds} ≥ periodSeconds {p.period_seconds}",
                    (f"{kind}Probe", "timeoutSeconds"),
                    fix,
                )


@rule(
    "PS012", "startup-budget-below-start-time", "error",
    "The startup probe gives up before the app has started.",
    "The startup probe kills the container after initialDelaySeconds + failureThreshold × "
    "periodSeconds; an app that needs longer is killed before it ever starts, forever "
    "(seed 001: new pods' startup probes failed too). Needs the start time from a scenario.",
    "Raise failureThreshold so that the budget covers the slowest real start, with margin.",
)  # fmt: skip
def startup_budget(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.startup_probe
        if p is None or t.behavior is None:
            continue
        budget = (p.initial_delay_seconds + p.failure_threshold * p.period_seconds) * 1000
        if budget <= t.behavior.start:
            need = _threshold_for(t.behavior.start, p)
            yield ctx.finding(
                "PS012",
                t,
                f"startup budget {format_ms(budget)} ≤ start time {format_ms(t.behavior.start)}",
                ("startupProbe", "failureThreshold"),
                f"startupProbe.failureThreshold: {need} (a budget of "
                f"{format_ms((p.initial_delay_seconds + need * p.period_seconds) * 1000)}, 1.5 × the start)",
            )


@rule(
    "PS013", "slow-start-without-startup-probe", "error",
    "Liveness starts before a slow app is up, and there is no startup probe.",
    "Without a startup probe, liveness runs from initialDelaySeconds; an app slower than "
    "initialDelay + failureThreshold × period is killed before it answers, forever (seed 000). "
    "Needs the start time from a scenario.",
    "Add a startupProbe sized to the start time; keep liveness short after it.",
)  # fmt: skip
def slow_start(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None or t.container.startup_probe is not None or t.behavior is None:
            continue
        grace = (p.initial_delay_seconds + p.failure_threshold * p.period_seconds) * 1000
        if grace <= t.behavior.start:
            handler = {"httpGet": "httpGet", "tcpSocket": "tcpSocket", "grpc": "grpc", "exec": "exec"}[
                p.handler_kind
            ]
            period = min(p.period_seconds, 10)
            fresh = p.model_copy(update={"initial_delay_seconds": 0, "period_seconds": period})
            need = _threshold_for(t.behavior.start, fresh)
            yield ctx.finding(
                "PS013",
                t,
                f"liveness acts after {format_ms(grace)}; the app needs {format_ms(t.behavior.start)}",
                ("livenessProbe",),
                f"add startupProbe: {{<the liveness {handler} check>, periodSeconds: {period}, "
                f"failureThreshold: {need}}} (covers {format_ms(need * period * 1000)})",
            )


@rule(
    "PS014", "hang-detection-too-slow", "warning",
    "A hung container is acted on, or back, later than thresholds.detectionTarget / restartTarget.",
    "Worst-case detection is periodSeconds × failureThreshold + timeoutSeconds (seed 002); the "
    "restart then waits for the kill's grace period (the probe-level one, else the pod's, at "
    "least 2 s), and all that time the pod may still get traffic.",
    "Shorten period or threshold, set a probe-level terminationGracePeriodSeconds, or raise the "
    "targets in .probesim.yaml if the delay is intended.",
)  # fmt: skip
def detection(ctx: Context) -> Iterator[Finding]:
    th = ctx.thresholds
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None:
            continue
        worst = (p.period_seconds * p.failure_threshold + p.timeout_seconds) * 1000
        grace = p.termination_grace_period_seconds or t.workload.pod_spec.termination_grace_period_seconds
        back = worst + max(grace, 2) * 1000
        if worst > th.detection_target_ms or back > th.restart_target_ms:
            targets = f"targets {format_ms(th.detection_target_ms)} / {format_ms(th.restart_target_ms)}"
            msg = f"a hang is acted on after {format_ms(worst)}, the container back after {format_ms(back)}"
            msg += f" ({targets})"
            room = min(th.detection_target_ms, th.restart_target_ms - max(grace, 2) * 1000)
            room -= p.timeout_seconds * 1000
            threshold = room // (p.period_seconds * 1000)
            if threshold >= 2:
                fix = f"livenessProbe.failureThreshold: {min(threshold, p.failure_threshold - 1)}"
            else:
                fix = f"livenessProbe.periodSeconds: {max(1, room // 3000)} with failureThreshold: 3"
            if back > th.restart_target_ms and p.termination_grace_period_seconds is None and grace > 10:
                fix += ", and livenessProbe.terminationGracePeriodSeconds: 10"
            yield ctx.finding("PS014", t, msg, ("livenessProbe",), fix)


@rule(
    "PS015", "exec-probe-default-timeout", "warning",
    "An exec probe relies on the default 1 s timeout.",
    "Exec probes start a process in the container; under load that alone can take over a second, "
    "and since ExecProbeTimeout (v1.20+) a timed-out exec is a failure (reference §1.5.19).",
    "Set timeoutSeconds explicitly for exec probes, above the command's real run time.",
)  # fmt: skip
def exec_timeout(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in _probes(t):
            if p.exec is not None and "timeoutSeconds" not in t.raw_probe(kind):
                yield ctx.finding(
                    "PS015", t, f"{kind}Probe is exec with the default timeoutSeconds (1)", (f"{kind}Probe",),
                    f"{kind}Probe.timeoutSeconds: {max(2, min(5, p.period_seconds - 1))} "
                    "(above the command's real run time, below periodSeconds)",
                )  # fmt: skip


@rule(
    "PS016", "liveness-on-dependency", "error",
    "Liveness probes a path that calls a dependency.",
    "When the dependency is slow or down, every pod fails liveness at once and is restarted, "
    "forever: restarts cure nothing (seed 004: 82 % errors, CrashLoopBackOff). Needs the "
    "scenario's route calls.",
    "Probe a self-contained endpoint for liveness; handle the dependency with timeouts, retries "
    "and a circuit breaker.",
)  # fmt: skip
def liveness_dependency(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None or t.behavior is None or _path(p) is None:
            continue
        calls = probe_cost(t.behavior, _path(p) or "/").calls
        if calls:
            deps = ", ".join(c.dependency for c in calls)
            yield ctx.finding(
                "PS016", t, f"livenessProbe {_path(p)} calls {deps}", ("livenessProbe", "httpGet", "path")
            )


@rule(
    "PS017", "readiness-on-shared-dependency", "warning",
    "Readiness probes a path that calls a dependency every replica shares.",
    "When the shared dependency is slow, all replicas leave the Service together and it has no "
    "endpoint left, even for requests that never needed the dependency (seed 004, seed 002).",
    "Keep readiness to pod-local state; degrade the dependent routes instead.",
)  # fmt: skip
def readiness_dependency(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.readiness_probe
        if p is None or t.behavior is None or _path(p) is None:
            continue
        calls = probe_cost(t.behavior, _path(p) or "/").calls
        daemon = t.workload.kind == "DaemonSet"
        if calls and (t.workload.spec.replicas > 1 or daemon):
            deps = ", ".join(c.dependency for c in calls)
            who = "every node's pod" if daemon else f"all {t.workload.spec.replicas} replicas"
            yield ctx.finding(
                "PS017", t, f"readinessProbe {_path(p)} calls {deps}, shared by {who}",
                ("readinessProbe", "httpGet", "path"),
            )  # fmt: skip


@rule(
    "PS018", "long-grace-without-probe-grace", "info",
    "A long pod grace period also delays restarts after a liveness failure.",
    "A container killed for failing liveness gets the pod's terminationGracePeriodSeconds to stop; "
    "a hung one uses all of it before the restart. The probe-level terminationGracePeriodSeconds "
    "(GA in v1.28) shortens only that case (reference §1.1.3, §2.4.32).",
    "Set livenessProbe.terminationGracePeriodSeconds to a few seconds.",
)  # fmt: skip
def long_grace(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        grace = t.workload.pod_spec.termination_grace_period_seconds * 1000
        if (
            p is not None
            and p.termination_grace_period_seconds is None
            and grace >= ctx.thresholds.long_grace_ms
        ):
            yield ctx.finding(
                "PS018",
                t,
                f"a hung container waits {format_ms(grace)} before its restart",
                ("livenessProbe",),
                "livenessProbe.terminationGracePeriodSeconds: 10",
            )


# -- kinds with their own ways to fail -----------------------------------------------------------


@rule(
    "PS030", "daemonset-rollout-unguarded", "warning",
    "A DaemonSet's rolling update moves on before the new pod can serve.",
    "A DaemonSet replaces its pods node by node (maxUnavailable 1 by default) and moves to the "
    "next node when the new pod is available: Ready for minReadySeconds. With no readiness probe "
    "and minReadySeconds 0 the pod is Ready as soon as its containers run, so a release that "
    "crashes after a few seconds or never serves still rolls onto every node; and each node has "
    "only this pod of the DaemonSet, so a bad one is that node's outage.",
    "Add a readinessProbe to the main container, or set minReadySeconds to how long a new pod "
    "must stay up before the update moves on.",
)  # fmt: skip
def daemonset_rollout(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        w = t.workload
        if w.kind != "DaemonSet" or t.group != "containers" or t.index != 0 or w.spec.min_ready_seconds:
            continue
        raw_strategy = get_path(t.doc.data, (*t.base, "spec", "updateStrategy", "type"))
        if raw_strategy == "OnDelete":
            continue
        if not any(c.readiness_probe for c in (*w.pod_spec.containers, *w.pod_spec.init_containers)):
            yield ctx.finding(
                "PS030", t,
                f"{w.name} rolls node by node with no readiness probe and minReadySeconds 0",
                (), "add a readinessProbe to this container, or spec.minReadySeconds: 30",
            )  # fmt: skip


@rule(
    "PS031", "job-liveness-restart-never", "warning",
    "A Job's liveness probe kills a pod whose restartPolicy is Never.",
    "With restartPolicy Never a liveness kill fails the whole pod: the Job starts a new pod "
    "from the beginning, losing the work done, and counts the failure against backoffLimit "
    "(6 by default), so a step that is only slow can fail the Job. With OnFailure the container "
    "restarts in place, with back-off.",
    "Use restartPolicy OnFailure, or drop the liveness probe and bound the Job with "
    "activeDeadlineSeconds.",
)  # fmt: skip
def job_liveness_never(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        w = t.workload
        p = t.container.liveness_probe
        if w.kind in ("Job", "CronJob") and w.pod_spec.restart_policy == "Never" and p is not None:
            yield ctx.finding(
                "PS031", t,
                f"a liveness kill fails the {w.kind}'s pod (restartPolicy Never) and restarts its work",
                ("livenessProbe",), "restartPolicy: OnFailure, or remove the livenessProbe",
            )  # fmt: skip


# -- rollouts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rolling:
    """What a rolling update takes away (the controllers' rounding, engine/controllers)."""

    replicas: int
    unavailable: int  # pods the controller may take down at once
    surge: int  # pods it may add above replicas (0 for a StatefulSet)
    knob: str  # the field, for messages

    @property
    def wave(self) -> int:
        """The first new pods counted Ready together, each of which lets an old pod go: maxSurge
        of them, or the pods taken down when there is no surge."""
        return self.surge or self.unavailable


def rolling_update(w: Workload, replicas: int | None = None) -> Rolling | None:
    """The workload's rolling update (with ``replicas`` instead of its own, if given), or None
    when it has none (Recreate, OnDelete, a partition above every ordinal, other kinds)."""
    n = w.spec.replicas if replicas is None else replicas
    if w.kind == "Deployment":
        strategy = w.spec.strategy
        ru = strategy.rolling_update if strategy is not None else None
        if strategy is None or strategy.type != "RollingUpdate" or ru is None or n == 0:
            return None
        d = DeploymentState(w.name, n, 0, "RollingUpdate", ru.max_surge, ru.max_unavailable)
        knob = f"maxSurge {ru.max_surge}, maxUnavailable {ru.max_unavailable}"
        return Rolling(n, d.max_unavailable_n(), d.max_surge_n(), knob)
    if w.kind == "StatefulSet":
        us = w.spec.update_strategy
        sru = us.rolling_update if us is not None else None
        if us is None or us.type != "RollingUpdate" or n == 0 or (sru is not None and sru.partition >= n):
            return None
        v = sru.max_unavailable if sru is not None else None
        knob = "one pod at a time" if v is None else f"maxUnavailable {v}"
        return Rolling(n, min(sts_max_unavailable(v, n), n), 0, knob)
    return None


def _ready_after(b: ContainerBehavior, target: str, http: bool) -> float:
    """When (ms after the container starts) ``target`` — an HTTP path, or a probe's behaviour key —
    first answers with success and keeps doing so: after ``start`` (at once when a
    ``startingStatus`` below 400 is answered meanwhile), past the ``errors`` and ``hang``
    episodes anchored ``after`` a start that cover it then; never (inf) when it fails for good."""
    if b.paths.get(target, b.paths.get(generic(target), 200)) >= 400:
        return math.inf
    t = 0.0 if b.starting_status is not None and b.starting_status < 400 else float(b.start)
    moved = True
    while moved:
        moved = False
        for e in b.episodes:
            if e.after is None or e.after > t:
                continue
            if (
                isinstance(e, Errors)
                and e.status >= 400
                and (e.paths is None or target in e.paths or generic(target) in e.paths)
            ):
                end = math.inf if e.for_ is None else e.after + e.for_
            elif isinstance(e, Hang) and (http or not e.accepts_tcp):
                end = e.after + e.for_
            elif isinstance(e, Deadlock) and (http or not e.accepts_tcp):
                end = math.inf
            else:
                continue
            if end > t:
                t, moved = end, True
    return t


def _probe_key(p: Probe) -> tuple[str, bool]:
    """A probe's behaviour key (as the engine looks it up) and whether it needs an HTTP answer."""
    if p.http_get is not None:
        return p.http_get.path, True
    if p.exec is not None:
        return "exec:" + " ".join(p.exec.command), True
    if p.grpc is not None:
        return "grpc:" + (p.grpc.service or ""), True
    return "tcp", False  # a tcpSocket probe passes once the app listens


def _earliest_ready(c: Container, b: ContainerBehavior) -> float:
    """The earliest a new container can be Ready (ms after it starts): at once without a
    readiness probe (kubelet: Ready when running); else when its check first passes, not before
    initialDelaySeconds (kubelet.md §2.2.15; readiness is probed as soon as it can be, §2.1.5),
    after a startup probe's earliest success, plus successThreshold − 1 periods."""
    p = c.readiness_probe
    if p is None:
        return 0.0
    gate = 0.0
    s = c.startup_probe
    if s is not None:
        key, http = _probe_key(s)
        gate = max(s.initial_delay_seconds * 1000, _ready_after(b, key, http))
    key, http = _probe_key(p)
    first = max(gate, p.initial_delay_seconds * 1000, _ready_after(b, key, http))
    return first + (p.success_threshold - 1) * p.period_seconds * 1000


@dataclass(frozen=True)
class _Load:
    """The load on the workload's pods: requests per second and what serving them takes."""

    rate: float  # requests per second to the workload's Services, at their peak (spikes aside)
    cpu_s: float  # CPU seconds those requests need per second
    busy_s: float  # worker-seconds they hold per second (CPU and wall time)
    per_replica: bool  # the default load model: the load grows with the replicas
    replicas: int  # the replicas it was computed for
    paths: tuple[str, ...]  # the paths requested

    def utilization(self, serving: int, cores: float, workers: float, replicas: int | None = None) -> float:
        """The busiest resource's use when ``serving`` pods take the load of ``replicas``."""
        if self.rate == 0:
            return 0.0
        if serving <= 0:
            return math.inf
        k = (replicas or self.replicas) / self.replicas if self.per_replica else 1.0
        cpu = self.cpu_s / (serving * cores) if cores > 0 else 0.0
        return k * max(cpu, self.busy_s / (serving * workers))


def _peak(tr: Traffic) -> float:
    """A route's highest sustained rate: rates change linearly between stage targets and hold
    between a series' rows, so the peak is one of them (spikes, brief, aside)."""
    return max([tr.rate or 0.0, tr.start_rate, *(st.target for st in tr.stages), *(r for _, r in tr.points)])


def _load(ctx: Context, t: Target, b: ContainerBehavior) -> _Load:
    """The scenario's traffic to the workload's Services (each route at its peak), or the default
    load model's (analysis/defaults.py) when the scenario sends them none or there is none: as
    the stress suite loads a workload."""
    sc = ctx.scenario
    routes = [
        (tr.path, _peak(tr))
        for tr in (sc.spec.traffic if sc is not None and sc.services else ())
        if selects(sc.service_for(tr), t.workload)  # type: ignore[union-attr]
    ]
    declared = bool(routes)
    if not declared:
        routes = [("/", default_rate(t.workload))]
    cpu = busy = 0.0
    for path, rate in routes:
        cost = probe_cost(b, path)
        cpu += rate * cost.cpu / 1000
        busy += rate * (cost.cpu + cost.wall) / 1000
    paths = tuple(dict.fromkeys(p for p, _ in routes))
    return _Load(sum(r for _, r in routes), cpu, busy, not declared, max(t.workload.spec.replicas, 1), paths)


def _behavior(ctx: Context, t: Target) -> ContainerBehavior:
    """What the app does: the scenario's behaviour for the workload, or the default load model's
    (its app answers once readiness first looks: analysis/defaults.py), as the stress suite has it."""
    if ctx.scenario is not None and t.workload.name in ctx.scenario.spec.behavior:
        return t.behavior or ContainerBehavior()
    raw = workload_behavior(t.workload, t.services)["containers"].get(t.container.name, {})
    return ContainerBehavior.model_validate(raw)


def _pct(u: float) -> str:
    return "no pod is left to serve them" if math.isinf(u) else f"{100 * u:.0f} % of what they can serve"


def _pods(n: int) -> str:
    return f"{n} pod" if n == 1 else f"{n} pods"


@rule(
    "PS032", "rollout-capacity", "warning",
    "A rolling update leaves too few pods to serve the load, or counts new pods Ready before they serve.",
    "During a rolling update the controller takes maxUnavailable pods away (a Deployment's rounds "
    "down, its maxSurge up, and 1 when both round to 0: ResolveFenceposts; a StatefulSet one pod "
    "at a time, its maxUnavailable rounded down, at least 1), and the survivors take their load: "
    "replicas − maxUnavailable pods must serve what all of them served. And it removes an old pod "
    "for each new one that is Ready (reconcileOldReplicaSets keeps replicas − maxUnavailable "
    "available, Ready for minReadySeconds; a StatefulSet moves on once the new pod is Ready). A new "
    "pod whose readiness can pass before the app serves the traffic's paths — no readiness probe "
    "and an app that takes time to start, or a check that answers while the app still fails its "
    "requests (from the scenario's behaviour: the earliest its check can pass — not before "
    "initialDelaySeconds, nor a startup probe's earliest success, plus successThreshold − 1 "
    "periods — is before the traffic's paths answer, past start and warm-up error episodes) — "
    "gets its share of requests and fails them during every rollout, and the first new "
    "pods counted Ready (maxSurge of them, or maxUnavailable without surge) each let a warm pod go: "
    "replicas − maxUnavailable − that many serve meanwhile (more are lost if the warm-up outlasts "
    "the next pods' start). The load is the scenario's traffic to the workload's Services (each "
    "route at its peak sustained rate), or the default load model's (10 requests per second per "
    "replica, 50 ms of CPU per core of its request: see docs/scenarios.md) when it sends none; a "
    "pod serves what its CPU limit (the node's CPU without one) and workers allow at its route "
    "costs; the survivors are short when they would need 100 % of that or more (route costs only: "
    "probes and dependency calls' waits are not counted). With the default load model an app "
    "answers once readiness first looks, so only capacity is judged. A workload overloaded with "
    "every pod serving is not reported here, nor Recreate and OnDelete strategies (no rolling "
    "update).",
    "Make readiness pass only once the app serves (a path that needs what requests need, or "
    "initialDelaySeconds past the warm-up); keep capacity with maxUnavailable: 0 and maxSurge: 1 "
    "(a pod more instead of one less), or more replicas.",
)  # fmt: skip
def rollout_capacity(ctx: Context) -> Iterator[Finding]:
    node = (ctx.scenario.spec.cluster if ctx.scenario is not None else Cluster()).node_cpu
    for t in ctx.targets:
        w = t.workload
        ro = rolling_update(w)
        if not t.serves or ro is None:
            continue
        b = _behavior(ctx, t)
        load = _load(ctx, t, b)
        serve = max(_ready_after(b, p, True) for p in load.paths)
        if load.rate == 0 or math.isinf(serve):
            continue
        cores = (t.container.resources.limits.cpu or node) / 1000
        workers = float(b.capacity.workers or math.inf)
        if load.utilization(ro.replicas, cores, workers) >= 1:
            continue
        ready = _earliest_ready(t.container, b)
        cold = ready < serve
        # Cold new pods cost capacity too when they count as available before they serve.
        early = cold and ready + w.spec.min_ready_seconds * 1000 < serve
        serving = max(0, ro.replicas - ro.unavailable - (ro.wave if early else 0))
        during = load.utilization(serving, cores, workers)
        if not cold and during < 1:
            continue
        where = f"a rollout ({ro.knob})"
        rel: tuple[str, ...] = ()
        fix = ""
        if cold:
            path = max(load.paths, key=lambda p: _ready_after(b, p, True))
            rp = t.container.readiness_probe
            msg = (f"new pods can be Ready {format_ms(int(ready))} after they start, {path} answers from "
                   f"{format_ms(int(serve))}: {where} sends them requests they fail")  # fmt: skip
            extra = (rp.success_threshold - 1) * rp.period_seconds * 1000 if rp is not None else 0
            delay = -(-(int(serve) - extra) // 1000)
            if rp is None:
                port = t.serves[0][2]
                shown = port if isinstance(port, int) else f'"{port}"'
                probe = f"httpGet: {{path: {path}, port: {shown}}}"
                fix = f"add readinessProbe: {{{probe}, initialDelaySeconds: {delay}}}"
            else:
                rel = ("readinessProbe",)
                alt = f"readinessProbe.httpGet.path: {path}, or " if rp.http_get is not None else ""
                fix = f"{alt}readinessProbe.initialDelaySeconds: {delay}"
            if during >= 1:
                msg += f"; meanwhile {serving} of {_pods(ro.replicas)} serving, at {_pct(during)}"
        else:
            rate = f"{load.rate:g} req/s"
            msg = f"{where} leaves {serving} of {_pods(ro.replicas)} to serve {rate}: {_pct(during)}"
        more_pods: list[str] = []
        if load.utilization(ro.replicas - ro.unavailable, cores, workers) >= 1:  # even with warm pods
            if w.kind == "Deployment":
                u = load.utilization(ro.replicas, cores, workers)
                more_pods.append(
                    f"strategy.rollingUpdate: {{maxSurge: {max(ro.surge, 1)}, maxUnavailable: 0}} "
                    f"({_pods(ro.replicas)} serving throughout, at {100 * u:.0f} %)"
                )
            for n in range(ro.replicas + 1, ro.replicas + 1001):  # bounded: 100 % unavailable never fits
                more = rolling_update(w, n)
                if more is None:
                    continue
                u = load.utilization(n - more.unavailable, cores, workers, n)
                if u < 1:
                    room = "" if w.kind == "Deployment" else ", if the app can run that many"
                    left = n - more.unavailable
                    more_pods.append(
                        f"replicas: {n} ({left} serving during a rollout, at {100 * u:.0f} %{room})"
                    )
                    break
        if more_pods:
            fix += ("; and " if fix else "") + ", or ".join(more_pods)
        yield ctx.finding("PS032", t, msg, rel, fix)


# -- Istio ------------------------------------------------------------------------------------


def _istio(ctx: Context, kind: str) -> Iterator[tuple[Any, Any, dict[str, Any], str]]:
    for doc, base, data in ctx.objects.istio:
        if data.get("kind") == kind:
            name = get_path(data, ("metadata", "name"))
            yield doc, base, data, f"{kind}/{name}"


def _policies(data: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    tp = get_path(data, ("spec", "trafficPolicy"))
    if isinstance(tp, dict):
        yield ("spec", "trafficPolicy"), tp
    for i, sub in enumerate(get_path(data, ("spec", "subsets")) or []):
        if isinstance(sub, dict) and isinstance(sub.get("trafficPolicy"), dict):
            yield ("spec", "subsets", i, "trafficPolicy"), sub["trafficPolicy"]


def _endpoints(ctx: Context, host: str, namespace: str) -> int | None:
    """Pods behind the Service a DestinationRule's host names (a short name is in the rule's own
    namespace; ``name.ns`` and ``name.ns.svc.cluster.local`` name another); None when unknown."""
    parts = host.split(".")
    name, ns = parts[0], parts[1] if len(parts) > 1 else namespace
    svc = next((s for s in ctx.objects.services if s.name == name and s.metadata.namespace == ns), None)
    if svc is None:
        return None
    return sum(w.spec.replicas for w in ctx.objects.workloads if selects(svc, w) and w.kind != "DaemonSet")


@rule(
    "PS020", "outlier-default-max-ejection-small-service", "warning",
    "Outlier detection with the default maxEjectionPercent (10 %) on a service of fewer than 10 pods.",
    "Current Envoy never ejects a host when ejecting it would exceed max_ejection_percent, and "
    "10 % of fewer than 10 hosts is less than one: the failing pod is never ejected "
    "(reference/envoy-istio.md §8.1).",
    "Set maxEjectionPercent explicitly (for example 50).",
)  # fmt: skip
def max_ejection_default(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in _istio(ctx, "DestinationRule"):
        host = str(get_path(data, ("spec", "host")) or "")
        n = _endpoints(ctx, host, str(get_path(data, ("metadata", "namespace")) or "default"))
        for path, tp in _policies(data):
            od = tp.get("outlierDetection")
            if isinstance(od, dict) and "maxEjectionPercent" not in od and n is not None and n < 10:
                yield ctx.raw_finding(
                    "PS020",
                    doc,
                    base,
                    obj,
                    (*path, "outlierDetection"),
                    f"{host} has {n} pods: 10 % of them is less than one, so no host is ever ejected",
                )


@rule(
    "PS021", "outlier-can-eject-everything", "warning",
    "maxEjectionPercent 100 with minHealthPercent 0: every host can be ejected.",
    "When all hosts fail (a shared dependency, a bad deploy) all are ejected and the client gets "
    "503 no healthy upstream; Istio's panic threshold is 0, so Envoy does not route to them anyway "
    "(reference/envoy-istio.md §8.7).",
    "Keep maxEjectionPercent below 100, or set minHealthPercent so the panic mode can help.",
)  # fmt: skip
def eject_everything(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in _istio(ctx, "DestinationRule"):
        for path, tp in _policies(data):
            od = tp.get("outlierDetection")
            if (
                isinstance(od, dict)
                and od.get("maxEjectionPercent") == 100
                and not od.get("minHealthPercent")
            ):
                yield ctx.raw_finding(
                    "PS021",
                    doc,
                    base,
                    obj,
                    (*path, "outlierDetection", "maxEjectionPercent"),
                    "every host can be ejected at once (maxEjectionPercent 100, minHealthPercent 0)",
                )


@rule(
    "PS022", "outlier-consecutive-errors-one", "warning",
    "A host is ejected after a single 5xx.",
    "One error from a healthy pod (a deploy, one bad request) ejects it for baseEjectionTime, "
    "longer each time; with few pods that moves all load to the rest.",
    "Use consecutive5xxErrors of 3 or more.",
)  # fmt: skip
def consecutive_one(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in _istio(ctx, "DestinationRule"):
        for path, tp in _policies(data):
            od = tp.get("outlierDetection")
            if isinstance(od, dict) and od.get("consecutive5xxErrors") == 1:
                yield ctx.raw_finding(
                    "PS022",
                    doc,
                    base,
                    obj,
                    (*path, "outlierDetection", "consecutive5xxErrors"),
                    "consecutive5xxErrors is 1",
                )


def _routes(data: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    for i, r in enumerate(get_path(data, ("spec", "http")) or []):
        if isinstance(r, dict):
            yield i, r


def _only_reads(route: dict[str, Any]) -> bool:
    matches = route.get("match") or []
    methods = []
    for m in matches:
        method = m.get("method") if isinstance(m, dict) else None
        if not isinstance(method, dict):
            return False
        methods.append(str(method.get("exact") or method.get("regex") or method.get("prefix") or ""))
    return bool(methods) and all(m.upper() in ("GET", "HEAD", "OPTIONS") for m in methods)


@rule(
    "PS023", "mirror-of-writes", "warning",
    "A route mirrors requests that may write.",
    "Mirrored requests are really processed by the mirror and the answers thrown away: a POST "
    "is written twice (seed 003).",
    "Mirror only GET/HEAD routes (match on method), or make the mirror target side-effect free.",
)  # fmt: skip
def mirror_writes(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in _istio(ctx, "VirtualService"):
        for i, r in _routes(data):
            if ("mirror" in r or "mirrors" in r) and not _only_reads(r):
                key = "mirror" if "mirror" in r else "mirrors"
                yield ctx.raw_finding(
                    "PS023",
                    doc,
                    base,
                    obj,
                    ("spec", "http", i, key),
                    "mirrors every method, writes included (no match on GET/HEAD)",
                )


@rule(
    "PS024", "retries-without-per-try-timeout", "warning",
    "Retries without a per-try timeout.",
    "Without perTryTimeout, one try can use the whole route timeout (none by default in Istio), "
    "so a hung upstream is never retried; and Istio's default retry policy does not retry "
    "per-try timeouts unless retryOn has 5xx, gateway-error or reset (reference §5.5).",
    "Set perTryTimeout below the client's timeout, and retryOn to include the failures to retry.",
)  # fmt: skip
def retries_per_try(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in _istio(ctx, "VirtualService"):
        for i, r in _routes(data):
            retries = r.get("retries")
            if (
                isinstance(retries, dict)
                and (retries.get("attempts") or 0) > 0
                and "perTryTimeout" not in retries
            ):
                yield ctx.raw_finding(
                    "PS024",
                    doc,
                    base,
                    obj,
                    ("spec", "http", i, "retries"),
                    f"{retries.get('attempts')} retries without perTryTimeout",
                )


@rule(
    "PS025", "retry-amplification", "warning",
    "Retries multiply across layers beyond thresholds.retryAmplification.",
    "A mesh retry policy around an app that retries its own dependency multiplies the tries a "
    "failing dependency receives: 3 × 3 tries is 9 calls for one user request, just when it is "
    "least able to take them. Needs the scenario's route calls.",
    "Retry at one layer only, with a budget.",
)  # fmt: skip
def retry_amplification(ctx: Context) -> Iterator[Finding]:
    mesh = 1
    for _doc, _base, data, _obj in _istio(ctx, "VirtualService"):
        for _i, r in _routes(data):
            retries = r.get("retries")
            attempts = retries.get("attempts") if isinstance(retries, dict) else 2  # Istio's default: 2
            mesh = max(mesh, 1 + int(attempts or 0))
    for t in ctx.targets:
        if t.behavior is None:
            continue
        for path, cost in t.behavior.routes.items():
            for c in cost.calls:
                total = mesh * c.retries.attempts
                if total > ctx.thresholds.retry_amplification:
                    tries = f"{mesh} mesh × {c.retries.attempts} app tries"
                    msg = f"{path} → {c.dependency}: {tries} = {total} calls"
                    yield ctx.finding("PS025", t, msg)


@rule(
    "PS100", "stress-failure", "error",
    "The workload fails a simulated stress (probesim check --stress).",
    "The stress suite simulates each workload behind a Service under doubled and tripled "
    "traffic, a doubled start time, half of its dependency calls hanging, one pod answering "
    "500, a 2 s stop-the-world pause and CPU throttled to the request, and compares error %, "
    "restarts and the lowest ready fraction with thresholds (stress in .probesim.yaml); and "
    "through a rolling update of a new version that behaves as the last and of one that never "
    "becomes Ready, where the old pods must keep serving: errors from the rollout on, available "
    "replicas against replicas − maxUnavailable, and whether it completes (or, for the bad "
    "release, stalls).",
    "Read which stress failed and why; probesim run the workload's scenario under it to see the timeline.",
)  # fmt: skip
def stress_failure(ctx: Context) -> Iterator[Finding]:
    return iter(())  # findings come from the stress suite, not from reading manifests


def rules_markdown() -> str:
    """docs/rules.md, generated from the rules themselves (``make docs``)."""
    lines = [
        "# probesim check rules",
        "",
        "Generated from `src/probesim/analysis/rules.py` by `make docs`; do not edit by hand.",
        'Suppress a finding with the annotation `probesim.dev/ignore: "PS010=reason"` on the object',
        "or its pod template (`probesim.dev/ignore-<container>` for one container), or exclude the",
        "rule in `.probesim.yaml`. An unknown rule ID in the annotation is warned about.",
        "",
        "## What is read, and what is skipped",
        "",
        "- **Linted**: every pod template — Deployment, StatefulSet, DaemonSet, ReplicaSet,",
        "  ReplicationController, Job, CronJob (its `jobTemplate`) and bare Pods — with init",
        "  containers and native sidecars (`restartPolicy: Always`); older API versions of these",
        "  kinds (`extensions/v1beta1`, `apps/v1beta1/2`, `batch/v1beta1`) are read with the same rules.",
        "  Services (which containers their `targetPort` reaches, by number or name; only in the same",
        "  namespace), HPAs (any metrics), and Istio DestinationRules and VirtualServices are read",
        "  for the rules. A Job's or CronJob's pods are never behind a Service.",
        "- **Identity**: objects are told apart by kind, namespace and name; the same name in two",
        "  namespaces (or two folders of variants) is two objects, both linted.",
        "- **As the API server reads them**: a field left empty (`annotations:`) is unset; CPU",
        "  quantities take every form Kubernetes takes (`.5`, `500m`, `1e3`, `2Ki`); a YAML 1.1 `=`",
        "  scalar is the string `=`; `kind: List` and every `<Kind>List` with `items` are read item by",
        "  item.",
        "- **Skipped, with a note** (one summary line in text, each with why under `-v`, `skipped` in",
        "  JSON, `runs[0].properties.skipped` in SARIF, `system-out` in JUnit): kinds with no pod",
        "  template (ConfigMap, RBAC, PodDisruptionBudget, …), custom resources and their definitions",
        "  (including a Knative `serving.knative.dev` Service: its controller makes the pods), files that",
        "  hold no Kubernetes object (Chart.yaml, values files, CI workflows, Compose files),",
        "  kustomizations and the patches and plugin configs they name, files with Go template markers,",
        "  and unrendered Helm chart folders (a `Chart.yaml`: pipe `helm template` output instead).",
        "- **Exit 2** only for what you must fix: YAML that does not parse (outside templates), an",
        "  invalid field in an object probesim reads (for example an apps/v1 Deployment without a",
        "  selector, as in a kustomize base that relies on `commonLabels`), a misspelt kind in a",
        "  built-in API group, or no Kubernetes object anywhere (an empty `helm template` pipe, a chart",
        "  folder alone).",
        "",
        "| ID | name | severity | what it finds |",
        "|---|---|---|---|",
    ]
    rules = sorted(REGISTRY.rules.values(), key=lambda r: r.id)
    lines += [f"| [{r.id}](#{r.id.lower()}) | {r.name} | {r.severity} | {r.title} |" for r in rules]
    for r in rules:
        lines += ["", f"## {r.id}", "", f"**{r.name}** ({r.severity}) — {r.title}", ""]
        lines += [f"What goes wrong: {r.why}", "", f"Fix: {r.fix}"]
    return "\n".join(lines) + "\n"
