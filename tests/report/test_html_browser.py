"""The HTML report in a real headless Chromium, network off: it loads from a file URL, every
chart has its data drawn (a run's, a sweep's, a tune's), the table filters filter, nothing reaches the console, and hostile
names stay text. A screenshot of each page is kept in artifacts/ (or $PROBESIM_ARTIFACTS).

Needs Debian's chromium and chromium-driver (make test installs them: scripts/browser.sh)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from probesim.report.run_page import render_run
from probesim.report.terminal import aggregate
from probesim.report.tune_page import render_tune
from probesim.results import Event
from probesim.tune.report import patches
from tests.report.pages import HOSTILE, extras, renamed, result_doc, with_rollout
from tests.report.test_html import figures_of
from tests.report.test_sweep_page import sweep_outputs
from tests.report.test_tune_page import inputs as tune_inputs
from tests.report.test_tune_page import outcome as tune_outcome

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = Path(os.environ.get("PROBESIM_ARTIFACTS", Path(__file__).parents[2] / "artifacts"))

if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip(
        "chromium and chromium-driver are not installed (make test installs them with "
        "scripts/browser.sh; or apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="probesim-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--disable-dev-shm-usage",
        # Nothing listens on port 9 of 127.0.0.1: any request through the proxy fails.
        "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
        "--window-size=1300,1000", f"--user-data-dir={profile}",
    ):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        driver.set_page_load_timeout(30)
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
        )
        # The control: the network is off, a fetch fails (its log lines are drained here).
        driver.get("about:blank")
        failed = driver.execute_async_script(
            "var done = arguments[arguments.length - 1];"
            "fetch('http://example.com/').then(function () { done(false); }, function () { done(true); });"
        )
        assert failed, "the browser reached the network"
        driver.get_log("browser")
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def open_page(browser: Any, tmp_path: Path, doc: dict[str, Any] | str, name: str) -> None:
    """Open a run's page (from its result) or any page's HTML text, and wait until it is drawn."""
    path = tmp_path / f"{name}.html"
    path.write_text(doc if isinstance(doc, str) else render_run(doc), encoding="utf-8")
    browser.get(path.as_uri())
    deadline = time.monotonic() + 20
    while not browser.execute_script("return document.readyState === 'complete' && !!window.Plotly"):
        assert time.monotonic() < deadline, "the page did not finish loading in 20 s"
        time.sleep(0.05)


# Per chart: its traces (gd.data) and what plotly drew of each: the line's path, the markers.
DRAWN = """
return Array.from(document.querySelectorAll('div.chart')).map(function (gd) {
  return {
    id: gd.id,
    title: (gd.layout && gd.layout.title && gd.layout.title.text) || '',
    traces: (gd.data || []).map(function (t) {
      return {name: t.name, mode: t.mode, points: (t.x || []).length,
              ys: (t.y || []).filter(function (y) { return y !== null; }).length};
    }),
    drawn: Array.from(gd.querySelectorAll('.scatterlayer g.trace')).map(function (g) {
      var line = g.querySelector('path.js-line');
      return {line: line ? (line.getAttribute('d') || '').length : 0,
              fill: Array.from(g.querySelectorAll('path.js-fill')).map(function (p) {
                return (p.getAttribute('d') || '').length; }).reduce(function (a, b) { return a + b; }, 0),
              points: g.querySelectorAll('path.point').length};
    })
  };
});
"""


def assert_every_chart_drawn(browser: Any, expected: int) -> list[dict[str, Any]]:
    charts = browser.execute_script(DRAWN)
    assert len(charts) == expected
    for c in charts:
        assert c["traces"], f"{c['id']} ({c['title']}) has no data"
        assert len(c["drawn"]) == len(c["traces"]), c
        for trace, drawn in zip(c["traces"], c["drawn"], strict=True):
            if trace["mode"] == "markers":
                assert drawn["points"] == trace["points"] > 0, (c["title"], trace)
            elif trace["ys"] > 1:
                assert drawn["line"] > 10 or drawn["fill"] > 10, (c["title"], trace, drawn)
    return charts


def console_errors(browser: Any) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def visible_rows(browser: Any) -> int:
    return int(
        browser.execute_script("return document.querySelectorAll('#events tbody tr:not([hidden])').length")
    )


def test_run_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    doc = with_rollout(
        renamed(result_doc("patient-delays-liveness"), "patient", HOSTILE, route=HOSTILE) | extras()
    )
    open_page(browser, tmp_path, doc, "run")
    # Offline and self-contained: the page asked the network for nothing.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    # Hostile names are text: the title reads as typed, nothing ran, no element was injected.
    assert browser.title == "probesim: " + HOSTILE.replace("\u202e", "\\u202e")
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.execute_script("return document.querySelectorAll('script').length") == 3
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    charts = assert_every_chart_drawn(browser, 7)
    replicas = charts[0]
    assert replicas["title"].startswith("deployment/")
    assert [t["name"] for t in replicas["traces"]][-2:] == ["container restart", "rollout"]
    assert (
        browser.execute_script("return document.querySelectorAll('#figure-1 .shapelayer path').length") == 1
    )

    # The event filter: every word typed must appear in a row.
    events = [
        Event(round(e["time"] * 1000), e["type"], e["reason"], e["object"], e["message"])
        for e in doc["events"]
    ]
    rows = aggregate(events)
    assert visible_rows(browser) == len(rows)
    count = browser.find_element("id", "event-count")
    assert count.text == f"{len(rows)} of {len(rows)} rows"
    box = browser.find_element("id", "event-filter")
    box.send_keys("killing")
    killing = sum(1 for a in rows if a.event.reason == "Killing")
    assert killing > 0
    assert visible_rows(browser) == killing
    assert count.text == f"{killing} of {len(rows)} rows"
    box.send_keys(" -0")  # and the pod's name: patient-0 renamed <hostile>-0
    assert visible_rows(browser) == sum(
        1 for a in rows if a.event.reason == "Killing" and a.event.object.endswith("-0")
    )
    box.clear()
    box.send_keys("<script>")  # the hostile name, as typed
    assert visible_rows(browser) == len(rows)  # every event names the renamed pods
    box.clear()
    box.send_keys("no such event")
    assert visible_rows(browser) == 0
    assert count.text == f"0 of {len(rows)} rows"

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.set_window_size(1300, int(browser.execute_script("return document.body.scrollHeight")))
    assert browser.save_screenshot(str(ARTIFACTS / "report-run.png"))
    assert console_errors(browser) == []


def test_ejections_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    open_page(browser, tmp_path, result_doc("seed003-outlier"), "outlier")
    charts = assert_every_chart_drawn(browser, 3)  # replicas, endpoints, requests (no latency model)
    endpoints = next(c for c in charts if c["title"] == "Endpoints")
    assert [t["name"] for t in endpoints["traces"]] == [
        "backend ready",
        "route /: ejections in force",
        "outlier ejection",
    ]
    assert endpoints["drawn"][-1]["points"] == 6
    browser.set_window_size(1300, int(browser.execute_script("return document.body.scrollHeight")))
    assert browser.save_screenshot(str(ARTIFACTS / "report-outlier.png"))
    assert console_errors(browser) == []


def visible_table_rows(browser: Any, table: str) -> int:
    return int(
        browser.execute_script(f"return document.querySelectorAll('#{table} tbody tr:not([hidden])').length")
    )


def test_sweep_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    text, page = sweep_outputs()  # 2 rates x 2 dependency latencies x 2 seeds, two thresholds
    open_page(browser, tmp_path, page, "sweep")
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    figures = figures_of(page)
    charts = assert_every_chart_drawn(browser, len(figures))
    titles = [c["title"] for c in charts]
    for field in ("spec.traffic[0].rate", "spec.dependencies.httpbin.latency"):
        assert f"Failed requests by {field}" in titles
        assert f"Runs passing each threshold by {field}" in titles
    # The band between the seeds' fewest and most failures is filled.
    failed = charts[titles.index("Failed requests by spec.traffic[0].rate")]
    assert any(d["fill"] > 10 for d in failed["drawn"])
    # The rows filter: every word typed must appear in a row.
    rows = len(text.strip().splitlines()) - 1
    assert visible_table_rows(browser, "rows") == rows
    box = browser.find_element("id", "row-filter")
    box.send_keys("150ms")
    assert visible_table_rows(browser, "rows") == rows // 2
    assert browser.find_element("id", "row-count").text == f"{rows // 2} of {rows} rows"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.set_window_size(1300, int(browser.execute_script("return document.body.scrollHeight")))
    assert browser.save_screenshot(str(ARTIFACTS / "report-sweep.png"))
    assert console_errors(browser) == []


def test_tune_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    """The page of test_tune_page.py's hand-made outcome (no trials run): both Pareto charts
    drawn with a point per row, the current and recommended settings marked on each, the
    recommended row highlighted. The page has no table filter (its table is the short front)."""
    got = tune_inputs(tmp_path)
    o = tune_outcome(got)
    assert o.recommended is not None
    page = render_tune(o, got, patches(got, o.current.setting, o.recommended.setting))
    open_page(browser, tmp_path, page, "tune")
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    charts = assert_every_chart_drawn(browser, 2)
    assert [c["title"] for c in charts] == [
        "Failed requests and hung-pod removal",
        "Failed requests and needless restarts",
    ]
    for c in charts:
        assert [(t["name"], t["mode"], t["points"]) for t in c["traces"]] == [
            ("Pareto front", "markers", 1),  # trial 7; trial 3 is drawn as the recommended
            ("current setting", "markers", 1),
            ("recommended (trial 3)", "markers", 1),
        ]
        assert [d["points"] for d in c["drawn"]] == [1, 1, 1]
    assert browser.execute_script("return document.querySelectorAll('input.filter').length") == 0
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#front tbody tr')).map("
        "function (tr) { return [tr.className, tr.cells[0].textContent]; })"
    )
    assert rows == [["", "current setting"], ["pass", "trial 3 (recommended)"], ["", "trial 7"]]
    # The patch block, as a person copies it from the page, is the patch as YAML (newlines kept,
    # no \x0a), and the kubectl command wraps inside the page instead of running off it.
    [shown] = browser.execute_script(
        "return Array.from(document.querySelectorAll('pre.patch')).map(p => p.innerText)"
    )
    assert "\\x0a" not in shown
    assert yaml.safe_load(shown) == patches(got, o.current.setting, o.recommended.setting)[0].patch
    fits = browser.execute_script(
        "return Array.from(document.querySelectorAll('pre.command')).map(p => [p.scrollWidth <= p.clientWidth, p.innerText])"
    )
    assert fits and all(ok for ok, _ in fits)
    assert fits[0][1].startswith("kubectl patch deployment") and "\\\n  -p '" in fits[0][1]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.set_window_size(1300, int(browser.execute_script("return document.body.scrollHeight")))
    assert browser.save_screenshot(str(ARTIFACTS / "report-tune.png"))
    assert console_errors(browser) == []
