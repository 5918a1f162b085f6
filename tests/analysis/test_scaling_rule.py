"""PS043: an HPA's Utilization target on pods a container of which requests none of the
resource. The HPA controller's replica calculator sums every container's request (and the
sidecars') and fails on the first without one (calculatePodRequests,
pkg/controller/podautoscaler/replica_calculator.go: "missing request for cpu in container %s of
Pod %s"); the API server copies a lone limit into the request; a LimitRange default fills it in
at admission."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from probesim.analysis.check import check
from probesim.analysis.findings import Finding
from probesim.engine import simulate
from tests.builders import scenario, times


def deployment(resources: dict[str, Any], sidecar: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "redis", "image": "redis:7", "resources": resources}]}
    if sidecar is not None:
        spec["initContainers"] = [{"name": "log", "image": "busybox", "restartPolicy": "Always", **sidecar}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "back"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "back"}},
            "template": {"metadata": {"labels": {"app": "back"}}, "spec": spec},
        },
    }


def hpa(metrics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "back"},
        "minReplicas": 1,
        "maxReplicas": 5,
    }
    if metrics is not None:
        spec["metrics"] = metrics
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "back"},
            "spec": spec}  # fmt: skip


def cpu(kind: str = "Utilization") -> dict[str, Any]:
    target: dict[str, Any] = {"type": kind}
    target.update({"averageUtilization": 60} if kind == "Utilization" else {"averageValue": "200m"})
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def run(tmp_path: Path, objs: list[dict[str, Any]]) -> list[Finding]:
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return [x for x in check([str(f)]).findings if x.rule.id == "PS043"]


def test_a_container_without_a_cpu_request_stops_the_hpa(tmp_path: Path) -> None:
    (f,) = run(tmp_path, [deployment({}), hpa([cpu()])])
    assert (f.obj, f.container, f.field) == (
        "Deployment/back",
        "redis",
        "spec.template.spec.containers[0].resources",
    )
    assert f.message == (
        "HorizontalPodAutoscaler back scales Deployment back on cpu utilization, but container redis requests "
        "no cpu: the HPA cannot compute it ('missing request for cpu in container redis', "
        "FailedGetResourceMetric) and never scales back"
    )
    # No metric at all: the API's default, CPU at 80 %, needs the request too.
    assert len(run(tmp_path, [deployment({}), hpa()])) == 1


def test_what_gives_a_request_and_what_needs_none(tmp_path: Path) -> None:
    assert run(tmp_path, [deployment({"requests": {"cpu": "100m"}}), hpa([cpu()])]) == []
    assert run(tmp_path, [deployment({"limits": {"cpu": "1"}}), hpa([cpu()])]) == []  # request := limit
    assert run(tmp_path, [deployment({}), hpa([cpu("AverageValue")])]) == []  # no request needed
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "d"},
              "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "100m"}}]}}  # fmt: skip
    assert run(tmp_path, [deployment({}), hpa([cpu()]), limits]) == []
    other_ns = {**limits, "metadata": {"name": "d", "namespace": "other"}}
    assert len(run(tmp_path, [deployment({}), hpa([cpu()]), other_ns])) == 1


def test_a_sidecar_without_a_request_stops_it_too(tmp_path: Path) -> None:
    found = run(tmp_path, [deployment({"requests": {"cpu": "100m"}}, sidecar={}), hpa([cpu()])])
    assert [f.container for f in found] == ["log"]
    regular_init = deployment({"requests": {"cpu": "100m"}})
    regular_init["spec"]["template"]["spec"]["initContainers"] = [{"name": "migrate", "image": "m"}]
    assert run(tmp_path, [regular_init, hpa([cpu()])]) == []  # a regular init container is not counted


def test_the_simulated_hpa_never_scales_such_pods_either() -> None:
    # The engine's autoscaler gives up alike (engine/autoscaler.py): at twice what one pod's CPU
    # request holds, the Deployment stays at 1 replica with no request and scales out with one.
    def rescales(requests: dict[str, Any]) -> list[int]:
        doc = hpa([cpu()])
        doc["spec"]["scaleTargetRef"]["name"] = "web"
        c = {"name": "app", "ports": [{"containerPort": 8080}], "resources": {"requests": requests}}
        r = simulate(scenario(replicas=1, containers=[c], duration="60s", manifests=[doc],
                              behavior={"routes": {"/": {"cpu": "10ms"}}, "variability": 0},
                              traffic=[{"rate": 20}]))  # fmt: skip
        return times(r, "SuccessfulRescale")

    assert rescales({}) == []
    assert rescales({"cpu": "100m"}) == [15]  # the first sync after the pod's first 15 s sample
