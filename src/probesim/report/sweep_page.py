"""A sweep's page of the HTML report: a section per swept field, with the figures of interest
(failed requests, error rate, latency p95, restarts, fewest ready after the ramp, the share of
runs passing each threshold) against the field's values, then the points and the rows.

The page is built from a sweep's rows (``probesim sweep -o rows.csv``, read back by
probesim.sweep.read_rows), never from the runs themselves, so ``probesim sweep --report`` and
``probesim report rows.csv`` write the same page. Each value on a chart is over the rows at that
value of the field: the mean (exact, probesim.results.figures.stats), with the min–max band when
there are several. When other fields are swept too, a trace per combination of their values
(up to ``MAX_GROUPS`` of them; past that, over all of them, and the caption says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probesim.errors import InputError
from probesim.report.html import (
    RESULT_WHAT,
    Cell,
    Figure,
    Html,
    Section,
    chart,
    esc,
    filter_box,
    label,
    page,
    parse_json,
    read_input,
    table,
    tag,
)
from probesim.results.document import ResultDoc, parse_result
from probesim.results.figures import Stats, stats
from probesim.runs import threshold_names
from probesim.safe import MESSAGE_LIMIT, NAME_LIMIT
from probesim.sweep import PARQUET_MAGIC, read_rows

MAX_GROUPS = 6  # traces per entity on a field's chart: one per combination of the other fields
MAX_ROWS = 5000  # rows and points in the page's tables (the rows file has them all)
MAX_NAMES = 20  # routes, workloads and thresholds drawn and tabled (the rows file has them all)


@dataclass(frozen=True)
class Metric:
    """A summary figure of interest: the column ``{kind}[NAME].{suffix}`` of each route or workload."""

    kind: str  # route | workload
    suffix: str
    title: str
    y_title: str
    layout: dict[str, Any]


METRICS = (
    Metric("route", "failed", "Failed requests", "failed requests", {}),
    Metric("route", "error_rate", "Error rate", "failed / answered", {"tickformat": ".2%"}),
    Metric("route", "latency.p95_ms", "Latency p95", "milliseconds", {}),
    Metric("workload", "restarts", "Container restarts", "restarts", {}),
    Metric("workload", "min_ready_after_ramp", "Fewest ready after the ramp", "replicas", {}),
)


@dataclass(frozen=True)
class SweepRows:
    """A sweep's rows, checked: the swept fields (the columns between ``point`` and ``run``)."""

    file: str
    columns: list[str]
    rows: list[dict[str, Any]]
    fields: list[str]

    def names(self, kind: str) -> list[str]:
        """The routes or workloads the rows have figures of, in column order."""
        head, tail = f"{kind}[", "].failed" if kind == "route" else "].restarts"
        names = [c[len(head) : -len(tail)] for c in self.columns if c.startswith(head) and c.endswith(tail)]
        return names[:MAX_NAMES]

    @property
    def thresholds(self) -> list[str]:
        return threshold_names(dict.fromkeys(self.columns))[:MAX_NAMES]


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def load_page_input(path: str) -> ResultDoc | SweepRows:
    """What ``probesim report`` makes a page of ('-': standard input): a run's result (JSON),
    or a sweep's rows (Parquet, or anything else: CSV), checked."""
    data = read_input(path)
    if data.lstrip()[:1] in (b"{", b"[", b"") and not data.startswith(PARQUET_MAGIC):
        return parse_result(parse_json(data, path, RESULT_WHAT), path)
    return load_rows(data, path)


def load_rows(data: bytes, file: str) -> SweepRows:
    """A sweep's rows file (CSV or Parquet) read and checked."""
    return check_rows(*read_rows(data, file), file)


def _show(v: Any) -> str:
    return repr(v)[:NAME_LIMIT]


