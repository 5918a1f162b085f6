"""The disruption rules (PS035–PS040): each fires on a minimal manifest and not on its fixed form,
with its exact text and field, and its fix (a JSON merge patch of the object, or the budget to add)
re-checks clean. The disruption controller's arithmetic follows
pkg/controller/disruption/disruption.go getExpectedPodCount (a percentage of minAvailable or
maxUnavailable rounds up: intstr.GetScaledValueFromIntOrPercent(..., true)) and
disruptionsAllowed = currentHealthy − desiredHealthy."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from probesim.analysis.budgets import read_budgets
from probesim.analysis.check import check
from probesim.analysis.findings import Finding
from probesim.analysis.patch import apply
from probesim.analysis.stress import base_scenario, run_one, stress_scenario
from probesim.analysis.stress_verdicts import StressThresholds
from probesim.kube.disruption import scaled
from probesim.manifests import kubernetes as k8s
from probesim.manifests.scenario import scenario_from_text
from probesim.manifests.yamlsrc import load_docs

DISRUPTION = {"PS035", "PS036", "PS037", "PS038", "PS039", "PS040"}


def deployment(name: str = "web", replicas: int = 3, pod: dict[str, Any] | None = None,
               strategy: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "containers": [{
                    "name": "app", "image": "nginx", "ports": [{"containerPort": 80}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                }],
                **(pod or {}),
            },
        },
    }  # fmt: skip
    if strategy is not None:
        spec["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": spec}


def budget(name: str = "web", app: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {**spec, "selector": {"matchLabels": {"app": app}}},
    }


HOSTNAME_SPREAD = {"topologySpreadConstraints": [{
    "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchLabels": {"app": "web"}}}]}  # fmt: skip


def run(tmp_path: Path, objs: list[dict[str, Any]], scenario: str | None = None) -> list[Finding]:
    f = tmp_path / "m.yaml"
    text = yaml.safe_dump_all(objs, sort_keys=False)
    f.write_text(text)
    sc = scenario_from_text(scenario + "---\n" + text, "s.yaml", tmp_path) if scenario else None
    return [x for x in check([str(f)], sc).findings if x.rule.id in DISRUPTION]


def fixed(objs: list[dict[str, Any]], f: Finding) -> list[dict[str, Any]]:
    """``objs`` with ``f``'s patch applied to its object (a JSON merge patch)."""
    assert f.patch is not None and f.patch_type == "merge"
    out = copy.deepcopy(objs)
    kind, _, name = f.obj.partition("/")
    i = next(i for i, o in enumerate(out) if o["kind"] == kind and o["metadata"]["name"] == name)
    out[i] = apply(out[i], f.patch, "merge")
    return out


def ids(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.rule.id, f.obj) for f in findings]


def test_the_controllers_arithmetic_rounds_percentages_up() -> None:
    # getExpectedPodCount: GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
    assert [scaled(v, n, True) for v, n in (("10%", 3), ("50%", 3), ("0%", 10), ("100%", 4), (2, 9))] == [
        1,
        2,
        0,
        4,
        2,
    ]
    docs = list(
        load_docs(yaml.safe_dump_all([budget(minAvailable="50%"), budget("b", maxUnavailable="34%")]), "x")
    )
    a, b = read_budgets(docs)
    assert (a.desired_healthy(3), a.allowed(3)) == (2, 1)  # ceil(1.5)
    assert (b.desired_healthy(3), b.allowed(3)) == (1, 2)  # 3 − ceil(1.02)


def test_ps035_min_available_at_the_replicas(tmp_path: Path) -> None:
    objs = [deployment(pod=HOSTNAME_SPREAD), budget(minAvailable=3)]
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.obj, f.field, f.line) == (
        "PS035",
        "PodDisruptionBudget/web",
        "spec.minAvailable",
        37,
    )
    assert f.message == (
        "minAvailable 3 keeps every pod of Deployment web (3 replicas): no eviction is ever allowed, so "
        "every drain of a node running one of its pods (kubectl drain, a node pool upgrade) stalls — "
        "assumed: nginx (image nginx), interchangeable replicas, any of which may go"
    )
    assert f.patch == {"spec": {"maxUnavailable": 1, "minAvailable": None}}
    assert f.remediation == (
        "spec.maxUnavailable: 1, remove spec.minAvailable (one pod at a time may be evicted: drains "
        "move on while the others serve)"
    )
    assert run(tmp_path, fixed(objs, f)) == []
    # 100 % is every pod too; 2 of 3 allows one eviction.
    assert ids(run(tmp_path, [deployment(pod=HOSTNAME_SPREAD), budget(minAvailable="100%")])) == [
        ("PS035", "PodDisruptionBudget/web")
    ]
    assert run(tmp_path, [deployment(pod=HOSTNAME_SPREAD), budget(minAvailable=2)]) == []


