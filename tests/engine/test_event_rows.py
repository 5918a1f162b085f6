"""The event log's tuples become the same Events as the class's own constructor makes."""

from __future__ import annotations

import pytest

from probesim.engine.events import EventLog
from probesim.results import Event


def test_from_rows_equals_the_constructor() -> None:
    log = EventLog()
    log.add(1000, "Warning", "Unhealthy", "pod/web-0", "Liveness probe failed: x")
    log.add(2000, "Normal", "SuccessfulRescale", "horizontalpodautoscaler/web", "New size: 4", "hpa")
    made = log.events
    assert made == [
        Event(1000, "Warning", "Unhealthy", "pod/web-0", "Liveness probe failed: x"),
        Event(2000, "Normal", "SuccessfulRescale", "horizontalpodautoscaler/web", "New size: 4", "hpa"),
    ]
    assert [hash(e) for e in made] == [hash(Event(*r)) for r in log.rows]
    assert [type(e) for e in made] == [Event, Event]
    assert [e._asdict() for e in made] == [Event(*r)._asdict() for r in log.rows]
    assert made[1].source == "hpa" and made[0].source == "kubelet"
    with pytest.raises(AttributeError):
        made[0].reason = "x"  # type: ignore[misc]


def test_events_can_be_replaced() -> None:
    log = EventLog()
    log.add(5, "Normal", "Started", "pod/web-1", "Started container app")
    taken, log.events = log.events, []
    assert [e.time_ms for e in taken] == [5] and log.events == [] and log.rows == []


def test_take_gives_every_event_in_order_and_empties_the_log() -> None:
    log = EventLog()
    for i in range(20_000):  # more than one slice
        log.add(i, "Normal", "Started", f"pod/web-{i % 7}", "Started container app")
    expected = [Event(*r) for r in log.rows]
    assert log.take() == expected
    assert log.rows == [] and log.take() == []
