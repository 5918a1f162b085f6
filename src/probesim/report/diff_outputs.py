"""``probesim diff`` reports, all from the same DiffReport: text (rich), versioned JSON
(report/diff_document.py holds its schema), Markdown for a pull request's comment and
``$GITHUB_STEP_SUMMARY`` (a table per workload, worst first, the details collapsed, kept under
GitHub's 65,536 characters), and SARIF 2.1.0 of the findings the change introduces (check's
SARIF, located on the after side's files and lines)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from probesim.analysis.check import CheckReport
from probesim.analysis.diff import DiffReport, ObjectChange, ObjRef, WorkloadDiff
from probesim.analysis.diff_figures import Figure, noise_line
from probesim.analysis.findings import Finding
from probesim.manifests.changes import shown_value
from probesim.report.check_outputs import to_sarif
from probesim.safe import MESSAGE_LIMIT, NAME_LIMIT, markup, visible

DIFF_VERSION = "probesim.dev/v1alpha1"
MARKER = "<!-- probesim-diff -->"  # finds the pull request's one comment to update in place
COMMENT_LIMIT = 65_536  # GitHub's limit on a comment's body, in characters
MARKDOWN_BUDGET = 60_000  # what the Markdown is kept under (room for what a workflow adds)
ROW_LIMIT = 50  # rows of a findings, changes or objects table before "… and N more"
STYLE = {"worse": "red", "better": "green", "same": "dim", "n/a": "dim"}


def overall(report: DiffReport) -> str:
    """worse, better, same (changed, nothing moved beyond the noise) or no change."""
    if report.worse():
        return "worse"
    if report.better():
        return "better"
    return "same" if report.changed else "no change"


# ---- values -----------------------------------------------------------------------------------


def _one(v: float | None, unit: str) -> str:
    if v is None:
        return "never" if unit.strip() == "s" else "—"
    if unit.startswith(" /s"):
        return f"{v:g}/s"
    text = f"{v:.0f}" if unit.strip() != "s" or v == int(v) else f"{v:.1f}"
    return text + (" s" if unit.strip() == "s" else "")


def value(values: Sequence[float | None], unit: str) -> str:
    """One side's value over the seeds: one value when they agree, else the range."""
    if not values:
        return "not run"
    if all(v == values[0] for v in values):
        return _one(values[0], unit)
    finite = [v for v in values if v is not None]
    lo, hi = (min(finite), max(finite)) if finite else (None, None)
    top = None if any(v is None for v in values) else hi
    return f"{_one(lo, unit)}–{_one(top, unit)}"


def run_name(f: Figure) -> str:
    return f.run.removeprefix("stress ") if f.run else "all runs"


def field_value(v: Any) -> str:
    s = shown_value(v)
    return "(not set)" if s is None else s


def _headline(w: WorkloadDiff) -> str:
    if not w.simulated:
        return w.note or "not simulated"
    worse, better = w.moved("worse"), w.moved("better")
    parts = []
    if worse:
        parts.append("worse: " + ", ".join(worse))
    if better:
        parts.append("better: " + ", ".join(better))
    return "; ".join(parts) if parts else "the same within the noise"


def _shown(ref: ObjRef) -> str:
    return ref.shown


def _n(n: int, what: str, plural: str | None = None) -> str:
    return f"{n} {what if n == 1 else plural or what + 's'}"


def summary_line(report: DiffReport) -> str:
    simulated = sum(1 for w in report.workloads if w.simulated)
    return (
        f"{_n(len(report.workloads), 'workload')} changed ({simulated} simulated): "
        f"{_n(len(report.worse()), 'figure')} worse, {len(report.better())} better; "
        f"{_n(len(report.new_findings), 'new finding')}, {len(report.resolved_findings)} resolved; "
        f"{_n(len(report.added), 'object')} added, {len(report.removed)} removed, "
        f"{len(report.other)} other changed, {report.unchanged} unchanged"
    )


def shown_rows(w: WorkloadDiff, every: bool = False) -> list[Figure]:
    """The rows of a workload's table: the figures of all runs, then each run's that moved (all
    of them with ``every``), worse first."""
    rows = [f for f in w.figures if not f.run or every or f.verdict in ("worse", "better")]
    rank = {"worse": 0, "better": 1, "same": 2, "n/a": 3}
    return sorted(rows, key=lambda f: (bool(f.run), rank[f.verdict]))


def run_rows(w: WorkloadDiff) -> list[Figure]:
    """Each run's figures, in the runs' order."""
    return [f for f in w.figures if f.run]