def test_ps035_max_unavailable_zero_and_the_hpa_minimum(tmp_path: Path) -> None:
    (f,) = run(tmp_path, [deployment(pod=HOSTNAME_SPREAD), budget(maxUnavailable="0%")])
    assert f.message.startswith("maxUnavailable 0% allows no eviction at any replica count")
    assert f.patch == {"spec": {"maxUnavailable": 1}}
    # An HPA scaling between 2 and 10: at its minimum, minAvailable 2 keeps every pod.
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 2, "maxReplicas": 10}}  # fmt: skip
    found = run(tmp_path, [deployment(replicas=5, pod=HOSTNAME_SPREAD), budget(minAvailable=2), hpa])
    assert sorted(ids(found)) == [("PS035", "PodDisruptionBudget/web"), ("PS040", "Deployment/web")]
    (g,) = [x for x in found if x.rule.id == "PS035"]
    assert "Deployment web (2 replicas at its HPA's minimum)" in g.message


def test_ps036_a_budget_that_selects_nothing(tmp_path: Path) -> None:
    objs = [deployment(pod=HOSTNAME_SPREAD), budget("web-pdb", app="webapp", maxUnavailable=1)]
    found = run(tmp_path, objs)
    assert ids(found) == [("PS039", "Deployment/web"), ("PS036", "PodDisruptionBudget/web-pdb")]
    f = found[1]
    assert f.field == "spec.selector"
    assert f.message == (
        "selector {matchLabels: {app: webapp}} matches the pods of no workload of namespace default "
        "(1 here): it guards nothing, and drains evict those pods unguarded"
    )
    # Named after Deployment web: its selector is the fix, and the fix guards it (no PS039 either).
    assert f.patch == {"spec": {"selector": {"matchLabels": {"app": "web"}}}}
    assert run(tmp_path, fixed(objs, f)) == []
    # A budget named after nothing here gets the fix in words; one for another namespace's
    # pods, where the manifests hold no workload, is not judged.
    other = budget("cache", app="cache", maxUnavailable=1)
    (g,) = [x for x in run(tmp_path, [deployment(pod=HOSTNAME_SPREAD), other]) if x.rule.id == "PS036"]
    assert g.patch is None and g.remediation.startswith("set spec.selector.matchLabels")
    elsewhere = {**other, "metadata": {"name": "cache", "namespace": "cache"}}
    assert ids(run(tmp_path, [deployment(pod=HOSTNAME_SPREAD), budget(maxUnavailable=1), elsewhere])) == []


def test_ps037_replicas_that_can_share_a_node(tmp_path: Path) -> None:
    objs = [deployment(), budget(maxUnavailable=1)]
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.obj, f.field, f.severity) == (
        "PS037",
        "Deployment/web",
        "spec.template.spec",
        "warning",
    )
    assert f.message == (
        "3 replicas with no topologySpreadConstraint or pod anti-affinity on kubernetes.io/hostname: the "
        "scheduler's default spreading is only a preference, so they can all land on one node, and its "
        "failure takes every replica at once — assumed: nginx (image nginx), interchangeable replicas, any of which may go"
    )
    assert f.patch == {"spec": {"template": {"spec": HOSTNAME_SPREAD}}}
    assert run(tmp_path, fixed(objs, f)) == []
    # A preferred pod anti-affinity on the hostname spreads them too; one replica is not judged.
    anti = {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                            "labelSelector": {"matchLabels": {"app": "web"}}}}]}}}  # fmt: skip
    assert run(tmp_path, [deployment(pod=anti), budget(maxUnavailable=1)]) == []
    assert run(tmp_path, [deployment(replicas=1)]) == []


ZONED = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  duration: 1m
  cluster: {nodes: {count: 3, zones: [a, b, c]}}
