"""Seed 003 in the simulator: client sidecars with Envoy's outlier detection, load balancing,
panic, faults and mirroring (reference/envoy-istio.md §2-§5), with exact counts and times."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.engine.fleet import build
from probesim.engine.sidecar.ejection import OutlierMonitor
from probesim.results import Result
from tests.builders import builtin


def run(name: str, **spec: object) -> Result:
    sc = builtin(name)
    if spec:
        sc = sc.model_copy(update={"spec": sc.spec.model_copy(update=spec)})
    return simulate(sc)


def ejections(r: Result, client: str, action: str = "EJECT") -> list[float]:
    return [e.time_ms / 1000 for e in r.events_for(f"sidecar/{client}", f"Outlier{action.title()}")]


def test_without_outlier_detection_a_third_of_requests_fail() -> None:
    route = run("seed003-no-outlier").route("/")
    assert route.failed["error_status"] * 3 == route.offered


def test_each_client_sees_two_errors_then_ejects_for_60_then_120_seconds() -> None:
    r = run("seed003-outlier")
    for client in ("client-0", "client-1"):
        # Unejected on the first 2 s tick at least base × multiplier later (§2.6.1): 11 + 60 → 72;
        # ejected again after two more errors, for 2 × 60 s → the 194 s tick.
        assert ejections(r, client, "UNEJECT") == [72, 194]
    # Traffic starts at 10 s, 3 requests a second per client, client-1's a sixth of a second
    # after client-0's; the failing pod gets every third request of a client (1/s): errors at
    # 10 and 11, ejected at 11 (§2.3: at once, not on the interval), at the request's time.
    assert ejections(r, "client-0") == [11, 73, 195]
    assert ejections(r, "client-1") == [11.5, 73.5, 195.5]
    route = r.route("/")
    assert route.failed["error_status"] == 2 * 2 * 3  # two clients, two errors, three ejections
    assert route.envoy["ejections_enforced_total"] == 6
    first = r.events_for("sidecar/client-0", "OutlierEject")[0].message
    assert (
        '"type":"CONSECUTIVE_5XX","action":"EJECT","cluster_name":"outbound|8080||backend.default.svc.cluster.local"'
        in first
    )
    assert '"upstream_url":"10.244.0.4:8080"' in first  # the named target port resolved
    assert max(r.series["route./.ejections_active"]) == 2  # one per client sidecar


def test_default_max_ejection_percent_never_ejects_from_three_pods() -> None:
    # §2.4: 100 × (0 + 1) / 3 = 33 % > 10 %: every detection overflows (§8.1).
    route = run("seed003-default-max-ejection").route("/")
    assert route.envoy.get("ejections_enforced_total", 0) == 0
    assert route.envoy["ejections_overflow"] == route.envoy["ejections_detected_consecutive_5xx"] > 0
    assert route.failed["error_status"] * 3 == route.offered


def test_cap_counts_the_host_being_ejected() -> None:
    # Every pod fails with maxEjectionPercent 50: the first ejection (33 %) passes, the second
    # (67 %) overflows, so each client keeps two hosts (§2.4.6).
    sc = builtin("seed003-all-eject")
    od = sc.destination_rules[0].spec.traffic_policy.outlier_detection  # type: ignore[union-attr]
    od2 = od.model_copy(update={"max_ejection_percent": 50})  # type: ignore[union-attr]
    tp = sc.destination_rules[0].spec.traffic_policy.model_copy(update={"outlier_detection": od2})  # type: ignore[union-attr]
    dr = sc.destination_rules[0].model_copy(
        update={"spec": sc.destination_rules[0].spec.model_copy(update={"traffic_policy": tp})}
    )
    r = simulate(sc.model_copy(update={"destination_rules": (dr,)}))
    assert max(r.series["route./.ejections_active"]) == 2
    assert r.route("/").envoy["ejections_overflow"] > 0
    assert r.route("/").failed["no_endpoint"] == 0


def test_everything_ejected_means_no_healthy_upstream_with_istios_panic_threshold() -> None:
    r = run("seed003-all-eject")
    route = r.route("/")
    assert route.ok == 0
    # Each client sees two errors from each of the three pods, twice (ejected at ~11 s, back at
    # 72 s), 24 in all, plus those sent while the second and third ejection of a round wait for
    # the merge window (tests/mesh/test_outlier_fidelity.py): 30, as Envoy 1.40 in the lab.
    assert route.failed["error_status"] == 30
    assert route.failed["no_endpoint"] == route.envoy["no_healthy_upstream"] == route.offered - 30


def test_panic_routes_to_all_hosts_when_min_health_is_set() -> None:
    sc = builtin("seed003-all-eject")
    spec = sc.destination_rules[0].spec
    od = spec.traffic_policy.outlier_detection.model_copy(update={"min_health_percent": 50})  # type: ignore[union-attr]
    dr = sc.destination_rules[0].model_copy(
        update={
            "spec": spec.model_copy(
                update={"traffic_policy": spec.traffic_policy.model_copy(update={"outlier_detection": od})}
            )
        }  # type: ignore[union-attr]
    )
    r = simulate(sc.model_copy(update={"destination_rules": (dr,)}))
    route = r.route("/")
    assert route.envoy.get("no_healthy_upstream", 0) == 0
    assert route.envoy["lb_healthy_panic"] > 0  # §3.3: in panic the LB picks from all hosts
    assert route.failed["error_status"] == route.offered


def test_header_matched_abort_fails_only_matching_requests_in_the_sidecar() -> None:
    r = run("seed003-header-abort")
    tagged, plain = r.route("tagged"), r.route("plain")
    assert tagged.failed["error_status"] == tagged.offered == tagged.envoy["aborts_injected"] == 100
    assert plain.failed_total == 0
    assert plain.ok == 100


def test_mirroring_a_post_route_doubles_the_writes() -> None:
    r = run("seed003-mirror-post")
    route = r.route("orders")
    assert route.envoy["mirrored"] == route.offered == route.ok == 250
    # The copies really run on the mirror's pod: every write happens twice (§5.3).
    shadow = r.route("orders>mirror:backend-shadow")
    assert shadow.offered == shadow.ok == 250


def test_a_failing_mirror_does_not_touch_the_primary() -> None:
    from probesim.model.scenario import WorkloadBehavior

    sc = builtin("seed003-mirror-post")
    broken = WorkloadBehavior.model_validate({"containers": {"app": {"paths": {"/orders": 500}}}})
    r = simulate(
        sc.model_copy(
            update={
                "spec": sc.spec.model_copy(
                    update={"behavior": {**sc.spec.behavior, "backend-shadow": broken}}
                )
            }
        )
    )
    assert r.route("orders>mirror:backend-shadow").failed["error_status"] == 250
    assert r.route("orders").failed_total == 0


def test_least_request_gives_the_same_counts_at_random_times() -> None:
    # Istio's default LB picks at random among equally loaded hosts: each client still sees
    # exactly two errors per ejection, a second or so apart from the round-robin timeline.
    sc = builtin("seed003-outlier")
    spec = sc.destination_rules[0].spec
    tp = spec.traffic_policy.model_copy(update={"load_balancer": None})  # type: ignore[union-attr]
    dr = sc.destination_rules[0].model_copy(update={"spec": spec.model_copy(update={"traffic_policy": tp})})
    for seed in range(3):
        r = simulate(
            sc.model_copy(
                update={"destination_rules": (dr,), "spec": sc.spec.model_copy(update={"seed": seed})}
            )
        )
        n = len(r.events_for(reason="OutlierEject"))
        assert r.route("/").failed["error_status"] == 2 * n
        first = [e.time_ms / 1000 for e in r.events_for(reason="OutlierEject")][:2]
        assert all(10 <= x <= 14 for x in first)


def test_split_mode_leaves_external_5xx_on_the_5xx_counter() -> None:
    # §2.2: split mode moves only local-origin failures (connect failures, timeouts) to their own
    # counter; a 500 the app answers still feeds consecutive 5xx.
    from probesim.mesh.istio import OutlierDetection

    base = builtin("seed003-outlier")
    spec = base.destination_rules[0].spec

    def with_od(**od: object) -> Result:
        new_od = OutlierDetection.model_validate(
            {"interval": "2s", "baseEjectionTime": "60s", "maxEjectionPercent": 50, **od}
        )
        tp = spec.traffic_policy.model_copy(update={"outlier_detection": new_od})  # type: ignore[union-attr]
        dr = base.destination_rules[0].model_copy(
            update={"spec": spec.model_copy(update={"traffic_policy": tp})}
        )
        return simulate(base.model_copy(update={"destination_rules": (dr,)}))

    r = with_od(consecutive5xxErrors=2)
    assert r.route("/").envoy["ejections_detected_consecutive_5xx"] > 0
    split = with_od(
        consecutive5xxErrors=2, splitExternalLocalOriginErrors=True, consecutiveLocalOriginFailures=3
    )
    # The failing pod answers 500 (external origin): still the 5xx counter, even in split mode.
    assert split.route("/").envoy["ejections_detected_consecutive_5xx"] > 0
    assert split.route("/").envoy["ejections_detected_consecutive_local_origin_failure"] == 0


def test_multiplier_decays_on_healthy_intervals() -> None:
    # §2.6.3: the pod fails from 10 s to 20 s and again from 300 s. Ejected at 11 (60 s), back at
    # 72 and healthy since: its multiplier decays to 0 within a tick, so the second ejection at
    # 301 lasts 60 s again (back at the 362 tick), not 120 s.
    sc = builtin("seed003-outlier")
    web = sc.spec.behavior["backend"]
    windows = {
        "episodes": [
            {"kind": "errors", "at": "10s", "for": "10s", "paths": ["/"]},
            {"kind": "errors", "at": "300s", "paths": ["/"]},
        ]
    }
    from probesim.model.scenario import PodOverride

    ov = PodOverride.model_validate({"ordinals": [2], "containers": {"app": windows}})
    r = simulate(
        sc.model_copy(
            update={
                "spec": sc.spec.model_copy(
                    update={
                        "duration": 400_000,
                        "behavior": {"backend": web.model_copy(update={"pods": (ov,)})},
                    }
                )
            }
        )
    )
    assert ejections(r, "client-0") == [11, 301, 363]  # still failing after 362: ejected again
    assert ejections(r, "client-0", "UNEJECT") == [72, 362]


def test_success_rate_is_detected_but_not_enforced_under_istio() -> None:
    # §2.7, §4.3: six pods, one failing, 600 req/s: every interval the failing host's success
    # rate (0 %) is below mean − 1.9 × stdev; Istio's enforcing_success_rate 0 means no ejection
    # by success rate, and the default 10 % cap overflows every detection with six hosts.
    sc = builtin("seed003-default-max-ejection")
    w = sc.workloads[0]
    w6 = w.model_copy(update={"spec": w.spec.model_copy(update={"replicas": 6})})
    t = sc.spec.traffic[0].model_copy(update={"rate": 600.0, "clients": 1})
    r = simulate(
        sc.model_copy(
            update={
                "workloads": (w6,),
                "spec": sc.spec.model_copy(update={"traffic": (t,), "duration": 30_000}),
            }
        )
    )
    envoy = r.route("/").envoy
    assert envoy["ejections_detected_success_rate"] >= 9  # one per 2 s interval once traffic flows
    assert envoy.get("ejections_enforced_total", 0) == 0
    assert envoy["ejections_overflow"] >= envoy["ejections_detected_success_rate"]


def test_connect_failures_are_retried_on_other_hosts() -> None:
    # A pod that refuses connections but is still in the endpoints (no readiness probe): Istio's
    # default retry policy sends those requests to another host, so the client sees no error.
    sc = builtin("seed003-no-outlier")
    from probesim.mesh.istio import VirtualService
    from probesim.model.scenario import PodOverride

    vs = VirtualService.model_validate(
        {
            "metadata": {"name": "backend"},
            "spec": {"hosts": ["backend"], "http": [{"route": [{"destination": {"host": "backend"}}]}]},
        }
    )
    web = sc.spec.behavior["backend"]
    refusing = PodOverride.model_validate({"ordinals": [2], "containers": {"app": {"start": "1h"}}})
    w = sc.workloads[0]
    container = w.pod_spec.containers[0].model_copy(update={"readiness_probe": None})
    pod = w.pod_spec.model_copy(update={"containers": (container,)})
    w2 = w.model_copy(
        update={
            "spec": w.spec.model_copy(update={"template": w.spec.template.model_copy(update={"spec": pod})})
        }
    )
    spec = sc.spec.model_copy(update={"behavior": {"backend": web.model_copy(update={"pods": (refusing,)})}})
    r = simulate(sc.model_copy(update={"workloads": (w2,), "virtual_services": (vs,), "spec": spec}))
    route = r.route("/")
    assert route.failed_total == 0
    # Least request (Istio's default) picks the refusing pod for about a third of requests.
    assert 0.25 < route.envoy["upstream_rq_retry"] / route.offered < 0.42


def test_5xx_retries_hide_the_failing_pod_but_still_feed_ejection() -> None:
    # retryOn 5xx: each 500 is retried on another pod (the client sees none), yet every attempt
    # reaches the failing pod's monitor, so it is ejected just the same (§5.5.5).
    from probesim.mesh.istio import VirtualService

    sc = builtin("seed003-outlier")
    vs = VirtualService.model_validate(
        {
            "metadata": {"name": "backend"},
            "spec": {
                "hosts": ["backend"],
                "http": [
                    {
                        "route": [{"destination": {"host": "backend"}}],
                        "retries": {"attempts": 2, "retryOn": "5xx"},
                    }
                ],
            },
        }
    )
    r = simulate(sc.model_copy(update={"virtual_services": (vs,)}))
    route = r.route("/")
    assert route.failed_total == 0
    # Round robin picks each retry too (chooseHost → unweightedHostPick, rr_index++), so a
    # request on the failing pod leaves the index on the pod after the next one: every other
    # request of a client starts on the failing pod (not one in three), and client-0's second
    # 500 comes at 10.667 s, its third request. Two retries per client before each ejection,
    # and one more for client-1 in 195 s, sent before its ejection reached its load balancer
    # (the merge window after the unejection at 194 s).
    assert route.envoy["upstream_rq_retry"] == 13
    assert ejections(r, "client-0") == [10.666, 73, 195.333]


def _variant(
    status_or_hang: dict[str, object], od: dict[str, object], vs_route: dict[str, object] | None = None
) -> Result:
    from probesim.mesh.istio import OutlierDetection, VirtualService
    from probesim.model.scenario import PodOverride

    sc = builtin("seed003-outlier")
    spec = sc.destination_rules[0].spec
    new_od = OutlierDetection.model_validate(
        {"interval": "2s", "baseEjectionTime": "60s", "maxEjectionPercent": 50, **od}
    )
    tp = spec.traffic_policy.model_copy(update={"outlier_detection": new_od})  # type: ignore[union-attr]
    dr = sc.destination_rules[0].model_copy(update={"spec": spec.model_copy(update={"traffic_policy": tp})})
    ov = PodOverride.model_validate({"ordinals": [2], "containers": {"app": status_or_hang}})
    web = sc.spec.behavior["backend"].model_copy(update={"pods": (ov,)})
    update: dict[str, object] = {
        "destination_rules": (dr,),
        "spec": sc.spec.model_copy(update={"behavior": {"backend": web}, "duration": 60_000}),
    }
    if vs_route is not None:
        vs = VirtualService.model_validate(
            {
                "metadata": {"name": "backend"},
                "spec": {
                    "hosts": ["backend"],
                    "http": [{"route": [{"destination": {"host": "backend"}}], **vs_route}],
                },
            }
        )
        update["virtual_services"] = (vs,)
    return simulate(sc.model_copy(update=update))


def test_4xx_answers_count_as_success() -> None:
    # §2.2: only 5xx are errors; a pod answering 404 is never ejected.
    r = _variant({"paths": {"/": 404}}, {"consecutive5xxErrors": 2})
    assert r.events_for(reason="OutlierEject") == []
    assert r.route("/").envoy.get("ejections_detected_consecutive_5xx", 0) == 0


def test_gateway_errors_eject_when_configured() -> None:
    # §2.2, §4.2.4: a 503 feeds the gateway counter (checked first) and the 5xx counter.
    r = _variant({"paths": {"/": 503}}, {"consecutive5xxErrors": 5, "consecutiveGatewayErrors": 2})
    first = r.events_for("sidecar/client-0", "OutlierEject")[0]
    assert '"type":"CONSECUTIVE_GATEWAY_FAILURE"' in first.message
    assert first.time_ms == 11_000
    plain = _variant({"paths": {"/": 500}}, {"consecutive5xxErrors": 5, "consecutiveGatewayErrors": 2})
    assert (
        plain.route("/").envoy.get("ejections_detected_consecutive_gateway_failure", 0) == 0
    )  # a 500 resets it


def test_slow_hosts_are_ejected_only_with_a_timeout() -> None:
    # A pod hangs from 30 s (readiness needs three 5 s periods to notice): without a route
    # timeout (Istio's default) the sidecar waits and reports nothing; with one, each request
    # ends in a 504 that counts toward consecutive errors: requests at 30 and 31 s time out,
    # ejected when the second's timer fires, at 32 s (router.cc, onResponseTimeout).
    hang = {"episodes": [{"kind": "hang", "at": "30s", "for": "60s"}]}
    waits = _variant(hang, {"consecutive5xxErrors": 2})
    assert waits.events_for(reason="OutlierEject") == []
    timed = _variant(hang, {"consecutive5xxErrors": 2}, {"timeout": "1s"})
    assert [e.time_ms / 1000 for e in timed.events_for("sidecar/client-0", "OutlierEject")] == [32]


def test_mirrored_copies_are_balanced_per_request_whatever_the_clients_do() -> None:
    # The client's sidecar sends the copies: its clients keeping their connections (to the
    # sidecar) says nothing about how the copies reach the mirror's pods.
    sc = builtin("seed003-mirror-post")
    traffic = tuple(
        t.model_copy(update={"keep_alive": True, "no_endpoint": "retransmit"}) for t in sc.spec.traffic
    )
    fleet = build(sc.model_copy(update={"spec": sc.spec.model_copy(update={"traffic": traffic})}))
    mirror = next(r for r in fleet.routes if r.mirror_of >= 0)
    assert (mirror.traffic.keep_alive, mirror.traffic.no_endpoint) == (False, "refused")
    assert fleet.routes[mirror.mirror_of].traffic.keep_alive


def test_detections_the_cap_refuses_cost_nothing_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    # Seed 003 with Istio's default maxEjectionPercent: every second 5xx in a row from the
    # failing pod is a detection (ejections_detected_consecutive_5xx) that the cap refuses
    # (ejections_overflow; outlier_detection_impl.cc ejectHost: "if (!ejections_allowed)"),
    # and the counter starts over. At 100,000 requests/s that is 1.8 M detections in 110 s:
    # counted exactly, but without work per detection (the cost of a step must not follow the
    # request rate), so no detection goes through the one-by-one ejection path at either rate.
    calls = [0]
    one_by_one = OutlierMonitor._eject_or_not

    def counted(self: OutlierMonitor, *a: Any, **k: Any) -> bool:
        calls[0] += 1
        return one_by_one(self, *a, **k)

    monkeypatch.setattr(OutlierMonitor, "_eject_or_not", counted)
    for rate, overflow in ((1000, 18_333), (100_000, 1_833_333)):
        calls[0] = 0
        sc = builtin("seed003-default-max-ejection")
        traffic = [sc.spec.traffic[0].model_copy(update={"rate": rate})]
        route = simulate(
            sc.model_copy(update={"spec": sc.spec.model_copy(update={"traffic": traffic})})
        ).route("/")
        # 110 s of traffic, a third to the failing pod, split over the two clients' sidecars.
        assert route.failed_total == round(rate * 110 / 3)
        assert route.envoy["ejections_detected_consecutive_5xx"] == overflow
        assert route.envoy["ejections_consecutive_5xx"] == overflow
        assert route.envoy["ejections_overflow"] == overflow
        assert route.envoy["ejections_enforced_total"] == 0
        assert calls[0] == 0
