"""Human output with rich: run summaries, kubectl-style events, the seed-000 demo table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from probesim.model.duration import format_ms
from probesim.results import CAUSES, Event, Result, RouteSummary, Span
from probesim.safe import MESSAGE_LIMIT, cell, visible


def _secs(ms: int | None) -> str:
    return "never" if ms is None else format_ms(ms)


EVENT_LINES = 20  # event lines shown at each end of the timeline unless all are asked for


def render_result(
    result: Result, console: Console, events: bool = True, event_lines: int | None = None
) -> None:
    """The run's summary tables and events (the first and last ``event_lines`` lines of the
    timeline, every line if None: probesim run, whose --events all the cut names, gives
    EVENT_LINES unless told). Names and messages are user text: shown through probesim.safe, never as
    markup."""
    if result.source == "lab":
        what = f"  ran for real for {format_ms(result.duration_ms)}"
    else:
        what = (
            f"  simulated {format_ms(result.duration_ms)} "
            f"in steps of {format_ms(result.step_ms)}, seed {result.seed}"
        )
    console.print(Text.assemble(cell(result.scenario, style="bold"), what))
    if result.routes:
        _requests(result, console)
    _workloads(result, console)
    if result.rollouts:
        _rollouts(result, console)
    if result.nodes:
        _nodes(result, console)
    restarted = {p: n for w in result.workloads for p, n in w.restarts.items() if n}
    if restarted:
        console.print(
            Text("Restarts by pod: " + ", ".join(f"{visible(p)} {n}" for p, n in restarted.items()))
        )
    if events:
        render_events(result.events, console, event_lines)


def _fit(
    console: Console,
    title: str,
    columns: Sequence[tuple[str, str, int]],
    rows: Sequence[Sequence[Text | str]],
) -> None:
    """A table as wide as the console allows: columns after the first are dropped from the
    least needed (highest ``priority``) until the rest fit unwrapped, and a line names those
    left out. Figures are never folded in the middle."""
    shown = _plain_fit(console, title, columns, rows)
    if shown is None:
        shown = _rich_fit(console, title, columns, rows)
    left = [columns[i][0] for i in range(len(columns)) if i not in shown]
    if left:
        console.print(
            Text(f"(too narrow for {', '.join(left)}: a wider terminal or --json shows them)", style="dim")
        )


def _plain_fit(
    console: Console,
    title: str,
    columns: Sequence[tuple[str, str, int]],
    rows: Sequence[Sequence[Text | str]],
) -> list[int] | None:
    """``_fit``'s table written as rich lays it out (as ``_plain_events_table`` does), on a
    console that writes no styles, when the columns kept fit at their natural widths; the
    columns shown, or None for rich to draw it. Figures given as strings are markup to rich:
    any with a '[' or an emoji code's ':' goes to rich too."""
    if console.color_system is not None or console.record:
        return None
    plain = [[c.plain if isinstance(c, Text) else c for c in r] for r in rows]
    if any(
        "\n" in c or (isinstance(o, str) and ("[" in c or ":" in c))
        for r, p in zip(rows, plain, strict=True)
        for o, c in zip(r, p, strict=True)
    ):
        return None
    widths = []
    for i, (head, justify, priority) in enumerate(columns):
        natural = max((cell_len(r[i]) for r in plain), default=0)
        least = (
            min(16, max((len(r[i]) for r in rows), default=0)) if justify == "left" and priority == 0 else 0
        )
        widths.append(max(cell_len(head), natural, least) + 2)
    shown = list(range(len(columns)))

    def total() -> int:
        return sum(widths[i] for i in shown) + len(shown) + 1

    for drop in sorted(range(1, len(columns)), key=lambda i: (-columns[i][2], -i)):
        if total() <= console.width:
            break
        shown.remove(drop)
    width = total()
    if width > console.width or cell_len(title) > width:
        return None

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, c in zip(shown, cells, strict=True):
            room = " " * (widths[i] - 2 - cell_len(c))
            out.append(f" {c}{room} " if columns[i][1] == "left" else f" {room}{c} ")
        return " " + " ".join(out) + " "

    edge = " " * width
    body = [line([r[i] for i in shown]) for r in plain]
    head = line([columns[i][0] for i in shown])
    console.print(
        _Lines(
            [title + " " * (width - cell_len(title)), edge, head, " " + "─" * (width - 2) + " ", *body, edge]
        )
    )
    return shown


