"""Types and tick loop of the seed-000 model (seed 000, reference/seed-experiments.md §2)."""

from __future__ import annotations

from dataclasses import dataclass, field

from probesim.consecutive import next_run, reaches_threshold


@dataclass(frozen=True)
class Probe:
    """One probe's settings in ticks; ``period == 0`` disables it."""

    initial_delay: int = 0
    period: int = 0
    failure_threshold: int = 0
    success_threshold: int = 0

    def enabled(self) -> bool:
        return self.period > 0

    def due(self, age: int) -> bool:
        """True when the probe runs at this age: past the initial delay and on the period."""
        if not self.enabled() or age < self.initial_delay:
            return False
        return (age - self.initial_delay) % self.period == 0


@dataclass(frozen=True)
class Config:
    """The three probes; a default ``Probe()`` means the probe is not used."""

    readiness: Probe = field(default_factory=Probe)
    liveness: Probe = field(default_factory=Probe)
    startup: Probe = field(default_factory=Probe)


@dataclass(frozen=True)
class Behavior:
    """A pod's scripted health as a function of its age since the last (re)start."""

    startup_ticks: int = 0
    hang_at: int = 0
    hang_for: int = 0

    def healthy(self, age: int) -> bool:
        if age < self.startup_ticks:
            return False
        if self.hang_at <= 0 or age < self.hang_at:
            return True
        if self.hang_for <= 0:
            return False
        return age >= self.hang_at + self.hang_for


@dataclass
class _Gate:
    """Consecutive-result verdict of one probe on one pod."""

    passing: bool
    last: bool = False  # no result yet: run is 0, so the first result starts a streak of 1
    run: int = 0

    def record(self, passed: bool, probe: Probe) -> bool:
        """Record one result; True only when the verdict flips."""
        self.run = int(next_run(self.last, self.run, passed)) if self.run else 1
        self.last = passed
        if passed != self.passing and bool(
            reaches_threshold(passed, self.run, probe.success_threshold, probe.failure_threshold)
        ):
            self.passing = passed
            return True
        return False


@dataclass
class Pod:
    name: str
    behavior: Behavior
    age: int = 0
    restarts: int = 0
    startup: _Gate = field(default_factory=lambda: _Gate(passing=False))
    readiness: _Gate = field(default_factory=lambda: _Gate(passing=False))
    liveness: _Gate = field(default_factory=lambda: _Gate(passing=True))  # assumed alive

    @property
    def ready(self) -> bool:
        return self.readiness.passing

    @property
    def healthy(self) -> bool:
        """What the script says now, not what a probe concluded."""
        return self.behavior.healthy(self.age)

    def restart(self) -> None:
        self.age = 0
        self.restarts += 1
        self.startup = _Gate(passing=False)
        self.readiness = _Gate(passing=False)
        self.liveness = _Gate(passing=True)


class Sim:
    """Pods under probes and round-robin traffic, on a logical clock."""

    def __init__(self, config: Config, *behaviors: Behavior) -> None:
        self.config = config
        self.now = 0
        self.pods = [Pod(name=f"pod-{i + 1}", behavior=b) for i, b in enumerate(behaviors)]
        self.served = 0
        self.dropped = 0
        self.log: list[str] = []
        self._cursor = 0

    def restarts(self) -> int:
        return sum(p.restarts for p in self.pods)

    def endpoints(self) -> list[str]:
        """Pods that receive traffic: all of them without readiness, else the ready ones."""
        use_all = not self.config.readiness.enabled()
        return [p.name for p in self.pods if use_all or p.ready]

    def safe(self) -> bool:
        return self.dropped == 0

    def tick(self, rps: int) -> None:
        """Check probes, route ``rps`` requests, age every pod, advance the clock."""
        self._check()
        self._route(rps)
        for p in self.pods:
            p.age += 1
        self.now += 1

    def run(self, ticks: int, rps: int) -> None:
        for _ in range(ticks):
            self.tick(rps)

    def _check(self) -> None:
        cfg = self.config
        for p in self.pods:
            healthy = p.behavior.healthy(p.age)
            if cfg.startup.enabled() and not p.startup.passing:
                # Until startup passes, readiness and liveness do not run on this pod.
                if not cfg.startup.due(p.age) or not p.startup.record(healthy, cfg.startup):
                    continue
                self._logf(f"{p.name} passed its startup probe; readiness and liveness start")
            if cfg.readiness.due(p.age) and p.readiness.record(healthy, cfg.readiness):
                if p.ready:
                    self._logf(f"{p.name} passed readiness; added to endpoints")
                else:
                    self._logf(f"{p.name} failed readiness; removed from endpoints (no restart)")
            if (
                cfg.liveness.due(p.age)
                and p.liveness.record(healthy, cfg.liveness)
                and not p.liveness.passing
            ):
                self._logf(f"{p.name} failed liveness; restarting (restart {p.restarts + 1})")
                p.restart()

    def _route(self, rps: int) -> None:
        eps = self.endpoints()
        if not eps:
            self.dropped += rps
            if rps > 0:
                self._logf(f"no endpoints; {rps} requests lost")
            return
        by_name = {p.name: p for p in self.pods}
        for _ in range(rps):
            name = eps[self._cursor % len(eps)]
            self._cursor += 1
            if not by_name[name].healthy:
                self.dropped += 1
                self._logf(f"{name} is in endpoints but cannot answer; 1 request lost")
                continue
            self.served += 1

    def _logf(self, msg: str) -> None:
        self.log.append(f"t={self.now} {msg}")
