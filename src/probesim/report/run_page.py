"""The HTML page of one run (``probesim report r.json``, ``run --report``): replicas, endpoints,
requests by outcome and cause, latency, restarts, ejections and rollouts over time, the
thresholds, check findings and the events, built from the result document (results/document.py)
with the toolkit of report/html.py."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from probesim.report.html import (
    Cell,
    Figure,
    Html,
    Section,
    chart,
    filter_box,
    label,
    page,
    table,
    tag,
)
from probesim.results import CAUSES, Event
from probesim.results.document import EventDoc, ResultDoc, WorkloadDoc, parse_result
from probesim.safe import MESSAGE_LIMIT

CAUSE_COLORS = {
    "no_endpoint": "#8250df",
    "restarting": "#bf8700",
    "not_answering": "#fb8f44",
    "error_status": "#cf222e",
    "rejected": "#e85aad",
    "timeout": "#6e7781",
    "killed": "#0a3069",
    "dropped": "#a475f9",
    "interrupted": "#57606a",
}
REPLICA_STYLES: dict[str, dict[str, Any]] = {
    "desired": {"dash": "dash", "color": "#6e7781"},
    "current": {"color": "#0969da"},
    "ready": {"color": "#1a7f37", "width": 3},
    "available": {"dash": "dot", "color": "#9a6700"},
}
MAX_BINS = 600  # request and latency charts: at most this many bins over the run
FOLD_ROWS = 20  # a longer table of pods starts folded
MAX_EVENT_ROWS = 5000  # aggregated event rows in the table (the JSON keeps every event)


@dataclass
class _Axis:
    """Time in the run as the charts show it: seconds, or minutes for runs over 10 minutes."""

    seconds: list[float]
    per: float  # seconds per unit
    title: str

    @classmethod
    def of(cls, doc: ResultDoc) -> _Axis:
        minutes = doc.duration > 600
        return cls(
            [float(t or 0) for t in doc.series["time"]] if doc.series else [],
            60.0 if minutes else 1.0,
            "time in the run (min)" if minutes else "time in the run (s)",
        )

    def x(self, seconds: float) -> float:
        return round(seconds / self.per, 6)


def _layout(title: str, axis: _Axis, y_title: str) -> dict[str, Any]:
    """A timeline's layout: time across, hover showing every trace at that time."""
    return chart(title, [], axis.title, y_title, hovermode="x unified").layout


def _changes(axis: _Axis, values: Sequence[float | None]) -> tuple[list[float], list[float | None]]:
    """A step series as the points where it changes (and its last point): drawn with shape 'hv'
    it is the same line, with a handful of points instead of one per step."""
    xs: list[float] = []
    ys: list[float | None] = []
    last = len(values) - 1
    for i, v in enumerate(values):
        if i == 0 or i == last or v != values[i - 1]:
            xs.append(axis.x(axis.seconds[i]))
            ys.append(v)
    return xs, ys


def _step_trace(axis: _Axis, values: Sequence[float | None], name: str, **line: Any) -> dict[str, Any]:
    xs, ys = _changes(axis, values)
    return {
        "type": "scatter",
        "mode": "lines",
        "x": xs,
        "y": ys,
        "name": name,
        "line": {"shape": "hv", **line},
    }


def _bins(doc: ResultDoc) -> int:
    """Steps per bin for the request and latency charts: whole nice seconds, ≤ MAX_BINS bins."""
    n = len(doc.series["time"]) if doc.series else 0
    for seconds in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600):
        k = max(1, math.ceil(seconds / doc.step))
        if math.ceil(n / k) <= MAX_BINS:
            return k
    return max(1, math.ceil(n / MAX_BINS))


def _binned(values: Sequence[float | None], k: int, how: str = "sum") -> list[float | None]:
    out: list[float | None] = []
    for i in range(0, len(values), k):
        chunk = [v for v in values[i : i + k] if v is not None]
        if how == "sum":
            out.append(float(sum(chunk)))
        else:
            out.append(max(chunk) if chunk else None)
    return out


def _marks(xs: list[float], y: float, name: str, texts: list[str], symbol: str, color: str) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "markers",
        "x": xs,
        "y": [y] * len(xs),
        "name": name,
        "text": texts,
        "hovertemplate": "%{text}<extra></extra>",
        "marker": {"symbol": symbol, "size": 11, "color": color},
    }


