"""The report people look at: one self-contained HTML file, offline, with plotly.js embedded.

A page is a list of ``Section``s, each a list of blocks: trusted markup (``Html``, built only
from escaped pieces) and ``Figure``s (plotly data and layout, drawn by the embedded plotly.js).
``page()`` assembles any list of sections, so each page (a run's: report/run_page.py, a
sweep's figure per swept field, a tune's Pareto front) is a function building sections, not a
new template. ``load_result()`` reads and checks the JSON ``probesim run --json`` writes.

User text (names, messages, paths) is escaped everywhere it lands: in the markup
(``html.escape``), inside plotly's labels (plotly reads a subset of HTML in text, so it gets
entities too) and in the embedded JSON (``<``, ``>``, ``&`` as ``\\u003c``…, so nothing can end a
script element). A Content-Security-Policy without any source forbids every network request.
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probesim.errors import InputError
from probesim.results.document import ResultDoc, parse_result
from probesim.safe import MESSAGE_LIMIT, NAME_LIMIT, visible

# -- markup -----------------------------------------------------------------------------------


class Html(str):
    """Markup that is safe to insert as it is: made only by ``esc``, ``tag`` and the builders here."""

    __slots__ = ()


def esc(text: object, limit: int = NAME_LIMIT) -> Html:
    """User text as HTML text: cut, control and bidi characters as escapes (probesim.safe), and
    ``& < > " '`` as entities. ``Html`` passes through unchanged."""
    if isinstance(text, Html):
        return text
    return Html(html.escape(visible(str(text), limit), quote=True))


def tag(name: str, *children: object, **attrs: str | None) -> Html:
    """``<name attrs>children</name>``; attribute values and plain-text children are escaped.
    ``class_`` gives ``class``; an attribute whose value is None is left out."""
    shown = "".join(
        f' {k.rstrip("_").replace("_", "-")}="{html.escape(v, quote=True)}"'
        for k, v in attrs.items()
        if v is not None
    )
    return Html(f"<{name}{shown}>{''.join(esc(c, MESSAGE_LIMIT) for c in children)}</{name}>")


def join(parts: Iterable[object]) -> Html:
    return Html("".join(esc(p, MESSAGE_LIMIT) for p in parts))


Cell = str | int | float | Html | None


def _cell(value: Cell) -> Html:
    if value is None:
        return Html("")
    if isinstance(value, float):
        return Html(f"{value:g}")
    return esc(value, MESSAGE_LIMIT)


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Cell]],
    id: str | None = None,
    numeric: Iterable[int] = (),
    row_class: Sequence[str | None] | None = None,
    text: Iterable[int] | None = None,
) -> Html:
    """A table; cells are escaped unless they are ``Html``. ``numeric`` columns align right;
    ``text`` columns (names, messages: all when None) wrap, anywhere if they must; the others
    (times, reasons, verdicts) stay on one line."""
    num, free = set(numeric), set(range(len(headers))) if text is None else set(text)
    cls = {i: "num" if i in num else "text" if i in free else None for i in range(len(headers))}
    head = join(tag("th", h, class_=cls[i]) for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        cells = join(
            Html(f'<td class="{cls[i]}">{_cell(v)}</td>' if cls.get(i) else f"<td>{_cell(v)}</td>")
            for i, v in enumerate(row)
        )
        rc = row_class[r] if row_class is not None else None
        body.append(Html(f"<tr{f' class={chr(34)}{rc}{chr(34)}' if rc else ''}>{cells}</tr>"))
    return Html(
        f'<div class="scroll"><table{f" id={chr(34)}{html.escape(id)}{chr(34)}" if id else ""}>'
        f"<thead><tr>{head}</tr></thead><tbody>{join(body)}</tbody></table></div>"
    )


def filter_box(table_id: str, prefix: str, examples: str, what: str) -> Html:
    """A search box filtering the table ``table_id`` (each word typed must appear in a row) and
    its count of rows shown; ids ``{prefix}-filter`` and ``{prefix}-count``. Arguments are the
    code's, not users'."""
    return Html(
        f'<p><input id="{prefix}-filter" class="filter" type="search" data-table="{table_id}" '
        f'data-count="{prefix}-count" '
        f'placeholder="Filter: words that must all appear ({html.escape(examples)})" '
        f'aria-label="Filter {html.escape(what)}"> <span id="{prefix}-count" class="note"></span></p>'
    )


# -- figures and pages ------------------------------------------------------------------------


@dataclass
class Figure:
    """One plotly chart: its traces and layout as plotly.js takes them. Text in them that came
    from users goes through ``label()``; ``page()`` gives the figure its element id."""

    data: list[dict[str, Any]]
    layout: dict[str, Any]
    caption: str = ""  # what it shows, under the chart (plain text)


@dataclass
class Section:
    """A part of the page, with an anchor in the page's table of contents."""

    id: str  # a plain [a-z0-9-] anchor chosen by the code, not by users
    title: str
    blocks: list[Html | Figure] = field(default_factory=list)


def chart(
    title: str, traces: list[dict[str, Any]], x_title: str, y_title: str, caption: str = "", **layout: Any
) -> Figure:
    """A figure for any page, e.g. a sweep's figure per swept field or a tune's Pareto front:
    ``chart(label(field), [{"type": "scatter", "mode": "markers", "x": xs, "y": ys,
    "name": label(name)}], label(field), "failed requests")``. Titles, trace names and hover
    text that hold user text go through ``label()``; ``layout`` adds to plotly's layout."""
    return Figure(
        traces,
        {
            "title": {"text": title, "font": {"size": 15}},
            "xaxis": {"title": {"text": x_title}, "zeroline": False},
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 45},
            "legend": {"orientation": "h", "y": -0.22},
            **layout,
        },
        caption,
    )


