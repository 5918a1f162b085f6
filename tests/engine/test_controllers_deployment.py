"""The Deployment controller's rules, sync by sync, against pkg/controller/deployment (rolling.go,
sync.go, progress.go, recreate.go, util/deployment_util.go) and the examples of the Kubernetes
documentation (concepts/workloads/controllers/deployment)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from probesim.engine.controllers.deployment import DeploymentController, DeploymentState, ReplicaSetState
from probesim.kube.arithmetic import resolve_fenceposts, scaled_value, template_hash

NAMES = {0: "web-old", 1: "web-new", 2: "web-third"}


def deployment(
    replicas: int, surge: int | str = "25%", unavailable: int | str = "25%", **kw: Any
) -> DeploymentController:
    """A Deployment whose template 0 runs ``replicas`` available pods, settled."""
    d = DeploymentState(
        name="web", replicas=replicas, template=0, max_surge=surge, max_unavailable=unavailable, **kw
    )
    c = DeploymentController(d, NAMES)
    c.sync(0)
    fill(c, {0: replicas})
    c.sync(0)
    return c


def fill(c: DeploymentController, available: dict[int, int]) -> None:
    """What the ReplicaSet controller and the kubelet made of the last sync: every ReplicaSet
    has its pods (old ones gone at once), ``available[template]`` of them available."""
    for r in c.d.rs:
        r.status_replicas = r.pods = r.replicas
        r.ready = r.available = min(available.get(r.template, 0), r.replicas)


def sizes(c: DeploymentController) -> dict[str, int]:
    return {r.name: r.replicas for r in c.d.rs}


def messages(events: list) -> list[str]:  # type: ignore[type-arg]
    return [e.message for e in events]


@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "expected"),
    [
        ("25%", "25%", 10, (3, 2)),  # 2.5 → surge up to 3, unavailable down to 2
        ("25%", "25%", 1, (1, 0)),
        ("25%", "25%", 4, (1, 1)),
        (1, 0, 3, (1, 0)),
        ("1%", "1%", 10, (1, 0)),
        (0, "10%", 5, (0, 1)),  # both round to 0: maxUnavailable becomes 1
        ("0%", "49%", 2, (0, 1)),
        ("100%", "100%", 3, (3, 3)),
    ],
)
def test_fenceposts_round_surge_up_and_unavailable_down(
    surge: int | str, unavailable: int | str, replicas: int, expected: tuple[int, int]
) -> None:
    assert resolve_fenceposts(surge, unavailable, replicas) == expected


def test_scaled_value_is_exact_in_integers() -> None:
    assert scaled_value("33%", 300, True) == 99
    assert scaled_value("33%", 301, True) == 100
    assert scaled_value("33%", 301, False) == 99
    assert scaled_value(7, 1, False) == 7


def test_rolling_update_step_by_step_default_fenceposts() -> None:
    """4 replicas at 25 %/25 %: surge 1, unavailable 1. The first sync creates the new
    ReplicaSet with 1 and scales the old one to 3 (3 available stay ≥ 4 − 1); then each new pod
    becoming available lets one old pod go and one more new pod come."""
    c = deployment(4)
    c.d.template = 1
    assert messages(c.sync(1000)) == [
        "Scaled up replica set web-new from 0 to 1",
        "Scaled down replica set web-old from 4 to 3",
    ]
    fill(c, {0: 3, 1: 0})
    assert messages(c.sync(2000)) == ["Scaled up replica set web-new from 1 to 2"]
    fill(c, {0: 3, 1: 0})
    assert messages(c.sync(3000)) == []  # 5 pods, 3 available: nothing may go
    fill(c, {0: 3, 1: 1})
    assert messages(c.sync(4000)) == ["Scaled down replica set web-old from 3 to 2"]
    fill(c, {0: 2, 1: 1})
    assert messages(c.sync(5000)) == ["Scaled up replica set web-new from 2 to 3"]
    fill(c, {0: 2, 1: 3})
    assert messages(c.sync(6000)) == ["Scaled down replica set web-old from 2 to 0"]
    fill(c, {1: 3})
    assert messages(c.sync(7000)) == ["Scaled up replica set web-new from 3 to 4"]
    fill(c, {1: 4})
    assert messages(c.sync(8000)) == []
    cond = c.d.status.condition("Progressing")
    assert cond is not None and (cond.status, cond.reason) == ("True", "NewReplicaSetAvailable")
    assert cond.message == 'ReplicaSet "web-new" has successfully progressed.'
    assert c.d.revision == 2 and [r.revision for r in c.d.rs] == [1, 2]


def test_max_unavailable_zero_surge_one_replaces_one_pod_at_a_time() -> None:
    c = deployment(2, surge=1, unavailable=0)
    c.d.template = 1
    assert messages(c.sync(1000)) == ["Scaled up replica set web-new from 0 to 1"]
    fill(c, {0: 2, 1: 1})
    assert messages(c.sync(2000)) == ["Scaled down replica set web-old from 2 to 1"]
    fill(c, {0: 1, 1: 1})
    assert messages(c.sync(3000)) == ["Scaled up replica set web-new from 1 to 2"]


def test_unavailable_old_pods_are_scaled_down_first() -> None:
    """``cleanupUnhealthyReplicas``: old pods that are not available go before the maxUnavailable
    budget is counted (10 replicas, surge 3, unavailable 2, 4 old pods unavailable)."""
    c = deployment(10, surge=3, unavailable=2)
    fill(c, {0: 6})
    c.d.template = 1
    # New at 3; 13 pods, minimum available 8, 3 new unavailable: up to 2 may go, and they are
    # taken from the 4 unavailable old pods (available 6 ≤ 8 then: no more).
    assert messages(c.sync(1000)) == [
        "Scaled up replica set web-new from 0 to 3",
        "Scaled down replica set web-old from 10 to 8",
    ]


def test_proportional_scaling_the_documentation_example() -> None:
    """The documentation's example: 10 replicas, maxSurge 3, maxUnavailable 2, a new image that
    never starts: old 8, new 5. Scaled to 15 mid-rollout, the 5 extra replicas are shared 3 to
    the old ReplicaSet and 2 to the new (old 11, new 7)."""
    c = deployment(10, surge=3, unavailable=2)
    c.d.template = 1
    c.sync(1000)
    fill(c, {0: 8})
    c.sync(2000)
    fill(c, {0: 8})
    assert messages(c.sync(3000)) == []
    assert sizes(c) == {"web-old": 8, "web-new": 5}
    c.d.replicas = 15
    assert messages(c.sync(4000)) == [
        "Scaled up replica set web-old from 8 to 11",
        "Scaled up replica set web-new from 5 to 7",
    ]
    assert all(r.max_annotation == 18 and r.desired_annotation == 15 for r in c.d.rs)


def test_proportional_scale_down_older_first_among_equals() -> None:
    c = deployment(10, surge=3, unavailable=2)
    c.d.template = 1
    c.sync(1000)
    fill(c, {0: 8})
    c.sync(2000)
    fill(c, {0: 8})
    c.d.replicas = 5  # allowed 5 + 3 = 8 of 13: −5
    # old: round(8 × 8 / 13) = 5 (−3); new: round(5 × 8 / 13) = 3 (−2)
    assert messages(c.sync(3000)) == [
        "Scaled down replica set web-old from 8 to 5",
        "Scaled down replica set web-new from 5 to 3",
    ]


def test_proportional_leftover_goes_to_the_largest() -> None:
    """Three ReplicaSets of 5, 3 and 5 (the last the newest), last scaled for 10 + 3: to 11,
    every share rounds to 0 (5 × 14 / 13 = 5.4, 3 × 14 / 13 = 3.2) and the one replica left over
    goes to the first in size order, the newest of the two largest."""
    d = DeploymentState(name="web", replicas=11, template=2, max_surge=3, max_unavailable=2)
    for t, (n, created) in enumerate([(5, 0), (3, 1000), (5, 2000)]):
        d.rs.append(
            ReplicaSetState(
                NAMES[t],
                t,
                t + 1,
                created,
                replicas=n,
                desired_annotation=10,
                max_annotation=13,
                status_replicas=n,
                pods=n,
            )
        )
    d.status.replicas = 13
    c = DeploymentController(d, NAMES)
    assert messages(c.sync(3000)) == ["Scaled up replica set web-third from 5 to 6"]
    assert sizes(c) == {"web-old": 5, "web-new": 3, "web-third": 6}


def test_progress_deadline_fires_strictly_after_the_last_progress() -> None:
    """progressDeadlineSeconds 10: the new pod never becomes available; the last progress is the
    new ReplicaSet's pod appearing at 2 s, so the condition goes False at the first sync strictly
    after 12 s (``from.Add(delta).Before(now)``)."""
    c = deployment(1, surge=1, unavailable=0, progress_deadline_s=10)
    c.d.template = 1
    c.sync(1000)
    cond = c.d.status.condition("Progressing")
    assert cond is not None and (cond.reason, cond.last_update) == ("NewReplicaSetCreated", 1000)
    for t in range(2000, 13001, 1000):
        fill(c, {0: 1})
        c.sync(t)
        cond = c.d.status.condition("Progressing")
        assert cond is not None
        if t <= 12000:
            assert (cond.status, cond.reason, cond.last_update) == ("True", "ReplicaSetUpdated", 2000), t
            assert c.deadline_at() == 12000
        else:
            assert (cond.status, cond.reason) == ("False", "ProgressDeadlineExceeded")
            assert cond.message == 'ReplicaSet "web-new" has timed out progressing.'
            assert c.deadline_at() is None
    # Progress after the deadline makes it True again.
    fill(c, {0: 1, 1: 1})
    c.sync(14000)
    cond = c.d.status.condition("Progressing")
    assert cond is not None and (cond.status, cond.reason) == ("True", "ReplicaSetUpdated")


def test_paused_deployment_creates_no_replica_set_and_counts_no_deadline() -> None:
    c = deployment(2, progress_deadline_s=5)
    c.d.paused = True
    c.d.template = 1
    assert messages(c.sync(1000)) == []
    assert sizes(c) == {"web-old": 2}
    cond = c.d.status.condition("Progressing")
    assert cond is not None and (cond.status, cond.reason, cond.message) == (
        "Unknown", "DeploymentPaused", "Deployment is paused",
    )  # fmt: skip
    assert c.deadline_at() is None
    c.d.paused = False
    events = c.sync(60_000)
    assert messages(events)[0] == "Scaled up replica set web-new from 0 to 1"
    cond = c.d.status.condition("Progressing")
    assert cond is not None and cond.reason == "NewReplicaSetCreated" and cond.last_update == 60_000


def test_recreate_scales_old_to_zero_and_waits_for_their_pods() -> None:
    c = deployment(3, strategy="Recreate")
    c.d.template = 1
    assert messages(c.sync(1000)) == ["Scaled down replica set web-old from 3 to 0"]
    old = c.d.rs[0]
    old.status_replicas, old.pods = 0, 2  # two pods still terminating
    assert messages(c.sync(2000)) == []
    assert sizes(c) == {"web-old": 0}
    old.pods = 0
    assert messages(c.sync(3000)) == ["Scaled up replica set web-new from 0 to 3"]


def test_revision_history_limit_deletes_the_oldest_empty_replica_sets() -> None:
    c = deployment(1, surge=1, unavailable=0, revision_history_limit=1)
    for t in (1, 2):
        c.d.template = t
        for k in range(6):
            fill(c, {t: 1} if k else {t - 1: 1})
            c.sync(t * 10_000 + k * 1000)
    # The oldest, web-old (revision 1), was deleted once the second rollout completed.
    assert [(r.name, r.revision, r.replicas) for r in c.d.rs] == [("web-new", 2, 0), ("web-third", 3, 1)]


def test_rollback_reuses_the_replica_set_and_gives_it_the_next_revision() -> None:
    c = deployment(1, surge=1, unavailable=0)
    c.d.template = 1
    for k in range(5):
        fill(c, {1: 1} if k else {0: 1})
        c.sync(1000 + k * 1000)
    prev = c.d.revision_rs(0)
    assert prev is not None and (prev.name, prev.revision) == ("web-old", 1)
    c.d.template = prev.template
    assert messages(c.sync(10_000)) == ["Scaled up replica set web-old from 0 to 1"]
    assert [(r.name, r.revision) for r in c.d.rs] == [("web-old", 3), ("web-new", 2)]
    assert c.d.revision == 3
    assert c.d.revision_rs(7) is None


def test_template_hash_looks_like_a_pod_template_hash() -> None:
    h = template_hash('{"image": "app:2"}')
    assert h == template_hash('{"image": "app:2"}') != template_hash('{"image": "app:3"}')
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(h) <= 10


fencepost = st.one_of(st.integers(0, 6), st.integers(0, 100).map(lambda p: f"{p}%"))


@settings(max_examples=150, deadline=None)
@given(
    replicas=st.integers(1, 20),
    surge=fencepost,
    unavailable=fencepost,
    ready=st.lists(st.integers(0, 3), min_size=60, max_size=60),
)
def test_rolling_update_invariants(
    replicas: int, surge: int | str, unavailable: int | str, ready: list[int]
) -> None:
    """Whatever the fenceposts and however slowly new pods become available: never more pods
    than replicas + maxSurge, never fewer available than replicas − maxUnavailable (old pods
    all available), and the rollout completes once the new pods are available."""
    assume(not (surge in (0, "0%") and unavailable in (0, "0%")))  # the API refuses both 0
    c = deployment(replicas, surge, unavailable)
    max_surge, max_unavailable = resolve_fenceposts(surge, unavailable, replicas)
    c.d.template = 1
    new_available = 0
    for k, more in enumerate([*ready, *([replicas] * (2 * replicas + 4))]):
        new = c.d.new_rs()
        new_available = min(new_available + more, new.replicas if new else 0)
        fill(c, {0: replicas, 1: new_available})
        c.sync(1000 * (k + 1))
        total = sum(r.replicas for r in c.d.rs)
        assert total <= replicas + max_surge
        old = sum(r.replicas for r in c.d.rs if r.template == 0)
        assert old + min(new_available, c.d.rs[-1].replicas) >= replicas - min(max_unavailable, replicas)
    assert sizes(c) == {"web-old": 0, "web-new": replicas}
