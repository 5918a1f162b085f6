"""Every kind users deploy (issue 40 item 4): Argo Rollouts (their own template, or the
Deployment their workloadRef names), Knative Services (with Knative's defaults), any custom
resource with a pod template at spec.template, and KEDA ScaledObjects read as scalers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from probesim.analysis.check import CheckReport, check
from probesim.analysis.patch import apply
from probesim.cli import app
from probesim.manifests import kubernetes as k8s
from probesim.manifests.yamlsrc import get_path, load_docs

runner = CliRunner()

ROLLOUT = """\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  strategy:
    canary:
      steps: [{setWeight: 20}, {pause: {}}]
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: web:1
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /ready, port: 8080}}
          livenessProbe: {httpGet: {path: /healthz, port: 8080}, failureThreshold: 1}
"""
# Argo's convention: the Deployment a Rollout references is scaled to 0; here after the Rollout.
WORKLOAD_REF = """\
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: api}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: api-template}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api-template}
spec:
  replicas: 0
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: api:1
          ports: [{containerPort: 9090}]
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec: {selector: {app: api}, ports: [{port: 80, targetPort: 9090}]}
"""
KNATIVE = """\
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello}
spec:
  template:
    spec:
      containers:
        - image: hello:1
          livenessProbe:
            httpGet: {path: /healthz}
            failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata: {name: hello-direct}
spec:
  selector: {serving.knative.dev/service: hello}
  ports: [{port: 80, targetPort: 8080}]
"""
CLONESET = """\
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: cart}
spec:
  replicas: 5
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers:
        - name: cart
          image: cart:1
          ports: [{containerPort: 7070}]
