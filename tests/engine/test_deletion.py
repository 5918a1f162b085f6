"""Pod deletion: terminating endpoints, quiet shutdown of liveness/startup, replacement pods
(reference/kubelet.md §2.2.14, §2.4.33, §4.7-4.8, §5.1)."""

from __future__ import annotations

from tests.builders import http, run, series, times


def delete(pod: str, at: str) -> dict[str, object]:
    return {"actions": [{"kind": "deletePod", "pod": pod, "at": at}]}


def test_deleted_pod_leaves_endpoints_and_a_replica_set_replaces_it_at_once() -> None:
    r = run(
        replicas=2,
        probes={"readinessProbe": http(periodSeconds=1)},
        behavior={"shutdown": "3s"},
        traffic=[{"rate": 2}],
        duration="20s",
        spec=delete("web-0", "10s"),
    )
    assert [(e.time_ms / 1000, e.object) for e in r.events_for(reason="Scheduled")] == [
        (0, "pod/web-0"),
        (0, "pod/web-1"),
        (10, "pod/web-2"),
    ]
    assert r.events_for("pod/web-0", "Killing")[0].message == "Stopping container app"
    assert times(r, "Started", "pod/web-0") == [0]  # not restarted
    assert times(r, "PodReady", "pod/web-2") == [10]
    assert r.route("/").failed_total == 0  # terminating endpoints are not ready, the new pod is
    assert series(r, "workload.web.current") == [2] * 20
    assert r.workload("web").restarts == {"web-0": 0, "web-1": 0, "web-2": 0}


def test_statefulset_replacement_waits_for_the_old_pod_to_go() -> None:
    r = run(
        kind="StatefulSet",
        replicas=2,
        workload_spec={"podManagementPolicy": "Parallel"},
        behavior={"shutdown": "3s"},
        duration="20s",
        spec=delete("web-0", "10s"),
    )
    # Stops at 13, leaves the API at the next step, and web-0 is created again.
    assert [(e.time_ms / 1000, e.object) for e in r.events_for(reason="Scheduled")] == [
        (0, "pod/web-0"),
        (0, "pod/web-1"),
        (14, "pod/web-0"),
    ]
    assert series(r, "workload.web.current")[9:15] == [2, 1, 1, 1, 1, 2]


def test_liveness_stops_quietly_while_readiness_goes_on() -> None:
    # Deadlocked from 5; deleted at 5 before liveness (period 3) can act; the app ignores
    # SIGTERM, so it lingers for the 30 s grace period: readiness keeps failing, no kill.
    r = run(
        probes={
            "livenessProbe": http(periodSeconds=3, failureThreshold=1),
            "readinessProbe": http(periodSeconds=3, failureThreshold=1),
        },
        behavior={"ignoresSigterm": True, "episodes": [{"kind": "deadlock", "after": "5s"}]},
        duration="40s",
        spec=delete("web-0", "5s"),
    )
    assert times(r, "Unhealthy", "pod/web-0", "Liveness") == []
    assert times(r, "Unhealthy", "pod/web-0", "Readiness") == [7, 10, 13, 16, 19, 22, 25, 28, 31, 34]
    assert times(r, "Killing", "pod/web-0") == [5]
    assert times(r, "Started", "pod/web-0") == [0]


def test_endpoint_conditions_of_a_terminating_pod() -> None:
    # §4.8: a terminating pod stays serving (readiness goes on) but is not ready; with
    # publishNotReadyAddresses it stays ready.
    kw = {
        "replicas": 2,
        "probes": {"readinessProbe": http(periodSeconds=1)},
        "behavior": {"shutdown": "4s"},
        "duration": "12s",
        "spec": delete("web-0", "5s"),
    }
    r = run(**kw)  # type: ignore[arg-type]
    # Stops at 9 and leaves the endpoints at the next step.
    assert series(r, "service.web.terminating")[4:11] == [0, 1, 1, 1, 1, 1, 0]
    assert series(r, "service.web.ready")[4:11] == [2, 2, 2, 2, 2, 2, 2]  # web-1 and the new web-2
    # Shutting down, web-0 refuses connections: readiness fails at 5, 6, 7 (threshold 3) and
    # it stops serving at 7, while still terminating.
    assert series(r, "service.web.serving")[4:11] == [2, 3, 3, 2, 2, 2, 2]
    shown = run(service={"publishNotReadyAddresses": True}, **kw)  # type: ignore[arg-type]
    assert series(shown, "service.web.ready")[4:11] == [2, 3, 3, 3, 3, 3, 2]


def test_kube_proxy_falls_back_to_serving_terminating_endpoints() -> None:
    # kube-proxy's CategorizeEndpoints (pkg/proxy/topology.go): "if there are 0 cluster-wide
    # endpoints, we can try to fallback to any terminating endpoints that are ready" — those
    # serving and terminating. The only pod, deleted at 10 s, ignores SIGTERM and keeps passing
    # readiness: it serves until SIGKILL at the 5 s grace (15 s); only then has the Service no
    # endpoint. Its EndpointSlice condition is ready=false, serving=true, terminating=true.
    r = run(
        kind="Pod",
        probes={"readinessProbe": http(periodSeconds=1)},
        pod_spec={"terminationGracePeriodSeconds": 5},
        behavior={"ignoresSigterm": True},
        traffic=[{"rate": 10}],
        duration="20s",
        spec=delete("web", "10s"),
    )
    route = r.route("/")
    assert route.ok == 150  # 10 s before the deletion and 5 s while terminating
    assert route.failed_total == 50 and route.failed["no_endpoint"] == 50  # after the SIGKILL
    assert series(r, "service.web.ready")[9:12] == [1, 0, 0]
    assert series(r, "service.web.serving")[9:12] == [1, 1, 1]
    assert series(r, "service.web.terminating")[9:12] == [0, 1, 1]
