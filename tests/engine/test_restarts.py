"""Container restarts, CrashLoopBackOff and grace periods (reference/kubelet.md §2.4.32, §3)."""

from __future__ import annotations

import pytest

from tests.builders import INSTANT, http, run, series, times


def crash_after(age: str, code: int = 1) -> dict[str, object]:
    return {"episodes": [{"kind": "crash", "after": age, "exitCode": code}]}


def test_crash_loop_waits_0_10_20_40_80_160_300_300() -> None:
    # §3.3, §3.6: first restart immediate, then 10 s doubling to the 300 s cap, each wait
    # measured from the previous instance's exit (which comes 1 s after each start).
    r = run(spec=INSTANT, behavior=crash_after("1s"), duration="920s")
    starts = times(r, "Started")
    assert starts == [0, 1, 12, 33, 74, 155, 316, 617, 918]
    exits = [s + 1 for s in starts[:-1]]
    assert [b - a for a, b in zip(exits, starts[1:], strict=True)] == [0, 10, 20, 40, 80, 160, 300, 300]
    assert times(r, "BackOff") == [2, 13, 34, 75, 156, 317, 618, 919]
    assert r.workload("web").total_restarts == 8


def test_back_off_resets_after_ten_minutes_of_running() -> None:
    # §3.7: an exit more than 600 s after the entry's last update starts over at 10 s, and is
    # itself restarted at once.
    long_run = run(spec=INSTANT, behavior=crash_after("700s"), duration="2101s")
    assert times(long_run, "Started") == [0, 700, 1400, 2100]
    short_run = run(spec=INSTANT, behavior=crash_after("500s"), duration="1531s")
    assert times(short_run, "Started") == [0, 500, 1010, 1530]


def test_liveness_kill_after_a_long_run_restarts_at_once() -> None:
    # §3.8: the kill's same-sync restart checks the *previous* exit; a container that ran 31 s
    # is restarted at once while the entry doubles (10, 20, 40); at 155 it ran less than 40 s.
    r = run(
        spec=INSTANT,
        probes={"livenessProbe": http(periodSeconds=1, failureThreshold=1)},
        behavior={"episodes": [{"kind": "deadlock", "after": "30s"}]},
        duration="200s",
    )
    assert times(r, "Killing") == [31, 62, 93, 124, 155]
    assert times(r, "Started") == [0, 31, 62, 93, 124, 195]


@pytest.mark.parametrize(
    ("behavior", "probe_grace", "restart_at"),
    [
        ({"ignoresSigterm": True}, None, 36),  # pod terminationGracePeriodSeconds (30 s default)
        ({"ignoresSigterm": True}, 5, 11),  # probe-level grace wins
        ({"ignoresSigterm": True}, 1, 8),  # 2 s floor
        ({"shutdown": "3s"}, None, 9),  # the app exits 3 s after SIGTERM, within its grace
    ],
)
def test_kill_grace_period_precedence(
    behavior: dict[str, object], probe_grace: int | None, restart_at: int
) -> None:
    # §2.4.32: deadlocked at 5, killed at 6; the next container starts when the old one is gone.
    live = http(periodSeconds=1, failureThreshold=1)
    if probe_grace is not None:
        live["terminationGracePeriodSeconds"] = probe_grace
    r = run(
        spec=INSTANT,
        probes={"livenessProbe": live},
        behavior={**behavior, "episodes": [{"kind": "deadlock", "after": "5s"}]},
        duration=f"{restart_at + 1}s",
    )
    assert times(r, "Killing") == [6]
    assert times(r, "Started") == [0, restart_at]


def test_restart_policy_never_leaves_a_crashed_pod_down() -> None:
    # §3.1, §4.7: a bare Pod with restartPolicy Never is not restarted; NotReady at once, it
    # leaves the endpoints and the Service has none left.
    r = run(
        kind="Pod",
        pod_spec={"restartPolicy": "Never"},
        behavior=crash_after("5s"),
        traffic=[{"rate": 1}],
        duration="10s",
    )
    assert times(r, "Started") == [0]
    assert r.route("/").ok == 5
    assert r.route("/").failed["no_endpoint"] == 5
    assert times(r, "PodNotReady") == [5]


@pytest.mark.parametrize(("code", "restarts"), [(0, 0), (3, 1)])
def test_restart_policy_on_failure_restarts_only_non_zero_exits(code: int, restarts: int) -> None:
    r = run(
        kind="Pod", pod_spec={"restartPolicy": "OnFailure"}, behavior=crash_after("5s", code), duration="10s"
    )
    assert r.workload("web").total_restarts == restarts


