"""Container starts and exits at their exact times around step boundaries (issue 22 item 10)."""

from __future__ import annotations

from tests.builders import run, times


def crash_after(age: str) -> dict[str, object]:
    return {"episodes": [{"kind": "crash", "after": age, "exitCode": 1}]}


def test_a_start_due_inside_a_step_happens_before_a_deletion_at_its_end() -> None:
    # The crash at 10 s is restarted at 10.5 s (containerRestartDelay); the scale to 0 at 11 s
    # deletes a pod whose new container is already running (the kubelet's SyncPod started it;
    # killPod in pkg/kubelet/kubelet.go stops it with the grace period): Started, then Killing.
    r = run(
        behavior=crash_after("10s"),
        duration="20s",
        spec={
            "cluster": {"containerRestartDelay": "500ms"},
            "actions": [{"kind": "scale", "workload": "web", "at": "11s", "replicas": 0}],
        },
    )
    assert times(r, "Started", "pod/web-0") == [0, 10.5]
    assert times(r, "Killing", "pod/web-0") == [11]


def test_exited_is_logged_when_the_container_exits_before_its_back_off() -> None:
    # Exits 1 s after each start (1.0, 2.1, 13.2 s); the restart attempt 100 ms after an exit
    # is refused by doBackOff (pkg/kubelet/kuberuntime/kuberuntime_manager.go) with BackOff:
    # each Exited comes at its exit, before that BackOff, not at the next step.
    r = run(behavior=crash_after("1s"), duration="20s")
    seq = [(e.time_ms / 1000, e.reason) for e in r.events if e.reason in ("Exited", "BackOff", "Started")]
    assert seq == [
        (0.0, "Started"),
        (1.0, "Exited"),
        (1.1, "Started"),
        (2.1, "Exited"),
        (2.2, "BackOff"),
        (12.2, "Started"),
        (13.2, "Exited"),
        (13.3, "BackOff"),
    ]