def _restart_marks(axis: _Axis, cumulative: Sequence[float | None], y: float) -> dict[str, Any] | None:
    xs, texts = [], []
    before = 0.0
    for i, v in enumerate(cumulative):
        now = float(v or 0)
        if now > before:
            n = int(now - before)
            xs.append(axis.x(axis.seconds[i]))
            texts.append(f"{n} container restart{'s' if n != 1 else ''} at {axis.seconds[i]:g} s")
        before = max(before, now)
    return _marks(xs, y, "container restart", texts, "triangle-down", "#cf222e") if xs else None


def _rollouts(doc: ResultDoc) -> list[dict[str, Any]]:
    """The result's rollouts (``summary.rollouts``), each as {workload, start, end, text}: a
    band from its start to its end, what it was and how it ended in its hover text."""
    out = []
    for r in doc.summary.rollouts:
        text = ", ".join(f"{k} {v}" for k, v in r.model_dump().items() if not isinstance(v, dict | list))
        out.append({"workload": r.workload, "start": r.start, "end": r.end, "text": f"rollout: {text}"})
    return out


def _rollout_marks(axis: _Axis, rollouts: list[dict[str, Any]], workload: str, y: float) -> list[Any]:
    """Shapes (a band from start to end) and markers (hover text) for this workload's rollouts."""
    mine = [r for r in rollouts if r["workload"] in (None, workload, f"deployment/{workload}")]
    if not mine:
        return []
    shapes = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": axis.x(r["start"]),
            "x1": axis.x(r["end"] if r["end"] is not None else r["start"]),
            "y0": 0,
            "y1": 1,
            "fillcolor": "#0969da",
            "opacity": 0.08,
            "line": {"width": 1, "color": "#0969da"},
        }
        for r in mine
    ]
    trace = _marks(
        [axis.x(r["start"]) for r in mine], y, "rollout", [label(r["text"], MESSAGE_LIMIT) for r in mine],
        "diamond", "#0969da",
    )  # fmt: skip
    return [shapes, trace]


def _ejection_marks(axis: _Axis, events: Sequence[EventDoc], y: float) -> dict[str, Any] | None:
    xs, texts = [], []
    for e in events:
        if e.reason != "OutlierEject":
            continue
        try:
            host = str(json.loads(e.message).get("upstream_url", ""))
        except (ValueError, AttributeError):  # a message that is not Envoy's JSON event
            host = ""
        xs.append(axis.x(e.time))
        texts.append(label(f"{e.object} ejected {host}".strip() + f" at {e.time:g} s"))
    return _marks(xs, y, "outlier ejection", texts, "x", "#cf222e") if xs else None


def _workload_figures(doc: ResultDoc, axis: _Axis) -> list[Html | Figure]:
    assert doc.series is not None
    rollouts = _rollouts(doc)
    blocks: list[Html | Figure] = []
    for w in doc.summary.workloads:
        key = f"workload.{w.name}"
        data = [
            _step_trace(axis, doc.series[f"{key}.{m}"], m, **style)
            for m, style in REPLICA_STYLES.items()
            if f"{key}.{m}" in doc.series
        ]
        if not data:
            continue
        top = max((v or 0) for t in data for v in t["y"])
        layout = _layout(label(f"{w.kind.lower()}/{w.name}: replicas"), axis, "replicas")
        if f"{key}.restarts" in doc.series:
            mark = _restart_marks(axis, doc.series[f"{key}.restarts"], 0)
            if mark:
                data.append(mark)
        rollout = _rollout_marks(axis, rollouts, w.name, top + 0.5)
        if rollout:
            layout["shapes"] = rollout[0]
            data.append(rollout[1])
        blocks.append(
            Figure(data, layout, "Desired, current, ready and available replicas; ▼ container restarts"
                   + ("; ◆ rollouts" if rollout else "") + ".")
        )  # fmt: skip
    restarts = [
        _step_trace(axis, doc.series[f"workload.{w.name}.restarts"], label(w.name))
        for w in doc.summary.workloads
        if f"workload.{w.name}.restarts" in doc.series
    ]
    if restarts and any(w.restarts for w in doc.summary.workloads):
        blocks.append(
            Figure(
                restarts,
                _layout("Container restarts", axis, "restarts so far"),
                "Container restarts since the start of the run, per workload (all its pods).",
            )
        )
    return blocks


