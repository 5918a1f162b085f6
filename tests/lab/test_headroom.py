"""The lab's own headroom (lab/headroom.py): a run this machine cannot hold is refused up front in
one line naming the limit; a refusal the scenario did not decide is the lab's, never the app's
"restarting"; what the lab measured of itself (descriptors, CPU, its lag, accept-queue
overflows) is beside the result, in text and JSON; ``--scale`` keeps failed shares comparable."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from probesim.engine import simulate
from probesim.lab.envoy import ISTIO_CIRCUIT_BREAKERS, inbound_bootstrap
from probesim.lab.headroom import Headroom, judge, mark_unfaithful
from probesim.lab.headroom_demand import Demand, demand, raise_nofile, scaled
from probesim.lab.headroom_monitor import LAG_LIMIT_S, Monitor, ProcFigures
from probesim.lab.load import KeepAlive, cause_of, constant_rate
from probesim.lab.orchestrator import run_lab, workload_pods
from probesim.lab.pods import free_port, up_and_listening
from probesim.lab.port import BACKLOG
from probesim.manifests.scenario import load_scenario
from probesim.mesh.envoy import MAX32
from probesim.scenarios import builtins

ROOT = Path(__file__).parents[2]
PROBESIM = Path(sys.executable).parent / "probesim"

# Seed 004's testbed in small: one pod, half of the httpbin calls delayed 100 s.
HELD = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: held}
manifests: [MANIFESTS]
spec:
  duration: 30s
  dependencies:
    httpbin:
      latency: 10ms
      faults: [{delay: 100s, percent: 50}]
  behavior:
    patient:
      containers:
        patient:
          routes:
            /check-dep: {calls: [{dependency: httpbin}]}
  traffic:
    - {name: check_dep, path: /check-dep, rate: 20, start: 5s, stop: 25s, keepAlive: true, maxVUs: 1000}
"""


def _held(tmp_path: Path, text: str = HELD) -> Path:
    manifests = ROOT / "src/probesim/scenarios/manifests/patient-no-probes.yaml"
    path = tmp_path / "held.yaml"
    path.write_text(text.replace("MANIFESTS", str(manifests)).replace("replicas: 2", "replicas: 1"))
    return path