def _rich_fit(
    console: Console,
    title: str,
    columns: Sequence[tuple[str, str, int]],
    rows: Sequence[Sequence[Text | str]],
) -> list[int]:
    """``_fit``'s table drawn by rich; the columns shown."""
    shown = list(range(len(columns)))

    def build(keep: list[int]) -> Table:
        t = Table(title=title, title_justify="left", box=box.SIMPLE)
        for i in keep:
            head, justify, priority = columns[i]
            # User text (names) folds; figures do not.
            text = justify == "left" and priority == 0
            # A name is never squeezed below 16 columns (or its length): a column of letters.
            least = min(16, max((len(r[i]) for r in rows), default=0)) if text else None
            t.add_column(
                head,
                justify=justify,  # type: ignore[arg-type]
                no_wrap=not text,
                overflow="fold" if text else "ellipsis",
                min_width=least,
            )
        for r in rows:
            t.add_row(*(r[i] for i in keep))
        return t

    table = build(shown)
    unbounded = console.options.update_width(1_000_000)  # the table's natural width, not clamped
    # The least needed first, and of equals the rightmost.
    for drop in sorted(range(1, len(columns)), key=lambda i: (-columns[i][2], -i)):
        if Measurement.get(console, unbounded, table).maximum <= console.width:
            break
        shown.remove(drop)
        table = build(shown)
    console.print(table)
    return shown


def latency_text(v: float | None) -> str:
    """A latency (ms) as a person reads it: 4.4 ms, 480 ms, 1.06 s, 60 s; '-' for none."""
    if v is None:
        return "-"
    return f"{v:g} ms" if v < 1000 else f"{v / 1000:.2f}".rstrip("0").rstrip(".") + " s"


def _requests(result: Result, console: Console) -> None:
    """The Requests table: the steady state's (after the start-up ramp) where the run was split,
    the start-up ramp's requests on a line of their own; the whole run's otherwise."""
    split = [r.steady is not None for r in result.routes]
    spans: list[RouteSummary | Span] = [r.steady or r for r in result.routes]
    extra = [
        (h, attr)
        for h, attr in (("DROPPED", "dropped"), ("INTERRUPTED", "interrupted"), ("IN FLIGHT", "in_flight"))
        if any(getattr(s, attr) for s in spans)
    ]
    columns = [
        ("ROUTE", "left", 0),
        ("SERVICE", "left", 4),
        ("OFFERED", "right", 1),
        ("OK", "right", 1),
        ("FAILED", "right", 0),
        ("ERROR %", "right", 0),
        *((h, "right", 2) for h, _ in extra),
    ]
    # Latency where it is modelled (a route with a cost) or measured (the lab).
    quantiles = ("p50", "p95", "p99", "max") if any(r.latency_ms for r in result.routes) else ()
    columns += [(q.upper(), "right", {"p50": 2, "p95": 0, "p99": 1, "max": 3}[q]) for q in quantiles]
    rows: list[list[Text | str]] = [
        [
            cell(r.name) if ok or r.ramp is None else cell(f"{r.name} (never all Ready)"),
            cell(r.service),
            str(s.offered),
            str(s.ok),
            str(s.failed_total),
            f"{100 * s.error_rate:.1f}",
            *(str(getattr(s, attr)) for _, attr in extra),
            *(latency_text(s.latency_ms.get(q)) for q in quantiles),
        ]
        for r, s, ok in zip(result.routes, spans, split, strict=True)
    ]
    # OFFERED = OK + FAILED + DROPPED + INTERRUPTED + IN FLIGHT (still awaited at the end).
    title = "Requests"
    if any(split):
        title += " after the start-up ramp (the steady state)"
    _fit(console, title, columns, rows)
    failed = [(r, s) for r, s in zip(result.routes, spans, strict=True) if s.failed_total]
    if failed:
        console.print(Text("Failed requests by cause:"))
        for r, s in failed:
            causes = ", ".join(f"{c} {s.failed[c]}" for c in CAUSES if s.failed.get(c))
            console.print(Padding(Text.assemble(cell(r.name), f": {causes}"), (0, 0, 0, 2), expand=False))
    ramps = [r for r in result.routes if r.ramp is not None and r.steady is not None and r.ramp.offered]
    if ramps:
        console.print(Text("Start-up ramp (until every replica behind the route was first Ready), apart:"))
        for r in ramps:
            ramp = r.ramp
            assert ramp is not None
            causes = ", ".join(f"{c} {ramp.failed[c]}" for c in CAUSES if ramp.failed.get(c))
            line = (
                f": 0s to {format_ms(ramp.end_ms)}, {ramp.offered} offered, {ramp.failed_total} failed"
                f" ({100 * ramp.error_rate:.1f} %)" + (f": {causes}" if causes else "")
            )
            console.print(Padding(Text.assemble(cell(r.name), line), (0, 0, 0, 2), expand=False))