# ---- text -------------------------------------------------------------------------------------


def _safe(text: str, limit: int = NAME_LIMIT) -> str:
    return markup(text, limit)


def render_text(report: DiffReport, console: Console, verbose: bool = False) -> None:
    p = console.print
    p(
        f"[bold]probesim diff[/bold]  {_safe(report.before)} → {_safe(report.after)}",
        highlight=False,
        emoji=False,
    )
    if not report.changed:
        p("no change: every object is the same on both sides (moved or reordered objects are the same)",
          highlight=False)  # fmt: skip
    for w in report.workloads:
        style = STYLE.get(w.verdict, "")
        p("")
        head = (
            f"[bold]{_safe(_shown(w.after))}[/bold]  [{style}]{_safe(_headline(w))}[/]"
            if style
            else (f"[bold]{_safe(_shown(w.after))}[/bold]  {_safe(_headline(w))}")
        )
        p(head, highlight=False, emoji=False)
        for c in w.changes:
            _text_change(c, console)
        if w.simulated:
            t = Table(box=box.SIMPLE, pad_edge=False)
            for h, justify in (("FIGURE", "left"), ("RUN", "left"), ("BEFORE", "right"), ("AFTER", "right"),
                               ("VERDICT", "left")):  # fmt: skip
                t.add_column(h, justify=justify, overflow="fold")  # type: ignore[arg-type]
            for f in shown_rows(w, verbose):
                t.add_row(f.name, _safe(run_name(f)), value(f.before, f.unit), value(f.after, f.unit),
                          f"[{STYLE[f.verdict]}]{f.verdict}[/]")  # fmt: skip
            console.print(t, emoji=False)
    for title, refs in (("only before (removed)", report.removed), ("only after (added)", report.added)):
        if refs:
            p(f"\n[bold]Objects {title}[/bold] — not simulated", highlight=False)
            for r in refs:
                p(f"  {_safe(_shown(r))}  [dim]{_safe(r.file)}:{r.line}[/dim]", highlight=False, emoji=False)
    if report.other:
        p("\n[bold]Other changed objects[/bold] (no workload's)", highlight=False)
        for c in report.other:
            _text_change(c, console)
    for title, findings in (
        ("New findings", report.new_findings),
        ("Resolved findings", report.resolved_findings),
    ):
        if findings:
            p(f"\n[bold]{title}[/bold]", highlight=False)
            for fd in findings:
                where = f"{fd.file}:{fd.line}"
                rule = f"{fd.severity:<8} {fd.rule.id} {fd.rule.name}"
                p(f"  {rule}  {_safe(fd.obj)}  [dim]{_safe(where)}[/dim]", highlight=False, emoji=False)
                p(f"           {_safe(fd.message, MESSAGE_LIMIT)}", highlight=False, emoji=False)
    if any(w.simulated for w in report.workloads):
        p(f"\n[dim]{_safe(noise_line(report.seeds), 2 * MESSAGE_LIMIT)}[/dim]", highlight=False)
    p(summary_line(report), highlight=False)


def _text_change(c: ObjectChange, console: Console) -> None:
    ref = c.ref
    where = f"{ref.file}:{ref.line}"
    note = f"  [dim]({_safe(c.note)})[/dim]" if c.note else ""
    console.print(
        f"  {c.status} {_safe(_shown(ref))}  [dim]{_safe(where)}[/dim]{note}", highlight=False, emoji=False
    )
    for fc in c.fields[:ROW_LIMIT]:
        console.print(
            f"    {_safe(fc.path)}: {_safe(field_value(fc.before))} → {_safe(field_value(fc.after))}",
            highlight=False, emoji=False, soft_wrap=True,
        )  # fmt: skip
    if len(c.fields) > ROW_LIMIT:
        console.print(f"    … and {len(c.fields) - ROW_LIMIT} more fields", highlight=False)


# ---- JSON -------------------------------------------------------------------------------------


