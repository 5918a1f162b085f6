"""``probesim check`` reports: grouped text (rich), versioned JSON, SARIF 2.1.0, JUnit XML —
all from the same CheckReport."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from itertools import groupby
from typing import Any
from urllib.parse import quote

from rich import box
from rich.console import Console
from rich.table import Table

from probesim import __version__
from probesim.analysis.check import CheckReport
from probesim.analysis.findings import Finding, Rule
from probesim.errors import InputError
from probesim.report.junit import Case, Failure, junit_xml
from probesim.report.sarif_fixes import sarif_fix
from probesim.safe import MESSAGE_LIMIT, markup

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}


def _safe(text: str) -> str:
    """User text inside rich markup: never markup itself, control characters as escapes."""
    return markup(text, MESSAGE_LIMIT)


def _where(f: Finding) -> str:
    return f"{f.source} (rendered line {f.line} of {f.file})" if f.source else f"{f.file}"


def _error_json(e: InputError) -> dict[str, Any]:
    return {"file": e.file, "line": e.line, "object": e.obj, "field": e.field, "message": e.message,
            "text": str(e)}  # fmt: skip


def _objects(findings: list[Finding]) -> set[tuple[str, str]]:
    """The distinct objects of ``findings``: an object is its kind, namespace and name in its file
    (a base and its overlay are two)."""
    return {(f.key, f.file) for f in findings}


def shared_fixes(items: list[Finding]) -> list[str]:
    """Each finding's fix line, said once per container: the fixes of one container are merged
    into one change (every field that answers one of its findings), so several findings often
    carry the very same fix. The first says it whole and names the others it answers; each
    later one points back to it rather than repeating it."""
    first: dict[tuple[str, str], Finding] = {}
    answers: dict[int, list[Finding]] = {}
    for f in items:
        key = (f.container, f.remediation)
        lead = first.setdefault(key, f)
        answers.setdefault(id(lead), []).append(f)
    out = []
    for f in items:
        lead = first[(f.container, f.remediation)]
        if lead is not f:
            out.append(f"fix: the one above ({lead.rule.id}, line {lead.line})")
            continue
        others = answers[id(f)][1:]
        also = f" (also answers {', '.join(f'{o.rule.id} line {o.line}' for o in others)})" if others else ""
        out.append(f"fix{also}: {f.remediation}")
    return out


def render_text(
    report: CheckReport, console: Console, verbose: bool = False, with_errors: bool = True
) -> None:
    for e in report.errors if with_errors else []:
        console.print(f"[red]error:[/red] {_safe(str(e))}", highlight=False, emoji=False, soft_wrap=True)
    # Grouped by file, then object: a base and its overlay of one name are shown apart.
    by_obj = sorted(report.findings, key=lambda f: (f.file, f.obj, f.namespace, f.line))
    for (_file, obj, ns), group in groupby(by_obj, key=lambda f: (f.file, f.obj, f.namespace)):
        items = list(group)
        shown_ns = f"  -n {ns}" if ns != "default" else ""
        console.print(f"[bold]{_safe(obj)}[/bold]{_safe(shown_ns)}  [dim]{_safe(_where(items[0]))}[/dim]",
                      highlight=False, emoji=False)  # fmt: skip
        t = Table(box=box.SIMPLE, show_header=False, pad_edge=False)
        for _ in range(4):
            t.add_column(overflow="fold")
        for f, fix in zip(items, shared_fixes(items), strict=True):
            t.add_row(
                f"[{STYLE[f.severity]}]{f.severity}[/]",
                f"{f.rule.id} {f.rule.name}",
                _safe(f"line {f.line}" + (f" [{f.container}]" if f.container else "")),
                _safe(f.message),
            )
            t.add_row("", "", "", f"[dim]{_safe(fix)}[/dim]")
        console.print(t, emoji=False)
        # What the advice assumed about each container's app (its profile): one line each.
        assumed = {f.container: f.assumed for f in items if f.assumed is not None and f.container}
        for container, a in assumed.items():
            console.print(f"  [dim]\\[{_safe(container)}] assumed: {_safe(a.line())}[/dim]",
                          highlight=False, emoji=False)  # fmt: skip
    if report.stress:
        t = Table(box=box.SIMPLE, title="Stress suite (simulated)", title_justify="left")
        # Names and folders whole, wrapped where long, never cut.
        t.add_column("WORKLOAD", overflow="fold", ratio=2, min_width=10)
        t.add_column("STRESS", overflow="fold", min_width=8)
        for h in ("ERRORS", "RESTARTS", "MIN READY", "NO ENDPOINTS"):
            t.add_column(h, justify="right", overflow="fold")
        t.add_column("VERDICT", overflow="fold", ratio=3, min_width=8)
        for r in report.stress:
            verdict = {
                "pass": f"[green]pass[/] [dim]{_safe(r.why)}[/]" if r.why else "[green]pass[/]",
                "fail": f"[red]fail[/] {_safe(r.why)}",
                "skipped": f"[dim]n/a: {_safe(r.why)}[/]",
            }[r.verdict]
            t.add_row(_safe(r.workload), r.stress, f"{r.error_percent:.1f} %", str(r.restarts),
                      f"{100 * r.min_ready_fraction:.0f} %", f"{r.no_endpoint_s:.0f} s", verdict)  # fmt: skip
        console.print(t, emoji=False)
    if verbose:
        render_linted(report, console)
    render_skipped(report, console, verbose)
    console.print(summary_line(report), highlight=False)


def _n(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def summary_line(report: CheckReport) -> str:
    """The last line: the findings by severity (and on how many objects), the workloads the
    rules ran over, how many rules over how many files, what was suppressed, the input errors."""
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in ("error", "warning", "info")}
    summary = ", ".join(f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts.items())
    if report.findings:
        summary += f" in {_n(len(_objects(report.findings)), 'object')}"
    n_err = len(report.errors)
    return (
        f"{summary}; {_n(len(report.linted), 'workload')} linted by {len(report.rules)} rules over "
        f"{_n(len(report.files), 'file')}"
        + (f"; {len(report.suppressed)} suppressed" if report.suppressed else "")
        + (f"; {_n(n_err, 'input error')} (listed first)" if n_err else "")
    )


def render_linted(report: CheckReport, console: Console) -> None:
    """-v: each workload the rules ran over, where it is, and what scales it."""
    if not report.linted:
        return
    t = Table(box=box.SIMPLE, title="Linted", title_justify="left")
    for h in ("KIND", "NAMESPACE", "NAME", "WHERE", "NOTE"):
        t.add_column(h, overflow="fold")
    for w in report.linted:
        notes = []
        if w.scaled_by is not None:
            s = w.scaled_by
            notes.append(
                f"scaled by {s['kind']} {s['name']} ({s['minReplicas']}-{s['maxReplicas']} replicas)"
            )
        if w.template is not None:
            tp = w.template
            notes.append(f"runs {tp['kind']} {tp['name']}'s pod template ({tp['file']}:{tp['line']})")
        custom = w.api_version is not None and "." in w.api_version.split("/")[0]
        kind = f"{w.kind} ({w.api_version})" if custom else w.kind  # a Knative Service is no Service
        t.add_row(
            _safe(kind),
            _safe(w.namespace),
            _safe(w.name),
            _safe(f"{w.file}:{w.line}"),
            _safe("; ".join(notes)),
        )
    console.print(t, emoji=False)


def render_skipped(
    report: CheckReport,
    console: Console,
    verbose: bool,
    outcome: str = "not linted",
    hint: str = "-v lists them, with why",
) -> None:
    """One line saying what was read past (``-v``: each, with why); ``outcome`` and ``hint`` say
    it for the command (probesim run: not simulated)."""
    objects = [s for s in report.skipped if s.kind]
    files = [s for s in report.skipped if not s.kind]
    if not objects and not files:
        return
    if verbose:
        t = Table(box=box.SIMPLE, title=f"Skipped ({outcome})", title_justify="left")
        for h in ("KIND", "NAME", "WHERE", "WHY"):
            t.add_column(h, overflow="fold")  # paths whole, wrapped where long
        for s in report.skipped:
            where = s.file + (f":{s.line}" if s.line else "")
            t.add_row(_safe(s.kind or "(file)"), _safe(s.name or ""), _safe(where), _safe(s.why))
        console.print(t, emoji=False)
        return
    kinds = Counter(s.kind for s in objects)
    top = ", ".join(f"{n} {k}" for k, n in kinds.most_common(4)) + (", …" if len(kinds) > 4 else "")
    parts = []
    if objects:
        parts.append(f"{len(objects)} object{'s' if len(objects) != 1 else ''} ({top})")
    if files:
        parts.append(
            f"{len(files)} file{'s' if len(files) != 1 else ''} or folder{'s' if len(files) != 1 else ''}"
        )
    console.print(f"[dim]skipped {_safe(' and '.join(parts))}: {outcome} ({hint})[/dim]",
                  highlight=False, emoji=False)  # fmt: skip


def to_json(report: CheckReport) -> dict[str, Any]:
    return {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "CheckReport",
        "findings": [f.to_json() for f in report.findings],
        "suppressed": [{**s.finding.to_json(), "reason": s.reason} for s in report.suppressed],
        "rules": [
            {"id": r.id, "name": r.name, "severity": r.severity, "title": r.title} for r in report.rules
        ],
        "files": report.files,
        "linted": [w.to_json() for w in report.linted],
        "skipped": [s.to_json() for s in report.skipped],
        "warnings": report.warnings,
        "stress": [r.to_json() for r in report.stress],
        "errors": [_error_json(e) for e in report.errors],
    }


def _fingerprint(f: Finding) -> str:
    # The file is part of it: one object name in a base and an overlay is two alerts.
    where = f.source or f.file
    return hashlib.sha256(f"{f.rule.id}|{where}|{f.key}|{f.container}|{f.field}".encode()).hexdigest()[:32]


def _uri(path: str) -> str:
    """A relative URI reference for a file path (percent-encoded; ``/`` kept)."""
    return quote(path.replace("\\", "/"), safe="/")


def _result(f: Finding, index: dict[str, int], reason: str | None = None) -> dict[str, Any]:
    text = f"{f.message} ({f.field})" if f.field else f.message
    if f.source:
        # helm template output: point at the chart template the object came from; the line is
        # the rendered document's, so it is said in the message, not given as a region.
        physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(f.source)}}
        text += f" [line {f.line} of the rendered output {f.file}]"
    else:
        physical = {"artifactLocation": {"uri": _uri(f.file)}, "region": {"startLine": f.line}}
    name = f"{f.namespace}/{f.obj}" + (f"/{f.container}" if f.container else "")
    out: dict[str, Any] = {
        "ruleId": f.rule.id,
        "ruleIndex": index[f.rule.id],
        "level": LEVEL[f.severity],
        "message": {"text": f"{text}. Fix: {f.remediation}"},
        "locations": [{"physicalLocation": physical, "logicalLocations": [{"fullyQualifiedName": name}]}],
        "partialFingerprints": {"probesim/v1": _fingerprint(f)},
    }
    if f.patch is not None:  # the fix as data (report/sarif_fixes.py)
        out["properties"] = {"patch": f.patch, "patchType": f.patch_type}
    if f.assumed is not None:  # what the finding assumed about the app
        out.setdefault("properties", {})["assumed"] = f.assumed.to_json()
        fix = sarif_fix(f, physical["artifactLocation"]["uri"])
        if fix is not None:
            out["fixes"] = [fix]
    if reason is not None:
        out["suppressions"] = [{"kind": "inSource", "justification": reason}]
    return out


def _help(r: Rule) -> dict[str, str]:
    """The rule's help as GitHub code scanning shows it, embedded (no link to follow)."""
    return {
        "text": f"{r.title}\n\nWhat goes wrong: {r.why}\n\nFix: {r.fix}",
        "markdown": f"**{r.title}**\n\nWhat goes wrong: {r.why}\n\n**Fix:** {r.fix}",
    }