def _workloads(result: Result, console: Console) -> None:
    columns = [
        ("WORKLOAD", "left", 0),
        ("REPLICAS", "right", 1),
        ("RESTARTS", "right", 0),
        ("FIRST READY", "right", 3),
        ("ALL READY", "right", 0),
        ("MIN READY", "right", 0),
        ("MIN AVAILABLE", "right", 1),
        ("AVG READY", "right", 2),
    ]
    rows: list[list[Text | str]] = []
    for w in result.workloads:
        after = result.after_ramp(w.name)
        rows.append(
            [
                cell(f"{w.kind.lower()}/{w.name}"),
                str(w.replicas),
                str(w.total_restarts),
                _secs(w.first_ready_ms),
                _secs(w.all_ready_ms),
                "-" if after is None else str(after[0]),
                "-" if after is None else str(after[1]),
                f"{w.avg_ready:.2f}",
            ]
        )
    _fit(console, "Workloads", columns, rows)
    console.print(
        Text(
            "ALL READY: when all replicas were first Ready (the start-up ramp); MIN READY and MIN "
            "AVAILABLE count from then on (-: never all Ready).",
            style="dim",
        )
    )


def _nodes(result: Result, console: Console) -> None:
    """Where the pods ran (a run that gives spec.cluster.nodes): each node's pods at the end and
    the others it held, and how long it was not Ready; the pods no node took."""
    columns = [
        ("NODE", "left", 0),
        ("ZONE", "left", 2),
        ("PODS AT THE END", "left", 0),
        ("ALSO RAN HERE", "left", 1),
        ("NOT READY", "right", 0),
    ]
    rows: list[list[Text | str]] = []
    for n in result.nodes:
        earlier = [p for p in n.pods if p not in n.pods_at_end]
        rows.append(
            [
                cell(n.name),
                cell(n.zone or "-"),
                cell(
                    ", ".join(p + (" (Terminating)" if p in n.terminating else "") for p in n.pods_at_end)
                    or "-"
                ),
                cell(", ".join(earlier) or "-"),
                format_ms(n.not_ready_ms) if n.not_ready_ms else "-",
            ]
        )
    _fit(console, "Nodes", columns, rows)
    if result.pending:
        console.print(
            Text(
                "Pending at the end (no node could take them): "
                + ", ".join(visible(p) for p in result.pending)
            )
        )


def _rollouts(result: Result, console: Console) -> None:
    """Each rollout: what started it, toward which ReplicaSet, how it ended and what it cost."""
    columns = [
        ("ROLLOUT", "left", 0),
        ("REPLICASET", "left", 2),
        ("START", "right", 0),
        ("OUTCOME", "left", 0),
        ("TOOK", "right", 1),
        ("MIN READY", "right", 1),
        ("MIN AVAILABLE", "right", 0),
        ("FAILED", "left", 0),
    ]
    rows: list[list[Text | str]] = []
    kinds = {w.name: w.kind for w in result.workloads}  # a StatefulSet's rollout is statefulset/…
    for r in result.rollouts:
        if r.end_ms is not None:
            outcome, took = "complete", format_ms(r.end_ms - r.start_ms)
        elif r.superseded_ms is not None:
            outcome, took = f"superseded at {format_ms(r.superseded_ms)}", "-"
        else:
            outcome, took = "not complete at the end", "-"
        if r.stalled_ms is not None:
            outcome += f" (deadline exceeded at {format_ms(r.stalled_ms)})"
        failed = ", ".join(f"{c} {n}" for c, n in r.failed.items()) or "0"
        rows.append(
            [
                cell(f"{kinds.get(r.workload, 'Deployment').lower()}/{r.workload} {r.action} ({r.origin})"),
                cell(r.revision),
                format_ms(r.start_ms),
                outcome,
                took,
                str(r.min_ready),
                str(r.min_available),
                failed,
            ]
        )
    _fit(console, "Rollouts", columns, rows)


