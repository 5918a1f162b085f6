"""The probe-timing model: what a container's probe fields mean in time — how long failures are
tolerated (the budget, period × failureThreshold), the worst case from a hang to the kubelet acting
(budget + timeout), the start-up budget (initialDelay + failureThreshold × period), the timeout
against what the check needs — and the one plan of values that satisfies every probe rule at once.

Every rule that reads a probe judges it with these figures, and every rule that fixes one takes
its patch from :func:`plan`, so two findings on one container never ask for two values of one
field: their patches are the same plan."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from probesim.analysis.context import Context, Target
from probesim.analysis.policy import MAX_LIVENESS_DELAY_S, more_tolerant
from probesim.analysis.rules.handlers import profile_handler, readiness_handler, serves_nothing
from probesim.model.kubernetes import Probe, ProbeType

KINDS: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")
NICE_PERIODS = (30, 20, 15, 10, 5, 3, 2, 1)  # the period chosen when one must shrink
EXEC_TIMEOUT = 5  # an exec probe's timeout: a process start under load fits (reference §1.5.19)
# The kubelet's own gRPC probe in place of grpc_health_probe: no process to start, and the RPC's
# deadline is timeoutSeconds itself; a few seconds, not the 1 s default that incident fixes moved
# (the probe guidance, principle 6), kept below the period.
GRPC_TIMEOUT = 3
PROBE_GRACE = 10  # livenessProbe.terminationGracePeriodSeconds a fix sets


def probes_of(t: Target) -> Iterator[tuple[ProbeType, Probe]]:
    for kind in KINDS:
        p = t.container.probe(kind)
        if p is not None:
            yield kind, p


def _threshold_for(start_ms: int, p: Probe) -> int:
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


# -- the plan ----------------------------------------------------------------------------------


@dataclass
class Plan:
    """The probe values of one container that satisfy every probe rule, and what they give."""

    before: dict[ProbeType, Timing]
    after: dict[ProbeType, Timing]
    added: dict[ProbeType, dict[str, Any]] = field(default_factory=dict)  # whole new probes
    handler_note: str = ""
    reasons: list[str] = field(default_factory=list)  # which constraint won, where two met
    # The startup probe the plan adds guards liveness as planned (which could act before the
    # slowest start): every change of liveness comes with it.
    startup_guards_liveness: bool = False
    # Probes whose handler the plan replaces: the new handler, with null for the one it replaces
    # (a strategic-merge patch deletes it), and why.
    replaced: dict[ProbeType, dict[str, Any]] = field(default_factory=dict)
    replaced_notes: dict[ProbeType, str] = field(default_factory=dict)

    def change(self, *kinds: ProbeType) -> dict[str, Any]:
        """The container's fields to patch for a finding on ``kinds`` (all probes when none is
        named): those probes' values in the plan, and with them every probe whose value the plan
        chose against theirs — liveness and readiness when both change (liveness must outlast
        readiness), liveness and startup when both change (startup covers what liveness no
        longer does) — so that applying it alone adds no finding. A probe the plan adds is in
        only when asked for, or when it is a startup probe guarding liveness as planned (which
        could otherwise act before the slowest start)."""
        changed = {
            k
            for k in KINDS
            if k in self.after
            and (k in self.added or k in self.replaced or _fields(self.after[k], self.before[k]))
        }
        want = set(kinds or KINDS) & changed
        for _ in range(2):  # to a fixed point: startup pulls liveness in, which pulls readiness
            for pair in (("liveness", "readiness"), ("liveness", "startup")):
                if want & set(pair) and set(pair) <= changed:
                    want |= {k for k in pair if k not in self.added or k in kinds or not kinds}
        if "liveness" in want and "startup" in self.added and self.startup_guards_liveness:
            want.add("startup")
        out: dict[str, Any] = {}
        for kind in KINDS:
            if kind not in want:
                continue
            a = self.after[kind]
            if kind in self.added:
                probe = dict(self.added[kind])
                probe.update(_fields(a, None))
                out[f"{kind}Probe"] = probe
            else:
                out[f"{kind}Probe"] = {**self.replaced.get(kind, {}), **_fields(a, self.before[kind])}
        live = out.get("livenessProbe")
        if live is not None and "startup" in self.added and "startupProbe" not in out:
            live.pop("initialDelaySeconds", None)  # only with the startup probe that takes its place
            if not live:
                del out["livenessProbe"]
        return out

    def note(self, change: dict[str, Any] | None = None) -> str:
        """What the plan gives, in the terms the rules judge: for each probe the container keeps
        or ``change`` adds."""
        parts = []

        def kept(kind: ProbeType) -> Timing | None:
            if kind in self.added and (change is None or f"{kind}Probe" not in change):
                return None
            if change is not None and f"{kind}Probe" not in change:
                return self.before.get(kind)
            return self.after.get(kind)

        s, r, live = kept("startup"), kept("readiness"), kept("liveness")
        if s is not None:
            parts.append(f"startup allows {s.startup_s}s")
        # A TCP check sees a closed port, never a hang: a hung process still accepts connections
        # (engine/kubelet.py models it so), so its figure is said as what it acts on.
        if r is not None and _tcp(r):
            parts.append(
                f"readiness takes a pod whose port stops accepting connections out within {r.act_s}s"
            )
        elif r is not None:
            parts.append(f"readiness takes a failing pod out within {r.act_s}s")
        if live is not None and _tcp(live):
            parts.append(
                f"liveness restarts a container whose port stops accepting connections within {live.act_s}s "
                "(a TCP check does not see a hang: a hung process still accepts them)"
            )
        elif live is not None:
            parts.append(f"liveness acts on a hang within {live.act_s}s")
        text = ", ".join(parts)
        whys: dict[str, list[str]] = {}
        for kind, why in self.replaced_notes.items():
            if change is None or f"{kind}Probe" in change:
                whys.setdefault(why, []).append(kind)
        for why, kinds in whys.items():
            text += f"; {' and '.join(kinds)} by {why}"
        if self.reasons and (change is None or "readinessProbe" in change):
            text += "; " + "; ".join(self.reasons)
        added = "readiness" in self.added and (change is None or "readinessProbe" in change)
        return f"{text}; {self.handler_note}" if self.handler_note and added else text

    def fix(self, *kinds: ProbeType) -> dict[str, Any]:
        """A finding's fix on ``kinds``: ``change`` and ``note``, as Context.finding takes them."""
        change = self.change(*kinds)
        return {"change": change, "note": self.note(change)}


