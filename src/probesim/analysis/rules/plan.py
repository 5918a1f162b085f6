"""The one plan of probe values for a container that satisfies every probe rule at once, and what
it gives in the terms the rules judge (analysis/rules/timing.py's model). Every rule that fixes a
probe takes its patch from :func:`plan`, so two findings on one container never ask for two values
of one field: their patches are the same plan."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from probesim.analysis.context import Context, Target
from probesim.analysis.policy import more_tolerant
from probesim.analysis.rules.handlers import readiness_handler
from probesim.analysis.rules.timing import (
    EXEC_TIMEOUT,
    GRPC_TIMEOUT,
    KINDS,
    MIN_QUOTA_M,
    NICE_PERIODS,
    PROBE_GRACE,
    TAIL,
    THROTTLED_TIMEOUT,
    Timing,
    check_ms,
    check_of,
    cpu_limit_m,
    delayed,
    liveness_pause_ms,
    low_cpu_limit,
    pause_timeout_s,
    probes_of,
    replacement,
    restart_grace,
    slowest_start_ms,
    starts_too_slow,
    startup_handler,
    startup_short,
    threshold_for,
    throttled_liveness,
    wants_readiness,
)
from probesim.model.duration import format_ms
from probesim.model.kubernetes import ProbeType


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
    # The CPU limit (millicores) that made the plan raise liveness's timeout (PS044), None if not.
    throttled_limit_m: int | None = None
    # The app's pause (ms) that made the plan raise liveness's timeout (PS046), and whose it is.
    paused: tuple[int, str] | None = None

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
        if self.throttled_limit_m is not None and (change is None or "livenessProbe" in change):
            text += "; " + self.throttle_reason()
        elif self.paused is not None and (change is None or "livenessProbe" in change):
            text += "; " + self.pause_reason()
        if self.reasons and (change is None or "readinessProbe" in change):
            text += "; " + "; ".join(self.reasons)
        added = "readiness" in self.added and (change is None or "readinessProbe" in change)
        return f"{text}; {self.handler_note}" if self.handler_note and added else text

    def throttle_reason(self) -> str:
        """Why liveness's timeout (and period) are what the plan sets (PS044)."""
        limit = self.throttled_limit_m
        assert limit is not None
        a, b = self.after["liveness"], self.before["liveness"]
        acts = f"{limit}m"
        if limit < MIN_QUOTA_M:
            acts += f" (which acts as {MIN_QUOTA_M}m: the kubelet's least CFS quota)"
        why = ("what incident fixes raised 1 s liveness timeouts to" if a.timeout >= THROTTLED_TIMEOUT
               else "all the detection target leaves")  # fmt: skip
        cpu = max(limit, MIN_QUOTA_M) * b.timeout
        text = (f"timeoutSeconds {a.timeout}, {why}: a CPU limit of {acts} gives a check at most "
                f"{cpu} ms of CPU in {b.timeout} s, shared with all the app does")  # fmt: skip
        if b.check is not None and b.check[1] is not None:  # a tcpSocket check, which PS034 replaces
            text += " (once liveness asks the app, as PS034's fix has it)"
        if a.period != b.period:
            text += f"; periodSeconds {a.period} to stay above the timeout"
        return text

    def pause_reason(self) -> str:
        """Why liveness's timeout (and period) are what the plan sets (PS046)."""
        assert self.paused is not None
        pause, whose = self.paused
        a, b = self.after["liveness"], self.before["liveness"]
        text = (f"timeoutSeconds {a.timeout}, a second above the {format_ms(pause)} pauses {whose}: a check "
                "sent as one starts waits it out")  # fmt: skip
        if a.period != b.period:
            text += f"; periodSeconds {a.period} to stay above the timeout"
        return text

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


