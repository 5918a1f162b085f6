"""Where the simulated sidecars used to differ from Envoy's outlier detection (issue 13, part 4):
removed hosts, split mode, the cluster manager's merge window, unenforced detections and
ejection times within a step. Exact times and counts (reference/envoy-istio.md §2-§3)."""

from __future__ import annotations

import numpy as np
import pytest

from probesim.engine import simulate
from probesim.engine.sidecar import ejection
from probesim.engine.sidecar.route import MeshRoute
from probesim.kube.outcomes import Outcome
from probesim.mesh.istio import DestinationRule, OutlierDetection, VirtualService
from probesim.model.scenario import PodOverride, Scenario
from probesim.results import Result
from tests.builders import builtin


def times(r: Result, client: str, reason: str = "OutlierEject") -> list[float]:
    return [e.time_ms / 1000 for e in r.events_for(f"sidecar/{client}", reason)]


def with_od(sc: Scenario, **od: object) -> Scenario:
    rule = sc.destination_rules[0]
    spec = rule.spec
    new = OutlierDetection.model_validate(od)
    tp = spec.traffic_policy.model_copy(update={"outlier_detection": new})  # type: ignore[union-attr]
    dr: DestinationRule = rule.model_copy(update={"spec": spec.model_copy(update={"traffic_policy": tp})})
    return sc.model_copy(update={"destination_rules": (dr,)})


def with_pods(sc: Scenario, *overrides: dict[str, object], **spec: object) -> Scenario:
    web = sc.spec.behavior["backend"]
    pods = tuple(PodOverride.model_validate(o) for o in overrides)
    return sc.model_copy(
        update={
            "spec": sc.spec.model_copy(
                update={"behavior": {"backend": web.model_copy(update={"pods": pods})}, **spec}
            )
        }
    )


def with_vs(sc: Scenario, **route: object) -> Scenario:
    vs = VirtualService.model_validate(
        {
            "metadata": {"name": "backend"},
            "spec": {
                "hosts": ["backend"],
                "http": [{"route": [{"destination": {"host": "backend"}}], **route}],
            },
        }
    )
    return sc.model_copy(update={"virtual_services": (vs,)})


def without_readiness(sc: Scenario) -> Scenario:
    w = sc.workloads[0]
    container = w.pod_spec.containers[0].model_copy(update={"readiness_probe": None})
    pod = w.pod_spec.model_copy(update={"containers": (container,)})
    tpl = w.spec.template.model_copy(update={"spec": pod})
    return sc.model_copy(
        update={"workloads": (w.model_copy(update={"spec": w.spec.model_copy(update={"template": tpl})}),)}
    )


# -- 1. a host that leaves the cluster leaves its ejection -------------------------------------


def test_a_host_removed_from_the_endpoints_loses_its_ejection_and_frees_the_cap() -> None:
    # maxEjectionPercent 50 over 3 pods: one ejection at a time (2/3 > 50 %). backend-2 answers
    # 500 and is ejected at 11 s; its /healthz fails from 20 s, so it is NotReady (out of EDS) at
    # 30 s. backend-1 answers 500 from 40 s: with backend-2 gone its ejection is 1 of 2 hosts,
    # 50 %, allowed: ejected at 41 s and 40.833 s. Envoy erases a removed host's monitor: no unejection is ever logged for it
    # (outlier_detection_impl.cc, the member update callback; §2.10).
    sc = with_pods(
        builtin("seed003-outlier"),
        {
            "ordinals": [2],
            "containers": {
                "app": {
                    "paths": {"/": 500},
                    "episodes": [{"kind": "errors", "at": "20s", "paths": ["/healthz"]}],
                }
            },
        },
        {
            "ordinals": [1],
            "containers": {"app": {"episodes": [{"kind": "errors", "at": "40s", "paths": ["/"]}]}},
        },
        duration=100_000,
    )
    r = simulate(sc)
    assert times(r, "client-0") == [11, 41]
    assert times(r, "client-1") == [11.5, 40.833]
    ejected = [e.message for e in r.events_for("sidecar/client-0", "OutlierEject")]
    assert (
        '"upstream_url":"10.244.0.4:8080"' in ejected[0] and '"upstream_url":"10.244.0.3:8080"' in ejected[1]
    )
    # backend-1 (ejected at ~41 s) comes back at the 102 s tick, after the run; backend-2 never
    # logs an unejection.
    assert r.events_for(reason="OutlierUneject") == []
    envoy = r.route("/").envoy
    assert envoy["ejections_enforced_total"] == 4
    assert envoy["ejections_overflow"] == 0
    assert max(r.series["route./.ejections_active"][45:]) == 2  # one per client: backend-1's


