"""Probe worker timing and thresholds (reference/kubelet.md §2), with exact event times."""

from __future__ import annotations

from tests.builders import INSTANT, http, run, series, times

DEADLOCK = {"episodes": [{"kind": "deadlock", "after": "15s"}]}


def test_ticks_anchored_at_admission_and_consecutive_failures() -> None:
    # §2.1.3-4, §2.2.18: the first liveness run is one period after admission (the run at
    # admission finds no container); a hung app fails each run at its 1 s timeout; three in a
    # row (at 21, 31, 41) kill it.
    r = run(spec=INSTANT, probes={"livenessProbe": http()}, behavior=DEADLOCK, duration="90s")
    assert times(r, "Unhealthy", contains="Liveness") == [21, 31, 41, 61, 71, 81]
    assert times(r, "Killing") == [41, 81]
    assert times(r, "Started") == [0, 41, 81]
    assert r.workload("web").total_restarts == 2


def test_probe_longer_than_period_runs_once_more_when_it_returns() -> None:
    # §2.1.7: period 3, timeout 5. The run at 3 returns at 8; the tick at 6 waited and runs at
    # 8; the ticks at 9 and 12 collapse into one run at 13.
    r = run(
        probes={"livenessProbe": http(periodSeconds=3, timeoutSeconds=5)},
        behavior={"episodes": [{"kind": "deadlock", "after": "2s"}]},
        duration="20s",
    )
    assert times(r, "Unhealthy") == [8, 13, 18]
    assert times(r, "Killing") == [18]


def test_initial_delay_counts_from_the_current_container() -> None:
    # §2.2.15 and §3.8: every probe fails; the first comes at age 5 of each container. The first
    # two liveness restarts are immediate (no exited instance, then a new back-off entry); the
    # third is refused because the previous container exited only 5 s before.
    r = run(
        spec=INSTANT,
        probes={"livenessProbe": http(initialDelaySeconds=5, periodSeconds=1, failureThreshold=1)},
        behavior={"episodes": [{"kind": "errors", "after": "0s", "status": 500}]},
        duration="52s",
    )
    assert times(r, "Killing") == [5, 10, 15, 30]
    assert times(r, "Started") == [0, 5, 10, 25, 50]
    assert times(r, "BackOff") == [15, 30]
    assert r.events_for("pod/web-0", "Unhealthy")[0].message == (
        "Liveness probe failed: HTTP probe failed with statuscode: 500"
    )


def test_initial_delay_shorter_than_period_waits_for_the_first_tick() -> None:
    # §2.3.21: delay 5, period 10: the first run is the first tick past the delay, at 10.
    r = run(
        probes={"livenessProbe": http(initialDelaySeconds=5, periodSeconds=10, failureThreshold=1)},
        behavior={"episodes": [{"kind": "errors", "after": "0s"}]},
        duration="12s",
    )
    assert times(r, "Killing") == [10]


def test_readiness_is_probed_when_the_container_starts() -> None:
    # §2.1.5-6: the start's pod sync triggers readiness at once, not after a period.
    r = run(probes={"readinessProbe": http(periodSeconds=10)}, duration="5s")
    assert times(r, "PodReady") == [0]


def test_readiness_runs_at_once_after_startup_succeeds() -> None:
    # §2.1.6 and §2.2.16: the startup probe passes at 5 (app answers from 5 s); readiness,
    # silent until then, is triggered by that sync instead of waiting for its tick at 10.
    r = run(
        probes={
            "startupProbe": http(periodSeconds=1, failureThreshold=30),
            "readinessProbe": http(periodSeconds=10),
            "livenessProbe": http(periodSeconds=1, failureThreshold=1),
        },
        behavior={"start": "5s"},
        duration="20s",
    )
    assert times(r, "PodReady") == [5]
    assert times(r, "Unhealthy", contains="Startup") == [1, 2, 3, 4]
    assert times(r, "Unhealthy", contains="Liveness") == []  # silent until startup passed
    assert times(r, "Killing") == []


def test_startup_failure_kills_the_container() -> None:
    # §2.2.19, §2.4.31: startup fails 3 times (1, 2, 3) → killed; the worker holds, then counts
    # from zero for the next container.
    r = run(
        spec=INSTANT,
        probes={"startupProbe": http(periodSeconds=1, failureThreshold=3)},
        behavior={"start": "10s"},
        duration="22s",
    )
    assert times(r, "Killing") == [3, 6, 9]
    assert (
        r.events_for("pod/web-0", "Killing")[0].message
        == "Container app failed startup probe, will be restarted"
    )
    assert times(r, "Started") == [0, 3, 6, 19]


