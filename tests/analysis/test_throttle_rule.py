"""PS044: a liveness probe with 1 s to answer on a container whose CPU limit is below 100m. The
kubelet turns a CPU limit into a CFS quota per 100 ms period, never below 1 ms
(pkg/kubelet/cm/helpers_linux.go, MilliCPUToQuota: `quota = (milliCPU * period) / MilliCPUToCPU`,
then `if quota < MinQuotaPeriod { quota = MinQuotaPeriod }`), and counts a probe that outlives
timeoutSeconds as a failure (pkg/probe/http/http.go: the client's Timeout is the probe's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from probesim.analysis.check import check
from probesim.analysis.findings import Finding
from probesim.analysis.patch import apply


def deployment(
    limit: str | None, live: dict[str, Any], ready: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The shape of aks-store-demo's product-service: one container behind a Service, readiness
    and liveness on one /health."""
    c: dict[str, Any] = {"name": "app", "image": "example/app:1", "ports": [{"containerPort": 3002}]}
    if limit is not None:
        c["resources"] = {"requests": {"cpu": "1m"}, "limits": {"cpu": limit}}
    if ready is not None:
        c["readinessProbe"] = ready
    c["livenessProbe"] = live
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [c]}},
        },
    }


SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 3002}]}}  # fmt: skip
HEALTH = {"httpGet": {"path": "/health", "port": 3002}}
READY = {**HEALTH, "failureThreshold": 3, "initialDelaySeconds": 3, "periodSeconds": 5}
LIVE = {**HEALTH, "failureThreshold": 5, "initialDelaySeconds": 3, "periodSeconds": 3}


def run(tmp_path: Path, objs: list[dict[str, Any]]) -> list[Finding]:
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return check([str(f)]).findings


def test_aks_store_shape_gets_a_5s_timeout_and_a_period_above_it(tmp_path: Path) -> None:
    objs = [deployment("2m", LIVE, READY), SERVICE]
    found = run(tmp_path, objs)
    (f,) = [x for x in found if x.rule.id == "PS044"]
    assert f.message == (
        "livenessProbe has the default timeoutSeconds (1) and the CPU limit is 2m (below 100m): "
        "throttling alone can make a healthy pod miss it and be restarted"
    )
    assert f.field == "spec.template.spec.containers[0].livenessProbe.timeoutSeconds"
    # 5 s, the incident fixes' value (probe guidance §6, [I1]-[I4]); the period rises to the next
    # round value above it (T < P); failureThreshold stays: 10 s × 5 outlasts readiness's 15 s.
    assert f.patch == {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "livenessProbe": {"periodSeconds": 10, "timeoutSeconds": 5}}]}}}}  # fmt: skip
    assert f.fix == (
        "livenessProbe.periodSeconds: 10, livenessProbe.timeoutSeconds: 5 (readiness takes a failing pod "
        "out within 16s, liveness acts on a hang within 55s; timeoutSeconds 5, what incident fixes raised "
        "1 s liveness timeouts to: a CPU limit of 2m (which acts as 10m: the kubelet's least CFS quota) "
        "gives a check at most 10 ms of CPU in 1 s, shared with all the app does; periodSeconds 10 to "
        "stay above the timeout)"
    )
    # PS003 (liveness as strict as readiness) on the same container takes the same plan.
    (same,) = [x for x in found if x.rule.id == "PS003"]
    assert same.patch == f.patch
    # Applied alone, the fix leaves neither finding nor any new warning.
    assert f.patch_type == "strategic"
    after = run(tmp_path, [apply(objs[0], f.patch, "strategic"), SERVICE])
    assert {x.rule.id for x in after} <= {x.rule.id for x in found} - {"PS044", "PS003"}


def test_a_written_timeout_of_1_and_a_long_period_change_only_the_timeout(tmp_path: Path) -> None:
    live = {**HEALTH, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3}
    (f,) = [x for x in run(tmp_path, [deployment("75m", live), SERVICE]) if x.rule.id == "PS044"]
    assert f.message.startswith("livenessProbe has timeoutSeconds 1 and the CPU limit is 75m (below 100m)")
    containers = f.patch["spec"]["template"]["spec"]["containers"] if f.patch else []
    assert containers == [{"name": "app", "livenessProbe": {"timeoutSeconds": 5}}]
    assert "a CPU limit of 75m gives a check at most 75 ms of CPU in 1 s" in f.fix
    assert "periodSeconds" not in f.fix


