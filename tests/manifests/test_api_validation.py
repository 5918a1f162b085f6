"""Every error probesim raises on a Kubernetes object's fields, against the API server's
validation (issue 27 item 2; the review is docs/manifests.md): an object the API server rejects
gets the error at its file, line and field; an object it accepts is read (relaxed), with the
API server's meaning. Each case's ``# <`` marks the line the error must name."""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path

import pytest

from probesim.errors import InputError, InputWarning
from probesim.manifests import kubernetes as k8s
from probesim.manifests.scenario import scenario_from_text
from probesim.manifests.yamlsrc import load_docs
from probesim.model.quantities import MAX_MILLICORES


def deploy(container: str = "", pod: str = "", spec: str = "", selector: str = "{matchLabels: {app: web}}",
           meta: str = "{name: web}", kind: str = "Deployment", api: str = "apps/v1") -> str:  # fmt: skip
    """A Deployment (or another apps kind) with text added to its container, pod spec or spec."""
    return (
        f"apiVersion: {api}\nkind: {kind}\nmetadata: {meta}\nspec:\n{spec}  replicas: 2\n"
        f"  selector: {selector}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n"
        f"{pod}      containers:\n        - name: app\n          image: app:1\n{container}"
    )


def probe(kind: str, body: str) -> str:
    return f"          {kind}Probe:\n" + textwrap.indent(textwrap.dedent(body), " " * 12)


HTTP = "httpGet: {path: /, port: 8080}\n"
JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
SPEC  template:
    metadata: {labels: {app: once}}
    spec:
POD      containers: [{name: run, image: run:1}]
"""
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\nSPEC"
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
SPEC"""
CPU = "  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}}]\n"
STS = "apps/v1"

