"""The lab's local kubelet: real processes, real probes, real restart delays, compared with the
simulation (issue 6's CI cases, shortened to keep CI quick), and nothing left running."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.lab.compare import agree, beside, compare, outlier_interval_ms
from probesim.lab.orchestrator import run_lab
from probesim.manifests.scenario import load_scenario
from tests.builders import builtin, http, scenario
from tests.lab.procs import (
    Proc,
    alive,
    children_left,
    command_of,
    descendants,
    listening_tcp_ports,
    wait_until,
)

PROBESIM = Path(sys.executable).parent / "probesim"


@pytest.mark.waits
def test_crash_loop_restart_delays_are_0_10_20_40_within_a_second() -> None:
    # Exits 1 s after each start: restarted after 0, 10, 20 and 40 s of back-off.
    sc = scenario(behavior={"episodes": [{"kind": "crash", "after": "1s"}]}, duration="76s")
    lab = run_lab(sc)
    starts = [e.time_ms / 1000 for e in lab.events_for("pod/web-0", "Started")]
    assert len(starts) == 5
    for measured, expected in zip(starts, [0, 1, 12, 33, 74], strict=True):
        assert abs(measured - expected) < 1.0
    delays = [b - a - 1 for a, b in itertools.pairwise(starts)]  # from each exit
    for measured, expected in zip(delays, [0, 10, 20, 40], strict=True):
        assert abs(measured - expected) < 1.0
    _, rows = beside(sc, lab)
    assert all(r["agree"] for r in rows if r["reason"] == "Started")
    assert children_left() == []


def test_liveness_kills_a_slow_start_like_the_simulation() -> None:
    # The app needs 10 s; liveness (delay 2, period 1, threshold 2) kills it at 3. The restart
    # takes a moment (for real, and in the simulation: cluster.containerRestartDelay), so the
    # next container's initial delay (whole seconds since its start) ends one tick later: kills
    # 4 s apart, at 3, 7, 11 in both.
    sc = scenario(
        probes={"livenessProbe": http(initialDelaySeconds=2, periodSeconds=1, failureThreshold=2)},
        behavior={"start": "10s"},
        duration="12s",
    )
    lab = run_lab(sc)
    kills = [e.time_ms / 1000 for e in lab.events_for("pod/web-0", "Killing")]
    simulated = [e.time_ms / 1000 for e in simulate(sc).events_for("pod/web-0", "Killing")]
    assert simulated == [3, 7, 11]
    assert len(kills) == 3 and all(abs(a - b) < 0.5 for a, b in zip(kills, simulated, strict=True))
    assert lab.events_for("pod/web-0", "BackOff")
    assert "Liveness probe failed" in lab.events_for("pod/web-0", "Unhealthy")[0].message
    assert children_left() == []


def test_interrupting_the_lab_leaves_no_process(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: {duration: 60s}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec: {containers: [{name: app}]}\n"
    )
    proc = subprocess.Popen([str(PROBESIM), "lab", str(tmp_path / "s.yaml")], start_new_session=True)
    try:
        # the pods' apps, listening
        def apps() -> set[Proc]:
            return {p for p in descendants(proc.pid) if " app --port " in " ".join(command_of(p[0]))}

        assert wait_until(lambda: len([p for p in apps() if listening_tcp_ports(p[0])]) >= 2, 60)
        started = apps()
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
        assert wait_until(lambda: not alive(started), 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_seed_003_outlier_detection_through_real_envoys_matches_the_simulation() -> None:
    # Seed 003: pod 2 answers 500 on /; two client pods, each with its own Envoy sidecar, eject it
    # after two consecutive 5xx each. Over 18 s (traffic from 10 s) both run: 4 failed, 2 ejections.
    sc = builtin("seed003-outlier")
    lab = run_lab(sc, 18)
    route = lab.route("/")
    assert route.service == "backend"
    assert route.offered == 48
    assert route.failed["error_status"] == 4
    assert route.failed_total == 4
    assert route.statuses == {200: 44, 500: 4}
    # Every request accounted for, as in the simulation.
    assert (
        route.offered == route.ok + route.failed_total + route.dropped + route.interrupted + route.in_flight
    )
    assert route.envoy["ejections_enforced_total"] == 2
    assert route.envoy["ejections_active"] == 2
    assert 0 < route.latency_ms["p50"] <= route.latency_ms["p99"] <= route.latency_ms["max"] < 1000
    assert route.envoy["hosts_failed_outlier_check"] == 2  # /clusters: ejected in both sidecars
    # Envoy's outlier event log: each sidecar ejects pod 2 at its second 5xx, 11 s in
    for client in ("sidecar/client-0", "sidecar/client-1"):
        (eject,) = lab.events_for(client, "OutlierEject")
        assert 10_900 <= eject.time_ms <= 12_000
        assert '"type":"CONSECUTIVE_5XX"' in eject.message and '"enforced":true' in eject.message
    short = simulate(sc.cut_to(18_000))
    rows = compare(short, lab, outlier_interval_ms(sc))
    assert agree(rows), [r for r in rows if not r["agree"]]
    routes = [(r["reason"], r["measured"]) for r in rows if str(r["object"]).startswith("route/")]
    assert routes == [("failed requests", [4]), ("ejections", [2])]
    assert sum(str(r["object"]).startswith("sidecar/") for r in rows) == 2
    assert children_left() == []  # the apps and the Envoys


# Every other seed 003 built-in, 20 s for real through real Envoys: the lab agrees with the
# simulation on every row, the events of each pod and each client sidecar's ejections per pod
# (hosts named through the lab's and the simulation's address maps).
SEED_003 = [
    ("seed003-all-eject", {("sidecar/client-0 → pod/backend-0", "OutlierEject")}),
    ("seed003-default-max-ejection", set()),  # 10 % of 3 pods is less than one: never ejected
    ("seed003-header-abort", set()),
    ("seed003-mirror-post", set()),
]


@pytest.mark.parametrize(("name", "must_show"), SEED_003, ids=[c[0] for c in SEED_003])
def test_seed_003_built_ins_agree_with_the_simulation(name: str, must_show: set[tuple[str, str]]) -> None:
    sc = builtin(name)
    lab = run_lab(sc, 20)
    _, rows = beside(sc, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
    shown = {(str(r["object"]), str(r["reason"])) for r in rows}
    assert must_show <= shown
    # Every workload runs (issue 23 item 6): mirror-post's shadow too, which its mirror reaches.
    shadow = {"pod/backend-shadow-0"} if name == "seed003-mirror-post" else set()
    assert {o for o, _ in shown if o.startswith("pod/")} == {f"pod/backend-{i}" for i in range(3)} | shadow
    assert children_left() == []


def test_seed_003_without_outlier_detection_a_third_fail_as_simulated() -> None:
    sc = builtin("seed003-no-outlier")
    lab = run_lab(sc, 16)
    assert lab.route("/").offered == 36
    assert lab.route("/").failed["error_status"] == 12  # round robin: every third request
    short = simulate(sc.cut_to(16_000))
    (row,) = [r for r in compare(short, lab) if r["object"] == "route//"]
    assert row["simulated"] == [12] and row["agree"] is True


def test_a_missing_command_is_a_clear_error() -> None:
    out = subprocess.run(
        [
            str(PROBESIM),
            "lab",
            "seed000-slow-start-killed",
            "--duration",
            "2s",
            "--command",
            "/nonexistent/app",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--command /nonexistent/app: not found or not executable" in out.stderr
    assert "Traceback" not in out.stderr


GRPC_PROBES = {
    "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 1},
    "livenessProbe": {"grpc": {"port": 9090}, "periodSeconds": 1, "failureThreshold": 3},
}
GRPC_BEHAVIOR = {
    "start": "2s",
    "episodes": [
        {"kind": "errors", "after": "6s", "for": "2s", "status": 503, "paths": ["grpc"]},
        {"kind": "hang", "after": "10s", "for": "5s"},
    ],
}


def test_grpc_probes_run_against_the_apps_grpc_health_like_the_kubelets() -> None:
    # NOT_SERVING for 2 s fails two probes of each (threshold 3: nothing happens); a 5 s hang
    # makes three liveness calls miss their 1 s deadline: killed at 13 s, as simulated.
    ports = [{"containerPort": 8080, "name": "http"}, {"containerPort": 9090, "name": "grpc"}]
    container = {"name": "app", "image": "example.com/app:1", "ports": ports, **GRPC_PROBES}
    sc = scenario(containers=[container], behavior=GRPC_BEHAVIOR, duration="16s")
    lab = run_lab(sc)
    unhealthy = [e.message for e in lab.events_for("pod/web-0", "Unhealthy")]
    assert 'Liveness probe failed: service unhealthy (responded with "NOT_SERVING")' in unhealthy
    assert "Liveness probe failed: timeout: health rpc did not complete within 1s" in unhealthy
    (kill,) = lab.events_for("pod/web-0", "Killing")
    assert abs(kill.time_ms - 13_000) < 500
    _, rows = beside(sc, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
    assert children_left() == []


def test_a_commands_grpc_health_is_probed_on_grpc_port() -> None:
    # The test app run as if it were the user's own server: it reads $PORT and $GRPC_PORT. A
    # --command starts cold (its Python start-up is its own: seconds on a busy machine), so
    # Ready comes at the first probe after it serves gRPC health, and stays.
    sc = scenario(probes={"readinessProbe": GRPC_PROBES["readinessProbe"]}, duration="8s")
    lab = run_lab(sc, command=[str(PROBESIM), "app"])
    (ready,) = lab.events_for("pod/web-0", "PodReady")
    unhealthy = lab.events_for("pod/web-0", "Unhealthy")
    assert all(e.time_ms < ready.time_ms for e in unhealthy)  # none once it served
    assert lab.events_for("pod/web-0", "PodNotReady") == []
    assert lab.events_for("pod/web-0", "Killing") == []


@pytest.mark.parametrize("meshed", [True, False])
def test_endpoints_follow_readiness(tmp_path: Path, meshed: bool) -> None:
    # Pod 2 fails readiness and answers 500: neither Envoy (endpoints from readiness through
    # file-based EDS) nor the plain Service path may route to it, so no request fails; with
    # static endpoints a third would.
    seed = Path(__file__).parents[2] / "src/probesim/scenarios/seed003-no-outlier.yaml"
    text = seed.read_text().replace("{paths: {/: 500}}", "{paths: {/: 500, /healthz: 500}}")
    text = text.replace("start: 10s", "start: 8s")
    if meshed:
        text += (
            "---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: backend}\n"
            "spec: {host: backend, trafficPolicy: {loadBalancer: {simple: ROUND_ROBIN}}}\n"
        )
    (tmp_path / "s.yaml").write_text(text)
    lab = run_lab(load_scenario(str(tmp_path / "s.yaml")), 14)
    assert lab.route("/").offered == 36
    assert lab.route("/").failed_total == 0
    assert lab.events_for("pod/backend-2", "PodReady") == []
    assert len(lab.events_for("pod/backend-0", "PodReady")) == 1
    assert children_left() == []


@pytest.mark.parametrize(("given", "says"), [("20", "use units us, ms, s, m, h"), ("2h", "outside 1s to 1h")])
def test_a_bad_duration_is_a_one_line_error(given: str, says: str) -> None:
    from typer.testing import CliRunner

    from probesim.cli import app

    out = CliRunner().invoke(app, ["lab", "seed003-outlier", "--duration", given])
    assert out.exit_code == 2
    assert "--duration" in out.output and says in out.output
    assert children_left() == []


def test_traffic_the_lab_cannot_send_is_refused_not_flattened() -> None:
    sc = scenario(duration="5s", traffic=[{"path": "/", "stages": [{"duration": "2s", "target": 5}]}])
    with pytest.raises(InputError, match="constant-rate traffic only"):
        run_lab(sc)


# Seed 000 in seconds, for real: the lab and the simulation agree on every figure (event times
# within 1 s, ready replicas each second, restarts and failed requests).
SEED_000 = [
    # name, seconds, pod 1's events the lab must show (time s, reason)
    ("seed000-demo", 19, [(8, "PodReady"), (15, "PodNotReady"), (17, "PodReady")]),
    ("seed000-readiness-hang", 8, [(0, "PodReady"), (4, "PodNotReady"), (6, "PodReady")]),
    ("seed000-strict-liveness", 15, [(1, "Killing"), (2, "Killing"), (3, "Killing"), (14, "Killing")]),
    ("seed000-startup-protects", 12, [(10, "PodReady")]),
    ("seed000-slow-start-killed", 13, [(3, "Killing"), (7, "Killing"), (11, "Killing")]),
]


@pytest.mark.parametrize(("name", "seconds", "expected"), SEED_000, ids=[c[0] for c in SEED_000])
def test_seed_000_in_seconds_agrees_with_the_simulation(
    name: str, seconds: int, expected: list[tuple[int, str]]
) -> None:
    sc = builtin(name)
    lab = run_lab(sc, seconds)
    for at, reason in expected:
        times = [e.time_ms for e in lab.events_for("pod/app-1", reason)]
        log = [(e.time_ms, e.reason, e.message) for e in lab.events if e.object == "pod/app-1"]
        assert any(abs(t - at * 1000) < 500 for t in times), (reason, at, log)
    _, rows = beside(sc, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
    assert children_left() == []


def test_a_command_that_exits_at_once_is_a_clear_error() -> None:
    sc = scenario(duration="10s")
    with pytest.raises(InputError) as e:
        run_lab(sc, command=["sh", "-c", "echo cannot open config >&2; exit 3"])
    assert "--command " in str(e.value) and "exited with code 3" in str(e.value)
    assert "before listening on $PORT" in str(e.value)
    assert "cannot open config" in str(e.value)  # its own words, from its output
    assert children_left() == []


def test_a_command_that_never_listens_is_a_clear_error() -> None:
    sc = scenario(duration="20s")
    started = time.monotonic()
    with pytest.raises(InputError, match=r"did not listen on 127\.0\.0\.1:\$PORT \(\d+\) within 2s"):
        run_lab(sc, command=["sleep", "30"], listen_timeout_s=2)
    assert time.monotonic() - started < 10  # stopped at the budget, not at the end of the run
    assert children_left() == []


def test_a_command_that_listens_on_port_runs_and_is_probed() -> None:
    # The user's own server: python's http.server on $PORT answers the probes and the traffic.
    sc = scenario(
        probes={"readinessProbe": http(path="/", periodSeconds=1)},
        duration="6s",
        traffic=[{"path": "/", "rate": 5, "start": "3s"}],
    )
    cmd = [
        sys.executable,
        "-c",
        "import http.server as h, os; h.test(h.SimpleHTTPRequestHandler, port=int(os.environ['PORT']), bind='127.0.0.1')",
    ]
    lab = run_lab(sc, command=cmd)
    assert lab.events_for("pod/web-0", "PodReady")
    assert lab.route("/").ok == lab.route("/").offered == 15


@pytest.mark.parametrize(
    ("policy", "exit_code", "starts"),
    [("Never", 1, [0]), ("OnFailure", 0, [0]), ("OnFailure", 3, [0, 1, 12])],
)
def test_restart_policy_decides_whether_an_exited_container_comes_back(
    policy: str, exit_code: int, starts: list[int]
) -> None:
    sc = scenario(
        kind="Pod",
        pod_spec={"restartPolicy": policy},
        behavior={"episodes": [{"kind": "crash", "after": "1s", "exitCode": exit_code}]},
        duration="13s",
    )
    lab = run_lab(sc)
    measured = [e.time_ms for e in lab.events_for("pod/web", "Started")]
    assert len(measured) == len(starts)
    assert all(abs(m - s * 1000) < 1000 for m, s in zip(measured, starts, strict=True))
    assert lab.events_for("pod/web", "Exited")[0].message.endswith(f"exited with code {exit_code}")
    _, rows = beside(sc, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]


def test_a_pre_stop_sleep_delays_sigterm_in_the_lab_as_simulated() -> None:
    # killContainer (pkg/kubelet/kuberuntime/kuberuntime_container.go) runs the preStop hook,
    # then StopContainer with the grace minus the hook, at least 2 s: killed at 9 with the
    # probe's grace of 5 s, the 4 s sleep hook runs to 13, SIGTERM at 13 with 2 s left, SIGKILL
    # at 15 (the app takes 5 s to exit) and the restart 100 ms later (containerRestartDelay).
    # The app answers through the hook: liveness is on hold, but readiness still passes, and the
    # pod goes NotReady only once SIGTERM has it refuse connections.
    live = http(periodSeconds=1, failureThreshold=1, terminationGracePeriodSeconds=5)
    sc = scenario(
        probes={
            "livenessProbe": live,
            "readinessProbe": http("/ready", periodSeconds=1, failureThreshold=1),
            "lifecycle": {"preStop": {"sleep": {"seconds": 4}}},
        },
        behavior={
            "shutdown": "5s",
            "episodes": [{"kind": "errors", "after": "9s", "status": 500, "paths": ["/healthz"]}],
        },
        duration="17s",
    )
    sim = simulate(sc)
    simulated = [e.time_ms / 1000 for e in sim.events_for("pod/web-0", "Started")]
    assert simulated == [0, 15.1]
    # Liveness at 9; readiness from SIGTERM at 13 until the SIGKILL.
    assert [e.time_ms / 1000 for e in sim.events_for("pod/web-0", "Unhealthy")] == [9, 13, 14]
    lab = run_lab(sc)
    (kill,) = lab.events_for("pod/web-0", "Killing")
    assert abs(kill.time_ms / 1000 - 9) < 0.5
    starts = [e.time_ms / 1000 for e in lab.events_for("pod/web-0", "Started")]
    assert len(starts) == 2 and abs(starts[1] - 15.1) < 0.5, starts
    assert [e.time_ms / 1000 for e in sim.events_for("pod/web-0", "PodNotReady")] == [13]
    (unready,) = lab.events_for("pod/web-0", "PodNotReady")
    assert 13 <= unready.time_ms / 1000 < 14.1  # (the lab's next readiness run after SIGTERM)
    assert children_left() == []


def test_a_liveness_kill_under_restart_policy_never_is_final() -> None:
    sc = scenario(
        kind="Pod",
        pod_spec={"restartPolicy": "Never"},
        probes={"livenessProbe": http(periodSeconds=1, failureThreshold=1)},
        behavior={"episodes": [{"kind": "errors", "after": "2s", "status": 500}]},
        duration="6s",
    )
    lab = run_lab(sc)
    (kill,) = lab.events_for("pod/web", "Killing")
    assert kill.message == "Container app failed liveness probe"
    assert len(lab.events_for("pod/web", "Started")) == 1
    assert lab.workload("web").total_restarts == 0


def test_one_workload_of_several_runs_with_its_own_traffic() -> None:
    sc = builtin("seed003-mirror-post")  # backend (with the orders traffic) and backend-shadow
    shadow = run_lab(sc, 3, workload="backend-shadow")
    assert [w.name for w in shadow.workloads] == ["backend-shadow"]
    assert shadow.routes == []  # orders goes to backend's Service: not sent
    assert {e.object for e in shadow.events} == {"pod/backend-shadow-0"}
    with pytest.raises(
        InputError, match=r"'nope' is not a workload of the scenario \(it has: backend, backend-shadow\)"
    ):
        run_lab(sc, 3, workload="nope")
    assert children_left() == []


@pytest.mark.parametrize("sidecar", [True, False])
def test_kept_alive_clients_and_the_pods_sidecar_as_simulated(sidecar: bool) -> None:
    # Pod 1's app crashes at 4 s and listens again 2 s after its restart; pod 0 answers 500 on /
    # from 8 s to 10 s. k6-like clients keep their connections: with Istio's sidecar in the pod
    # (a real Envoy) they stay on pod 1 and get its 503s while it restarts, then share pod 0's
    # errors; without it they move to pod 0 for good and take all of its errors.
    sc = scenario(
        probes={"readinessProbe": http("/ready", periodSeconds=1, failureThreshold=1)},
        replicas=2,
        duration="12s",
        step="100ms",  # the restart takes 100 ms (spec.cluster.containerRestartDelay): finer steps
        overrides=[
            {
                "ordinals": [1],
                "containers": {"app": {"start": "2s", "episodes": [{"kind": "crash", "at": "4s"}]}},
            },
            {
                "ordinals": [0],
                "containers": {
                    "app": {"episodes": [{"kind": "errors", "at": "8s", "for": "2s", "paths": ["/"]}]}
                },
            },
        ],
        traffic=[{"rate": 20, "start": "3s", "stop": "11s", "keepAlive": True, "preAllocatedVUs": 2}],
        template_labels={"sidecar.istio.io/inject": "true" if sidecar else "false"},
    )
    sim = simulate(sc)
    # Envoy's 503s while pod 1 restarts (how many follows spec.cluster.containerRestartDelay)
    assert (sim.route("/").failed["restarting"] > 0) == sidecar
    assert sim.route("/").failed["error_status"] == (20 if sidecar else 40)
    lab = run_lab(sc, 12)
    rows = compare(sim, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
    assert lab.route("/").failed["error_status"] == pytest.approx(
        sim.route("/").failed["error_status"], abs=3
    )
    assert children_left() == []
