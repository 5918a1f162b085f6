"""Calls from pods to a Service that has a DestinationRule or VirtualService go through the
caller's sidecar (engine/service_calls.py's through_sidecar, one client sidecar for all the
callers): its load balancer leaves ejected hosts out, its retries move the failures retryOn
names to another host after Envoy's back-off, its per-try and route timeouts cut a try short.
The lab runs the same calls through a real Envoy (tests/lab/test_graph.py)."""

from __future__ import annotations

import json

import pytest

from probesim.engine import simulate
from probesim.engine.dependencies import INF_MS
from probesim.engine.service_calls import Classes, Try, through_policy
from probesim.engine.sidecar.policy import HUNG_TRY, REFUSED_TRY, TIMED_OUT_TRY, RoutePolicy
from probesim.lab.compare import simulated_hosts
from probesim.lab.traffic import meshed_calls
from probesim.mesh.istio import HTTPRoute, VirtualService
from probesim.model.scenario import Scenario
from probesim.results import Result
from tests.builders import builtin

CANARY_FROM_MS = 4000  # the canary answers 500 from 4 s


def without_istio(sc: Scenario) -> Scenario:
    return sc.model_copy(update={"destination_rules": (), "virtual_services": ()})


def with_retries(sc: Scenario, retries: dict[str, object]) -> Scenario:
    vs = VirtualService.model_validate(
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "VirtualService",
            "metadata": {"name": "backend"},
            "spec": {
                "hosts": ["backend"],
                "http": [{"route": [{"destination": {"host": "backend"}}], "retries": retries}],
            },
        }
    )
    return sc.model_copy(update={"destination_rules": (), "virtual_services": (vs,)})


def test_the_callers_sidecar_ejects_the_failing_canary_after_three_consecutive_5xx() -> None:
    sc = builtin("service-call-outlier")
    r = simulate(sc)
    ejects = [e for e in r.events if e.reason == "OutlierEject"]
    assert [e.object for e in ejects] == ["sidecar/calls-backend"]
    # Its third 500: the rule's round robin over three hosts sends it one call in three, 20 a second.
    assert CANARY_FROM_MS < ejects[0].time_ms <= CANARY_FROM_MS + 450
    doc = json.loads(ejects[0].message)
    assert simulated_hosts(sc)[doc["upstream_url"]] == "backend-canary-0"
    assert (
        doc["type"] == "CONSECUTIVE_5XX"
        and doc["cluster_name"] == "outbound|80||backend.default.svc.cluster.local"
    )
    calls, front = r.route("calls:backend/work"), r.route("front")
    # The canary's three 500s before its ejection reach the frontend; nothing after it does.
    assert calls.failed_total == calls.failed["error_status"] == 3
    assert calls.envoy["ejections_enforced_consecutive_5xx"] == 1
    assert front.offered == 160 and front.failed_total <= 6
    late = [i for i, t in enumerate(r.time_ms) if t >= 4500]
    assert sum(r.series["route.front.error_status"][i] for i in late) == 0


def test_without_outlier_detection_a_third_of_the_calls_fail_from_the_canarys_first_500() -> None:
    r = simulate(without_istio(builtin("service-call-outlier")))
    calls, front = r.route("calls:backend/work"), r.route("front")
    assert not [e for e in r.events if e.reason.startswith("Outlier")]
    after = [i for i, t in enumerate(r.time_ms) if t >= CANARY_FROM_MS]
    sent_after = sum(r.series["route.calls:backend/work.offered"][i] for i in after)
    # kube-proxy balances each call: every third call from 4 s reaches the canary.
    assert abs(calls.failed["error_status"] - sent_after / 3) <= 1
    assert front.failed["error_status"] > 30


def test_retries_on_5xx_move_the_canarys_failures_to_other_hosts() -> None:
    r = simulate(with_retries(builtin("service-call-outlier"), {"attempts": 2, "retryOn": "5xx"}))
    calls, front = r.route("calls:backend/work"), r.route("front")
    assert front.failed_total == 0 and calls.failed_total == 0
    after = [i for i, t in enumerate(r.time_ms) if t >= CANARY_FROM_MS]
    sent_after = sum(r.series["route.calls:backend/work.offered"][i] for i in after)
    # Round robin over three hosts: about one call in three tried the canary first, and only
    # those were retried.
    assert 0.25 * sent_after <= calls.envoy["upstream_rq_retry"] <= 0.4 * sent_after
    # The retried share waits the first retry's back-off (12.5 ms on average): a slower tail.
    before = [i for i, t in enumerate(r.time_ms) if 3000 <= t < CANARY_FROM_MS]
    assert max(r.series["route.front.p99_ms"][i] for i in late_steps(r)) > 12
    assert max(r.series["route.front.p99_ms"][i] for i in before) < 12


