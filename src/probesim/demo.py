"""The seed-000 demo: one warm pod and one that starts slowly and hangs, under the 8
combinations of readiness off/on, strict/loose liveness and startup off/on."""

from __future__ import annotations

from dataclasses import dataclass

from probesim.logical import Behavior, Config, Probe, Sim

TICKS = 26
RPS = 2
BEHAVIORS = (Behavior(), Behavior(startup_ticks=8, hang_at=14, hang_for=3))
READINESS = Probe(period=1, failure_threshold=1, success_threshold=1)
STARTUP = Probe(period=1, failure_threshold=30, success_threshold=1)


def liveness(strict: bool) -> Probe:
    return Probe(period=1, failure_threshold=1 if strict else 5, success_threshold=1)


@dataclass
class DemoRow:
    readiness: bool
    strict_liveness: bool
    startup: bool
    sim: Sim


def run_demo() -> list[DemoRow]:
    rows = []
    for readiness in (False, True):
        for strict in (True, False):
            for startup in (False, True):
                cfg = Config(
                    readiness=READINESS if readiness else Probe(),
                    liveness=liveness(strict),
                    startup=STARTUP if startup else Probe(),
                )
                sim = Sim(cfg, *BEHAVIORS)
                sim.run(TICKS, RPS)
                rows.append(DemoRow(readiness, strict, startup, sim))
    return rows