# -- 2. splitExternalLocalOriginErrors ---------------------------------------------------------


HANG = {"ordinals": [2], "containers": {"app": {"episodes": [{"kind": "hang", "at": "30s", "for": "60s"}]}}}


def test_split_mode_a_route_timeout_is_a_local_origin_failure_not_a_5xx() -> None:
    # A hung pod behind a 1 s route timeout: without split mode each 504 feeds consecutive 5xx
    # (the second timeout, of the request sent at 31 s, fires at 32 s: ejected then); with it the timeout is a local-origin failure, and the connection
    # established before it resets that counter (LocalOriginConnectSuccess at onPoolReady), so
    # with 2 consecutive local-origin failures it is never ejected.
    base = with_vs(with_pods(builtin("seed003-outlier"), HANG, duration=60_000), timeout="1s")
    plain = simulate(
        with_od(base, consecutive5xxErrors=2, interval="2s", baseEjectionTime="60s", maxEjectionPercent=50)
    )
    assert times(plain, "client-0") == [32]
    split = simulate(
        with_od(
            base,
            consecutive5xxErrors=2,
            interval="2s",
            baseEjectionTime="60s",
            maxEjectionPercent=50,
            splitExternalLocalOriginErrors=True,
            consecutiveLocalOriginFailures=2,
        )
    )
    envoy = split.route("/").envoy
    assert split.events_for(reason="OutlierEject") == []
    assert envoy["ejections_detected_consecutive_5xx"] == 0
    assert envoy["ejections_detected_consecutive_local_origin_failure"] == 0
    # With a threshold of 1 the first timeout is enough: ejected when it fires, 1 s after the
    # request sent at 30 s.
    one = simulate(
        with_od(
            base,
            interval="2s",
            baseEjectionTime="60s",
            maxEjectionPercent=50,
            splitExternalLocalOriginErrors=True,
            consecutiveLocalOriginFailures=1,
        )
    )
    first = one.events_for("sidecar/client-0", "OutlierEject")
    assert [e.time_ms for e in first] == [31_000]
    assert '"type":"CONSECUTIVE_LOCAL_ORIGIN_FAILURE"' in first[0].message
    assert one.route("/").envoy["ejections_enforced_consecutive_local_origin_failure"] == 2


def test_a_timeout_reaches_outlier_detection_when_the_route_timer_fires() -> None:
    # Envoy's router arms the route's timer with the global timeout when the request is
    # complete (router.cc, Filter::onRequestComplete: response_timeout_->enableTimer(
    # timeout_.global_timeout_)), and only Filter::onResponseTimeout reports the timeout to the
    # host's monitor (updateOutlierDetection(LocalOriginTimeout, ...)). backend-2 hangs from
    # 30 s behind a 3 s timeout; each client sends it one request a second (3 pods, round robin,
    # 3 requests a second): the 2nd timeout is of the request sent at 31 s, it fires at 34 s, so
    # the requests of 32, 33 and 34 s (sent before or at the timer's instant) reach the hung pod
    # too and fail: 5 failed per client (30 to 34 s), not 2.
    base = with_vs(with_pods(builtin("seed003-outlier"), HANG, duration=60_000), timeout="3s")
    r = simulate(
        with_od(base, consecutive5xxErrors=2, interval="2s", baseEjectionTime="60s", maxEjectionPercent=50)
    )
    assert times(r, "client-0") == [34]
    assert times(r, "client-1") == [34.5]
    assert r.route("/").failed_total == 10
    assert r.route("/").envoy["ejections_enforced_total"] == 2
    assert r.route("/").envoy["ejections_detected_consecutive_5xx"] == 2