def _tcp(p: Timing) -> bool:
    return isinstance(p.check, tuple) and len(p.check) > 1 and p.check[1] is not None


def _fields(a: Timing, b: Timing | None) -> dict[str, Any]:
    names = (("periodSeconds", "period"), ("timeoutSeconds", "timeout"), ("failureThreshold", "failure"),
             ("terminationGracePeriodSeconds", "grace"), ("initialDelaySeconds", "delay"))  # fmt: skip
    out: dict[str, Any] = {}
    for raw, attr in names:
        v = getattr(a, attr)
        if v is not None and (getattr(b, attr) != v if b is not None else attr != "delay" or v != 0):
            out[raw] = v
    return out


def _nice(seconds: int) -> int:
    return next((p for p in NICE_PERIODS if p <= seconds), 1)


def _fit(p: Timing, target_s: int, min_failure: int = 1) -> Timing:
    """``p`` with its worst case to act within ``target_s``: failureThreshold lowered, and the
    period too (to a round value, failureThreshold 3) when even ``min_failure`` does not fit."""
    if p.act_s <= target_s:
        return p
    most = (target_s - p.timeout) // p.period
    if most >= min_failure:
        return replace(p, failure=most)
    failure = max(min_failure, 3)
    period = _nice(max(1, (target_s - 1) // (failure + 1)))
    timeout = max(1, min(p.timeout, period - 1))
    while period > 1 and failure * period + timeout > target_s:
        period = _nice(period - 1)
        timeout = max(1, min(timeout, period - 1))
    return replace(p, period=period, timeout=timeout, failure=failure)


def _sane_timeout(p: Timing, target_s: int, need_ms: float = 0.0) -> Timing:
    """An exec probe's timeout at least EXEC_TIMEOUT, and every timeout above TAIL × the check's
    own time (``need_ms``); every timeout below its period: the timeout lowered, or the period
    raised to a round value when the check needs that timeout."""
    raised = False
    if p.exec and p.timeout <= 1:
        p = replace(p, timeout=EXEC_TIMEOUT)
        raised = True
    need_s = int(TAIL * need_ms // 1000) + 1 if need_ms > 0 else 0
    if need_s > p.timeout:
        raised = True
        p = replace(p, timeout=need_s)
    if p.timeout >= p.period:
        # The cure is the timeout, below the period the user chose — unless the check needs it
        # (the scenario's check time, an exec's process start): then the period, to a round value.
        if raised or (p.exec and p.period <= EXEC_TIMEOUT):
            p = replace(p, period=_nice_up(p.timeout + 1))
        else:
            p = replace(p, timeout=max(1, p.period - 1)) if p.period > 1 else replace(p, period=2, timeout=1)
    return p


def _nice_up(seconds: int) -> int:
    """The smallest round period of at least ``seconds``."""
    return next((p for p in sorted(NICE_PERIODS) if p >= seconds), seconds)


def plan(ctx: Context, t: Target) -> Plan:
    """The one set of probe values for ``t`` that every probe rule accepts (documented in
    docs/rules.md, "How fixes are computed")."""
    th = ctx.thresholds
    det_s = th.detection_target_ms // 1000
    before = {kind: Timing.of(p) for kind, p in probes_of(t)}
    after = dict(before)
    added: dict[ProbeType, dict[str, Any]] = {}
    handler_note = ""
    reasons: list[str] = []  # which constraint won where two met on one field
    live = after.get("liveness")
    chosen = readiness_handler(t) if "readiness" not in after and wants_readiness(t) else None
    if chosen is not None:
        handler, handler_note = chosen
        check = _check_of(t, handler)
        is_exec = "exec" in handler
        period = 10 if is_exec else 5
        if live is not None and live.check == check:
            period = min(period, live.period)
        after["readiness"] = Timing(period, EXEC_TIMEOUT if is_exec else 1, 3, 0, None, check, is_exec)
        added["readiness"] = handler
    replaced: dict[ProbeType, dict[str, Any]] = {}
    replaced_notes: dict[ProbeType, str] = {}
    for kind in KINDS:
        swap = _replacement(t, kind, after.get(kind)) if kind not in added else None
        if swap is not None:
            replaced[kind], replaced_notes[kind] = swap[0], swap[1]
            new = {k: v for k, v in swap[0].items() if v is not None}
            timeout = after[kind].timeout
            if "grpc" in new and timeout <= 1:
                timeout = min(GRPC_TIMEOUT, max(1, after[kind].period - 1))
            after[kind] = replace(after[kind], check=_check_of(t, new), exec="exec" in new, timeout=timeout)
    for kind in KINDS:
        if kind in after:
            probe = t.container.probe(kind)
            need = check_ms(t, probe) if probe is not None and kind not in replaced else 0.0
            after[kind] = _sane_timeout(after[kind], det_s, need)
    r = after.get("readiness")
    if r is not None:
        r = after["readiness"] = _fit(r, det_s, 2)
    live = after.get("liveness")
    if live is not None:
        pod_grace = t.workload.pod_spec.termination_grace_period_seconds
        # A probe-level grace when the pod's is long (PS018), or leaves liveness less room
        # than the detection target before the restart target.
        tight = th.restart_target_ms // 1000 - max(pod_grace, 2) < det_s and pod_grace > PROBE_GRACE
        if live.grace is None and (pod_grace * 1000 >= th.long_grace_ms or tight):
            live = replace(live, grace=PROBE_GRACE)
        if live.failure == 1:
            live = replace(live, failure=3)
        room = min(det_s, th.restart_target_ms // 1000 - restart_grace(t, live))
        live = _fit(live, room, 3)
        most = (room - live.timeout) // live.period
        # Liveness more tolerant than readiness, on any check (the policy; twice its budget where
        # the target allows): a struggling pod leaves rotation before it is killed.
        if r is not None and not more_tolerant(live, r):
            want = max(r.budget // live.period + 1, -(-2 * r.budget // live.period))
            live = replace(live, failure=max(min(want, most), live.failure))
            if not more_tolerant(live, r):  # not within the target: readiness yields
                reasons.append("readiness below liveness, which the detection target caps")
                r = after["readiness"] = replace(r, failure=max(2, (live.budget - 1) // r.period))
                if not more_tolerant(live, r):
                    period = max(2, (live.budget - 1) // r.failure)
                    r = after["readiness"] = replace(r, period=period, timeout=min(r.timeout, period - 1))
        after["liveness"] = live
    s = after.get("startup")
    start_ms = slowest_start_ms(t)
    if s is not None and startup_short(t, s):
        p = t.container.startup_probe
        assert p is not None
        after["startup"] = replace(
            s, failure=_threshold_for(start_ms, p.model_copy(update={"period_seconds": s.period}))
        )
    elif s is None and live is not None and (guards := starts_too_slow(t, live)) | delayed(live):
        # A startup probe, not an initial delay (the policy): it covers the slowest start with
        # half again as much, never less than liveness allowed before; liveness then starts at once.
        need_ms = max(1.5 * start_ms, live.startup_s * 1000)
        # Every few seconds (at most 10, the guidance), fewer checks for a long start, and above
        # liveness's timeout.
        few = min(10, _nice_up(-int(-need_ms // 30_000)))
        period = max(min(live.period, 10), few, _nice_up(live.timeout + 1))
        failure = max(3, -int(-need_ms // (period * 1000)))
        handler, check = startup_handler(t)
        if "liveness" in replaced:  # the check liveness gets in the plan (gRPC for an exec)
            handler = {k: v for k, v in replaced["liveness"].items() if v is not None}
            check = _check_of(t, handler)
        after["startup"] = Timing(period, live.timeout, failure, 0, None, check, "exec" in handler)
        added["startup"] = handler
        after["liveness"] = replace(live, delay=0)
        return Plan(before, after, added, handler_note, reasons, guards, replaced, replaced_notes)
    return Plan(before, after, added, handler_note, reasons, False, replaced, replaced_notes)


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
    own: dict[str, Any] = {k: raw[k] for k in ("httpGet", "tcpSocket", "exec", "grpc") if k in raw}
    http = own.get("httpGet")
    if isinstance(http, dict) and t.profile is not None and t.profile.known:
        if t.profile.path_self_contained(str(http.get("path", ""))):  # e.g. Spring's /livez
            return own, _check_of(t, own)
        known = profile_handler(t, "startup", http.get("port", 80))
        if known is not None and "httpGet" in known[0]:
            return known[0], _check_of(t, known[0])
    return own, _check_of(t, own)


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


def _replacement(t: Target, kind: ProbeType, p: Timing | None) -> tuple[dict[str, Any], str] | None:
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


def _check_of(t: Target, handler: dict[str, Any]) -> Any:
    """The check a raw handler makes, as Timing.check compares it (the parsed handlers)."""
    probe = Probe.model_validate(handler)
    return (probe.http_get, probe.tcp_socket, probe.exec, probe.grpc)
