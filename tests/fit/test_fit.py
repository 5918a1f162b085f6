"""probesim fit on telemetry of a known behaviour (tests/fit/telemetry.py): each value recovered
within 15 % of the truth, saying where it came from; what the data cannot determine refused with
why; bad or missing series one-line errors naming the query; --compare agreeing on what the
scenario holds (an error fraction included)."""

from __future__ import annotations

import json
import math
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml
from typer.testing import CliRunner

from probesim.cli import app
from probesim.errors import InputError
from probesim.fit.command import Request, fit, write
from probesim.fit.compare import compare
from probesim.fit.kubectl import read_events
from probesim.fit.queries import PRESETS, Mapping, queries
from tests.fit.telemetry import DEPLOYMENT, T0, Truth, _matrix, write_pods, write_saved

runner = CliRunner()


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "web.yaml").write_text(DEPLOYMENT, encoding="utf-8")
    write_saved(tmp_path / "saved", Truth())
    write_pods(tmp_path / "pods.json", Truth())
    return tmp_path


def _values(report: dict[str, Any]) -> dict[str, float]:
    return {f["field"]: f["value"] for f in report["fitted"]}


def test_each_value_is_recovered_within_15_percent(inputs: Path) -> None:
    out = inputs / "fitted.yaml"
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "--pods",
                            str(inputs / "pods.json"), "-o", str(out), "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    v = _values(report)
    truth = Truth()
    assert v["containers.app.start"] == pytest.approx(truth.start_s, rel=0.15)
    assert v["containers.app.routes./api.cpu"] == pytest.approx(truth.cpu_s * 1000, rel=0.15)
    assert v["containers.app.routes./api.wall"] == pytest.approx(truth.wall_s * 1000, rel=0.15)
    assert v["variability"] == pytest.approx(truth.sigma, rel=0.15)
    assert v["traffic./api"] == pytest.approx(30, rel=0.05)  # the mean of 30 + 20 sin over two periods
    # The CPU besides requests, per pod: the idle floor over the 3 pods.
    assert v["containers.app.idleCpu"] == pytest.approx(truth.idle_cores / truth.pods * 1000, rel=0.15)
    # Where each came from.
    by = {f["field"]: f for f in report["fitted"]}
    assert (
        "3 pods' (kubectl) container start → Ready (readiness every 1 s"
        in by["containers.app.start"]["source"]
    )
    assert "120 samples" in by["containers.app.routes./api.cpu"]["source"]
    # The scenario holds them, and runs.
    doc = next(iter(yaml.safe_load_all(out.read_text(encoding="utf-8"))))
    app_ = doc["spec"]["behavior"]["web"]["containers"]["app"]
    assert app_["start"] == f"{v['containers.app.start']:g}s"
    assert app_["idleCpu"] == f"{v['containers.app.idleCpu']:g}m"
    assert app_["routes"]["/api"] == {"cpu": f"{v['containers.app.routes./api.cpu']:g}ms",
                                      "wall": f"{v['containers.app.routes./api.wall']:g}ms"}  # fmt: skip
    assert doc["spec"]["traffic"] == [{"name": "/api", "service": "web", "path": "/api",
                                       "series": "fitted-traffic-0.csv"}]  # fmt: skip
    rows = (inputs / "fitted-traffic-0.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 121 and rows[0].startswith("0,") and rows[1].startswith("15,")
    assert rows[-1] == "1800,0"  # the traffic ends after the last sample's step
    assert doc["spec"]["duration"] == "30m"
    run = runner.invoke(app, ["run", str(out), "--json", "--no-series"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["summary"]["routes"][0]["name"] == "/api"


def test_compare_agrees_on_what_the_scenario_holds(inputs: Path) -> None:
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "--pods",
                            str(inputs / "pods.json"), "-o", str(inputs / "f.yaml"), "--compare", "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["comparison"]["rows"]
    figures = {(x["object"], x["figure"]): x for x in rows}
    assert figures[("workload/web", "ready pods (mean)")]["agree"]
    assert figures[("workload/web", "restarts")]["simulated"] == 0
    assert figures[("route//api", "error rate")]["measured"] == 0
    assert figures[("route//api", "latency p50 (ms)")]["agree"]
    assert all(x["agree"] for x in rows), rows


def test_an_error_fraction_is_fitted_into_the_route_and_compare_agrees(inputs: Path) -> None:
    write_saved(inputs / "saved", Truth(error_share=0.05))
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "-o",
                            str(inputs / "f.yaml"), "--compare", "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    errors = next(f for f in report["fitted"] if f["field"] == "containers.app.routes./api.errors")
    assert errors["value"] == pytest.approx(5.0, rel=0.15)
    assert errors["unit"].startswith("% of answers") and "binomial" in errors["fit"]
    assert 'http_response_status_code=~"5.."' in errors["source"]  # the query it came from
    doc = next(iter(yaml.safe_load_all((inputs / "f.yaml").read_text(encoding="utf-8"))))
    route = doc["spec"]["behavior"]["web"]["containers"]["app"]["routes"]["/api"]
    assert route["errors"] == {"percent": errors["value"], "status": 500}
    # The fitted scenario fails its share of requests, as the telemetry did.
    rate = next(x for x in report["comparison"]["rows"] if x["figure"] == "error rate")
    assert rate["measured"] == pytest.approx(0.05) and rate["agree"], rate
    assert rate["simulated"] == pytest.approx(0.05, abs=0.01)
    # check --stress starts from the fitted scenario: its traffic (a series file) and its errors.
    r = runner.invoke(app, ["check", str(inputs / "k8s"), "--stress", "--scenario", str(inputs / "f.yaml"),
                            "--format", "json"])  # fmt: skip
    baseline = next(x for x in json.loads(r.stdout)["stress"] if x["stress"] == "baseline")
    assert baseline["errorPercent"] == pytest.approx(5.0, abs=1.0), baseline


def test_a_start_the_data_cannot_tell_is_refused_with_why(inputs: Path) -> None:
    # Every pod Ready at the first probe: the app answered by then, but when is unknown.
    (inputs / "k8s" / "web.yaml").write_text(
        DEPLOYMENT.replace("periodSeconds: 1", "periodSeconds: 1\n            initialDelaySeconds: 30"),
        encoding="utf-8",
    )
    write_pods(inputs / "pods.json", Truth(), ready_after=(30.0, 30.0, 30.0))
    r = fit(
        Request(
            [str(inputs / "k8s")],
            inputs / "f.yaml",
            saved=str(inputs / "saved"),
            pods=str(inputs / "pods.json"),
        )
    )
    why = dict(r.not_fitted)["containers.app.start"]
    assert why.startswith("every pod was Ready at its first counted readiness probe (30 s after its start)")
    assert "containers.app.start" not in {f.path for f in r.fitted}


def test_a_missing_or_failed_query_is_one_line_naming_it(inputs: Path) -> None:
    (inputs / "saved" / "requests.json").unlink()
    r = runner.invoke(
        app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "-o", str(inputs / "f.yaml")]
    )
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and r.output.startswith("error: no series answer 'sum by (http_route)")
    (inputs / "saved" / "requests.json").write_text(json.dumps(
        {"status": "error", "errorType": "bad_data", "error": "1:6: parse error: unclosed left parenthesis"}))  # fmt: skip
    r = runner.invoke(
        app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "-o", str(inputs / "f.yaml")]
    )
    assert r.exit_code == 2
    assert "requests.json: the answer to 'sum by (http_route)" in r.output
    assert "Prometheus said bad_data: 1:6: parse error: unclosed left parenthesis" in r.output


def test_print_queries_names_each_with_the_mapping_applied(inputs: Path) -> None:
    (inputs / "map.yaml").write_text("histogram: http_request_duration_seconds\nrouteLabel: handler\n")
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "-o", "x.yaml", "--print-queries", "--mapping",
                            str(inputs / "map.yaml")])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (
        'sum by (handler) (rate(http_request_duration_seconds_count{namespace="shop",pod=~"web-.*"}[1m]))'
        in r.output
    )
    assert (
        'sum(rate(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-.*",container="app"}[1m]))'
        in r.output
    )
    (inputs / "map.yaml").write_text("histogam: x\n")
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "-o", "x.yaml", "--print-queries", "--mapping",
                            str(inputs / "map.yaml")])  # fmt: skip
    assert (
        r.exit_code == 2
        and "map.yaml: histogam: Extra inputs are not permitted (fields: histogram" in r.output
    )