def _route(split: bool, threshold: int = 2) -> MeshRoute:
    od = OutlierDetection.model_validate(
        {
            "consecutive5xxErrors": 100,
            "interval": "10s",
            "maxEjectionPercent": 100,
            **(
                {"splitExternalLocalOriginErrors": True, "consecutiveLocalOriginFailures": threshold}
                if split
                else {}
            ),
        }
    )
    dr = DestinationRule.model_validate(
        {
            "metadata": {"name": "b"},
            "spec": {
                "host": "b",
                "trafficPolicy": {
                    "loadBalancer": {"simple": "ROUND_ROBIN"},
                    "outlierDetection": od.model_dump(by_alias=True, exclude_none=True),
                },
            },
        }
    )
    r = MeshRoute(
        "/", np.arange(1), ["10.0.0.1:80"], "c", 1, dr, None, "ROUND_ROBIN", np.random.default_rng(0)
    )
    r.policy.retries = 0
    r.policy.retry_connect = False
    return r


def test_split_mode_an_answered_500_resets_the_local_origin_counter() -> None:
    # One host: refused, answered 500, refused, refused. The 500 came over an established
    # connection, a local-origin success: the counter restarts, so the second refusal is not a
    # second consecutive local-origin failure; the fourth request is.
    r = _route(split=True)
    eps = np.ones(1, bool)
    steps = [(Outcome.REFUSED, 0), (Outcome.ERROR_STATUS, 500), (Outcome.REFUSED, 0), (Outcome.REFUSED, 0)]
    for s, (cat, code) in enumerate(steps):
        r.send(s * 1000, 1, eps, np.array([cat]), np.array([code]))
    assert [e.time_ms for e in r.events] == [3000]
    assert '"type":"CONSECUTIVE_LOCAL_ORIGIN_FAILURE"' in r.events[0].message
    assert r.stats.ejections_detected_consecutive_5xx == 0


def test_split_mode_keeps_local_origin_success_rate_apart() -> None:
    # Six pods without readiness, one refusing connections, 600 req/s (retried elsewhere): in
    # split mode its failures are local origin, so the local-origin success rate detects it
    # (Istio: enforcing 0) and the external one has nothing to say; without split mode the
    # refusals are 503s in the external bucket.
    sc = builtin("seed003-default-max-ejection")
    w = sc.workloads[0]
    sc = sc.model_copy(
        update={"workloads": (w.model_copy(update={"spec": w.spec.model_copy(update={"replicas": 6})}),)}
    )
    sc = without_readiness(sc)
    t = sc.spec.traffic[0].model_copy(update={"rate": 600.0, "clients": 1})
    sc = with_pods(
        sc, {"ordinals": [2], "containers": {"app": {"start": "1h"}}}, traffic=(t,), duration=30_000
    )
    split = simulate(with_od(sc, interval="2s", splitExternalLocalOriginErrors=True)).route("/").envoy
    assert split["ejections_detected_local_origin_success_rate"] == 9  # ticks at 12 … 28 s
    assert split["ejections_detected_success_rate"] == 0
    assert split.get("ejections_enforced_total", 0) == 0
    plain = simulate(with_od(sc, interval="2s")).route("/").envoy
    assert plain["ejections_detected_success_rate"] == 9
    assert plain["ejections_detected_local_origin_success_rate"] == 0


# -- 3. the cluster manager's merge window -----------------------------------------------------