# (upstream function, manifest with "# <" on the line named, field, what the message says)
REJECTED: dict[str, tuple[str, str, str | None, str]] = {
    # manifests/kubernetes.py
    "list-items": ("apimachinery List decoding", "apiVersion: v1\nkind: List\nitems: 5  # <\n",
                   "items", "must be a list of objects"),
    "apiVersion-missing": ("apimachinery decoding (Object 'apiVersion' is missing)",
                           "kind: Deployment  # <\nmetadata: {name: web}\n", "apiVersion", "required field is missing"),
    "apiVersion-not-served": ("REST mapping (no matches for kind)", deploy(api="v1").replace("v1\n", "v1  # <\n", 1),
                              "apiVersion", "Deployment is served as apiVersion apps/v1, not 'v1'"),
    "kind-unknown": ("REST mapping (no matches for kind)", deploy(kind="Deploymnet").replace("Deploymnet", "Deploymnet  # <"),
                     "kind", "unknown kind 'Deploymnet' for apps/v1; did you mean 'Deployment'?"),
    "pod-spec-missing": ("ValidatePodSpec → validateContainers (containers: Required)",
                         "apiVersion: v1  # <\nkind: Pod\nmetadata: {name: p}\n", "spec", "required field is missing"),
    "pod-unknown-field": ("strict field validation (kubectl --validate=strict)",
                          "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: a}]}\n"
                          "statuz: {}  # <\n", "statuz", "unknown field"),
    "selector-missing": ("ValidateDeploymentSpec (selector: Required)",
                         deploy().replace("spec:\n", "spec:  # <\n", 1).replace("  selector: {matchLabels: {app: web}}\n", ""),
                         "spec.selector", "required field is missing (apps/v1 needs a selector)"),
    "selector-mismatch": ("ValidatePodTemplateSpecForReplicaSet", deploy(selector="{matchLabels: {app: api}}  # <"),
                          "spec.selector", "selector does not match template labels"),
    "selector-empty": ("ValidateDeploymentSpec (empty selector is invalid)", deploy(selector="{}  # <"),
                       "spec.selector", "empty selector is invalid for deployment"),
    "selector-operator": ("ValidateLabelSelectorRequirement",
                          deploy(selector="{matchExpressions: [{key: app, operator: Is, values: [web]}]}  # <"),
                          "spec.selector.matchExpressions[0].operator", "'Is' is not a valid selector operator"),
    "selector-in-without-values": ("ValidateLabelSelectorRequirement",
                                   deploy(selector="{matchExpressions: [{key: app, operator: In}]}  # <"),
                                   "spec.selector.matchExpressions[0].values", "must be specified when `operator` is 'In'"),
    "selector-exists-with-values": ("ValidateLabelSelectorRequirement",
                                    deploy(selector="{matchExpressions: [{key: app, operator: Exists, values: [a]}]}  # <"),
                                    "spec.selector.matchExpressions[0].values", "may not be specified when `operator` is 'Exists'"),
    "cronjob-jobtemplate-spec": ("ValidateCronJobSpec → ValidateJobTemplateSpec",
                                 "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {schedule: '@daily', jobTemplate: {}}  # <\n",
                                 "spec.jobTemplate.spec", "required field is missing"),
    "job-template": ("ValidateJobSpec (template: Required)",
                     "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {parallelism: 1}  # <\n",
                     "spec.template", "required field is missing"),
    "surge-and-unavailable-zero": ("ValidateRollingUpdateDeployment",
                                   deploy(spec="  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}  # <\n"),
                                   "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when maxSurge is 0"),
    "deployment-restartpolicy": ("ValidatePodTemplateSpecForReplicaSet (restartPolicy: Always)",
                                 deploy(pod="      restartPolicy: Never  # <\n"),
                                 "spec.template.spec.restartPolicy", 'a Deployment template supports only "Always"'),
    "job-restartpolicy": ("ValidateJobSpec (restartPolicy: OnFailure or Never)",
                          JOB.replace("SPEC", "").replace("POD", "").replace("    spec:\n", "    spec:  # <\n"),
                          "spec.template.spec.restartPolicy", 'a Job template supports only "OnFailure" or "Never"'),
    "container-unknown-field": ("strict field validation", deploy(container="          livenessProbes: {}  # <\n"),
                                "livenessProbes", "unknown field in a container"),
    "container-duplicate-name": ("validateContainers (Duplicate)",
                                 deploy(container="        - name: app  # <\n          image: b:1\n"),
                                 "containers[1].name", 'duplicate container name "app"'),
    "init-container-probe": ("validateInitContainers (may not be set … without restartPolicy=Always)",
                             deploy(pod="      initContainers:\n        - name: init\n          image: i:1\n"
                                        "          readinessProbe: {exec: {command: [x]}}  # <\n"),
                             "spec.template.spec.initContainers[0].readinessProbe", "probes are allowed only on sidecar"),
    "probe-no-handler": ("validateHandler", deploy(container="          livenessProbe: {periodSeconds: 5}  # <\n"),
                         "spec.template.spec.containers[0].livenessProbe", "must specify a handler type"),
    "probe-two-handlers": ("validateHandler", deploy(container="          livenessProbe: {tcpSocket: {port: 1}, exec: {command: [x]}}  # <\n"),
                           "spec.template.spec.containers[0].livenessProbe", "may not specify more than 1 handler type"),
    "probe-negative": ("validateProbe (ValidateNonnegativeField after SetDefaults_Probe)",
                       deploy(container=probe("readiness", HTTP + "timeoutSeconds: -1  # <\n")),
                       "spec.template.spec.containers[0].readinessProbe.timeoutSeconds", "must be greater than or equal to 1 (got -1)"),
    "liveness-success-threshold": ("validateLivenessProbe", deploy(container=probe("liveness", HTTP + "successThreshold: 2  # <\n")),
                                   "spec.template.spec.containers[0].livenessProbe.successThreshold", "must be 1 for liveness probes"),
    "startup-success-threshold": ("validateStartupProbe", deploy(container=probe("startup", HTTP + "successThreshold: 3  # <\n")),
                                  "spec.template.spec.containers[0].startupProbe.successThreshold", "must be 1 for startup probes"),
    "readiness-grace": ("validateReadinessProbe", deploy(container=probe("readiness", HTTP + "terminationGracePeriodSeconds: 5  # <\n")),
                        "spec.template.spec.containers[0].readinessProbe.terminationGracePeriodSeconds", "must not be set for readinessProbes"),
    "probe-grace-zero": ("validateProbe (terminationGracePeriodSeconds > 0)",
                         deploy(container=probe("liveness", HTTP + "terminationGracePeriodSeconds: 0  # <\n")),
                         "spec.template.spec.containers[0].livenessProbe.terminationGracePeriodSeconds", "must be greater than 0"),
    "exec-command": ("validateExecAction", deploy(container="          livenessProbe: {exec: {}}  # <\n"),
                     "spec.template.spec.containers[0].livenessProbe.exec.command", "an exec probe needs a command"),
    "prestop-no-handler": ("validateLifecycle → validateHandler",
                           deploy(container="          lifecycle: {preStop: {}}  # <\n"),
                           "spec.template.spec.containers[0].lifecycle.preStop", "must specify a handler type (one of exec, httpGet, sleep)"),
    "prestop-two-handlers": ("validateLifecycle → validateHandler",
                             deploy(container="          lifecycle:\n            preStop:  # <\n"
                                              "              sleep: {seconds: 5}\n              exec: {command: [x]}\n"),
                             "spec.template.spec.containers[0].lifecycle.preStop", "may not specify more than 1 handler type (got exec, sleep)"),
    "prestop-negative-sleep": ("validateSleepAction",
                               deploy(container="          lifecycle:\n            preStop:\n              sleep:\n"
                                                "                seconds: -1  # <\n"),
                               "spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds",
                               "must be non-negative and less than terminationGracePeriodSeconds (30) (got -1)"),
    "prestop-sleep-past-grace": ("validateSleepAction",
                                 deploy(pod="      terminationGracePeriodSeconds: 10\n",
                                        container="          lifecycle: {preStop: {sleep: {seconds: 11}}}  # <\n"),
                                 "spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds",
                                 "less than terminationGracePeriodSeconds (10) (got 11)"),
    "prestop-exec-command": ("validateExecAction", deploy(container="          lifecycle: {preStop: {exec: {}}}  # <\n"),
                             "spec.template.spec.containers[0].lifecycle.preStop.exec.command", "an exec hook needs a command"),
    "prestop-sleep-string": ("SleepAction.Seconds is an int64",
                             deploy(container="          lifecycle: {preStop: {sleep: {seconds: '5'}}}  # <\n"),
                             "lifecycle.preStop.sleep.seconds", ""),
    "hpa-min-above-max": ("validateHorizontalPodAutoscalerSpec", HPA.replace("SPEC", "  minReplicas: 5\n  maxReplicas: 3  # <\n" + CPU),
                          "spec.maxReplicas", "must be greater than or equal to `minReplicas`"),
    "hpa-utilization-value": ("validateMetricTarget", HPA.replace("SPEC", "  maxReplicas: 3\n  metrics: [{type: Resource, resource: "
                                                                   "{name: cpu, target: {type: Utilization}}}]  # <\n"),
                              "spec.metrics[0].resource.target", "averageUtilization is required"),
    "service-ports": ("ValidateService (ports: Required unless headless or ExternalName)",
                      SERVICE.replace("SPEC", "  type: ClusterIP\n").replace("spec:\n", "spec:  # <\n"),
                      "spec.ports", "a Service needs at least one port"),
    # model/kubernetes.py (pydantic, turned into the same one-line errors)
    "name-missing": ("ValidateObjectMeta (name or generateName is required)", deploy(meta="{labels: {a: b}}  # <"),
                     "metadata.name", "required field is missing"),
    "name-invalid": ("NameIsDNSSubdomain", deploy(meta="{name: Web_1}  # <"), "metadata.name", "RFC 1123 subdomain"),
    "namespace-invalid": ("ValidateNamespaceName", deploy(meta="{name: web, namespace: Team_A}  # <"),
                          "metadata.namespace", "RFC 1123 label"),
    "label-not-a-string": ("decoding into map[string]string", deploy(meta="{name: web, labels: {version: 1}}  # <"),
                           "metadata.labels.version", "valid string"),
    "container-name": ("validateContainerCommon (ValidateDNS1123Label)",
                       deploy().replace("- name: app", "- name: App  # <"), "spec.template.spec.containers[0].name", "RFC 1123 label"),
    "containers-empty": ("validateContainers (Required)",
                         deploy().split("      containers:")[0] + "      containers: []  # <\n",
                         "spec.template.spec.containers", "at least 1 item"),
    "pod-restartpolicy": ("validateRestartPolicy",
                          "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Sometimes  # <\n"
                          "  containers: [{name: a, image: a}]\n", "spec.restartPolicy", "'Always', 'OnFailure' or 'Never'"),
    "probe-int-as-string": ("decoding (int32)", deploy(container=probe("liveness", HTTP + 'periodSeconds: "10"  # <\n')),
                            "spec.template.spec.containers[0].livenessProbe.periodSeconds", "valid integer"),
    "probe-unknown-field": ("strict field validation", deploy(container=probe("liveness", HTTP + "failureTreshold: 3  # <\n")),
                            "spec.template.spec.containers[0].livenessProbe.failureTreshold", "unknown field"),
    "httpget-port-missing": ("validateHTTPGetAction → ValidatePortNumOrName",
                             deploy(container="          livenessProbe: {httpGet: {path: /}}  # <\n"),
                             "spec.template.spec.containers[0].livenessProbe.httpGet.port", "required field is missing"),
    "httpget-port-range": ("ValidatePortNumOrName (IsValidPortNum)",
                           deploy(container="          livenessProbe: {httpGet: {port: 70000}}  # <\n"),
                           "spec.template.spec.containers[0].livenessProbe.httpGet.port", "65535"),
    "httpget-port-zero": ("ValidatePortNumOrName (IsValidPortNum)",
                          deploy(container="          livenessProbe: {httpGet: {path: /, port: 0}}  # <\n"),
                          "spec.template.spec.containers[0].livenessProbe.httpGet.port",
                          "must be a port number between 1 and 65535, inclusive, or a port name (got 0)"),
    "tcpsocket-port-zero": ("ValidatePortNumOrName (IsValidPortNum)",
                            deploy(container="          readinessProbe: {tcpSocket: {port: 0}}  # <\n"),
                            "spec.template.spec.containers[0].readinessProbe.tcpSocket.port",
                            "must be a port number between 1 and 65535, inclusive, or a port name (got 0)"),
    "httpget-scheme": ("validateHTTPGetAction (supportedHTTPSchemes)",
                       deploy(container="          livenessProbe: {httpGet: {port: 80, scheme: http}}  # <\n"),
                       "spec.template.spec.containers[0].livenessProbe.httpGet.scheme", "'HTTP' or 'HTTPS'"),
    "http-header-name": ("validateHTTPGetAction (IsHTTPHeaderName)",
                         deploy(container="          livenessProbe: {httpGet: {port: 80, httpHeaders: [{value: x}]}}  # <\n"),
                         "spec.template.spec.containers[0].livenessProbe.httpGet.httpHeaders[0].name", "required field is missing"),
    "grpc-port": ("validateGRPCAction", deploy(container="          livenessProbe: {grpc: {port: 0}}  # <\n"),
                  "spec.template.spec.containers[0].livenessProbe.grpc.port", "greater than or equal to 1"),
    "container-port-missing": ("validateContainerPorts (containerPort: Required)",
                               deploy(container="          ports: [{name: http}]  # <\n"),
                               "spec.template.spec.containers[0].ports[0].containerPort", "required field is missing"),
    "container-port-protocol": ("validateContainerPorts (supportedPortProtocols)",
                                deploy(container="          ports: [{containerPort: 80, protocol: HTTP}]  # <\n"),
                                "spec.template.spec.containers[0].ports[0].protocol", "'TCP', 'UDP' or 'SCTP'"),
    "cpu-syntax": ("resource.ParseQuantity", deploy(container="          resources: {requests: {cpu: lots}}  # <\n"),
                   "spec.template.spec.containers[0].resources.requests.cpu", "invalid CPU quantity 'lots'"),
    "cpu-negative": ("ValidateResourceQuantityValue (non-negative)",
                     deploy(container="          resources: {requests: {cpu: '-1'}}  # <\n"),
                     "spec.template.spec.containers[0].resources.requests.cpu", "must not be negative"),
    "container-restartpolicy": ("validateContainers (may not be set for non-init containers) / validateInitContainerRestartPolicy",
                                deploy(container="          restartPolicy: Never  # <\n"),
                                "spec.template.spec.containers[0].restartPolicy", "'Always'"),
    "readiness-gate": ("validateReadinessGates (ValidateQualifiedName)", deploy(pod="      readinessGates: [{}]  # <\n"),
                       "spec.template.spec.readinessGates[0].conditionType", "required field is missing"),
    "replicas-negative": ("ValidateDeploymentSpec (ValidateNonnegativeField)",
                          deploy().replace("  replicas: 2", "  replicas: -1  # <"), "spec.replicas", "greater than or equal to 0"),
    "template-missing": ("ValidateDeploymentSpec → ValidatePodTemplateSpecForReplicaSet",
                         deploy().split("  template:")[0].replace("spec:\n", "spec:  # <\n", 1), "spec.template", "required field is missing"),
    "strategy-type": ("ValidateDeploymentStrategy", deploy(spec="  strategy: {type: BlueGreen}  # <\n"),
                      "spec.strategy.type", "'RollingUpdate' or 'Recreate'"),
    "surge-not-percent": ("ValidatePositiveIntOrPercent (IsValidPercent)",
                          deploy(spec="  strategy: {rollingUpdate: {maxSurge: '25'}}  # <\n"),
                          "spec.strategy.rollingUpdate.maxSurge", "valid integer (got '25')"),
    "sts-pod-management": ("ValidateStatefulSetSpec (podManagementPolicy)",
                           deploy(kind="StatefulSet", spec="  podManagementPolicy: Random  # <\n"),
                           "spec.podManagementPolicy", "'OrderedReady' or 'Parallel'"),
    "sts-max-unavailable": ("validateRollingUpdateStatefulSet (cannot be 0)",
                            deploy(kind="StatefulSet", spec="  updateStrategy: {rollingUpdate: {maxUnavailable: 0}}  # <\n"),
                            "spec.updateStrategy.rollingUpdate.maxUnavailable", "greater than or equal to 1"),
    "paused-not-bool": ("decoding (bool)", deploy(spec="  paused: 'true'  # <\n"), "spec.paused", "valid boolean"),
    "service-port-missing": ("validateServicePort (port: Required)", SERVICE.replace("SPEC", "  ports: [{targetPort: 80}]  # <\n"),
                             "spec.ports[0].port", "required field is missing"),
    "service-type": ("ValidateService (supportedServiceType)", SERVICE.replace("SPEC", "  type: Internal  # <\n  ports: [{port: 80}]\n"),
                     "spec.type", "'ClusterIP', 'NodePort', 'LoadBalancer' or 'ExternalName'"),
    "service-spec-missing": ("ValidateService (ports: Required)", "apiVersion: v1  # <\nkind: Service\nmetadata: {name: web}\n",
                             "spec", "required field is missing"),
    "hpa-target-name": ("ValidateCrossVersionObjectReference",
                        HPA.replace("kind: Deployment, name: web}", "kind: Deployment}  # <").replace("SPEC", "  maxReplicas: 3\n"),
                        "spec.scaleTargetRef.name", "required field is missing"),
    "hpa-max-zero": ("validateHorizontalPodAutoscalerSpec (maxReplicas > 0)", HPA.replace("SPEC", "  maxReplicas: 0  # <\n" + CPU),
                     "spec.maxReplicas", "greater than or equal to 1"),
    "hpa-min-zero": ("validateHorizontalPodAutoscalerSpec (minReplicas > 0; HPAScaleToZero is alpha)",
                     HPA.replace("SPEC", "  minReplicas: 0  # <\n  maxReplicas: 3\n" + CPU), "spec.minReplicas", "greater than or equal to 1"),
    "hpa-policy-period": ("validateScalingPolicy (periodSeconds ≤ 1800)",
                          HPA.replace("SPEC", "  maxReplicas: 3\n  behavior: {scaleUp: {policies: [{type: Pods, value: 1, periodSeconds: 1801}]}}  # <\n"),
                          "spec.behavior.scaleUp.policies[0].periodSeconds", "less than or equal to 1800"),
    "hpa-window": ("validateScalingRules (stabilizationWindowSeconds ≤ 3600)",
                   HPA.replace("SPEC", "  maxReplicas: 3\n  behavior: {scaleDown: {stabilizationWindowSeconds: 3601}}  # <\n"),
                   "spec.behavior.scaleDown.stabilizationWindowSeconds", "less than or equal to 3600"),
    "hpa-utilization-zero": ("validateMetricTarget (averageUtilization > 0)",
                             HPA.replace("SPEC", "  maxReplicas: 3\n" + CPU.replace("60", "0").replace("]\n", "]  # <\n")),
                             "spec.metrics[0].resource.target.averageUtilization", "greater than or equal to 1"),
    "rc-replicas": ("ValidateReplicationControllerSpec (ValidateNonnegativeField)",
                    "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc}\nspec:\n  replicas: -1  # <\n"
                    "  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: a, image: a}]}}\n",
                    "spec.replicas", "greater than or equal to 0"),
    "job-parallelism": ("ValidateJobSpec (ValidateNonnegativeField)",
                        JOB.replace("SPEC", "  parallelism: -1  # <\n").replace("POD", "      restartPolicy: Never\n"),
                        "spec.parallelism", "greater than or equal to 0"),
}  # fmt: skip


