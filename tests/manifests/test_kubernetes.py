"""Kubernetes input: kinds, API defaults, API-server validation, errors with file and line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from probesim.errors import InputError
from probesim.kube.ports import container_port
from probesim.manifests import kubernetes as k8s
from probesim.manifests.scenario import load_scenario, scenario_from_text
from probesim.manifests.yamlsrc import load_docs


def parse(text: str) -> k8s.Objects:
    return k8s.parse(load_docs(textwrap.dedent(text), "m.yaml"))


def error(text: str) -> InputError:
    with pytest.raises(InputError) as e:
        parse(text)
    return e.value


DEPLOY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: app
          image: example.com/app:1
          livenessProbe:
            httpGet: {path: /healthz, port: 8080}
"""


def test_probe_defaults_are_the_api_servers() -> None:
    # reference/kubelet.md §1.1.1: left out or 0 → default; initialDelaySeconds stays 0.
    w = parse(DEPLOY).workloads[0]
    p = w.pod_spec.containers[0].liveness_probe
    assert p is not None
    assert (p.initial_delay_seconds, p.timeout_seconds, p.period_seconds) == (0, 1, 10)
    assert (p.success_threshold, p.failure_threshold) == (1, 3)
    assert w.pod_spec.restart_policy == "Always"
    assert w.pod_spec.termination_grace_period_seconds == 30
    zeroed = parse(
        DEPLOY.replace(
            "port: 8080}", "port: 8080}\n            periodSeconds: 0\n            timeoutSeconds: 0"
        )
    )
    zp = zeroed.workloads[0].pod_spec.containers[0].liveness_probe
    assert zp is not None
    assert (zp.period_seconds, zp.timeout_seconds) == (10, 1)


def test_multi_document_list_and_skipped_kinds() -> None:
    text = DEPLOY + textwrap.dedent("""\
        ---
        # Source: chart/templates/svc.yaml
        apiVersion: v1
        kind: List
        items:
          - apiVersion: v1
            kind: Service
            metadata: {name: web}
            spec:
              selector: {app: web}
              ports: [{port: 80}]
          - apiVersion: v1
            kind: ConfigMap
            metadata: {name: cfg}
        ---
        ---
        apiVersion: networking.istio.io/v1
        kind: DestinationRule
        metadata: {name: web}
        """)
    objs = parse(text)
    assert [w.name for w in objs.workloads] == ["web"]
    assert [s.name for s in objs.services] == ["web"]
    # The DestinationRule is read (rules and the mesh use it), so it is not reported as skipped.
    assert [str(s) for s in objs.skipped] == ["ConfigMap cfg (m.yaml:29)"]
    assert objs.skipped[0].why == "holds no pod template or probe"
    docs = list(load_docs(text, "m.yaml"))
    assert docs[1].source == "chart/templates/svc.yaml"


@pytest.mark.parametrize(
    ("edit", "line", "field", "message"),
    [
        ("          livenessProbe:\n            httpGet: {path: /healthz, port: 8080}\n            successThreshold: 2",
         18, "spec.template.spec.containers[0].livenessProbe.successThreshold", "must be 1 for liveness probes (got 2)"),
        ("          livenessProbe:\n            httpGet: {path: /healthz, port: 8080}\n            failureThreshold: -1",
         18, "spec.template.spec.containers[0].livenessProbe.failureThreshold", "must be greater than or equal to 1 (got -1)"),
        ("          livenessProbe:\n            periodSeconds: 5",
         16, "spec.template.spec.containers[0].livenessProbe", "must specify a handler type"),
        ("          livenessProbe:\n            httpGet: {path: /, port: 80}\n            tcpSocket: {port: 80}",
         16, "spec.template.spec.containers[0].livenessProbe", "may not specify more than 1 handler type"),
        ("          readinessProbe:\n            httpGet: {path: /, port: 80}\n            terminationGracePeriodSeconds: 5",
         18, "spec.template.spec.containers[0].readinessProbe.terminationGracePeriodSeconds", "must not be set for readinessProbes"),
        ("          livenessProbe:\n            httpGet: {path: /, port: 80}\n            periodSeconds: \"10\"",
         18, "spec.template.spec.containers[0].livenessProbe.periodSeconds", "Input should be a valid integer (got '10')"),
        ("          livenessProbe:\n            httpGet: {path: /, port: 80}\n            failureTreshold: 3",
         18, "spec.template.spec.containers[0].livenessProbe.failureTreshold", "unknown field"),
        ("          livenessProbe:\n            httpGet: {path: /, port: 80}\n            periodSeconds: 99999999999999999999",
         18, "spec.template.spec.containers[0].livenessProbe.periodSeconds", "less than or equal to 2147483647"),
        ("          livenessProbes:\n            httpGet: {path: /, port: 80}",
         16, "livenessProbes", "unknown field in a container"),
    ],
)  # fmt: skip
def test_invalid_probes_are_rejected_with_line_and_field(
    edit: str, line: int, field: str, message: str
) -> None:
    head = DEPLOY.split("          livenessProbe:")[0]
    e = error(head + edit + "\n")
    assert (e.file, e.line, e.obj) == ("m.yaml", line, "Deployment web")
    assert e.field == field
    assert message in e.message