def test_merge_window_keeps_a_second_ejection_in_the_load_balancer_for_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every pod answers 500, maxEjectionPercent 100, 20 s. Client-0 ejects its first pod at
    # 11.0 s (delivered at once), the second at 11.333 and third at 11.667: within 1 s of the
    # last delivery, so the load balancer gets them at 12.333 (cluster_manager_impl.cc,
    # scheduleUpdate); the requests at 12.0 and 12.333 still reach a failing pod. Envoy 1.40
    # in the lab: 15 (one of the 12.333 requests lost the race to the timer).
    sc = builtin("seed003-all-eject").cut_to(20_000)
    assert simulate(sc).route("/").failed["error_status"] == 16
    monkeypatch.setattr(ejection, "MERGE_WINDOW_MS", 0)  # update_merge_window: 0s
    assert simulate(sc).route("/").failed["error_status"] == 12


def test_merge_window_delays_a_reejection_right_after_an_unejection(monkeypatch: pytest.MonkeyPatch) -> None:
    # All three pods come back at the 72 s tick: the first unejection reaches the load balancer
    # at once, the other two at 73 s; meanwhile every request goes to the first, which is
    # ejected again at 72.333 but keeps getting traffic until 73.
    r = simulate(builtin("seed003-all-eject"))
    assert times(r, "client-0") == [11, 11.333, 11.666, 72.333, 73.666, 74]
    assert r.route("/").failed["error_status"] == 30  # Envoy 1.40 in the lab: 30
    monkeypatch.setattr(ejection, "MERGE_WINDOW_MS", 0)
    r0 = simulate(builtin("seed003-all-eject"))
    assert r0.route("/").failed["error_status"] == 24


# -- 4. detections that are not enforced -------------------------------------------------------


def test_unenforced_detections_are_logged_as_envoy_logs_them() -> None:
    # A pod answering 503 with consecutive 5xx off and Istio's gateway default (5, enforcing 0):
    # every fifth 503 is a detection that passes the cap (1 of 3 hosts, maxEjectionPercent 50)
    # and is logged with "enforced": false; nothing is ejected.
    sc = with_pods(
        builtin("seed003-outlier"),
        {"ordinals": [2], "containers": {"app": {"paths": {"/": 503}}}},
        duration=31_000,
    )
    r = simulate(
        with_od(sc, consecutive5xxErrors=0, interval="2s", baseEjectionTime="60s", maxEjectionPercent=50)
    )
    ev = r.events_for("sidecar/client-0", "OutlierEject")
    assert [e.time_ms / 1000 for e in ev] == [14, 19, 24, 29]
    assert all(
        '"type":"CONSECUTIVE_GATEWAY_FAILURE"' in e.message and '"enforced":false' in e.message for e in ev
    )
    envoy = r.route("/").envoy
    assert envoy["ejections_detected_consecutive_gateway_failure"] == 8
    assert envoy["ejections_enforced_total"] == 0
    assert r.route("/").failed["error_status"] == 2 * 21


# -- 5. ejection times right whatever the step -------------------------------------------------


def test_a_reejection_in_the_unejection_step_keeps_its_time() -> None:
    # 30 req/s (15 per client, 5 a second to the failing pod): back at the 72 s tick, ejected
    # again 0.2 s later. With the step's start as its time (72) the 120 s ejection would end at
    # the 192 s tick; from 72.2 it ends at 194, as in Envoy.
    sc = builtin("seed003-outlier")
    t = sc.spec.traffic[0].model_copy(update={"rate": 30.0})
    sc = sc.model_copy(update={"spec": sc.spec.model_copy(update={"traffic": (t,)})})
    r = simulate(sc)
    assert times(r, "client-0", "OutlierUneject") == [72, 194]
    assert times(r, "client-0")[:2] == [10.2, 72.2]
    for step in (500, 200):  # 15 and 6 requests a step: the same instants
        other = simulate(sc.model_copy(update={"spec": sc.spec.model_copy(update={"step": step})}))
        assert [(e.time_ms, e.object, e.reason) for e in other.events if e.source == "envoy"] == [
            (e.time_ms, e.object, e.reason) for e in r.events if e.source == "envoy"
        ]
