"""A route that calls another Service of the scenario (``calls: [{service: …}]``): the called
Service's pods serve the calls (a call route, counted as the callers made them), and the caller
gets what they answer — their latency, their failures, nothing when they have no endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from probesim.engine import simulate
from probesim.engine.dependencies import Outcome, expected_tries
from probesim.errors import InputError
from probesim.manifests.scenario import scenario_from_text
from probesim.model.scenario import DependencyCall, Scenario
from probesim.results import Result
from tests.builders import accounted


def deployment(name: str, replicas: int, **container: Any) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8080}], **container}]},
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        },
    ]


def graph(
    front_call: dict[str, Any],
    backend: dict[str, Any],
    *,
    backend_replicas: int = 2,
    backend_container: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    rate: float = 10,
) -> Scenario:
    """frontend (2 pods, route / costing 1 ms and making ``front_call``) → backend."""
    manifests = deployment("frontend", 2) + deployment(
        "backend", backend_replicas, **(backend_container or {})
    )
    doc = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "graph"},
        "manifests": manifests,
        "spec": {
            "duration": "10s",
            "step": "100ms",
            "behavior": {
                "frontend": {
                    "containers": {
                        "c": {"variability": 0, "routes": {"/": {"cpu": "1ms", "calls": [front_call]}}}
                    }
                },
                "backend": {"containers": {"c": {"variability": 0, **backend}}},
            },
            "traffic": [{"name": "front", "service": "frontend", "path": "/", "rate": rate, "start": "1s"}],
            **(spec or {}),
        },
    }
    return scenario_from_text(yaml.safe_dump(doc, sort_keys=False), "graph.yaml", Path("."))


def per_second(r: Result, key: str) -> list[int]:
    s = np.asarray(r.series[key])
    return [int(s[i : i + 10].sum()) for i in range(0, s.size, 10)]


def test_the_called_service_serves_every_call_one_step_after_the_caller_served_its_request() -> None:
    r = simulate(graph({"service": "backend", "path": "/work"}, {"routes": {"/work": {"cpu": "2ms"}}}))
    front, calls = r.route("front"), r.route("calls:backend/work")
    assert calls.service == "backend"
    assert front.offered == 90 and front.ok == 90
    # Every request the frontend served made one call, which the backend's pods answered (those
    # of the run's last step would arrive after its end).
    served = np.asarray(r.series["route.front.ok"])  # answered within their step
    sent = np.asarray(r.series["route.calls:backend/work.offered"])
    assert np.array_equal(sent[1:], served[:-1]) and sent[0] == 0
    assert calls.offered == calls.ok == 90 - served[-1]
    # The caller's answer waits for the backend's: 1 ms of its own, 2 ms there.
    assert front.latency_ms["p50"] == pytest.approx(3.0, abs=0.2)
    accounted(r)


def test_a_failing_backend_fails_the_callers_route_with_its_on_error_and_retries_multiply_the_calls() -> None:
    call = {"service": "backend", "path": "/work", "onError": 502, "retries": {"attempts": 3}}
    r = simulate(graph(call, {"paths": {"/work": 503}}))
    front, calls = r.route("front"), r.route("calls:backend/work")
    assert front.ok == 0 and front.failed["error_status"] == 90
    last = int(r.series["route.front.error_status"][-1])  # (their calls would come after the end)
    assert calls.offered == calls.failed["error_status"] == 3 * (90 - last)  # 3 tries each
    assert (
        expected_tries([Outcome(1.0, 0.0, True)], DependencyCall(service="b", retries={"attempts": 3})) == 3
    )


def test_a_backend_without_endpoints_fails_each_call_at_once() -> None:
    r = simulate(graph({"service": "backend", "path": "/work"}, {}, backend_replicas=0))
    front, calls = r.route("front"), r.route("calls:backend/work")
    assert front.failed["error_status"] == 90
    assert front.latency_ms["max"] <= 2  # its own 1 ms: the refusal is immediate
    assert calls.failed["no_endpoint"] == 90 - int(r.series["route.front.error_status"][-1])


def test_a_backend_slower_than_the_callers_timeout_fails_the_call_at_the_timeout() -> None:
    call = {"service": "backend", "path": "/work", "timeout": "300ms"}
    r = simulate(graph(call, {"routes": {"/work": {"wall": "1s"}}}))
    front, calls = r.route("front"), r.route("calls:backend/work")
    assert front.ok == 0 and front.failed_total == front.failed["error_status"] == 90 - front.in_flight
    assert front.in_flight == 4  # sent in the last 0.3 s
    assert front.latency_ms["p50"] == pytest.approx(301, rel=0.03)  # the timeout, then 500
    # The backend works on each call for 1 s; the caller gave up on them at 300 ms.
    assert calls.ok == 0 and calls.failed_total == calls.failed["timeout"] == calls.offered - calls.in_flight
    assert calls.latency_ms["max"] == 300


def test_an_overloaded_backend_makes_its_callers_wait_as_long_as_it_takes() -> None:
    # 2 backend pods of 100m, 20 ms of CPU a call: 10 calls/s in all. At 16 calls/s its backlog
    # grows by 6 a second, and each frontend request waits for its call's answer.
    container = {"resources": {"limits": {"cpu": "100m"}}}
    quiet = simulate(
        graph({"service": "backend"}, {"routes": {"*": {"cpu": "2ms"}}}, backend_container=container)
    )
    busy = simulate(
        graph(
            {"service": "backend"}, {"routes": {"*": {"cpu": "20ms"}}}, backend_container=container, rate=16
        )
    )
    assert quiet.route("front").latency_ms["p50"] == pytest.approx(1 + 2, abs=0.5)  # its 1 ms, 2 ms there
    front, calls = busy.route("front"), busy.route("calls:backend/")
    assert calls.latency_ms["p50"] > 1500
    assert front.latency_ms["p50"] == pytest.approx(calls.latency_ms["p50"], rel=0.05)
    assert calls.ok <= 10 * 9  # its capacity over the 9 s of traffic; the rest still wait
    # (The caller's answer is the backend's expected one, not the very answer: docs/fidelity.md.)
    assert front.in_flight == pytest.approx(calls.in_flight, rel=0.1) and calls.in_flight > 40


def test_the_dependency_cascades_through_the_backend_to_the_frontend() -> None:
    # The backend's /work calls db (1 s timeout); db hangs from 4 s to 8 s. The frontend's calls
    # fail while it does (the backend answers 500 after its 1 s), and pass again after it.
    r = simulate(
        graph(
            {"service": "backend", "path": "/work", "timeout": "3s"},
            {"routes": {"/work": {"cpu": "2ms", "calls": [{"dependency": "db", "timeout": "1s"}]}}},
            spec={
                "dependencies": {
                    "db": {"latency": "20ms", "outages": [{"at": "4s", "for": "4s", "mode": "hang"}]}
                }
            },
        )
    )
    ok, failed = per_second(r, "route.front.ok"), per_second(r, "route.front.error_status")
    assert ok[1:4] == [10, 10, 10]
    assert ok[4:7] == [0, 0, 0] and sum(failed[4:8]) >= 29  # failed after the backend's 1 s
    assert ok[9] == 10  # the hang is over, and the backend's answers with it
    assert r.route("front").failed_total == sum(failed)
    accounted(r)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"service": "nosuch"}, "calls Service 'nosuch', which the manifests do not define"),
        ({"service": "backend", "port": 81}, "Service backend has no port 81"),
        ({"service": "backend", "dependency": "db"}, "give exactly one of 'dependency' or 'service'"),
        ({"dependency": "db", "path": "/x"}, "'port' and 'path' go with 'service'"),
    ],
)
def test_a_call_to_an_unknown_service_or_port_is_a_clear_error(call: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        graph(call, {}, spec={"dependencies": {"db": {}}})
