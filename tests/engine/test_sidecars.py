"""Native sidecars: restartable init containers (KEP-753; issue 43 item 5).

pkg/kubelet/kuberuntime/kuberuntime_manager.go, ``computeInitContainerActions``: a running
restartable init container with a startup probe whose result is not Success stops the walk
(``if startup != proberesults.Success { ... break }``); once it is, the next init container is
started (``InitContainersToStart = append(..., i+1)``), and after the last one
``podHasInitialized`` lets ``computePodActions`` start the app containers. An exited restartable
init container is put back in ``InitContainersToStart`` whatever the pod's restartPolicy.
On pod termination, kuberuntime_termination_order.go makes each sidecar wait for the app
containers and the sidecars after it to exit before its own SIGTERM.
"""

from __future__ import annotations

from typing import Any

from tests.builders import INSTANT, http, run, series, times

APP = {"name": "app", "image": "a:1", "ports": [{"containerPort": 8080}]}


def sidecar(name: str = "proxy", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "p:1", "restartPolicy": "Always", **fields}


def behaves(**containers: dict[str, Any]) -> list[dict[str, Any]]:
    """Behaviour of named containers of pod 0 (the builders' `behavior` names only `app`)."""
    return [{"ordinals": [0], "containers": containers}]


def started(r: Any) -> list[tuple[float, str]]:
    return [(e.time_ms / 1000, e.message) for e in r.events if e.reason == "Started"]


def test_the_app_starts_when_the_sidecar_s_startup_probe_passes() -> None:
    # The proxy answers from 5 s; its startup probe (period 1) passes at 5: the app is created
    # and started then, not with the pod at 0 (as probesim did). The pod is Ready only after.
    r = run(
        spec=INSTANT,
        containers=[APP],
        pod_spec={"initContainers": [sidecar(startupProbe=http(periodSeconds=1, failureThreshold=30))]},
        overrides=behaves(proxy={"start": "5s"}),
        probes={"readinessProbe": http(periodSeconds=1)},
        duration="10s",
    )
    assert started(r) == [(0, "Started container proxy"), (5, "Started container app")]
    assert times(r, "Created") == [0, 5]
    assert times(r, "PodReady") == [5]


def test_sidecars_start_in_order_each_after_the_one_before_is_started() -> None:
    # first (no startup probe: started as it runs) → second at once; second's startup probe
    # passes at 3 (it answers from 3) → app at 3.
    r = run(
        spec=INSTANT,
        containers=[APP],
        pod_spec={
            "initContainers": [
                sidecar("first"),
                {"name": "setup", "image": "s:1"},  # a regular init container: done at once
                sidecar("second", startupProbe=http(periodSeconds=1, failureThreshold=30)),
            ]
        },
        overrides=behaves(second={"start": "3s"}),
        duration="6s",
    )
    assert started(r) == [
        (0, "Started container first"),
        (0, "Started container second"),
        (3, "Started container app"),
    ]


def test_a_sidecar_is_restarted_under_restart_policy_never() -> None:
    # A bare Pod, restartPolicy Never: the app container would stay down, but the sidecar is
    # restarted after each exit, with the ordinary CrashLoopBackOff (0, then 10 s from the exit).
    r = run(
        kind="Pod",
        spec=INSTANT,
        containers=[APP],
        pod_spec={"restartPolicy": "Never", "initContainers": [sidecar()]},
        overrides=behaves(proxy={"episodes": [{"kind": "crash", "after": "5s", "exitCode": 1}]}),
        duration="30s",
    )
    assert [t for t, m in started(r) if m == "Started container proxy"] == [0, 5, 20]
    assert times(r, "BackOff") == [10, 25]
    assert r.workload("web").restarts == {"web": 2}


def test_sidecars_stop_after_the_app_containers() -> None:
    # Deleted at 10: the app's 5 s preStop sleep, SIGTERM at 15, exit at 17. The proxy has no
    # hook; it waits for the app (waitForTurn), gets SIGTERM at 17 with 30 - 7 = 23 s left, and
    # exits 3 s later, at 20 (it would have exited at 13 stopped beside the app). Its readiness
    # (period 1, threshold 1) keeps passing until its SIGTERM.
    r = run(
        containers=[{**APP, "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}],
        pod_spec={"initContainers": [sidecar(readinessProbe=http(periodSeconds=1, failureThreshold=1))]},
        behavior={"shutdown": "2s"},
        overrides=behaves(proxy={"shutdown": "3s"}),
        duration="25s",
        spec={"actions": [{"kind": "deletePod", "pod": "web-0", "at": "10s"}]},
    )
    assert [e.message for e in r.events_for("pod/web-0", "Killing")] == [
        "Stopping container proxy",
        "Stopping container app",
    ]
    assert times(r, "Unhealthy", "pod/web-0") == [17, 18, 19]
    assert series(r, "service.web.terminating")[9:22] == [0] + [1] * 11 + [0]
