"""Rollouts end to end in the engine (issue 15): the Deployment controller's moves at their
exact times, what a rollout costs in failed requests, a release stalled by its progress deadline
and rolled back, proportional scaling, pause and resume, Recreate, readiness gates set by an
action, and a new template's fresh crash-loop back-off."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.manifests.scenario import load_scenario, scenario_from_text
from probesim.results import Result
from probesim.scenarios import find
from tests.builders import builtin, http, scenario, series, times


def image(tag: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "app", "image": f"example.com/app:{tag}"}]}}


def rollout(at: str, tag: str = "2", **kw: Any) -> dict[str, Any]:
    return {"kind": "rollout", "workload": "web", "at": at, "template": image(tag), **kw}


def scaling(r: Result) -> list[tuple[float, str]]:
    return [(e.time_ms / 1000, e.message) for e in r.events_for("deployment/web", "ScalingReplicaSet")]


def names(r: Result) -> tuple[str, str]:
    """The old and the new ReplicaSet's names (the first rollout's)."""
    rs = [e.message.split()[4] for e in r.events_for("deployment/web", "ScalingReplicaSet")]
    new = r.rollouts[0].revision
    old = next(x for x in rs if x != new)
    return old, new


READY_1S = {"readinessProbe": http(periodSeconds=1)}


def test_rolling_update_moves_at_exact_times() -> None:
    """4 replicas at 25 %/25 % (surge 1, unavailable 1), pods answering 3 s after they start:
    new pods come up by two, old ones go as new ones become available."""
    r = simulate(
        scenario(replicas=4, probes=READY_1S, behavior={"start": "3s"}, duration="30s",
                 spec={"actions": [rollout("10s")]})
    )  # fmt: skip
    old, new = names(r)
    assert scaling(r) == [
        (10.0, f"Scaled up replica set {new} from 0 to 1"),
        (10.0, f"Scaled down replica set {old} from 4 to 3"),
        (10.0, f"Scaled up replica set {new} from 1 to 2"),
        (13.0, f"Scaled down replica set {old} from 3 to 1"),
        (13.0, f"Scaled up replica set {new} from 2 to 4"),
        (16.0, f"Scaled down replica set {old} from 1 to 0"),
    ]
    assert times(r, "Killing", "pod/web-0") == [10.0]
    assert times(r, "Scheduled", f"pod/{new}-3") == [13.0]
    (ro,) = r.rollouts
    assert (ro.action, ro.revision, ro.start_ms, ro.end_ms, ro.outcome) == (
        "rollout",
        new,
        10_000,
        16_000,
        "complete",
    )
    assert (ro.min_ready, ro.min_available) == (3, 3)  # replicas − maxUnavailable
    assert min(series(r, "workload.web.ready")[10:]) == 3
    assert max(series(r, "workload.web.current")) == 5  # replicas + maxSurge
    # kubectl describe's "unavailable": the ReplicaSets' replicas (3 + 2) − available (3).
    assert series(r, "workload.web.unavailable")[9:17] == [0, 2, 2, 2, 2, 2, 2, 0]
    doc = r.to_json(series=False)["summary"]["rollouts"][0]
    assert (doc["outcome"], doc["seconds"], doc["replicaSet"]) == ("complete", 6.0, new)


def test_readiness_before_warm_fails_requests_during_the_rollout() -> None:
    """Readiness passes at 3 s but '/' answers 503 until 8 s after start: every rollout sends
    traffic to cold pods; a readiness probe on '/' (which reflects it) loses nothing."""
    cold = {
        "start": "3s",
        "episodes": [{"kind": "errors", "after": "0s", "for": "8s", "status": 503, "paths": ["/"]}],
    }
    common: dict[str, Any] = {
        "replicas": 3, "duration": "50s", "traffic": [{"path": "/", "rate": 30, "start": "20s"}],
        "spec": {"actions": [rollout("20s", behavior={"containers": {"app": cold}})]},
    }  # fmt: skip
    early = simulate(
        scenario(probes={"readinessProbe": http("/healthz", periodSeconds=1)}, behavior=cold, **common)
    )
    (ro,) = early.rollouts
    # Three new pods, one at a time (surge 1, unavailable 0), each Ready 3 s after its creation
    # (20, 23, 26 s) and cold 5 s more; 30 requests a second over the 3 Ready pods: 10 a second
    # per cold one. 23-25 s: 1 cold (30); 26-27 s: 2 (40); 28 s: 1 (10); 29 s: 2 (20).
    assert ro.end_ms == 29_000
    assert ro.failed == {"error_status": 100}
    # After it ends the last two are still cold: 30 s: 2 (20), 31-33 s: 1 (30).
    assert early.route("/").failed["error_status"] == 150
    right = simulate(scenario(probes={"readinessProbe": http("/", periodSeconds=1)}, behavior=cold, **common))
    assert right.rollouts[0].failed == {} and right.route("/").failed_total == 0
    assert right.rollouts[0].end_ms is not None and ro.end_ms is not None
    assert right.rollouts[0].end_ms > ro.end_ms  # safer, and slower


def test_broken_release_stalls_at_its_deadline_and_is_rolled_back() -> None:
    """v2 never becomes Ready: with surge 1 and unavailable 0 the old pods stay; the deadline
    (30 s after the last progress, the new pod's appearance at 10 s) passes at 41 s; the
    rollback at 60 s scales the broken ReplicaSet to 0 at once (its pod is not available)."""
    broken = {"paths": {"/healthz": 500}}
    r = simulate(
        scenario(
            replicas=2, probes=READY_1S, duration="70s",
            workload_spec={"progressDeadlineSeconds": 30,
                           "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}},
            spec={"actions": [rollout("10s", behavior={"containers": {"app": broken}}),
                              {"kind": "rollback", "workload": "web", "at": "60s"}]},
        )
    )  # fmt: skip
    new, old = r.rollouts[0].revision, r.rollouts[1].revision
    assert scaling(r) == [
        (10.0, f"Scaled up replica set {new} from 0 to 1"),
        (60.0, f"Scaled down replica set {new} from 1 to 0"),
    ]
    (stall,) = r.events_for("deployment/web", "ProgressDeadlineExceeded")
    assert stall.time_ms == 41_000 and stall.type == "Warning"
    assert (
        stall.message
        == f'Deployment condition Progressing changed to False: ReplicaSet "{new}" has timed out progressing.'
    )
    first, back = r.rollouts
    assert (first.outcome, first.stalled_ms, first.superseded_ms) == ("superseded", 41_000, 60_000)
    assert (back.action, back.revision, back.start_ms, back.end_ms) == ("rollback", old, 60_000, 60_000)
    assert min(series(r, "workload.web.ready")) == 2  # maxUnavailable 0: the old pods stayed


def test_scaled_mid_rollout_proportionally() -> None:
    """The documentation's example in the engine: 10 replicas, surge 3, unavailable 2, a new
    version that never becomes Ready (old 8, new 5); scaled to 15: old 11, new 7."""
    r = simulate(
        scenario(
            replicas=10, probes=READY_1S, duration="40s",
            workload_spec={"strategy": {"rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}},
            spec={"actions": [rollout("10s", behavior={"containers": {"app": {"paths": {"/healthz": 500}}}}),
                              {"kind": "scale", "workload": "web", "at": "30s", "replicas": 15}]},
        )
    )  # fmt: skip
    old, new = names(r)
    assert scaling(r)[-2:] == [
        (30.0, f"Scaled up replica set {old} from 8 to 11"),
        (30.0, f"Scaled up replica set {new} from 5 to 7"),
    ]
    assert series(r, "workload.web.desired")[30] == 15


def test_scaled_down_mid_rollout_never_scales_an_old_replica_set_up() -> None:
    """Issue 22 item 3. Old 8, new 5 (never Ready), scaled to 5: proportionally old 5, new 3.
    The next sync still sees the old ReplicaSet's 8 available pods: cleanupUnhealthyReplicas
    (pkg/controller/deployment/rolling.go) refuses to scale it from 5 up ("got invalid request
    to scale down") and the sync fails; with the fresh status the old one goes to 3 and the new
    one back to 5. probesim scaled the old one 5 → 8 → 3 before."""
    r = simulate(
        scenario(
            replicas=10, probes=READY_1S, duration="35s",
            workload_spec={"strategy": {"rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}},
            spec={"actions": [rollout("10s", behavior={"containers": {"app": {"paths": {"/healthz": 500}}}}),
                              {"kind": "scale", "workload": "web", "at": "30s", "replicas": 5}]},
        )
    )  # fmt: skip
    old, new = names(r)
    assert [m for t, m in scaling(r) if t == 30] == [
        f"Scaled down replica set {old} from 8 to 5",
        f"Scaled down replica set {new} from 5 to 3",
        f"Scaled down replica set {old} from 5 to 3",
        f"Scaled up replica set {new} from 3 to 5",
    ]
    assert series(r, "workload.web.current")[30] == 8


def test_paused_rollout_waits_for_resume() -> None:
    r = simulate(
        scenario(
            replicas=2, probes=READY_1S, duration="30s",
            spec={"actions": [{"kind": "pause", "workload": "web", "at": "5s"}, rollout("10s"),
                              {"kind": "resume", "workload": "web", "at": "20s"}]},
        )
    )  # fmt: skip
    assert scaling(r)[0][0] == 20.0
    (ro,) = r.rollouts
    assert (ro.action, ro.start_ms) == ("resume", 20_000)


def test_recreate_stops_every_old_pod_before_any_new_one() -> None:
    r = simulate(
        scenario(
            replicas=2, probes=READY_1S, duration="30s", behavior={"shutdown": "4s"},
            workload_spec={"strategy": {"type": "Recreate"}}, spec={"actions": [rollout("10s")]},
        )
    )  # fmt: skip
    old, new = names(r)
    assert scaling(r) == [
        (10.0, f"Scaled down replica set {old} from 2 to 0"),
        (14.0, f"Scaled up replica set {new} from 0 to 2"),
    ]
    assert min(series(r, "workload.web.ready")[10:14]) == 0


def test_readiness_gate_set_false_then_true_by_actions() -> None:
    r = simulate(
        scenario(
            replicas=1, duration="20s", pod_spec={"readinessGates": [{"conditionType": "lb/ready"}]},
            spec={"behavior": {"web": {"readinessGates": {"lb/ready": "2s"}}},
                  "actions": [{"kind": "readinessGate", "workload": "web", "condition": "lb/ready", "status": False, "at": "5s"},
                              {"kind": "readinessGate", "pod": "web-0", "condition": "lb/ready", "status": True, "at": "9s"}]},
        )
    )  # fmt: skip
    assert series(r, "workload.web.ready") == [0, 0] + [1] * 3 + [0] * 4 + [1] * 11


def test_a_new_template_gets_a_fresh_back_off() -> None:
    """v1 crashes 1 s after every start and backs off; v2's pods are new containers (a new spec
    hash): they start when created, without the old wait (reference/kubelet.md §3.4)."""
    r = simulate(
        scenario(
            replicas=1, probes=READY_1S, duration="60s",
            behavior={"episodes": [{"kind": "crash", "after": "1s"}]},
            spec={"actions": [rollout("40s", behavior={"containers": {"app": {}}})]},
        )
    )  # fmt: skip
    _, new = names(r)
    assert times(r, "BackOff", "pod/web-0")  # v1 was crash-looping
    assert times(r, "Started", f"pod/{new}-0") == [40.0]
    assert times(r, "BackOff", f"pod/{new}-0") == []
    assert r.rollouts[0].end_ms == 40_000  # Ready at once; the crash-looping pod goes at once


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"kind": "rollout", "workload": "db", "at": "1s"}, "no workload named 'db'; known: web"),
        ({"kind": "rollback", "workload": "web", "at": "1s"}, 'no rollout history found for deployment "web"'),
        ({"kind": "rollout", "workload": "web", "at": "1s", "template": image("1")}, "leaves the pod template as it is"),
        ({"kind": "rollout", "workload": "web", "at": "1s",
          "template": {"spec": {"containers": [{"name": "app", "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": -1}}]}}},
         "periodSeconds"),
        ({"kind": "rollout", "workload": "web", "at": "1s", "template": image("2"),
          "behavior": {"containers": {"db": {"start": "1s"}}}}, "the rolled-out template has no container 'db'"),
        ({"kind": "readinessGate", "workload": "web", "condition": "x", "status": True, "at": "1s"}, "declare no readiness gate 'x'"),
    ],
)  # fmt: skip
def test_action_errors_name_the_line(action: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as e:
        scenario(spec={"actions": [action]})
    assert message in str(e.value)
    assert e.value.line is not None and e.value.line > 1


def statefulset(**kw: Any) -> Result:
    spec = {"updateStrategy": kw.pop("update_strategy")} if "update_strategy" in kw else {}
    return simulate(
        scenario(
            kind="StatefulSet", replicas=3, probes=READY_1S, behavior={"start": "2s"}, duration="30s",
            workload_spec={**spec, **kw.pop("workload_spec", {})}, spec={"actions": [rollout("10s")]}, **kw,
        )
    )  # fmt: skip


def test_statefulset_updates_from_the_highest_ordinal_down() -> None:
    """Each pod is deleted, comes back at the new revision once gone (next step), and the next
    goes once it is Ready (Ready 2 s after its start, seen by the controller a step later)."""
    r = statefulset()
    assert [(t, o) for t, o in ((e.time_ms / 1000, e.object) for e in r.events_for(reason="Killing"))] == [
        (10.0, "pod/web-2"), (14.0, "pod/web-1"), (18.0, "pod/web-0"),
    ]  # fmt: skip
    assert times(r, "Scheduled", "pod/web-2") == [6.0, 11.0]  # OrderedReady at first: 0, 3, 6 s
    (ro,) = r.rollouts
    assert (ro.start_ms, ro.end_ms, ro.min_ready) == (10_000, 21_000, 2)


def test_a_statefulsets_rollout_is_named_as_kubectl_names_it() -> None:
    # kubectl rollout status statefulset/web: the run's table said deployment/web for every kind
    # (the expert review's rabbitmq StatefulSet).
    from rich.console import Console

    from probesim.report.terminal import render_result

    console = Console(width=200, record=True)
    render_result(statefulset(), console, events=False)
    text = console.export_text()
    assert "statefulset/web rollout" in text and "deployment/web" not in text


def test_statefulset_partition_leaves_lower_ordinals() -> None:
    r = statefulset(update_strategy={"rollingUpdate": {"partition": 2}})
    assert [e.object for e in r.events_for(reason="Killing")] == ["pod/web-2"]
    assert r.rollouts[0].end_ms == 13_000


def test_statefulset_max_unavailable_and_on_delete() -> None:
    # Two at once; OrderedReady still recreates them in order (web-1 at 11 s, web-2 at 14 s),
    # and web-0 goes once both are back.
    r = statefulset(update_strategy={"rollingUpdate": {"maxUnavailable": 2}})
    assert [(e.time_ms / 1000, e.object) for e in r.events_for(reason="Killing")] == [
        (10.0, "pod/web-2"), (10.0, "pod/web-1"), (17.0, "pod/web-0"),
    ]  # fmt: skip
    assert times(r, "Scheduled", "pod/web-1")[1:] == [11.0] and times(r, "Scheduled", "pod/web-2")[1:] == [
        14.0
    ]
    r = statefulset(update_strategy={"type": "OnDelete"})
    assert r.events_for(reason="Killing") == [] and r.rollouts[0].end_ms is None


def test_builtin_ready_before_warm() -> None:
    """Pods Ready at 66 s (two) and 71 s (two), cold until 20 s after their start (80, 86 s), at
    40 requests a second: 66-70 s two of three Ready pods are cold (133), 71 s all four (40) —
    173 during the rollout; 72-79 s all four (320) and 80-85 s two (120) after it: 613."""
    r = simulate(builtin("rollout-ready-before-warm"))
    (ro,) = r.rollouts
    assert (ro.start_ms, ro.end_ms, ro.min_ready, ro.min_available) == (60_000, 71_000, 3, 3)
    assert ro.failed == {"error_status": 173}
    assert r.route("/").failed_total == r.route("/").failed["error_status"] == 613


def test_builtin_stalled_rollback() -> None:
    r = simulate(builtin("rollout-stalled-rollback"))
    broken, back = r.rollouts
    assert (broken.stalled_ms, broken.superseded_ms, broken.min_ready) == (91_000, 120_000, 3)
    assert (back.action, back.start_ms, back.end_ms, back.min_ready) == ("rollback", 120_000, 120_000, 4)
    assert r.route("/").failed_total == 0


def test_hpa_scales_the_deployment_mid_rollout() -> None:
    """The HPA scales the Deployment, not a ReplicaSet: at 30 s it asks for 4 while a release
    that never becomes Ready is rolling out (old 2, new 1, surge 1). The Deployment controller
    shares the 2 extra replicas (allowed 4 + 1 = 5 of 3): old round(2 × 5 / 3) − 2 = 1, new
    round(1 × 5 / 3) − 1 = 1."""
    hpa_doc = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 6,
            "metrics": [{"type": "Resource",
                         "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
        },
    }  # fmt: skip
    containers = [
        {"name": "app", "ports": [{"containerPort": 8080}], "resources": {"requests": {"cpu": "1"}},
         "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1}}
    ]  # fmt: skip
    r = simulate(
        scenario(
            replicas=2, containers=containers, duration="40s", manifests=[hpa_doc],
            behavior={"routes": {"/": {"cpu": "10ms"}}, "variability": 0}, traffic=[{"rate": 200}],
            spec={"actions": [rollout("20s", behavior={"containers": {"app": {"paths": {"/healthz": 500}}}})],
                  "cluster": {"podStartDelay": "5s"}},
        )
    )  # fmt: skip
    old, new = names(r)
    assert times(r, "SuccessfulRescale") == [30]  # the first sync with a full metric window
    assert scaling(r) == [
        (20.0, f"Scaled up replica set {new} from 0 to 1"),
        (30.0, f"Scaled up replica set {old} from 2 to 3"),
        (30.0, f"Scaled up replica set {new} from 1 to 2"),
    ]
    assert series(r, "workload.web.desired")[29:31] == [2, 4]


def test_builtin_slow_release_killed_or_given_a_startup_probe() -> None:
    killed = simulate(builtin("rollout-slow-release-killed"))
    (ro,) = killed.rollouts
    assert (ro.outcome, ro.stalled_ms, ro.min_ready) == (
        "stalled",
        151_000,
        3,
    )  # 30 s + 120 s, strictly after
    new = ro.revision
    assert times(killed, "Killing", f"pod/{new}-0")[:2] == [60.0, 90.0]  # liveness, 30 s after each start
    started = simulate(builtin("rollout-slow-release-startup-probe"))
    (ro,) = started.rollouts
    assert (ro.outcome, ro.start_ms, ro.end_ms, ro.min_ready) == ("complete", 30_000, 130_000, 3)
    assert started.workload("web").total_restarts == 0


def test_a_deployment_created_paused_has_no_pods_until_resumed() -> None:
    r = simulate(
        scenario(replicas=2, duration="20s", workload_spec={"paused": True},
                 spec={"actions": [{"kind": "resume", "workload": "web", "at": "10s"}]})
    )  # fmt: skip
    (only,) = scaling(r)
    assert only[0] == 10.0 and only[1].endswith("from 0 to 2")
    assert times(r, "Scheduled") == [10.0, 10.0]


def test_builtin_max_unavailable_under_load() -> None:
    """One pod less at 90 % CPU tips the 3 survivors over (their probes time out waiting for a
    worker behind the queue: restarts, requests refused by full queues and lost with the
    restarted pods); each pod restarted comes back to the whole load alone and is restarted in
    turn, so the service never recovers after the rollout's 72 s (before issue 45 counted what
    a pool's requests at work hold, the pods came back together: 12 restarts, 4,952 failed). One
    pod more (maxSurge 1, maxUnavailable 0) does not tip them."""
    b = find("rollout-max-unavailable-under-load")
    assert b is not None
    r = simulate(load_scenario(str(b.path)))
    (ro,) = r.rollouts
    assert (ro.outcome, ro.min_ready, ro.end_ms) == ("complete", 1, 132_000)
    failed = r.route("/").failed
    assert (failed["rejected"], failed["killed"], r.route("/").failed_total, r.route("/").offered) == (
        3_924,
        7_526,
        33_050,
        51_000,
    )
    assert r.workload("web").total_restarts == 25
    assert max(series(r, "workload.web.ready")[180:]) == 1  # never recovers
    text = b.path.read_text().replace("{maxSurge: 0, maxUnavailable: 1}", "{maxSurge: 1, maxUnavailable: 0}")
    safe = simulate(scenario_from_text(text, "surge.yaml", b.path.parent))
    assert (safe.route("/").failed_total, safe.rollouts[0].end_ms) == (0, 103_000)


def test_revision_history_limit_zero_leaves_nothing_to_roll_back_to() -> None:
    r = simulate(
        scenario(
            replicas=1, probes=READY_1S, duration="30s", workload_spec={"revisionHistoryLimit": 0},
            spec={"actions": [rollout("5s"), {"kind": "rollback", "workload": "web", "at": "20s"}]},
        )
    )  # fmt: skip
    (ro,) = r.rollouts
    assert ro.end_ms == 5_000
    (warning,) = r.events_for("deployment/web", "RollbackRevisionNotFound")
    assert warning.time_ms == 20_000 and "revisionHistoryLimit" in warning.message
    assert len(scaling(r)) == 2  # nothing moved at 20 s


def test_min_ready_seconds_paces_the_rollout() -> None:
    """minReadySeconds 5: a new pod is available once Ready + 5 s is strictly before now
    (IsPodAvailable, pkg/api/v1/pod/util.go), and the ReplicaSet controller sees it when it
    requeues the set MinReadySeconds + 1 s after the pod turned Ready (enqueueRSAfter in
    updatePod, pkg/controller/replicaset/replica_set.go): Ready at 12 s, available at 18 s; the
    second Ready at 20 s, available at 26 s; only then may an old one go (surge 1, unavailable
    0). Issue 22 item 1: each step came 1 s early before (17, 24)."""
    r = simulate(
        scenario(
            replicas=2, probes=READY_1S, behavior={"start": "2s"}, duration="30s",
            workload_spec={"minReadySeconds": 5, "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}},
            spec={"actions": [rollout("10s")]},
        )
    )  # fmt: skip
    assert [t for t, _ in scaling(r)] == [10.0, 18.0, 18.0, 26.0]
    assert r.rollouts[0].end_ms == 26_000


def test_replica_set_sizes_are_series() -> None:
    """Each ReplicaSet's spec.replicas over time (``replicaset.<name>.replicas``), as the
    ScalingReplicaSet events move it; the lab records and compares the same series."""
    r = simulate(
        scenario(replicas=4, probes=READY_1S, behavior={"start": "3s"}, duration="30s",
                 spec={"actions": [rollout("10s")]})
    )  # fmt: skip
    old, new = names(r)

    def at(name: str, s: float) -> int:
        i = int(s * 1000) // r.step_ms
        return int(r.series[f"replicaset.{name}.replicas"][i])

    assert [at(old, s) for s in (0, 9.9, 10, 12.9, 13, 15.9, 16, 29)] == [4, 4, 3, 3, 1, 1, 0, 0]
    assert [at(new, s) for s in (0, 9.9, 10, 12.9, 13, 29)] == [0, 0, 2, 2, 4, 4]


def test_undo_after_a_failed_to_revision_goes_to_the_previous_existing_revision() -> None:
    """kubectl's deploymentRevision / previousReplicaSet (staging/src/k8s.io/kubectl/pkg/
    polymorphichelpers/rollback.go): undo takes the second-highest revision among the
    ReplicaSets that still exist. With revisionHistoryLimit 1, revision 1 is gone once v3 is
    out, so --to-revision 1 at 20 s fails and changes nothing; the plain undo at 25 s then goes
    to revision 2 (v2), not to the current v3 as if the failed undo had made v1 revision 4."""
    r = simulate(
        scenario(
            replicas=1, probes=READY_1S, duration="35s", workload_spec={"revisionHistoryLimit": 1},
            spec={"actions": [
                rollout("5s", "2"), rollout("10s", "3"),
                {"kind": "rollback", "workload": "web", "at": "20s", "toRevision": 1},
                {"kind": "rollback", "workload": "web", "at": "25s"},
            ]},
        )
    )  # fmt: skip
    (warning,) = r.events_for("deployment/web", "RollbackRevisionNotFound")
    assert warning.time_ms == 20_000
    v2 = r.rollouts[0].revision
    ups = [(s, m.split()[4]) for s, m in scaling(r) if m.startswith("Scaled up") and s >= 25]
    assert ups and ups[0] == (25.0, v2)


def test_progress_counts_a_deleted_old_pod_in_the_same_instant() -> None:
    """Issue 22 item 2. The first new pod is Ready at 12 s and the same sync scales the old
    ReplicaSet down: its pod being deleted leaves the counts at once (IsPodActive,
    DeletionTimestamp == nil, pkg/controller/controller_utils.go), so the status change
    (DeploymentProgressing, pkg/controller/deployment/util/deployment_util.go) is progress at
    12 s. The second new pod never becomes Ready (500 from 13 s), and the deadline of 10 s is
    from.Add(delta).Before(now) with the Deployment requeued after + 1 s (DeploymentTimedOut,
    progress.go): it fires at 23 s (it came at 24 s, the deletion counted a step late)."""
    broken = {"start": "2s", "episodes": [{"kind": "errors", "at": "13s", "for": "100s", "status": 500}]}
    r = simulate(
        scenario(
            replicas=2, probes=READY_1S, behavior={"start": "2s"}, duration="40s",
            workload_spec={"progressDeadlineSeconds": 10,
                           "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}},
            spec={"actions": [rollout("10s", behavior={"containers": {"app": broken}})]},
        )
    )  # fmt: skip
    assert [t for t, _ in scaling(r)] == [10.0, 12.0, 12.0]
    assert times(r, "ProgressDeadlineExceeded", "deployment/web") == [23]
    assert r.rollouts[0].stalled_ms == 23_000