def to_json(report: DiffReport) -> dict[str, Any]:
    return {
        "apiVersion": DIFF_VERSION,
        "kind": "DiffReport",
        "before": report.before,
        "after": report.after,
        "scenario": report.scenario,
        "seeds": list(report.seeds),
        "noise": noise_line(report.seeds),
        "verdict": overall(report),
        "summary": {
            "workloadsChanged": len(report.workloads),
            "workloadsSimulated": sum(1 for w in report.workloads if w.simulated),
            "figuresWorse": len(report.worse()),
            "figuresBetter": len(report.better()),
            "added": len(report.added),
            "removed": len(report.removed),
            "otherChanged": len(report.other),
            "unchanged": report.unchanged,
            "newFindings": len(report.new_findings),
            "resolvedFindings": len(report.resolved_findings),
        },
        "workloads": [w.to_json() for w in report.workloads],
        "added": [r.to_json() for r in report.added],
        "removed": [r.to_json() for r in report.removed],
        "otherChanges": [c.to_json() for c in report.other],
        "newFindings": [f.to_json() for f in report.new_findings],
        "resolvedFindings": [f.to_json() for f in report.resolved_findings],
        "warnings": report.warnings,
        "beforeErrors": [str(e) for e in report.before_errors],
    }


# ---- SARIF ------------------------------------------------------------------------------------


def to_diff_sarif(report: DiffReport) -> dict[str, Any]:
    """check's SARIF of the findings the change introduces only, at the after side's files and
    lines: code scanning shows them on the changed lines."""
    doc = to_sarif(CheckReport(findings=report.new_findings, rules=report.rules))
    doc["runs"][0]["properties"] = {
        "probesimDiff": {
            "before": report.before,
            "after": report.after,
            "resolvedFindings": len(report.resolved_findings),
        }
    }
    return doc


# ---- Markdown ---------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")  # with < > & as entities: no markup, link or cell break


def md(text: str, limit: int = NAME_LIMIT) -> str:
    """User text in Markdown (a table cell too): shown as written, never as markup, HTML or a
    cell break; control characters as escapes, one line."""
    s = _MD_SPECIAL.sub(r"\\\1", visible(text, limit))
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code(text: str, limit: int = NAME_LIMIT) -> str:
    """User text as inline code (a path, a value): escaped text where it holds a backtick."""
    s = visible(text, limit)
    if "`" in s or not s.strip():
        return md(text, limit)
    return "`" + s.replace("|", "\\|") + "`"


def _rule_link(f: Finding, rules_url: str) -> str:
    anchor = f.rule.help_uri.partition("#")[2]
    return f"[{f.rule.id}]({rules_url}#{anchor}) {md(f.rule.name)}"


@dataclass
class _Part:
    text: str
    priority: int  # dropped highest first when over the budget; 0 never