def test_template_restart_policy_must_be_always() -> None:
    e = error(DEPLOY.replace("      containers:", "      restartPolicy: Never\n      containers:"))
    assert e.field == "spec.template.spec.restartPolicy"
    assert 'supports only "Always"' in e.message
    assert e.line == 13


def test_selector_must_match_template_labels() -> None:
    e = error(DEPLOY.replace("matchLabels: {app: web}", "matchLabels: {app: api}"))
    assert (e.field, e.line) == ("spec.selector", 7)


def test_unknown_kind_in_a_builtin_group_and_missing_fields() -> None:
    assert (
        "unknown kind 'Deploymnet'" in error(DEPLOY.replace("kind: Deployment", "kind: Deploymnet")).message
    )
    # A document with no kind is not a Kubernetes object (a values file, a CI workflow): read past.
    assert [s.why for s in parse("metadata: {name: x}\n").skipped] == ["not a Kubernetes object (no kind)"]
    assert error("kind: Deployment\nmetadata: {name: x}\n").message == "required field is missing"
    e = error(DEPLOY.replace("apiVersion: apps/v1", "apiVersion: v1"))
    assert "served as apiVersion apps/v1" in e.message


def test_duplicate_keys_and_containers() -> None:
    e = error(DEPLOY.replace("  replicas: 3", "  replicas: 3\n  replicas: 4"))
    assert (e.line, e.obj, e.message) == (
        7,
        "Deployment web",
        'duplicate key "spec.replicas" (already defined at line 6)',
    )
    two = DEPLOY + "        - name: app\n          image: x\n"
    assert 'duplicate container name "app"' in error(two).message


def test_yaml_syntax_error_names_the_line() -> None:
    e = error("apiVersion: v1\nkind: [Service\nmetadata: {}\n")
    assert e.file == "m.yaml" and e.line is not None and e.message.startswith("YAML syntax error")


def test_alias_bomb_and_deep_nesting_end_cleanly() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    assert "alias bomb" in error(bomb).message
    assert "nesting deeper" in error("a: " + "[" * 5000 + "]" * 5000 + "\n").message


def test_bare_pod_and_named_port_resolution() -> None:
    pod = """\
        apiVersion: v1
        kind: Pod
        metadata: {name: solo, labels: {app: solo}}
        spec:
          restartPolicy: OnFailure
          containers:
            - name: app
              ports: [{name: http, containerPort: 8080}]
              readinessProbe: {httpGet: {path: /, port: http}}
        """
    w = parse(pod).workloads[0]
    assert (w.kind, w.spec.replicas, w.pod_spec.restart_policy) == ("Pod", 1, "OnFailure")
    probe = w.pod_spec.containers[0].readiness_probe
    assert probe is not None and probe.http_get is not None
    assert container_port(w.pod_spec.containers[0], probe.http_get.port) == 8080
    assert container_port(w.pod_spec.containers[0], "metrics") is None
    bad = error(pod.replace("restartPolicy: OnFailure", "restartPolicy: Sometimes"))
    assert bad.field == "spec.restartPolicy" and "'Always', 'OnFailure' or 'Never'" in bad.message


SCENARIO = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: s}
manifests: [deploy.yaml]
spec:
  duration: 30s
  behavior:
    web:
      containers:
        app:
          start: 5s
  traffic:
    - {rate: 10}