def late_steps(r: Result) -> list[int]:
    return [i for i, t in enumerate(r.time_ms) if 5000 <= t < 11000]


def test_istios_default_retries_leave_500s_alone() -> None:
    # No retries block: Istio's default (connect-failure, refused-stream, …) does not retry 5xx.
    r = simulate(with_retries(builtin("service-call-outlier"), {"attempts": 0}))
    assert r.route("front").failed["error_status"] > 30


def policy(**route: object) -> RoutePolicy:
    return RoutePolicy.of(
        HTTPRoute.model_validate({"route": [{"destination": {"host": "backend"}}], **route})
    )


def through(pol: RoutePolicy, hosts: list[tuple[float, list[Try]]], none: float = 0.0) -> Classes:
    return through_policy(pol, (hosts, none))


OK = (1.0, 3.0, False, 200)


def test_a_hung_host_times_out_per_try_and_the_retry_lands_on_the_other_host() -> None:
    pol = policy(retries={"attempts": 2, "perTryTimeout": "100ms", "retryOn": "reset"})
    got = through(pol, [(0.5, [(1.0, INF_MS, True, HUNG_TRY)]), (0.5, [OK])])
    # Half start on the good host (3 ms); half wait the 100 ms per-try timeout, the first
    # retry's back-off (uniform in [0, 25 ms): 12.5 ms) and get the good host's answer.
    assert got == pytest.approx({(3.0, False): 0.5, (100.0 + 12.5 + 3.0, False): 0.5})


def test_without_a_per_try_timeout_a_hung_host_is_not_retried_and_the_route_timeout_ends_it() -> None:
    pol = policy(timeout="2s")
    got = through(pol, [(0.5, [(1.0, INF_MS, True, HUNG_TRY)]), (0.5, [OK])])
    assert got == pytest.approx({(3.0, False): 0.5, (2000.0, True): 0.5})


def test_refused_tries_are_retried_by_default_each_after_a_longer_back_off() -> None:
    pol = policy()  # Istio's default: 2 retries on connect-failure
    assert pol.retried(REFUSED_TRY) and not pol.retried(500) and not pol.retried(TIMED_OUT_TRY)
    # Both hosts refuse: three tries, all refused, after 12.5 + 25 ms of back-off.
    got = through(pol, [(0.5, [(1.0, 0.0, True, REFUSED_TRY)]), (0.5, [(1.0, 0.0, True, REFUSED_TRY)])])
    assert got == pytest.approx({(37.5, True): 1.0})
    # A lone host: the retry goes back to it (previous_hosts finds no other).
    alone = through(pol, [(1.0, [(0.5, 0.0, True, REFUSED_TRY), (0.5, 3.0, False, 200)])])
    assert alone == pytest.approx(
        {(3.0, False): 0.5, (12.5 + 3.0, False): 0.25, (37.5 + 3.0, False): 0.125, (37.5, True): 0.125}
    )


def test_no_healthy_host_and_fault_aborts_fail_at_once_without_a_try() -> None:
    pol = policy(fault={"abort": {"httpStatus": 503, "percentage": {"value": 10}}})
    got = through(pol, [(0.8, [OK])], none=0.2)
    assert got == pytest.approx({(3.0, False): 0.9 * 0.8, (0.0, True): 0.9 * 0.2 + 0.1})
    # A delay holds the request before the sidecar sends it, or aborts it.
    pol = policy(
        fault={
            "delay": {"fixedDelay": "1s", "percentage": {"value": 50}},
            "abort": {"httpStatus": 503, "percentage": {"value": 10}},
        }
    )
    got = through(pol, [(1.0, [OK])])
    assert got == pytest.approx(
        {(3.0, False): 0.45, (1003.0, False): 0.45, (0.0, True): 0.05, (1000.0, True): 0.05}
    )


def test_the_lab_sends_calls_through_a_sidecar_exactly_when_the_simulation_does() -> None:
    assert meshed_calls(builtin("service-call-outlier"), "backend")
    assert not meshed_calls(without_istio(builtin("service-call-outlier")), "backend")
    assert not meshed_calls(builtin("service-cascade"), "backend")
