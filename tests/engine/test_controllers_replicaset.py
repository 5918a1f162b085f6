"""The ReplicaSet controller's choice of pods to delete (controller.ActivePodsWithRanks with
LogarithmicScaleDown)."""

from __future__ import annotations

from probesim.engine.controllers.replicaset import PENDING, RUNNING, PodRank, pods_to_delete

NOW = 1_000_000


def pod(i: int, **kw: object) -> PodRank:
    base: dict[str, object] = {
        "index": i, "phase": RUNNING, "ready": True, "ready_since": 0, "restarts": 0, "created": 0,
    }  # fmt: skip
    base.update(kw)
    return PodRank(**base)  # type: ignore[arg-type]


def test_pending_then_not_ready_then_ready() -> None:
    pods = [pod(0), pod(1, ready=False), pod(2, phase=PENDING, ready=False)]
    assert pods_to_delete(pods, 2, NOW) == [2, 1]


def test_ready_for_less_time_first_in_powers_of_two() -> None:
    # Ready 100 s ago and 900 s ago: different powers of two, the more recent goes first.
    pods = [pod(0, ready_since=NOW - 900_000), pod(1, ready_since=NOW - 100_000)]
    assert pods_to_delete(pods, 1, NOW) == [1]
    # 600 s and 700 s ago fall in the same power of two (2^39 ns ≈ 550 s … 1100 s): the tie goes
    # to the pod id (the UID in a cluster, random).
    pods = [pod(0, ready_since=NOW - 600_000), pod(1, ready_since=NOW - 700_000)]
    assert pods_to_delete(pods, 1, NOW) == [0]


def test_more_restarts_then_newer() -> None:
    pods = [pod(0, restarts=1), pod(1, restarts=3), pod(2)]
    assert pods_to_delete(pods, 1, NOW) == [1]
    pods = [pod(0, ready=False, created=NOW - 500_000), pod(1, ready=False, created=NOW - 10_000)]
    assert pods_to_delete(pods, 1, NOW) == [1]


def test_all_of_them_when_diff_covers_every_pod() -> None:
    assert pods_to_delete([pod(3), pod(1)], 2, NOW) == [3, 1]
