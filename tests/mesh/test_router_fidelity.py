"""Envoy's router as the client sidecars run it (issue 43, items 1 and 2): retries pick their
host through the load balancer, so round robin's index advances on each retry, and a retried
request's latency has its failed try and back-off in it; fault delays hold the request before
the router sends it, outside the route's timeout and inside the client's. The lab runs the same
scenarios through a real Envoy (tests/lab/test_router.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from probesim.engine import simulate
from probesim.engine.service_calls import through_policy
from probesim.engine.sidecar.hold import SidecarHold
from probesim.engine.sidecar.policy import RoutePolicy
from probesim.engine.sidecar.retry import RetryWalk
from probesim.mesh.istio import HTTPRoute
from probesim.model.scenario import Scenario
from tests.builders import accounted, scenario


def round_robin(host: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": host},
        "spec": {"host": host, "trafficPolicy": {"loadBalancer": {"simple": "ROUND_ROBIN"}}},
    }


def virtual_service(*http: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": "web"},
        "spec": {
            "hosts": ["web"],
            "http": [{"route": [{"destination": {"host": "web"}}], **h} for h in http],
        },
    }


def retries_scenario(
    seed: int = 1,
    rate: float = 1,
    duration: str = "130s",
    retries: dict[str, Any] | None = None,
    window: dict[str, str] | None = None,
) -> Scenario:
    """Two pods of a 10 ms app behind round robin, pod 1 answering 500 on / (after its 10 ms);
    the route retries 5xx twice. By default 120 requests from 10 s at 1 a second."""
    vs = virtual_service({"retries": retries or {"attempts": 2, "retryOn": "5xx"}})
    return scenario(
        replicas=2,
        duration=duration,
        spec={"seed": seed},
        behavior={"routes": {"/": {"wall": "10ms"}}},
        overrides=[
            {"ordinals": [1], "containers": {"app": {"paths": {"/": 500}, "routes": {"/": {"wall": "10ms"}}}}}
        ],
        traffic=[{"path": "/", "rate": rate, **(window or {"start": "10s"})}],
        manifests=[round_robin(), vs],
    )


def delays_scenario() -> Scenario:
    """Two pods of a 10 ms app; /half: 50 % of requests delayed 2 s behind a 1.5 s client
    timeout (5 a second); /slow: every request delayed 2 s under a 1 s route timeout (2 a
    second). Both from 5 s to 25 s."""
    vs = virtual_service(
        {
            "match": [{"uri": {"prefix": "/half"}}],
            "fault": {"delay": {"fixedDelay": "2s", "percentage": {"value": 50}}},
        },
        {
            "match": [{"uri": {"prefix": "/slow"}}],
            "timeout": "1s",
            "fault": {"delay": {"fixedDelay": "2s", "percentage": {"value": 100}}},
        },
    )
    return scenario(
        replicas=2,
        duration="30s",
        behavior={"routes": {"*": {"wall": "10ms"}}},
        traffic=[
            {"path": "/half", "rate": 5, "start": "5s", "stop": "25s", "timeout": "1500ms"},
            {"path": "/slow", "rate": 2, "start": "5s", "stop": "25s"},
        ],
        manifests=[vs],
    )


# -- item 1: retries through the load balancer ------------------------------------------------


def test_round_robin_retries_advance_the_index_so_every_later_request_starts_on_the_failing_pod() -> None:
    # ZoneAwareLoadBalancerBase::chooseHost picks a retry's host with chooseHostOnce, round
    # robin's hosts[rr_index++ % size] (unweightedHostPick, load_balancer_impl.cc), as for any
    # request. A request on the good pod leaves the index on the failing one; one on the failing
    # pod is retried on the good one (the next index) and leaves it on the failing one again.
    # So every request after the first starts on the failing pod: 119 of 120 retried when the
    # seeded index starts on the good pod (seed 1), 120 when it starts on the failing one.
    for seed, retried in ((1, 119), (0, 120)):
        r = simulate(retries_scenario(seed))
        route = r.route("/")
        assert route.offered == 120 and route.ok == 120 and route.failed_total == 0
        assert route.envoy["upstream_rq_retry"] == retried
        accounted(r)


def test_a_retried_request_waits_for_its_failed_try_and_the_jittered_back_off() -> None:
    # Its latency is the failed try (the failing pod answers its 500 after its 10 ms), the
    # back-off (random() % 25 ms for the first retry: JitteredExponentialBackOffStrategy::
    # nextBackOffMs, backoff_strategy.cc) and the good pod's answer: 20-45 ms, about 32 ms
    # typically, where the try alone is 8.8 ms (the 10 ms mean's median, variability 0.5).
    route = simulate(retries_scenario()).route("/")
    assert 25 <= route.latency_ms["p50"] <= 45
    assert route.latency_ms["p50"] == pytest.approx(31.6, abs=0.05)
    plain = simulate(retries_scenario(retries={"attempts": 0})).route("/")
    assert plain.latency_ms["p50"] == pytest.approx(8.8, abs=0.05)  # the good pod's answers only
    assert plain.failed["error_status"] == 60  # without retries round robin alternates


def test_requests_closer_than_a_retry_takes_share_the_first_tries_evenly() -> None:
    # 50 requests a second: 20 ms apart, less than a retry takes (10 ms try + up to 24 ms of
    # back-off), so in Envoy other requests pick between a request and its retry. Then the
    # first tries are spread evenly (docs/fidelity.md: Envoy's own rule gives ~0.65 of them to
    # the failing pod, per-request): half retried.
    route = simulate(retries_scenario(rate=50, duration="40s")).route("/")
    assert route.offered == 1500 and route.envoy["upstream_rq_retry"] == 750
    # 20 a second (50 ms apart): each retry comes before the next request, as at 1 a second.
    route = simulate(retries_scenario(rate=20, duration="40s")).route("/")
    assert route.offered == 600 and route.envoy["upstream_rq_retry"] in (599, 600)


def policy(**route: object) -> RoutePolicy:
    return RoutePolicy.of(HTTPRoute.model_validate({"route": [{"destination": {"host": "web"}}], **route}))


def test_previous_hosts_picks_again_up_to_five_more_times_then_keeps_the_last_pick() -> None:
    # chooseHost: for (i = 0; i < hostSelectionRetryCount() + 1; ++i) { host = chooseHostOnce();
    # if (!shouldSelectAnotherHost(host)) return host; } return host; Istio sets
    # host_selection_retry_max_attempts 5 with the previous_hosts predicate (§5.5.1).
    failing = np.array([True, True])
    tries = np.array([10.0, 10.0])
    walk = RetryWalk(policy(retries={"attempts": 2, "retryOn": "5xx"}), failing, tries)
    # From index 0: host 0, retry on host 1, second retry: hosts 0, 1, 0, 1, 0, 1 all tried,
    # the last pick (host 1) kept: 1 + 1 + 6 picks.
    assert walk.tried[0] == [0, 1, 1] and walk.picks.tolist() == [8, 8]
    assert walk.retries.tolist() == [2, 2] and walk.failed_ms.tolist() == [20.0, 20.0]
    # Without the predicate (retryIgnorePreviousHosts: false) each retry takes the next index.
    plain = RetryWalk(
        policy(retries={"attempts": 2, "retryOn": "5xx", "retryIgnorePreviousHosts": False}), failing, tries
    )
    assert plain.tried[0] == [0, 1, 0] and plain.picks.tolist() == [3, 3]
    # Back-off intervals: 25, 50, 100, 200, then 250 ms (next_interval_ doubles while below
    # max / 2, else max: backoff_strategy.cc).
    pol = policy()
    assert [pol.backoff_interval(j) for j in range(1, 7)] == [25, 50, 100, 200, 250, 250]


def test_three_pods_one_failing_half_the_requests_are_retried_by_round_robin() -> None:
    # Hosts a, b, c (failing): a request on b leaves the index on c; on c it is retried on a
    # and leaves it on b: b, c, b, c ... so every other request is retried, not one in three.
    walk = RetryWalk(
        policy(retries={"attempts": 2, "retryOn": "5xx"}), np.array([False, False, True]), np.zeros(3)
    )
    run = walk.run(1)
    assert run.order.tolist() == [1, 2] and run.lp == 0 and run.lc == 2
    visits = run.visits(101)
    assert visits.tolist() == [0, 51, 50]
    assert run.tries(visits).tolist() == [50, 51, 50]
    # The failing host's 3rd try is made by the request at index 5 (from 0).
    assert run.nth(2, 3) == 5 and run.first_reaching(np.array([3]), np.array([2])) == 6


# -- item 2: fault delays take time -------------------------------------------------------------


def test_a_fault_delay_longer_than_the_clients_timeout_fails_the_delayed_requests() -> None:
    # The fault filter holds the request (StopIteration until postDelayInjection); a client
    # that gives up first ends the stream and the request never reaches a pod. 2 s delays on
    # 50 % behind a 1.5 s timeout: each delayed request is a timeout, counted 1.5 s after it
    # was sent (the step 1 s later), the rest answered.
    r = simulate(delays_scenario())
    half = r.route("/half")
    assert half.offered == 100
    # binomial(5, 0.5) per step, drawn from the run's generator: 50 of 100 for seed 0.
    assert half.failed_total == half.failed["timeout"] == half.envoy["delays_injected"] == 50
    assert half.ok == 50
    timeouts = r.series["route./half.timeout"]
    first = int(np.flatnonzero(timeouts)[0])
    assert r.time_ms[first] == 6000  # sent from 5 s, given up at 6.5 s
    accounted(r)


def test_a_fault_delay_is_outside_the_route_timeout() -> None:
    # The router arms the route timeout in onRequestComplete, when the fault filter lets the
    # request go on: a 2 s delay under a 1 s route timeout is answered after 2 s + the app's
    # 10 ms, never a 504 (p50 within the latency grid's 6 % of 2,010 ms).
    r = simulate(delays_scenario())
    slow = r.route("/slow")
    assert slow.offered == slow.ok == 40 and slow.failed_total == 0
    assert slow.envoy["delays_injected"] == 40
    assert 2000 <= slow.latency_ms["p50"] <= 2010 * 1.06


def test_a_delay_shorter_than_a_step_is_released_within_it() -> None:
    hold = SidecarHold(delay_ms=300, timeout_ms=60_000)
    assert hold.hold(0, 1000, 7) == (7, 0) and hold.held == 0
    hold = SidecarHold(delay_ms=300, timeout_ms=200)
    assert hold.hold(0, 1000, 7) == (0, 7)  # the client gives up first, within the step
    hold = SidecarHold(delay_ms=2500, timeout_ms=None)
    assert hold.hold(0, 1000, 4) == (0, 0) and hold.held == 4
    assert hold.due(1000, 1000) == (0, 0) and hold.due(2000, 1000) == (4, 0) and hold.held == 0


def test_held_requests_are_interrupted_when_the_load_generator_stops_waiting() -> None:
    sc = delays_scenario()
    traffic = [t.model_copy(update={"graceful_stop": 500}) for t in sc.spec.traffic]
    r = simulate(sc.model_copy(update={"spec": sc.spec.model_copy(update={"traffic": tuple(traffic)})}))
    slow = r.route("/slow")
    # It stops waiting at 25.5 s: the requests sent from 24 s are still held then (released
    # in the step of 26 s); those from 23 s went on in the step of 25 s.
    assert slow.interrupted == 2 and slow.ok == 38
    accounted(r)


def test_a_call_through_a_sidecar_is_delayed_outside_its_route_timeout() -> None:
    pol = policy(timeout="1s", fault={"delay": {"fixedDelay": "2s", "percentage": {"value": 100}}})
    got = through_policy(pol, ([(1.0, [(1.0, 3.0, False, 200)])], 0.0))
    assert {k: v for k, v in got.items() if v > 0} == pytest.approx({(2003.0, False): 1.0})
