"""The lab run's clock and event log: scenario time in ms from the run's t0 (the monotonic clock
its test apps read too), and the events every part of the lab records, as the simulation names
them."""

from __future__ import annotations

import time

from probesim.lab.pods import Pod
from probesim.results import Event


class Clock:
    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.wall_t0 = time.time() - (time.monotonic() - self.t0)
        self.events: list[Event] = []

    def start(self) -> None:
        """The scenario's clock starts now."""
        self.t0 = time.monotonic()
        self.wall_t0 = time.time()

    def now_ms(self) -> int:
        return round((time.monotonic() - self.t0) * 1000)

    def ms(self, at: float) -> int:
        """A time on the monotonic clock, as scenario ms."""
        return round((at - self.t0) * 1000)

    def event(self, type_: str, reason: str, pod: Pod, message: str) -> None:
        self.events.append(Event(self.now_ms(), type_, reason, f"pod/{pod.name}", message))