def label(text: object, limit: int = NAME_LIMIT) -> str:
    """User text for a plotly label (trace name, title, hover text): plotly renders a subset of
    HTML tags in them, so tags and entities are escaped, and shown as typed."""
    return str(esc(text, limit))


def _json_for_script(value: Any) -> str:
    """JSON that can sit inside a <script> element whatever strings it holds."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff}
header{padding:16px 24px;border-bottom:1px solid #d0d7de;background:#f6f8fa}
header h1{margin:0 0 4px;font-size:20px;word-break:break-all}
header p{margin:0;color:#57606a}
nav{padding:8px 24px;border-bottom:1px solid #d0d7de;font-size:14px}
nav a{margin-right:16px}
main{padding:0 24px 48px;max-width:1400px}
section{margin-top:24px}
h2{font-size:17px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3,summary{font-size:15px;font-weight:600;margin:16px 0 4px;word-break:break-all}
summary{cursor:pointer}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border-bottom:1px solid #d8dee4;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td{white-space:nowrap}
td.text{white-space:normal;overflow-wrap:anywhere;min-width:6em;max-width:60em}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.scroll{overflow-x:auto}
tr.warning td{color:#9a6700}
tr.fail td,.fail{color:#cf222e}
.pass{color:#1a7f37}
.chart{width:100%;height:340px}
.caption{color:#57606a;font-size:13px;margin:0 0 12px}
.note{color:#57606a;font-size:13px}
input.filter{width:28em;max-width:100%;padding:4px 6px;font-size:14px}
"""

# Draws every figure; filters each filterable table (each word typed must appear in a row).
_SCRIPT = """
(function () {
  var figs = JSON.parse(document.getElementById('probesim-figures').textContent);
  var config = {displaylogo: false, responsive: true};
  figs.forEach(function (f) { Plotly.newPlot(f.id, f.data, f.layout, config); });
  document.querySelectorAll('input[data-table]').forEach(function (box) {
    var rows = Array.prototype.slice.call(
      document.querySelectorAll('#' + box.getAttribute('data-table') + ' tbody tr'));
    var texts = rows.map(function (r) { return r.textContent.toLowerCase(); });
    var count = document.getElementById(box.getAttribute('data-count'));
    function apply() {
      var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (r, i) {
        var ok = words.every(function (w) { return texts[i].indexOf(w) >= 0; });
        r.hidden = !ok;
        if (ok) { shown += 1; }
      });
      count.textContent = shown + ' of ' + rows.length + ' rows';
    }
    box.addEventListener('input', apply);
    apply();
  });
})();
"""


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]  # 5 MB, read when a page is made

    return str(get_plotlyjs())


