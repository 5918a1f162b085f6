"""What the tuner may change, and within which bounds: per container, the timings of the probes
it has (and a startup probe where it has a liveness probe but none), and the outlier detection of
the DestinationRule in front of the workload's Service.

A setting is sampled define-by-run from an Optuna trial (or an ``optuna.trial.FixedTrial`` to
replay stored parameters), so one function both searches and rebuilds. Constraints the API
server and the kubelet impose hold by construction: ``timeoutSeconds`` is sampled on its own and
used as ``min(timeout, period - 1)`` (at least 1: a probe that outlives its period only delays
the next one, and probesim check warns of it), the
liveness and startup ``successThreshold`` stay 1, a new startup probe copies the liveness probe's
handler (the same check, now gating liveness until the app has started).

So do the constraints ``probesim check``'s probe rules put on timings (the probe-timing model of
``analysis/rules/timing.py``): every sampled setting is *repaired* onto the nearest setting they
accept (:meth:`Space.repair`) — periods of 2 s or more and timeouts below them (PS011), an exec
probe's timeout above 1 s (PS015), liveness's failureThreshold 3 or more and readiness's 2 or
more (the probe policy, analysis/policy.py: a single miss never restarts, one slow answer never
flips the endpoint), readiness that
takes a failing pod out within the detection target (PS019), liveness that acts and has the
container back within the targets (PS014) and is more tolerant than readiness on any check (the
policy; PS003, PS005) — so every trial
is one the recommendation may pick. :func:`params_of` gives the parameters that rebuild a
repaired setting (the local search and the seeded trials enqueue them).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import optuna

from probesim.analysis.context import Thresholds
from probesim.analysis.policy import LIVENESS_PERIOD_S, more_tolerant
from probesim.analysis.rules.timing import PROBE_GRACE, Timing, exec_timeout_short, timeout_not_below_period
from probesim.mesh.istio import DestinationRule
from probesim.model.duration import parse_ms
from probesim.model.kubernetes import HANDLERS, Container, Probe, Workload

ProbeKind = Literal["readiness", "liveness", "startup"]
FIELD_OF: dict[ProbeKind, str] = {
    "readiness": "readinessProbe",
    "liveness": "livenessProbe",
    "startup": "startupProbe",
}
TIMINGS = (
    "initialDelaySeconds",
    "periodSeconds",
    "timeoutSeconds",
    "failureThreshold",
    "successThreshold",
    "terminationGracePeriodSeconds",  # liveness's own, set by the repair where the pod's is long
)


@dataclass(frozen=True)
class Bound:
    low: int
    high: int
    log: bool = False
    step: int = 1

    def nearest(self, v: int) -> int:
        """The value the bound allows nearest to ``v`` (within it, on its steps)."""
        v = min(max(int(v), self.low), self.high)
        return self.low + round((v - self.low) / self.step) * self.step


# Bounds, in seconds or counts (docs/tune.md explains each); liveness every 5 s at least (the
# policy: probing liveness faster buys noise, not safety). Periods and the startup probe's
# threshold span orders of magnitude: sampled on a log scale. Periods start at 2 s (a timeout,
# at least 1 s, must stay below the period: PS011), liveness's failureThreshold at 3 and
# readiness's at 2 (the probe policy).
PROBE_BOUNDS: dict[ProbeKind, dict[str, Bound]] = {
    "readiness": {
        "periodSeconds": Bound(2, 30, log=True),
        "timeoutSeconds": Bound(1, 10),
        "failureThreshold": Bound(2, 10),
        "successThreshold": Bound(1, 3),
        "initialDelaySeconds": Bound(0, 60, step=5),
    },
    "liveness": {
        "periodSeconds": Bound(LIVENESS_PERIOD_S, 60, log=True),
        "timeoutSeconds": Bound(1, 10),
        "failureThreshold": Bound(3, 10),
        "initialDelaySeconds": Bound(0, 10, step=5),  # a slow start is a startup probe's (the policy)
    },
    "startup": {
        "periodSeconds": Bound(2, 30, log=True),
        "timeoutSeconds": Bound(1, 10),
        "failureThreshold": Bound(1, 120, log=True),
    },
}
# Istio's outlierDetection; durations in seconds. Within what check's outlier rules ask, as their
# fix sets it: three 5xx or more before a host is ejected (PS022's "3 or more"), at most half the
# hosts ejected (PS020 and PS021's maxEjectionPercent 50): with more, two pods that blip are both
# ejected and the rest carry all the load, each ejection longer than the last (Envoy: the ejection
# time is baseEjectionTime times the times ejected, up to maxEjectionTime, 300 s by default).
# baseEjectionTime up to 300 s: the stress suite's blips (objective.py) price a long one.
OUTLIER_BOUNDS: dict[str, Bound] = {
    "consecutive5xxErrors": Bound(3, 20),
    "consecutiveGatewayErrors": Bound(1, 20),
    "interval": Bound(1, 60, log=True),
    "baseEjectionTime": Bound(5, 300, log=True),
    "maxEjectionPercent": Bound(10, 50, step=10),
}
# check's fix for an outlier detection that ejects on one 5xx (PS022) or every host (PS021): the
# repair's values (analysis/rules/mesh.py's _outlier_plan sets the same).
CHECK_CONSECUTIVE_5XX = 3
CHECK_MAX_EJECTION_PERCENT = 50
OUTLIER_SECONDS = ("interval", "baseEjectionTime")
# Istio's values for the fields a rule leaves out (seconds for durations).
OUTLIER_DEFAULTS = {
    "consecutive5xxErrors": 5,
    "interval": 10,
    "baseEjectionTime": 30,
    "maxEjectionPercent": 10,
}


def timings(p: Probe) -> dict[str, int]:
    """A probe's effective timing fields (API defaults applied), by their manifest names."""
    return {
        "initialDelaySeconds": p.initial_delay_seconds,
        "periodSeconds": p.period_seconds,
        "timeoutSeconds": p.timeout_seconds,
        "failureThreshold": p.failure_threshold,
        "successThreshold": p.success_threshold,
    }


