"""The probe-timing model: what a container's probe fields mean in time — how long failures are
tolerated (the budget, period × failureThreshold), the worst case from a hang to the kubelet acting
(budget + timeout), the start-up budget (initialDelay + failureThreshold × period), the timeout
against what the check needs — and the judgements the probe rules make with them, with the
handlers a fix puts in place of a probe's (the kubelet's gRPC probe, the app's own check).

Every rule that reads a probe judges it with these figures; the one plan of values that satisfies
every probe rule at once, from which every rule that fixes one takes its patch, is
analysis/rules/plan.py's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from probesim.analysis.context import Context, Target
from probesim.analysis.policy import MAX_LIVENESS_DELAY_S
from probesim.analysis.rules.handlers import port_kind, profile_handler, serves_nothing
from probesim.kube.ports import container_port
from probesim.model.kubernetes import HANDLERS, Probe, ProbeType

KINDS: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")
NICE_PERIODS = (30, 20, 15, 10, 5, 3, 2, 1)  # the period chosen when one must shrink
EXEC_TIMEOUT = 5  # an exec probe's timeout: a process start under load fits (reference §1.5.19)
# The kubelet's own gRPC probe in place of grpc_health_probe: no process to start, and the RPC's
# deadline is timeoutSeconds itself; a few seconds, not the 1 s default that incident fixes moved
# (the probe guidance, principle 6), kept below the period.
GRPC_TIMEOUT = 3
PROBE_GRACE = 10  # livenessProbe.terminationGracePeriodSeconds a fix sets
# A CPU limit below this leaves a 1 s liveness timeout within reach of CFS throttling alone: under
# 100 ms of CPU in that second for the check and all else the app does (judgement, PS044).
THROTTLE_LIMIT_M = 100
THROTTLED_TIMEOUT = 5  # the timeout the incident fixes moved 1 s to (probe guidance §6, [I1]-[I4])
# The kubelet never sets a CFS quota below 1 ms per 100 ms period (MilliCPUToQuota,
# pkg/kubelet/cm/helpers_linux.go: `if quota < MinQuotaPeriod`): a smaller limit acts as 10m.
MIN_QUOTA_M = 10


def probes_of(t: Target) -> Iterator[tuple[ProbeType, Probe]]:
    for kind in KINDS:
        p = t.container.probe(kind)
        if p is not None:
            yield kind, p


def threshold_for(start_ms: int, p: Probe) -> int:
    """The failureThreshold whose budget (initialDelay + threshold × period) is 1.5 × ``start_ms``."""
    need_ms = 1.5 * start_ms - p.initial_delay_seconds * 1000
    return max(3, -int(-need_ms // (p.period_seconds * 1000)))


def http_path(p: Probe) -> str | None:
    return p.http_get.path if p.http_get is not None else None


@dataclass(frozen=True)
class Timing:
    """One probe's timing fields (seconds), as they are or as a plan sets them."""

    period: int
    timeout: int
    failure: int
    delay: int = 0
    grace: int | None = None  # the probe-level terminationGracePeriodSeconds
    check: Any = None  # what it checks (handler), to tell two probes of the same check
    exec: bool = False

    @classmethod
    def of(cls, p: Probe) -> Timing:
        check = (p.http_get, p.tcp_socket, p.exec, p.grpc)
        return cls(p.period_seconds, p.timeout_seconds, p.failure_threshold, p.initial_delay_seconds,
                   p.termination_grace_period_seconds, check, p.exec is not None)  # fmt: skip

    @property
    def budget(self) -> int:
        """Seconds of failures tolerated before the kubelet acts."""
        return self.period * self.failure

    @property
    def act_s(self) -> int:
        """The worst case from a hang to the kubelet acting: the budget, plus the last timeout."""
        return self.budget + self.timeout

    @property
    def startup_s(self) -> int:
        """The start-up budget: how long after the container starts the probe gives up."""
        return self.delay + self.budget


TAIL = 2.0  # the latency tail a timeout must cover, as a multiple of the check's own time


