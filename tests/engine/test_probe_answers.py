"""Probe answers as the kubelet reads them (reference/kubelet.md §1.2-1.6): redirects followed on
the same host and not to another (ProbeWarning), ports the app does not listen on refused, and
exec commands and gRPC services answered each their own way."""

from __future__ import annotations

from tests.builders import http, run, times

LIVE_1 = {"periodSeconds": 1, "failureThreshold": 1}


def test_a_same_host_redirect_is_followed_and_its_final_status_decides() -> None:
    # /healthz → /live (302); /live answers 500 from 3 s: the probe fails then, not on the 302.
    r = run(
        probes={"livenessProbe": http("/healthz", **LIVE_1)},
        behavior={
            "redirects": {"/healthz": "/live"},
            "episodes": [{"kind": "errors", "at": "3s", "for": "10s", "paths": ["/live"]}],
        },
        duration="6s",
    )
    assert times(r, "Killing")[0] == 3  # then again after each restart
    assert r.events_for("pod/web-0", "Unhealthy")[0].message == (
        "Liveness probe failed: HTTP probe failed with statuscode: 500"
    )


def test_eleven_same_host_redirects_fail_the_probe() -> None:
    # §1.3.13: the 11th hop is an error ("stopped after 10 redirects") and so a Failure.
    chain = {f"/r{i}": f"/r{i + 1}" for i in range(11)}  # /r0 → … → /r11: 11 redirects
    r = run(probes={"livenessProbe": http("/r0", **LIVE_1)}, behavior={"redirects": chain}, duration="3s")
    assert times(r, "Killing")[0] == 1
    assert r.events_for("pod/web-0", "Unhealthy")[0].message == (
        'Liveness probe failed: Get "http://10.244.0.2:8080/r0": stopped after 10 redirects'
    )
    ten = {f"/r{i}": f"/r{i + 1}" for i in range(10)}
    ok = run(probes={"livenessProbe": http("/r0", **LIVE_1)}, behavior={"redirects": ten}, duration="3s")
    assert times(ok, "Killing") == []


def test_a_redirect_to_another_host_passes_with_a_probe_warning() -> None:
    # §1.3.12: not followed; the 3xx is a Warning: Success plus a ProbeWarning event.
    r = run(
        probes={"readinessProbe": http("/healthz", periodSeconds=1)},
        behavior={"redirects": {"/healthz": "https://login.example.com/"}, "paths": {"/healthz": 301}},
        duration="3s",
    )
    assert times(r, "PodReady") == [0]
    warnings = r.events_for("pod/web-0", "ProbeWarning")
    assert [w.time_ms for w in warnings] == [0, 1000, 2000]
    assert {(w.type, w.message) for w in warnings} == {
        ("Warning", "Readiness probe warning: Probe terminated redirects, Response body: ")
    }


def test_clients_follow_redirects_too() -> None:
    r = run(
        behavior={"redirects": {"/": "/home"}, "paths": {"/home": 503}},
        traffic=[{"rate": 2}],
        duration="3s",
    )
    assert r.route("/").ok == 0
    assert r.route("/").failed["error_status"] == 6


def test_a_probe_on_a_port_the_app_does_not_listen_on_is_refused() -> None:
    # The container declares 8080 only; today's app listens there, so 8081 is refused.
    wrong = {"httpGet": {"path": "/healthz", "port": 8081}, **LIVE_1}
    r = run(probes={"livenessProbe": wrong}, duration="3s")
    assert times(r, "Killing")[0] == 1
    assert "connect: connection refused" in r.events_for("pod/web-0", "Unhealthy")[0].message
    # Told that the app listens on 8081 too, the same probe passes.
    ok = run(probes={"livenessProbe": wrong}, behavior={"ports": [8080, 8081]}, duration="3s")
    assert times(ok, "Killing") == []
    tcp = run(probes={"livenessProbe": {"tcpSocket": {"port": 9000}, **LIVE_1}}, duration="3s")
    assert times(tcp, "Killing")[0] == 1
    grpc = run(probes={"livenessProbe": {"grpc": {"port": 9090}, **LIVE_1}}, duration="3s")
    assert times(grpc, "Killing")[0] == 1


def test_requests_to_a_port_the_app_does_not_listen_on_are_refused() -> None:
    r = run(behavior={"ports": [9999]}, traffic=[{"rate": 2}], duration="3s")
    assert r.route("/").ok == 0
    assert r.route("/").failed["restarting"] == 6  # connection refused, as by a process not up


def test_exec_commands_and_grpc_services_answer_each_their_own_way() -> None:
    probes = {
        "readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1},
        "livenessProbe": {"exec": {"command": ["cat", "/tmp/live"]}, **LIVE_1},
    }
    r = run(probes=probes, behavior={"paths": {"exec:cat /tmp/ready": 500}}, duration="3s")
    assert times(r, "PodReady") == []  # readiness's command fails
    assert times(r, "Killing") == []  # liveness's command passes
    shared = run(probes=probes, behavior={"paths": {"exec": 500}}, duration="3s")
    assert times(shared, "Killing")[0] == 1  # 'exec' still answers every command
    grpc = {
        "readinessProbe": {"grpc": {"port": 8080, "service": "readiness"}, "periodSeconds": 1},
        "livenessProbe": {"grpc": {"port": 8080}, **LIVE_1},
    }
    g = run(probes=grpc, behavior={"paths": {"grpc:readiness": 503}}, duration="3s")
    assert times(g, "PodReady") == []
    assert times(g, "Killing") == []
    assert "NOT_SERVING" in g.events_for("pod/web-0", "Unhealthy")[0].message
