"""A Deployment adopts a matching orphan ReplicaSet and rolls out from it (issue 22 item 5).

The conformance test "Deployment RollingUpdateDeployment should delete old pods and create new
ones" (test/e2e/apps/deployment.go, ``testRollingUpdateDeployment``) creates a ReplicaSet
``test-rolling-update-controller`` (1 replica, labels name=sample-pod and pod=httpd, revision
annotation 3546343826724305832) and then a Deployment ``test-rolling-update-deployment`` (1
replica, selector name=sample-pod, another image). It checks the Deployment gets revision
3546343826724305833, completes, and has exactly one old ReplicaSet: the adopted one, at 0.

Upstream code that decides each figure: ``ClaimReplicaSets`` / ``ClaimObject``
(controller_ref_manager.go) adopt a ReplicaSet whose labels match the selector and that has no
controller ownerReference; ``getNewReplicaSet`` (sync.go) gives the new ReplicaSet
``MaxRevision(oldRSs) + 1``; ``NewRSNewReplicas`` (deployment_util.go) sizes it; and
``reconcileOldReplicaSets`` (rolling.go) scales the old one down once the new pod is available.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from probesim.engine.loop import Simulation
from probesim.errors import InputError
from probesim.manifests.scenario import scenario_from_text
from probesim.model.scenario import Scenario
from probesim.results import Result
from tests.builders import series, times

RS = "test-rolling-update-controller"
DEPLOY = "test-rolling-update-deployment"
RS_LABELS = {"name": "sample-pod", "pod": "httpd"}
D_LABELS = {"name": "sample-pod"}


def template(image: str, labels: dict[str, str]) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}
    container = {"name": "app", "image": image, "ports": [{"containerPort": 8080}], "readinessProbe": probe}
    return {"metadata": {"labels": labels}, "spec": {"containers": [container]}}


def replica_set(
    replicas: int = 1,
    labels: dict[str, str] = RS_LABELS,
    image: str = "httpd:2.4",
    meta: dict[str, Any] | None = None,
    name: str = RS,
) -> dict[str, Any]:
    metadata = {
        "name": name,
        "labels": labels,
        "annotations": {"deployment.kubernetes.io/revision": "3546343826724305832"},
        **(meta or {}),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": template(image, labels),
        },
    }


def deployment(replicas: int = 1, image: str = "agnhost:2.4", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": DEPLOY},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": D_LABELS},
            "template": template(image, D_LABELS),
            **spec,
        },
    }


def load(
    *objects: dict[str, Any], actions: list[dict[str, Any]] | None = None, duration: str = "20s"
) -> Scenario:
    """The ReplicaSet's app Ready 2 s after start, the Deployment's 3 s."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": D_LABELS, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    behavior = {
        RS: {"containers": {"app": {"start": "2s"}}},
        DEPLOY: {"containers": {"app": {"start": "3s"}}},
    }
    sc = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "adoption"},
        "spec": {"duration": duration, "behavior": behavior, "actions": actions or []},
    }
    return scenario_from_text(yaml.safe_dump_all([sc, *objects, svc], sort_keys=False), "adoption.yaml", ".")


def run(s: Scenario) -> tuple[Result, Simulation]:
    r = Simulation(s)
    return r.run(), r


def scaling(r: Result) -> list[tuple[float, str]]:
    return [(e.time_ms / 1000, e.message) for e in r.events_for(f"deployment/{DEPLOY}", "ScalingReplicaSet")]