class _Prometheus(BaseHTTPRequestHandler):
    """Answers query_range from the saved answers, by the query's text (what a server does)."""

    answers: ClassVar[dict[str, bytes]] = {}
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
        self.seen.append(form)
        body = self.answers.get(form["query"])
        code = 200
        if body is None:  # a series nobody exports: Prometheus answers with no series
            body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server(inputs: Path) -> Iterator[str]:
    qs = queries(Mapping(), "shop", "web-.*", "app", "1m")
    saved = inputs / "saved"
    _Prometheus.answers = {
        q: (saved / f"{n}.json").read_bytes() for n, q in qs.items() if (saved / f"{n}.json").exists()
    }
    _Prometheus.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_live_prometheus_is_queried_over_the_period(inputs: Path, server: str) -> None:
    end = T0 + 30 * 60
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--prometheus", server, "--start", str(T0), "--end",
                            "2025-11-24T16:30:00Z", "--step", "15", "-o", str(inputs / "f.yaml"), "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert _values(json.loads(r.stdout))["containers.app.routes./api.cpu"] == pytest.approx(20, rel=0.15)
    assert {s["start"] for s in _Prometheus.seen} == {str(T0)}
    assert {float(s["end"]) for s in _Prometheus.seen} == {end}
    assert len(_Prometheus.seen) == len(
        queries(Mapping(), "shop", "web-.*", "app", "1m", "web", "web")
    )  # each once


