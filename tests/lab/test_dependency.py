"""Dependencies for real: the lab's dependency servers (latency, capacity, outages, faults) and
the test app's client (timeout, retries, budget, circuit breaker), over sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from probesim.engine import simulate
from probesim.lab.calls import Calls
from probesim.lab.compare import agree, beside, compare
from probesim.lab.dependency import DependencyServer, env_name
from probesim.lab.orchestrator import run_lab
from probesim.manifests.scenario import load_scenario
from probesim.model.scenario import Dependency, DependencyCall


def dep(**fields: object) -> Dependency:
    return Dependency.model_validate(fields)


def call(**fields: object) -> DependencyCall:
    return DependencyCall.model_validate({"dependency": "db", **fields})


async def with_server(spec: Dependency, body, seed: int = 0):  # type: ignore[no-untyped-def]
    server = DependencyServer("db", spec, seed)
    await server.start()
    server.begin(time.monotonic())
    calls = Calls({"db": server.url})
    try:
        return await body(server, calls)
    finally:
        await calls.close()
        await server.stop()


def test_a_call_gets_its_answer_after_the_latency() -> None:
    async def body(server: DependencyServer, calls: Calls) -> tuple[bool, float]:
        t = time.monotonic()
        ok = await calls.call(call())
        return ok, time.monotonic() - t

    ok, took = asyncio.run(with_server(dep(latency="100ms", variability=0), body))
    assert ok and 0.09 < took < 0.5


def test_the_client_timeout_ends_a_delayed_call_and_retries_try_again() -> None:
    # every call delayed 2 s (the caller's sidecar, as Istio would): timeout 200 ms, 3 tries
    async def body(server: DependencyServer, calls: Calls) -> tuple[bool, float, int]:
        t = time.monotonic()
        ok = await calls.call(call(timeout="200ms", retries={"attempts": 3, "backoff": "50ms"}))
        return ok, time.monotonic() - t, server.calls

    ok, took, tries = asyncio.run(
        with_server(dep(latency="5ms", faults=[{"delay": "2s", "percent": 100}]), body)
    )
    assert not ok and tries == 3
    assert 0.6 + 0.1 <= took < 1.5  # three timeouts and two backoffs


def test_aborts_fail_at_once_and_half_the_calls_fail_with_half_aborted() -> None:
    async def body(server: DependencyServer, calls: Calls) -> list[bool]:
        return [await calls.call(call()) for _ in range(200)]

    results = asyncio.run(
        with_server(dep(latency="1ms", faults=[{"abort": 503, "percent": 50}]), body, seed=3)
    )
    assert 70 <= results.count(False) <= 130  # seeded: the same draw every run
    again = asyncio.run(with_server(dep(latency="1ms", faults=[{"abort": 503, "percent": 50}]), body, seed=3))
    assert again == results


def test_capacity_turns_calls_away_with_503() -> None:
    async def body(server: DependencyServer, calls: Calls) -> list[bool]:
        return list(await asyncio.gather(*(calls.call(call()) for _ in range(5))))

    results = asyncio.run(with_server(dep(latency="300ms", variability=0, capacity=2), body))
    assert sorted(results) == [False, False, False, True, True]


def test_a_refusing_outage_and_the_circuit_breaker() -> None:
    # down from the start for 1 s: three failures open the breaker, which then fails calls
    # without trying; after its open time one trial call goes through and closes it again.
    async def body(server: DependencyServer, calls: Calls) -> tuple[list[bool], int, bool, bool]:
        c = call(timeout="1s", circuitBreaker={"failures": 3, "open": "1500ms", "halfOpenCalls": 1})
        first = [await calls.call(c) for _ in range(5)]
        tried = server.calls
        await asyncio.sleep(1.6)  # outage over, breaker half-open
        return first, tried, await calls.call(c), await calls.call(c)

    first, tried, trial, after = asyncio.run(
        with_server(dep(latency="1ms", outages=[{"at": "0s", "for": "1s", "mode": "refuse"}]), body)
    )
    assert first == [False] * 5
    assert tried == 0  # refused: no call ever reached it
    assert trial and after


def test_a_retry_budget_caps_retries_at_a_share_of_first_tries() -> None:
    async def body(server: DependencyServer, calls: Calls) -> int:
        for _ in range(20):
            await calls.call(call(retries={"attempts": 3, "budget": 20}))
        return calls.retries

    retries = asyncio.run(with_server(dep(latency="1ms", faults=[{"abort": 500, "percent": 100}]), body))
    assert retries == 4  # 20 % of 20 first tries


def test_a_commands_dependency_url_is_in_an_environment_variable_named_after_it() -> None:
    assert env_name("httpbin") == "HTTPBIN_URL"
    assert env_name("orders-db") == "ORDERS_DB_URL"


OUTAGE = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: dep-outage}
manifests: [MANIFESTS]
spec:
  duration: 22s
  dependencies:
    httpbin:
      latency: 20ms
      outages: [{at: 10s, for: 7s, mode: hang}]
  behavior:
    patient:
      containers:
        patient:
          start: 2s
          routes:
            /check-dep: {calls: [{dependency: httpbin}]}
  traffic:
    - {name: check_dep, path: /check-dep, rate: 10, start: 6s, stop: 20s, timeout: 3s}
    - {name: check_nodep, path: /check-nodep, rate: 10, start: 6s, stop: 20s, timeout: 3s}
"""