def test_the_conformance_case_adopts_the_orphan_and_rolls_out_from_it() -> None:
    """At 0 the Deployment claims the ReplicaSet (its labels match name=sample-pod, it has no
    controller) and, its template being another, creates a new ReplicaSet: 1 replica, maxSurge
    ceil(25 % of 1) = 1 and maxUnavailable floor(25 % of 1) = 0, so NewRSNewReplicas gives
    0 + min(1 + 1 − 1, 1) = 1 at once, and the old one may lose nothing while the new pod is
    unavailable (2 − 1 − 1 = 0). The new pod is Ready at 3 s: the old ReplicaSet goes 1 → 0 and
    its pod is deleted then."""
    r, state = run(load(replica_set(), deployment()))
    d = state.controllers.deployments[1].d
    new = d.new_rs()
    assert new is not None and new.name.startswith(f"{DEPLOY}-")
    assert scaling(r) == [
        (0.0, f"Scaled up replica set {new.name} from 0 to 1"),
        (3.0, f"Scaled down replica set {RS} from 1 to 0"),
    ]
    # Adoption itself records nothing (AdoptReplicaSet patches the ownerReference, no event).
    assert [e.reason for e in r.events if e.object == f"deployment/{DEPLOY}"] == ["ScalingReplicaSet"] * 2
    # WaitForDeploymentRevisionAndImage: the revision after the adopted one's.
    assert (d.revision, new.revision) == (3546343826724305833, 3546343826724305833)
    (old,) = d.old_rs()  # GetOldReplicaSets: exactly one, the adopted one, at 0
    assert (old.name, old.revision, old.replicas) == (RS, 3546343826724305832, 0)
    assert times(r, "Scheduled", f"pod/{RS}-0") == [0.0] and times(r, "Killing", f"pod/{RS}-0") == [3.0]
    assert times(r, "Scheduled", f"pod/{DEPLOY}-0") == [0.0]
    assert series(r, f"replicaset.{RS}.replicas")[:5] == [1, 1, 1, 0, 0]
    assert series(r, f"replicaset.{new.name}.replicas")[:5] == [1, 1, 1, 1, 1]
    # kubectl get deploy counts the adopted ReplicaSet's pods; kubectl get rs shows its own.
    assert series(r, f"workload.{DEPLOY}.current")[:5] == [2, 2, 2, 1, 1]
    assert series(r, f"workload.{DEPLOY}.ready")[:5] == [0, 0, 1, 1, 1]
    assert series(r, f"workload.{RS}.desired")[:5] == [1, 1, 1, 0, 0]
    assert series(r, f"workload.{RS}.current")[:5] == [1, 1, 1, 0, 0]
    (ro,) = r.rollouts
    assert (ro.workload, ro.action, ro.revision, ro.start_ms, ro.end_ms, ro.outcome) == (
        DEPLOY, "adopt", new.name, 0, 3000, "complete",
    )  # fmt: skip
    cond = d.status.condition("Progressing")
    assert cond is not None and (cond.status, cond.reason) == ("True", "NewReplicaSetAvailable")


def test_an_orphan_with_the_deployments_template_is_its_new_replica_set() -> None:
    """Its template equals the Deployment's but for the pod-template-hash label
    (``EqualIgnoreHash``): it is the new ReplicaSet, scaled 1 → 3 at 0 (its revision, absent
    from its annotations, becomes 1), and no other ReplicaSet is created."""
    labels = {**D_LABELS, "pod-template-hash": "5d4588bb9d"}
    rs = replica_set(labels=labels, image="agnhost:2.4")
    rs["metadata"]["annotations"] = {}
    r, state = run(load(rs, deployment(replicas=3)))
    d = state.controllers.deployments[1].d
    assert scaling(r) == [(0.0, f"Scaled up replica set {RS} from 1 to 3")]
    assert [x.name for x in d.rs] == [RS] and d.revision == 1
    assert [times(r, "Scheduled", f"pod/{RS}-{i}") for i in range(3)] == [[0.0]] * 3
    assert not [e for e in r.events if e.object.startswith(f"pod/{DEPLOY}")]
    assert r.rollouts == []
    assert series(r, f"workload.{DEPLOY}.ready")[2:4] == [3, 3]


@pytest.mark.parametrize(
    "meta",
    [
        {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other", "uid": "u1",
                              "controller": True}]},
        {"ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Rollout", "name": DEPLOY, "uid": "u2",
                              "controller": True}]},
        {"namespace": "elsewhere"},
    ],
)  # fmt: skip
def test_a_replica_set_controlled_by_another_or_elsewhere_is_left_alone(meta: dict[str, Any]) -> None:
    """Controlled by another object (ClaimObject: "not owned by us": ignore it), or in another
    namespace (not listed): it runs on its own, and the Deployment starts with its own
    ReplicaSet at full size, as a Deployment with no ReplicaSet to claim does."""
    r, state = run(load(replica_set(meta=meta), deployment()))
    assert scaling(r) == [] and r.rollouts == []
    assert [x.name for x in state.controllers.deployments[1].d.rs] == [
        state.controllers.deployments[1].name_of[0]
    ]
    assert times(r, "Killing") == []
    assert series(r, f"workload.{RS}.current")[-1] == 1 and series(r, f"workload.{DEPLOY}.current")[-1] == 1


def test_labels_that_do_not_match_are_not_claimed_but_an_owner_reference_to_it_is() -> None:
    """The selector is matched against the ReplicaSet's own labels (not its template's): other
    labels, no claim. A non-controller ownerReference does not stop an adoption, and a
    controller reference to this Deployment makes it the Deployment's already."""
    other = replica_set(labels={"name": "else"})
    r, _ = run(load(other, deployment()))
    assert scaling(r) == []
    plain_ref = {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u3"}]}
    mine = {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": DEPLOY, "uid": "u4",
                                 "controller": True}]}  # fmt: skip
    for meta in (plain_ref, mine):
        r, _ = run(load(replica_set(meta=meta), deployment()))
        assert [m for _, m in scaling(r)][1] == f"Scaled down replica set {RS} from 1 to 0"


