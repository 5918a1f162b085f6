"""Requests a client sidecar's fault filter holds (a VirtualService ``fault.delay``) before its
router sends them (SidecarHold). Envoy's fault filter stops the request (``StopIteration``)
and lets it go on when its timer fires (``postDelayInjection``); the router only then picks a
host and arms the route timeout (``onRequestComplete``), so the delay is not counted against
the route's timeout. A client that gives up first closes the stream: the held request is
destroyed with it and never reaches a host.

Counts, not requests: one entry per step that delayed any, so the cost of a step does not grow
with the rate. A step's delayed requests are taken as sent at the step's start and released
in the step their delay ends in.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SidecarHold:
    """One route's held requests: ``delay_ms`` the fault's delay, ``timeout_ms`` the client's
    (None: it waits forever)."""

    delay_ms: int
    timeout_ms: float | None
    entries: list[list[int]] = field(default_factory=list)  # [sent ms, requests]

    @property
    def held(self) -> int:
        """Requests held now (their client still waits for them)."""
        return sum(e[1] for e in self.entries) if self.entries else 0

    def gives_up(self) -> bool:
        """Whether the client gives up before the delay ends (its timeout at or before it)."""
        return self.timeout_ms is not None and self.timeout_ms <= self.delay_ms

    def hold(self, t: int, step: int, n: int) -> tuple[int, int]:
        """``n`` requests delayed at ``t``: held, or (a delay shorter than the step) released
        at once. Returns (released now, given up now)."""
        if n == 0:
            return 0, 0
        end = self._end(t)
        if end < t + step:
            return (0, n) if self.gives_up() else (n, 0)
        self.entries.append([t, n])
        return 0, 0

    def due(self, t: int, step: int) -> tuple[int, int]:
        """The held requests whose delay (or client's wait) ends in the step at ``t``: how many
        go on to the router now, and how many their client gave up on."""
        if not self.entries:
            return 0, 0
        go = late = 0
        keep = []
        for e in self.entries:
            if self._end(e[0]) >= t + step:
                keep.append(e)
            elif self.gives_up():
                late += e[1]
            else:
                go += e[1]
        self.entries = keep
        return go, late

    def drop(self) -> int:
        """Everything held, taken out (the load generator stopped waiting)."""
        n = self.held
        self.entries = []
        return n

    def _end(self, sent: int) -> float:
        """When a request sent at ``sent`` leaves the hold: its delay's end, or its client's
        timeout when that comes first."""
        if self.gives_up():
            assert self.timeout_ms is not None
            return sent + self.timeout_ms
        return float(sent + self.delay_ms)