_ICON = {"worse": "🔴", "better": "🟢", "same": "⚪", "not simulated": "⚪"}
_VERDICT_MD = {"worse": "**worse**", "better": "better", "same": "same", "n/a": "n/a"}


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] = ()) -> str:
    aligns = ["--:" if a == "r" else "---" for a in (align or "l" * len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(aligns) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n</details>\n"


def _changes_md(w: WorkloadDiff) -> str:
    rows = []
    for c in w.changes:
        name = md(_shown(c.ref))
        if c.status != "changed":
            rows.append([name, f"({c.status})", "", "", md(c.note)])
            continue
        for fc in c.fields:
            rows.append(
                [name, code(fc.path), code(field_value(fc.before)), code(field_value(fc.after)), md(c.note)]
            )
    more = len(rows) - ROW_LIMIT
    body = _table(["Object", "Field", "Before", "After", "Note"], rows[:ROW_LIMIT])
    if more > 0:
        body += f"\n… and {more} more fields (the JSON output has every one)\n"
    n = sum(max(len(c.fields), 1) for c in w.changes)
    return _details(f"What changed: {_n(n, 'field')} of {_n(len(w.changes), 'object')}", body)


def _figures_md(figures: Sequence[Figure]) -> str:
    rows = [
        [f.name, md(run_name(f)), value(f.before, f.unit), value(f.after, f.unit), _VERDICT_MD[f.verdict]]
        for f in figures
    ]
    return _table(["Figure", "Run", "Before", "After", "Verdict"], rows, "llrrl")


def _findings_md(findings: Sequence[Finding], rules_url: str) -> str:
    rows = [
        [f.severity, _rule_link(f, rules_url), md(f.obj), code(f"{f.file}:{f.line}"), md(f.message, 400)]
        for f in findings[:ROW_LIMIT]
    ]
    out = _table(["Severity", "Rule", "Object", "Where", "Finding"], rows)
    if len(findings) > ROW_LIMIT:
        out += f"\n… and {len(findings) - ROW_LIMIT} more (the JSON and SARIF outputs have every one)\n"
    return out


def _refs_md(refs: Sequence[ObjRef]) -> str:
    rows = [[md(_shown(r)), code(f"{r.file}:{r.line}")] for r in refs[:ROW_LIMIT]]
    out = _table(["Object", "Where"], rows)
    if len(refs) > ROW_LIMIT:
        out += f"\n… and {len(refs) - ROW_LIMIT} more\n"
    return out


def _other_md(changes: Sequence[ObjectChange]) -> str:
    rows = [
        [md(_shown(c.ref)), code(fc.path), code(field_value(fc.before)), code(field_value(fc.after))]
        for c in changes
        for fc in c.fields
    ]
    out = _table(["Object", "Field", "Before", "After"], rows[:ROW_LIMIT])
    if len(rows) > ROW_LIMIT:
        out += f"\n… and {len(rows) - ROW_LIMIT} more fields\n"
    return out


def to_markdown(report: DiffReport, rules_url: str = "docs/rules.md", budget: int = MARKDOWN_BUDGET) -> str:
    """The report as GitHub renders it in a pull request's comment or a job's summary: a table
    per changed workload (worst first), what changed and every run collapsed, the new and
    resolved findings linked to their rules' docs; under ``budget`` characters, the least
    important sections left out with a note when it would be longer."""
    verdict = overall(report)
    worse, better = len(report.worse()), len(report.better())
    title = {
        "worse": f"{_n(worse, 'figure')} worse",
        "better": f"{_n(better, 'figure')} better, none worse",
        "same": "no figure moved beyond the noise",
        "no change": "no change",
    }[verdict]
    parts = [
        _Part(f"{MARKER}\n### probesim diff: {title}\n\n", 0),
        _Part(f"{code(report.before)} → {code(report.after)} · {md(summary_line(report), 1000)}\n\n", 0),
    ]
    for i, w in enumerate(report.workloads):
        head = f"#### {_ICON.get(w.verdict, '')} {md(_shown(w.after))} — {md(_headline(w), 1000)}\n\n"
        parts.append(_Part(head, 1 + 3 * i))
        if w.simulated:
            parts.append(_Part(_figures_md(shown_rows(w)) + "\n", 2 + 3 * i))
        parts.append(_Part(_changes_md(w) + "\n", 3 + 3 * i))
        if w.simulated:
            runs = run_rows(w)
            every = _details(f"Each run of {md(_shown(w.after))}: {len(runs)} figures", _figures_md(runs))
            parts.append(_Part(every + "\n", 10_000 + i))
    last = 3 * len(report.workloads) + 1
    if report.new_findings:
        parts.append(_Part(f"#### New findings ({len(report.new_findings)})\n\n"
                           + _findings_md(report.new_findings, rules_url) + "\n", last))  # fmt: skip
    if report.resolved_findings:
        body = _findings_md(report.resolved_findings, rules_url)
        parts.append(
            _Part(_details(f"Resolved findings ({len(report.resolved_findings)})", body) + "\n", last + 1)
        )
    for title_, refs in (("Objects only after (added, not simulated)", report.added),
                         ("Objects only before (removed, not simulated)", report.removed)):  # fmt: skip
        if refs:
            parts.append(_Part(_details(f"{title_}: {len(refs)}", _refs_md(refs)) + "\n", last + 2))
    if report.other:
        parts.append(_Part(_details(f"Other changed objects (no workload's): {len(report.other)}",
                                    _other_md(report.other)) + "\n", last + 3))  # fmt: skip
    if any(w.simulated for w in report.workloads):
        parts.append(_Part(f"<sub>{md(noise_line(report.seeds), 2000)}</sub>\n", last + 4))
    return _fit(parts, budget)


def _fit(parts: list[_Part], budget: int) -> str:
    """The parts in order, the least important left out until the text is under ``budget``."""
    kept = list(parts)
    dropped = 0

    def text() -> str:
        note = (
            f"\n> {dropped} section{'s' if dropped != 1 else ''} left out to stay within GitHub's "
            f"{COMMENT_LIMIT:,}-character limit; `--format json` has everything.\n"
            if dropped
            else ""
        )
        return "".join(p.text for p in kept) + note

    while len(text()) > budget:
        droppable = [p for p in kept if p.priority]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda p: p.priority))
        dropped += 1
    out = text()
    return out if len(out) <= budget else out[: budget - 2] + "…\n"


def render(
    report: DiffReport, fmt: str, console: Console, verbose: bool = False, rules_url: str = "docs/rules.md"
) -> str | None:
    """The report in ``fmt``; text is printed on ``console`` and returns None."""
    if fmt == "text":
        render_text(report, console, verbose)
        return None
    if fmt == "json":
        return json.dumps(to_json(report), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(to_diff_sarif(report), indent=2) + "\n"
    return to_markdown(report, rules_url)
