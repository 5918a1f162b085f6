"""probesim check on what repositories hold: every pod-template kind, lists, older API versions,
custom resources, kustomize and Helm folders, JSON, nulls and quantities, empty input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from probesim.analysis.check import check
from probesim.cli import app

runner = CliRunner()

POD = """\
metadata: {labels: {app: agent}}
spec:
  restartPolicy: RESTART
  containers:
    - name: agent
      ports: [{name: http, containerPort: 8080}]
      livenessProbe: {httpGet: {path: /live, port: http}, failureThreshold: 1}
"""


def template(indent: int, restart: str = "Always") -> str:
    return textwrap.indent(POD.replace("RESTART", restart), " " * indent)


DAEMONSET = f"""\
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: kube-system}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
{template(4)}"""
JOB = f"""\
apiVersion: batch/v1
kind: Job
metadata: {{name: migrate}}
spec:
  template:
{template(4, "Never")}"""
CRONJOB = f"""\
apiVersion: batch/v1beta1
kind: CronJob
metadata: {{name: nightly}}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
{template(8, "Never")}"""
RC = f"""\
apiVersion: v1
kind: ReplicationController
metadata: {{name: legacy}}
spec:
  replicas: 2
  template:
{template(4)}---
apiVersion: v1
kind: Service
metadata: {{name: legacy}}
spec:
  selector: {{app: agent}}
  ports: [{{port: 80, targetPort: http}}]