def test_success_threshold_needs_consecutive_successes() -> None:
    # §2.2.18: the run at start is success 1, ticks at 1 and 2 make 3.
    r = run(probes={"readinessProbe": http(periodSeconds=1, successThreshold=3)}, duration="5s")
    assert times(r, "PodReady") == [2]


def test_liveness_starts_passing_and_readiness_failing() -> None:
    # §2.2.11: a liveness worker starts at Success (one failure under threshold 3 kills
    # nothing); readiness starts at Failure (not Ready until a success).
    r = run(
        probes={"livenessProbe": http(periodSeconds=1), "readinessProbe": http(periodSeconds=1)},
        behavior={"start": "2s"},
        duration="10s",
    )
    assert times(r, "Killing") == []
    assert times(r, "PodReady") == [2]
    assert series(r, "workload.web.ready")[:3] == [0, 0, 1]


def test_liveness_on_hold_until_the_next_container() -> None:
    # §2.2.19: after the kill (6) the app ignores SIGTERM for the 30 s grace period; the
    # liveness worker stays on hold, so no liveness run until the new container at 36.
    r = run(
        spec=INSTANT,
        probes={"livenessProbe": http(periodSeconds=1, failureThreshold=1)},
        behavior={"ignoresSigterm": True, "episodes": [{"kind": "deadlock", "after": "5s"}]},
        duration="40s",
    )
    assert times(r, "Unhealthy") == [6]
    assert times(r, "Killing") == [6]
    assert times(r, "Started") == [0, 36]


def test_unresolvable_named_port_discards_every_result() -> None:
    # §2.3.26: a handler error is thrown away: readiness stays Failure, liveness never kills.
    bad = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 1, "failureThreshold": 1}
    r = run(
        probes={"readinessProbe": bad, "livenessProbe": bad},
        behavior={"episodes": [{"kind": "deadlock", "after": "3s"}]},
        duration="30s",
    )
    assert times(r, "PodReady") == []
    assert times(r, "Killing") == []
    # Each run says so as the kubelet does (Warning Unhealthy), and changes nothing.
    said = {(e.message, e.type) for e in r.events_for("pod/web-0", "Unhealthy")}
    assert said == {
        (f'{kind} probe errored and resulted in unknown state: strconv.Atoi: parsing "metrics": invalid syntax',
         "Warning")
        for kind in ("Readiness", "Liveness")
    }  # fmt: skip
    # Readiness runs at the start (the sync triggers it) and every second; liveness every second
    # from 1 s. The deadlock from 3 s changes nothing: the port is resolved before connecting.
    for kind, first in (("Readiness", 0), ("Liveness", 1)):
        at = [e.time_ms for e in r.events_for("pod/web-0", "Unhealthy") if e.message.startswith(kind)]
        assert at == [1000 * s for s in range(first, 30)]


def test_readiness_never_restarts_and_returns_after_a_hang() -> None:
    # A 4 s hang from 10 s: the run at 10 times out at 11 (NotReady); runs at 11, 12, 13 also
    # time out or wait; the run at 14 answers (Ready at 14).
    r = run(
        probes={"readinessProbe": http(periodSeconds=1, failureThreshold=1)},
        behavior={"episodes": [{"kind": "hang", "after": "10s", "for": "4s"}]},
        duration="20s",
    )
    assert times(r, "PodNotReady") == [11]
    assert times(r, "PodReady") == [0, 14]
    assert times(r, "Killing") == []


def test_liveness_waits_for_its_tick_after_startup_succeeds() -> None:
    # §2.3.22: liveness's initial delay (2 s) passed long before startup succeeded (at 5);
    # liveness runs on its first tick after that success (6), not in the same instant.
    r = run(
        probes={
            "startupProbe": http(periodSeconds=1, failureThreshold=30),
            "livenessProbe": http("/live", initialDelaySeconds=2, periodSeconds=1, failureThreshold=1),
        },
        behavior={"start": "5s", "paths": {"/live": 500}},
        duration="7s",
    )
    assert times(r, "Unhealthy", contains="Liveness") == [6]
    assert times(r, "Killing") == [6]


def test_result_counters_survive_a_container_restart() -> None:
    # §2.3.24: lastResult/resultRun are kept across container IDs. With successThreshold 2
    # the restarted container (crash at 10, restarted at 10.1) is Ready on its first success
    # at 11: the run of successes goes on (the dead container's Failure is not a probe run).
    r = run(
        probes={"readinessProbe": http(periodSeconds=1, successThreshold=2, failureThreshold=1)},
        behavior={"episodes": [{"kind": "crash", "after": "10s"}]},
        duration="15s",
    )
    assert times(r, "Started") == [0, 10.1]
    assert times(r, "PodReady") == [1, 11]
    assert times(r, "PodNotReady") == [10]
