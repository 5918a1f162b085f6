"""The seed-000 chapter's tests, with exact counts derived by hand from its rules."""

from __future__ import annotations

from probesim.logical import Behavior, Config, Probe, Sim
from probesim.logical.sim import _Gate


def rd() -> Probe:
    return Probe(period=1, failure_threshold=1, success_threshold=1)


def lv(n: int) -> Probe:
    return Probe(period=1, failure_threshold=n, success_threshold=1)


def warm_and_cold() -> tuple[Behavior, Behavior]:
    return Behavior(), Behavior(startup_ticks=3)


def test_no_readiness_drops_during_startup() -> None:
    s = Sim(Config(), *warm_and_cold())
    s.run(6, 2)
    # Round robin sends one request per tick to pod-2; it is unhealthy at ages 0, 1, 2.
    assert (s.dropped, s.served) == (3, 9)


def test_readiness_gates_traffic() -> None:
    s = Sim(Config(readiness=rd()), *warm_and_cold())
    s.run(6, 2)
    assert s.safe()
    assert s.served == 12
    assert s.pods[1].ready
    assert s.endpoints() == ["pod-1", "pod-2"]


def test_readiness_does_not_restart() -> None:
    s = Sim(Config(readiness=rd()), Behavior(), Behavior(hang_at=3, hang_for=3))
    s.run(12, 2)
    assert s.restarts() == 0
    assert s.safe()
    assert s.pods[1].ready
    # pod-2 is checked healthy at 0..2, so it serves at t=1,2 (ready from t=0, routed after check).
    assert "t=3 pod-2 failed readiness; removed from endpoints (no restart)" in s.log
    assert "t=6 pod-2 passed readiness; added to endpoints" in s.log


def test_liveness_restarts_every_three_ticks() -> None:
    s = Sim(Config(liveness=lv(1)), Behavior(hang_at=3, hang_for=3))
    s.run(12, 0)
    # Killed when it first hangs at age 3; after a restart the next check sees age 1, so
    # the pod reaches age 3 again three ticks later: t=3, 6, 9.
    assert s.restarts() == 3
    assert [line for line in s.log if "failed liveness" in line] == [
        "t=3 pod-1 failed liveness; restarting (restart 1)",
        "t=6 pod-1 failed liveness; restarting (restart 2)",
        "t=9 pod-1 failed liveness; restarting (restart 3)",
    ]


def test_aggressive_liveness_restart_loop() -> None:
    b = Behavior(startup_ticks=4, hang_at=6, hang_for=3)
    tight = Sim(Config(readiness=rd(), liveness=lv(1)), b)
    loose = Sim(Config(readiness=rd(), liveness=lv(5)), b)
    tight.run(24, 0)
    loose.run(24, 0)
    # The tight pod never gets past age 1: killed on every tick.
    assert tight.restarts() == 24
    # The loose one sees 4 startup failures, then a streak of 3 hang failures: never 5.
    assert loose.restarts() == 0
    assert loose.pods[0].ready


def test_slow_startup_killed_by_liveness() -> None:
    p = Probe(initial_delay=2, period=1, failure_threshold=2, success_threshold=1)
    s = Sim(Config(liveness=p), Behavior(startup_ticks=10))
    s.run(30, 0)
    # Fails at ages 2 and 3, killed at age 3; the next check sees age 1: a kill every 3 ticks.
    assert s.restarts() == 9
    assert not s.pods[0].healthy


def test_startup_probe_protects_slow_start() -> None:
    cfg = Config(
        startup=Probe(period=1, failure_threshold=30, success_threshold=1),
        liveness=Probe(period=1, failure_threshold=2, success_threshold=1),
        readiness=rd(),
    )
    s = Sim(cfg, Behavior(), Behavior(startup_ticks=10))
    s.run(30, 2)
    assert s.restarts() == 0
    assert s.pods[1].ready
    assert s.safe()
    assert s.served == 60
    assert "t=10 pod-2 passed its startup probe; readiness and liveness start" in s.log


def test_threshold_absorbs_single_failure() -> None:
    g = _Gate(passing=True)
    p = Probe(period=1, failure_threshold=3, success_threshold=1)
    assert not g.record(False, p)
    assert g.passing
    assert not g.record(True, p)
    assert not g.record(False, p)
    assert not g.record(False, p)
    assert g.record(False, p)
    assert not g.passing


def test_period_and_initial_delay() -> None:
    p = Probe(initial_delay=3, period=2)
    assert [a for a in range(10) if p.due(a)] == [3, 5, 7, 9]
    assert not Probe().enabled()
    assert not Probe().due(0)


def test_all_unready_drops_all() -> None:
    s = Sim(Config(readiness=rd()), Behavior(startup_ticks=5), Behavior(startup_ticks=5))
    s.run(3, 2)
    assert s.dropped == 6
    assert s.endpoints() == []


def test_restart_resets_state() -> None:
    s = Sim(Config(readiness=rd(), liveness=lv(1)), Behavior(startup_ticks=2, hang_at=5))
    s.run(10, 0)
    # Unhealthy at ages 0 and 1, and a restart always lands on age 1 at the next check.
    assert s.restarts() == 10
    assert s.pods[0].age == 1
    assert not s.pods[0].ready


def test_restart_routes_at_age_zero_in_the_same_tick() -> None:
    # A pod killed in a check is routed at age 0 in that tick, as in the seed: a pod that is
    # healthy from age 0 still serves the request after its restart.
    s = Sim(Config(liveness=lv(1)), Behavior(hang_at=2, hang_for=1))
    s.tick(0)
    s.tick(0)
    s.tick(1)  # age 2: hangs, killed, then routed at age 0 (healthy)
    assert s.restarts() == 1
    assert (s.served, s.dropped) == (1, 0)