"""


def write(tmp: Path, name: str, text: str) -> str:
    p = tmp / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return str(p)


def found(paths: list[str]) -> list[tuple[str, str, str]]:
    return [(f.rule.id, f.obj, f.field) for f in check(paths).findings]


def test_daemonset_is_linted_with_findings_only_it_can_have(tmp_path: Path) -> None:
    got = found([write(tmp_path, "ds.yaml", DAEMONSET)])
    assert ("PS030", "DaemonSet/agent", "spec.template.spec.containers[0]") in got
    ps010 = [f for f in check([str(tmp_path / "ds.yaml")]).findings if f.rule.id == "PS010"]
    assert ps010[0].namespace == "kube-system"
    assert "this node's only pod" in ps010[0].message
    guarded = DAEMONSET.replace("spec:\n  selector", "spec:\n  minReadySeconds: 20\n  selector")
    assert "PS030" not in [r for r, _, _ in found([write(tmp_path, "ds2.yaml", guarded)])]


def test_job_and_cronjob_are_linted_and_never_behind_a_service(tmp_path: Path) -> None:
    svc = "---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: agent}, ports: [{port: 80}]}\n"
    got = found([write(tmp_path, "jobs.yaml", JOB + "---\n" + CRONJOB + svc)])
    assert ("PS031", "Job/migrate", "spec.template.spec.containers[0].livenessProbe") in got
    assert (
        "PS031",
        "CronJob/nightly",
        "spec.jobTemplate.spec.template.spec.containers[0].livenessProbe",
    ) in got
    assert not [g for g in got if g[0] == "PS001"]  # a Service selecting Job pods sends them nothing
    on_failure = JOB.replace("restartPolicy: Never", "restartPolicy: OnFailure")
    assert "PS031" not in [r for r, _, _ in found([write(tmp_path, "j2.yaml", on_failure)])]
    # An invalid object is an error entry of the report (the check exits 2), not a stop.
    errors = check(
        [write(tmp_path, "j3.yaml", JOB.replace("restartPolicy: Never", "restartPolicy: Always"))]
    ).errors
    assert ['supports only "OnFailure" or "Never"' in str(e) for e in errors] == [True]


def test_replication_controller_selector_defaults_to_its_labels(tmp_path: Path) -> None:
    got = found([write(tmp_path, "rc.yaml", RC)])
    assert (
        "PS010",
        "ReplicationController/legacy",
        "spec.template.spec.containers[0].livenessProbe.failureThreshold",
    ) in got
    assert ("PS001", "ReplicationController/legacy", "spec.template.spec.containers[0]") in got


def test_typed_lists_are_read_like_list(tmp_path: Path) -> None:
    items = textwrap.indent(DAEMONSET.replace("apiVersion: apps/v1\nkind: DaemonSet\n", ""), "    ")
    text = (
        "apiVersion: apps/v1\nkind: DaemonSetList\nitems:\n  - "
        + items.lstrip()
        + (
            "---\napiVersion: v1\nkind: ConfigMapList\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
        )
    )
    r = check([write(tmp_path, "lists.yaml", text)])
    assert ("PS030", "DaemonSet/agent") in [(f.rule.id, f.obj) for f in r.findings]
    assert [(s.kind, s.name) for s in r.skipped] == [("ConfigMap", "a")]
    errors = check([write(tmp_path, "bad.yaml", "apiVersion: v1\nkind: List\nitems: 5\n")]).errors
    assert ["items: must be a list of objects" in str(e) for e in errors] == [True]


def test_valid_objects_never_stop_the_check(tmp_path: Path) -> None:
    text = textwrap.dedent("""\
        apiVersion: v1
        kind: Service
        metadata: {name: web, annotations: }
        spec: {selector: {app: web}, ports: [{port: 80}]}
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: a}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers:
                - name: app
                  resources: {requests: {cpu: .5, memory: 64Mi}, limits: {cpu: "1.5"}}  # the HPA is on memory
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: b}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: app}]}
        ---
        apiVersion: serving.knative.dev/v1
        kind: Service
        metadata: {name: hello}
        spec: {template: {spec: {containers: [{image: x}]}}}
        ---
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: crd}
        spec: {enum: [=, <]}
        ---
        apiVersion: autoscaling/v2
        kind: HorizontalPodAutoscaler
        metadata: {name: web, namespace: a}
        spec:
          scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
          maxReplicas: 3
          metrics: [{type: Resource, resource: {name: memory, target: {type: Utilization, averageUtilization: 80}}}]
        """)
    r = check([write(tmp_path, "m.yaml", text)])
    assert {(s.kind, s.why.split(" ")[0]) for s in r.skipped} == {("CustomResourceDefinition", "a")}
    # The Knative Service is a workload now, told from the Service of its name by its API group.
    assert [(w.kind, w.namespace, w.name, w.api_version) for w in r.linted] == [
        ("Deployment", "a", "web", "apps/v1"),
        ("Deployment", "b", "web", "apps/v1"),
        ("Service", "default", "hello", "serving.knative.dev/v1"),
    ]
    # The Service in "default" selects neither Deployment: they are in namespaces a and b.
    assert [f.rule.id for f in r.findings] == []


def test_directories_as_users_have_them(tmp_path: Path) -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "j"},
        "spec": {
            "selector": {"matchLabels": {"a": "j"}},
            "template": {
                "metadata": {"labels": {"a": "j"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "livenessProbe": {
                                "exec": {"command": ["true"]},
                                "failureThreshold": 1,
                                "timeoutSeconds": 2,
                            },
                        }
                    ]
                },
            },
        },
    }
    write(tmp_path, "app/deploy.json", json.dumps(deploy))
    write(tmp_path, "app/kustomization.yaml", "resources: [deploy.json]\npatches: [{path: patch.yaml}]\n")
    write(
        tmp_path,
        "app/patch.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: j}\nspec: {replicas: 3}\n",
    )
    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: c\n")
    write(tmp_path, "chart/templates/d.yaml", "kind: Deployment\nspec: {replicas: {{ .Values.n }}}\n")
    write(tmp_path, "tpl.yaml", 'metadata:\n  name: {{ .Release.Name }}\n  labels:\n{{- include "x" . }}\n')
    write(tmp_path, "values.yaml", "replicaCount: 1\n")
    write(tmp_path, ".github/workflows/ci.yml", "on: push\njobs: {}\n")
    write(tmp_path, "docker-compose.yml", "services: {web: {image: x}}\n")
    write(tmp_path, "package-lock.json", "{" + " " * 10_000_001 + "}")
    r = check([str(tmp_path)])
    assert [(f.rule.id, f.obj) for f in r.findings] == [("PS010", "Deployment/j")]
    why = {Path(s.file).name: s.why for s in r.skipped}
    assert why["chart"].startswith("an unrendered Helm chart")
    assert why["kustomization.yaml"].startswith("a kustomization")
    assert why["patch.yaml"].startswith("a kustomize patch")
    assert why["tpl.yaml"].startswith("Go template markers")
    assert why["values.yaml"].startswith("Helm values")
    assert why["ci.yml"].startswith("a CI workflow")
    assert why["docker-compose.yml"].startswith("a Compose file")
    assert why["package-lock.json"] == "larger than 10 MB: not read"


def test_a_chart_alone_and_empty_input_exit_2_with_one_line(tmp_path: Path) -> None:
    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: c\n")
    write(tmp_path, "chart/values.yaml", "a: 1\n")
    r = runner.invoke(app, ["check", str(tmp_path / "chart")])
    assert r.exit_code == 2
    assert "unrendered Helm chart: run `helm template" in r.output
    assert r.output.count("\n") == 1
    empty = runner.invoke(app, ["check", "-"], input="")
    assert empty.exit_code == 2
    assert "no Kubernetes object found in standard input" in empty.output


def test_skipped_is_reported_in_every_format(tmp_path: Path) -> None:
    path = write(
        tmp_path, "m.yaml", DAEMONSET + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n"
    )
    text = runner.invoke(app, ["check", path])
    assert "skipped 1 object (1 ConfigMap): not linted (-v lists them, with why)" in text.output
    verbose = runner.invoke(app, ["check", path, "-v"])
    assert "holds no pod template or probe" in verbose.output
    doc = json.loads(runner.invoke(app, ["check", path, "-f", "json"]).output)
    assert doc["skipped"] == [{"kind": "ConfigMap", "name": "cfg", "namespace": None, "file": path,
                               "line": 15, "why": "holds no pod template or probe"}]  # fmt: skip
    sarif = json.loads(runner.invoke(app, ["check", path, "-f", "sarif"]).output)
    assert sarif["runs"][0]["properties"]["skipped"][0]["kind"] == "ConfigMap"
    assert "Skipped (not linted)" in runner.invoke(app, ["check", path, "-f", "junit"]).output


def test_unknown_rules_in_ignore_annotations_are_warned(tmp_path: Path) -> None:
    text = DAEMONSET.replace("metadata: {name: agent, namespace: kube-system}",
                             'metadata: {name: agent, namespace: kube-system, annotations: {probesim.dev/ignore: "PS999=x, PS030=rolls slowly"}}')  # fmt: skip
    r = check([write(tmp_path, "ds.yaml", text)])
    assert r.warnings == [
        "DaemonSet/kube-system/agent: annotation probesim.dev/ignore names unknown rule 'PS999' (probesim check --list-rules)"
    ]
    assert [s.finding.rule.id for s in r.suppressed] == ["PS030"]


def test_scenario_inline_manifests_are_linted(tmp_path: Path) -> None:
    scenario = (
        textwrap.dedent("""\
        apiVersion: probesim.dev/v1alpha1
        kind: Scenario
        metadata: {name: s}
        manifests:
          - apiVersion: v1
            kind: Service
            metadata: {name: legacy}
            spec: {selector: {app: agent}, ports: [{port: 80, targetPort: http}]}
        spec: {duration: 1m}
        ---
        """)
        + RC.split("---\n")[0]
    )
    path = write(tmp_path, "s.yaml", scenario)
    r = runner.invoke(app, ["check", "--scenario", path, "-f", "json"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    assert {(f["rule"], f["object"], f["file"]) for f in doc["findings"]} == {
        ("PS001", "ReplicationController/legacy", path),
        ("PS010", "ReplicationController/legacy", path),
        # its replicas: nothing spreads them over nodes, no budget guards them
        ("PS037", "ReplicationController/legacy", path),
        ("PS039", "ReplicationController/legacy", path),
    }
    assert doc["files"] == [path]


PORT_ZERO = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          ports: [{containerPort: 8080}]
          livenessProbe:
            httpGet: {path: /healthz, port: 0}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          livenessProbe: {exec: {command: [x]}, failureThreshold: 1, timeoutSeconds: 5}
"""
PORT_ZERO_ERROR = (
    "port0.yaml:14: Deployment web: spec.template.spec.containers[0].livenessProbe.httpGet.port: "
    "must be a port number between 1 and 65535, inclusive, or a port name (got 0)"
)