@dataclass
class _Agg:
    first: int
    last: int
    count: int
    event: Event
    order: int  # the index of the last occurrence, to keep simultaneous events in their order


_KEY = attrgetter("object", "type", "reason", "message")


def aggregate(events: Sequence[Event]) -> list[_Agg]:
    """kubectl's count: one row per object, type, reason and message (the kubelet's event
    correlator folds a repeat into the same Event, counting it and moving its last time,
    whatever happened in between), rows in order of their last occurrence as kubectl sorts
    them."""
    return _timeline(events, None)[0]


def _timeline(events: Sequence[Event], lines: int | None) -> tuple[list[_Agg], int, int, list[_Agg]]:
    """The aggregated timeline's first and last ``lines`` rows (every row if None; all of them
    when none would be left out), and how many rows and events are left out between them.

    In time order (as results hold events) a key's first and last occurrences hold its first
    and last times, and the order of the last occurrences is the rows' order: dicts and a
    Counter find them with no Python step per event, and rows are made only for the lines
    shown (6,100 events: 3 ms, not 10)."""
    keys = list(map(_KEY, events))
    times = [e.time_ms for e in events]
    row: Callable[[int], _Agg]
    if times == sorted(times):
        n = len(keys)
        last = dict(zip(keys, range(n), strict=True))
        first = dict(zip(reversed(keys), range(n - 1, -1, -1), strict=True))
        counts = Counter(keys)
        order = sorted(last.values())

        def made(i: int) -> _Agg:
            k = keys[i]
            return _Agg(times[first[k]], times[i], counts[k], events[first[k]], i)

        row = made
    else:
        rows = _aggregate_any_order(events)
        order, row = list(range(len(rows))), rows.__getitem__
    edge = len(order) if lines is None else max(lines, 0)
    head, left_out, tail = (
        order[:edge],
        order[edge : max(edge, len(order) - edge)],
        order[len(order) - edge :],
    )
    if not left_out:
        head, tail = order, []
    shown = [row(i) for i in head], [row(i) for i in tail]
    return shown[0], len(left_out), len(events) - sum(a.count for part in shown for a in part), shown[1]


def _aggregate_any_order(events: Sequence[Event]) -> list[_Agg]:
    """``aggregate`` for events not in time order."""
    rows: dict[tuple[str, str, str, str], _Agg] = {}
    for i, e in enumerate(events):
        key = (e.object, e.type, e.reason, e.message)
        a = rows.get(key)
        if a is None:
            rows[key] = _Agg(e.time_ms, e.time_ms, 1, e, i)
        else:
            a.first, a.last = min(a.first, e.time_ms), max(a.last, e.time_ms)
            a.count, a.order = a.count + 1, i
    return sorted(rows.values(), key=lambda a: (a.last, a.order))


