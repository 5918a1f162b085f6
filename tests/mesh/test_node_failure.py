"""A node failure behind client sidecars: 3 pods on 3 nodes, node-2 (web-1's) crashes at 60 s,
30 requests a second from one client. A dead host answers nothing and sends no reset: the
sidecar's first request there goes out on the connection it kept alive and hangs until the
client gives up (nothing reported); the next ones need a new connection, whose attempt fails at
the cluster's connect_timeout (Istio's connectionPool.tcp.connectTimeout, 10 s by default),
failing with it every request waiting in the pool for a connection (purgePendingStreams): 503
connect failures (UF), which Envoy's outlier detection counts, without split mode, as 5xx and
gateway errors (reference/envoy-istio.md §2.2), when the attempt fails — not when each request
was sent."""

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
    """consecutive5xxErrors 5: web-1's first request after the crash (60.066 s: every third of
    30/s) hangs on the kept-alive connection; the next (60.166 s) opens a connection, and the
    ten sent until its 1 s connect timeout wait for it and fail with it at 61.166 s: the host is
    ejected then (the gateway-failure detection counts too, not enforced by default). It comes
    back after baseEjectionTime (92 s, at the 1 s interval's tick), its kept-alive connection
    gone: the requests from 92.066 s fail with that attempt's timeout at 93.066 s, ejected
    again; at 105 s the endpoint goes. Failed: the hung one and the 11 sent in each window."""
    r = run({**FAST, **DETECT}, retries={"attempts": 0})
    assert ejections(r) == [
        (61.166, "CONSECUTIVE_GATEWAY_FAILURE", False),
        (61.166, "CONSECUTIVE_5XX", True),
        (93.066, "CONSECUTIVE_GATEWAY_FAILURE", False),
        (93.066, "CONSECUTIVE_5XX", True),
    ]
    assert times(r, "OutlierUneject") == [92]
    assert r.route("/").failed["not_answering"] == 1 + 11 + 11
    accounted(r)


def test_istio_defaults_retry_the_connect_failure_on_another_host() -> None:
    """Istio's default retries (2 attempts, retryOn connect-failure among others) send a failed
    connection's request to another host: only the one hung on the kept-alive connection fails
    (at the client's 60 s timeout, not retried: nothing answered, nothing reset); every other
    request that met web-1 waits for the 10 s connect timeout of the attempt opened at
    60.166 s, and the detection ejects when it fires, at 70.166 s."""
    r = run(DETECT)
    assert r.route("/").failed == {**dict.fromkeys(r.route("/").failed, 0), "not_answering": 1}
    assert r.route("/").envoy["upstream_rq_retry"] == 142
    assert [t for t, kind, enforced in ejections(r) if enforced] == [70.166]
    accounted(r)
