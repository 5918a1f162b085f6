"""Invariants that hold for any scenario, checked on generated ones (hypothesis)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probesim.engine import simulate
from probesim.results import CAUSES
from tests.builders import scenario

seconds = st.integers(min_value=0, max_value=40).map(lambda s: f"{s}s")


@st.composite
def probe(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    handler = draw(
        st.sampled_from(
            [
                {"httpGet": {"path": "/healthz", "port": 8080}},
                {"tcpSocket": {"port": 8080}},
                {"exec": {"command": ["check"]}},
                {"grpc": {"port": 9090}},
            ]
        )
    )
    return {
        **handler,
        "initialDelaySeconds": draw(st.integers(0, 10)),
        "periodSeconds": draw(st.integers(1, 10)),
        "timeoutSeconds": draw(st.integers(1, 5)),
        "failureThreshold": draw(st.integers(1, 5)),
        "successThreshold": draw(st.integers(1, 3)) if kind == "readiness" else 1,
    }


@st.composite
def episode(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["hang", "deadlock", "crash", "errors"]))
    anchor = draw(st.sampled_from(["after", "at"]))
    ep: dict[str, Any] = {"kind": kind, anchor: draw(seconds)}
    if kind in ("hang", "errors"):
        ep["for"] = f"{draw(st.integers(1, 20))}s"
    if kind in ("hang", "deadlock"):
        ep["acceptsTcp"] = draw(st.booleans())
    if kind == "crash":
        ep["exitCode"] = draw(st.sampled_from([0, 1, 137]))
    if kind == "errors":
        ep["paths"] = draw(st.sampled_from([None, ["/healthz"], ["/"], ["exec", "grpc"]]))
        if ep["paths"] is None:
            del ep["paths"]
    return ep


@st.composite
def scenarios(draw: st.DrawFn) -> Any:
    probes = {}
    for kind in ("startup", "readiness", "liveness"):
        if draw(st.booleans()):
            probes[f"{kind}Probe"] = draw(probe(kind))
    behavior = {
        "start": draw(seconds),
        "episodes": draw(st.lists(episode(), max_size=3)),
        "ignoresSigterm": draw(st.booleans()),
    }
    return scenario(
        probes=probes,
        behavior=behavior,
        replicas=draw(st.integers(1, 4)),
        traffic=[
            {
                "rate": draw(st.sampled_from([0, 1, 3, 7.5, 100])),
                "keepAlive": draw(st.booleans()),
                "preAllocatedVUs": draw(st.integers(1, 20)),
                "noEndpoint": draw(st.sampled_from(["refused", "retransmit"])),
            }
        ],
        duration=f"{draw(st.integers(5, 400))}s",
        spec={"endpointDelay": draw(st.sampled_from(["0s", "1s", "3s"]))},
        workload_spec={"minReadySeconds": draw(st.integers(0, 10))},
        template_labels={"sidecar.istio.io/inject": draw(st.sampled_from(["true", "false"]))},
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_counts_states_and_events_are_consistent(sc: Any) -> None:
    r = simulate(sc)
    s = r.series
    offered = s["route./.offered"]
    answered = s["route./.ok"] + sum(s[f"route./.{c}"] for c in CAUSES)
    if sc.spec.traffic[0].no_endpoint == "refused":
        assert np.array_equal(offered, answered)
    else:
        # Requests waiting for an answer to their SYN are answered later, within the client's
        # timeout (60 s); none is answered twice or lost.
        sent, done = np.cumsum(offered), np.cumsum(answered)
        assert (done <= sent).all()
        assert sent[-1] - done[-1] <= offered[-60:].sum()
    desired, current = s["workload.web.desired"], s["workload.web.current"]
    ready, available = s["workload.web.ready"], s["workload.web.available"]
    assert (available <= ready).all() and (ready <= current).all() and (current <= desired).all()
    assert np.array_equal(s["workload.web.unavailable"], desired - available)
    times = [e.time_ms for e in r.events]
    assert times == sorted(times)
    starts = len(r.events_for(reason="Started"))
    assert r.workload("web").total_restarts == starts - len(r.events_for(reason="Scheduled"))
    assert np.all(np.diff(s["workload.web.restarts"]) >= 0)
    probes = sc.workloads[0].pod_spec.containers[0]
    if probes.liveness_probe is None and probes.startup_probe is None:
        assert r.events_for(reason="Killing") == []
    if probes.readiness_probe is None and probes.startup_probe is None:
        # Without readiness or startup probes a pod is Ready exactly while its container runs.
        assert all(e.reason != "Unhealthy" or "Liveness" in e.message for e in r.events)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_same_scenario_same_result(sc: Any) -> None:
    a = json.dumps(simulate(sc).to_json())
    b = json.dumps(simulate(sc).to_json())
    assert a == b


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 700), st.integers(600, 3000))
def test_crash_loop_waits_follow_the_back_off_ladder(age: int, duration: int) -> None:
    # Whatever the run length before each crash, a restart waits 0 or a rung of
    # 10, 20, 40, 80, 160, 300 s after the exit, never longer, and the first is immediate.
    sc = scenario(behavior={"episodes": [{"kind": "crash", "after": f"{age}s"}]}, duration=f"{duration}s")
    r = simulate(sc)
    starts = [e.time_ms // 1000 for e in r.events_for(reason="Started")]
    waits = [b - (a + age) for a, b in itertools.pairwise(starts)]
    assert all(w in (0, 10, 20, 40, 80, 160, 300) for w in waits)
    if waits:
        assert waits[0] == 0
    for prev, nxt in itertools.pairwise(waits):
        # The ladder only climbs (or restarts from 0 after 10 min of running).
        assert nxt >= prev or age > 600 or nxt == 0