def _invocation(report: CheckReport) -> dict[str, Any]:
    """How the run went: each input error a notification at its file and line."""
    notes = []
    for e in report.errors:
        note: dict[str, Any] = {"level": "error", "message": {"text": str(e)}}
        if e.file:
            physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(e.file)}}
            if e.line:
                physical["region"] = {"startLine": e.line}
            note["locations"] = [{"physicalLocation": physical}]
        notes.append(note)
    return {"executionSuccessful": not report.errors, "toolExecutionNotifications": notes}


def to_sarif(report: CheckReport) -> dict[str, Any]:
    index = {r.id: i for i, r in enumerate(report.rules)}
    rules = []
    for r in report.rules:
        rule: dict[str, Any] = {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.title},
            "fullDescription": {"text": r.why},
            "help": _help(r),
            "defaultConfiguration": {"level": LEVEL[r.severity]},
            # Code scanning groups and filters alerts by a rule's tags: its family.
            "properties": {"tags": ["kubernetes", r.family]},
        }
        if r.help_uri.startswith(("https://", "http://")):
            rule["helpUri"] = r.help_uri
        rules.append(rule)
    results = [_result(f, index) for f in report.findings]
    results += [_result(s.finding, index, s.reason) for s in report.suppressed]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "probesim", "version": __version__, "rules": rules}},
                "invocations": [_invocation(report)],
                "results": results,
                "properties": {
                    "linted": [w.to_json() for w in report.linted],
                    "skipped": [s.to_json() for s in report.skipped],
                    "warnings": report.warnings,
                },
            }
        ],
    }