def _sane_timeout(
    p: Timing, target_s: int, need_ms: float = 0.0, least_s: int = 0, keep: bool = False
) -> Timing:
    """An exec probe's timeout at least EXEC_TIMEOUT, every timeout above TAIL × the check's
    own time (``need_ms``) and at least ``least_s`` (a throttled container's); every timeout below
    its period: the timeout lowered, or the period raised to a round value when the check needs
    that timeout (or ``keep``: the timeout must not come down)."""
    raised = keep
    if p.exec and p.timeout <= 1:
        p = replace(p, timeout=EXEC_TIMEOUT)
        raised = True
    if least_s > p.timeout:
        p = replace(p, timeout=least_s)
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
        check = check_of(t, handler)
        is_exec = "exec" in handler
        period = 10 if is_exec else 5
        if live is not None and live.check == check:
            period = min(period, live.period)
        after["readiness"] = Timing(period, EXEC_TIMEOUT if is_exec else 1, 3, 0, None, check, is_exec)
        added["readiness"] = handler
    replaced: dict[ProbeType, dict[str, Any]] = {}
    replaced_notes: dict[ProbeType, str] = {}
    for kind in KINDS:
        swap = replacement(t, kind, after.get(kind)) if kind not in added else None
        if swap is not None:
            replaced[kind], replaced_notes[kind] = swap[0], swap[1]
            new = {k: v for k, v in swap[0].items() if v is not None}
            timeout = after[kind].timeout
            if "grpc" in new and timeout <= 1:
                timeout = min(GRPC_TIMEOUT, max(1, after[kind].period - 1))
            after[kind] = replace(after[kind], check=check_of(t, new), exec="exec" in new, timeout=timeout)
    paused = False  # liveness's timeout raised above the app's pause (PS046)
    throttled = throttled_liveness(t)  # and under a throttling CPU limit (PS044)
    for kind in KINDS:
        if kind in after:
            probe = t.container.probe(kind)
            need = check_ms(t, probe) if probe is not None and kind not in replaced else 0.0
            least = THROTTLED_TIMEOUT if kind == "liveness" and throttled else 0
            a = after[kind]
            # PS046 on the check liveness ends up with (PS034 may have made a TCP check the app's).
            if kind == "liveness" and not a.exec and not _tcp(a) and a.timeout * 1000 < liveness_pause_ms(t):
                least = max(least, pause_timeout_s(t))
                paused = True
            after[kind] = _sane_timeout(a, det_s, need, least)
            # A timeout the plan would lower to 1 s on a throttling limit (below the period) is
            # PS044's: raised to its timeout instead.
            lowered = after[kind].timeout <= 1 < a.timeout
            if kind == "liveness" and lowered and not a.exec and not _tcp(a) and low_cpu_limit(t):
                after[kind] = _sane_timeout(a, det_s, need, max(least, THROTTLED_TIMEOUT), keep=True)
                throttled = True
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
                reasons.append(
                    f"readiness gives up sooner so that it stays below liveness, which must act on a hang "
                    f"within {det_s}s (the detection target: .probesim.yaml thresholds.detectionTarget)"
                )
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
            s, failure=threshold_for(start_ms, p.model_copy(update={"period_seconds": s.period}))
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
            check = check_of(t, handler)
        after["startup"] = Timing(period, live.timeout, failure, 0, None, check, "exec" in handler)
        added["startup"] = handler
        after["liveness"] = replace(live, delay=0)
        return Plan(before, after, added, handler_note, reasons, guards, replaced, replaced_notes,
                    _throttled(t, throttled), _paused(t, paused))  # fmt: skip
    return Plan(before, after, added, handler_note, reasons, False, replaced, replaced_notes,
                _throttled(t, throttled), _paused(t, paused))  # fmt: skip


def _paused(t: Target, raised: bool) -> tuple[int, str] | None:
    """The pause for which the plan raised liveness's timeout (``raised``), and whose it is; None
    where it did not."""
    if not raised:
        return None
    prof = t.profile
    assert prof is not None
    whose = f"{prof.profile.name}'s profile documents" if prof.known else ".probesim.yaml says the app takes"
    if prof.known and prof.corrected:
        whose = f".probesim.yaml says {prof.profile.name} takes"
    return liveness_pause_ms(t), whose


def _throttled(t: Target, raised: bool) -> int | None:
    """The CPU limit for which the plan raised liveness's timeout (``raised``), None where it did
    not."""
    return cpu_limit_m(t) if raised else None