def test_k6_output_gives_the_traffic_as_sent(inputs: Path) -> None:
    lines = [
        json.dumps(
            {"type": "Metric", "metric": "http_reqs", "data": {"name": "http_reqs", "type": "counter"}}
        )
    ]
    for s in range(10):
        for _ in range(5 + s):
            lines.append(json.dumps({"type": "Point", "metric": "http_reqs", "data": {
                "time": f"2025-11-24T16:10:{s:02d}.5Z", "value": 1,
                "tags": {"url": "http://web.shop/api?x=1", "name": "http://web.shop/api?x=1", "method": "GET"}}}))  # fmt: skip
    (inputs / "k6.json").write_text("\n".join(lines) + "\n")
    r = fit(
        Request(
            [str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved"), k6=str(inputs / "k6.json")
        )
    )
    assert next(f for f in r.fitted if f.path == "traffic./api").source == "k6 --out json"
    csv = next(iter(r.files.values())).splitlines()
    # k6 ran 10 minutes into the telemetry's period (16:10 of 16:00-16:30): its rows keep their place.
    assert csv == [f"{600 + s},{5 + s}" for s in range(10)] + ["610,0"]  # and no more after it


def test_the_first_ready_comes_from_the_series_when_kubectl_only_has_the_last(inputs: Path) -> None:
    """A pod that flapped long after its start: kubectl's lastTransitionTime is the flap's, the
    kube-state-metrics series still show the first Ready; fit takes the series."""
    from tests.fit.telemetry import _matrix

    started = T0 - 10.0
    times = [started + i for i in range(0, 700, 1)]
    ready = [1.0 if 21 <= i < 600 or i >= 605 else 0.0 for i in range(700)]
    doc_ready = _matrix([({"pod": f"web-{k}", "condition": "true"}, ready) for k in range(3)], times)
    doc_started = _matrix(
        [({"pod": f"web-{k}", "container": "app"}, [started] * 700) for k in range(3)], times
    )
    (inputs / "saved" / "pod_ready.json").write_text(json.dumps(doc_ready))
    (inputs / "saved" / "pod_started.json").write_text(json.dumps(doc_started))
    write_pods(inputs / "pods.json", Truth(), ready_after=(605.0, 605.0, 605.0))  # the flap's end
    r = fit(
        Request(
            [str(inputs / "k8s")],
            inputs / "f.yaml",
            saved=str(inputs / "saved"),
            pods=str(inputs / "pods.json"),
        )
    )
    start = next(f for f in r.fitted if f.path == "containers.app.start")
    assert start.value == 20.0  # Ready at 21 s with probes every second: answered in (20, 21]
    assert "(kube-state-metrics)" in start.source


LAB_RUN = Path(__file__).parent / "data" / "lab-run"


def test_fit_from_a_lab_runs_saved_telemetry(tmp_path: Path) -> None:
    """Fixtures a lab run produced (probesim lab s.yaml --prometheus DIR, the scenario of
    tests/lab/test_telemetry.py: an app answering 20 s after its start, 20 ms of CPU a request
    at half a core, 5 % of them answered 500, 15 then 60 requests/s — a surge that saturates the
    2 pods): the answers its real Prometheus gave to fit's queries, the pods as kubectl lists
    them and what the load generator sent as k6 logs it. Both ways to the start (series,
    kubectl), the cost and the error share within 15 %, the traffic as sent."""
    from tests.lab.test_telemetry import WEB

    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "web.yaml").write_text(WEB)
    r = fit(
        Request(
            [str(tmp_path / "k8s")],
            tmp_path / "f.yaml",
            saved=str(LAB_RUN / "web"),
            pods=str(LAB_RUN / "pods.json"),
            k6=str(LAB_RUN / "k6.json"),
        )
    )
    values = {f.path: f.value for f in r.fitted}
    assert values["containers.app.start"] == pytest.approx(20, rel=0.15)
    assert values["containers.app.routes./api.cpu"] == pytest.approx(20, rel=0.15)
    assert values["containers.app.routes./api.errors"] == pytest.approx(5, rel=0.15)
    # The traffic as sent: 15 a second for 26 s and 45 more for 13 s, all 975 in the series
    # (the app's histogram alone would stop at what the saturated pods answered).
    (csv,) = r.files.values()
    rows = [line.split(",") for line in csv.splitlines()]
    assert sum(float(v) for _, v in rows) == 975 and rows[-1][1] == "0"
    assert max(float(v) for _, v in rows) == 60
    # What the requests got, as k6 logs it, beside what the simulation's clients got: in the surge
    # the clients waited seconds, which the app's histogram (timing from when the app read a
    # request) does not show; the client-side rows agree where the histogram's cannot.
    write(r, tmp_path / "f.yaml")
    rows_by = {x["figure"]: x for x in compare(r, tmp_path / "f.yaml") if x["object"] == "route//api"}
    p95, histogram_p95 = rows_by["client latency p95 (ms, k6)"], rows_by["latency p95 (ms)"]
    assert p95["measured"] > 1000 >= histogram_p95["measured"]
    assert p95["agree"] and rows_by["client failed share (k6)"]["agree"], rows_by
    # The same run's k6 summary: its totals are its lines' (every request ended, 5 % failed).
    points = [json.loads(line) for line in (LAB_RUN / "k6.json").open()]
    failed = [p["data"]["value"] for p in points if p["metric"] == "http_req_failed"]
    summary = json.loads((LAB_RUN / "k6-summary.json").read_text())["metrics"]
    assert summary["http_reqs"]["count"] == 975 == len(failed)
    assert summary["http_req_failed"]["value"] == pytest.approx(sum(failed) / len(failed))
    # Fitted from the summary, the traffic is its mean rate for the run's length: the surge is gone.
    s = fit(Request([str(tmp_path / "k8s")], tmp_path / "s.yaml", saved=str(LAB_RUN / "web"),
                    k6=str(LAB_RUN / "k6-summary.json")))  # fmt: skip
    (csv,) = s.files.values()
    rates = [float(line.split(",")[1]) for line in csv.splitlines()]
    rate = summary["http_reqs"]["rate"]
    assert rates[:-1] == [pytest.approx(rate, rel=1e-5)] * math.ceil(975 / rate) and rates[-1] == 0
    # kubectl alone (the series' answers left out) gives the start too.
    only = tmp_path / "saved"
    only.mkdir()
    for p in (LAB_RUN / "web").iterdir():
        if p.stem not in ("pod_ready", "pod_started"):
            (only / p.name).write_bytes(p.read_bytes())
    r = fit(
        Request(
            [str(tmp_path / "k8s")], tmp_path / "g.yaml", saved=str(only), pods=str(LAB_RUN / "pods.json")
        )
    )
    start = next(f for f in r.fitted if f.path == "containers.app.start")
    assert start.value == pytest.approx(20, rel=0.15) and "(kubectl)" in start.source


