"""preStop hooks run before SIGTERM, inside the grace period (issue 43 item 3).

pkg/kubelet/kuberuntime/kuberuntime_container.go, ``killContainer``:
``gracePeriod = gracePeriod - m.executePreStopHook(ctx, pod, containerID, containerSpec, gracePeriod)``
(the hook waited for at most the grace period, its whole seconds subtracted), then
``if gracePeriod < minimumGracePeriodInSeconds { gracePeriod = minimumGracePeriodInSeconds }`` and
``StopContainer(..., gracePeriod)``: SIGTERM, SIGKILL when that runs out. The container is not
signalled during the hook: it goes on answering.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from probesim.errors import InputWarning
from probesim.kube.hooks import plain_sleep, stop_plan
from tests.builders import INSTANT, http, run, scenario, series, times


def delete(pod: str, at: str) -> dict[str, object]:
    return {"actions": [{"kind": "deletePod", "pod": pod, "at": at}]}


def pre_stop(handler: dict[str, Any]) -> dict[str, Any]:
    return {"lifecycle": {"preStop": handler}}


SLEEP_10 = pre_stop({"sleep": {"seconds": 10}})


def test_a_deleted_pod_sleeps_in_its_hook_then_gets_sigterm() -> None:
    # Deleted at 20 s, grace 30 s (the default): the hook sleeps 10 s (20 → 30), SIGTERM at 30
    # with 30 - 10 = 20 s left, the app exits 5 s later: gone at 35 s (was 25 s, with SIGTERM at 20).
    r = run(
        probes={"readinessProbe": http(periodSeconds=1), **SLEEP_10},
        behavior={"shutdown": "5s"},
        duration="40s",
        spec=delete("web-0", "20s"),
    )
    assert times(r, "Killing", "pod/web-0") == [20]
    # Terminating from 20 until the exit at 35; out of the endpoints at the next step.
    assert series(r, "service.web.terminating")[18:38] == [0, 0] + [1] * 16 + [0, 0]
    # The app answers through the hook (readiness passes: its endpoint stays serving=true while
    # terminating, beside the replacement web-1's) and refuses connections from SIGTERM at 30:
    # readiness fails at 30, 31, 32 (threshold 3), and web-0 is no longer serving from 32.
    assert times(r, "Unhealthy", "pod/web-0") == [30, 31, 32, 33, 34]
    assert series(r, "service.web.serving")[19:34] == [1] + [2] * 12 + [1] * 2
    assert times(r, "PodNotReady", "pod/web-0") == [32]


def test_a_liveness_kill_gets_the_2s_floor_after_its_hook() -> None:
    # Deadlocked from 9 s, liveness (period 1, threshold 1) fails at 10 s: killed with the
    # probe's grace of 5 s (setTerminationGracePeriod). The 4 s hook runs 10 → 14; 5 - 4 = 1 s
    # left, raised to minimumGracePeriodInSeconds (2 s): SIGTERM at 14, and the app (exiting 5 s
    # after SIGTERM) is SIGKILLed at 16, restarted at once (INSTANT). Without the hook: SIGTERM
    # at 10, SIGKILL at 15, restart at 15.
    live = http(periodSeconds=1, failureThreshold=1, terminationGracePeriodSeconds=5)
    kw: dict[str, Any] = {
        "spec": INSTANT,
        "behavior": {"shutdown": "5s", "episodes": [{"kind": "deadlock", "after": "9s"}]},
        "duration": "20s",
    }
    r = run(probes={"livenessProbe": live, **pre_stop({"sleep": {"seconds": 4}})}, **kw)
    assert times(r, "Killing") == [10]
    assert times(r, "Started") == [0, 16]
    plain = run(probes={"livenessProbe": live}, **kw)
    assert times(plain, "Started") == [0, 15]


def test_a_hook_longer_than_the_grace_is_abandoned_at_the_grace() -> None:
    # executePreStopHook waits at most the grace period (30 s): an exec `sleep 60` hook from a
    # deletion at 20 s is given up at 50 s, then the stop gets the 2 s floor: SIGTERM at 50, and
    # the app (5 s to exit) is SIGKILLed at 52 — gone from the endpoints at 53.
    hook = pre_stop({"exec": {"command": ["sh", "-c", "sleep 60"]}})
    r = run(
        probes={"readinessProbe": http(periodSeconds=1), **hook},
        behavior={"shutdown": "5s"},
        duration="55s",
        spec=delete("web-0", "20s"),
    )
    term = series(r, "service.web.terminating")
    assert term[19] == 0 and term[20:53] == [1] * 33 and term[53] == 0
    assert times(r, "Unhealthy", "pod/web-0")[0] == 50  # answering until SIGTERM


@pytest.mark.parametrize(
    ("command", "ms"),
    [
        (["sleep", "10"], 10_000),
        (["/bin/sleep", "5"], 5_000),
        (["sh", "-c", "sleep 10"], 10_000),
        (["/bin/bash", "-c", "sleep 2.5;"], 2_500),
        (["sleep", "1m"], 60_000),
        (["sh", "-c", "sleep 5 && nginx -s quit"], None),
        (["nginx", "-s", "quit"], None),
        (["sleep"], None),
    ],
)
def test_an_exec_hook_that_only_sleeps_is_read_as_its_length(command: list[str], ms: int | None) -> None:
    assert plain_sleep(tuple(command)) == ms


def test_exec_and_http_hooks_take_the_scenario_s_length_and_say_what_they_assume() -> None:
    # An exec `/bin/sleep 5` hook is 5 s; a command that is not a plain sleep takes the
    # behaviour's `preStop`; with neither, the loader says what it assumes (the hook ends at
    # once) rather than guessing silently.
    def gone_at(handler: dict[str, Any], behavior: dict[str, Any]) -> int:
        r = run(
            probes=pre_stop(handler),
            behavior=behavior,
            duration="30s",
            spec=delete("web-0", "10s"),
        )
        term = series(r, "service.web.terminating")
        return term.index(0, 10)  # the step the pod has left the endpoints

    assert gone_at({"exec": {"command": ["/bin/sleep", "5"]}}, {"shutdown": "2s"}) == 18  # exit at 17
    quit_ = {"exec": {"command": ["nginx", "-s", "quit"]}}
    assert gone_at(quit_, {"shutdown": "2s", "preStop": "3s"}) == 16  # exit at 15
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        assert gone_at(quit_, {"shutdown": "2s"}) == 13  # exit at 12: no time in the hook
    msgs = [str(w.message) for w in said if issubclass(w.category, InputWarning)]
    assert msgs == [
        "test.yaml: Deployment web: container app: preStop (nginx -s quit): how long it runs is not "
        "known: assumed to end at once; set spec.behavior.web.containers.app.preStop to its length"
    ]


def test_an_http_hook_to_a_hung_app_hangs_until_the_grace() -> None:
    # The kubelet's GET to the deadlocked app gets no answer: the hook is given up at the
    # probe's grace (8 s), then the 2 s floor. Killed at 10: SIGTERM at 18, SIGKILL at 20.
    live = http(periodSeconds=1, failureThreshold=1, terminationGracePeriodSeconds=8)
    hook = pre_stop({"httpGet": {"path": "/drain", "port": 8080}})
    r = run(
        spec=INSTANT,
        probes={"livenessProbe": live, **hook},
        behavior={"shutdown": "5s", "preStop": "1s", "episodes": [{"kind": "deadlock", "after": "9s"}]},
        duration="25s",
    )
    assert times(r, "Killing") == [10]
    assert times(r, "Started") == [0, 20]


def test_a_tcp_socket_hook_fails_at_once() -> None:
    # tcpSocket is kept in the API for old manifests, but the kubelet's handler runner has no
    # case for it ("invalid handler"): executePreStopHook records FailedPreStopHook, "PreStopHook
    # failed", and the stop goes on with the whole grace period.
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        sc = scenario(
            probes=pre_stop({"tcpSocket": {"port": 8080}}),
            behavior={"shutdown": "3s"},
            duration="20s",
            spec=delete("web-0", "10s"),
        )
    assert any("a tcpSocket hook is kept by Kubernetes" in str(w.message) for w in said)
    from probesim.engine import simulate

    r = simulate(sc)
    (failed,) = r.events_for("pod/web-0", "FailedPreStopHook")
    assert (failed.time_ms, failed.type, failed.message) == (10_000, "Warning", "PreStopHook failed")
    assert series(r, "service.web.terminating")[9:15] == [0, 1, 1, 1, 1, 0]  # exit at 13


@pytest.mark.parametrize(
    ("grace", "hook", "turn", "plan"),
    [
        (30_000, None, 0, (0, 30_000)),
        (30_000, 10_000, 0, (10_000, 20_000)),
        (5_000, 4_000, 0, (4_000, 2_000)),  # 1 s left, floored at 2 s
        (30_000, 60_000, 0, (30_000, 2_000)),  # abandoned at the grace
        (30_000, 2_500, 0, (2_500, 28_000)),  # whole seconds subtracted (int64(Seconds()))
        (0, 10_000, 0, (0, 2_000)),  # no grace: no hook (`gracePeriod > 0`), the floor
        (30_000, 5_000, 7_000, (12_000, 18_000)),  # a sidecar's wait for its turn after the hook
    ],
)
def test_stop_plan(grace: int, hook: int | None, turn: int, plan: tuple[int, int]) -> None:
    assert stop_plan(grace, hook, turn) == plan
