"""PS046: a liveness timeout that a documented stop-the-world pause outlasts (probe guidance §6:
the 1 s default on a GC-pausing container restarts healthy pods; fixes raise it to a few seconds).
"""

from __future__ import annotations

from probesim.analysis import check as check_mod
from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.manifests import kubernetes as k8s
from probesim.manifests.scenario import scenario_from_text
from probesim.manifests.yamlsrc import load_docs
from probesim.profiles import ProfileCorrection
from tests.analysis.test_fixes import _recheck

SPRING = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: petclinic}
spec:
  replicas: 2
  selector: {matchLabels: {app: petclinic}}
  template:
    metadata: {labels: {app: petclinic}}
    spec:
      containers:
        - name: app
          image: springcommunity/spring-petclinic:3.2
          ports: [{containerPort: 8080}]
          resources: {requests: {cpu: 500m}}
          startupProbe: {httpGet: {path: /actuator/health/liveness, port: 8080}, periodSeconds: 10, failureThreshold: 12}
          readinessProbe: {httpGet: {path: /actuator/health/readiness, port: 8080}, periodSeconds: 5}
          livenessProbe: {httpGet: {path: /actuator/health/liveness, port: 8080}, periodSeconds: 10}
---
apiVersion: v1
kind: Service
metadata: {name: petclinic}
spec: {selector: {app: petclinic}, ports: [{port: 80, targetPort: 8080}]}
"""


def found(
    text: str, corrections: tuple[ProfileCorrection, ...] = (), scenario: object = None
) -> list[Finding]:
    docs = list(load_docs(text, "x.yaml"))
    ctx = Context(k8s.parse(docs), scenario, corrections=corrections, docs=docs)  # type: ignore[arg-type]
    return [f for rid in ("PS044", "PS046") for f in REGISTRY.checks[rid](ctx)]


def test_a_jvms_two_second_pause_outlasts_the_default_liveness_timeout() -> None:
    (f,) = found(SPRING)
    assert f.rule.id == "PS046" and f.field.endswith("containers[0].livenessProbe.timeoutSeconds")
    assert f.message == (
        "livenessProbe has the default timeoutSeconds (1) and Spring Boot pauses for up to 2s (its "
        "profile): a check sent as a pause starts fails, and pauses back to back restart a healthy pod"
    )
    assert f.patch == {
        "spec": {
            "template": {"spec": {"containers": [{"name": "app", "livenessProbe": {"timeoutSeconds": 3}}]}}
        }
    }
    assert "timeoutSeconds 3, a second above the 2s pauses Spring Boot's profile documents" in f.remediation
    assert _recheck(list(load_docs(SPRING, "x.yaml"))) >= 1  # the patch alone clears it, adds nothing


def test_a_timeout_above_the_pause_a_tcp_check_and_a_throttled_container_are_not_its() -> None:
    assert (
        found(SPRING.replace("periodSeconds: 10}\n---", "periodSeconds: 10, timeoutSeconds: 3}\n---")) == []
    )
    tcp = SPRING.replace(
        "livenessProbe: {httpGet: {path: /actuator/health/liveness, port: 8080}",
        "livenessProbe: {tcpSocket: {port: 8080}",
    )
    assert found(tcp) == []
    # Under a 50m CPU limit PS044 says it (with its 5 s), once.
    throttled = SPRING.replace("requests: {cpu: 500m}", "requests: {cpu: 50m}, limits: {cpu: 50m}")
    assert [f.rule.id for f in found(throttled)] == ["PS044"]


def test_the_pause_is_probesim_yamls_when_it_corrects_it_and_the_scenarios_says_its_own() -> None:
    unknown = SPRING.replace("springcommunity/spring-petclinic:3.2", "example.com/shop:1")
    unknown = unknown.replace("/actuator/health/liveness", "/livez").replace(
        "/actuator/health/readiness", "/readyz"
    )
    assert found(unknown) == []  # an app probesim does not know: no pause assumed
    fix = ProfileCorrection.model_validate({"workload": "petclinic", "pause": "5s"})
    (f,) = found(unknown, (fix,))
    assert f.message.startswith(
        "livenessProbe has the default timeoutSeconds (1) and the app pauses for up to 5s (.probesim.yaml)"
    )
    assert f.patch["spec"]["template"]["spec"]["containers"][0]["livenessProbe"] == {"timeoutSeconds": 6}
    assert "a second above the 5s pauses .probesim.yaml says the app takes" in f.remediation
    sc = scenario_from_text(
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "spec: {duration: 5m, behavior: {petclinic: {containers: {app: {start: 20s}}}}}\n---\n" + SPRING,
        "s.yaml",
        None,
        [],
    )
    assert found(SPRING, scenario=sc) == []


def test_check_counts_the_rule() -> None:
    assert "PS046" in {r.id for r in check_mod.selected_rules(check_mod.CheckConfig())}