def read(text: str) -> k8s.Objects:
    return k8s.parse(load_docs(text, "m.yaml"))


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_what_the_api_server_rejects_is_an_error_at_its_line_and_field(case: str) -> None:
    _upstream, text, field, message = REJECTED[case]
    marked = [i for i, ln in enumerate(text.splitlines(), start=1) if ln.endswith("# <")]
    assert len(marked) == 1, text
    with pytest.raises(InputError) as e:
        read(text)
    err = e.value
    assert (err.file, err.line) == ("m.yaml", marked[0]), (str(err), text)
    assert err.field is not None and err.field.endswith(field or ""), str(err)
    assert message in err.message, str(err)


def test_a_service_name_is_a_dns_label(tmp_path: Path) -> None:
    # ValidateServiceName (NameIsDNS1035Label): no '.', at most 63 characters; the scenario
    # loader checks it (its DNS name is <name>.<namespace>.svc).
    svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web.internal\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n"
    text = (
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: {duration: 10s}\n---\n"
    )
    with pytest.raises(InputError) as e:
        scenario_from_text(text + deploy() + "---\n" + svc, "s.yaml", tmp_path)
    assert (e.value.file, e.value.line, e.value.field) == ("s.yaml", 22, "metadata.name")
    assert "RFC 1123 label of at most 63 characters" in e.value.message