def test_a_run_past_a_lowered_descriptor_limit_is_refused_up_front_in_one_line(tmp_path: Path) -> None:
    # 20/s for 20 s, half held 60 s by the client (its timeout) and 100 s by the app's call: the
    # lab's process holds 201 clients (200 held, 1 idle) and 200 calls to httpbin (its server
    # side) at the peak, beside 150 files of its own; with 512 descriptors it plans on 80 % of
    # them (409): (409.6 - 150) / 401 = 0.65 of the load fits.
    def lowered() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))

    began = time.monotonic()
    r = subprocess.run(
        [str(PROBESIM), "lab", str(_held(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lowered,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert r.returncode == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines == [
        "error: lab: this run holds up to ~401 connections open at once in one process (lab: 10/s × 100 s "
        "delayed calls to httpbin, 201 check_dep clients); this machine allows 512 file descriptors per "
        "process (ulimit -n) — run with --scale 0.6 or raise the limit"
    ]
    assert time.monotonic() - began < 30  # refused before anything started


def test_the_estimate_is_the_runs_peak_of_held_clients_and_calls(tmp_path: Path) -> None:
    sc = load_scenario(str(_held(tmp_path)))
    d = demand(sc, list(sc.workloads), list(sc.spec.traffic), 30.0)
    # 10 delayed requests a second from 5 s to 25 s: 200 held by the clients (60 s timeout) and
    # 200 calls at httpbin (100 s delays, the run ends first); the lab's process also holds the
    # one idle client k6 starts with (preAllocatedVUs).
    assert d.per_process == {
        "lab": 150 + 201 + 200,
        **{f"app patient-{i}": 150 + 100 + 100 for i in (0, 1)},  # half each, through its sidecar
        **{f"sidecar patient-{i}": 150 + 2 * 100 for i in (0, 1)},  # both sides of each
    }
    assert d.per_address == {"dependency httpbin": 200}
    # k6's VUs run out: at most maxVUs clients, and the delayed calls' rate falls with them.
    few = sc.model_copy(update={"spec": sc.spec.model_copy(update={"traffic": (
        sc.spec.traffic[0].model_copy(update={"max_vus": 50}),
    )})})  # fmt: skip
    d = demand(few, list(few.workloads), list(few.spec.traffic), 30.0)
    assert d.per_address == {"dependency httpbin": 50}
    assert d.per_process["lab"] == 150 + 50 + 50


def test_the_article_run_is_refused_at_this_machines_limit_with_the_scale_that_fits() -> None:
    sc = next(load_scenario(str(b.path)) for b in builtins() if b.name == "patient-delays-liveness")
    from probesim.errors import InputError
    from probesim.lab.headroom_demand import check_headroom

    with pytest.raises(InputError) as e:
        check_headroom(sc, list(sc.workloads), list(sc.spec.traffic), 110.0, 20_000, cores=64)
    assert str(e.value).startswith(
        "lab: this run holds up to ~30,050 connections open at once in one process"
    )
    assert str(e.value).endswith(
        "allows 20,000 file descriptors per process (ulimit -n) — run with --scale 0.5 or raise the limit"
    )
    half = scaled(sc, 0.5)
    check_headroom(half, list(half.workloads), list(half.spec.traffic), 110.0, 20_000, cores=64)  # fits
    # On 2 cores its 1,800 requests/s need ~4 (1.25 ms scripted + ~1 ms the lab's own, each), of
    # which the lab plans on 1.5: (0.5 × 1.5 / 2.0) = 0.37 of the load fits both limits.
    with pytest.raises(InputError) as e:
        check_headroom(half, list(half.workloads), list(half.spec.traffic), 110.0, 20_000, cores=2, scale=0.5)
    assert str(e.value) == (
        "lab: this run keeps ~2.0 cores busy (900 requests/s × 1.2 ms of the app's scripted CPU and ~1 ms of "
        "the lab's own each); this machine has 2 cores and the lab plans on 75% of them — run with --scale 0.3 "
        "or on a bigger machine"
    )
    fifth = scaled(sc, 0.2)
    check_headroom(fifth, list(fifth.workloads), list(fifth.spec.traffic), 110.0, 20_000, cores=2, scale=0.2)


@pytest.mark.parametrize("keep", [None, KeepAlive()])
def test_a_refusal_while_the_scenario_has_the_app_listening_is_the_labs(keep: KeepAlive | None) -> None:
    # Nothing listens on the port. Where the scenario has the app up and listening, the refusal
    # is the lab's own (counted apart, never as the app's "restarting"); where it does not (a
    # pod starting or restarting), it is the app's, as simulated.
    url = f"http://127.0.0.1:{free_port()}/"
    for up, cause in ((True, "lab"), (False, "restarting")):
        out = asyncio.run(
            constant_rate([url], 20, 0.5, timeout_s=2, keep_alive=keep, listening=lambda u, up=up: up)
        )
        assert (out.sent, dict(out.failed)) == (10, {cause: 10})


def test_envoys_circuit_breaker_overflow_is_the_labs_and_a_connect_failure_while_listening() -> None:
    # Envoy's router answers a pending-request overflow with the reset reason "overflow"
    # (source/common/router/router.cc, Filter::onUpstreamReset → StreamResetReason::Overflow):
    # a limit of Envoy's, never the app's. A connect failure is the app's while it restarts.
    overflow = b"upstream connect error or disconnect/reset before headers. reset reason: overflow"
    failure = b"upstream connect error or disconnect/reset before headers. reset reason: connection failure"
    assert cause_of(503, overflow) == "lab"
    assert cause_of(503, failure) == "restarting"
    assert cause_of(503, failure, listening=True) == "lab"


@pytest.fixture
def holding_server() -> Iterator[int]:
    """A server on a thread of its own (this process's descriptors) that answers after 3 s."""
    loop = asyncio.new_event_loop()
    port = free_port()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                await asyncio.sleep(3)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def serve() -> asyncio.Server:
        return await asyncio.start_server(handle, "127.0.0.1", port, backlog=BACKLOG)

    server = loop.run_until_complete(serve())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def test_a_load_generator_out_of_descriptors_counts_its_refusals_as_the_labs(holding_server: int) -> None:
    # A load generator allowed 64 descriptors, its clients held 3 s each at 100 requests/s:
    # past ~55 connections the machine (EMFILE), not the app, refuses the rest.
    script = textwrap.dedent(f"""
        import asyncio, json, resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        from probesim.lab.load import KeepAlive, constant_rate
        out = asyncio.run(constant_rate(["http://127.0.0.1:{holding_server}/"], 100, 1.0, timeout_s=5,
                                        keep_alive=KeepAlive(1, 1000)))
        print(json.dumps({{"failed": dict(out.failed), "ok": out.ok}}))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    failed = doc["failed"]
    assert set(failed) == {"lab"}, failed  # none of it "restarting"
    assert 30 <= failed["lab"] <= 70 and failed["lab"] + doc["ok"] == 100


def test_the_scenarios_listening_window_decides_whose_a_refusal_is(tmp_path: Path) -> None:
    sc = load_scenario(str(ROOT / "src/probesim/scenarios/patient-delays-liveness.yaml"))
    pod = workload_pods(sc, sc.workloads[0], None)[0]  # starts listening 5 s after its start
    assert not up_and_listening(pod, 0.0, 100.0)  # no process: not running

    class Proc:
        returncode = None

    pod.run.proc = Proc()  # type: ignore[assignment]
    pod.run.started_at = 10.0
    assert not up_and_listening(pod, 0.0, 14.0)  # starting
    assert not up_and_listening(pod, 0.0, 15.3)  # within 0.5 s of its listening
    assert up_and_listening(pod, 0.0, 15.6)
    pod.run.killing = True
    assert not up_and_listening(pod, 0.0, 20.0)  # being stopped: the app's refusal


def test_istio_sidecars_inbound_cluster_has_istios_circuit_breakers() -> None:
    # pilot/pkg/networking/core/cluster_traffic_policy.go, applyTrafficPolicy: "Connection pool
    # settings are applicable for both inbound and outbound clusters" — applyConnectionPool
    # starts from getDefaultCircuitBreakerThresholds (each threshold math.MaxUint32). Envoy's own
    # defaults (1,024) refused seed 004's held requests with 503 "reset reason: overflow".
    cluster = inbound_bootstrap(free_port(), free_port())["static_resources"]["clusters"][0]
    assert cluster["circuit_breakers"] == ISTIO_CIRCUIT_BREAKERS
    assert ISTIO_CIRCUIT_BREAKERS["thresholds"][0] == {
        "max_connections": MAX32,
        "max_pending_requests": MAX32,
        "max_requests": MAX32,
        "max_retries": MAX32,
    }


def test_the_labs_listening_sockets_take_the_longest_accept_queue_the_kernel_allows() -> None:
    # aiohttp's SockSite listens again with backlog 128 unless told: seed 004's app ports
    # overflowed at 128. ss shows a listening socket's backlog as its Send-Q.
    from probesim.lab.dependency import DependencyServer
    from probesim.model.scenario import Dependency

    ss = subprocess.run(["ss", "-V"], capture_output=True).returncode == 0
    if not ss:
        pytest.skip("ss (iproute2) is not installed")

    async def main() -> str:
        server = DependencyServer("httpbin", Dependency(), 0)
        await server.start()
        try:
            port = server.port.number
            return subprocess.run(["ss", "-lntH", f"sport = :{port}"], capture_output=True, text=True).stdout
        finally:
            await server.stop()

    line = asyncio.run(main()).split()
    assert int(line[2]) == BACKLOG == int(Path("/proc/sys/net/core/somaxconn").read_text())


def test_the_descriptor_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        assert raise_nofile() == (hard if hard != resource.RLIM_INFINITY else raise_nofile())
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == raise_nofile()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _headroom(**kw: object) -> Headroom:
    m = Monitor(dict)
    for k, v in kw.items():
        setattr(m, k, v)
    m.t1 = m.t0 + 10
    return judge(m, 1.0, 1024, Demand(), {"check": 0}, {"check": 0.01})


def test_a_starved_machine_and_a_late_load_generator_are_said_not_faithful() -> None:
    assert _headroom().faithful
    h = _headroom(starved_periods=3, lag_max_s=1.2, lags=[0.0, 1.2])
    assert not h.faithful and h.all_unfaithful
    assert h.notes[0].startswith("the machine was short of CPU")
    m = Monitor(dict)
    m.t1 = m.t0 + 10
    late = judge(m, 1.0, 1024, Demand(), {"check": 0}, {"check": LAG_LIMIT_S + 0.5})
    assert "the load generator up to check 0.75 s behind" in late.notes[0]
    rows = [{"object": "route/check", "agree": True}, {"object": "pod/p-0", "agree": True}]
    mark_unfaithful(rows, late)
    assert rows == [
        {"object": "route/check", "agree": False, "faithful": False},
        {"object": "pod/p-0", "agree": False, "faithful": False},
    ]
    refused = judge(m, 1.0, 1024, Demand(), {"check": 7, "other": 0}, {})
    rows = [{"object": "route/check", "agree": True}, {"object": "route/other", "agree": True}]
    mark_unfaithful(rows, refused)
    assert [r["agree"] for r in rows] == [False, True]
    assert refused.notes == [
        "route check: 7 requests were refused by the lab itself while the scenario had the app up and "
        "listening (left out of its failed requests)"
    ]


def test_processes_that_waited_for_a_cpu_are_said_not_faithful() -> None:
    # The kernel's run delay (/proc/PID/schedstat): an app runnable but not running waited 3 s
    # beside its 5 s of CPU (38 % of the time it wanted one) — its scripted CPU per request took
    # that much longer. 0.5 s beside 5 s is within what the lab's own processes cost each other.
    m = Monitor(dict)
    m.t1 = m.t0 + 10
    m.procs = {
        1: ProcFigures("app web-0", cpu_s=5.0, waited_s=3.0),
        2: ProcFigures("lab", cpu_s=5.0, waited_s=0.5),
    }
    h = judge(m, 1.0, 1024, Demand(), {}, {})
    assert not h.faithful and h.all_unfaithful
    assert h.notes[0].startswith("processes waited for a CPU: app web-0 3.0 s beside 5.0 s of CPU")
    assert [p["waitedForCpuSeconds"] for p in h.to_json()["processes"]] == [3.0, 0.5]
    m.procs[1].waited_s = 0.9  # under a second: not counted
    assert judge(m, 1.0, 1024, Demand(), {}, {}).faithful


def test_scale_divides_rates_and_pools_and_keeps_the_failed_shares(tmp_path: Path) -> None:
    sc = next(load_scenario(str(b.path)) for b in builtins() if b.name == "patient-delays-no-probes")
    tenth = scaled(sc, 0.1)
    dep, nodep = tenth.spec.traffic
    assert (dep.rate, dep.max_vus, dep.pre_allocated_vus) == (pytest.approx(90.0), 1500, 5)
    assert (nodep.rate, nodep.max_vus, nodep.pre_allocated_vus) == (pytest.approx(90.0), 400, 5)
    assert (dep.start, dep.stop, dep.graceful_stop) == (30_000, 90_000, 10_000)  # times unchanged
    for name in ("patient-delays-no-probes", "patient-delays-liveness"):
        full = next(load_scenario(str(b.path)) for b in builtins() if b.name == name)
        a, b = simulate(full), simulate(scaled(full, 0.2))
        for route in ("check_dep", "check_nodep"):
            x, y = a.route(route).error_rate, b.route(route).error_rate
            assert abs(x - y) <= 0.05, (name, route, x, y)


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    """A process that keeps one core busy beside the test, as other work on the machine does."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def test_headroom_figures_are_beside_the_result_in_text_and_json(
    tmp_path: Path, busy: subprocess.Popen[bytes]
) -> None:
    text = HELD.replace("duration: 30s", "duration: 8s").replace(
        "start: 5s, stop: 25s", "start: 2s, stop: 6s"
    )
    text = text.replace("maxVUs: 1000}", "maxVUs: 1000, gracefulStop: 1s}")  # the held ones end at 7 s
    path = _held(tmp_path, text)
    began = time.monotonic()
    got: list[Headroom] = []
    result = run_lab(load_scenario(str(path)), headroom=got.append)
    wall = time.monotonic() - began
    (h,) = got
    names = {p.name for p in h.processes}
    assert {"lab (load generator, dependencies, probes)", "app patient-0", "sidecar patient-0"} <= names
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    for p in h.processes:
        assert p.fds_limit == h.nofile == soft
        assert 3 <= p.fds_peak < p.fds_limit
        assert 0 < p.cpu_s <= wall * h.cores
    lab = next(p for p in h.processes if p.name.startswith("lab"))
    assert lab.fds_peak >= 20  # 10 held requests a second for 4 s: their clients and calls
    assert 6 <= h.wall_s <= wall
    assert 0 <= h.machine_busy <= 1 and h.listen_overflows >= 0 and h.lag_max_s >= 0
    assert h.lab_refused == {"check_dep": 0}
    assert 0 <= h.behind_s["check_dep"] < 4
    assert result.route("check_dep").failed_total == 0
    assert h.planned.per_process["lab"] == 150 + 41 + 40  # 40 held (10/s for 4 s), 1 idle client
    lines = h.lines()
    assert lines[0].startswith("Lab headroom (scale 1; ")
    assert any(line.startswith("  app patient-0: ") and " descriptors at most " in line for line in lines)

    # The command's text and JSON carry them, at the scale it was run at.
    run = [str(PROBESIM), "lab", str(path), "--scale", "0.5"]
    env = {**os.environ, "COLUMNS": "200"}
    doc = json.loads(
        subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=120, env=env).stdout
    )
    room = doc["headroom"]
    assert room["scale"] == 0.5 and room["scaled"].startswith("traffic rates")
    assert room["fileDescriptorLimit"] == soft and room["labRefused"] == {"check_dep": 0}
    assert {p["name"] for p in room["processes"]} >= names
    assert all(0 < p["fdsPeak"] < p["fdsLimit"] for p in room["processes"])
    assert 6 <= room["wallSeconds"] <= 30 and 0 <= room["machineBusy"] <= 1
    assert {"listenOverflows", "listenDrops", "loopLagMaxSeconds", "gcSeconds", "loadBehindSeconds",
            "faithful", "notes", "starvedSeconds"} <= set(room)  # fmt: skip
    assert doc["summary"]["routes"][0]["offered"] == 40  # 10 requests/s (0.5 × 20) for 4 s
    out = subprocess.run(run, capture_output=True, text=True, timeout=120, env=env).stdout
    assert "Lab headroom (scale 0.5: traffic rates" in out
    assert "refused by the lab itself, not by the scenario: none" in out
