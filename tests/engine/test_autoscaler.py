"""The HPA algorithm (reference/kubelet.md §6), on hand-built pod views and in a run."""

from __future__ import annotations

from typing import Any

from probesim.engine.autoscaler import Autoscaler, PodView, desired_from_metrics, group
from probesim.model.kubernetes import HorizontalPodAutoscaler
from tests.builders import run, series, times

T = 10 * 60_000  # well past every pod's CPU initialization period


def pod(
    usage: float | None,
    request: float = 100,
    ready: bool = True,
    start: int = 0,
    transition: int = 0,
    pending: bool = False,
) -> PodView:
    return PodView(
        request_m=request,
        usage_m=usage,
        pending=pending,
        deleting=False,
        ready=ready,
        transition=transition,
        start=start,
    )


def hpa(**spec: Any) -> HorizontalPodAutoscaler:
    base = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 20}
    metric = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
    }
    return HorizontalPodAutoscaler.model_validate(
        {"metadata": {"name": "web"}, "spec": {**base, "metrics": [metric], **spec}}
    )


def test_ratio_uses_truncated_integer_utilization_and_tolerance() -> None:
    # §6.4: 54.9 % truncates to 54 → ratio 1.08, within the 10 % tolerance: keep 4.
    pods = [pod(54.9)] * 4
    assert desired_from_metrics(pods, 4, 50, T) == (4, 54)
    # 56 % → 1.12: ceil(1.12 × 4) = 5.
    assert desired_from_metrics([pod(56)] * 4, 4, 50, T) == (5, 56)


def test_missing_pods_are_assumed_at_full_request_when_scaling_down() -> None:
    # §6.6: 3 pods at 20 % (ratio 0.4) and one without metrics: it counts as 100 %, so the
    # recomputed ratio is (60 + 100) / 400 = 40 % → 0.8 → ceil(0.8 × 4) = 4.
    pods = [pod(20)] * 3 + [pod(None)]
    assert desired_from_metrics(pods, 4, 50, T) == (4, 20)


def test_unready_pods_count_as_idle_when_scaling_up() -> None:
    # §6.5-6.6: 2 ready pods at 100 % (ratio 2.0), 2 pending: recomputed over 4 pods with 0 for
    # the pending ones, (200) / 400 → 50 % → ratio 1.0 → within tolerance: keep 4.
    pods = [pod(100), pod(100), pod(None, pending=True), pod(None, pending=True)]
    assert desired_from_metrics(pods, 4, 50, T) == (4, 100)


def test_initialization_period_groups_fresh_pods_as_unready() -> None:
    young = pod(90, start=T - 60_000, transition=T - 5_000)  # Ready 5 s ago: no full window yet
    settled = pod(90, start=T - 60_000, transition=T - 30_000)
    never = pod(90, ready=False, start=0, transition=0)  # never became ready
    ready, unready, missing = group([young, settled, never], T)
    assert (ready, unready, missing) == ([settled], [young, never], [])


def test_legacy_scale_up_limit_and_downscale_stabilization() -> None:
    a = Autoscaler(hpa())
    # 4 pods at 400 % → wants 16; limited to max(2 × 4, 4) = 8.
    assert a.sync([pod(200)] * 4, 4, T)[0] == 8
    # Load falls and the metric wants 1, but the window keeps the unlimited wish of 16 for
    # 5 minutes (HZ stores the recommendation before the rate limit): 8 → 16.
    assert a.sync([pod(1)] * 8, 8, T + 60_000)[0] == 16
    assert a.sync([pod(1)] * 16, 16, T + 301_000)[0] == 1


def test_behavior_policies_limit_the_rate() -> None:
    # Default scale-up policies: max(4 pods, 100 %) per 15 s.
    a = Autoscaler(hpa(behavior={}))
    assert a.sync([pod(500)] * 2, 2, T)[0] == 6  # 2 + 4 beats 2 × 2
    assert a.sync([pod(500)] * 6, 6, T + 15_000)[0] == 12  # a new period: 6 × 2
    # Scale down is held by the 300 s stabilization window.
    assert a.sync([pod(1)] * 12, 12, T + 30_000)[0] == 12
    custom = Autoscaler(
        hpa(behavior={"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}})
    )
    assert custom.sync([pod(500)] * 2, 2, T)[0] == 3
    assert custom.sync([pod(500)] * 3, 3, T + 15_000)[0] == 3  # the period's one pod is used


def test_hpa_scales_a_loaded_deployment_in_a_run() -> None:
    # 2 pods with 1 core each, 10 ms per request: 200 req/s is 100 % of a 1-core request;
    # target 50 % → the HPA wants 4. Containers start at 5 s; the sync at 15 s has no sample
    # (needs a 15 s window) and the pods are fresh: the first decision comes at 30 s.
    containers = [
        {"name": "app", "ports": [{"containerPort": 8080}], "resources": {"requests": {"cpu": "1"}}}
    ]
    hpa_doc = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 6,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    }
    r = run(
        replicas=2,
        containers=containers,
        behavior={"routes": {"/": {"cpu": "10ms"}}, "variability": 0},
        traffic=[{"rate": 200}],
        duration="40s",
        spec={"cluster": {"podStartDelay": "5s"}},
        manifests=[hpa_doc],
    )
    assert times(r, "SuccessfulRescale") == [30]
    assert r.events_for(reason="SuccessfulRescale")[0].message.startswith(
        "New size: 4; reason: cpu resource utilization"
    )
    desired = series(r, "workload.web.desired")
    assert desired[29:31] == [2, 4]
    assert series(r, "workload.web.current")[30] == 4  # created at once, Pending
    assert times(r, "Started", "pod/web-2") == [35]  # after the 5 s start delay
    assert series(r, "hpa.web.utilization")[30] == 100


def test_per_hpa_tolerance() -> None:
    # §6.2: with scaleUp.tolerance 0.05, 56 % against 50 % (1.12) scales; 52 % (1.04) does not.
    a = Autoscaler(hpa(behavior={"scaleUp": {"tolerance": "0.05"}}))
    assert a.sync([pod(52)] * 4, 4, T)[0] == 4
    assert a.sync([pod(56)] * 4, 4, T + 15_000)[0] == 5
    strict = Autoscaler(hpa(behavior={"scaleUp": {"tolerance": "0.01"}}))
    assert strict.sync([pod(52)] * 4, 4, T)[0] == 5


def test_no_scale_down_in_the_first_stabilization_window() -> None:
    # reconcileAutoscaler → recordInitialRecommendation (pkg/controller/podautoscaler/
    # horizontal.go): the first sync records the current size (5) as a recommendation, so an
    # idle target keeps 5 for the whole 300 s window in both paths, then drops.
    for spec in ({}, {"behavior": {}}):
        a = Autoscaler(hpa(minReplicas=1, **spec))
        assert a.sync([pod(30)] * 5, 5, T)[0] == 5  # wants 3 at once
        assert a.sync([pod(30)] * 5, 5, T + 15_000)[0] == 5
        assert a.sync([pod(30)] * 5, 5, T + 285_000)[0] == 5
        assert a.sync([pod(30)] * 5, 5, T + 300_000)[0] == 3
