"""``probesim check`` reports: grouped text (rich), versioned JSON, SARIF 2.1.0, JUnit XML —
all from the same CheckReport."""

from __future__ import annotations

import hashlib
import json
from itertools import groupby
from typing import Any
from xml.etree import ElementTree as ET

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from probesim import __version__
from probesim.analysis.check import CheckReport
from probesim.analysis.findings import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}


def render_text(report: CheckReport, console: Console) -> None:
    by_obj = sorted(report.findings, key=lambda f: (f.obj, f.file, f.line))
    for obj, group in groupby(by_obj, key=lambda f: f.obj):
        items = list(group)
        first = items[0]
        where = first.source or first.file
        console.print(f"[bold]{obj}[/bold]  [dim]{where}[/dim]")
        t = Table(box=box.SIMPLE, show_header=False, pad_edge=False)
        for _ in range(4):
            t.add_column()
        for f in items:
            t.add_row(
                f"[{STYLE[f.severity]}]{f.severity}[/]",
                f"{f.rule.id} {f.rule.name}",
                escape(f"line {f.line}" + (f" [{f.container}]" if f.container else "")),
                escape(f.message),
            )
        console.print(t)
    if report.stress:
        t = Table(box=box.SIMPLE, title="Stress suite (simulated)", title_justify="left")
        for h in ("WORKLOAD", "STRESS", "ERRORS", "RESTARTS", "MIN READY", "NO ENDPOINTS", "VERDICT"):
            t.add_column(h, justify="left" if h in ("WORKLOAD", "STRESS", "VERDICT") else "right")
        for r in report.stress:
            verdict = {
                "pass": "[green]pass[/]",
                "fail": f"[red]fail[/] {escape(r.why)}",
                "skipped": "[dim]n/a[/]",
            }[r.verdict]
            t.add_row(r.workload, r.stress, f"{r.error_percent:.1f} %", str(r.restarts),
                      f"{100 * r.min_ready_fraction:.0f} %", f"{r.no_endpoint_s:.0f} s", verdict)  # fmt: skip
        console.print(t)
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in ("error", "warning", "info")}
    objs = len({f.obj for f in report.findings})
    summary = ", ".join(f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts.items())
    console.print(
        f"{summary} in {objs} object{'s' if objs != 1 else ''}; {len(report.rules)} rules ran over "
        f"{len(report.files)} file{'s' if len(report.files) != 1 else ''}"
        + (f"; {len(report.suppressed)} suppressed" if report.suppressed else "")
    )


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
        "skipped": report.skipped,
        "stress": [r.to_json() for r in report.stress],
    }


def _fingerprint(f: Finding) -> str:
    return hashlib.sha256(f"{f.rule.id}|{f.obj}|{f.container}|{f.field}".encode()).hexdigest()[:32]


def _result(f: Finding, index: dict[str, int], reason: str | None = None) -> dict[str, Any]:
    if f.source:
        # helm template output: point at the chart template the object came from.
        physical: dict[str, Any] = {"artifactLocation": {"uri": f.source}}
    else:
        physical = {"artifactLocation": {"uri": f.file}, "region": {"startLine": f.line}}
    name = f.obj + (f"/{f.container}" if f.container else "")
    out: dict[str, Any] = {
        "ruleId": f.rule.id,
        "ruleIndex": index[f.rule.id],
        "level": LEVEL[f.severity],
        "message": {"text": f"{f.message} ({f.field})" if f.field else f.message},
        "locations": [{"physicalLocation": physical, "logicalLocations": [{"fullyQualifiedName": name}]}],
        "partialFingerprints": {"probesim/v1": _fingerprint(f)},
    }
    if reason is not None:
        out["suppressions"] = [{"kind": "inSource", "justification": reason}]
    return out


def to_sarif(report: CheckReport) -> dict[str, Any]:
    index = {r.id: i for i, r in enumerate(report.rules)}
    rules = [
        {
            "id": r.id,
            "name": r.name,
            "shortDescription": {"text": r.title},
            "fullDescription": {"text": r.why},
            "help": {"text": r.fix},
            "helpUri": r.help_uri,
            "defaultConfiguration": {"level": LEVEL[r.severity]},
        }
        for r in report.rules
    ]
    results = [_result(f, index) for f in report.findings]
    results += [_result(s.finding, index, s.reason) for s in report.suppressed]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "probesim",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }


def to_junit(report: CheckReport) -> str:
    """One test case per object and rule that ran; a finding is a failure."""
    objects = sorted({f.obj for f in report.findings} | {s.finding.obj for s in report.suppressed})
    suite = ET.Element("testsuite", name="probesim check")
    cases = failures = 0
    for obj in objects or ["(no findings)"]:
        for r in report.rules:
            cases += 1
            case = ET.SubElement(suite, "testcase", classname=obj, name=f"{r.id} {r.name}")
            for f in (f for f in report.findings if f.obj == obj and f.rule.id == r.id):
                failures += 1
                fail = ET.SubElement(case, "failure", message=f.message, type=f.severity)
                fail.text = f"{f.file}:{f.line} {f.field}\n{r.why}\nFix: {r.fix}"
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    root = ET.Element("testsuites", tests=str(cases), failures=str(failures))
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(report: CheckReport, fmt: str, console: Console) -> str | None:
    """The report in ``fmt``; text is printed on ``console`` and returns None."""
    if fmt == "text":
        render_text(report, console)
        return None
    if fmt == "json":
        return json.dumps(to_json(report), indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(report), indent=2) + "\n"
    return to_junit(report)