---
apiVersion: v1
kind: Service
metadata: {name: cart}
spec: {selector: {app: cart}, ports: [{port: 80, targetPort: 7070}]}
"""


def write(tmp: Path, name: str, text: str) -> str:
    p = tmp / name
    p.write_text(text)
    return str(p)


def where(r: CheckReport) -> list[tuple[str, str, int, str]]:
    return [(f.rule.id, f.obj, f.line, f.container) for f in r.findings]


def recheck(path: str, f: Any) -> list[str]:
    """The findings on ``f``'s object once its patch is applied as the API server applies it
    (a JSON merge patch for a custom resource)."""
    docs = list(load_docs(Path(path).read_text(), path))
    i = next(i for i, d in enumerate(docs) if get_path(d.data, ("metadata", "name")) == f.obj.split("/")[1])
    patched = yaml.safe_load(yaml.safe_dump(apply(docs[i].data, f.patch, f.patch_type)))
    Path(path).write_text(
        yaml.safe_dump_all([*(d.data for d in docs[:i]), patched, *(d.data for d in docs[i + 1 :])])
    )
    return [g.rule.id for g in check([path]).findings if g.obj == f.obj]


def test_a_rollout_with_its_own_template_is_linted_and_fixed_with_a_merge_patch(tmp_path: Path) -> None:
    path = write(tmp_path, "rollout.yaml", ROLLOUT)
    r = check([path])
    assert where(r) == [("PS010", "Rollout/web", 18, "web")]
    assert [(w.kind, w.name, w.line, w.api_version) for w in r.linted] == [
        ("Rollout", "web", 1, "argoproj.io/v1alpha1")
    ]
    f = r.findings[0]
    # A custom resource has no strategic merge: the fix is a JSON merge patch, the list whole.
    assert f.patch_type == "merge"
    container = f.patch["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    # liveness more tolerant than readiness's 30 s (the policy): 5 × 10 s
    assert container["image"] == "web:1" and container["livenessProbe"]["failureThreshold"] == 5
    assert f.remediation == (
        "livenessProbe.failureThreshold: 5 (readiness takes a failing pod out within 31s, liveness acts on a "
        "hang within 51s)"
    )
    assert recheck(path, f) == []
    # A Rollout's template is checked as a pod's.
    bad = ROLLOUT.replace("failureThreshold: 1}", "failureThreshold: 1, successThreshold: 2}")
    errors = check([write(tmp_path, "bad.yaml", bad)]).errors
    assert [str(e).split(": ", 1)[1] for e in errors] == [
        "Rollout web: spec.template.spec.containers[0].livenessProbe.successThreshold: "
        "must be 1 for liveness probes (got 2)"
    ]


def test_a_rollout_runs_the_template_its_workload_ref_names(tmp_path: Path) -> None:
    path = write(tmp_path, "app.yaml", WORKLOAD_REF)
    r = check([path])
    # The Rollout is linted on the Deployment's containers (where the fix goes); the Deployment,
    # scaled to 0, runs no pods of its own and is read past, saying why.
    assert where(r) == [("PS001", "Rollout/api", 19, "api")]
    assert r.findings[0].message.endswith(
        "; Deployment api-template's pod template, which the Rollout runs (spec.workloadRef), takes the fix"
    )
    assert r.findings[0].patch_type == "strategic"  # a Deployment's patch
    assert [w.to_json() for w in r.linted] == [
        {"kind": "Rollout", "namespace": "default", "name": "api", "file": path, "line": 1,
         "apiVersion": "argoproj.io/v1alpha1",
         "template": {"kind": "Deployment", "name": "api-template", "file": path, "line": 9}},
    ]  # fmt: skip
    assert [(s.kind, s.name, s.line, s.why) for s in r.skipped] == [
        ("Deployment", "api-template", 9, "its pod template is Rollout api's (spec.workloadRef), linted as "
         "the Rollout; it runs no pods itself (replicas: 0)"),
    ]  # fmt: skip
    objects = k8s.parse(load_docs(WORKLOAD_REF, "m.yaml"))
    assert [(w.kind, w.spec.replicas, w.pod_spec.containers[0].name) for w in objects.workloads] == [
        ("Rollout", 3, "api")
    ]
    # A Deployment that still runs pods is linted too; one not among the manifests is said.
    both = check([write(tmp_path, "both.yaml", WORKLOAD_REF.replace("replicas: 0", "replicas: 2"))])
    # (the disruption rules' findings on the Deployment's 2 replicas aside)
    linted = sorted(f.obj for f in both.findings if f.rule.family != "disruption")
    assert linted == ["Deployment/api-template", "Rollout/api"]
    alone = check([write(tmp_path, "alone.yaml", WORKLOAD_REF.split("---\n")[0])])
    assert (alone.linted, [s.why for s in alone.skipped]) == (
        [],
        ["spec.workloadRef names Deployment api-template, which is not among the manifests: its pod "
         "template is not linted"],
    )  # fmt: skip


def test_a_knative_service_is_linted_with_knatives_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "ksvc.yaml", KNATIVE)
    r = check([path])
    # queue-proxy runs Knative's default readiness (a TCP probe of the user port, 8080 here): no
    # PS001 although a Service sends the pods traffic; the liveness probe's port is that port.
    assert where(r) == [("PS010", "Service/hello", 11, "user-container")]
    assert [(w.kind, w.name, w.api_version) for w in r.linted] == [
        ("Service", "hello", "serving.knative.dev/v1")
    ]
    w = k8s.parse(load_docs(KNATIVE, "m.yaml")).workloads[0]
    c = w.pod_spec.containers[0]
    assert (c.name, [p.container_port for p in c.ports]) == ("user-container", [8080])
    assert c.readiness_probe is not None and c.readiness_probe.tcp_socket is not None
    assert c.readiness_probe.tcp_socket.port == 8080
    assert c.liveness_probe is not None and c.liveness_probe.http_get is not None
    assert c.liveness_probe.http_get.port == 8080
    assert w.pod_labels == {
        "serving.knative.dev/configuration": "hello",
        "serving.knative.dev/service": "hello",
    }
    f = r.findings[0]
    assert (f.patch_type, f.remediation.split(" (")[0]) == ("merge", "livenessProbe.failureThreshold: 5")
    # The merge patch leaves the container unnamed, as written (Knative names it).
    assert "name" not in f.patch["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    assert recheck(path, f) == []


def test_knative_defaults_with_several_containers_and_a_declared_port() -> None:
    text = """\
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: multi}
spec:
  template:
    metadata: {annotations: {autoscaling.knative.dev/min-scale: "3"}}
    spec:
      containers:
        - image: sidecar:1
        - image: app:1
          ports: [{containerPort: 8881}]
          readinessProbe: {httpGet: {path: /ready}}