def test_a_match_expressions_selector_is_read_and_judged() -> None:
    # ValidateDeploymentSpec takes matchLabels and matchExpressions (LabelSelectorAsSelector).
    text = deploy(
        selector="{matchExpressions: [{key: app, operator: In, values: [web, www]}, {key: tier, operator: DoesNotExist}]}"
    )
    w = read(text).workloads[0]
    assert w.spec.selector is not None and w.spec.selector.matches({"app": "web"})
    assert not w.spec.selector.matches({"app": "web", "tier": "x"}) and not w.spec.selector.matches(
        {"app": "api"}
    )
    notin = deploy(
        selector="{matchLabels: {app: web}, matchExpressions: [{key: app, operator: NotIn, values: [web]}]}"
    )
    with pytest.raises(InputError, match="selector does not match template labels"):
        read(notin)


def test_a_job_with_its_own_selector_is_read() -> None:
    # ValidateJobSpec: a selector with manualSelector: true is a LabelSelector; probesim
    # selects a Job's pods by its template's labels, as the generated selector does.
    text = JOB.replace("SPEC", "  manualSelector: true\n  selector: {matchLabels: {app: once}}\n").replace(
        "POD", "      restartPolicy: Never\n"
    )
    (w,) = read(text).workloads
    assert (w.kind, w.pod_labels, w.spec.replicas) == ("Job", {"app": "once"}, 1)


