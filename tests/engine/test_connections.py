"""Client connections: keep-alive clients stay with the pod kube-proxy gave their connection
(whatever its readiness), an Istio sidecar keeps them across app restarts, and a connection
opened with no Ready endpoint is refused or waits for the client's next SYN."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine.fleet import build, injected
from probesim.errors import InputError
from probesim.results import Result
from tests.builders import http, run, scenario, series

READY = {"readinessProbe": http("/ready", periodSeconds=1, failureThreshold=1)}
SIDECAR = {"sidecar.istio.io/inject": "true"}


def two_pods(traffic: dict[str, Any], pod1: list[dict[str, Any]], **kw: Any) -> Result:
    """Two pods answering ``/``; pod 1 goes through ``pod1``'s episodes; 10 req/s from 5 s."""
    return run(
        probes=READY,
        replicas=2,
        duration="50s",
        overrides=[{"ordinals": [1], "containers": {"app": {"start": "5s", "episodes": pod1}}}],
        behavior={"start": "0s"},
        traffic=[{"rate": 10, "start": "5s", **traffic}],
        **kw,
    )


# pod 1 fails readiness and answers 500 on / from 10 s to 20 s.
UNREADY_AND_FAILING = [{"kind": "errors", "at": "10s", "for": "10s", "paths": ["/ready", "/"]}]


def test_requests_follow_readiness_when_each_is_balanced_on_its_own() -> None:
    r = two_pods({}, UNREADY_AND_FAILING)
    assert r.route("/").failed_total == 0


def test_kept_alive_connections_stay_with_a_pod_that_is_not_ready() -> None:
    # kube-proxy chose the pod when the connection opened; NotReady only stops new connections.
    r = two_pods({"keepAlive": True, "preAllocatedVUs": 2}, UNREADY_AND_FAILING)
    route = r.route("/")
    assert route.failed["error_status"] == 50  # half of 10 req/s for 10 s
    assert route.failed_total == 50
    assert r.route("/").offered == 450


# pod 1's app crashes at 10 s and listens again 5 s after its restart; pod 0 answers 500 on /
# from 30 s to 40 s.
CRASH = [{"kind": "crash", "at": "10s"}]


def crash_then_pod0_errors(traffic: dict[str, Any], **kw: Any) -> Result:
    return run(
        probes=READY,
        replicas=2,
        duration="50s",
        overrides=[
            {"ordinals": [1], "containers": {"app": {"start": "5s", "episodes": CRASH}}},
            {
                "ordinals": [0],
                "containers": {
                    "app": {"episodes": [{"kind": "errors", "at": "30s", "for": "10s", "paths": ["/"]}]}
                },
            },
        ],
        traffic=[{"rate": 10, "start": "6s", **traffic}],
        **kw,
    )


def test_a_restart_moves_connections_for_good_without_a_sidecar() -> None:
    # Pod 1's connections die with its container and reopen on pod 0, the only Ready pod; they
    # stay there after pod 1 is back, so pod 0's bad spell fails every request.
    r = crash_then_pod0_errors({"keepAlive": True, "preAllocatedVUs": 2})
    route = r.route("/")
    assert route.failed["restarting"] == 0
    assert route.failed["error_status"] == 100
    # Balanced per request, pod 1 takes its half again once Ready.
    per_request = crash_then_pod0_errors({}).route("/")
    assert per_request.failed["error_status"] == 50
    assert per_request.failed["restarting"] == 0


def test_a_sidecar_keeps_connections_across_the_restart_and_answers_meanwhile() -> None:
    r = crash_then_pod0_errors({"keepAlive": True, "preAllocatedVUs": 2}, template_labels=SIDECAR)
    route = r.route("/")
    # Pod 1's half from the crash (10 s) until its app listens again (16 s: restarted 1 s after
    # the crash, answering 5 s after its start): the sidecar's 503s.
    assert route.failed["restarting"] == 30
    assert route.failed["error_status"] == 50
    assert route.failed_total == 80


def single_pod_unready(seconds: int, traffic: dict[str, Any], duration: str = "40s") -> Result:
    return run(
        probes=READY,
        duration=duration,
        behavior={"episodes": [{"kind": "errors", "at": "10s", "for": f"{seconds}s", "paths": ["/ready"]}]},
        traffic=[{"rate": 10, **traffic}],
    )


@pytest.mark.parametrize("keep_alive", [False, True])
def test_with_no_endpoint_a_connection_is_refused_at_once(keep_alive: bool) -> None:
    # NotReady at 10-11 s: requests that each open a connection are refused; a kept-alive
    # connection (opened at 0 s) is not touched by readiness.
    r = single_pod_unready(2, {"keepAlive": keep_alive})
    assert r.route("/").failed["no_endpoint"] == (0 if keep_alive else 20)


