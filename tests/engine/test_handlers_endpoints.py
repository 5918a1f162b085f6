"""Handler kinds (reference/kubelet.md §1.3-1.6), pod conditions, endpoints, traffic and
workload status (§4-5)."""

from __future__ import annotations

import pytest

from tests.builders import http, run, series, times

LIVE_1 = {"periodSeconds": 1, "failureThreshold": 1}


@pytest.mark.parametrize(
    ("status", "ready"), [(200, True), (302, True), (399, True), (400, False), (503, False)]
)
def test_http_probe_passes_on_200_to_399(status: int, ready: bool) -> None:
    # §1.3.10
    r = run(
        probes={"readinessProbe": http(periodSeconds=1)},
        behavior={"paths": {"/healthz": status}},
        duration="3s",
    )
    assert (times(r, "PodReady") == [0]) is ready


def test_tcp_probe_passes_while_http_answers_500() -> None:
    # §1.4.16-17: the server answers 500 everywhere; tcpSocket liveness keeps it, httpGet kills.
    errors = {"episodes": [{"kind": "errors", "after": "2s", "status": 500}]}
    tcp = run(
        probes={"livenessProbe": {"tcpSocket": {"port": 8080}, **LIVE_1}}, behavior=errors, duration="10s"
    )
    assert times(tcp, "Killing") == []
    httpr = run(probes={"livenessProbe": http(**LIVE_1)}, behavior=errors, duration="6s")
    # Each new container answers 200 for 2 s, and starts 1 s after the kill (the restart delay).
    assert times(httpr, "Killing") == [2, 5]


@pytest.mark.parametrize(("accepts", "killed"), [(True, []), (False, [4])])
def test_tcp_probe_on_a_hung_process_depends_on_whether_it_accepts(accepts: bool, killed: list[int]) -> None:
    r = run(
        probes={"livenessProbe": {"tcpSocket": {"port": "http"}, **LIVE_1}},
        behavior={"episodes": [{"kind": "deadlock", "after": "4s", "acceptsTcp": accepts}]},
        duration="5s",
    )
    assert times(r, "Killing") == killed


def test_exec_probe_timeout_is_a_failure() -> None:
    # §1.5.19: ticks at 5, 10, 15; hung from 12: the run at 15 times out at 17.
    r = run(
        probes={
            "livenessProbe": {
                "exec": {"command": ["cat", "/tmp/healthy"]},
                "periodSeconds": 5,
                "timeoutSeconds": 2,
                "failureThreshold": 1,
            }
        },
        behavior={"episodes": [{"kind": "deadlock", "after": "12s"}]},
        duration="18s",
    )
    assert times(r, "Killing") == [17]
    msg = r.events_for("pod/web-0", "Unhealthy")[0].message
    assert msg == 'Liveness probe failed: command timed out: "cat /tmp/healthy" timed out after 2s'


def test_grpc_probe_follows_the_grpc_target() -> None:
    # §1.6.22: an errors window on the pseudo-path "grpc" makes the health check NOT_SERVING,
    # while HTTP paths still answer.
    r = run(
        probes={"livenessProbe": {"grpc": {"port": 9090}, **LIVE_1}},
        behavior={
            "ports": [8080, 9090],  # the gRPC health port is not among the declared ones
            "episodes": [{"kind": "errors", "at": "3s", "for": "1s", "paths": ["grpc"]}],
        },
        traffic=[{"rate": 1}],
        duration="6s",
    )
    assert times(r, "Killing") == [3]
    assert "NOT_SERVING" in r.events_for("pod/web-0", "Unhealthy")[0].message
    # HTTP paths still answer, except while the container restarts (3 s, its only pod).
    assert (r.route("/").ok, r.route("/").failed["no_endpoint"]) == (5, 1)


def test_pod_ready_needs_every_container() -> None:
    # §4.2: ContainersReady needs all containers; the sidecar answers only from 6 s.
    containers = [
        {"name": "app", "ports": [{"containerPort": 8080}], "readinessProbe": http(periodSeconds=1)},
        {
            "name": "proxy",
            "ports": [{"containerPort": 15020}],
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 15020}, "periodSeconds": 1},
        },
    ]
    from probesim.engine import simulate
    from tests.builders import scenario

    sc = scenario(containers=containers, duration="10s")
    sc = sc.model_copy(
        update={
            "spec": sc.spec.model_copy(
                update={"behavior": {"web": sc.spec.behavior["web"].model_copy(update={"containers": {}})}}
            )
        }
    )
    assert times(simulate(sc), "PodReady") == [0]
    text_sc = scenario(
        containers=containers,
        duration="10s",
        spec={"behavior": {"web": {"containers": {"proxy": {"start": "6s"}}}}},
    )
    assert times(simulate(text_sc), "PodReady") == [6]