@pytest.mark.parametrize(
    ("pods", "field"),
    [
        (
            {"items": [{"metadata": {"name": "web-0"}, "status": {"conditions": [1]}}]},
            "items[0].status.conditions",
        ),
        ({"items": [{"metadata": {"name": "web-0"}, "status": "Running"}]}, "items[0].status"),
        ({"items": [{"metadata": "web-0"}]}, "items[0].metadata"),
    ],
)
def test_malformed_kubectl_json_is_one_line_naming_the_field(inputs: Path, pods: Any, field: str) -> None:
    (inputs / "pods.json").write_text(json.dumps(pods))
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "--pods",
                            str(inputs / "pods.json"), "-o", str(inputs / "f.yaml")])  # fmt: skip
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"pods.json: {field}:" in r.output


def _summary(p95: float = 40.0, failed: float = 0.02, **metrics: Any) -> str:
    """A k6 --summary-export of a 60 s run at 30 requests/s (its classic format)."""
    doc = {
        "root_group": {"name": "", "path": "", "id": "d41d8cd98f00b204e9800998ecf8427e", "groups": {}, "checks": {}},
        "metrics": {
            "http_reqs": {"count": 1800, "rate": 30.0},
            "http_req_duration": {"avg": 15.0, "min": 2.0, "med": 12.0, "max": 300.0, "p(90)": 30.0, "p(95)": p95},
            "http_req_failed": {"value": failed, "passes": round(1800 * failed), "fails": 1800 - round(1800 * failed)},
            "vus": {"value": 1, "min": 1, "max": 5},
            **metrics,
        },
    }  # fmt: skip
    return json.dumps(doc, indent=4)


def test_a_k6_summary_gives_its_mean_rate_as_a_constant_traffic_and_what_it_got(inputs: Path) -> None:
    """The summary has no times: its rate is sent for its run's length (count / rate) from the
    app's first counted request; --compare sets its p50/p95 and failed share beside the
    simulation's clients, over the whole run."""
    (inputs / "summary.json").write_text(_summary())
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "--k6",
                            str(inputs / "summary.json"), "-o", str(inputs / "f.yaml"), "--compare", "--json"])  # fmt: skip
    assert r.exit_code in (0, 1), r.output
    report = json.loads(r.stdout)
    traffic = next(f for f in report["fitted"] if f["field"] == "traffic./api")
    assert traffic["value"] == 30 and "k6 --summary-export (its mean rate" in traffic["source"]
    rows = (inputs / "f-traffic-0.csv").read_text().splitlines()
    # The app's first counted request is the period's first sample: 60 rows of 30, then none.
    assert rows == [f"{s},30" for s in range(60)] + ["60,0"]
    figures = {x["figure"]: x for x in report["comparison"]["rows"] if x["object"] == "route//api"}
    assert figures["client latency p50 (ms, k6)"]["measured"] == 12.0
    assert figures["client latency p95 (ms, k6)"]["measured"] == 40.0
    assert figures["client failed share (k6)"]["measured"] == 0.02
    # The tolerance: a quarter of k6's figure, at least 10 ms.
    sim = figures["client latency p95 (ms, k6)"]["simulated"]
    assert sim > 0
    for measured, agree in ((sim * 1.2, True), (sim * 1.4 + 10, False)):
        (inputs / "summary.json").write_text(_summary(p95=measured))
        again = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "--k6",
                                    str(inputs / "summary.json"), "-o", str(inputs / "f.yaml"), "--compare",
                                    "--json"])  # fmt: skip
        row = next(x for x in json.loads(again.stdout)["comparison"]["rows"]
                   if x["figure"] == "client latency p95 (ms, k6)")  # fmt: skip
        assert row["simulated"] == sim and row["agree"] is agree, row