def test_scaling_an_adopted_replica_set_is_refused() -> None:
    with pytest.raises(InputError, match=f"ReplicaSet {RS} is Deployment {DEPLOY}'s") as e:
        load(
            replica_set(),
            deployment(),
            actions=[{"kind": "scale", "workload": RS, "at": "5s", "replicas": 3}],
        )
    assert "\n" not in str(e.value)


def test_rollout_undo_goes_back_to_the_adopted_replica_set() -> None:
    """kubectl rollout undo at 10 s (``deploymentRevision``: the second-highest revision among
    the ReplicaSets, here the adopted ...832): the adopted ReplicaSet is the new one again and
    takes the next revision (...834, ``getNewReplicaSet``); it grows 0 → 1 at once (surge 1), a
    new pod of it is Ready at 12 s and the Deployment's first ReplicaSet goes 1 → 0 then."""
    r, state = run(
        load(replica_set(), deployment(), actions=[{"kind": "rollback", "workload": DEPLOY, "at": "10s"}])
    )
    d = state.controllers.deployments[1].d
    first = state.controllers.deployments[1].name_of[0]
    assert scaling(r)[2:] == [
        (10.0, f"Scaled up replica set {RS} from 0 to 1"),
        (12.0, f"Scaled down replica set {first} from 1 to 0"),
    ]
    assert times(r, "Scheduled", f"pod/{RS}-1") == [10.0] and times(r, "PodReady", f"pod/{RS}-1") == [12.0]
    new = d.new_rs()
    assert new is not None and (new.name, new.revision, d.revision) == (
        RS,
        3546343826724305834,
        3546343826724305834,
    )
    adopt, back = r.rollouts
    assert (adopt.end_ms, back.action, back.revision, back.origin, back.start_ms, back.end_ms) == (
        3000, "rollback", RS, f"adopted ReplicaSet {RS}", 10_000, 12_000,
    )  # fmt: skip


def test_a_rollout_to_the_adopted_template_reuses_it() -> None:
    """A rollout whose template is the adopted ReplicaSet's (FindNewReplicaSet → EqualIgnoreHash)
    brings it back rather than creating another ReplicaSet."""
    patch = {
        "metadata": {"labels": {"pod": "httpd"}},
        "spec": {"containers": [{"name": "app", "image": "httpd:2.4"}]},
    }
    r, state = run(
        load(
            replica_set(),
            deployment(),
            actions=[{"kind": "rollout", "workload": DEPLOY, "at": "10s", "template": patch}],
        )
    )
    assert scaling(r)[2] == (10.0, f"Scaled up replica set {RS} from 0 to 1")
    assert len(state.controllers.deployments[1].d.rs) == 2


def test_the_lab_refuses_an_adoption() -> None:
    from probesim.lab.rollout import check_actions

    s = load(replica_set(), deployment())
    for w in s.workloads:
        with pytest.raises(InputError, match=f"Deployment {DEPLOY} adopts ReplicaSet {RS}"):
            check_actions(s, [w], 12)


@settings(max_examples=40, deadline=None)
@given(
    old=st.integers(0, 6),
    replicas=st.integers(1, 6),
    surge=st.integers(0, 2),
    unavailable=st.integers(0, 2),
)
def test_any_rollout_from_an_adopted_replica_set_ends_on_the_new_one(
    old: int, replicas: int, surge: int, unavailable: int
) -> None:
    """Whatever the sizes and fenceposts: the adopted ReplicaSet ends at 0 and the new one at the
    Deployment's replicas, the ReplicaSets' sizes never add up to more than the larger of what
    the adopted one had and replicas + maxSurge (NewRSNewReplicas creates nothing beyond it,
    reconcileOldReplicaSets only scales down), and the adopted one never grows."""
    if surge == 0 and unavailable == 0:
        unavailable = 1  # the API server refuses both 0
    strategy = {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    r, state = run(load(replica_set(replicas=old), deployment(replicas, strategy=strategy), duration="40s"))
    d = state.controllers.deployments[1].d
    new = d.new_rs()
    assert new is not None and new.name != RS
    mine, theirs = series(r, f"replicaset.{new.name}.replicas"), series(r, f"replicaset.{RS}.replicas")
    assert (mine[-1], theirs[-1]) == (replicas, 0)
    assert all(a + b <= max(old, replicas + surge) for a, b in zip(mine, theirs, strict=True))
    assert all(b <= a for a, b in itertools.pairwise(theirs))
    assert series(r, f"workload.{DEPLOY}.ready")[-1] == replicas
    if old:
        (ro,) = r.rollouts
        assert ro.outcome == "complete"