def check_ms(t: Target, p: Probe) -> float:
    """What one check of ``p`` takes in the scenario (its path's CPU + wait, unloaded; its
    dependency calls are PS016/PS017's business), 0 without a scenario or for a tcpSocket."""
    b = t.behavior
    if b is None or p.tcp_socket is not None:
        return 0.0
    if p.http_get is not None:
        key = p.http_get.path
    elif p.exec is not None:
        key = "exec:" + " ".join(p.exec.command)
    else:
        key = "grpc:" + (p.grpc.service or "" if p.grpc is not None else "")
    cost = b.cost(key)
    return float(cost.cpu + cost.wall)


def timeout_below_check(t: Target, p: Probe) -> bool:
    """The check's own time, doubled for its tail, reaches the timeout (PS007)."""
    need = check_ms(t, p)
    return need > 0 and TAIL * need >= p.timeout_seconds * 1000


def cpu_limit_m(t: Target) -> int | None:
    """The container's CPU limit in millicores, None without one (0 sets no CFS quota)."""
    limit = t.container.resources.limits.cpu
    return limit if limit else None


def throttle_prone(t: Target, kind: ProbeType, p: Probe) -> bool:
    """A liveness check the app answers (httpGet or grpc: a tcpSocket connect is accepted by the
    kernel, an exec is PS015's) with at most 1 s, on a container whose CPU limit is below
    THROTTLE_LIMIT_M (PS044)."""
    answered = p.http_get is not None or p.grpc is not None
    return kind == "liveness" and answered and _short_on_low_limit(t, p)


def _short_on_low_limit(t: Target, p: Probe) -> bool:
    return p.timeout_seconds <= 1 and low_cpu_limit(t)


def low_cpu_limit(t: Target) -> bool:
    """The container's CPU limit is one throttling alone can push a 1 s check past (PS044)."""
    limit = cpu_limit_m(t)
    return limit is not None and limit < THROTTLE_LIMIT_M


def liveness_pause_ms(t: Target) -> int:
    """The longest pause liveness must ride out: the app profile's (a catalog family's, or
    .probesim.yaml's correction) when no scenario says what the app does; else 0."""
    prof = t.profile
    return prof.pause_ms if t.behavior is None and prof is not None and prof.timed else 0


def paused_liveness(t: Target) -> bool:
    """A liveness check the app answers (httpGet or grpc) whose timeout ends before one of the
    app's documented pauses does (PS046): a check sent as the pause starts fails."""
    p = t.container.liveness_probe
    answered = p is not None and (p.http_get is not None or p.grpc is not None)
    return answered and p is not None and p.timeout_seconds * 1000 < liveness_pause_ms(t)