def human_duration(ms: int) -> str:
    """A span as kubectl writes an event's age (apimachinery's HumanDuration): whole seconds
    up to 2 minutes, then minutes (and seconds below 10 minutes), hours, days, years."""
    s = ms // 1000
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 3 * 60:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        d = (h // 24) % 365
        return f"{h // 24 // 365}y{d}d" if d else f"{h // 24 // 365}y"
    return f"{h // 24 // 365}y"


def render_events(events: Sequence[Event], console: Console, lines: int | None = EVENT_LINES) -> None:
    """The timeline as ``kubectl get events`` shows it: a repeated event is one line, seen
    last at LAST SEEN, "(x12 over 3m)" since its first time; the first and last ``lines``
    lines only (every line if None), with a line saying how many are left out. On a terminal
    too narrow for a readable MESSAGE column, each event is a line with its message indented
    below it."""
    head, left_lines, left_events, tail = _timeline(events, lines)
    entries = [_event_cells(a) for a in head]
    if left_lines:
        note = (
            f"{left_lines:,} lines ({left_events:,} events) left out: --events all shows every line, "
            "--json every event"
        )
        entries.append((Text("…"), Text(), Text(), Text(), Text(note), "dim"))
    entries += [_event_cells(a) for a in tail]
    heads = ("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")
    if _plain_events_table(console, heads, entries):
        return
    t = Table(title="Events", title_justify="left", box=box.SIMPLE)
    for h in heads[:4]:
        t.add_column(h, overflow="fold")
    for e in entries:
        t.add_row(*e[:4])
    unbounded = console.options.update_width(1_000_000)
    if console.width - Measurement.get(console, unbounded, t).maximum < _MESSAGE_WIDTH:
        console.print(Text("Events", style="italic"))
        for when, kind, reason, obj, message, style in entries:
            first = Text.assemble(
                "  ", when, *(x for part in (kind, reason, obj) if part for x in ("  ", part))
            )
            first.stylize(style or "")
            console.print(first)
            console.print(Padding(Text.assemble(message, style=style or ""), (0, 0, 0, 4), expand=False))
        return
    t = Table(title="Events", title_justify="left", box=box.SIMPLE)
    for h in heads:
        t.add_column(h, overflow="fold")
    for *cells, style in entries:
        t.add_row(*cells, style=style)
    console.print(t)


_MESSAGE_WIDTH = 32  # fewer columns left for MESSAGE: one event a line, its message below


class _Lines:
    """Lines already laid out, printed as they are."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        new_line = Segment.line()
        for line in self.lines:
            yield Segment(line)
            yield new_line


def _plain_events_table(
    console: Console, heads: Sequence[str], entries: Sequence[tuple[Text, Text, Text, Text, Text, str | None]]
) -> bool:
    """The events table written as rich writes it, byte for byte, without rich's per-cell
    measuring and rendering (most of a big run's text output): only on a console that writes
    no styles (a pipe, a file: the output of long runs) and only when every column has its
    natural width (no folding) and MESSAGE its room; else False, and rich draws it. The layout
    is rich's for box.SIMPLE: a title line, an empty edge, the header, a rule, the rows and an
    empty edge, each cell padded by a space on each side and columns parted by a space, every
    line as wide as the table (tests/cli/test_events.py compares the two)."""
    if console.color_system is not None or console.record:
        return False
    columns: list[list[str]] = [[h] for h in heads]
    for entry in entries:
        for column, text in zip(columns, entry[:5], strict=True):
            column.append(text.plain)
    if any("\n" in s for column in columns for s in column):
        return False
    widths = [max(map(cell_len, column)) + 2 for column in columns]
    # render_events's test of a table without MESSAGE, then rich's test that the table fits.
    if console.width - (sum(widths[:4]) + 5) < _MESSAGE_WIDTH or sum(widths) > console.width - 6:
        return False
    width = sum(widths) + len(widths) + 1
    edge = " " * width

    def line(cells: Sequence[str]) -> str:
        return (
            " "
            + " ".join(f" {c}{' ' * (w - 1 - cell_len(c))}" for c, w in zip(cells, widths, strict=True))
            + " "
        )

    rows = [line(r) for r in zip(*(column[1:] for column in columns), strict=True)]
    console.print(
        _Lines(["Events" + " " * (width - 6), edge, line(heads), " " + "─" * (width - 2) + " ", *rows, edge])
    )
    return True


def _at(ms: int) -> str:
    """A time in the run as the timeline shows it: 2m57s, and 2m53.1s within a second."""
    if ms % 1000 == 0:
        return format_ms(ms)
    m, rest = divmod(ms, 60_000)
    return f"{m}m{rest / 1000:g}s" if m else f"{rest / 1000:g}s"


def _event_cells(a: _Agg) -> tuple[Text, Text, Text, Text, Text, str | None]:
    e = a.event
    when = _at(a.last)
    if a.count > 1:
        when += f" (x{a.count} over {human_duration(a.last - a.first)})"
    style = "yellow" if e.type == "Warning" else None
    return (
        Text(when),
        cell(e.type),
        cell(e.reason),
        cell(e.object),
        cell(e.message, MESSAGE_LIMIT, newlines=True),
        style,
    )  # an exec command's lines
