"""The StatefulSet controller's order of work against stateful_set_control.go: reverse-ordinal
rolling update, partition, maxUnavailable, OrderedReady and Parallel, OnDelete."""

from __future__ import annotations

from probesim.engine.controllers.statefulset import (
    SetPod,
    StatefulSetState,
    created_revision,
    reconcile,
)
from probesim.kube.arithmetic import statefulset_max_unavailable as max_unavailable


def healthy(o: int, rev: int) -> SetPod:
    return SetPod(o, rev, running_ready=True, available=True)


def test_rolling_update_goes_from_the_highest_ordinal_down_one_at_a_time() -> None:
    s = StatefulSetState(replicas=3, update_revision=1, current_revision=0)
    pods = {o: healthy(o, 0) for o in range(3)}
    order = []
    for _ in range(20):
        d = reconcile(s, pods)
        assert len(d.delete) + len(d.create) <= 1
        for o in d.delete:
            order.append(("delete", o))
            pods[o] = SetPod(o, 0, terminating=True)
        for o, rev in d.create:
            order.append(("create", o))
            pods[o] = SetPod(o, rev)  # not Ready yet
        if not d.delete and not d.create:
            # Advance the world: a terminating pod goes, a new one becomes available.
            moved = False
            for o, p in sorted(pods.items()):
                if p.terminating:
                    del pods[o]
                    moved = True
                    break
                if not p.available:
                    pods[o] = healthy(o, p.revision)
                    moved = True
                    break
            if not moved:
                break
    assert order == [("delete", 2), ("create", 2), ("delete", 1), ("create", 1), ("delete", 0), ("create", 0)]
    assert all(p.revision == 1 for p in pods.values())


def test_waits_for_the_replacement_to_be_available_before_the_next() -> None:
    s = StatefulSetState(replicas=3, update_revision=1, current_revision=0)
    pods = {0: healthy(0, 0), 1: healthy(1, 0), 2: SetPod(2, 1, running_ready=True, available=False)}
    d = reconcile(s, pods)
    assert (d.create, d.delete) == ([], [])


def test_partition_keeps_lower_ordinals_at_the_current_revision() -> None:
    s = StatefulSetState(replicas=4, update_revision=1, current_revision=0, partition=2)
    pods = {0: healthy(0, 0), 1: healthy(1, 0), 2: healthy(2, 1), 3: healthy(3, 1)}
    assert reconcile(s, pods).delete == []
    # A pod below the partition deleted by hand comes back at the current revision.
    assert created_revision(s, 1) == 0 and created_revision(s, 2) == 1
    del pods[1]
    assert reconcile(s, pods).create == [(1, 0)]


def test_max_unavailable_deletes_several_highest_first() -> None:
    s = StatefulSetState(replicas=5, update_revision=1, current_revision=0, max_unavailable=2)
    pods = {o: healthy(o, 0) for o in range(5)}
    assert reconcile(s, pods).delete == [4, 3]
    # One already unavailable: one more may go.
    pods[0] = SetPod(0, 0, running_ready=True, available=False)
    s.policy = "Parallel"
    assert reconcile(s, pods).delete == [4]


def test_max_unavailable_percentage_rounds_down_to_at_least_one() -> None:
    assert max_unavailable("50%", 5) == 2
    assert max_unavailable("10%", 5) == 1
    assert max_unavailable(None, 5) == 1
    assert max_unavailable(3, 5) == 3


def test_ordered_ready_creates_one_at_a_time_parallel_all_at_once() -> None:
    s = StatefulSetState(replicas=3, update_revision=0, current_revision=0)
    assert reconcile(s, {}).create == [(0, 0)]
    assert reconcile(s, {0: SetPod(0, 0, running_ready=True)}).create == []  # Ready but not yet available
    assert reconcile(s, {0: healthy(0, 0)}).create == [(1, 0)]
    s.policy = "Parallel"
    assert reconcile(s, {}).create == [(0, 0), (1, 0), (2, 0)]


def test_scale_down_removes_the_highest_ordinal_first() -> None:
    s = StatefulSetState(replicas=1, update_revision=0, current_revision=0)
    pods = {o: healthy(o, 0) for o in range(3)}
    assert reconcile(s, pods).delete == [2]
    pods[2] = SetPod(2, 0, terminating=True)
    assert reconcile(s, pods).delete == []  # OrderedReady waits for it to go
    s.policy = "Parallel"
    assert reconcile(s, pods).delete == [1]


def test_on_delete_replaces_nothing_and_recreates_at_the_update_revision() -> None:
    s = StatefulSetState(replicas=2, update_revision=1, current_revision=0, strategy="OnDelete")
    pods = {o: healthy(o, 0) for o in range(2)}
    assert reconcile(s, pods).delete == []
    del pods[1]
    assert reconcile(s, pods).create == [(1, 1)]