def _endpoint_figure(doc: ResultDoc, axis: _Axis) -> Figure | None:
    assert doc.series is not None
    services = sorted(
        {k[len("service.") :].rsplit(".", 1)[0] for k in doc.series if k.startswith("service.")}
    )
    data = []
    for s in services:
        key = f"service.{s}"
        data.append(_step_trace(axis, doc.series[f"{key}.ready"], label(f"{s} ready")))
        for m, dash in (("serving", "dot"), ("terminating", "dash")):
            v = doc.series.get(f"{key}.{m}")
            if v is not None and any(v) and v != doc.series[f"{key}.ready"]:
                data.append(_step_trace(axis, v, label(f"{s} {m}"), dash=dash))
    for r in doc.summary.routes:
        v = doc.series.get(f"route.{r.name}.ejections_active")
        if v is not None and any(v):
            data.append(
                _step_trace(
                    axis, v, label(f"route {r.name}: ejections in force"), dash="dot", color="#cf222e"
                )
            )
    if not data:
        return None
    mark = _ejection_marks(axis, doc.events, 0)
    if mark:
        data.append(mark)
    return Figure(
        data,
        _layout("Endpoints", axis, "endpoints"),
        "Each Service's ready endpoints (and serving / terminating ones when they differ); hosts "
        "ejected by client sidecars' outlier detection, ✕ each ejection.",
    )


def _request_figures(doc: ResultDoc, axis: _Axis) -> list[Html | Figure]:
    assert doc.series is not None
    k = _bins(doc)
    width = k * doc.step
    starts = [axis.x(s) for s in axis.seconds[::k]]
    blocks: list[Html | Figure] = []
    for r in doc.summary.routes:
        key = f"route.{r.name}"
        outcomes = [("ok", "#1a7f37")] + [(c, CAUSE_COLORS[c]) for c in (*CAUSES, "dropped", "interrupted")]
        data = []
        for name, color in outcomes:
            v = doc.series.get(f"{key}.{name}")
            if v is None or (name != "ok" and not any(v)):
                continue
            rate = [None if b is None else round(b / width, 4) for b in _binned(v, k)]
            shown = "ok" if name == "ok" else f"failed: {name}" if name in CAUSES else name
            data.append({
                "type": "scatter", "mode": "lines", "x": starts, "y": rate, "name": shown,
                "stackgroup": "requests", "line": {"shape": "hv", "color": color, "width": 1},
            })  # fmt: skip
        if data:
            blocks.append(Figure(
                data,
                _layout(label(f"route {r.name} → {r.service}: requests"), axis, "requests per second"),
                f"Requests per second by outcome, stacked, averaged over {width:g} s: answered ok, "
                "failed by cause, dropped (no free client) and interrupted.",
            ))  # fmt: skip
        lat: list[dict[str, Any]] = []
        for q, dash in (("p50_ms", "solid"), ("p95_ms", "dash"), ("p99_ms", "dot"), ("max_ms", "longdash")):
            v = doc.series.get(f"{key}.{q}")
            if v is None:
                continue
            # A step in which nothing was answered records 0 ms: a gap, not a fast answer.
            v = [x or None for x in v]
            ys = _binned(v, k, "max")
            lat.append({"type": "scatter", "mode": "lines", "x": starts, "y": ys, "name": q[:-3],
                        "connectgaps": False, "line": {"dash": dash}})  # fmt: skip
        seen = [y for t in lat for y in t["y"] if y]
        if seen:
            layout = _layout(label(f"route {r.name}: latency"), axis, "milliseconds")
            if max(seen) > 100 * min(seen):  # a fast median and a timeout tail: both readable
                layout["yaxis"] |= {"type": "log", "rangemode": "normal"}
            blocks.append(Figure(
                lat,
                layout,
                "Latency quantiles of the answers clients got"
                + (f" (the highest step in each {width:g} s)" if k > 1 else " each step")
                + "; gaps where nothing was answered.",
            ))  # fmt: skip
    return blocks


