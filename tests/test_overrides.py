"""--set: values read as YAML, scenario and manifest paths, and errors that name the --set."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from probesim.errors import InputError
from probesim.manifests.scenario import load_scenario
from probesim.overrides import parse_axis, parse_set

runner = CliRunner()

SCENARIO = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: set-test}
manifests: [k8s.yaml]
spec:
  duration: 20s
  traffic:
    - {rate: 10}
    - {rate: 5, path: /b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web.v2, namespace: prod}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: example.com/app:1
          readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
"""
K8S = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: prod}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web.v2, namespace: staging}
    spec:
      replicas: 1
      selector: {matchLabels: {app: other}}
      template:
        metadata: {labels: {app: other}}
        spec: {containers: [{name: app, image: example.com/app:1}]}
"""


@pytest.fixture
def scenario_file(tmp_path: Path) -> str:
    (tmp_path / "k8s.yaml").write_text(K8S)
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    return str(p)


def load(path: str, *sets: str):  # type: ignore[no-untyped-def]
    return load_scenario(path, (), [parse_set(s) for s in sets])


def test_values_are_yaml_scalars() -> None:
    assert parse_set("spec.seed=3").value == 3
    assert parse_set("a=500.5").value == 500.5
    assert parse_set("a=10s").value == "10s"
    assert parse_set("a=true").value is True
    assert parse_set("a=null").value is None
    assert parse_set("a=").value is None
    assert parse_set("a='3'").value == "3"
    assert parse_set("a=x,y").value == "x,y"  # one value in run --set
    assert parse_set("a={x: 1}").value == {"x": 1}
    assert parse_axis("a=1,2s,true,'x,y',[1, 2]").values == (1, "2s", True, "x,y", [1, 2])


def test_scenario_fields_are_set_before_validation(scenario_file: str) -> None:
    sc = load(scenario_file, "spec.seed=3", "spec.traffic[1].rate=500", "spec.traffic[0].keepAlive=true")
    assert sc.spec.seed == 3
    assert [t.rate for t in sc.spec.traffic] == [10.0, 500.0]
    assert sc.spec.traffic[0].keep_alive is True
    # a missing mapping is made on the way; the duration text is read as the file's would be
    sc = load(scenario_file, "spec.behavior.web\\.v2.containers.app.start=10s", "spec.duration=1m")
    assert sc.spec.behavior["web.v2"].containers["app"].start == 10_000
    assert sc.spec.duration == 60_000


def test_manifest_objects_by_kind_name_and_namespace(scenario_file: str) -> None:
    # a dotted name is found whole; short and plural kinds as kubectl takes them
    sc = load(scenario_file, "deploy/prod/web.v2.spec.replicas=5", "svc/web.spec.ports[0].port=8081")
    replicas = {(w.metadata.namespace, w.name): w.spec.replicas for w in sc.workloads}
    assert replicas == {("prod", "web.v2"): 5, ("staging", "web.v2"): 1}
    assert sc.services[0].spec.ports[0].port == 8081
    sc = load(scenario_file, "deployments/staging/web.v2.spec.replicas=3")  # an item of a List
    assert {w.metadata.namespace: w.spec.replicas for w in sc.workloads} == {"prod": 2, "staging": 3}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            "spec.traffic[2].rate=1",
            "--set spec.traffic[2].rate=1: index out of range: spec.traffic has 2 items ([0] to [1])",
        ),
        (
            "spec.traffic.rate=1",
            "--set spec.traffic.rate=1: spec.traffic is a list of 2 items, not a mapping; give an index: spec.traffic[0]",
        ),
        ("spec.duration.x=1", "--set spec.duration.x=1: spec.duration is a string, not a mapping"),
        (
            "spec.actions[0].at=1s",
            "--set spec.actions[0].at=1s: spec.actions is not set: there is no item 0 to change",
        ),
        ("spec.traffic[x].rate=1", "--set spec.traffic[x].rate=1: bad index '[x]' in 'spec.traffic[x].rate'"),
        ("spec..seed=1", "--set spec..seed=1: empty key in 'spec..seed'"),
        ("spec.seed", "--set spec.seed: use path=value"),
        (
            "spec" + ".a" * 64 + "=1",
            "--set spec.a.a.a.a",
        ),  # deeper than a scenario may nest: refused, not a RecursionError
        ("spec.seed=[1", "--set spec.seed=[1: the value is not YAML"),
        (
            "deployment/api.spec.replicas=3",
            "--set deployment/api.spec.replicas=3: no Deployment named 'api' (there are: deployment/staging/web.v2, deployment/prod/web.v2)",
        ),
        (
            "deployment/web.v2.spec.replicas=3",
            "--set deployment/web.v2.spec.replicas=3: Deployment web.v2 is in several namespaces (prod, staging): name one, deployment/<namespace>/web.v2.<field>",
        ),
        (
            "statefulset/db.spec.replicas=1",
            "--set statefulset/db.spec.replicas=1: no object of kind 'statefulset' among the manifests (kinds: Deployment, Service)",
        ),
        ("svc/web=1", "--set svc/web=1: give a field of Service web: svc/web.<field>=value"),
        # the same validation and messages as the file's, said to come from the --set
        (
            "spec.seed=-1",
            "--set spec.seed=-1: Scenario: spec.seed: Input should be greater than or equal to 0 (got -1)",
        ),
        (
            "spec.traffic[0].rate=fast",
            "--set spec.traffic[0].rate=fast: Scenario: spec.traffic[0].rate: Input should be a valid number (got 'fast')",
        ),
        ("spec.sed=1", "--set spec.sed=1: Scenario: spec.sed: unknown field"),
        (
            "spec.traffic[0].stages=[{duration: 1s, target: 2}]",
            "--set spec.traffic[0].stages=[{duration: 1s, target: 2}]: Scenario: spec.traffic[0]: give exactly one of 'rate', 'stages' or 'series'",
        ),
        (
            "deploy/prod/web.v2.spec.replicas=many",
            "--set deploy/prod/web.v2.spec.replicas=many: Deployment web.v2: spec.replicas: Input should be a valid integer",
        ),
    ],
)
def test_errors_name_the_set(scenario_file: str, given: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        load(scenario_file, given)
    assert str(e.value).startswith(message), str(e.value)


def test_cli_run_set_and_errors_exit_2_without_traceback() -> None:
    r = runner.invoke(app, ["run", "seed000-readiness", "--json", "--no-series", "--set", "spec.traffic[0].rate=4",
                            "--set", "deployment/app.spec.replicas=3"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert '"offered": 24' in r.output and '"replicas": 3' in r.output
    for bad in ("spec.traffic[3].rate=1", "deployment/web.spec.replicas=1", "spec.seed=x"):
        r = runner.invoke(app, ["run", "seed000-readiness", "--set", bad])
        assert r.exit_code == 2, r.output
        assert r.output.startswith(f"error: --set {bad}: "), r.output
        assert "Traceback" not in r.output
    # an error elsewhere in the file that follows from a --set names the --set in force
    r = runner.invoke(app, ["run", "seed000-readiness", "--set", "deployment/app.spec.replicas=1"])
    assert r.exit_code == 2
    assert r.output.replace("\n", "").endswith(
        "Scenario: spec.behavior.app.pods[0].ordinals[0]: ordinal 1 is out of range: app has 1 replicas "
        "(0-based) (with --set deployment/app.spec.replicas=1)"
    ), r.output