def check_rows(columns: Sequence[str], rows: list[dict[str, Any]], file: str) -> SweepRows:
    """The rows of ``probesim sweep``, or an InputError naming the file and what is wrong."""
    if not columns or columns[0] != "point" or "run" not in columns or "seed" not in columns:
        raise InputError(
            "neither a run's result (JSON: probesim run --json) nor a sweep's rows (CSV or Parquet "
            "whose columns start point, the swept fields, run, seed: probesim sweep -o rows.csv)",
            file=file,
        )
    seen: set[str] = set()
    for c in columns:
        if c in seen:
            raise InputError(f"column {_show(c)} appears twice: a sweep's columns are each once", file=file)
        seen.add(c)
    end = columns.index("run")
    if not rows:
        raise InputError("the sweep has no rows: nothing to show", file=file)
    verdicts = {f"threshold[{t}].ok" for t in threshold_names(dict.fromkeys(columns))}
    # Column by column, types compared directly: a rows file may hold millions of cells.
    for c in columns[end:]:
        if c in ("run", "seed"):
            allowed: tuple[type, ...] = (int,)
            what = "a whole number"
        elif c in verdicts:
            allowed, what = (bool, type(None)), "true or false"
        else:
            allowed, what = (int, float, type(None)), "a number"
        for i, row in enumerate(rows):
            if type(row.get(c)) not in allowed:
                raise InputError(f"row {i + 1}: {c} is {_show(row.get(c))}, not {what}", file=file)
    for i, row in enumerate(rows):
        if type(row.get("point")) is not int:
            raise InputError(
                f"row {i + 1}: point is {_show(row.get('point'))}, not a whole number", file=file
            )
    return SweepRows(file, list(columns), rows, list(columns[1:end]))


# -- aggregation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One trace: a figure against a field's values, over the rows at each value."""

    name: str  # plain text (escaped when drawn)
    xs: list[Any]
    n: list[int]  # rows that measured it at each x
    mean: list[float | None]
    low: list[float | None]
    high: list[float | None]


def _key(v: Any) -> Any:
    """A value as a dict key (lists and dicts of Parquet are not; CSV gives scalars)."""
    return v if isinstance(v, int | float | str | bool) or v is None else repr(v)


def x_values(rows: SweepRows, f: str) -> list[Any]:
    """The field's values, in numeric order when all are numbers, else in grid order."""
    seen = list(dict.fromkeys(_key(r.get(f)) for r in rows.rows))
    if all(_is_number(v) for v in seen):
        return sorted(seen)
    return seen