def _summary_tables(doc: ResultDoc) -> list[Html | Figure]:
    blocks: list[Html | Figure] = []
    if doc.summary.routes:
        # The failure causes that happened (on any route), each a column.
        causes = [c for c in CAUSES if any(r.failedByCause.get(c) for r in doc.summary.routes)]
        heads = ["route", "service", "offered", "ok", "failed", "error %", "dropped", "interrupted",
                 "in flight", "p50 ms", "p95 ms", "p99 ms", "no endpoint s"]  # fmt: skip
        heads += [f"failed: {c}" for c in causes]
        rows: list[list[Cell]] = [
            [r.name, r.service, r.offered, r.ok, r.failed, f"{100 * r.errorRate:.2f}", r.dropped,
             r.interrupted, r.inFlight, *(r.latencyMs.get(q, "–") for q in ("p50", "p95", "p99")),
             r.noEndpointSeconds, *(r.failedByCause.get(c, 0) for c in causes)]
            for r in doc.summary.routes
        ]  # fmt: skip
        blocks += [tag("h3", "Requests"), table(heads, rows, numeric=range(2, len(heads)), text=[0, 1])]
    # After the ramp: from the first time all replicas were Ready (results written before it
    # existed have no such fields: "–").
    heads = ["workload", "replicas", "restarts", "first ready s", "all ready s", "min ready",
             "min ready after ramp", "avg ready", "min available", "min available after ramp"]  # fmt: skip
    rows = [
        [f"{w.kind.lower()}/{w.name}", w.replicas, w.restarts, _never(w.firstReady), _never(w.allReady),
         w.minReady, _after_ramp(w, "minReadyAfterRamp"), f"{w.avgReady:.2f}", w.minAvailable,
         _after_ramp(w, "minAvailableAfterRamp")]
        for w in doc.summary.workloads
    ]  # fmt: skip
    blocks += [tag("h3", "Workloads"), table(heads, rows, numeric=range(1, len(heads)), text=[0])]
    restarted = [(p, n) for w in doc.summary.workloads for p, n in w.restartsByPod.items() if n]
    if restarted:
        # Most restarted first; a long list folded (a 1,000-pod run would push the charts away).
        restarted.sort(key=lambda pn: -pn[1])
        pods = table(["pod", "restarts"], restarted, numeric=[1], text=[0])
        top, n = restarted[0]
        head = tag("summary", f"Restarts by pod: {len(restarted):,} pods restarted (most: {top}, {n})")
        folded = " open" if len(restarted) <= FOLD_ROWS else ""
        blocks.append(Html(f"<details{folded}>{head}{pods}</details>"))
    return blocks


def _after_ramp(w: WorkloadDoc, key: str) -> Cell:
    if key not in w.model_fields_set:
        return "–"
    v = getattr(w, key)
    return "never all ready" if v is None else int(v)


def _never(seconds: float | None) -> Cell:
    return "never" if seconds is None else seconds


def _verdict(value: Any) -> Html | None:
    if value is True:
        return Html('<span class="pass">✓ pass</span>')
    if value is False:
        return Html('<span class="fail">✗ fail</span>')
    return None


def _value_cell(value: Any, unit: Any) -> Cell:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "not measured"
    if unit == "fraction":
        return f"{100 * value:.3g} %"
    if unit == "fraction of spec.replicas":
        return f"{100 * value:.3g} % of spec.replicas"
    return f"{value:g} {unit}" if isinstance(unit, str) and unit != "count" else f"{value:g}"


def _thresholds_section(doc: ResultDoc) -> Section | None:
    """The thresholds and their verdicts, when the result has them."""
    items = doc.thresholds
    if not items:
        return None
    rows: list[list[Cell]] = [
        [_verdict(i.ok), i.threshold, i.of, _value_cell(i.value, i.unit), i.note] for i in items
    ]
    classes = [None if i.ok else "fail" for i in items]
    crossed = sum(1 for i in items if not i.ok)
    note = f"{crossed} of {len(items)} crossed" if crossed else f"all {len(items)} hold"
    heads = ["verdict", "threshold", "of", "value", "note"]
    verdicts = table(heads, rows, row_class=classes, text=[1, 2, 4])
    return Section("thresholds", f"Thresholds: {note}", [verdicts])