def test_crash_makes_the_pod_not_ready_until_readiness_passes_again() -> None:
    # §2.2.13, §4.6: the app answers 5 s after each start; the crash at 25 makes the pod
    # NotReady; the new container starts 100 ms later (the restart delay) at readiness Failure;
    # the ticker, reset by the start's trigger (seen at the 26 s step), passes at 36.
    r = run(
        probes={"readinessProbe": http(periodSeconds=10)},
        behavior={"start": "5s", **crash_after("25s")},
        duration="40s",
    )
    assert times(r, "Started") == [0, 25.1]
    assert times(r, "PodReady") == [10, 36]
    assert times(r, "PodNotReady") == [25]


def test_without_readiness_probe_a_restarted_pod_is_ready_once_its_new_container_runs() -> None:
    # §4.6: no readiness probe → ready as soon as the new container runs (10.1 s), seen at the
    # next step.
    r = run(behavior=crash_after("10s"), duration="15s")
    assert times(r, "Started") == [0, 10.1]
    assert times(r, "PodNotReady") == [10]
    assert times(r, "PodReady") == [0, 11]
    # A restart within the same step (no restart delay) still goes through NotReady: the dead
    # container is not ready, the new one starts unready (issue: Ready used to stay True).
    instant = run(spec=INSTANT, behavior=crash_after("10s"), duration="15s")
    assert times(instant, "PodNotReady") == [10]
    assert times(instant, "PodReady") == [0, 10]


def test_the_restart_delay_adds_to_every_restart_and_to_back_off_waits() -> None:
    # spec.cluster.containerRestartDelay (100 ms): the kubelet's sync and the runtime creating
    # the container. The crash-loop ladder of the test above, each start 100 ms later than the
    # exit plus its back-off: exits 1 s after each start; waits 0.1, 10.1, 20.1, 40.1 s.
    r = run(behavior=crash_after("1s"), duration="330s")
    assert times(r, "Started") == [0, 1.1, 12.2, 33.3, 74.4, 155.5, 316.6]
    assert times(r, "BackOff") == [2.2, 13.3, 34.4, 75.5, 156.6, 317.7]
    half = run(spec={"step": "100ms", "cluster": {"containerRestartDelay": "500ms"}},
               behavior=crash_after("1s"), duration="3s")  # fmt: skip
    assert times(half, "Started") == [0, 1.5]


@pytest.mark.parametrize(("spec", "ready_again", "available_again"), [({}, 91, 122), (INSTANT, 90, 121)])
def test_a_restart_resets_min_ready_seconds_availability(
    spec: dict[str, object], ready_again: int, available_again: int
) -> None:
    # minReadySeconds 30, readiness every second, a crash at 90: the pod is NotReady at 90, Ready
    # again when the new container's first probe passes, with a new transition time, so it is
    # available once that + 30 s is strictly before now (IsPodAvailable, pkg/api/v1/pod/util.go;
    # it used to stay available throughout, and until issue 22 item 1 came a second early).
    r = run(
        spec=spec,
        probes={"readinessProbe": http(periodSeconds=1)},
        workload_spec={"minReadySeconds": 30},
        behavior=crash_after("90s"),
        duration="140s",
    )
    assert times(r, "PodNotReady") == [90]
    assert times(r, "PodReady") == [0, ready_again]
    available = series(r, "workload.web.available")
    assert [t for t in range(1, len(available)) if available[t] != available[t - 1]] == [
        31,
        90,
        available_again,
    ]


def test_seed000_slow_start_killed_kills_when_the_lab_does() -> None:
    # The lab measured kills at 3, 7, 11 and 25 s: each restart takes time, so the new
    # container's 2 s initial delay passes one tick later than with an instant restart.
    from probesim.engine import simulate
    from tests.builders import builtin

    r = simulate(builtin("seed000-slow-start-killed"))
    assert times(r, "Killing", "pod/app-1")[:4] == [3, 7, 11, 25]


def test_a_deadlock_at_a_scenario_time_is_cured_by_the_restart() -> None:
    # docs/scenarios.md: a deadlock `at` a scenario time happens once and "hangs until
    # restarted" — the process running then hangs; the one the kubelet starts for it is a fresh
    # process that answers. Deadlocked at 120 s, liveness fails at 121 s (period 1, threshold 1)
    # and kills it; the restart at 121 s answers, so there is no second kill, and the pod is
    # Ready again at the first readiness success after the restart.
    r = run(
        spec=INSTANT,
        replicas=3,
        probes={
            "livenessProbe": http(periodSeconds=1, failureThreshold=1),
            "readinessProbe": http(periodSeconds=1, failureThreshold=1),
        },
        overrides=[
            {"ordinals": [0], "containers": {"app": {"episodes": [{"kind": "deadlock", "at": "2m"}]}}}
        ],
        duration="300s",
    )
    assert times(r, "Killing") == [121]
    assert times(r, "Started", "pod/web-0") == [0, 121]
    assert times(r, "PodNotReady", "pod/web-0") == [121]
    assert times(r, "PodReady", "pod/web-0")[-1] == 122
    assert r.workload("web").total_restarts == 1
