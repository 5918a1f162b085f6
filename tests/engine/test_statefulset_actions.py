"""A StatefulSet's actions during a run (issue 22 item 6): ``deletePod`` of a name the rollout
has already replaced deletes the live replacement, and a ``partition`` action moves the
RollingUpdate partition as the phased-update e2e does ("should perform canary updates and phased
rolling updates of template modifications", test/e2e/apps/statefulset.go: 2 → 1 → 0).

The new revision's app takes 4 s to answer, the manifest's 2 s, so a pod's revision shows in
its PodReady time (readiness every second). Which ordinal goes to which revision is decided by
stateful_set_control.go: ``updateStatefulSet`` replaces ordinals from replicas-1 down to the
partition (``updateMin``), one at a time, each once its predecessor is Running and Ready; a pod
that is created is given ``newVersionedStatefulSetPod``'s revision: the current revision below
the partition, the update revision from it up. The engine's StatefulSet controller runs once a
step, so a pod gone at t is created again at t + 1 s.
"""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.results import Result
from tests.builders import http, scenario, times

READY_1S = {"readinessProbe": http(periodSeconds=1)}
NEW = {"containers": {"app": {"start": "4s"}}}  # the update revision's app: Ready 4 s after start


def rollout(at: str) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "app", "image": "example.com/app:2"}]}}
    return {"kind": "rollout", "workload": "web", "at": at, "template": template, "behavior": NEW}


def partition(at: str, n: int) -> dict[str, Any]:
    return {"kind": "partition", "workload": "web", "at": at, "partition": n}


def delete(at: str, pod: str) -> dict[str, Any]:
    return {"kind": "deletePod", "pod": pod, "at": at}


def run(actions: list[dict[str, Any]], workload_spec: dict[str, Any], duration: str = "45s") -> Result:
    return simulate(
        scenario(
            kind="StatefulSet", replicas=3, probes=READY_1S, behavior={"start": "2s"}, duration=duration,
            workload_spec=workload_spec, spec={"actions": actions},
        )
    )  # fmt: skip


def moves(r: Result) -> list[tuple[float, str, str]]:
    keep = ("Killing", "Scheduled", "PodReady")
    return [(e.time_ms / 1000, e.reason, e.object) for e in r.events if e.reason in keep]


def test_partition_lowered_two_one_zero_updates_one_ordinal_each_time() -> None:
    """OrderedReady, 3 replicas, partition 2. At first web-0, -1, -2 come up 3 s apart (each
    created the step after its predecessor is Ready at +2 s). The rollout at 10 s replaces web-2
    only (ordinal 2 >= partition 2): deleted at 10, created at 11 at the update revision, Ready
    at 15. Partition 1 at 20 s: web-1 (20, 21, Ready 25); web-0 stays at the current revision
    until partition 0 at 30 s (30, 31, Ready 35)."""
    r = run(
        [rollout("10s"), partition("20s", 1), partition("30s", 0)],
        {"updateStrategy": {"rollingUpdate": {"partition": 2}}},
    )
    assert moves(r)[6:] == [
        (10.0, "Killing", "pod/web-2"), (11.0, "Scheduled", "pod/web-2"), (15.0, "PodReady", "pod/web-2"),
        (20.0, "Killing", "pod/web-1"), (21.0, "Scheduled", "pod/web-1"), (25.0, "PodReady", "pod/web-1"),
        (30.0, "Killing", "pod/web-0"), (31.0, "Scheduled", "pod/web-0"), (35.0, "PodReady", "pod/web-0"),
    ]  # fmt: skip
    assert times(r, "PodReady") == [2.0, 5.0, 8.0, 15.0, 25.0, 35.0]
    # kubectl rollout status waits for the ordinals from the partition up, each time again.
    assert [(ro.action, ro.start_ms, ro.end_ms) for ro in r.rollouts] == [
        ("rollout", 10_000, 15_000), ("partition", 20_000, 25_000), ("partition", 30_000, 35_000),
    ]  # fmt: skip
    assert len({ro.revision for ro in r.rollouts}) == 1


