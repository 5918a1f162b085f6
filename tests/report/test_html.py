"""The HTML report without a browser: escaping, sections present and absent, figures' numbers,
and the errors of a result file that is not one."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probesim.errors import InputError
from probesim.report.html import Html, Section, chart, esc, label, load_result, page, table
from probesim.report.run_page import _Axis, _changes, render_run
from probesim.results.document import parse_result
from probesim.results.result import RESULT_VERSION
from tests.report.pages import HOSTILE, extras, renamed, result_doc, with_rollout


def figures_of(text: str) -> list[dict[str, Any]]:
    m = re.search(r'<script type="application/json" id="probesim-figures">(.*?)</script>', text, re.S)
    assert m is not None
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def section_ids(text: str) -> list[str]:
    return re.findall(r'<section id="([a-z-]+)">', text)


def test_hostile_names_are_text_everywhere() -> None:
    doc = with_rollout(
        renamed(result_doc("patient-delays-liveness"), "patient", HOSTILE, route=HOSTILE) | extras()
    )
    text = render_run(doc)
    # Exactly our three script elements: plotly.js, the figures' JSON, the page's script.
    assert text.count("<script") == 3
    assert "<img" not in text and "</script" not in text.split("<script>", 2)[2].split("</script>")[0]
    shown = html.escape(HOSTILE.replace("\u202e", "\\u202e"), quote=True)
    assert f"<title>probesim: {shown}</title>" in text
    # In the tables: workload, route, pods, events, thresholds, rollouts' hover, findings.
    assert text.count(shown) >= 8
    # In the figures' labels (plotly reads tags in labels, so they carry entities too), and the
    # JSON holding them cannot end its script element.
    blob = text.split('id="probesim-figures">', 1)[1].split("</script>", 1)[0]
    assert "<" not in blob and ">" not in blob and "&" not in blob
    names = [t["name"] for f in figures_of(text) for t in f["data"]]
    assert f"{shown} ready" in names
    titles = [f["layout"]["title"]["text"] for f in figures_of(text)]
    assert f"deployment/{shown}: replicas" in titles
    assert f"route {shown} → {shown}: requests" in titles


def test_esc_and_table_escape_cells_but_keep_html() -> None:
    assert esc('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert esc(Html("<b>ok</b>")) == "<b>ok</b>"
    t = table(["<h>"], [["<c>"], [Html("<i>kept</i>")], [None], [1.5]], numeric=[0])
    assert '<th class="num">&lt;h&gt;</th>' in t
    assert '<td class="num">&lt;c&gt;</td>' in t and "<i>kept</i>" in t and '<td class="num">1.5</td>' in t


def test_run_page_sections_and_figures() -> None:
    text = render_run(result_doc("patient-delays-liveness"))
    assert section_ids(text) == ["summary", "replicas", "endpoints", "requests", "events"]
    figs = figures_of(text)
    titles = [f["layout"]["title"]["text"] for f in figs]
    assert titles == [
        "deployment/patient: replicas",
        "Container restarts",
        "Endpoints",
        "route check_dep → patient: requests",
        "route check_dep: latency",
        "route check_nodep → patient: requests",
        "route check_nodep: latency",
    ]
    assert [f["id"] for f in figs] == [f"figure-{i}" for i in range(1, 8)]
    for f in figs:
        assert f'<div class="chart" id="{f["id"]}"></div>' in text
    replicas = figs[0]["data"]
    assert [t["name"] for t in replicas] == ["desired", "current", "ready", "available", "container restart"]
    # 8 restarts over the run (2 pods x 4), marked where the count grows.
    restarts = replicas[-1]
    assert len(restarts["x"]) >= 4
    assert sum(int(s.split()[0]) for s in restarts["text"]) == 8
    # Thresholds, rollouts and findings: not in this result, not on the page.
    assert "rollout" not in json.dumps(figs) and "shapes" not in figs[0]["layout"]


def test_requests_binned_add_up_to_the_summary() -> None:
    doc = result_doc("patient-delays-liveness")
    figs = figures_of(render_run(doc))
    req = next(f for f in figs if f["layout"]["title"]["text"] == "route check_dep → patient: requests")
    route = doc["summary"]["routes"][0]
    total = {t["name"]: sum(y for y in t["y"] if y) for t in req["data"]}  # rate per 1 s bins
    assert total["ok"] == route["ok"]
    for cause, n in route["failedByCause"].items():
        assert total.get(f"failed: {cause}", 0) == n
    assert sum(total.values()) == route["ok"] + route["failed"]


def test_ejections_and_endpoints() -> None:
    figs = figures_of(render_run(result_doc("seed003-outlier")))
    ep = next(f for f in figs if f["layout"]["title"]["text"] == "Endpoints")
    names = [t["name"] for t in ep["data"]]
    assert names == ["backend ready", "route /: ejections in force", "outlier ejection"]
    marks = ep["data"][-1]
    assert len(marks["x"]) == 6  # 6 ejections enforced (Envoy's ejections_enforced_total)
    assert marks["text"][0] == "sidecar/client-0 ejected 10.244.0.4:8080 at 11 s"


def test_step_series_keep_only_their_changes() -> None:
    axis = _Axis([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 1.0, "s")
    xs, ys = _changes(axis, [0, 0, 2, 2, 1, 1])
    assert (xs, ys) == ([0.0, 2.0, 4.0, 5.0], [0, 2, 1, 1])


def test_extras_are_shown_when_present() -> None:
    doc = with_rollout(result_doc("patient-delays-liveness") | extras())
    text = render_run(doc)
    assert section_ids(text) == [
        "summary",
        "thresholds",
        "replicas",
        "endpoints",
        "requests",
        "findings",
        "events",
    ]
    thresholds = text.split('<section id="thresholds">', 1)[1].split("</section>", 1)[0]
    assert "<h2>Thresholds: 3 of 4 crossed</h2>" in thresholds
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", thresholds)[1:]
    cells = [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for r in rows]
    assert cells == [
        ["✗ fail", "errors: rate&lt;0.01", "route check_dep", "85.3 %", ""],
        ["✓ pass", "restarts: &lt;=8", "all workloads", "8", ""],
        ["✗ fail", "p95: &lt;500ms", "route check_dep", "13720.2 ms", ""],
        [
            "✗ fail",
            f"errors{{route:{esc(HOSTILE)}}}: rate&lt;0.9",
            "",
            "not measured",
            esc(doc["thresholds"][3]["note"], 1000),
        ],
    ]
    fig = figures_of(text)[0]
    assert fig["layout"]["shapes"][0]["x0"] == 20.0 and fig["layout"]["shapes"][0]["x1"] == 35.0
    assert fig["data"][-1]["name"] == "rollout"
    findings = text.split('<section id="findings">', 1)[1].split("</section>", 1)[0]
    assert "PS010 liveness-failure-threshold-one" in findings and "k8s/web.yaml:12 [app]" in findings
    # A check report given beside the result wins over the result's own.
    empty = render_run(doc, check={"findings": []})
    assert "No findings." in empty and "PS010" not in empty


def test_a_result_without_series_has_no_timelines() -> None:
    doc = result_doc("seed000-strict-liveness")
    del doc["series"]
    text = render_run(doc)
    assert section_ids(text) == ["summary", "timelines", "events"]
    assert figures_of(text) == []
    assert "written with --no-series" in text


def test_event_table_is_kubectl_aggregated_and_capped() -> None:
    doc = result_doc("seed000-strict-liveness")
    text = render_run(doc)
    events = text.split('<table id="events">', 1)[1].split("</table>", 1)[0]
    rows = events.count("<tr") - 1
    keys = {(e["object"], e["type"], e["reason"], e["message"]) for e in doc["events"]}
    assert rows == len(keys) < len(doc["events"])
    assert f"{len(doc['events'])} events in {rows} rows" in text


def test_page_is_extensible_with_any_sections() -> None:
    trace = {"type": "scatter", "x": [1, 2], "y": [3, 4], "name": label("<a>")}
    fig = chart(label("<field>"), [trace], "x", "y", "cap")
    assert fig.layout["title"]["text"] == "&lt;field&gt;" and fig.data[0]["name"] == "&lt;a&gt;"
    text = page("<sweep>", [Section("one", "One <1>", [Html("<p>x</p>"), fig]), Section("two", "Two", [fig])])
    assert "<title>&lt;sweep&gt;</title>" in text
    assert section_ids(text) == ["one", "two"]
    assert '<a href="#one">One &lt;1&gt;</a>' in text
    assert [f["id"] for f in figures_of(text)] == ["figure-1", "figure-2"]
    assert 'id="event-filter"' not in text


def write(tmp_path: Path, content: str | bytes) -> str:
    p = tmp_path / "result.json"
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(p)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            '{\n  "kind": Result\n}',
            r"result.json:2: not JSON \(Expecting value, column 11\): not a probesim result \(write one with probesim run --json\)",
        ),
        ("[1]", "is a JSON list, not an object"),
        (b"\xff\xfe", "not UTF-8"),
        ('{"kind": "CheckReport"}', 'kind: not a probesim result: kind is "CheckReport", not "Result"'),
        (
            '{"kind": "Result", "apiVersion": "probesim.dev/v0"}',
            'apiVersion: written by another version of probesim: apiVersion "probesim.dev/v0"',
        ),
    ],
)
def test_bad_files_are_refused_clearly(tmp_path: Path, content: str | bytes, says: str) -> None:
    with pytest.raises(InputError) as e:
        load_result(write(tmp_path, content))
    assert re.search(says, str(e.value)), str(e.value)


def test_missing_and_wrong_fields_are_named(tmp_path: Path) -> None:
    doc = result_doc("seed000-strict-liveness")
    del doc["summary"]["routes"][0]["name"]
    with pytest.raises(InputError) as e:
        parse_result(doc, "r.json")
    assert str(e.value) == "r.json: summary.routes[0].name: missing (is this a probesim run --json result?)"
    doc = result_doc("seed000-strict-liveness")
    doc["events"][3]["time"] = "3s"
    with pytest.raises(InputError, match=r"events\[3\]\.time: Input should be a valid number"):
        parse_result(doc)
    doc = result_doc("seed000-strict-liveness")
    doc["series"]["workload.app.ready"] = [1]
    with pytest.raises(InputError, match=r"series 'workload\.app\.ready' has 1 values, series 'time' 120"):
        parse_result(doc)
    with pytest.raises(InputError, match="cannot read: No such file"):
        load_result(str(tmp_path / "none.json"))
    assert parse_result(result_doc("seed000-strict-liveness")).apiVersion == RESULT_VERSION


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.text(min_size=1, max_size=60), route=st.text(min_size=1, max_size=30))
def test_any_name_stays_text(name: str, route: str) -> None:
    doc = renamed(result_doc("seed000-strict-liveness"), "app", name, route=route)
    text = render_run(doc)
    text.encode("utf-8")  # writable: lone surrogates and the like are escapes
    assert text.count("<script") == 3 and text.count("</script>") == 3
    assert f"<title>probesim: {esc(name)}</title>" in text
    figs = figures_of(text)
    assert f"route {esc(route)} → {esc(name)}: requests" in [f["layout"]["title"]["text"] for f in figs]
    assert len(figs) == 4  # replicas, restarts, endpoints, requests


def cells_of(text: str, h3_or_summary: str) -> list[list[str]]:
    part = text.split(h3_or_summary, 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", part)[1:]
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for r in rows]


def test_workloads_table_and_restarts_by_pod() -> None:
    doc = result_doc("patient-delays-liveness")
    w = doc["summary"]["workloads"][0]
    text = render_run(doc)
    assert cells_of(text, "<h3>Workloads</h3>") == [
        ["deployment/patient", "2", "8", "5", "5", "0",
         str(w["minReadyAfterRamp"]), "1.17", "0", str(w["minAvailableAfterRamp"])],
    ]  # fmt: skip
    assert "<details open><summary>Restarts by pod: 2 pods restarted (most: patient-0, 4)</summary>" in text
    # Older results (before the after-ramp figures), a workload never all Ready, many pods.
    del w["minReadyAfterRamp"], w["minAvailableAfterRamp"]
    w["allReady"] = None
    w["restartsByPod"] = {f"patient-{i}": i % 5 for i in range(40)}
    text = render_run(doc)
    row = cells_of(text, "<h3>Workloads</h3>")[0]
    assert (row[4], row[6], row[9]) == ("never", "–", "–")
    assert "<details><summary>Restarts by pod: 32 pods restarted (most: patient-4, 4)</summary>" in text