def test_a_header_without_value_is_an_empty_value() -> None:
    # HTTPHeader.Value decodes as "" when left out; validateHTTPGetAction checks the name only.
    w = read(
        deploy(container="          livenessProbe: {httpGet: {port: 80, httpHeaders: [{name: X-Probe}]}}\n")
    ).workloads[0]
    p = w.pod_spec.containers[0].liveness_probe
    assert p is not None and p.http_get is not None
    assert [(h.name, h.value) for h in p.http_get.http_headers] == [("X-Probe", "")]


def test_a_negative_grace_period_is_one_second() -> None:
    # Accepted with the warning "negative values are invalid and will be treated as 1"
    # (warningsForPodSpecAndMeta); deletion uses 1 (podStrategy.CheckGracefulDelete).
    w = read(deploy(pod="      terminationGracePeriodSeconds: -5\n")).workloads[0]
    assert w.pod_spec.termination_grace_period_seconds == 1


def test_a_huge_cpu_request_is_read_at_the_bound() -> None:
    # The API server takes it; any value beyond a node's CPU simulates alike.
    for cpu in ("1e20", "1e99999999"):
        w = read(deploy(container=f"          resources: {{requests: {{cpu: '{cpu}'}}}}\n")).workloads[0]
        assert w.pod_spec.containers[0].resources.requests.cpu == MAX_MILLICORES


def test_an_hpa_on_memory_only_is_left_out_of_a_scenario_with_a_warning(tmp_path: Path) -> None:
    # validateMetrics accepts any metric type; probesim simulates CPU utilization only.
    memory = "  maxReplicas: 5\n  metrics: [{type: Resource, resource: {name: memory, target: {type: Utilization, averageUtilization: 80}}}]\n"
    text = (
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: {duration: 10s}\n---\n"
    )
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        sc = scenario_from_text(text + deploy() + "---\n" + HPA.replace("SPEC", memory), "s.yaml", tmp_path)
    assert sc.autoscalers == () and sc.workloads[0].spec.replicas == 2
    assert any("HorizontalPodAutoscaler web not simulated: it scales on Resource metric memory" in str(w.message)
               for w in said)  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        # ValidateService: a headless Service needs no port; ValidateObjectMeta: generateName.
        SERVICE.replace("SPEC", "  clusterIP: None\n"),
        "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: probe-}\nspec:\n  template:\n"
        "    spec: {restartPolicy: Never, containers: [{name: a, image: a}]}\n",
    ],
)
def test_what_item_2_relaxed_stays_read(text: str) -> None:
    objs = read(text)
    assert len(objs.services) + len(objs.workloads) == 1