"""


def test_scenario_loads_manifests_relative_to_itself(tmp_path: Path) -> None:
    (tmp_path / "deploy.yaml").write_text(
        DEPLOY
        + "---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n"
    )
    (tmp_path / "s.yaml").write_text(SCENARIO)
    sc = load_scenario(str(tmp_path / "s.yaml"))
    assert sc.workloads[0].spec.replicas == 3
    assert sc.spec.behavior["web"].containers["app"].start == 5000


@pytest.mark.parametrize(
    ("edit", "line", "field", "message"),
    [
        ("duration: 30s", 6, "spec.duration", "duration 30 has no unit"),
        ("start: 5s", 11, "spec.behavior.web.containers.app.start", "no unit"),
        ("start: 5s", 11, "spec.behavior.web.containers.app.start", "not a multiple of the step"),
        ("app:", 10, "spec.behavior.web.containers.api", "has no container 'api'"),
        ("{rate: 10}", 13, "spec.traffic[0].rate", "greater than or equal to 0"),
        ("{rate: 10}", 13, "spec.traffic[0].ratee", "unknown field"),
    ],
)
def test_scenario_errors_name_line_and_field(
    tmp_path: Path, edit: str, line: int, field: str, message: str
) -> None:
    replacement = {
        "spec.duration": "duration: 30",
        "spec.behavior.web.containers.app.start": "start: 5" if "unit" in message else "start: 1500ms",
        "spec.behavior.web.containers.api": "api:",
        "spec.traffic[0].rate": "{rate: -1}",
        "spec.traffic[0].ratee": "{rate: 1, ratee: 10}",
    }[field]
    (tmp_path / "deploy.yaml").write_text(DEPLOY)
    (tmp_path / "s.yaml").write_text(SCENARIO.replace(edit, replacement))
    with pytest.raises(InputError) as e:
        load_scenario(str(tmp_path / "s.yaml"))
    assert (e.value.line, e.value.field) == (line, field)
    assert message in e.value.message
    assert str(e.value).startswith(f"{tmp_path / 's.yaml'}:{line}: Scenario: {field}: ")


def test_missing_manifest_and_missing_scenario() -> None:
    with pytest.raises(InputError, match=r"manifest file 'nope/deploy\.yaml' not found"):
        scenario_from_text(SCENARIO, "s.yaml", Path("nope"))
    with pytest.raises(InputError, match="no Scenario document"):
        scenario_from_text(DEPLOY, "d.yaml", Path("."))
    with pytest.raises(InputError, match="file not found"):
        load_scenario("/nonexistent/s.yaml")


def test_apps_defaults_for_strategy_and_pod_management() -> None:
    # reference/kubelet.md §5.6: RollingUpdate with 25 % surge and 25 % unavailable.
    strategy = parse(DEPLOY).workloads[0].spec.strategy
    assert strategy is not None
    assert strategy.type == "RollingUpdate"
    assert strategy.rolling_update is not None
    assert (strategy.rolling_update.max_surge, strategy.rolling_update.max_unavailable) == ("25%", "25%")
    sts = parse(DEPLOY.replace("kind: Deployment", "kind: StatefulSet")).workloads[0]
    assert sts.spec.pod_management_policy == "OrderedReady"


def test_rolling_update_cannot_have_zero_surge_and_zero_unavailable() -> None:
    e = error(
        DEPLOY.replace(
            "  replicas: 3",
            "  replicas: 3\n  strategy:\n    rollingUpdate: {maxSurge: 0, maxUnavailable: 0%}",
        )
    )
    assert e.field == "spec.strategy.rollingUpdate.maxUnavailable"
    assert e.message == "may not be 0 when maxSurge is 0"
    bad = error(
        DEPLOY.replace("  replicas: 3", '  replicas: 3\n  strategy:\n    rollingUpdate: {maxSurge: "25"}')
    )
    assert bad.field == "spec.strategy.rollingUpdate.maxSurge"


HPA = """\
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics: METRICS
"""
RUN_SCENARIO = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec: {duration: 10s}
---
"""


def test_run_simulates_cpu_says_once_what_it_ignores_and_leaves_out_no_cpu_at_all() -> None:
    from typer.testing import CliRunner

    from probesim.cli import app

    memory = (
        "[{type: Resource, resource: {name: memory, target: {type: Utilization, averageUtilization: 80}}}]"
    )
    cpu = "[{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}}]"
    runner = CliRunner()
    only_memory = runner.invoke(
        app, ["run", "-", "--no-events"], input=RUN_SCENARIO + DEPLOY + HPA.replace("METRICS", memory)
    )
    # Valid for the API server, not simulated: left out with a warning, replicas as given.
    assert only_memory.exit_code == 0, only_memory.output
    assert (
        "HorizontalPodAutoscaler web not simulated: it scales on Resource metric memory, and probesim "
        "simulates CPU utilization targets only; Deployment web keeps its replicas" in only_memory.output
    )
    rows = [ln.split() for ln in only_memory.stdout.splitlines() if ln.strip().startswith("deployment/web")]
    assert [r[1] for r in rows] == ["3"]  # REPLICAS: the manifest's 3, no autoscaling
    both = cpu[:-1] + ", " + memory[1:]
    ok = runner.invoke(
        app, ["run", "-", "--no-events"], input=RUN_SCENARIO + DEPLOY + HPA.replace("METRICS", both)
    )
    assert ok.exit_code == 0
    assert ok.output.count("simulated on CPU only; ignored: Resource metric memory") == 1
    ds = "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: a}]}\n"
    with_ds = runner.invoke(app, ["run", "-", "--no-events"], input=RUN_SCENARIO + DEPLOY + ds)
    assert with_ds.exit_code == 0
    assert "warning: not simulated (probesim check lints them): DaemonSet agent" in with_ds.output
