"""Rules on one container's probes: missing, misdirected, too strict, too slow, too short."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.rules.dependencies import profile_liveness_path
from probesim.analysis.rules.handlers import port_kind, profile_handler
from probesim.analysis.rules.plan import plan
from probesim.analysis.rules.timing import (
    THROTTLE_LIMIT_M,
    Timing,
    as_strict,
    check_ms,
    cpu_limit_m,
    exec_timeout_short,
    liveness_pause_ms,
    liveness_slow,
    paused_liveness,
    probes_of,
    readiness_slow,
    restart_grace,
    stricter,
    tcp_misses,
    throttle_prone,
    timeout_below_check,
    timeout_not_below_period,
    wants_readiness,
)
from probesim.analysis.rules.timing import long_grace as long_grace_rule
from probesim.kube.ports import container_port
from probesim.model.duration import format_ms
from probesim.model.kubernetes import HANDLERS

rule = REGISTRY.rule

# -- parity with existing linters, done right ------------------------------------------------


@rule(
    id="PS001",
    name="readiness-probe-missing",
    severity="warning",
    title="A container a Service sends traffic to has no readiness probe.",
    why="Without readiness, the Service sends requests to a pod as soon as its container runs: "
    "still starting, warming up or shutting down (seed 000: 3 of 12 requests lost to a pod "
    "that needed 3 s to start). Only containers whose port a Service targets (by number or "
    "name) are checked — helper containers are not, nor are Jobs and CronJobs.",
    fix="Add a readinessProbe on a cheap, local endpoint that answers only when the pod can serve.",
)  # fmt: skip
def readiness_missing(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        if wants_readiness(t):
            via = ", ".join(dict.fromkeys(f"{sv.name}:{p}" for sv, p, _ in t.serves))
            msg = f"container {t.container.name} serves Service {via} with no readinessProbe"
            pl = plan(ctx, t)
            yield ctx.finding("PS001", t, msg, **pl.fix("readiness"))


@rule(
    id="PS002",
    name="probe-port-not-declared",
    severity="error",
    title="A probe's named port is not a port of its container.",
    why="The kubelet cannot resolve the name, the probe errors, and the error is discarded: "
    "readiness then never passes and liveness never fires (reference/kubelet.md §2.3.26).",
    fix="Use a port name declared in the container's ports, or a number.",
)  # fmt: skip
def port_not_declared(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in probes_of(t):
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
    id="PS004",
    name="probe-port-not-exposed",
    severity="info",
    title="A probe's port number is not among the ports its container declares.",
    why="The kubelet probes the pod IP and port directly, so an undeclared port still works; but the "
    "probe often targets a port the app does not listen on after a port change (kube-linter's "
    "liveness-port / readiness-port checks). Containers that declare no ports are not checked.",
    fix="Declare the port in the container's ports, by name, and probe it by that name.",
)  # fmt: skip
def port_not_exposed(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        declared = {cp.container_port for cp in t.container.ports}
        if not declared:
            continue
        for kind, p in probes_of(t):
            handler = p.http_get or p.tcp_socket
            if handler is not None and isinstance(handler.port, int) and handler.port not in declared:
                h = "httpGet" if p.http_get is not None else "tcpSocket"
                msg = f"{kind}Probe port {handler.port} is not declared (ports: {sorted(declared)})"
                names = {cp.name for cp in t.container.ports}
                name = "health" if "health" not in names else f"probe-{handler.port}"
                port = {"name": name, "containerPort": handler.port}
                yield ctx.finding("PS004", t, msg, (f"{kind}Probe", h, "port"), change={"ports": [port]},
                                  note="then the probe can name it")  # fmt: skip


@rule(
    id="PS003",
    name="liveness-as-strict-as-readiness",
    severity="warning",
    title="Liveness acts as fast as readiness on the same check: a pod that should leave rotation is "
    "restarted.",
    why="When liveness and readiness probe the same thing and liveness gives up no later than "
    "readiness, every slow spell restarts the container instead of only taking it out of "
    "rotation (seed 002). Identical probes are fine when liveness is more tolerant — the "
    "false positive users report against kube-score — so this rule compares failure budgets.",
    fix="Give liveness a larger failure budget (periodSeconds × failureThreshold) than readiness, or "
    "point it at a cheaper, self-contained endpoint.",
)  # fmt: skip
def liveness_as_strict(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        live, ready = t.container.liveness_probe, t.container.readiness_probe
        if live is None or ready is None:
            continue
        lt, rt = Timing.of(live), Timing.of(ready)
        if as_strict(lt, rt):
            pl = plan(ctx, t)
            yield ctx.finding(
                "PS003",
                t,
                f"liveness gives up after {lt.budget}s, readiness after {rt.budget}s, on the same check",
                ("livenessProbe",),
                **pl.fix("liveness", "readiness"),
            )


@rule(
    id="PS005",
    name="liveness-stricter-than-readiness",
    severity="warning",
    title="Liveness gives up sooner than readiness: a slow pod is restarted before it leaves the Service.",
    why="When liveness (on its own check, a management port or a /live path) tolerates less than "
    "readiness, a slow spell — load, a long GC, a model still loading — restarts the container "
    "while readiness would still be waiting, and the restart throws away whatever was warm; "
    "without a startup probe a slow start is killed the same way. Readiness should act first "
    "(the pod leaves the Service), liveness only on what a restart cures.",
    fix="Give liveness a larger failure budget (periodSeconds × failureThreshold) than readiness, "
    "and a startupProbe for a slow start.",
)  # fmt: skip
def liveness_stricter(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        live, ready = t.container.liveness_probe, t.container.readiness_probe
        if live is None or ready is None:
            continue
        lt, rt = Timing.of(live), Timing.of(ready)
        if stricter(lt, rt) and lt.failure > 1:  # at 1, PS010 says it, and its fix is this plan
            msg = f"liveness gives up after {lt.budget}s, readiness only after {rt.budget}s"
            if t.container.startup_probe is None:
                msg += ", and there is no startupProbe"
            pl = plan(ctx, t)
            yield ctx.finding("PS005", t, msg, ("livenessProbe",), **pl.fix("liveness", "readiness"))


@rule(
    id="PS034",
    name="tcp-probe-on-http-or-grpc",
    severity="info",
    title="A liveness or readiness probe only opens a TCP connection to a port that speaks HTTP or gRPC.",
    why="A TCP check proves only that the port is open: a process that is deadlocked, or that answers "
    "every request with an error, still accepts connections, so liveness never restarts it and "
    "readiness never takes it out (Kubernetes' own e2e suite keeps a server answering 500 alive with "
    "a TCP liveness probe). The port speaks gRPC or HTTP (its name, or the Service's appProtocol): "
    "the kubelet's grpc probe (GA in Kubernetes 1.27) asks the app's standard health service, and an "
    "httpGet on the app's health endpoint answers only when the app can.",
    fix="On a gRPC port, `grpc: {port: N}` in place of `tcpSocket` (the app must serve the standard "
    "health service, grpc.health.v1: Grpc.AspNetCore.HealthChecks, grpc-go's health package, "
    "grpc-java's HealthStatusManager); on an HTTP port, an `httpGet` on the app's own health "
    "endpoint (its profile's, where probesim knows the app).",
)  # fmt: skip
def tcp_probe_on_http_or_grpc(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in probes_of(t):
            if kind == "startup" or p.tcp_socket is None:
                continue
            port = p.tcp_socket.port
            speaks = port_kind(t, port)
            if not speaks:
                continue
            name = f"{kind}Probe"
            protocol = "gRPC" if speaks == "grpc" else "HTTP"
            msg = f"{name} opens a TCP connection to port {port}, which speaks {protocol}: "
            msg += "a hung app still accepts it"
            change, note = _fitting_checks(t, port, speaks)
            if change is not None and "livenessProbe" in change:
                # The app's own check on a throttled container needs the plan's timeout (PS044).
                pl = plan(ctx, t)
                if pl.throttled_limit_m is not None:
                    for key, fields in pl.change("liveness").items():
                        if key in change:  # this fix's own check, not the one the plan gives it
                            fields = {k: v for k, v in fields.items() if k not in HANDLERS}
                        change[key] = {**fields, **change.get(key, {})}
                    note += "; " + pl.throttle_reason()
            yield ctx.finding("PS034", t, msg, (name, "tcpSocket"), change=change, note=note)


# The fields of a probe that are its check: one of them only (the API server refuses two).
@rule(
    id="PS045",
    name="tcp-readiness-where-the-app-has-a-check",
    severity="warning",
    title="Readiness only opens a TCP connection to an app whose own check sees more.",
    why="A TCP check proves only that the port accepts connections. Some servers accept them long "
    "before they can answer: PostgreSQL during crash recovery and start-up refuses every query "
    "(FATAL: the database system is starting up), Redis answers LOADING to every command while "
    "it loads its dataset. A TCP readiness reports such a pod Ready and the Service sends it "
    "requests that fail. The app's own client check (pg_isready, a redis-cli ping that must "
    "answer PONG) passes only when it serves (Bitnami's charts; the app profile says which). "
    "Liveness by TCP is not reported: a server still recovering is alive, and a restart would "
    "start its recovery over.",
    fix="Use the app's own readiness check (the fix: its exec command, with the 5 s timeout exec "
    "probes need). A Redis with a password needs it in the container's REDISCLI_AUTH, as Bitnami's "
    "chart sets it: without it the answer is NOAUTH, never PONG.",
)  # fmt: skip
def tcp_readiness_where_app_has_check(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        if not tcp_misses(t):
            continue
        assert t.profile is not None
        msg = f"readinessProbe opens a TCP connection only: {t.profile.profile.name} accepts one before "
        msg += "it can serve"
        pl = plan(ctx, t)
        yield ctx.finding("PS045", t, msg, ("readinessProbe", "tcpSocket"), **pl.fix("readiness"))


def _fitting_checks(t: Any, port: int | str, speaks: str) -> tuple[dict[str, Any] | None, str]:
    """The change that gives every probe of ``t`` that opens a TCP connection to ``port`` the check
    its protocol calls for — all of them at once, so liveness and readiness that shared one check
    are judged as before (PS003, PS005) — and why; None where probesim knows no such check (an
    HTTP app whose health endpoints it does not know), or where liveness, already giving up no
    later than readiness, would then be on another check (PS005 instead of PS003: fix that first)."""
    number = container_port(t.container, port)
    on_port = [
        (kind, q)
        for kind, q in probes_of(t)
        if q.tcp_socket is not None and container_port(t.container, q.tcp_socket.port) == number
    ]
    if speaks == "grpc" and number is not None:
        change = {f"{kind}Probe": {"grpc": {"port": number}, "tcpSocket": None} for kind, _ in on_port}
        return change, "the standard gRPC health service, which the app must serve (grpc.health.v1)"
    # A startup probe the profile knows no check for keeps its TCP check (it only waits for the
    # port to open); liveness and readiness need the app's own.
    known = {kind: profile_handler(t, kind, port) for kind, _ in on_port}
    known = {k: h for k, h in known.items() if k != "startup" or (h is not None and "httpGet" in h[0])}
    if speaks != "http" or any(h is None or "httpGet" not in h[0] for h in known.values()):
        return None, ""
    timings = {kind: Timing.of(q) for kind, q in on_port}
    live, ready = timings.get("liveness"), timings.get("readiness")
    differ = len({str(h[0]) for h in known.values() if h is not None}) > 1
    if live is not None and ready is not None and differ and live.budget < ready.budget:
        return None, ""
    change = {f"{kind}Probe": {**h[0], "tcpSocket": None} for kind, h in known.items() if h is not None}
    return change, "; ".join(dict.fromkeys(h[1] for h in known.values() if h is not None))


@rule(
    id="PS006",
    name="liveness-shares-readiness-path",
    severity="info",
    title="Liveness (and startup) probe the same HTTP path as readiness.",
    why="A readiness endpoint often checks what serving needs — the database, a cache, a downstream "
    "API (Grafana's /api/health reports its database) — and then liveness on it restarts every "
    "pod when that dependency fails, which cures nothing (seed 004; PS016 when a scenario says "
    "the path calls a dependency). Not reported when the scenario's behaviour for the path "
    "makes no call. No patch: the cure is an endpoint that checks only the process.",
    fix="Point liveness (and the startup probe) at a self-contained path that checks only the "
    "process (a /livez); if this path checks nothing outside it, say so with "
    '`probesim.dev/ignore: "PS006=self-contained"`.',
)  # fmt: skip
def liveness_shares_path(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        live, ready = t.container.liveness_probe, t.container.readiness_probe
        if live is None or ready is None or live.http_get is None or ready.http_get is None:
            continue
        lh, rh = live.http_get, ready.http_get
        if lh.path != rh.path or container_port(t.container, lh.port) != container_port(t.container, rh.port):
            continue
        if t.behavior is not None:  # the scenario says what the path calls: PS016's business
            continue
        prof = t.profile
        if prof is not None and prof.path_self_contained(lh.path):  # the app's own process check
            continue
        s = t.container.startup_probe
        shared_startup = s is not None and s.http_get is not None and s.http_get.path == lh.path
        also = " (the startup probe too)" if shared_startup else ""
        msg = f"livenessProbe{also} and readinessProbe both probe {lh.path}: "
        if prof is not None and prof.path_reaches_dependency(lh.path):
            msg += f"{prof.profile.name}'s {lh.path} checks a dependency, so its failure restarts every pod"
        else:
            msg += "a dependency it checks restarts every pod"
        live_path = profile_liveness_path(t)
        if prof is not None and prof.path_reaches_dependency(lh.path) and live_path not in (None, lh.path):
            continue  # PS016's: liveness on a dependency, pointed at the app's own liveness endpoint
        if live_path is None or live_path == lh.path:
            yield ctx.finding("PS006", t, msg, ("livenessProbe", "httpGet", "path"))
            continue
        # The app has its own liveness endpoint: point liveness (and startup) at it.
        change: dict[str, Any] = {"livenessProbe": {"httpGet": {"path": live_path}}}
        if shared_startup:
            change["startupProbe"] = {"httpGet": {"path": live_path}}
        assert prof is not None
        note = f"{prof.profile.name}'s liveness endpoint, which checks only the process"
        yield ctx.finding("PS006", t, msg, ("livenessProbe", "httpGet", "path"), change=change, note=note)


@rule(
    id="PS007",
    name="probe-timeout-below-check-time",
    severity="warning",
    title="A probe's timeout does not cover its check's time in the scenario, with room for the tail.",
    why="A check that takes as long as its timeout fails on a slow answer and under any load: the "
    "probe flaps, readiness takes the pod out, liveness restarts it (what `probesim run` shows "
    "as timeouts). The check's time is its path's (or exec command's) CPU and wait in the "
    "scenario, unloaded; the tail is taken as twice that (a simplification: the load's own "
    "latency is not counted). Needs the scenario's behaviour.",
    fix="Raise timeoutSeconds above twice the check's time (and periodSeconds above the timeout), "
    "or make the check cheaper.",
)  # fmt: skip
def timeout_below_check_time(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in probes_of(t):
            if timeout_below_check(t, p):
                msg = f"{kind}Probe takes {format_ms(int(check_ms(t, p)))} a check, timeoutSeconds is "
                msg += f"{p.timeout_seconds}"
                pl = plan(ctx, t)
                yield ctx.finding("PS007", t, msg, (f"{kind}Probe", "timeoutSeconds"), **pl.fix(kind))


# -- what none of them check -----------------------------------------------------------------


@rule(
    id="PS010",
    name="liveness-failure-threshold-one",
    severity="error",
    title="Liveness restarts the container on a single failed probe.",
    why="One GC pause, one slow answer under load, one dropped packet kills the container (seed 002; "
    "seed 004: failureThreshold 1 on liveness turned a partial outage into a total one).",
    fix="Use failureThreshold 3 or more; size period × threshold to how long a real hang may last.",
)  # fmt: skip
def liveness_threshold_one(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is not None and p.failure_threshold == 1:
            msg = "livenessProbe.failureThreshold is 1"
            if t.workload.kind == "DaemonSet":
                msg += ": one slow answer kills this node's only pod of the DaemonSet"
            pl = plan(ctx, t)
            yield ctx.finding("PS010", t, msg, ("livenessProbe", "failureThreshold"), **pl.fix("liveness"))


@rule(
    id="PS011",
    name="probe-timeout-not-below-period",
    severity="warning",
    title="A probe's timeout is not shorter than its period.",
    why="The next tick comes while the probe still waits; the kubelet runs it once when the probe "
    "returns, so checks bunch up and the period no longer means what it says (§2.1.7).",
    fix="Keep timeoutSeconds below periodSeconds.",
)  # fmt: skip
def timeout_ge_period(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in probes_of(t):
            if timeout_not_below_period(Timing.of(p)):
                pl = plan(ctx, t)
                yield ctx.finding(
                    "PS011",
                    t,
                    f"{kind}Probe timeoutSeconds {p.timeout_seconds} ≥ periodSeconds {p.period_seconds}",
                    (f"{kind}Probe", "timeoutSeconds"),
                    **pl.fix(kind),
                )


@rule(
    id="PS014",
    name="hang-detection-too-slow",
    severity="warning",
    title="A hung container is acted on, or back, later than thresholds.detectionTarget / restartTarget.",
    why="Worst-case detection is periodSeconds × failureThreshold + timeoutSeconds (seed 002); the "
    "restart then waits for the kill's grace period (the probe-level one, else the pod's, at "
    "least 2 s), and all that time the pod may still get traffic.",
    fix="Shorten period or threshold, set a probe-level terminationGracePeriodSeconds, or raise the "
    "targets in .probesim.yaml if the delay is intended.",
)  # fmt: skip
def detection(ctx: Context) -> Iterator[Finding]:
    th = ctx.thresholds
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None:
            continue
        lt = Timing.of(p)
        if liveness_slow(ctx, t, lt):
            back = lt.act_s + restart_grace(t, lt)
            targets = f"targets {format_ms(th.detection_target_ms)} / {format_ms(th.restart_target_ms)}"
            msg = f"a hang is acted on after {format_ms(lt.act_s * 1000)}, the container back after "
            msg += f"{format_ms(back * 1000)} ({targets})"
            pl = plan(ctx, t)
            yield ctx.finding("PS014", t, msg, ("livenessProbe",), **pl.fix("liveness"))


@rule(
    id="PS019",
    name="readiness-removal-too-slow",
    severity="warning",
    title="A failing pod stays in the Service longer than thresholds.detectionTarget.",
    why="Readiness takes a pod out of its Service after periodSeconds × failureThreshold + "
    "timeoutSeconds of failures; all that time the Service keeps sending it requests, which fail "
    "(a router probed every 60 s, 30 failures allowed, serves errors for half an hour). A "
    "liveness probe is no cure: it restarts the pod, it does not stop the traffic, and it should "
    "be the more tolerant of the two (PS003).",
    fix="Lower readiness's failureThreshold (or its period) so a failing pod leaves within the target.",
)  # fmt: skip
def readiness_slow_removal(ctx: Context) -> Iterator[Finding]:
    th = ctx.thresholds
    for t in ctx.targets:
        p = t.container.readiness_probe
        if p is None:
            continue
        rt = Timing.of(p)
        if readiness_slow(ctx, rt):
            msg = f"a failing pod is taken out of its Service after {format_ms(rt.act_s * 1000)} "
            msg += f"(target {format_ms(th.detection_target_ms)})"
            pl = plan(ctx, t)
            yield ctx.finding("PS019", t, msg, ("readinessProbe",), **pl.fix("readiness"))


@rule(
    id="PS015",
    name="exec-probe-default-timeout",
    severity="warning",
    title="An exec probe has 1 s to run: the default timeout, or one set to 1.",
    why="Exec probes start a process in the container; under load that alone can take over a second, "
    "and since ExecProbeTimeout (v1.20+) a timed-out exec is a failure (reference §1.5.19). A "
    "timeoutSeconds of 1 written out is as short as the default (a `mysql -e \"SELECT 1\"` "
    "readiness check times out and flaps under load).",
    fix="Set timeoutSeconds for exec probes above the command's real run time (the fix sets 5, and "
    "a period above it).",
)  # fmt: skip
def exec_timeout(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        for kind, p in probes_of(t):
            if exec_timeout_short(Timing.of(p)):
                given = (
                    "timeoutSeconds 1"
                    if "timeoutSeconds" in t.raw_probe(kind)
                    else "the default timeoutSeconds (1)"
                )
                pl = plan(ctx, t)
                yield ctx.finding(
                    "PS015", t, f"{kind}Probe is exec with {given}", (f"{kind}Probe",),
                    **pl.fix(kind),
                )  # fmt: skip


@rule(
    id="PS018",
    name="long-grace-without-probe-grace",
    severity="info",
    title="A long pod grace period also delays restarts after a liveness failure.",
    why="A container killed for failing liveness gets the pod's terminationGracePeriodSeconds to stop; "
    "a hung one uses all of it before the restart. The probe-level terminationGracePeriodSeconds "
    "(GA in v1.28) shortens only that case (reference §1.1.3, §2.4.32).",
    fix="Set livenessProbe.terminationGracePeriodSeconds to a few seconds.",
)  # fmt: skip
def long_grace(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is not None and long_grace_rule(ctx, t, Timing.of(p)):
            grace = t.workload.pod_spec.termination_grace_period_seconds * 1000
            pl = plan(ctx, t)
            yield ctx.finding(
                "PS018", t, f"a hung container waits {format_ms(grace)} before its restart",
                ("livenessProbe",),
                **pl.fix("liveness"),
            )  # fmt: skip


@rule(
    id="PS044",
    name="liveness-timeout-under-cpu-throttling",
    severity="warning",
    title="Liveness has 1 s to answer on a container whose CPU limit throttling alone can push past it.",
    why="A CPU limit is a CFS quota: per 100 ms period the container runs for limit/1000 × 100 ms "
    "(the kubelet never sets less than 1 ms, so any limit under 10m acts as 10m), then waits out "
    "the period. In the 1 s a probe waits, a container limited to L millicores gets L ms of CPU "
    "for the check and everything else the app does — requests, garbage collection, its runtime. "
    "Below 100m (under 10 ms per period) one collection or a short burst of work is enough to "
    "push a trivial health handler past 1 s, and liveness restarts a healthy pod: the most "
    "repeated probe incident (an untunable 1 s timeout plus CFS throttling made a restart "
    "cascade; the fixes moved liveness timeouts from 1 s to 5 s). The 100m line is a judgement: "
    "at 500m a 1 s miss needs half a second of CPU queued ahead of the check, which is overload, "
    "not throttling. Liveness only: a readiness miss takes the pod out of the Service until its "
    "next pass (and a pod that slow is one to send less traffic to), a startup probe's misses "
    "count against a budget sized for the start (PS012), a tcpSocket check is answered by the "
    "kernel without the app's CPU, and an exec probe is PS015's.",
    fix="Raise livenessProbe.timeoutSeconds to 5 (and periodSeconds above it, 10 where it was 5 or "
    "less), or raise the CPU limit (or remove it: the request still sets the container's share "
    "when the node is busy).",
)  # fmt: skip
def liveness_timeout_throttled(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None or not throttle_prone(t, "liveness", p):
            continue
        written = "timeoutSeconds" in t.raw_probe("liveness")
        given = "timeoutSeconds 1" if written else "the default timeoutSeconds (1)"
        limit = cpu_limit_m(t)
        msg = f"livenessProbe has {given} and the CPU limit is {limit}m (below {THROTTLE_LIMIT_M}m): "
        msg += "throttling alone can make a healthy pod miss it and be restarted"
        pl = plan(ctx, t)
        yield ctx.finding("PS044", t, msg, ("livenessProbe", "timeoutSeconds"), **pl.fix("liveness"))


@rule(
    id="PS046",
    name="liveness-timeout-within-a-pause",
    severity="warning",
    title="Liveness gives up on a check before the app's documented pauses end.",
    why="A stop-the-world garbage collection (a JVM's full GC of a heap of a few GB takes one to a "
    "few seconds) stops every thread, the health handler's too: a liveness check sent as the pause "
    "starts gets no answer until it ends, and a timeout shorter than the pause fails it. One miss "
    "does not restart the container (failureThreshold counts consecutive misses), but pauses come "
    "back to back when memory runs short, and the 1 s default timeout on a GC-pausing container is "
    "among the most repeated probe incidents: healthy pods restarted, the fixes raising liveness "
    "timeouts to a few seconds. The pause is the app profile's (probesim check --list-profiles), "
    "or .probesim.yaml's correction of it; a scenario's behaviour says its own. httpGet and grpc "
    "checks only: the kernel accepts a tcpSocket connect without the app, and an exec probe is "
    "PS015's; a CPU limit that also throttles the check is PS044's, which says it once.",
    fix="Raise livenessProbe.timeoutSeconds to a second above the pause (periodSeconds above it), "
    "or correct the pause in .probesim.yaml → profiles when this app does not pause so long.",
)  # fmt: skip
def liveness_timeout_paused(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None or not paused_liveness(t) or throttle_prone(t, "liveness", p):
            continue
        written = "timeoutSeconds" in t.raw_probe("liveness")
        given = f"timeoutSeconds {p.timeout_seconds}" if written else "the default timeoutSeconds (1)"
        prof = t.profile
        assert prof is not None
        who = prof.profile.name if prof.known else "the app"
        said = ".probesim.yaml" if prof.corrected else "its profile"
        msg = (f"livenessProbe has {given} and {who} pauses for up to {format_ms(liveness_pause_ms(t))} "
               f"({said}): a check sent as a pause starts fails, and pauses back to back restart a "
               "healthy pod")  # fmt: skip
        pl = plan(ctx, t)
        yield ctx.finding("PS046", t, msg, ("livenessProbe", "timeoutSeconds"), **pl.fix("liveness"))
