"""The engine's event sink: collects ``Event``s and knows which pods need a kubelet sync."""

from __future__ import annotations

from probesim.results import Event


class EventLog:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.synced_pods: set[int] = set()  # pods whose kubelet sync runs at the current time
        # One copy of each object name and message: a long run repeats the same few (a
        # container's Unhealthy, Killing, Started) thousands of times.
        self._text: dict[str, str] = {}

    def add(self, t: int, type_: str, reason: str, obj: str, message: str, source: str = "kubelet") -> None:
        text = self._text
        obj = text.setdefault(obj, obj)
        message = text.setdefault(message, message)
        self.events.append(Event(t, type_, reason, obj, message, source))
