"""A tune's page of the HTML report (``probesim tune … --report out.html``): the Pareto front of
the study drawn two ways (failed requests against the time a hung pod stays in service, and
against needless restarts), the current and recommended settings marked, the front as a table
with each probe's timings, and the patches with the commands that apply them.

Built from what ``probesim tune`` prints (probesim.tune.study.Outcome and the patches of
probesim.tune.report), with html.py's blocks; every name is user text and escaped there.
"""

from __future__ import annotations

import html as _html
from typing import TYPE_CHECKING, Any

from probesim.report.html import Cell, Figure, Html, Section, chart, label, page, table, tag
from probesim.safe import MESSAGE_LIMIT, visible

if TYPE_CHECKING:
    from probesim.tune.figures import Figures, Row
    from probesim.tune.inputs import TuneInputs
    from probesim.tune.report import PatchOut
    from probesim.tune.space import Setting, Space
    from probesim.tune.study import Outcome


# Long lines of a patch or a command wrap inside the page (the copy keeps them whole).
WRAP = "white-space:pre-wrap;overflow-wrap:anywhere"


def lines_pre(text: str, **attrs: str) -> Html:
    """Multi-line text probesim wrote (a patch's YAML, a command) in a ``<pre>``: each line made
    safe on its own (markup and control characters escaped) and the newlines kept, so that the
    block reads back as the YAML it is (``visible`` alone would show each newline as \\x0a)."""
    body = "\n".join(_html.escape(visible(line, MESSAGE_LIMIT), quote=True) for line in text.split("\n"))
    shown = "".join(f' {k.rstrip("_")}="{_html.escape(v, quote=True)}"' for k, v in attrs.items())
    return Html(f'<pre{shown} style="{WRAP}">{body}</pre>')


def removal(f: Figures) -> str:
    from probesim.tune.figures import DETECTION_CAP_MS

    return f"{f.detection_s:g} s" if f.detected else f"never (within {DETECTION_CAP_MS // 1000} s)"


def setting_cells(s: Setting, space: Space) -> list[str]:
    """Readiness, liveness and startup timings (and outlier detection), one cell each."""
    from probesim.tune.report import outlier_text, probe_text
    from probesim.tune.space import FIELD_OF

    names = space.containers()
    out = []
    for kind in ("readiness", "liveness", "startup"):
        texts = [probe_text(s.probes.get(c, {}).get(FIELD_OF[kind]), kind == "readiness") for c in names]
        out.append(
            texts[0] if len(names) == 1 else "; ".join(f"{c}: {t}" for c, t in zip(names, texts, strict=True))
        )
    if space.rule is not None:
        out.append(outlier_text(s.outlier))
    return out


def _name(r: Row) -> str:
    return "current setting" if r.number is None else f"trial {r.number}"


def _hover(r: Row, space: Space) -> str:
    f = r.figures
    cells = setting_cells(r.setting, space)
    heads = ["readiness", "liveness", "startup", "outlier detection"]
    settings = "<br>".join(label(f"{h}: {c}") for h, c in zip(heads, cells, strict=False))
    return (
        f"{_name(r)}<br>{f.failed} failed, {f.restarts} needless restarts, hung pod out after "
        f"{removal(f)}, {f.flaps} flaps<br>{settings}"
    )


def _front_figures(o: Outcome, space: Space) -> list[Html | Figure]:
    rec = o.recommended
    # The current setting may be on the front too (no trial beats it): drawn once, as itself.
    rest = [r for r in o.front if r.number is not None and (rec is None or r.number != rec.number)]
    groups: list[tuple[str, list[Row], dict[str, Any]]] = [
        ("Pareto front", rest, {"symbol": "circle", "size": 10, "color": "#0969da"}),
        ("current setting", [o.current], {"symbol": "diamond", "size": 13, "color": "#6e7781"}),
    ]
    if rec is not None:
        groups.append(
            (f"recommended (trial {rec.number})", [rec], {"symbol": "star", "size": 16, "color": "#1a7f37"})
        )
    blocks: list[Html | Figure] = []
    for y_title, attr, title in (
        ("hung pod in service (s)", "detection_s", "Failed requests and hung-pod removal"),
        ("needless restarts", "restarts", "Failed requests and needless restarts"),
    ):
        data = [
            {"type": "scatter", "mode": "markers", "name": name, "x": [r.figures.failed for r in rows],
             "y": [getattr(r.figures, attr) for r in rows], "text": [_hover(r, space) for r in rows],
             "hovertemplate": "%{text}<extra></extra>", "marker": marker}
            for name, rows, marker in groups
            if rows
        ]  # fmt: skip
        blocks.append(chart(title, data, "failed requests", y_title, hovermode="closest"))
    blocks[0].caption = (  # type: ignore[union-attr]
        "Each trial on the Pareto front (no other trial is better on all three objectives), the current "
        "setting and the recommended one. A hung pod never taken out of service is drawn at the hung "
        "run's cap."
    )
    return blocks