def test_a_limit_of_100m_or_more_or_none_or_a_longer_timeout_is_not_reported(tmp_path: Path) -> None:
    for limit, live in (("500m", LIVE), ("100m", LIVE), (None, LIVE), ("2m", {**LIVE, "timeoutSeconds": 2})):
        found = run(tmp_path, [deployment(limit, live, READY), SERVICE])
        assert "PS044" not in {x.rule.id for x in found}, (limit, live)


def test_readiness_tcp_and_exec_probes_are_not_ps044s(tmp_path: Path) -> None:
    # Readiness with 1 s on 2m: a miss takes the pod out until its next pass, no restart.
    good_live = {**HEALTH, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3}
    assert "PS044" not in {x.rule.id for x in run(tmp_path, [deployment("2m", good_live, READY), SERVICE])}
    # tcpSocket: the kernel accepts the connection (pkg/probe/tcp/tcp.go dials and closes).
    tcp = {"tcpSocket": {"port": 3002}, "periodSeconds": 10, "failureThreshold": 3}
    assert "PS044" not in {x.rule.id for x in run(tmp_path, [deployment("2m", tcp), SERVICE])}
    # exec: PS015's, alone (its fix sets 5 s already).
    exe = {"exec": {"command": ["check"]}, "periodSeconds": 10, "failureThreshold": 3}
    found = [x for x in run(tmp_path, [deployment("2m", exe), SERVICE]) if x.rule.id in ("PS015", "PS044")]
    assert [x.rule.id for x in found] == ["PS015"]


def test_grpc_liveness_is_reported(tmp_path: Path) -> None:
    grpc = {"grpc": {"port": 3002}, "periodSeconds": 10, "failureThreshold": 3}
    (f,) = [x for x in run(tmp_path, [deployment("50m", grpc), SERVICE]) if x.rule.id == "PS044"]
    assert f.patch == {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "livenessProbe": {"timeoutSeconds": 5}}]}}}}  # fmt: skip


def test_ps034s_grpc_check_on_a_throttled_container_comes_with_the_plans_timeout(tmp_path: Path) -> None:
    # A tcpSocket liveness is answered by the kernel (no PS044), but PS034 replaces it with the
    # app's grpc health check, which would be: its fix carries the same plan's timeout and period.
    dep = deployment("2m", {"tcpSocket": {"port": 3002}, "periodSeconds": 5, "failureThreshold": 3})
    dep["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "grpc", "containerPort": 3002}]
    objs = [dep, SERVICE]
    found = run(tmp_path, objs)
    assert "PS044" not in {x.rule.id for x in found}
    (f,) = [x for x in found if x.rule.id == "PS034"]
    assert f.patch == {"spec": {"template": {"spec": {"containers": [{"name": "app", "livenessProbe": {
        "periodSeconds": 10, "timeoutSeconds": 5, "grpc": {"port": 3002}, "tcpSocket": None}}]}}}}  # fmt: skip
    assert "(once liveness asks the app, as PS034's fix has it); periodSeconds 10" in f.fix
    after = run(tmp_path, [apply(objs[0], f.patch, "strategic"), SERVICE])
    assert not {"PS034", "PS044"} & {x.rule.id for x in after}


def test_a_fix_never_lowers_a_throttled_liveness_timeout_to_one_second(tmp_path: Path) -> None:
    """Found by the generated-fix property: liveness timeoutSeconds 6 on a 1 s period (PS011) and
    failureThreshold 1 (PS010) under a 2m CPU limit. The plan cured PS011 by lowering the timeout
    below the period, to 1 s, which PS044 then reported. It now keeps the timeout and raises the
    period above it."""
    (tmp_path / "d.yaml").write_text(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: a}\nspec:\n  selector: {matchLabels: {app: a}}\n"
        "  template:\n    metadata: {labels: {app: a}}\n    spec:\n      terminationGracePeriodSeconds: 0\n"
        "      containers:\n        - name: app\n          image: app:1\n"
        "          ports: [{name: http, containerPort: 8080}]\n"
        "          livenessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1, failureThreshold: 1,"
        " timeoutSeconds: 6}\n"
        "          resources: {limits: {cpu: 2m}}\n"
    )
    found = {f.rule.id: f for f in check([str(tmp_path / "d.yaml")]).findings}
    live = found["PS010"].patch["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]  # type: ignore[index]
    assert live == {"periodSeconds": 10, "failureThreshold": 3}  # the timeout, 6, kept
    patched = apply(yaml.safe_load((tmp_path / "d.yaml").read_text()), found["PS010"].patch or {})
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(patched))
    assert {f.rule.id for f in check([str(tmp_path / "d.yaml")]).findings} & {
        "PS010",
        "PS011",
        "PS044",
    } == set()