def _findings_section(check: Any) -> Section | None:
    """The check's findings (``probesim check --format json``), when given."""
    if not isinstance(check, dict) or not isinstance(check.get("findings"), list):
        return None
    findings = [f for f in check["findings"] if isinstance(f, dict)]
    if not findings:
        return Section("findings", "Check findings", [tag("p", "No findings.", class_="note")])
    heads = ["severity", "rule", "object", "where", "message", "fix"]
    rows = [
        [f.get("severity"), f"{f.get('rule', '')} {f.get('name', '')}".strip(), f.get("object"),
         f"{f.get('file', '')}:{f.get('line', '')}" + (f" [{f['container']}]" if f.get("container") else ""),
         f.get("message"), f.get("fix")]
        for f in findings
    ]  # fmt: skip
    classes = ["fail" if f.get("severity") == "error" else "warning" for f in findings]
    return Section("findings", "Check findings", [table(heads, rows, row_class=classes, text=[2, 3, 4, 5])])


def _at(seconds: float) -> str:
    return f"{seconds:g} s"


def _events_section(doc: ResultDoc) -> Section:
    from probesim.report.terminal import aggregate, human_duration

    events = [
        Event(round(e.time * 1000), e.type, e.reason, e.object, e.message, e.source) for e in doc.events
    ]
    rows = aggregate(events)
    shown = rows[:MAX_EVENT_ROWS]
    table_rows: list[list[Cell]] = [
        [
            _at(a.last / 1000),
            a.count,
            "" if a.count == 1 else human_duration(a.last - a.first),
            a.event.type,
            a.event.reason,
            a.event.object,
            a.event.message,
        ]
        for a in shown
    ]
    classes = ["warning" if a.event.type == "Warning" else None for a in shown]
    blocks: list[Html | Figure] = [
        filter_box("events", "event", "pod name, reason, message…", "the events"),
        table(
            ["last seen", "count", "over", "type", "reason", "object", "message"],
            table_rows,
            id="events",
            numeric=[1],
            row_class=classes,
            text=[5, 6],
        ),
        tag(
            "p",
            f"{len(doc.events):,} events in {len(rows):,} rows: a repeat (same object, type, reason "
            "and message) is one row, as kubectl shows it."
            + (
                f" The first {MAX_EVENT_ROWS:,} rows are shown; the JSON result has every event."
                if len(rows) > MAX_EVENT_ROWS
                else ""
            ),
            class_="note",
        ),
    ]
    return Section("events", "Events", blocks)


def run_sections(doc: ResultDoc, check: Any = None) -> list[Section]:
    """The sections of one run's page: summary, thresholds, timelines, findings, events.
    ``check`` is a ``probesim check --format json`` report, or None (the result's own ``check``
    is used when it has one)."""
    sections = [Section("summary", "Summary", _summary_tables(doc))]
    t = _thresholds_section(doc)
    if t:
        sections.append(t)
    if doc.series is not None and doc.series.get("time"):
        axis = _Axis.of(doc)
        sections.append(Section("replicas", "Replicas and restarts", _workload_figures(doc, axis)))
        ep = _endpoint_figure(doc, axis)
        if ep:
            sections.append(Section("endpoints", "Endpoints and ejections", [ep]))
        req = _request_figures(doc, axis)
        if req:
            sections.append(Section("requests", "Requests and latency", req))
    else:
        sections.append(Section("timelines", "Timelines", [tag(
            "p", "This result has no series (it was written with --no-series, or by the lab): no "
            "timelines. probesim run --json writes them.", class_="note")]))  # fmt: skip
    f = _findings_section(check if check is not None else doc.extra.get("check"))
    if f:
        sections.append(f)
    sections.append(_events_section(doc))
    return sections


def render_run(doc: ResultDoc | dict[str, Any], check: Any = None) -> str:
    """The HTML page of one run, from its result (``Result.to_json()`` or a checked document)."""
    if not isinstance(doc, ResultDoc):
        doc = parse_result(doc)
    what = (
        f"ran for real for {doc.duration:g} s"
        if doc.source == "lab"
        else f"simulated {doc.duration:g} s in steps of {doc.step:g} s, seed {doc.seed}"
    )
    return page(f"probesim: {doc.scenario}", run_sections(doc, check), f"{doc.scenario} — {what}")