def handler(p: Probe) -> dict[str, Any]:
    """A probe's handler (httpGet, tcpSocket, exec or grpc) as written in a manifest."""
    dumped: dict[str, Any] = p.model_dump(mode="json", by_alias=True, exclude_none=True)
    out = {k: v for k, v in dumped.items() if k in HANDLERS}
    # As the author would write it: no empty header list, no default scheme.
    return {
        k: {f: x for f, x in v.items() if x not in ([], {}) and (f, x) != ("scheme", "HTTP")}
        for k, v in out.items()
    }


@dataclass(frozen=True)
class Setting:
    """Probe timings per container and probe field (``{"app": {"livenessProbe": {...}}}``); a
    probe added by the tuner carries its handler too. ``outlier``: the DestinationRule's
    outlierDetection as Istio writes it (None: not tuned, or left out)."""

    probes: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    outlier: dict[str, Any] | None = None


@dataclass(frozen=True)
class Space:
    """The tunable fields of one workload (and its DestinationRule). ``added``: probes the tuner
    adds where the manifest has none (a readiness probe on a container a Service sends traffic
    to, as check's fix has it), per container and probe field, with their handlers: the search
    tunes their timings, and the patch adds them."""

    workload: Workload
    rule: DestinationRule | None = None
    added: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict, hash=False)
    # Per container, what its app profile says (inputs.py): "startMs", its slowest start, which a
    # startup probe that replaces a liveness delay covers half again; "startupHandler", the check
    # a startup probe the tuner adds makes (the app's own startup endpoint, else liveness's).
    app: dict[str, dict[str, Any]] = field(default_factory=dict, hash=False)
    # The check check's fixes give an existing probe (container → probe field → handler: the
    # app's own liveness endpoint, a grpc probe for a TCP check of a gRPC port): every setting
    # sampled has it, the current one its own, so the patch makes it and the ablation can weigh it.
    handlers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict, hash=False)

    def startup_handler(self, c: Container, live: Probe) -> dict[str, Any]:
        """The handler of a startup probe the tuner adds to ``c``."""
        own: dict[str, Any] | None = self.app.get(c.name, {}).get("startupHandler")
        fixed = self.handlers.get(c.name, {}).get("livenessProbe")
        return own if own is not None else fixed if fixed is not None else handler(live)

    def with_handlers(self, setting: Setting) -> Setting:
        """``setting`` with the checks check's fixes give its existing probes (HANDLERS)."""
        probes = {c: {f: dict(t) for f, t in ps.items()} for c, ps in setting.probes.items()}
        for c, fields in self.handlers.items():
            for fname, h in fields.items():
                if fname in probes.get(c, {}):
                    kept = {k: v for k, v in probes[c][fname].items() if k not in HANDLERS}
                    probes[c][fname] = {**h, **kept}
        return Setting(probes, setting.outlier)

    def probe_of(self, c: Container, kind: ProbeKind) -> Probe | None:
        """The container's probe of ``kind``: its own, else the one the tuner adds."""
        raw = self.added.get(c.name, {}).get(FIELD_OF[kind])
        return c.probe(kind) or (Probe.model_validate(raw) if raw is not None else None)

    def containers(self) -> list[str]:
        return [
            c.name for c in self.workload.pod_spec.containers if any(self.probe_of(c, k) for k in FIELD_OF)
        ]

    def current(self) -> Setting:
        """The setting the manifests have now."""
        probes: dict[str, dict[str, dict[str, Any]]] = {}
        for c in self.workload.pod_spec.containers:
            mine = {FIELD_OF[k]: timings(p) for k in FIELD_OF if (p := c.probe(k)) is not None}
            for fname in self.handlers.get(c.name, {}):  # its own check, which the tuner changes
                p = c.probe(next(k for k, f in FIELD_OF.items() if f == fname))
                if p is not None:
                    mine[fname] = {**handler(p), **mine[fname]}
            if mine:
                probes[c.name] = mine
        return Setting(probes, self.current_outlier())

    def with_added(self, setting: Setting) -> Setting:
        """``setting`` with the probes the tuner adds, where it has none of that field: each with
        its handler and its timings (API defaults where the fix left one out)."""
        probes = {c: {f: dict(t) for f, t in ps.items()} for c, ps in setting.probes.items()}
        for c, fields in self.added.items():
            for name, raw in fields.items():
                if name not in probes.get(c, {}):
                    p = Probe.model_validate(raw)
                    probes.setdefault(c, {})[name] = {**handler(p), **timings(p)}
        return Setting(probes, setting.outlier)

    def current_outlier(self) -> dict[str, Any] | None:
        if self.rule is None or self.rule.spec.traffic_policy is None:
            return None
        od = self.rule.spec.traffic_policy.outlier_detection
        if od is None:
            return None
        dumped: dict[str, Any] = od.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    def sample(self, trial: optuna.Trial | optuna.trial.FixedTrial) -> Setting:
        """A setting drawn from ``trial`` (define-by-run: the same calls replay stored params)."""
        probes: dict[str, dict[str, dict[str, Any]]] = {}
        for c in self.workload.pod_spec.containers:
            mine: dict[str, dict[str, Any]] = {}
            for kind in ("readiness", "liveness", "startup"):
                p = self.probe_of(c, kind)
                if p is not None:
                    mine[FIELD_OF[kind]] = _probe(trial, f"{c.name}.{kind}", kind, timings(p))
                    if c.probe(kind) is None:  # added: its handler goes with it
                        mine[FIELD_OF[kind]] = {**handler(p), **mine[FIELD_OF[kind]]}
            live = self.probe_of(c, "liveness")
            if (
                live is not None
                and self.probe_of(c, "startup") is None
                and trial.suggest_categorical(f"{c.name}.startup.add", [False, True])
            ):
                base = {**timings(live), "initialDelaySeconds": 0, "successThreshold": 1}
                new = _probe(trial, f"{c.name}.startup", "startup", base)
                mine["startupProbe"] = {**self.startup_handler(c, live), **new}
            if mine:
                probes[c.name] = mine
        return self.repair(self.with_handlers(Setting(probes, self._outlier(trial))))

    def repair(self, setting: Setting) -> Setting:
        """``setting`` moved onto the nearest timings ``probesim check``'s probe rules accept
        (the module's docstring lists them; unchanged when they already do)."""
        probes = {c: {f: dict(t) for f, t in ps.items()} for c, ps in setting.probes.items()}
        grace = self.workload.pod_spec.termination_grace_period_seconds
        for c in self.workload.pod_spec.containers:
            if c.name in probes:
                _repair_container(c, probes[c.name], grace, self)
        outlier = dict(setting.outlier) if setting.outlier is not None else None
        od = outlier or {}
        if outlier is not None and od.get("maxEjectionPercent") == 100 and not od.get("minHealthPercent"):
            outlier["maxEjectionPercent"] = CHECK_MAX_EJECTION_PERCENT  # PS021, as check's fix has it
        if outlier is not None and outlier.get("consecutive5xxErrors") == 1:
            outlier["consecutive5xxErrors"] = CHECK_CONSECUTIVE_5XX  # PS022, as check's fix has it
        return Setting(probes, outlier)

    def params_of(self, setting: Setting) -> dict[str, Any]:
        """The parameters from which :meth:`sample` rebuilds ``setting`` (a repaired one; values
        off the bounds or their steps are put on the nearest they allow), in sampling order."""
        out: dict[str, Any] = {}
        for c in self.workload.pod_spec.containers:
            mine = setting.probes.get(c.name, {})
            for kind in ("readiness", "liveness", "startup"):
                if self.probe_of(c, kind) is not None:
                    for name, b in PROBE_BOUNDS[kind].items():
                        out[f"{c.name}.{kind}.{name}"] = b.nearest(mine[FIELD_OF[kind]][name])
            added = mine.get("startupProbe")
            has_startup = self.probe_of(c, "startup") is not None
            if self.probe_of(c, "liveness") is not None and not has_startup:
                out[f"{c.name}.startup.add"] = added is not None
            if added is not None and not has_startup:
                for name, b in PROBE_BOUNDS["startup"].items():
                    out[f"{c.name}.startup.{name}"] = b.nearest(added[name])
        od = setting.outlier
        if self.rule is not None and self.current_outlier() is None:
            out["outlier.add"] = od is not None
        if self.rule is not None and od is not None:
            for name, b in OUTLIER_BOUNDS.items():
                if name == "consecutiveGatewayErrors" and name not in od:
                    continue
                v = od.get(name, OUTLIER_DEFAULTS.get(name, b.low))
                out[f"outlier.{name}"] = b.nearest(parse_ms(v) // 1000 if isinstance(v, str) else int(v))
        return out

    def _outlier(self, trial: optuna.Trial | optuna.trial.FixedTrial) -> dict[str, Any] | None:
        if self.rule is None:
            return None
        current = self.current_outlier()
        if current is None and not trial.suggest_categorical("outlier.add", [False, True]):
            return None
        od = dict(current or {})
        for name, b in OUTLIER_BOUNDS.items():
            if name == "consecutiveGatewayErrors" and "consecutiveGatewayErrors" not in od:
                continue  # tuned only where the rule already counts gateway errors on their own
            v = _suggest(trial, f"outlier.{name}", b)
            od[name] = f"{v}s" if name in OUTLIER_SECONDS else v
        return od


def _suggest(trial: optuna.Trial | optuna.trial.FixedTrial, name: str, b: Bound) -> int:
    return trial.suggest_int(name, b.low, b.high, log=b.log, step=b.step)


def _probe(
    trial: optuna.Trial | optuna.trial.FixedTrial, prefix: str, kind: ProbeKind, current: dict[str, int]
) -> dict[str, Any]:
    out: dict[str, Any] = dict(current)
    for name, b in PROBE_BOUNDS[kind].items():
        out[name] = _suggest(trial, f"{prefix}.{name}", b)
    # Below the period where it can be (probesim check warns of a timeout not below it).
    out["timeoutSeconds"] = min(out["timeoutSeconds"], max(out["periodSeconds"] - 1, 1))
    if kind != "readiness":
        out["successThreshold"] = 1
    return out


DEFAULT_THRESHOLDS = Thresholds()  # what probesim check judges by without a .probesim.yaml


EXEC_PERIOD = 5  # an exec probe forks through the runtime: every few seconds at most (the policy)


def _below_period(t: Timing) -> Timing:
    """A timeout below the period (PS011), above 1 s for an exec probe (PS015), whose period is
    a few seconds at least (the policy: each check forks a process)."""
    least = 2 if t.exec else 1
    period = max(t.period, least + 1, EXEC_PERIOD if t.exec else 0)
    t = replace(t, period=period, timeout=min(max(t.timeout, least), period - 1))
    assert not timeout_not_below_period(t) and not exec_timeout_short(t)
    return t


def _within(t: Timing, room: int, least: int) -> Timing:
    """``t`` acting within ``room`` seconds (its act_s): failureThreshold lowered (to ``least``
    at most), then the period."""
    if t.act_s <= room:
        return t
    t = replace(t, failure=max(least, (room - t.timeout) // t.period))
    if t.act_s > room:
        t = _below_period(replace(t, period=max(2, (room - t.timeout) // t.failure)))
    return t


def _nice_timeout(timeout: int) -> int:
    """A period above ``timeout``."""
    return timeout + 1


def _outlasting(live: Timing, r: Timing, room: int) -> Timing | None:
    """Liveness with the fewest failures that make it more tolerant than readiness ``r``, if
    that fits its bound and acts within ``room`` seconds."""
    want = -(-(r.budget + 1) // live.period)
    fits = (
        want <= PROBE_BOUNDS["liveness"]["failureThreshold"].high
        and live.period * want + live.timeout <= room
    )
    return replace(live, failure=want) if fits else None


def _repair_container(c: Container, mine: dict[str, dict[str, Any]], pod_grace: int, space: Space) -> None:
    """One container's probe timings (``mine``, by probe field) onto what the probe rules accept,
    in place: each probe's timeout (PS011, PS015); readiness within the detection target
    (PS019) with failureThreshold 2 or more; liveness's failureThreshold at least 3 (PS010, the
    policy), acting within the detection target and back within the restart target (PS014), and
    more tolerant than readiness on any check (PS003, PS005, the policy) — by a
    higher liveness failureThreshold where the targets leave room, else by readiness yielding, as
    the rules' own fix does. A setting no timing within the bounds makes pass is left to the
    check filter."""
    th = DEFAULT_THRESHOLDS
    det = th.detection_target_ms // 1000
    live_f = mine.get("livenessProbe")
    most_delay = PROBE_BOUNDS["liveness"]["initialDelaySeconds"].high
    live_p = space.probe_of(c, "liveness")
    if live_f is not None and live_p is not None and live_f["initialDelaySeconds"] > most_delay:
        # A startup probe, not a long initial delay (the policy): one on liveness's check that
        # allows what the delay did, every 10 s at most; liveness then from the start.
        if "startupProbe" not in mine:
            allowed = live_f["initialDelaySeconds"] + live_f["failureThreshold"] * live_f["periodSeconds"]
            allowed = max(allowed, -(-3 * space.app.get(c.name, {}).get("startMs", 0) // 2000))
            period = max(min(live_f["periodSeconds"], 10), _nice_timeout(live_f["timeoutSeconds"]))
            mine["startupProbe"] = {
                **space.startup_handler(c, live_p), "initialDelaySeconds": 0, "periodSeconds": period,
                "timeoutSeconds": live_f["timeoutSeconds"], "failureThreshold": -(-allowed // period),
                "successThreshold": 1,
            }  # fmt: skip
        live_f["initialDelaySeconds"] = 0 if space.probe_of(c, "startup") is None else most_delay
    got: dict[ProbeKind, Timing] = {}
    for kind in ("readiness", "liveness", "startup"):
        f = mine.get(FIELD_OF[kind])
        probe = space.probe_of(c, kind) or (space.probe_of(c, "liveness") if kind == "startup" else None)
        if f is None or probe is None:
            continue
        t = replace(Timing.of(probe), period=f["periodSeconds"], timeout=f["timeoutSeconds"],
                    failure=f["failureThreshold"])  # fmt: skip
        got[kind] = _below_period(t)
    r = got.get("readiness")
    if r is not None:  # failureThreshold 2 or more: one slow answer does not flip it (the policy)
        r = got["readiness"] = _within(replace(r, failure=max(r.failure, 2)), det, 2)
    live = got.get("liveness")
    if live is not None:  # failureThreshold 3 or more: a single miss never restarts (the policy)
        least_period = LIVENESS_PERIOD_S  # every 5 s at most (the policy)
        live = _below_period(
            replace(live, failure=max(live.failure, 3), period=max(live.period, least_period))
        )
        own = mine["livenessProbe"].get("terminationGracePeriodSeconds", live.grace)
        # A probe-level grace where the pod's is long or leaves liveness no room before the
        # restart target (PS018, PS014): a wedged container is replaced promptly (KEP-2238).
        tight = th.restart_target_ms // 1000 - max(pod_grace, 2) < det and pod_grace > PROBE_GRACE
        if own is None and (pod_grace * 1000 >= th.long_grace_ms or tight):
            own = mine["livenessProbe"]["terminationGracePeriodSeconds"] = PROBE_GRACE
        live = replace(live, grace=own)
        grace = live.grace if live.grace is not None else pod_grace
        room = min(det, th.restart_target_ms // 1000 - max(grace, 2))
        live = got["liveness"] = _within(live, room, 3)
        if r is not None and not more_tolerant(live, r):  # on any check (the policy)
            raised = _outlasting(live, r, room)
            if raised is None:  # readiness yields, as the rules' fix has it
                r = replace(r, failure=max(2, (live.budget - 1) // r.period))
                if not more_tolerant(live, r):
                    r = _below_period(replace(r, period=max(2, (live.budget - 1) // r.failure)))
                got["readiness"] = r
                if not more_tolerant(live, r):  # an exec's period floor: liveness goes up after all
                    raised = _outlasting(live, r, room)
            if raised is not None:
                got["liveness"] = raised
    for kind, t in got.items():
        f = mine[FIELD_OF[kind]]
        f.update(periodSeconds=t.period, timeoutSeconds=t.timeout, failureThreshold=t.failure)
