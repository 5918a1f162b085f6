"""The pod templates a workload goes through: strategic-merge patches, restart annotations,
rollback targets in the Deployment's revision numbering, and what kubectl refuses."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine.controllers.templates import RESTARTED_AT, PlanError, plan, strategic_merge
from probesim.model.base import Model
from probesim.model.scenario import Pause, Restart, Resume, Rollback, Rollout, Scenario
from tests.builders import http, scenario


def with_actions(s: Scenario, *actions: Any) -> Scenario:
    return s.model_copy(update={"spec": s.spec.model_copy(update={"actions": actions})})


def act(kind: str, at: int, **kw: Any) -> Any:
    classes: dict[str, type[Model]] = {
        "restart": Restart,
        "rollback": Rollback,
        "pause": Pause,
        "resume": Resume,
    }
    return classes[kind].model_validate({"kind": kind, "workload": "web", "at": f"{at}ms", **kw})


def image(tag: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "app", "image": f"example.com/app:{tag}"}]}}


def rollout(at: int, tag: str, **kw: Any) -> Rollout:
    return Rollout.model_validate(
        {"kind": "rollout", "workload": "web", "at": f"{at}ms", "template": image(tag), **kw}
    )


def test_strategic_merge_by_key_and_null() -> None:
    base = {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "a:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                },
                {"name": "side", "image": "s:1"},
            ],
            "terminationGracePeriodSeconds": 30,
        }
    }
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "a:2",
                    "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                },
                {"name": "side", "$patch": "delete"},
                {"name": "new", "image": "n:1"},
            ],
            "terminationGracePeriodSeconds": None,
        }
    }
    assert strategic_merge(base, patch) == {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "a:2",
                    "env": [
                        {"name": "A", "value": "1"},
                        {"name": "B", "value": "3"},
                        {"name": "C", "value": "4"},
                    ],
                },
                {"name": "new", "image": "n:1"},
            ]
        }
    }


def test_strategic_merge_needs_the_merge_key() -> None:
    with pytest.raises(ValueError, match="merge key 'name'"):
        strategic_merge({"containers": [{"name": "a"}]}, {"containers": [{"image": "x"}]})


def test_rollout_patches_the_template_and_keeps_probes() -> None:
    s = with_actions(scenario(probes={"readinessProbe": http()}), rollout(60_000, "2"))
    p = plan(s, "web")
    assert len(p.revisions) == 2 and p.template_of == {0: 1}
    new = p.revisions[1].workload.pod_spec.containers[0]
    assert new.image == "example.com/app:2"
    assert new.readiness_probe is not None and new.readiness_probe.http_get is not None
    assert p.revisions[1].origin == "rollout at 1m"


def test_new_behaviour_or_the_previous_one() -> None:
    s = with_actions(
        scenario(), rollout(1000, "2", behavior={"containers": {"app": {"start": "40s"}}}), rollout(2000, "3")
    )
    p = plan(s, "web")
    assert p.revisions[1].behavior.containers["app"].start == 40_000
    assert p.revisions[2].behavior.containers["app"].start == 40_000  # carried over


def test_restart_adds_kubectl_annotation() -> None:
    s = with_actions(scenario(), act("restart", 90_000))
    p = plan(s, "web")
    ann = p.revisions[1].workload.spec.template.metadata.annotations
    assert ann == {RESTARTED_AT: "2026-01-01T00:01:30Z"}


def test_rollback_to_previous_and_named_revision() -> None:
    s = with_actions(
        scenario(),
        rollout(1000, "2"),  # revision 2
        rollout(2000, "3"),  # revision 3
        act("rollback", 3000),  # back to 2 (template 1), now revision 4
        act("rollback", 4000, toRevision=1),
        act("rollback", 5000),  # previous: template 1 (revision 4)
    )
    p = plan(s, "web")
    assert len(p.revisions) == 3
    assert p.template_of == {0: 1, 1: 2, 2: 1, 3: 0, 4: 1}


def test_rollback_to_a_revision_that_is_not_there() -> None:
    s = with_actions(scenario(), act("rollback", 1000, toRevision=5))
    with pytest.raises(
        PlanError,
        match=r"unable to find specified revision 5 in history \(revisions then: 1 \(the manifest's\)\)",
    ):
        plan(s, "web")
    s = with_actions(scenario(), act("rollback", 1000))
    with pytest.raises(PlanError, match='no rollout history found for deployment "web"'):
        plan(s, "web")


def test_kubectl_refusals() -> None:
    s = with_actions(scenario(), rollout(1000, "1"))  # the builder's image is example.com/app:1
    with pytest.raises(PlanError, match="leaves the pod template as it is"):
        plan(s, "web")
    s = with_actions(
        scenario(),
        act("pause", 0),
        rollout(1000, "2"),
        act("rollback", 2000),
    )
    with pytest.raises(PlanError, match="roll back a paused Deployment"):
        plan(s, "web")
    s = with_actions(scenario(), act("resume", 0))
    with pytest.raises(PlanError, match="Deployment web is not paused at 0s"):
        plan(s, "web")
    s = with_actions(scenario(kind="ReplicaSet"), rollout(1000, "2"))
    with pytest.raises(PlanError, match="a ReplicaSet does not roll out"):
        plan(s, "web")


def test_templates_changed_while_paused_get_one_revision_on_resume() -> None:
    s = with_actions(
        scenario(),
        act("pause", 0),
        rollout(1000, "2"),
        rollout(2000, "3"),
        act("resume", 3000),
        act("rollback", 4000),
    )
    p = plan(s, "web")
    # app:2 never got a ReplicaSet: the revisions are 1 (app:1) and 2 (app:3); undo goes to app:1.
    assert p.template_of[4] == 0
