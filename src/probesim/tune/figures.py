"""What the tuner measures of a setting: each run's figures (RunFigures) and a setting's
(Figures) — failed requests, needless restarts and flaps, the hung pod's times, time to Ready,
probe load — the budgets an SRE asks of them (BUDGETS, budget_cost), and a trial's Row (its
setting with its figures). objective.py simulates the runs and reads these; the search, the
choice, the ablation, the reasons and the reports compare them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # a Row's annotation only: figures stay cheap to import (check diff reads them)
    from probesim.tune.space import Setting

DETECTION_CAP_MS = 5 * 60_000
# What an SRE asks of a setting once it fails no more requests and restarts nothing for nothing:
# a hung pod out of service within 30 s and its replicas all Ready again within 90 s, a new pod
# Ready within 10 s of its app answering, at most a probe a second per pod. Among the rest, the
# setting that spends least of these budgets together (each figure over its budget, summed) is
# recommended.
BUDGETS = {"detection_s": 30.0, "recovery_s": 90.0, "ready_s": 10.0, "probe_rps": 1.0}
# What the search minimises: the first two as counted, the others as the budgets they spend
# together (budget_cost), the figure the recommendation is chosen by; each is in Figures.
OBJECTIVES = ("failed requests", "needless restarts and flaps", "budgets spent")

RunKind = Literal["stress", "scenario", "hung"]


@dataclass(frozen=True)
class RunFigures:
    label: str
    kind: RunKind
    offered: int
    failed: int
    restarts: int  # of the tuned workload
    counted_restarts: int  # those counted as needless
    flaps: int  # NotReady transitions of its pods after all were first Ready
    detection_ms: int | None = None  # hung run only; None: not out of service within the cap
    recovery_ms: int | None = None  # hung run only: all replicas Ready again after the hang's cure
    all_ready_ms: int | None = None  # all replicas first Ready (None: never)
    hang_at_ms: int | None = None  # hung run only: when pod 0 hung (its containers' age)
    recovery_hang_at_ms: int | None = None  # ... in the run recovery_ms is read from
    ready_ms: int | None = None  # the slowest first pod: from its containers' start to Ready
    ramp_failed: int = 0  # of ``failed``, those of the start-up ramp
    short_ms: int = 0  # after all were first Ready, time with fewer Ready than replicas
    # A run that rolls the workload out (probesim diff's rollout stresses): how its rollout
    # ended (complete, stalled, running, superseded) and, once complete, how long it took.
    rollout: str | None = None
    rollout_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.rollout is None:  # the tuner's runs roll nothing out: its documents stay as they were
            del out["rollout"], out["rollout_ms"]
        return out


@dataclass(frozen=True)
class Figures:
    failed: int
    restarts: int
    detection_s: float  # the cap when never
    detected: bool
    flaps: int
    runs: tuple[RunFigures, ...]
    recovery_s: float = DETECTION_CAP_MS / 1000  # the cap when never
    ready_s: float = DETECTION_CAP_MS / 1000  # the cap when never
    probe_rps: float = 0.0
    probe_cpu_m: float = 0.0
    serves: bool = True  # False: a worker, which no Service sends traffic (never "in service")

    @property
    def short_s(self) -> float:
        """Seconds with fewer Ready pods than replicas, after all were first Ready, in the runs
        where a restart cures nothing (the hung pod's run is left out: its pod is due out)."""
        return sum(r.short_ms for r in self.runs if r.kind != "hung") / 1000

    @property
    def ramp_failed(self) -> int:
        """Of the failed requests, those of the runs' start-up ramps (said apart)."""
        return sum(r.ramp_failed for r in self.runs)

    @property
    def scenario_failed(self) -> int:
        """Failed requests in the user's own scenario (0 without one): what the choice and the
        ablation weigh first, before the stresses."""
        return sum(r.failed for r in self.runs if r.kind == "scenario")

    def values(self) -> tuple[float, ...]:
        """The objectives: failed requests; needless restarts and readiness flaps (in runs where
        a restart cures nothing, each is needless: emptying the Service is no gain over answering
        slowly); the budgets spent."""
        return (float(self.failed), float(self.restarts + self.flaps), round(budget_cost(self), 6))

    def to_json(self) -> dict[str, Any]:
        return {
            "failed": self.failed,
            "restarts": self.restarts,
            "detectionSeconds": self.detection_s,
            "detected": self.detected,
            "allReadyAgainSeconds": self.recovery_s,
            "readySeconds": self.ready_s,
            "probesPerSecond": self.probe_rps,
            "probeCpuMillicores": self.probe_cpu_m,
            "flaps": self.flaps,
            "scenarioFailed": self.scenario_failed,
            "rampFailed": self.ramp_failed,
            "shortSeconds": self.short_s,
            "serves": self.serves,
            "runs": [r.to_json() for r in self.runs],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Figures:
        runs = tuple(RunFigures(**r) for r in d["runs"])
        return cls(
            d["failed"],
            d["restarts"],
            d["detectionSeconds"],
            d["detected"],
            d["flaps"],
            runs,
            d["allReadyAgainSeconds"],
            d["readySeconds"],
            d["probesPerSecond"],
            d["probeCpuMillicores"],
            d.get("serves", True),
        )


def budget_cost(f: Figures) -> float:
    """How much of the SRE's budgets (BUDGETS) a setting spends, summed: 4 spends each fully."""
    return float(sum(getattr(f, k) / v for k, v in BUDGETS.items()))


def within_budgets(f: Figures) -> bool:
    return all(getattr(f, k) <= v for k, v in BUDGETS.items())


@dataclass(frozen=True)
class Row:
    """A trial's setting with its figures (the current setting's too)."""

    number: int | None  # the trial's; None for the current setting
    setting: Setting
    figures: Figures