def page(title: str, sections: Sequence[Section], subtitle: str = "") -> str:
    """The whole HTML document: ``sections`` in order, a table of contents, every figure drawn
    by the embedded plotly.js. ``title`` and ``subtitle`` are plain text (escaped here)."""
    figures: list[dict[str, Any]] = []
    parts: list[Html] = []
    for s in sections:
        blocks: list[Html] = [tag("h2", s.title)]
        for b in s.blocks:
            if isinstance(b, Figure):
                fid = f"figure-{len(figures) + 1}"
                figures.append({"id": fid, "data": b.data, "layout": b.layout})
                blocks.append(Html(f'<div class="chart" id="{fid}"></div>'))
                if b.caption:
                    blocks.append(tag("p", b.caption, class_="caption"))
            else:
                blocks.append(b)
        parts.append(Html(f'<section id="{html.escape(s.id)}">{join(blocks)}</section>'))
    nav = join(Html(f'<a href="#{html.escape(s.id)}">{esc(s.title)}</a>') for s in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style>"
        f"<script>{_plotly_js()}</script></head>\n<body>"
        f"<header>{tag('h1', title)}{tag('p', subtitle) if subtitle else ''}</header>"
        f"<nav>{nav}</nav><main>{join(parts)}</main>\n"
        f'<script type="application/json" id="probesim-figures">{_json_for_script(figures)}</script>\n'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


# -- the result document ----------------------------------------------------------------------


MAX_INPUT_BYTES = 128 << 20  # a result or a sweep's rows: parsed, more takes gigabytes


def _read_at_most(f: Any) -> bytes:
    """Up to MAX_INPUT_BYTES + 1 bytes, in chunks: ``read(n)`` would set aside ``n`` bytes at once."""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_INPUT_BYTES:
        chunk = f.read(min(16 << 20, MAX_INPUT_BYTES + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_input(path: str) -> bytes:
    """A file's bytes ('-': standard input), at most MAX_INPUT_BYTES, or an InputError naming it."""
    try:
        if path == "-":
            data = _read_at_most(sys.stdin.buffer)
        else:
            with Path(path).open("rb") as f:
                data = _read_at_most(f)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=path) from None
    except ValueError as e:  # a path with a NUL
        raise InputError(f"cannot read: {e}", file=path) from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"larger than {MAX_INPUT_BYTES >> 20} MiB: too large to make a page of", file=path)
    return data


def parse_json(data: bytes, path: str, what: str) -> Any:
    """JSON from a file's bytes, or an InputError naming the file and what is wrong."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"not {what}: the file is not UTF-8 text", file=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            f"not JSON ({e.msg}, column {e.colno}): not {what}", file=path, line=e.lineno
        ) from None
    except RecursionError:
        raise InputError(f"not {what}: nested too deeply", file=path) from None
    except ValueError:  # a number of more digits than Python converts (4300)
        raise InputError(f"not {what}: a number with thousands of digits", file=path) from None


def _read_json(path: str, what: str) -> Any:
    """A JSON file ('-': standard input), or an InputError naming it and what is wrong."""
    return parse_json(read_input(path), path, what)


RESULT_WHAT = "a probesim result (write one with probesim run --json)"


def load_result(path: str) -> ResultDoc:
    """Read and check a result file written by ``probesim run --json`` ('-': standard input)."""
    return parse_result(_read_json(path, RESULT_WHAT), path)


def load_check(path: str) -> dict[str, Any]:
    """Read a ``probesim check --format json`` report, for its findings."""
    doc = _read_json(path, "a check report (write one with probesim check --format json)")
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != "CheckReport"
        or not isinstance(doc.get("findings"), list)
    ):
        raise InputError(
            "not a check report: expected an object of kind CheckReport with findings "
            "(write one with probesim check --format json)",
            file=path,
        )
    return doc


def write_page(text: str, path: Path) -> None:
    """Write a page; a path that cannot be written is an InputError naming it."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write the report: {e.strerror}", file=str(path)) from None
