"""A tune's page without a browser: the Pareto front drawn (failed requests against hung-pod
removal and against restarts) with the current and recommended settings marked, the front's
table, the patch; names escaped. The outcome is made by hand on loaded manifests: no trial runs
(tests/tune runs real studies; the page in Chromium: test_html_browser.py)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from probesim.report.tune_page import render_tune
from probesim.tune.figures import Figures, Row
from probesim.tune.inputs import TuneInputs, load
from probesim.tune.report import patches
from probesim.tune.space import Setting, Space
from probesim.tune.study import Outcome
from tests.property.hostile import SMALL_MANIFEST
from tests.report.pages import HOSTILE
from tests.report.test_html import figures_of

NAME = "web-" + re.sub(r"[^a-z0-9-]", "", HOSTILE.lower())[:20]  # a valid name, still odd text


def inputs(tmp_path: Path) -> TuneInputs:
    m = tmp_path / "m.yaml"
    m.write_text(SMALL_MANIFEST.replace("web", NAME), encoding="utf-8")
    return load([str(m)], None, None)


def outcome(got: TuneInputs) -> Outcome:
    space = Space(got.workload, got.rule)
    current = space.current()
    probes = {c: {k: dict(v) for k, v in p.items()} for c, p in current.probes.items()}
    probes["app"]["livenessProbe"]["failureThreshold"] = 6
    better = Setting(probes, current.outlier)

    def fig(failed: int, restarts: int, seconds: float, detected: bool = True) -> Figures:
        return Figures(failed, restarts, seconds, detected, 0, ())

    now = Row(None, current, fig(120, 4, 31.0))
    front = [Row(3, better, fig(10, 0, 40.0)), Row(7, current, fig(5, 2, 300.0, False))]
    return Outcome("study-<b>x</b>", "sqlite:///t.db", 12, 12, False, now, front, front[0], "the fewest <b>")


def test_the_front_drawn_and_tabled(tmp_path: Path) -> None:
    got = inputs(tmp_path)
    o = outcome(got)
    assert o.recommended is not None
    ps = patches(got, o.current.setting, o.recommended.setting)
    text = render_tune(o, got, ps)
    figs = figures_of(text)
    assert [f["layout"]["title"]["text"] for f in figs] == [
        "Failed requests and hung-pod removal",
        "Failed requests and needless restarts",
    ]
    removal, restarts = figs
    by_name = {t["name"]: t for t in removal["data"]}
    assert by_name["Pareto front"]["x"] == [5] and by_name["Pareto front"]["y"] == [300.0]
    assert by_name["current setting"]["x"] == [120] and by_name["current setting"]["y"] == [31.0]
    assert by_name["recommended (trial 3)"]["x"] == [10] and by_name["recommended (trial 3)"]["y"] == [40.0]
    assert [t["y"] for t in restarts["data"]] == [[2], [4], [0]]
    assert "never (within" in text  # trial 7's hung pod never taken out of service
    # The table: the current setting, then the front, the recommended row marked.
    table = re.search(r"<section id=\"front\">.*?</section>", text, re.S)
    assert table is not None
    assert [html.unescape(m) for m in re.findall(r"<tr[^>]*><td>([^<]*)<", table.group(0))] == [
        "current setting",
        "trial 3 (recommended)",
        "trial 7",
    ]
    assert "10s/1s ×6" in text  # the recommended liveness: every 10 s, timeout 1 s, 6 failures
    # The patch and its command; user text escaped everywhere.
    assert "kubectl patch deployment" in text and "failureThreshold: 6" in text
    assert "study-&lt;b&gt;x&lt;/b&gt;" in text and "the fewest &lt;b&gt;" in text
    assert "<b>" not in text


def test_the_current_setting_on_the_front_is_drawn_and_listed_once(tmp_path: Path) -> None:
    got = inputs(tmp_path)
    o = outcome(got)
    front = [o.current, *o.front]  # no trial beats the current setting
    o = Outcome(o.study, o.storage, o.trials, o.added, False, o.current, front, None, "keep it", True)
    text = render_tune(o, got, [])
    removal = figures_of(text)[0]
    assert [(t["name"], t["x"]) for t in removal["data"]] == [
        ("Pareto front", [10, 5]),
        ("current setting", [120]),
    ]
    table = re.search(r"<section id=\"front\">.*?</section>", text, re.S)
    assert table is not None
    names = [html.unescape(m) for m in re.findall(r"<tr[^>]*><td>([^<]*)<", table.group(0))]
    assert names == ["current setting (on the front)", "trial 3", "trial 7"]
    assert "2 trials on the Pareto front, and the current setting" in text
