"""The probe workers' shortcut for steady workers (kubelet.SHORTCUTS: skip the full path, defer
runs on the step grid) gives the same Result, to the bit, as running every worker through the
full path every time."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probesim.engine import kubelet, simulate
from probesim.model.scenario import Scenario
from tests.builders import builtin, http, scenario


def both(sc: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(kubelet, "SHORTCUTS", False)
        full = simulate(sc).to_json(series=True)
    assert simulate(sc).to_json(series=True) == full


@pytest.mark.parametrize(
    "name", ["seed000-strict-liveness", "seed000-startup-protects", "patient-delays-liveness"]
)
def test_builtins(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    both(builtin(name), monkeypatch)


def test_deleted_pod_and_manual_triggers(monkeypatch: pytest.MonkeyPatch) -> None:
    # A deletion releases deferred liveness and startup workers; restarts trigger readiness.
    sc = scenario(
        replicas=3,
        duration="90s",
        probes={
            "startupProbe": http(periodSeconds=2, failureThreshold=5),
            "readinessProbe": http(periodSeconds=1),
            "livenessProbe": http(periodSeconds=3, initialDelaySeconds=4, failureThreshold=2),
        },
        behavior={"start": "3s", "episodes": [{"kind": "hang", "after": "20s", "for": "8s"}]},
        spec={"actions": [{"kind": "deletePod", "pod": "web-1", "at": "40s"}]},
        traffic=[{"rate": 50}],
    )
    both(sc, monkeypatch)


def probe(handler: str, fields: dict[str, Any]) -> dict[str, Any]:
    if handler == "tcp":
        return {"tcpSocket": {"port": 8080}, **fields}
    if handler == "exec":
        return {"exec": {"command": ["check"]}, **fields}
    return http(**fields)


probe_fields = st.fixed_dictionaries(
    {
        "periodSeconds": st.integers(1, 4),
        "initialDelaySeconds": st.integers(0, 5),
        "failureThreshold": st.integers(1, 3),
        "successThreshold": st.just(1),
        "timeoutSeconds": st.integers(1, 3),
    }
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    step=st.sampled_from(["1s", "500ms"]),
    ready=probe_fields,
    live=probe_fields,
    startup=st.booleans(),
    start=st.integers(0, 6),
    hang_at=st.integers(5, 25),
    hang_for=st.integers(1, 12),
    handler=st.sampled_from(["http", "tcp", "exec"]),
    kind=st.sampled_from(["Deployment", "StatefulSet"]),
)
def test_random_fleets(
    step: str,
    ready: dict[str, Any],
    live: dict[str, Any],
    startup: bool,
    start: int,
    hang_at: int,
    hang_for: int,
    handler: str,
    kind: str,
) -> None:
    probes = {"readinessProbe": http(**ready), "livenessProbe": probe(handler, live)}
    if startup:
        probes["startupProbe"] = http(periodSeconds=1, failureThreshold=10)
    sc = scenario(
        kind=kind,
        replicas=4,
        duration="40s",
        step=step,
        probes=probes,
        overrides=[
            {
                "ordinals": [1, 3],
                "containers": {
                    "app": {
                        "start": f"{start}s",
                        "episodes": [{"kind": "hang", "after": f"{hang_at}s", "for": f"{hang_for}s"}],
                    }
                },
            }
        ],
        traffic=[{"rate": 20}],
    )
    with pytest.MonkeyPatch.context() as m:
        both(sc, m)