def test_a_k6_summary_with_route_submetrics_gives_each_route_its_rate(inputs: Path) -> None:
    subs = {"http_reqs{name:/api}": {"count": 1200, "rate": 20.0},
            "http_reqs{url:http://web.shop/other}": {"count": 600, "rate": 10.0},
            "http_req_duration{name:/api}": {"med": 9.0, "p(95)": 33.0},
            "http_reqs{status:200}": {"count": 1700, "rate": 28.3}}  # fmt: skip
    (inputs / "summary.json").write_text(_summary(**subs))
    from probesim.fit.k6 import read

    rec = read(str(inputs / "summary.json"))
    assert rec.mean_rates == {"/api": 20.0, "/other": 10.0} and rec.duration_s == 60
    assert rec.got() == {
        "*": {"requests": 1800, "p50Ms": 12.0, "p95Ms": 40.0, "failedShare": 0.02},
        "/api": {"requests": 1200, "p50Ms": 9.0, "p95Ms": 33.0},
        "/other": {"requests": 600},
    }


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_summary(failed=2.0), "summary.json: metrics.http_req_failed.value: 2: a share of 0 to 1"),
        (_summary(http_reqs={"count": 10}), "summary.json: metrics.http_reqs: no requests in the summary"),
        (
            _summary(**{"http_req_duration{name:/api}": {"med": "fast"}}),
            "summary.json: metrics.http_req_duration{name:/api}.med: 'fast': a number of 0 or more",
        ),
        (json.dumps({"version": "1.0.0", "metrics": {}}), "k6's new machine-readable summary is not read"),
        ("{\n  broken", "summary.json: not JSON"),
    ],
)
def test_a_bad_k6_summary_is_one_line_naming_the_field(inputs: Path, text: str, says: str) -> None:
    (inputs / "summary.json").write_text(text)
    r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "--k6",
                            str(inputs / "summary.json"), "-o", str(inputs / "f.yaml")])  # fmt: skip
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert says in r.output


def test_a_gzipped_k6_output_is_read_as_k6_writes_it_and_a_broken_one_is_one_line(inputs: Path) -> None:
    import gzip

    from probesim.fit.k6 import read

    plain = LAB_RUN / "k6.json"
    with gzip.open(inputs / "k6.json.gz", "wt", encoding="utf-8") as f:
        f.write(plain.read_text(encoding="utf-8"))
    a, b = read(str(plain)), read(str(inputs / "k6.json.gz"))
    assert a.rates == b.rates and a.got() == b.got() and a.got()["/api"]["requests"] == 975
    (inputs / "cut.json.gz").write_bytes((inputs / "k6.json.gz").read_bytes()[:500])
    (inputs / "not.json.gz").write_text("plain text")
    (inputs / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    for name, says in (("cut.json.gz", "cannot read"), ("not.json.gz", "cannot read"),
                       ("binary.json", "not UTF-8 text")):  # fmt: skip
        r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "--k6",
                                str(inputs / name), "-o", str(inputs / "f.yaml")])  # fmt: skip
        assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
        assert f"{name}: {says}" in r.output