def test_a_lost_rejection_makes_requests_wait_for_the_next_syn() -> None:
    # NotReady at 10-11 s: requests sent then are not refused; their SYNs are resent 1 s and
    # 3 s later, and go through once the pod is Ready again (12 s). Nothing fails.
    r = single_pod_unready(2, {"noEndpoint": "retransmit"})
    route = r.route("/")
    assert route.failed_total == 0
    assert route.ok == route.offered == 400
    ok = [int(x) for x in r.series["route./.ok"]]
    # 10 s's requests wait until 13 s (SYNs at 11 and 13), 11 s's until 12 s (SYN at 12).
    assert ok[9:15] == [10, 0, 0, 20, 20, 10]


def test_a_client_gives_up_on_a_connection_at_its_timeout() -> None:
    r = single_pod_unready(100, {"noEndpoint": "retransmit", "timeout": "20s"}, duration="60s")
    route = r.route("/")
    # Requests from 10 s to 39 s time out 20 s later (30 s to 59 s); later ones still wait.
    assert route.failed["timeout"] == 300
    assert route.ok == 100
    assert route.offered == 600


def test_pre_allocated_vus_above_max_vus_is_an_error() -> None:
    with pytest.raises(InputError, match="preAllocatedVUs"):
        scenario(traffic=[{"rate": 1, "preAllocatedVUs": 10, "maxVUs": 5}])


@pytest.mark.parametrize(
    ("namespace", "pod", "expected"),
    [
        ({}, None, False),
        ({}, "true", True),
        ({"istio-injection": "enabled"}, None, True),
        ({"istio.io/rev": "canary"}, None, True),
        ({"istio-injection": "enabled"}, "false", False),
        ({"istio-injection": "disabled"}, "true", False),
        ({"istio-injection": "disabled"}, None, False),
    ],
)
def test_istios_injection_policy_decides_which_pods_have_a_sidecar(
    namespace: dict[str, str], pod: str | None, expected: bool
) -> None:
    # Either label saying disabled wins; then either saying enabled; else none (Istio's injector).
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": namespace}}
    sc = scenario(
        manifests=[ns] if namespace else [],
        template_labels={"sidecar.istio.io/inject": pod} if pod is not None else None,
    )
    assert injected(sc.workloads[0], sc) is expected
    assert build(sc).pod_sidecar.tolist() == [expected]


def test_a_pod_ready_later_gets_no_kept_alive_client_until_one_needs_a_new_connection() -> None:
    # Pod 1 is Ready only at 10 s; the clients connected at 0 s all went to pod 0 and stay
    # there (as after a scale-up): pod 0's bad spell (20-25 s) fails every request.
    def run_with(traffic: dict[str, Any]) -> Result:
        return run(
            probes=READY,
            replicas=2,
            duration="30s",
            overrides=[
                {"ordinals": [1], "containers": {"app": {"start": "10s"}}},
                {
                    "ordinals": [0],
                    "containers": {
                        "app": {"episodes": [{"kind": "errors", "at": "20s", "for": "5s", "paths": ["/"]}]}
                    },
                },
            ],
            traffic=[{"rate": 10, **traffic}],
        )

    assert run_with({"keepAlive": True, "preAllocatedVUs": 4}).route("/").failed["error_status"] == 50
    assert run_with({}).route("/").failed["error_status"] == 25


def test_the_wait_for_a_syn_answer_is_in_the_latency() -> None:
    # NotReady at 10-11 s; each request costs 1 ms. The 10 s requests wait 3 s for their SYN to
    # be answered, the 11 s ones 1 s: the latency figures show it (on probesim's 6 % grid).
    r = run(
        probes=READY,
        duration="20s",
        behavior={
            "routes": {"/": {"cpu": "1ms"}},
            "variability": 0,
            "episodes": [{"kind": "errors", "at": "10s", "for": "2s", "paths": ["/ready"]}],
        },
        traffic=[{"rate": 10, "noEndpoint": "retransmit"}],
    )
    peak, p95, p50 = (series(r, f"route./.{q}_ms") for q in ("max", "p95", "p50"))
    assert 1000 <= peak[12] <= 1100 and 1000 <= p95[12] <= 1100
    assert 3000 <= peak[13] <= 3200 and 3000 <= p95[13] <= 3200
    assert p50[12:14] == [1, 1]  # half of each step's answers are the new arrivals' (1 ms)
    assert peak[14] <= 2
    assert 3000 <= r.route("/").latency_ms["max"] <= 3200