def groups(rows: SweepRows, f: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """The rows split by the values of the other swept fields: ("" , all rows) when there are
    none, or more than MAX_GROUPS combinations; else ("path=v, …", its rows) in grid order."""
    others = [g for g in rows.fields if g != f]
    if not others:
        return [("", rows.rows)]
    split: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows.rows:
        split.setdefault(tuple(_key(r.get(g)) for g in others), []).append(r)
    if len(split) > MAX_GROUPS:
        return [("", rows.rows)]
    return [
        (", ".join(f"{g}={_shown(v)}" for g, v in zip(others, k, strict=True)), rs) for k, rs in split.items()
    ]


def _shown(v: Any) -> str:
    return "null" if v is None else "true" if v is True else "false" if v is False else str(v)


def _by_value(rows: Sequence[dict[str, Any]], f: str) -> dict[Any, list[dict[str, Any]]]:
    """The rows at each value of the field (one pass: a sweep may have thousands of values)."""
    out: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(_key(r.get(f)), []).append(r)
    return out


def series(at: dict[Any, list[dict[str, Any]]], xs: Sequence[Any], column: str, name: str) -> Series:
    """``column``'s mean, min and max over the rows at each of the field's values ``xs``
    (``at``: ``_by_value``)."""
    n, mean, low, high = [], [], [], []
    for x in xs:
        values = [v for r in at.get(x, ()) if (v := r.get(column)) is not None]
        # One run at a value (the common case): its figure; statistics' exact mean is slow.
        s = Stats(1, float(values[0]), None, values[0], values[0]) if len(values) == 1 else stats(values)
        n.append(s.n)
        mean.append(s.mean)
        low.append(None if s.min is None else float(s.min))
        high.append(None if s.max is None else float(s.max))
    return Series(name, list(xs), n, mean, low, high)


def pass_share(at: dict[Any, list[dict[str, Any]]], xs: Sequence[Any], threshold: str, name: str) -> Series:
    """The share of the runs at each value that passed ``threshold`` (of those that judged it)."""
    col = f"threshold[{threshold}].ok"
    n, share = [], []
    for x in xs:
        oks = [r.get(col) for r in at.get(x, ()) if r.get(col) is not None]
        n.append(len(oks))
        share.append(sum(1 for v in oks if v) / len(oks) if oks else None)
    return Series(name, list(xs), n, share, share, share)


# -- figures ----------------------------------------------------------------------------------

PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a3069", "#6e7781")


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _traces(s: Series, color: str, x: list[Any], fmt: str) -> list[dict[str, Any]]:
    """The mean as a line with markers; the min–max band under it where the runs differ."""
    hover = [
        label(f"{s.name}: " if s.name else "")
        + (
            "not measured"
            if m is None
            else f"{m:{fmt}}" + (f" (min {lo:{fmt}}, max {hi:{fmt}})" if lo != hi else "")
        )
        + f", {n} run{'s' if n != 1 else ''}"
        for m, lo, hi, n in zip(s.mean, s.low, s.high, s.n, strict=True)
    ]
    out: list[dict[str, Any]] = []
    if any(lo != hi for lo, hi in zip(s.low, s.high, strict=True)):
        common = {"type": "scatter", "mode": "lines", "x": x, "hoverinfo": "skip", "showlegend": False,
                  "line": {"width": 0, "color": color}, "connectgaps": False}  # fmt: skip
        out.append({**common, "y": s.low, "name": label(f"{s.name} min")})
        out.append({**common, "y": s.high, "name": label(f"{s.name} max"), "fill": "tonexty",
                    "fillcolor": _rgba(color, 0.15)})  # fmt: skip
    out.append({
        "type": "scatter", "mode": "lines+markers", "x": x, "y": s.mean, "name": label(s.name or "mean"),
        "text": hover, "hovertemplate": "%{text}<extra></extra>", "line": {"color": color},
        "marker": {"color": color, "size": 7}, "connectgaps": False,
    })  # fmt: skip
    return out


def _x_axis(xs: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """The x values as plotly takes them: numbers, or labels on a category axis."""
    if all(_is_number(v) for v in xs):
        return list(xs), {"tickvals": list(xs)} if len(xs) <= 12 else {}
    return [label(_shown(v)) for v in xs], {"type": "category"}


def field_figures(rows: SweepRows, f: str) -> list[Html | Figure]:
    """The figures of interest against the swept field ``f``."""
    xs = x_values(rows, f)
    x, axis = _x_axis(xs)
    parts = [(g, _by_value(rs, f)) for g, rs in groups(rows, f)]
    over = (
        f" over every value of {', '.join(g for g in rows.fields if g != f)}"
        if len(rows.fields) > 1 and len(parts) == 1
        else ""
    )
    blocks: list[Html | Figure] = []
    for m in METRICS:
        data: list[dict[str, Any]] = []
        k = 0  # the series drawn so far: each its colour
        for who in rows.names(m.kind):
            col = f"{m.kind}[{who}].{m.suffix}"
            if col not in rows.columns:
                continue
            for g, rs in parts:
                name = ", ".join(p for p in (f"{m.kind} {who}", g) if p)
                s = series(rs, xs, col, name)
                if any(v is not None for v in s.mean):
                    fmt = ".2%" if m.suffix == "error_rate" else ".4g"
                    data += _traces(s, PALETTE[k % len(PALETTE)], x, fmt)
                    k += 1
        if not data:
            continue
        caption = f"{m.title}: the mean over the runs at each value{over}"
        banded = any(t.get("fill") for t in data)
        caption += ", the band from the fewest to the most." if banded else "."
        blocks.append(_chart(f"{m.title} by {f}", data, f, m.y_title, axis, m.layout, caption))
    shares: list[dict[str, Any]] = []
    k = 0
    for t in rows.thresholds:
        for g, rs in parts:
            s = pass_share(rs, xs, t, ", ".join(p for p in (t, g) if p))
            if any(v is not None for v in s.mean):
                shares += _traces(s, PALETTE[k % len(PALETTE)], x, ".0%")
                k += 1
    if shares:
        y = {"tickformat": ".0%", "range": [0, 1.05], "rangemode": "normal"}
        caption = f"The share of the runs at each value{over} in which the threshold held."
        blocks.append(
            _chart(f"Runs passing each threshold by {f}", shares, f, "share of runs", axis, y, caption)
        )
    if not blocks:
        blocks.append(tag("p", "No figure of interest was measured in these rows.", class_="note"))
    return blocks


def _chart(
    title: str, data: list[dict[str, Any]], f: str, y_title: str, x_axis: dict[str, Any],
    y_axis: dict[str, Any], caption: str,
) -> Figure:  # fmt: skip
    fig = chart(label(title), data, label(f), y_title, caption, hovermode="closest")
    fig.layout["xaxis"] |= x_axis
    fig.layout["yaxis"] |= y_axis
    return fig


# -- tables and the page ----------------------------------------------------------------------


def _verdicts(row: dict[str, Any], thresholds: Sequence[str]) -> tuple[Cell, bool]:
    """A row's thresholds in one cell (✓ all hold, or ✗ and the crossed ones), and whether any crossed."""
    judged = [(t, row.get(f"threshold[{t}].ok")) for t in thresholds]
    crossed = [t for t, ok in judged if ok is False]
    if crossed:
        return Html('<span class="fail">✗ </span>' + esc("; ".join(crossed), MESSAGE_LIMIT)), True
    if any(ok is True for _, ok in judged):
        return Html('<span class="pass">✓ all hold</span>'), False
    return None, False


def points_table(rows: SweepRows) -> list[Html | Figure]:
    """A line per point (the first MAX_ROWS): its values, its runs, the share of them passing
    each threshold."""
    points: dict[int, list[dict[str, Any]]] = {}
    for r in rows.rows:
        points.setdefault(r["point"], []).append(r)
    ts = rows.thresholds
    heads = ["point", *rows.fields, "runs", *(f"pass: {t}" for t in ts)]
    if len(ts) > 1:
        heads.append("pass: all")
    body: list[list[Cell]] = []
    classes: list[str | None] = []
    for p, rs in list(points.items())[:MAX_ROWS]:
        cells: list[Cell] = [p, *(_shown(rs[0].get(f)) for f in rows.fields), len(rs)]
        failed = False
        judged_all = [r for r in rs if any(r.get(f"threshold[{t}].ok") is not None for t in ts)]
        for t in ts:
            oks = [r.get(f"threshold[{t}].ok") for r in rs if r.get(f"threshold[{t}].ok") is not None]
            passed = sum(1 for v in oks if v)
            failed |= passed < len(oks)
            cells.append(f"{passed}/{len(oks)} ({passed / len(oks):.0%})" if oks else "–")
        if len(ts) > 1:
            held = sum(1 for r in judged_all if not _verdicts(r, ts)[1])
            cells.append(f"{held}/{len(judged_all)} ({held / len(judged_all):.0%})" if judged_all else "–")
        body.append(cells)
        classes.append("fail" if failed else None)
    n = len(rows.fields)
    blocks: list[Html | Figure] = [table(heads, body, numeric=[0, n + 1, *range(n + 2, len(heads))],
                                         row_class=classes, text=range(1, n + 1))]  # fmt: skip
    if len(points) > MAX_ROWS:
        blocks.append(tag("p", f"The first {MAX_ROWS:,} of {len(points):,} points.", class_="note"))
    return blocks


def rows_table(rows: SweepRows) -> list[Html | Figure]:
    """The rows (the first MAX_ROWS), with the figures of interest, filterable."""
    routes, workloads, ts = rows.names("route"), rows.names("workload"), rows.thresholds
    heads = ["point", *rows.fields, "run", "seed"]
    cols: list[tuple[str, str]] = []  # (column, how to show it)
    for r in routes:
        cols += [
            (f"route[{r}].failed", "n"),
            (f"route[{r}].error_rate", "%"),
            (f"route[{r}].latency.p95_ms", "n"),
        ]
        heads += [f"{r} failed", f"{r} error %", f"{r} p95 ms"]
    for w in workloads:
        cols += [(f"workload[{w}].restarts", "n"), (f"workload[{w}].min_ready_after_ramp", "n")]
        heads += [f"{w} restarts", f"{w} fewest ready after ramp"]
    if ts:
        heads.append("thresholds")
    body: list[list[Cell]] = []
    classes: list[str | None] = []
    for row in rows.rows[:MAX_ROWS]:
        cells: list[Cell] = [
            row["point"],
            *(_shown(row.get(f)) for f in rows.fields),
            row["run"],
            row["seed"],
        ]
        for c, how in cols:
            v = row.get(c)
            cells.append("–" if v is None else f"{100 * v:.2f}" if how == "%" else v)
        crossed = False
        if ts:
            cell, crossed = _verdicts(row, ts)
            cells.append(cell)
        body.append(cells)
        classes.append("fail" if crossed else None)
    n = len(rows.fields)
    numeric = [0, *range(n + 1, len(heads) - (1 if ts else 0))]
    text = [*range(1, n + 1), *([len(heads) - 1] if ts else [])]
    note = (
        f"{len(rows.rows):,} rows, one per run"
        + (
            f"; the first {MAX_ROWS:,} are shown, the rows file has them all"
            if len(rows.rows) > MAX_ROWS
            else ""
        )
        + ". Every column (failures by cause, p50/p99, …) is in the rows file."
    )
    return [
        filter_box("rows", "row", "a value, a seed, ✗…", "the rows"),
        table(heads, body, id="rows", numeric=numeric, row_class=classes, text=text),
        tag("p", note, class_="note"),
    ]


def sweep_sections(rows: SweepRows) -> list[Section]:
    """The sweep's page: a section per swept field, the points, the rows."""
    sections = [
        Section(f"field-{i + 1}", f"By {f}", field_figures(rows, f))
        for i, f in enumerate(rows.fields[:MAX_NAMES])
    ]
    if len(rows.fields) > MAX_NAMES:
        more = f"{len(rows.fields):,} fields were swept; the first {MAX_NAMES} are drawn."
        sections.append(Section("more-fields", "More fields", [tag("p", more, class_="note")]))
    if not rows.fields:
        sections.append(Section("fields", "Swept fields", [tag(
            "p", "No field was swept (probesim sweep without --set): the runs differ by seed only.",
            class_="note")]))  # fmt: skip
    sections.append(Section("points", "Points", points_table(rows)))
    sections.append(Section("rows", "Rows", rows_table(rows)))
    return sections


def render_sweep(rows: SweepRows) -> str:
    """The HTML page of a sweep, from its checked rows."""
    points = len({r["point"] for r in rows.rows})
    fields = ", ".join(rows.fields) or "no field"
    runs = len(rows.rows)
    return page(
        f"probesim sweep: {rows.file}",
        sweep_sections(rows),
        f"{fields} — {points:,} point{'s' if points != 1 else ''}, {runs:,} run{'s' if runs != 1 else ''}",
    )