def to_junit(report: CheckReport) -> str:
    """One test case per object and rule that ran — every workload linted, and the other objects
    with findings (Istio's) — a finding is a failure. Skipped objects are listed in the suite's
    system-out."""
    linted = {(w.key, w.findings_file or w.file) for w in report.linted}
    objects = sorted(linted | _objects(report.findings) | _objects([s.finding for s in report.suppressed]),
                     key=lambda o: (o[1], o[0]))  # fmt: skip
    cases = []
    for e_file in dict.fromkeys(e.file or "(input)" for e in report.errors):
        errs = [
            Failure(e.message, "input error", str(e))
            for e in report.errors
            if (e.file or "(input)") == e_file
        ]
        cases.append(Case(e_file, "input", errors=errs))
    for key, file in objects or [("(no findings)", "")]:
        for r in report.rules:
            fails = [
                Failure(f.message, f.severity, f"{f.file}:{f.line} {f.field}\n{r.why}\nFix: {f.remediation}")
                for f in report.findings
                if f.key == key and f.file == file and f.rule.id == r.id
            ]
            cases.append(Case(f"{key} ({file})" if file else key, f"{r.id} {r.name}", fails))
    skipped = None
    if report.skipped:
        skipped = "Skipped (not linted):\n" + "\n".join(
            f"{s} {s.why}" if s.kind else str(s) for s in report.skipped
        )
    return junit_xml("probesim check", cases, skipped)


def render(
    report: CheckReport, fmt: str, console: Console, verbose: bool = False, with_errors: bool = True
) -> str | None:
    """The report in ``fmt``; text is printed on ``console`` and returns None (``with_errors``:
    its error entries first, unless they were said already)."""
    if fmt == "text":
        render_text(report, console, verbose, with_errors)
        return None
    if fmt == "json":
        return json.dumps(to_json(report), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(report), indent=2) + "\n"
    return to_junit(report)
