"""The engine's event sink: collects the run's events and knows which pods need a kubelet sync.

Events are kept as plain tuples while the run goes (a long overloaded run writes over a hundred
thousand; a tuple is the cheapest thing to make there) and become ``Event``s (named tuples of the
same fields) once, at the end (``take``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from probesim.results import Event

Row = tuple[int, str, str, str, str, str]  # time_ms, type, reason, object, message, source


_SLICE = 8192


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The garbage collector off: it would pass over the run's live objects again and again
    while a hundred thousand Events are allocated (none of them in a cycle), three times the cost."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class EventLog:
    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.synced_pods: set[int] = set()  # pods whose kubelet sync runs at the current time
        # One copy of each object name and message: a long run repeats the same few (a
        # container's Unhealthy, Killing, Started) thousands of times.
        self.text: dict[str, str] = {}

    def add(self, t: int, type_: str, reason: str, obj: str, message: str, source: str = "kubelet") -> None:
        text = self.text
        obj, message = text.setdefault(obj, obj), text.setdefault(message, message)
        self.rows.append((t, type_, reason, obj, message, source))

    @property
    def events(self) -> list[Event]:
        """Every event written so far, in the order written (a new list each time)."""
        with _collector_paused():
            return Event.from_rows(self.rows)

    @events.setter
    def events(self, events: list[Event]) -> None:
        self.rows = [(e.time_ms, e.type, e.reason, e.object, e.message, e.source) for e in events]

    def take(self) -> list[Event]:
        """Every event written, the log emptied: each slice of rows is let go once made, so
        that the run's rows and Events are not both held whole."""
        out: list[Event] = []
        rows = self.rows
        with _collector_paused():
            while rows:
                out += Event.from_rows(rows[:_SLICE])
                del rows[:_SLICE]
        return out