def _front_table(o: Outcome, space: Space) -> Html:
    heads = [
        "setting",
        "failed",
        "needless restarts",
        "hung pod out after",
        "all replicas back after",
        "Ready after app answers",
        "probes/s per pod",
        "flaps",
        "readiness",
        "liveness",
        "startup",
    ]
    if space.rule is not None:
        heads.append("outlier detection")
    rows: list[list[Cell]] = []
    classes: list[str | None] = []
    rec = None if o.recommended is None else o.recommended.number
    for r in [o.current, *(r for r in o.front if r.number is not None)]:
        f = r.figures
        chosen = r.number is not None and r.number == rec
        on_front = r.number is None and (o.current_on_front or any(t.number is None for t in o.front))
        name: Cell = _name(r) + (" (recommended)" if chosen else " (on the front)" if on_front else "")
        figs: list[Cell] = [f.failed, f.restarts, removal(f), _secs(f.recovery_s), _secs(f.ready_s)]
        rows.append([name, *figs, round(f.probe_rps, 3), f.flaps, *setting_cells(r.setting, space)])
        classes.append("pass" if chosen else None)
    return table(heads, rows, numeric=[1, 2, 6, 7], row_class=classes, text=range(8, len(heads)))


def _secs(v: float) -> str:
    from probesim.tune.figures import DETECTION_CAP_MS

    return f"never (within {DETECTION_CAP_MS // 1000} s)" if v >= DETECTION_CAP_MS / 1000 else f"{v:g} s"


def tune_sections(o: Outcome, inputs: TuneInputs, patches: list[PatchOut]) -> list[Section]:
    from probesim.tune.patch import wrapped_command
    from probesim.tune.space import Space

    space = Space(inputs.workload, inputs.rule, inputs.added, inputs.app, inputs.handlers)
    objectives = (
        "Objectives, each over the stress suite" + (" and the scenario" if inputs.given else "") + ": failed "
        "requests, needless restarts; for a pod that hangs for good (a restart cures it), how long it stays "
        "in service and how long until all replicas are Ready again; how long a new pod takes to be "
        "Ready once its app answers; probe requests per second per pod. Probe cells: period/timeout "
        "×failures (✓successes) +initial delay."
    )
    front = Section("front", "Pareto front", [*_front_figures(o, space), tag("p", objectives, class_="note"),
                                              _front_table(o, space)])  # fmt: skip
    blocks: list[Html | Figure] = [tag("p", ("Chosen: " if o.recommended else "") + o.why)]
    if o.reasons:
        blocks.append(tag("p", "Why each value (the figure that would be worse with it as it is now):"))
        blocks.append(tag("ul", *(tag("li", line) for line in o.reasons)))
    if o.worse:
        blocks.append(tag("p", "Worse than the current setting on:"))
        blocks.append(tag("ul", *(tag("li", line) for line in o.worse), class_="warn"))
    for p in patches:
        how = "strategic-merge" if p.strategic else "JSON merge (a custom resource)"
        blocks.append(tag("h3", f"Patch of {p.kind}/{p.name} ({how})"))
        blocks.append(lines_pre(p.yaml().rstrip("\n"), class_="patch"))
        if p.kind != "Pod":
            blocks.append(lines_pre(wrapped_command(p.command()), class_="command"))
    return [front, Section("recommendation", "Recommendation", blocks)]


def render_tune(o: Outcome, inputs: TuneInputs, patches: list[PatchOut]) -> str:
    w = inputs.workload
    subtitle = (
        f"study {o.study} ({o.storage}): {o.trials} trials, {o.added} added now"
        + (", stopped by --timeout" if o.timed_out else "")
        + f"; {sum(1 for r in o.front if r.number is not None)} trials on the Pareto front"
        + (
            ", and the current setting"
            if o.current_on_front or any(r.number is None for r in o.front)
            else ""
        )
    )
    return page(f"probesim tune: {w.kind}/{w.name}", tune_sections(o, inputs, patches), subtitle)