def pause_timeout_s(t: Target) -> int:
    """The least liveness timeout that outlasts the app's longest pause: a second above it."""
    return -(-liveness_pause_ms(t) // 1000) + 1


def throttled_liveness(t: Target) -> bool:
    """The plan gives liveness THROTTLED_TIMEOUT: it is throttle-prone (PS044), or a tcpSocket check
    that PS034 replaces with the app's own (grpc, or the profile's httpGet), which then would be."""
    p = t.container.liveness_probe
    if p is None or p.tcp_socket is None:
        return p is not None and throttle_prone(t, "liveness", p)
    port = p.tcp_socket.port
    speaks = port_kind(t, port)
    if speaks == "grpc":
        asks = container_port(t.container, port) is not None
    else:
        known = profile_handler(t, "liveness", port) if speaks == "http" else None
        asks = known is not None and "httpGet" in known[0]
    return asks and _short_on_low_limit(t, p)


def restart_grace(t: Target, live: Timing) -> int:
    """The seconds a liveness kill waits before the restart: the probe's grace, else the pod's,
    at least 2 s (the kubelet's minimum)."""
    g = live.grace if live.grace is not None else t.workload.pod_spec.termination_grace_period_seconds
    return max(g, 2)


# -- what each rule judges -------------------------------------------------------------------


def timeout_not_below_period(p: Timing) -> bool:
    return p.timeout >= p.period


def exec_timeout_short(p: Timing) -> bool:
    return p.exec and p.timeout <= 1


def liveness_slow(ctx: Context, t: Target, live: Timing) -> bool:
    th = ctx.thresholds
    back = live.act_s + restart_grace(t, live)
    return live.act_s * 1000 > th.detection_target_ms or back * 1000 > th.restart_target_ms


def readiness_slow(ctx: Context, ready: Timing) -> bool:
    return ready.act_s * 1000 > ctx.thresholds.detection_target_ms


def as_strict(live: Timing, ready: Timing) -> bool:
    """Liveness gives up no later than readiness on the same check."""
    return live.check == ready.check and live.budget <= ready.budget


def stricter(live: Timing, ready: Timing) -> bool:
    """Liveness gives up sooner than readiness on another check (PS005)."""
    return live.check != ready.check and live.budget < ready.budget


def outlasted(live: Timing, ready: Timing) -> bool:
    """Liveness does not outlast readiness: PS003's case or PS005's."""
    return as_strict(live, ready) or stricter(live, ready)


def long_grace(ctx: Context, t: Target, live: Timing) -> bool:
    pod = t.workload.pod_spec.termination_grace_period_seconds * 1000
    return live.grace is None and pod >= ctx.thresholds.long_grace_ms


def slowest_start_ms(t: Target) -> int:
    """The slowest start to plan for: the scenario's, else the app profile's worst (0 when the app
    is unknown: it answers at once)."""
    if t.behavior is not None:
        return t.behavior.start
    return t.profile.start_ms[1] if t.profile is not None else 0


def startup_short(t: Target, s: Timing) -> bool:
    """The startup probe gives up before the app has started: the scenario's start reaches its
    budget, or the profile's slowest start exceeds it where the catalog documents a slow start
    (PS012, judged as PS013 judges liveness)."""
    if t.behavior is not None:
        return s.startup_s * 1000 <= t.behavior.start
    documented = t.profile is not None and t.profile.profile.slow_start
    return documented and s.startup_s * 1000 < slowest_start_ms(t)


def starts_too_slow(t: Target, live: Timing) -> bool:
    """Liveness can act before the app has started: the scenario's start reaches liveness's start-up
    budget, or the profile's slowest start exceeds it where the catalog documents a slow start."""
    if t.behavior is not None:
        return live.startup_s * 1000 <= t.behavior.start
    documented = t.profile is not None and t.profile.profile.slow_start
    return documented and live.startup_s * 1000 < slowest_start_ms(t)


def delayed(live: Timing) -> bool:
    """Liveness waits longer than the policy allows before it runs: a startup probe's work."""
    return live.delay > MAX_LIVENESS_DELAY_S


def startup_handler(t: Target) -> tuple[dict[str, Any], Any]:
    """The check a startup probe the plan adds makes, and that check as Timing compares it: the
    app's own startup endpoint where its profile knows one and liveness probes over HTTP on a
    path the profile does not know as a process check, else liveness's own check (a startup probe
    checks what liveness will: Kubernetes' probe guide)."""
    raw = t.raw_probe("liveness")
    own: dict[str, Any] = {k: raw[k] for k in HANDLERS if k in raw}
    http = own.get("httpGet")
    if isinstance(http, dict) and t.profile is not None and t.profile.known:
        if t.profile.path_self_contained(str(http.get("path", ""))):  # e.g. Spring's /livez
            return own, check_of(t, own)
        known = profile_handler(t, "startup", http.get("port", 80))
        if known is not None and "httpGet" in known[0]:
            return known[0], check_of(t, known[0])
    return own, check_of(t, own)


_GRPC_PROBE = "grpc_health_probe"
# grpc_health_probe flags the kubelet's gRPC probe has no equivalent of (TLS, SPIFFE, ALTS,
# headers): a command with one keeps its exec.
_GRPC_ONLY_EXEC = ("-tls", "-spiffe", "-alts", "-rpc-header", "-user-agent", "-gzip")
_LOCAL_HOSTS = ("", "0.0.0.0", "localhost", "127.0.0.1", "[::]", "[::1]")


def grpc_probe_of(t: Target, kind: ProbeType) -> dict[str, Any] | None:
    """The kubelet's own ``grpc`` handler for a ``kind`` probe that runs grpc_health_probe on a
    port the container declares (``-addr=:9555``; ``-service`` carried over); None when it is
    not such a probe, or uses what the kubelet's probe cannot (TLS, headers)."""
    p = t.container.probe(kind)
    if p is None or p.exec is None or not p.exec.command:
        return None
    words = [str(w) for w in p.exec.command]
    if words[0].rsplit("/", 1)[-1] != _GRPC_PROBE:
        return None
    flags: dict[str, str] = {}
    rest = words[1:]
    for i, w in enumerate(rest):
        if not w.startswith("-"):
            continue
        name, eq, value = w.lstrip("-").partition("=")
        if not eq and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
            value = rest[i + 1]
        flags[name] = value
    if any(
        f.lstrip("-") in flags or any(n.startswith(f.lstrip("-")) for n in flags) for f in _GRPC_ONLY_EXEC
    ):
        return None
    host, _, port = flags.get("addr", "").rpartition(":")
    if not port.isdigit() or host not in _LOCAL_HOSTS:
        return None
    if int(port) not in {cp.container_port for cp in t.container.ports}:
        return None  # a port the container does not declare may listen on localhost only
    handler: dict[str, Any] = {"port": int(port)}
    if flags.get("service"):
        handler["service"] = flags["service"]
    return {"grpc": handler}


def replacement(t: Target, kind: ProbeType, p: Timing | None) -> tuple[dict[str, Any], str] | None:
    """A handler the plan puts in place of ``kind``'s, and why: the kubelet's gRPC probe for a
    grpc_health_probe exec with a 1 s timeout (PS015), the app's own readiness check for a TCP
    readiness where its profile says what TCP misses (PS045)."""
    if p is None:
        return None
    if exec_timeout_short(p):
        grpc = grpc_probe_of(t, kind)
        if grpc is not None:
            return {**grpc, "exec": None}, GRPC_NOTE
    if kind == "readiness" and tcp_misses(t):
        assert t.profile is not None and t.container.readiness_probe is not None
        tcp = t.container.readiness_probe.tcp_socket
        assert tcp is not None
        known = profile_handler(t, "readiness", tcp.port)
        if known is not None:
            return {
                **known[0],
                "tcpSocket": None,
            }, f"{t.profile.profile.name}'s own check: {t.profile.profile.tcp_misses}"
    return None


GRPC_NOTE = (
    f"the kubelet's own gRPC probe (GA in Kubernetes 1.27) on the port grpc_health_probe checked: the "
    f"same grpc.health.v1 check with no process to start, and timeoutSeconds is the RPC's deadline "
    f"({GRPC_TIMEOUT}s, a few seconds rather than 1, below the period); a longer timeoutSeconds alone "
    f"would not help the exec, since grpc_health_probe gives up after its own -connect-timeout and "
    f"-rpc-timeout, 1s each by default (before Kubernetes 1.27, keep the exec and raise both flags "
    f"with timeoutSeconds)"
)


def tcp_misses(t: Target) -> bool:
    """Readiness only opens a TCP connection where the app's profile gives its own readiness
    check and says what TCP misses (PostgreSQL in recovery, Redis loading its dataset)."""
    p = t.container.readiness_probe
    prof = t.profile
    if p is None or p.tcp_socket is None or prof is None or not prof.known or not prof.profile.tcp_misses:
        return False
    return prof.profile.readiness is not None and "tcpSocket" not in prof.profile.readiness


def wants_readiness(t: Target) -> bool:
    """Whether the plan adds a readiness probe: a Service sends the container traffic (and it
    serves something: not the pause image, not a sleep)."""
    return bool(t.serves) and t.container.readiness_probe is None and not serves_nothing(t)


def check_of(t: Target, handler: dict[str, Any]) -> Any:
    """The check a raw handler makes, as Timing.check compares it (the parsed handlers)."""
    probe = Probe.model_validate(handler)
    return (probe.http_get, probe.tcp_socket, probe.exec, probe.grpc)