def test_partition_lowered_mid_rollout_goes_on_down() -> None:
    """Partition 2 lowered to 0 at 12 s, while web-2 is still starting (Ready at 15): the
    controller waits for it, and seeing it Ready at its next sync (16 s) replaces web-1 (16, 17,
    Ready 21), then web-0 (22, 23, Ready 27)."""
    r = run([rollout("10s"), partition("12s", 0)], {"updateStrategy": {"rollingUpdate": {"partition": 2}}})
    assert [(t, o) for t, why, o in moves(r) if why == "Killing"] == [
        (10.0, "pod/web-2"), (16.0, "pod/web-1"), (22.0, "pod/web-0"),
    ]  # fmt: skip
    assert times(r, "PodReady", "pod/web-0") == [2.0, 27.0]
    first, second = r.rollouts
    assert (first.superseded_ms, second.action, second.start_ms, second.end_ms) == (
        12_000, "partition", 12_000, 27_000,
    )  # fmt: skip


def test_partition_without_pods_to_update_starts_no_rollout() -> None:
    r = run([partition("5s", 1)], {}, duration="15s")
    assert r.rollouts == [] and times(r, "Killing") == []


def test_delete_pod_after_the_rollout_deletes_the_live_replacement() -> None:
    """Parallel, partition 1: the rollout at 10 s replaces web-2 (10, 11, Ready 15) and then
    web-1 (16, 17, Ready 21); web-0 stays. deletePod web-2 at 30 s deletes the replacement (the
    pod named web-2 that exists then) and it comes back at the update revision (ordinal 2 >=
    partition: Ready 4 s after); web-0 deleted at 30 s comes back at the current revision (Ready
    2 s after). web-2 deleted again at 40 s: the pod created at 31 s goes, and is created again."""
    r = run(
        [rollout("10s"), delete("30s", "web-2"), delete("30s", "web-0"), delete("40s", "web-2")],
        {"updateStrategy": {"rollingUpdate": {"partition": 1}}, "podManagementPolicy": "Parallel"},
        duration="50s",
    )
    assert times(r, "Killing", "pod/web-2") == [10.0, 30.0, 40.0]
    assert times(r, "Scheduled", "pod/web-2") == [0.0, 11.0, 31.0, 41.0]
    assert times(r, "PodReady", "pod/web-2") == [2.0, 15.0, 35.0, 45.0]  # update revision: +4 s
    assert times(r, "Killing", "pod/web-0") == [30.0]
    assert times(r, "Scheduled", "pod/web-0") == [0.0, 31.0]
    assert times(r, "PodReady", "pod/web-0") == [2.0, 33.0]  # current revision: +2 s
    assert times(r, "Killing", "pod/web-1") == [16.0]
    assert times(r, "NotFound") == []


def test_delete_pod_of_a_name_not_there_is_not_found() -> None:
    """OrderedReady: web-2 is created only at 6 s; deleting it at 1 s is kubectl's NotFound."""
    r = run([delete("1s", "web-2")], {}, duration="10s")
    (e,) = r.events_for("pod/web-2", "NotFound")
    assert (e.time_ms, e.type, e.message) == (
        1000,
        "Warning",
        'Error from server (NotFound): pods "web-2" not found',
    )
    assert times(r, "Scheduled", "pod/web-2") == [6.0]


@pytest.mark.parametrize(
    ("kind", "action", "workload_spec", "message"),
    [
        ("StatefulSet", partition("5s", -1), {}, "spec.actions[0].partition: Input should be greater than or equal to 0 (got -1)"),
        ("StatefulSet", {**partition("5s", 0), "partition": "x"}, {}, "spec.actions[0].partition: Input should be a valid integer"),
        ("Deployment", partition("5s", 1), {}, "spec.actions[0].workload: a partition is a StatefulSet's"),
        ("StatefulSet", partition("5s", 1), {"updateStrategy": {"type": "OnDelete"}},
         "StatefulSet web has updateStrategy OnDelete: a partition applies to the RollingUpdate strategy only"),
        ("StatefulSet", {**partition("5s", 1), "workload": "db"}, {}, "no workload named 'db'"),
    ],
)  # fmt: skip
def test_partition_errors_are_one_line_at_the_action(
    kind: str, action: dict[str, Any], workload_spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError) as e:
        scenario(kind=kind, replicas=3, workload_spec=workload_spec, spec={"actions": [action]})
    assert message in str(e.value) and "\n" not in str(e.value)
    assert e.value.line is not None and e.value.line > 1


def test_a_replica_set_pod_is_still_deleted_once() -> None:
    with pytest.raises(InputError, match="already deleted by an earlier action"):
        scenario(replicas=2, spec={"actions": [delete("5s", "web-0"), delete("9s", "web-0")]})