def test_k6_lines_give_each_routes_durations_and_failed_share_after_the_ramp(inputs: Path) -> None:
    """http_req_duration and http_req_failed Points: k6's percentiles (linear between the sorted
    samples) and the failed share, of the requests that ended after the telemetry's ramp."""
    from probesim.fit.k6 import read

    def point(metric: str, second: int, value: float, url: str = "http://web.shop/api") -> str:
        return json.dumps({"type": "Point", "metric": metric, "data": {
            "time": f"2025-11-24T16:10:{second:02d}Z", "value": value, "tags": {"url": url, "name": url}}})  # fmt: skip

    lines = [point("http_reqs", s, 1) for s in range(10)]
    lines += [point("http_req_duration", 0, 5000.0)]  # before the ramp's end: left out
    lines += [point("http_req_duration", 1 + i % 9, float(i)) for i in range(1, 101)]
    lines += [point("http_req_failed", 1 + i % 9, float(i <= 5)) for i in range(1, 101)]
    lines += [point("http_req_duration", 2, 7.0, "http://web.shop/health")]
    (inputs / "k6.json").write_text("\n".join(lines) + "\n")
    rec = read(str(inputs / "k6.json"))
    since = T0 + 601  # 16:10:01
    assert rec.got(since) == {
        "/api": {"requests": 100, "p50Ms": 50.5, "p95Ms": pytest.approx(95.05), "failedShare": 0.05},
        "/health": {"requests": 1, "p50Ms": 7.0, "p95Ms": 7.0},
    }
    assert rec.got()["/api"]["requests"] == 101
    # fit takes them after the ramp of the telemetry's ready pods (all 3 Ready from its start).
    r = fit(
        Request(
            [str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved"), k6=str(inputs / "k6.json")
        )
    )
    assert r.telemetry["rampEnd"] == T0
    assert r.telemetry["k6"] == {"source": "k6 --out json", "timed": True, "routes": rec.got(T0)}
    assert r.telemetry["k6"]["routes"]["/api"]["requests"] == 101


def _as_istio(saved: Path) -> None:
    """The app's histogram as Istio's server sidecars export it: in milliseconds, no route label."""
    for name in ("requests", "errors", "latency_sum", "buckets"):
        doc = json.loads((saved / f"{name}.json").read_text())
        for series in doc["data"]["result"]:
            series["metric"].pop("http_route")
            le = series["metric"].get("le")
            if le is not None and le != "+Inf":
                series["metric"]["le"] = repr(float(le) * 1000)
            if name == "latency_sum":
                series["values"] = [[t, repr(float(v) * 1000)] for t, v in series["values"]]
        (saved / f"{name}.json").write_text(json.dumps(doc))


def test_istios_request_metrics_fit_the_workload_as_one_route(inputs: Path) -> None:
    r = runner.invoke(
        app, ["fit", str(inputs / "k8s"), "-o", "x.yaml", "--print-queries", "--mapping", "istio"]
    )
    assert r.exit_code == 0, r.output
    sel = 'namespace="shop",pod=~"web-.*",reporter="destination"'
    assert f"sum(rate(istio_requests_total{{{sel}}}[1m]))" in r.output
    assert f'sum(rate(istio_requests_total{{{sel},response_code=~"5.."}}[1m]))' in r.output
    assert f"sum(rate(istio_request_duration_milliseconds_sum{{{sel}}}[1m]))" in r.output
    assert f"sum by (le) (rate(istio_request_duration_milliseconds_bucket{{{sel}}}[1m]))" in r.output
    _as_istio(inputs / "saved")
    out = fit(Request([str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved"),
                      pods=str(inputs / "pods.json"), mapping=PRESETS["istio"]))  # fmt: skip
    values = {f.path: f.value for f in out.fitted}
    truth = Truth()
    assert values["containers.app.routes.*.cpu"] == pytest.approx(truth.cpu_s * 1000, rel=0.15)
    assert values["containers.app.routes.*.wall"] == pytest.approx(truth.wall_s * 1000, rel=0.15)
    assert values["traffic.*"] == pytest.approx(30, rel=0.05)


def _probes(saved: Path, failed: list[float]) -> None:
    """The kubelet's prober counter: readiness failures as given per sample, successes beside."""
    n = len(json.loads((saved / "ready.json").read_text())["data"]["result"][0]["values"])
    times = [T0 + 15 * i for i in range(n)]
    series = [
        ({"probe_type": "Readiness", "result": "failed"}, failed + [failed[-1]] * (n - len(failed))),
        ({"probe_type": "Readiness", "result": "successful"}, [15.0 * 3 * i for i in range(n)]),
    ]
    (saved / "probes.json").write_text(json.dumps(_matrix(series, times)))


def test_probe_failures_are_compared_from_the_prober_counter_or_the_events(inputs: Path) -> None:
    _probes(inputs / "saved", [0, 0, 1, 3, 4])
    req = Request(
        [str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved"), pods=str(inputs / "pods.json")
    )
    out = fit(req)
    assert out.telemetry["probeFailures"] == {"Readiness": 4}
    from probesim.fit.command import write
    from probesim.fit.compare import compare

    write(out, inputs / "f.yaml")
    rows = {(r["object"], r["figure"]): r for r in compare(out, inputs / "f.yaml")}
    row = rows[("workload/web", "readiness probe failures")]
    # The fitted app never fails its probe: 4 failures the scenario does not hold, beyond ±2.
    assert (row["simulated"], row["measured"], row["agree"]) == (0.0, 4.0, False)
    # kubectl's events instead: repeats folded into a count; those before the ramp left out.
    events = {"apiVersion": "v1", "kind": "List", "items": [
        {"kind": "Event", "involvedObject": {"kind": "Pod", "name": "web-1"}, "reason": "Unhealthy",
         "message": 'Liveness probe failed: Get "http://10.0.0.5:8080/healthz": context deadline exceeded',
         "count": 3, "firstTimestamp": "2025-11-24T16:05:00Z", "lastTimestamp": "2025-11-24T16:06:00Z"},
        {"kind": "Event", "involvedObject": {"kind": "Pod", "name": "web-1"}, "reason": "Unhealthy",
         "message": "Readiness probe failed: HTTP probe failed with statuscode: 503", "count": 2,
         "lastTimestamp": "2025-11-24T15:00:00Z"},
        {"kind": "Event", "involvedObject": {"kind": "Pod", "name": "web-1"}, "reason": "Killing",
         "message": "Container app failed liveness probe, will be restarted", "lastTimestamp": "2025-11-24T16:06:00Z"},
        {"kind": "Event", "involvedObject": {"kind": "Pod", "name": "api-0"}, "reason": "Unhealthy",
         "message": "Liveness probe failed: x", "count": 9, "lastTimestamp": "2025-11-24T16:06:00Z"},
    ]}  # fmt: skip
    (inputs / "events.json").write_text(json.dumps(events))
    assert read_events(str(inputs / "events.json"), "web-.*") == {
        "Liveness": 3, "Readiness": 2, "Startup": 0, "Killing": 1, "BackOff": 0
    }  # fmt: skip
    req.events = str(inputs / "events.json")
    out = fit(req)
    assert out.telemetry["probeFailures"] == {"Liveness": 3, "Readiness": 0, "Startup": 0}
    write(out, inputs / "f.yaml")
    rows = {(r["object"], r["figure"]): r for r in compare(out, inputs / "f.yaml")}
    assert rows[("workload/web", "liveness probe failures")]["measured"] == 3.0
    assert ("workload/web", "readiness probe failures") not in rows  # none either side


def test_a_bad_event_is_one_line_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "e.json").write_text(json.dumps({"items": [{"kind": "Event", "involvedObject": {"name": "web-0"},
                                                            "reason": "Unhealthy", "count": "x"}]}))  # fmt: skip
    with pytest.raises(InputError) as e:
        read_events(str(tmp_path / "e.json"), "web-.*")
    assert e.value.field == "items[0].count" and "not a positive count" in e.value.message


def test_a_probe_paths_wait_comes_from_the_kubelets_probe_durations(inputs: Path) -> None:
    """A health endpoint that waits 200 ms (on a database, say): prober_probe_duration_seconds
    gives it, less its CPU stretched by the load; the fitted scenario costs the probe's path so."""
    write_saved(inputs / "saved", Truth(probe_wall_s=0.2))
    r = fit(Request([str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved")))
    wall = next(f for f in r.fitted if f.path == "containers.app.routes./healthz.wall")
    assert wall.value == pytest.approx(200, rel=0.15)
    assert wall.source.startswith("the kubelet's Readiness probe durations") and "120 samples" in wall.source
    assert any("successful probes only" in n for n in wall.notes)
    doc = next(iter(yaml.safe_load_all(r.scenario)))
    routes = doc["spec"]["behavior"]["web"]["containers"]["app"]["routes"]
    # Its CPU is the generated scenario's for any path; the request route is fitted as before.
    assert routes["/healthz"] == {"cpu": "1ms", "wall": f"{wall.value:g}ms"}
    assert set(routes["/api"]) == {"cpu", "wall"}
    # Without the prober's histogram the path keeps the generated cost.
    for name in ("probe_runs", "probe_seconds"):
        (inputs / "saved" / f"{name}.json").unlink()
    r = fit(Request([str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved")))
    assert not any(f.path.endswith("/healthz.wall") for f in r.fitted)


def test_throttling_is_taken_off_the_wait_and_set_beside_the_simulations(inputs: Path) -> None:
    """Pods throttled in up to 60 % of their CFS periods at the peak: each sample's expected wait
    for the quota (its share × 50 ms) comes off the latency before the wait is fitted; without
    cAdvisor's counters it would be counted as the route's own wait."""
    truth = Truth(throttle_peak=0.6)
    write_saved(inputs / "saved", truth)
    req = Request([str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved"))
    out = fit(req)
    wall = next(f for f in out.fitted if f.path == "containers.app.routes./api.wall")
    assert wall.value == pytest.approx(truth.wall_s * 1000, rel=0.15)
    assert "the throttling wait (cAdvisor's CFS periods)" in wall.source
    share = out.telemetry["throttledShare"]
    assert share == pytest.approx(0.3, abs=0.02)  # the mean of a share rising from 0 to 0.6
    from probesim.fit.command import write
    from probesim.fit.compare import compare

    write(out, inputs / "f.yaml")
    rows = {(r["object"], r["figure"]): r for r in compare(out, inputs / "f.yaml")}
    row = rows[("workload/web", "CPU-throttled share")]
    # Three 1-core pods never need more than a core between them: the simulation throttles
    # none, and says it disagrees.
    assert (row["simulated"], row["agree"]) == (0.0, False) and row["measured"] == share
    for name in ("cfs_periods", "throttled_periods"):
        (inputs / "saved" / f"{name}.json").unlink()
    out = fit(req)
    wall = next(f for f in out.fitted if f.path == "containers.app.routes./api.wall")
    assert wall.value > 1.3 * truth.wall_s * 1000  # the quota's wait taken for the route's
    assert "throttledShare" not in out.telemetry


def test_the_deployments_replica_series_are_set_beside_the_simulations(inputs: Path) -> None:
    from probesim.fit.command import write
    from probesim.fit.compare import compare

    for replicas, agree in ((3, True), (5, False)):
        write_saved(inputs / "saved", Truth(replicas=replicas))
        out = fit(Request([str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved")))
        write(out, inputs / "f.yaml")
        rows = {r["figure"]: r for r in compare(out, inputs / "f.yaml") if r["object"] == "workload/web"}
        for figure in ("desired replicas (mean)", "pods (mean)", "available pods (mean)"):
            assert rows[figure]["simulated"] == 3.0 and rows[figure]["measured"] == replicas, rows[figure]
            assert rows[figure]["agree"] is agree
        # The pods missing from 5 are unavailable; the simulation has none.
        assert rows["unavailable pods (mean)"]["measured"] == replicas - 3
        assert rows["unavailable pods (mean)"]["simulated"] == 0.0


def test_a_probe_path_under_load_throughout_is_not_fitted_and_says_why(inputs: Path) -> None:
    """Pods held to 100m run beyond 80 % of their limit at every sample: a probe's time there is the
    queue's (the simulation adds that itself), so no wall is fitted from it."""
    (inputs / "k8s" / "web.yaml").write_text(DEPLOYMENT.replace('limits: {cpu: "1"}', "limits: {cpu: 100m}"))
    write_saved(inputs / "saved", Truth(probe_wall_s=0.2))
    r = fit(Request([str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved")))
    assert not any(f.path.endswith("/healthz.wall") for f in r.fitted)
    why = dict(r.not_fitted)["containers.app.routes./healthz.wall"]
    assert "fewer than 3 samples of Readiness probe durations below 80% CPU utilization" in why


DESTINATION_RULE = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: shop}
spec:
  host: web.shop.svc.cluster.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 1, interval: 10s, baseEjectionTime: 30s, maxEjectionPercent: 100}
"""


def test_envoys_outlier_ejections_are_compared_with_the_simulated_sidecars(inputs: Path) -> None:
    """Envoy's ejections_enforced_total summed over the callers' sidecars (cluster_name as Istio
    tags it), its increase over the period beside the simulation's client sidecars' count."""
    (inputs / "k8s" / "web.yaml").write_text(DEPLOYMENT + DESTINATION_RULE, encoding="utf-8")
    write_saved(inputs / "saved", Truth(error_share=0.05))
    times = [T0 + 15 * i for i in range(121)]

    def run(increase: float) -> dict[str, Any]:
        counter = [increase * i / 120 for i in range(121)]
        doc = _matrix([({}, counter)], times)
        (inputs / "saved" / "ejections.json").write_text(json.dumps(doc))
        r = runner.invoke(app, ["fit", str(inputs / "k8s"), "--from", str(inputs / "saved"), "-o",
                                str(inputs / "f.yaml"), "--compare", "--json"])  # fmt: skip
        assert r.exit_code in (0, 1), r.output
        rows = json.loads(r.stdout)["comparison"]["rows"]
        return next(x for x in rows if x["figure"] == "outlier ejections (Envoy)")

    first = run(40.0)
    assert first["object"] == "service/web" and first["measured"] == 40.0
    assert first["tolerance"] == 4.0  # a tenth of the count, at least one
    sim = first["simulated"]
    assert run(sim)["agree"] and not run(sim + 5)["agree"]
    # What fit asks Prometheus for.
    q = queries(Mapping(), "shop", "web-.*", "app", "1m", "web", "web")["ejections"]
    assert q == (
        "sum(envoy_cluster_outlier_detection_ejections_enforced_total{cluster_name=~"
        '"outbound\\\\|[0-9]+\\\\|[^|]*\\\\|web\\\\.shop\\\\.svc\\\\..*"})'
    )


def test_a_long_periods_traffic_rows_keep_their_seconds(inputs: Path) -> None:
    """12 days at a 5-minute step: the rows' times past a million seconds are written whole,
    not as 1.0368e+06 (which would lose their seconds)."""
    truth = Truth(minutes=60 * 24 * 12, step_s=300.0)
    write_saved(inputs / "saved", truth)
    r = fit(Request([str(inputs / "k8s")], inputs / "f.yaml", saved=str(inputs / "saved"), step=300.0))
    (csv,) = r.files.values()
    times = [line.split(",")[0] for line in csv.splitlines()]
    assert times[:2] == ["0", "300"] and times[-1] == str(60 * 24 * 12 * 60)
    assert all(t.isdigit() for t in times) and times == sorted(times, key=int)


def test_the_simulated_side_of_the_ejections_row_is_the_client_sidecars_counter() -> None:
    """Seed 003 (pod 2 answering 500 behind two client sidecars): the row's simulated figure is
    Envoy's ejections_enforced_total summed over the routes to the Service, as the run has it."""
    from types import SimpleNamespace

    import probesim.scenarios as scenarios
    from probesim.engine import simulate
    from probesim.fit.compare import compare
    from probesim.manifests.scenario import load_scenario

    path = Path(scenarios.__file__).parent / "seed003-outlier.yaml"
    run = simulate(load_scenario(str(path)))
    enforced = sum(r.envoy["ejections_enforced_total"] for r in run.routes if r.service == "backend")
    assert enforced >= 2  # each sidecar ejects pod 2, and again once it returns
    tel = {"routes": {}, "ejections": {"service": "backend", "count": float(enforced)}}
    (row,) = compare(SimpleNamespace(telemetry=tel, workload="backend"), path)
    assert row == {"object": "service/backend", "figure": "outlier ejections (Envoy)", "simulated": enforced,
                   "measured": enforced, "tolerance": 1.0, "agree": True}  # fmt: skip
