"""Invariants that hold for any scenario, checked on generated ones (hypothesis)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probesim.engine import simulate
from tests.builders import accounted, scenario

seconds = st.integers(min_value=0, max_value=40).map(lambda s: f"{s}s")


@st.composite
def probe(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    handler: dict[str, Any] = draw(
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


@st.composite
def loaded_scenarios(draw: st.DrawFn) -> Any:
    """Scenarios under the capacity model: queues and workers, CPU limits, dependency calls
    with faults, outages, retries and breakers, client timeouts, VU limits, keep-alive, client
    sidecars with outlier detection, an HPA, crashes and hangs, the load stopping early."""
    cost: dict[str, Any] = {
        "cpu": f"{draw(st.sampled_from([1, 5, 20]))}ms",
        "wall": f"{draw(st.sampled_from([0, 30, 700, 3000]))}ms",
    }
    spec: dict[str, Any] = {
        "seed": draw(st.integers(0, 1000)),
        "endpointDelay": draw(st.sampled_from(["0s", "1s"])),
        "cluster": {"podStartDelay": draw(st.sampled_from(["0s", "3s"]))},
    }
    if draw(st.booleans()):
        dep: dict[str, Any] = {
            "latency": draw(st.sampled_from(["5ms", "300ms"])),
            "faults": draw(
                st.sampled_from([[], [{"delay": "10s", "percent": 30}], [{"abort": 503, "percent": 40}]])
            ),
            "outages": draw(
                st.sampled_from(
                    [[], [{"at": "10s", "for": "15s", "mode": "hang"}], [{"at": "5s", "for": "10s"}]]
                )
            ),
        }
        if draw(st.booleans()):
            dep["capacity"] = draw(st.integers(1, 50))
        spec["dependencies"] = {"db": dep}
        call: dict[str, Any] = {"dependency": "db", "timeout": draw(st.sampled_from(["200ms", "5s", None]))}
        if draw(st.booleans()):
            call["retries"] = {"attempts": draw(st.integers(1, 3)), "backoff": "25ms"}
        if draw(st.booleans()):
            call["circuitBreaker"] = {"failures": draw(st.integers(1, 5)), "open": "5s"}
        cost["calls"] = [call]
    capacity = {
        "workers": draw(st.sampled_from([None, 2, 16])),
        "queue": draw(st.sampled_from([None, 0, 20, 500])),
        "probes": draw(st.sampled_from(["shared", "separate"])),
    }
    behavior = {
        "start": draw(st.sampled_from(["0s", "5s"])),
        "shutdown": draw(st.sampled_from(["0s", "3s"])),
        "routes": {"/": cost, "/healthz": {"cpu": "1ms"}},
        "capacity": {k: v for k, v in capacity.items() if v is not None},
        "variability": draw(st.sampled_from([0.0, 0.5])),
        "episodes": draw(st.lists(episode(), max_size=2)),
    }
    if draw(st.booleans()):
        behavior["warmup"] = {"for": "10s", "factor": 2}
    probes = {f"{kind}Probe": draw(probe(kind)) for kind in ("readiness", "liveness") if draw(st.booleans())}
    limit = draw(st.sampled_from(["100m", "500m", "2"]))
    container = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": limit}},
        **probes,
    }
    manifests: list[dict[str, Any]] = []
    if draw(st.booleans()):
        metric = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}
        manifests.append(
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "web"},
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1,
                    "maxReplicas": 5,
                    "metrics": [{"type": "Resource", "resource": metric}],
                },
            }
        )
    traffic: dict[str, Any] = {
        "rate": draw(st.sampled_from([3, 40, 400])),
        "start": draw(st.sampled_from(["0s", "10s"])),
        "timeout": draw(st.sampled_from(["500ms", "2s", "10s", "60s", None])),
        "keepAlive": draw(st.booleans()),
        "noEndpoint": draw(st.sampled_from(["refused", "retransmit"])),
    }
    if draw(st.booleans()):
        traffic["maxVUs"] = draw(st.integers(1, 300))
    if draw(st.booleans()):
        traffic["stop"] = f"{draw(st.integers(15, 60))}s"
        traffic["gracefulStop"] = f"{draw(st.integers(0, 10))}s"
    if draw(st.booleans()):
        od = {"consecutive5xxErrors": draw(st.integers(1, 5)), "interval": "2s", "baseEjectionTime": "10s"}
        policy: dict[str, Any] = {"outlierDetection": od}
        if draw(st.booleans()):
            policy["loadBalancer"] = {"simple": "ROUND_ROBIN"}
        manifests.append(
            {
                "apiVersion": "networking.istio.io/v1",
                "kind": "DestinationRule",
                "metadata": {"name": "web"},
                "spec": {"host": "web", "trafficPolicy": policy},
            }
        )
        traffic["clients"] = draw(st.integers(1, 3))
    return scenario(
        containers=[container],
        behavior=behavior,
        replicas=draw(st.integers(1, 3)),
        traffic=[traffic],
        duration=f"{draw(st.integers(5, 90))}s",
        spec=spec,
        manifests=manifests,
        template_labels={"sidecar.istio.io/inject": draw(st.sampled_from(["true", "false"]))},
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_scenarios())
def test_every_request_is_accounted_for_under_load(sc: Any) -> None:
    # offered = ok + failed + dropped + interrupted + in flight, at every step, whatever the
    # queues, timeouts, dependencies, connections, sidecars and autoscaler do.
    accounted(simulate(sc))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_scenarios())
def test_the_buffers_kept_sums_are_what_they_hold(sc: Any) -> None:
    # A route's requests in flight are counted from the sums its buffers keep as they change
    # (the VUs they hold, the inflight series): at every step, before and after its traffic,
    # they equal what the answer wheel and the client queue hold.
    from probesim.engine.traffic import Traffic

    send, checked = Traffic.send, [0]

    def check(self: Traffic) -> None:
        for ri in range(len(self.fleet.routes)):
            assert self.pending_n[ri] == int(self.pending[ri].sum())
            assert self.queued_n[ri] == int(self.queued[ri].sum())
            checked[0] += 1

    def checked_send(self: Traffic, t: int, k: int, rec: Any) -> None:
        check(self)
        send(self, t, k, rec)
        check(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Traffic, "send", checked_send)
        accounted(simulate(sc))
    assert checked[0] > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_scenarios())
def test_a_probe_waits_for_a_worker_only_when_every_worker_is_taken(sc: Any) -> None:
    # With a worker pool, what arrives between steps (a probe, a call's try) waits only when
    # the step left at least as many requests held as there are workers, and then it does:
    # behind the queue, never behind fewer requests than the workers at work.
    from probesim.engine.loop import Simulation

    sim = Simulation(sc)
    sim.begin()
    cap = sim.capacity
    for k in range(sim.ticks):
        sim.advance(k + 1)
        if not cap.any:
            continue
        held = cap.backlog.sum(axis=0)
        pooled = np.isfinite(cap.workers) & cap.loaded
        waits = cap.wait_ms[pooled] > 0
        full = held[pooled] >= cap.workers[pooled]
        assert (waits == full).all(), (k, held[pooled].tolist(), cap.wait_ms[pooled].tolist())
    sim.finish()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_counts_states_and_events_are_consistent(sc: Any) -> None:
    r = simulate(sc)
    s = r.series
    # Requests waiting for an answer to their SYN are answered later (or given up on); none is
    # answered twice or lost.
    accounted(r)
    if sc.spec.traffic[0].no_endpoint == "refused":
        assert not s["route./.inflight"].any()
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
    # 10, 20, 40, 80, 160, 300 s after the exit, never longer, and the first is immediate;
    # each restart also takes the restart delay (100 ms by default).
    sc = scenario(behavior={"episodes": [{"kind": "crash", "after": f"{age}s"}]}, duration=f"{duration}s")
    r = simulate(sc)
    delay = sc.spec.cluster.container_restart_delay
    starts = [e.time_ms for e in r.events_for(reason="Started")]
    waits = [b - (a + 1000 * age) - delay for a, b in itertools.pairwise(starts)]
    assert all(w in (0, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000) for w in waits)
    if waits:
        assert waits[0] == 0
    for prev, nxt in itertools.pairwise(waits):
        # The ladder only climbs (or restarts from 0 after 10 min of running).
        assert nxt >= prev or age > 600 or nxt == 0
