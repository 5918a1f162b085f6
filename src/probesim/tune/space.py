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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import optuna

from probesim.mesh.istio import DestinationRule
from probesim.model.kubernetes import Probe, Workload

ProbeKind = Literal["readiness", "liveness", "startup"]
FIELD_OF: dict[ProbeKind, str] = {
    "readiness": "readinessProbe",
    "liveness": "livenessProbe",
    "startup": "startupProbe",
}
TIMINGS = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "failureThreshold", "successThreshold")


@dataclass(frozen=True)
class Bound:
    low: int
    high: int
    log: bool = False
    step: int = 1


# Bounds, in seconds or counts (docs/tune.md explains each). Periods and the startup probe's
# threshold span orders of magnitude: sampled on a log scale.
PROBE_BOUNDS: dict[ProbeKind, dict[str, Bound]] = {
    "readiness": {
        "periodSeconds": Bound(1, 30, log=True),
        "timeoutSeconds": Bound(1, 10),
        "failureThreshold": Bound(1, 10),
        "successThreshold": Bound(1, 3),
        "initialDelaySeconds": Bound(0, 60, step=5),
    },
    "liveness": {
        "periodSeconds": Bound(1, 60, log=True),
        "timeoutSeconds": Bound(1, 10),
        "failureThreshold": Bound(1, 10),
        "initialDelaySeconds": Bound(0, 300, step=5),
    },
    "startup": {
        "periodSeconds": Bound(1, 30, log=True),
        "timeoutSeconds": Bound(1, 10),
        "failureThreshold": Bound(1, 60, log=True),
    },
}
# Istio's outlierDetection; durations in seconds.
OUTLIER_BOUNDS: dict[str, Bound] = {
    "consecutive5xxErrors": Bound(1, 20),
    "consecutiveGatewayErrors": Bound(1, 20),
    "interval": Bound(1, 60, log=True),
    "baseEjectionTime": Bound(5, 300, log=True),
    "maxEjectionPercent": Bound(10, 100, step=10),
}
OUTLIER_SECONDS = ("interval", "baseEjectionTime")


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
    out = {k: v for k, v in dumped.items() if k in ("httpGet", "tcpSocket", "exec", "grpc")}
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
    """The tunable fields of one workload (and its DestinationRule)."""

    workload: Workload
    rule: DestinationRule | None = None

    def containers(self) -> list[str]:
        return [
            c.name
            for c in self.workload.pod_spec.containers
            if c.readiness_probe or c.liveness_probe or c.startup_probe
        ]

    def current(self) -> Setting:
        """The setting the manifests have now."""
        probes: dict[str, dict[str, dict[str, Any]]] = {}
        for c in self.workload.pod_spec.containers:
            mine = {FIELD_OF[k]: timings(p) for k in FIELD_OF if (p := c.probe(k)) is not None}
            if mine:
                probes[c.name] = mine
        return Setting(probes, self.current_outlier())

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
                p = c.probe(kind)
                if p is not None:
                    mine[FIELD_OF[kind]] = _probe(trial, f"{c.name}.{kind}", kind, timings(p))
            live = c.liveness_probe
            if (
                live is not None
                and c.startup_probe is None
                and trial.suggest_categorical(f"{c.name}.startup.add", [False, True])
            ):
                base = {**timings(live), "initialDelaySeconds": 0, "successThreshold": 1}
                new = _probe(trial, f"{c.name}.startup", "startup", base)
                mine["startupProbe"] = {**handler(live), **new}
            if mine:
                probes[c.name] = mine
        return Setting(probes, self._outlier(trial))

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