"""
    w = k8s.parse(load_docs(text, "m.yaml")).workloads[0]
    sidecar, app_ = w.pod_spec.containers
    assert (sidecar.name, app_.name, w.spec.replicas) == ("user-container-0", "user-container-1", 3)
    assert sidecar.readiness_probe is None  # only the serving container gets Knative's default
    assert app_.readiness_probe is not None and app_.readiness_probe.http_get is not None
    assert app_.readiness_probe.http_get.port == 8881


def test_a_custom_resource_with_a_pod_template_is_linted(tmp_path: Path) -> None:
    r = check([write(tmp_path, "cloneset.yaml", CLONESET)])
    assert where(r) == [("PS001", "CloneSet/cart", 11, "cart")]
    assert [(w.kind, w.api_version) for w in r.linted] == [("CloneSet", "apps.kruise.io/v1alpha1")]
    assert r.findings[0].patch_type == "merge"
    # Its template is a pod's: what the API server refuses in the pods its controller makes is an error.
    bad = CLONESET.replace("ports: [{containerPort: 7070}]", "livenessProbe: {tcpSocket: {port: 0}}")
    errors = check([write(tmp_path, "bad.yaml", bad)]).errors
    assert [(e.line, e.obj, e.field) for e in errors] == [
        (13, "CloneSet cart", "spec.template.spec.containers[0].livenessProbe.tcpSocket.port")
    ]
    # A custom resource whose spec.template is no pod template is read past, saying so.
    other = "apiVersion: example.com/v1\nkind: Report\nmetadata: {name: r}\nspec: {template: {format: pdf}}\n"
    skipped = check([write(tmp_path, "other.yaml", other)]).skipped
    assert [s.why for s in skipped] == ["custom resource (example.com) with no pod template at spec.template"]


KEDA = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec: {containers: [{name: worker, image: worker:1}]}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: worker-scaler}
spec:
  scaleTargetRef: {name: worker}
  triggers: [{type: rabbitmq, metadata: {queueName: jobs, value: "20"}}]
---
apiVersion: v1
kind: Service
metadata: {name: worker}
spec: {selector: {app: worker}, ports: [{port: 80}]}
"""


def test_a_keda_scaled_object_is_read_as_the_scaler_of_its_target(tmp_path: Path) -> None:
    path = write(tmp_path, "keda.yaml", KEDA)
    r = check([path])
    # KEDA's defaults: a Deployment target, 0 to 100 replicas.
    assert [w.to_json()["scaledBy"] for w in r.linted] == [
        {"kind": "ScaledObject", "name": "worker-scaler", "minReplicas": 0, "maxReplicas": 100}
    ]
    assert r.skipped == [] and r.errors == []
    bad = KEDA.replace("scaleTargetRef: {name: worker}", "scaleTargetRef: {name: worker}\n  minReplicaCount: 5\n"
                       "  maxReplicaCount: 2")  # fmt: skip
    assert [str(e).split(": ", 1)[1] for e in check([write(tmp_path, "bad.yaml", bad)]).errors] == [
        "ScaledObject worker-scaler: spec.maxReplicaCount: must be greater than or equal to minReplicaCount (5)"
    ]
    # probesim run does not simulate it, and says so.
    printed = runner.invoke(app, ["run", path, "--print-scenario"]).output
    assert (
        "ScaledObject worker-scaler" in printed
        and "a KEDA ScaledObject (scales Deployment worker): not simulated" in printed
    )


def test_the_sample_knative_services_are_linted() -> None:
    root = Path(__file__).resolve().parents[2].parent / "shared" / "realworld" / "knative-samples"
    if not root.is_dir():
        return
    doc = json.loads(runner.invoke(app, ["check", str(root), "-f", "json"]).output)
    assert [(w["kind"], w["name"]) for w in doc["linted"]] == [
        ("Service", "grpc-ping"), ("Service", "helloworld-go"), ("Service", "search-service"),
        ("Service", "login-service"), ("Service", "multi-container"), ("Service", "secrets-go"),
        ("Service", "tag-header"), ("Service", "tag-header"),
    ]  # fmt: skip
    assert doc["skipped"] == [] and doc["findings"] == []


def test_two_versions_of_one_knative_service_are_both_linted_and_never_run(tmp_path: Path) -> None:
    # Knative's tutorials show two versions of a Service in one file, applied one after the other:
    # check lints both; run, which simulates no custom resource, says there is nothing to run
    # (not that the name is defined twice, which matters only to a scenario's workloads).
    one = KNATIVE.split("---\n")[0]
    path = write(tmp_path, "ksvc.yaml", one + "---\n" + one.replace("hello:1", "hello:2"))
    assert [(w.name, w.line) for w in check([path]).linted] == [("hello", 1), ("hello", 13)]
    r = runner.invoke(app, ["run", path])
    assert r.exit_code == 2
    assert r.stderr.startswith(
        f"error: nothing to run in {path}: found 2 Service (custom resource), no Service."
    )


def test_knative_defaults_never_hide_an_invalid_field(tmp_path: Path) -> None:
    # The default port is given only where no port is declared: ports of a wrong shape are refused.
    bad = KNATIVE.split("---\n")[0].replace(
        "        - image: hello:1\n", "        - image: hello:1\n          ports: '8080'\n"
    )
    errors = check([write(tmp_path, "bad.yaml", bad)]).errors
    assert [(e.line, e.field) for e in errors] == [(9, "spec.template.spec.containers[0].ports")]