"""


def test_ps038_zones_only_with_a_zoned_cluster_and_one_patch_for_both(tmp_path: Path) -> None:
    objs = [deployment(), budget(maxUnavailable=1)]
    found = run(tmp_path, objs, ZONED)
    assert ids(found) == [("PS037", "Deployment/web"), ("PS038", "Deployment/web")]
    f, g = found
    assert g.severity == "info" and g.message == (
        "3 replicas with nothing spreading them over zones (a, b, c): a zone outage can take every replica at once "
        "— assumed: nginx (image nginx), interchangeable replicas, any of which may go"
    )
    # Both findings give the same patch: the two constraints together.
    assert f.patch == g.patch
    keys = [c["topologyKey"] for c in g.patch["spec"]["template"]["spec"]["topologySpreadConstraints"]]  # type: ignore[index]
    assert keys == ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
    assert run(tmp_path, fixed(objs, g), ZONED) == []


def test_ps039_no_budget_and_the_budget_it_asks_for(tmp_path: Path) -> None:
    objs = [deployment(pod=HOSTNAME_SPREAD)]
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.severity, f.field, f.patch) == ("PS039", "info", "spec.replicas", None)
    assert (
        f.message
        == "3 replicas and no PodDisruptionBudget: a drain or node upgrade may evict them all at once — "
        "assumed: nginx (image nginx), interchangeable replicas, any of which may go"
    )
    assert f.remediation == (
        "add {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web, namespace: default}, "
        "spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}} (one pod at a time: the others "
        "serve while its replacement starts)"
    )
    pdb = yaml.safe_load(f.remediation[4 : f.remediation.index(" (one pod")])
    assert run(tmp_path, [*objs, pdb]) == []


def test_ps040_a_rollout_past_the_budget(tmp_path: Path) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 2}}
    objs = [deployment(replicas=4, pod=HOSTNAME_SPREAD, strategy=strategy), budget(maxUnavailable=1)]
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.obj, f.field, f.severity) == ("PS040", "Deployment/web", "spec.strategy", "info")
    assert f.message == (
        "a rollout (maxSurge 0, maxUnavailable 2) takes down up to 2 of 4 pods at once, but "
        "PodDisruptionBudget/web (maxUnavailable 1) allows 1: a budget limits evictions, not rollouts, "
        "so every rollout goes below the floor the budget keeps"
    )
    assert f.patch == {"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": 1}}}}
    assert run(tmp_path, fixed(objs, f)) == []
    # A budget that allows none: the rollout surges instead.
    (h, g) = run(tmp_path, [deployment(replicas=2, pod=HOSTNAME_SPREAD, strategy=strategy),
                            budget(minAvailable=2)])  # fmt: skip
    assert (g.rule.id, h.rule.id) == ("PS035", "PS040")
    assert h.patch == {"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}}


def test_budgets_read_are_no_longer_listed_as_skipped(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all([deployment(pod=HOSTNAME_SPREAD), budget(maxUnavailable=1)]))
    report = check([str(f)])
    assert [s.kind for s in report.skipped] == []


def drain_stress(objs: list[dict[str, Any]]) -> tuple[str, str]:
    """The node-drain stress's verdict and why, on the default cluster and load model."""
    parsed = k8s.parse(load_docs(yaml.safe_dump_all(objs, sort_keys=False), "m.yaml"))
    w = parsed.workloads[0]
    base = base_scenario(w, parsed.services, None, parsed.pdbs)
    sc, not_run = stress_scenario(base, w, "node-drain")
    r = run_one((0, "Deployment/web", "default", "node-drain", sc, StressThresholds(), not_run))
    return r.verdict, r.why


def test_ps035_its_drain_stress_stalls_before_the_fix_and_completes_after(tmp_path: Path) -> None:
    # A budget PS035 flags refuses every eviction (updatePdbStatus: disruptionsAllowed 0 at
    # minAvailable = replicas), so the pool upgrade never drains its first node; its fix
    # (maxUnavailable 1) lets one pod go at a time and the three nodes are replaced a minute apart.
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}  # fmt: skip
    objs = [deployment(pod=HOSTNAME_SPREAD), budget(minAvailable=3), service]
    (f,) = run(tmp_path, objs)
    assert f.rule.id == "PS035"
    verdict, why = drain_stress(objs)
    assert verdict == "fail"
    assert why.startswith("the upgrade stalled: ") and "(PS035)" in why and "0 of the 3 nodes" in why
    verdict, why = drain_stress(fixed(objs, f))
    assert verdict == "pass"
    assert why.startswith("a node pool upgrade (maxSurge 1, maxUnavailable 0) from 2m: 3 of the 3 nodes "
                          "holding replicas drained; every node replaced at 5m3s (3m3s)")  # fmt: skip
