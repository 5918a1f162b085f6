"""The events table and the run's summary tables written without rich's table renderer (issue
14: a big run's text output): byte for byte what rich writes, on every console width, with
wide, combining and escaped characters, cut or whole, columns dropped as they do not fit; and
the aggregation of events in time order equal to the general one (tests/cli/test_events.py
checks what the timeline says)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from probesim.report import terminal
from probesim.results import Event
from probesim.safe import cell

TEXT = st.sampled_from(
    [
        "",
        "x",
        "pod/app-1",
        "Readiness probe failed: HTTP probe failed with statuscode: 503",
        "日本語のメッセージ",
        "e\u0301 combining",
        "🙂 emoji",
        "[bold]not markup[/bold]",
        "tab\tand\nnewline",
        "…",
        "a" * 120,
    ]
)
EVENTS = st.lists(
    st.tuples(
        st.sampled_from([0, 0, 100, 1000, 60_000]), st.sampled_from(["Normal", "Warning"]), TEXT, TEXT, TEXT
    ),
    max_size=60,
).map(
    lambda rows: [
        Event(sum(r[0] for r in rows[: i + 1]), kind, reason, obj, message)
        for i, (_, kind, reason, obj, message) in enumerate(rows)
    ]
)


@contextmanager
def _rich_only() -> Iterator[None]:
    plain = terminal._plain_events_table
    terminal._plain_events_table = lambda *_: False
    try:
        yield
    finally:
        terminal._plain_events_table = plain


def _render(events: list[Event], lines: int | None, **console: Any) -> str:
    buffer = io.StringIO()
    terminal.render_events(events, Console(file=buffer, emoji=False, **console), lines)
    return buffer.getvalue()


@settings(max_examples=80, deadline=None)
@given(
    events=EVENTS,
    width=st.sampled_from([40, 79, 80, 120, 160, 250]),
    lines=st.sampled_from([None, 0, 1, 3, 20]),
    terminal_colours=st.booleans(),
)
def test_the_plain_table_is_what_rich_writes(
    events: list[Event], width: int, lines: int | None, terminal_colours: bool
) -> None:
    console = {"width": width, "force_terminal": terminal_colours}
    fast = _render(events, lines, **console)
    with _rich_only():
        assert fast == _render(events, lines, **console)


def test_a_pipe_gets_the_plain_table_a_terminal_rich_and_a_narrow_console_one_event_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken: list[bool] = []
    plain = terminal._plain_events_table

    def spy(*args: Any) -> bool:
        taken.append(plain(*args))
        return taken[-1]

    monkeypatch.setattr(terminal, "_plain_events_table", spy)
    events = [
        Event(1000 * i, "Warning", "Unhealthy", f"pod/app-{i % 3}", "Liveness probe failed") for i in range(9)
    ]
    _render(events, 20, width=160)
    _render(events, 20, width=160, force_terminal=True)
    _render(events, 20, width=60)
    assert taken == [True, False, False]


@settings(max_examples=50, deadline=None)
@given(events=EVENTS, shuffle=st.randoms(use_true_random=False))
def test_aggregating_events_in_time_order_matches_any_order(events: list[Event], shuffle: Any) -> None:
    def rows(agg: list[terminal._Agg]) -> list[tuple[int, int, int, Event, int]]:
        return [(a.first, a.last, a.count, a.event, a.order) for a in agg]

    assert rows(terminal.aggregate(events)) == rows(terminal._aggregate_any_order(events))
    mixed = list(events)
    shuffle.shuffle(mixed)
    assert rows(terminal.aggregate(mixed)) == rows(terminal._aggregate_any_order(mixed))


CELL = st.sampled_from(
    ["", "0", "12", "1m30s", "never", "-", "4.4 ms", "complete", "日本", "a" * 40, "x[b]", "a:b"]
)
NAME = st.sampled_from(
    ["web", "deployment/api-server", "日本語のサービス", "e\u0301", "n" * 70, "[bold]x[/bold]"]
)


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    width=st.sampled_from([30, 60, 80, 120, 160]),
    terminal_colours=st.booleans(),
)
def test_summary_tables_written_plain_are_what_rich_writes(
    data: st.DataObject, width: int, terminal_colours: bool
) -> None:
    n = data.draw(st.integers(1, 7))
    columns = [("NAME", "left", 0)] + [
        (data.draw(st.sampled_from(["SERVICE", "OK", "FAILED", "MIN AVAILABLE", "P99"])), j, p)
        for j, p in data.draw(
            st.lists(
                st.tuples(st.sampled_from(["left", "right"]), st.integers(0, 4)),
                min_size=n - 1,
                max_size=n - 1,
            )
        )
    ]
    drawn = data.draw(st.lists(st.tuples(NAME, st.lists(CELL, min_size=n - 1, max_size=n - 1)), max_size=5))
    rows: list[list[Text | str]] = [[cell(name), *cells] for name, cells in drawn]

    def fit() -> str:
        buffer = io.StringIO()
        console = Console(file=buffer, width=width, emoji=False, force_terminal=terminal_colours)
        terminal._fit(console, "Requests", columns, rows)
        return buffer.getvalue()

    fast = fit()
    plain = terminal._plain_fit
    terminal._plain_fit = lambda *_: None
    try:
        assert fast == fit()
    finally:
        terminal._plain_fit = plain