def test_readiness_gate_holds_ready_until_set() -> None:
    # §4.3: Ready needs every readiness gate condition True; a gate nobody sets keeps it False.
    gates = {"readinessGates": [{"conditionType": "example.com/lb-ready"}]}
    r = run(
        pod_spec=gates,
        duration="10s",
        spec={"behavior": {"web": {"readinessGates": {"example.com/lb-ready": "7s"}}}},
    )
    assert times(r, "PodReady") == [7]
    never = run(pod_spec=gates, duration="10s")
    assert times(never, "PodReady") == []


def test_round_robin_counts_are_exact() -> None:
    # Three endpoints, 10 requests per second from a moving cursor: every 3 s each pod gets
    # exactly 10; web-2 answers 500 on "/", so 100 of 300 fail.
    r = run(
        replicas=3,
        overrides=[{"ordinals": [2], "containers": {"app": {"paths": {"/": 500}}}}],
        traffic=[{"rate": 10}],
        duration="30s",
    )
    route = r.route("/")
    assert (route.offered, route.ok, route.failed["error_status"]) == (300, 200, 100)
    assert series(r, "route./.error_status")[:3] == [3, 3, 4]


def test_readiness_protects_traffic_from_a_starting_pod() -> None:
    # Seed 000's 3-vs-0: web-1 answers only from 3 s.
    kw = {
        "replicas": 2,
        "overrides": [{"ordinals": [1], "containers": {"app": {"start": "3s"}}}],
        "traffic": [{"rate": 2}],
        "duration": "6s",
    }
    without = run(**kw)  # type: ignore[arg-type]
    assert without.route("/").failed_total == 3
    assert without.route("/").failed["restarting"] == 3
    with_readiness = run(probes={"readinessProbe": http(periodSeconds=1, failureThreshold=1)}, **kw)  # type: ignore[arg-type]
    assert with_readiness.route("/").failed_total == 0
    assert with_readiness.route("/").ok == 12


def test_publish_not_ready_addresses_routes_to_unready_pods() -> None:
    # §4.9: endpoints are ready regardless of probes.
    probes = {"readinessProbe": http(periodSeconds=1)}
    beh = {"paths": {"/healthz": 503}}
    hidden = run(probes=probes, behavior=beh, traffic=[{"rate": 1}], duration="5s")
    assert hidden.route("/").failed["no_endpoint"] == 5
    shown = run(
        probes=probes,
        behavior=beh,
        traffic=[{"rate": 1}],
        duration="5s",
        service={"publishNotReadyAddresses": True},
    )
    assert shown.route("/").ok == 5


def test_endpoint_delay_keeps_a_hung_pod_in_rotation() -> None:
    # The pod hangs at 10; readiness drops it at 11 (timeout); clients see that 2 s later, so
    # requests sent at 10, 11 and 12 are lost.
    kw = {
        "probes": {"readinessProbe": http(periodSeconds=1, failureThreshold=1)},
        "behavior": {"episodes": [{"kind": "deadlock", "after": "10s"}]},
        "traffic": [{"rate": 1}],
        "duration": "20s",
    }
    assert run(**kw).route("/").failed["not_answering"] == 1  # type: ignore[arg-type]
    delayed = run(spec={"endpointDelay": "2s"}, **kw)  # type: ignore[arg-type]
    assert delayed.route("/").failed["not_answering"] == 3
    # ... and the pod, Ready at 0, reached clients only at 2: 0, 1 and 13..19 find no endpoint.
    assert delayed.route("/").failed["no_endpoint"] == 9


def test_min_ready_seconds_makes_available_lag_ready() -> None:
    # §5.1-5.2: available once Ready for minReadySeconds, lastTransitionTime + 5 strictly
    # before now (IsPodAvailable, pkg/api/v1/pod/util.go; was ≤ until issue 22 item 1).
    r = run(replicas=2, workload_spec={"minReadySeconds": 5}, duration="8s")
    assert series(r, "workload.web.ready") == [2] * 8
    assert series(r, "workload.web.available") == [0] * 6 + [2] * 2
    assert series(r, "workload.web.unavailable") == [2] * 6 + [0] * 2
    assert r.workload("web").min_available == 0


@pytest.mark.parametrize(("policy", "scheduled"), [("OrderedReady", [0, 5, 10]), ("Parallel", [0, 0, 0])])
def test_statefulset_ordered_ready_admits_one_pod_at_a_time(policy: str, scheduled: list[int]) -> None:
    r = run(
        kind="StatefulSet",
        replicas=3,
        workload_spec={"podManagementPolicy": policy},
        probes={"readinessProbe": http(periodSeconds=1)},
        behavior={"start": "4s"},
        duration="20s",
    )
    assert times(r, "Scheduled") == scheduled
    assert [e.object for e in r.events_for(reason="Scheduled")] == ["pod/web-0", "pod/web-1", "pod/web-2"]