def test_seed_004s_mistake_for_real_a_dependency_outage_empties_the_service(tmp_path: Path) -> None:
    # Readiness on /check-dep (seed 004's patient, failureThreshold 1): the dependency hangs from
    # 10 to 17 s, both pods leave the Service at 12 s and come back at 18 s, and /check-nodep —
    # which never calls it — fails with no endpoint meanwhile. The simulation agrees. (The hang
    # does not end on a probe's deadline: the probe at 15 s gives up at 16 s.)
    manifests = Path(__file__).parents[2] / "src/probesim/scenarios/manifests/patient-readiness.yaml"
    (tmp_path / "s.yaml").write_text(OUTAGE.replace("MANIFESTS", str(manifests)))
    sc = load_scenario(str(tmp_path / "s.yaml"))
    lab = run_lab(sc)
    for pod in ("pod/patient-0", "pod/patient-1"):
        assert [round(e.time_ms / 1000) for e in lab.events_for(pod, "PodNotReady")] == [12]
        assert [round(e.time_ms / 1000) for e in lab.events_for(pod, "PodReady")] == [5, 18]
    nodep = lab.route("check_nodep")
    assert nodep.failed_total == nodep.failed["no_endpoint"]
    assert 54 <= nodep.failed_total <= 66  # 6 s without endpoints at 10 requests/s
    assert lab.workload("patient").total_restarts == 0
    _, rows = beside(sc, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]


LIVENESS_OUTAGE = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: dep-outage-liveness}
manifests: [MANIFESTS]
spec:
  duration: 22s
  step: 100ms    # the restart takes 100 ms (cluster.containerRestartDelay): 503s end at 18.1 s
  dependencies:
    httpbin:
      latency: 20ms
      outages: [{at: 8s, for: 12s, mode: hang}]
  behavior:
    patient:
      containers:
        patient:
          start: 2s
          shutdown: 2s
          routes:
            /check-dep: {calls: [{dependency: httpbin}]}
  traffic:
    - {name: check_nodep, path: /check-nodep, rate: 20, start: 4s, stop: 20s, keepAlive: true, preAllocatedVUs: 2}
"""


def test_seed_004s_liveness_mistake_for_real_the_sidecar_answers_while_pods_restart(tmp_path: Path) -> None:
    # Liveness on /check-dep (timeout 5 s, failureThreshold 1): the probe at 9 s waits on the
    # hung dependency, both pods are killed at 14 s, drain 2 s, restart 100 ms later (the
    # scenario's containerRestartDelay) and listen at 18.1 s.
    # k6-like clients keep their connections to the pods' sidecars (real Envoys), which answer
    # 503 all that time although /check-nodep never calls the dependency. The simulation agrees.
    manifests = Path(__file__).parents[2] / "src/probesim/scenarios/manifests/patient-liveness.yaml"
    (tmp_path / "s.yaml").write_text(LIVENESS_OUTAGE.replace("MANIFESTS", str(manifests)))
    sc = load_scenario(str(tmp_path / "s.yaml"))
    sim = simulate(sc)
    assert sim.route("check_nodep").failed == {**sim.route("check_nodep").failed, "restarting": 82}
    lab = run_lab(sc)
    for pod in ("pod/patient-0", "pod/patient-1"):
        assert [round(e.time_ms / 1000) for e in lab.events_for(pod, "Killing")] == [14]
    nodep = lab.route("check_nodep")
    assert 74 <= nodep.failed["restarting"] <= 90  # 4.1 s of 503s at 20 requests/s
    assert nodep.failed["no_endpoint"] == 0
    rows = compare(sim, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
