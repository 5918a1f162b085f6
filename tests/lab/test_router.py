"""Envoy's router in the lab and in the simulation (issue 43, items 1 and 2), beside a CPU-bound
process as a busy machine would be: round robin's retries through a real Envoy start nearly
every request on the failing pod, and a retried request's latency holds its failed try and
back-off; fault delays hold requests past a client's timeout and outside the route's timeout.
tests/mesh/test_router_fidelity.py holds the simulation's exact figures."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from probesim.engine import simulate
from probesim.lab.orchestrator import run_lab
from tests.lab.procs import children_left
from tests.mesh.test_router_fidelity import delays_scenario, retries_scenario


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    """A CPU-bound process for the test's length (one core of the machine's taken)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_round_robin_retries_through_a_real_envoy_match_the_simulation(busy: subprocess.Popen[bytes]) -> None:
    # 4 requests a second from 5 s to 35 s (120), 250 ms apart: each retry (10 ms try + up to
    # 24 ms back-off) comes before the next request. Envoy seeds its round robin index at
    # random, so 119 or 120 are retried (every request after the first starts on the failing
    # pod: chooseHost → unweightedHostPick, rr_index++ on the retry's pick too).
    sc = retries_scenario(seed=1, rate=4, duration="40s", window={"start": "5s", "stop": "35s"})
    sim = simulate(sc).route("/")
    lab = run_lab(sc).route("/")
    assert busy.poll() is None  # the busy loop ran throughout
    assert sim.offered == lab.offered == 120
    assert sim.failed_total == lab.failed_total == 0
    assert sim.envoy["upstream_rq_retry"] in (119, 120)
    assert lab.envoy["upstream_rq_retry"] in (119, 120)
    # Failed try (10 ms) + back-off (0-24 ms) + the good pod's answer (10 ms): the simulation
    # ~32 ms; the lab adds its processes' own time (Envoy, the app's event loop, the busy
    # core), a few ms. Both in the 25-45 ms band, within 10 ms of each other.
    assert 25 <= sim.latency_ms["p50"] <= 45
    assert 25 <= lab.latency_ms["p50"] <= 45
    assert abs(lab.latency_ms["p50"] - sim.latency_ms["p50"]) <= 10
    busy.kill()  # the test's own child; then none of the lab's is left
    busy.wait(timeout=10)
    assert children_left() == []


def test_fault_delays_through_a_real_envoy_match_the_simulation(busy: subprocess.Popen[bytes]) -> None:
    # /half: 2 s delays on 50 % behind a 1.5 s client timeout, 100 requests: the delayed ones
    # time out (Envoy draws each, the simulation a binomial per step: each ~50 ± 15 at 3 sd).
    # /slow: 2 s delays on every request under a 1 s route timeout: answered after 2 s.
    sc = delays_scenario()
    sim = simulate(sc)
    lab = run_lab(sc)
    assert busy.poll() is None
    s_half, l_half = sim.route("/half"), lab.route("/half")
    assert s_half.offered == l_half.offered == 100
    assert s_half.failed_total == s_half.failed["timeout"] == 50  # seed 0
    assert l_half.failed_total == l_half.failed["timeout"]
    assert 35 <= l_half.failed["timeout"] <= 65
    assert abs(l_half.failed["timeout"] - s_half.failed["timeout"]) <= 15
    s_slow, l_slow = sim.route("/slow"), lab.route("/slow")
    assert s_slow.offered == l_slow.offered == 40
    assert s_slow.failed_total == l_slow.failed_total == 0  # the 1 s route timeout never fires
    assert s_slow.latency_ms["p50"] >= 2000 and l_slow.latency_ms["p50"] >= 2000
    # The simulation's latency grid is 6 % apart; the lab's Envoy timer and app add ms.
    assert abs(l_slow.latency_ms["p50"] - s_slow.latency_ms["p50"]) <= 0.06 * 2010 + 20
    busy.kill()
    busy.wait(timeout=10)
    assert children_left() == []
