"""A node failure behind client sidecars: 3 pods on 3 nodes, node-2 (web-1's) crashes at 60 s,
30 requests a second from one client. A dead host answers nothing and sends no reset, so the
sidecar's connection attempt fails at the cluster's connect_timeout (Istio's
connectionPool.tcp.connectTimeout, 10 s by default): a 503 connect failure (UF), which Envoy's
outlier detection counts, without split mode, as a 5xx and a gateway error
(reference/envoy-istio.md §2.2), when the attempt fails — not when the request was sent."""

from __future__ import annotations

from typing import Any

from probesim.engine import simulate
from probesim.results import Result
from tests.builders import accounted, scenario, series, times

READINESS = {"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}}


def run(policy: dict[str, Any], retries: dict[str, Any] | None = None) -> Result:
    rule = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": "web"},
        "spec": {"host": "web", "trafficPolicy": {"loadBalancer": {"simple": "ROUND_ROBIN"}, **policy}},
    }
    manifests = [rule]
    if retries is not None:
        manifests.append(
            {
                "apiVersion": "networking.istio.io/v1",
                "kind": "VirtualService",
                "metadata": {"name": "web"},
                "spec": {
                    "hosts": ["web"],
                    "http": [{"route": [{"destination": {"host": "web"}}], "retries": retries}],
                },
            }
        )
    return simulate(
        scenario(
            probes=READINESS,
            replicas=3,
            duration="3m",
            traffic=[{"path": "/", "rate": 30, "clients": 1}],
            manifests=manifests,
            spec={
                "cluster": {"nodes": {"count": 3, "zones": ["a", "b", "c"]}},
                "actions": [{"kind": "nodeDown", "node": "node-2", "at": "60s"}],
            },
        )
    )


FAST = {"connectionPool": {"tcp": {"connectTimeout": "1s"}}}
DETECT = {"outlierDetection": {"consecutive5xxErrors": 5, "interval": "1s", "baseEjectionTime": "30s",
                               "maxEjectionPercent": 50}}  # fmt: skip


def ejections(r: Result) -> list[tuple[float, str, bool]]:
    out = []
    for e in r.events:
        if e.reason == "OutlierEject":
            kind = e.message.split('"type":"')[1].split('"')[0]
            out.append((e.time_ms / 1000, kind, '"enforced":true' in e.message))
    return out


def test_without_outlier_detection_a_third_fail_until_the_node_controller_notices() -> None:
    """No retries, no detection: every third request goes to web-1 and fails at the connect
    timeout, until the endpoint goes at 105 s (MarkPodsNotReady): 45 s × 10/s."""
    r = run(FAST, retries={"attempts": 0})
    assert r.route("/").failed["not_answering"] == 450
    assert sum(series(r, "route./.not_answering")[105:]) == 0
    assert ejections(r) == []
    accounted(r)


def test_outlier_detection_ejects_the_dead_host_a_connect_timeout_after_the_fifth_failure() -> None:
    """consecutive5xxErrors 5: web-1's fifth request (60.466 s: every third of 30/s) fails at
    the 1 s connect timeout, and the host is ejected then (the gateway-failure detection counts
    too, not enforced by default). It comes back after baseEjectionTime (92 s, at the 1 s
    interval's tick), fails five more and is ejected again; at 105 s the endpoint goes."""
    r = run({**FAST, **DETECT}, retries={"attempts": 0})
    assert ejections(r) == [
        (61.466, "CONSECUTIVE_GATEWAY_FAILURE", False),
        (61.466, "CONSECUTIVE_5XX", True),
        (93.466, "CONSECUTIVE_GATEWAY_FAILURE", False),
        (93.466, "CONSECUTIVE_5XX", True),
    ]
    assert times(r, "OutlierUneject") == [92]
    assert r.route("/").failed["not_answering"] == 30
    accounted(r)


def test_istio_defaults_retry_the_connect_failure_on_another_host() -> None:
    """Istio's default retries (2 attempts, retryOn connect-failure among others) send a failed
    connection's request to another host: nothing fails, every request that met web-1 waits the
    10 s connect timeout first; the detection ejects at 70.466 s (10 s after the fifth)."""
    r = run(DETECT)
    assert r.route("/").failed_total == 0
    assert r.route("/").envoy["upstream_rq_retry"] == 145
    assert [t for t, kind, enforced in ejections(r) if enforced] == [70.466]
    accounted(r)