def test_a_probe_on_port_0_is_an_input_error_of_its_document(tmp_path: Path) -> None:
    # The API server refuses port 0 (ValidatePortNumOrName): an error naming file, line and field,
    # not a traceback from building the container's behaviour; the other Deployment is linted.
    path = write(tmp_path, "port0.yaml", PORT_ZERO)
    r = runner.invoke(app, ["check", path])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.splitlines()[0] == f"error: {tmp_path}/{PORT_ZERO_ERROR}"
    assert [(f.rule.id, f.obj) for f in check([path]).findings] == [("PS010", "Deployment/api")]
    ran = runner.invoke(app, ["run", path, "--duration", "30s"])
    assert ran.exit_code == 2 and "Traceback" not in ran.output
    assert ran.stderr == f"error: {tmp_path}/{PORT_ZERO_ERROR}\n"


def deployment(name: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: app
          livenessProbe: {{exec: {{command: [x]}}, failureThreshold: 1, timeoutSeconds: 5}}
"""


CONFIGMAP_TWICE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  LOG_LEVEL: info
  TIMEOUT: 5s
  LOG_LEVEL: debug
"""


def test_a_duplicate_key_is_an_error_of_its_document_only(tmp_path: Path) -> None:
    # The ConfigMap's duplicate key used to drop every object after it in the file.
    path = write(
        tmp_path, "app.yaml", deployment("web") + "---\n" + CONFIGMAP_TWICE + "---\n" + deployment("api")
    )
    report = check([path])
    assert [str(e) for e in report.errors] == [
        f'{path}:19: ConfigMap settings: duplicate key "data.LOG_LEVEL" (already defined at line 17)'
    ]
    assert [(f.rule.id, f.obj, f.line) for f in report.findings] == [
        ("PS010", "Deployment/web", 11),
        ("PS010", "Deployment/api", 31),
    ]
    r = runner.invoke(app, ["check", path, "-f", "json"])
    assert r.exit_code == 2  # an input error still exits 2, with the findings of the rest
    assert len(json.loads(r.stdout)["findings"]) == 2


def test_a_syntax_error_in_the_middle_document_keeps_its_neighbours(tmp_path: Path) -> None:
    broken = deployment("broken").replace("metadata: {name: broken}", "metadata: {name: broken\n  labels: [}")
    path = write(tmp_path, "app.yaml", deployment("web") + "---\n" + broken + "---\n" + deployment("api"))
    report = check([path])
    assert [str(e) for e in report.errors] == [
        f"{path}:16: YAML syntax error: did not find expected ',' or '}}' (while parsing a flow mapping at line 15)"
    ]
    assert [(f.obj, f.line) for f in report.findings] == [("Deployment/web", 11), ("Deployment/api", 36)]
    r = runner.invoke(app, ["check", path])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "2 errors, 0 warnings, 0 info in 2 objects" in r.stdout


def test_an_api_version_no_longer_served_is_said_and_still_read(tmp_path: Path) -> None:
    # The Deprecated API Migration Guide: apps/v1beta1 and extensions/v1beta1 workloads stopped
    # being served in 1.16, batch/v1beta1 CronJob and policy/v1beta1 PodDisruptionBudget in 1.25.
    text = textwrap.dedent("""\
        apiVersion: apps/v1beta1
        kind: StatefulSet
        metadata: {name: zk}
        spec:
          serviceName: zk
          template:
            metadata: {labels: {app: zk}}
            spec: {containers: [{name: zk, image: zookeeper:3.9}]}
        ---
        apiVersion: v1
        kind: List
        items:
          - apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              selector: {matchLabels: {app: web}}
              template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: web:1}]}}
          - apiVersion: policy/v1beta1
            kind: PodDisruptionBudget
            metadata: {name: zk}
            spec: {maxUnavailable: 1, selector: {matchLabels: {app: zk}}}
        """)
    path = write(tmp_path, "m.yaml", text)
    r = check([path])
    assert r.warnings == [
        f"{path}:1: StatefulSet zk: apps/v1beta1 StatefulSet is no longer served since Kubernetes 1.16 (use "
        "apps/v1): a current cluster rejects it (probesim still reads it)",
        f"{path}:19: PodDisruptionBudget zk: policy/v1beta1 PodDisruptionBudget is no longer served since "
        "Kubernetes 1.25 (use policy/v1): a current cluster rejects it (probesim still reads it)",
    ]
    assert [w.name for w in r.linted] == ["zk", "web"]  # still read
