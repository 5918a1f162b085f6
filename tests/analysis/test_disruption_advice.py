"""Disruption advice that knows the app (PS035, PS037, PS039): what a workload's replicas are to
each other (the catalog's ``membership``: quorum, primary or independent) decides the fix, and
each finding says what it assumed and from what in the manifest.

The advice follows Kubernetes' "Specifying a Disruption Budget for your Application"
(kubernetes.io/docs/tasks/run-application/configure-pdb/, "Think about how your application
reacts to disruptions"): a quorum system (etcd, ZooKeeper, Consul) keeps maxUnavailable 1, "Do not
reduce number of instances below quorum"; a single-instance stateful app may hold
maxUnavailable 0 on purpose ("Possible Solution 2 ... the cluster operator needs to consult you
before termination"); interchangeable replicas get one eviction at a time. The quorum is Raft's
majority, N//2+1 (etcd's FAQ: 3 members tolerate 1 failure, 5 tolerate 2)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from probesim.analysis.check import CheckConfig, check
from probesim.analysis.rules.disruption import quorum
from probesim.engine import simulate
from probesim.profiles import ProfileCorrection, catalog
from tests.analysis.test_disruption_rules import DISRUPTION, budget, deployment, fixed, ids, run
from tests.builders import scenario, times

ETCD_QUORUM = "assumed: etcd (image quay.io/coreos/etcd:v3.5.9), a quorum system, of 3 members 2 must be up for it to write"
ANTI = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "etcd"}}}


def statefulset(
    name: str, image: str, replicas: int = 3, pod: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": image}], **(pod or {})},
            },
        },
    }


def etcd(replicas: int = 3, pod: dict[str, Any] | None = None) -> dict[str, Any]:
    return statefulset("etcd", "quay.io/coreos/etcd:v3.5.9", replicas, pod)


def test_quorum_of_a_raft_group() -> None:
    # etcd FAQ's failure tolerance table: majority 1, 2, 2, 3, 3 for 1 to 5 members
    assert [quorum(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_ps037_a_quorum_system_gets_a_required_anti_affinity_and_says_why(tmp_path: Path) -> None:
    objs = [etcd(), budget("etcd", app="etcd", maxUnavailable=1)]
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.obj, f.severity) == ("PS037", "StatefulSet/etcd", "warning")
    assert f.message == (
        "3 replicas with no required pod anti-affinity on kubernetes.io/hostname: the scheduler's default "
        "spreading is only a preference, so 2 of the 3 members can land on one node, and its failure takes "
        f"the quorum (2 of 3) and every write with it — {ETCD_QUORUM}"
    )
    # The hard rule, not ScheduleAnyway: no two members ever share a node.
    assert f.patch == {"spec": {"template": {"spec": {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [ANTI]}}}}}}  # fmt: skip
    # Its cost is said: a drained member waits for a node with no member.
    assert "with 3 members on exactly 3 nodes, a kubectl drain leaves it Pending until the uncordon" in (
        f.remediation
    )
    assert f.assumed is not None and f.assumed.profile.id == "etcd"
    assert f.assumed.evidence == ("image quay.io/coreos/etcd:v3.5.9",)
    assert run(tmp_path, fixed(objs, f)) == []


def test_ps037_a_preference_is_not_enough_for_a_quorum_and_the_fix_keeps_it(tmp_path: Path) -> None:
    preferred = {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": ANTI}]}}}  # fmt: skip
    objs = [etcd(pod=preferred), budget("etcd", app="etcd", maxUnavailable=1)]
    (f,) = run(tmp_path, objs)
    assert f.rule.id == "PS037"
    assert "on kubernetes.io/hostname: its spreading there is only a preference, so 2 of the 3" in f.message
    after = fixed(objs, f)
    anti = after[0]["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"] == ANTI
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"] == [ANTI]
    assert run(tmp_path, after) == []
    # The same preference on a web app is spreading enough (interchangeable replicas).
    web = deployment(pod={"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {**ANTI, "labelSelector": {"matchLabels": {"app": "web"}}}}]}}})  # fmt: skip
    assert run(tmp_path, [web, budget(maxUnavailable=1)]) == []


def test_the_hard_rules_drain_leaves_the_member_pending_until_its_node_returns() -> None:
    """The cost the PS037 fix states: 3 members on exactly 3 nodes, required anti-affinity on the
    hostname, node-2 drained at 60 s and uncordoned at 120 s. The evicted member fits nowhere
    (InterPodAffinity's filter on the two other nodes, NodeUnschedulable on its own) until the
    uncordon; kubectl drain's evictPods and the scheduler's filters as in tests/engine/test_drains.py."""
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}}  # fmt: skip
    r = simulate(
        scenario(
            probes={"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}},
            kind="StatefulSet",
            replicas=3,
            duration="150s",
            pod_spec=anti,
            manifests=[
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web"},
                    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
                }
            ],
            spec={
                "cluster": {"nodes": {"count": 3}},
                "actions": [
                    {"kind": "drain", "node": "node-2", "at": "60s"},
                    {"kind": "uncordon", "node": "node-2", "at": "120s"},
                ],
            },
        )
    )
    # web-1 (on node-2) is evicted at once (maxUnavailable 1 allows it) and gone at 61 s, when the
    # StatefulSet controller recreates it; it fits nowhere until the uncordon.
    assert times(r, "PodEvicted", "pod/web-1") == [61]
    (e,) = r.events_for("pod/web-1", "FailedScheduling")
    assert e.time_ms == 61_000
    assert e.message.startswith(
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match pod anti-affinity rules."
    )
    assert times(r, "Scheduled", "pod/web-1")[-1] == 120 and times(r, "PodReady", "pod/web-1")[-1] == 120


def test_ps035_a_single_primary_store_is_told_its_budget_may_be_deliberate(tmp_path: Path) -> None:
    objs = [statefulset("db", "postgres:16", replicas=1), budget("db", app="db", maxUnavailable=0)]
    (f,) = run(tmp_path, objs)
    assert (f.rule.id, f.obj, f.field) == ("PS035", "PodDisruptionBudget/db", "spec.maxUnavailable")
    assert f.message == (
        "maxUnavailable 0 allows no eviction at any replica count, so every drain of a node running one of "
        "its pods (kubectl drain, a node pool upgrade) stalls — assumed: PostgreSQL (image postgres:16), one "
        "primary takes the writes (a failover manager such as Patroni, CloudNativePG or repmgr may promote a "
        "standby; PostgreSQL alone does not)"
    )
    # Not told to set 1 alone: no patch, and the deliberate budget (Solution 2) comes first.
    assert f.patch is None
    assert f.remediation == (
        "this budget may be deliberate: keep it if its owners agreed that drains wait for them (they "
        "prepare for the downtime, delete the budget, and recreate it after the drain: Kubernetes' advice "
        "for a single-instance stateful app); else delete it and accept that PostgreSQL is down while a "
        "drain moves its pod (with one pod, maxUnavailable: 1 is the same as no budget)"
    )
    assert f.assumed is not None and f.assumed.profile.membership == "primary"
    # The second option re-checks clean: no budget, one replica (PS039 judges only two or more).
    assert run(tmp_path, objs[:1]) == []


def test_ps035_a_primary_with_replicas_gets_both_options(tmp_path: Path) -> None:
    objs = [statefulset("cache", "redis:7.2", replicas=3, pod=_spread("cache")),
            budget("cache", app="cache", minAvailable=3)]  # fmt: skip
    (f,) = run(tmp_path, objs)
    assert f.patch is None and f.remediation.startswith("this budget may be deliberate")
    assert "set maxUnavailable: 1 (and remove minAvailable), which is safe only where something promotes" in (
        f.remediation
    )
    assert f.message.endswith(
        "— assumed: Redis / Valkey (image redis:7.2), one primary takes the writes (Sentinel promotes a "
        "replica when the primary is lost; Redis Cluster shards the keys over several primaries)"
    )


def test_ps035_a_quorum_system_keeps_max_unavailable_1_with_its_reason(tmp_path: Path) -> None:
    hard = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [ANTI]}}}
    objs = [etcd(pod=hard), budget("etcd", app="etcd", minAvailable=3)]
    (f,) = run(tmp_path, objs)
    assert f.rule.id == "PS035"
    assert f.message.endswith(f"— {ETCD_QUORUM}")
    assert f.patch == {"spec": {"maxUnavailable": 1, "minAvailable": None}}
    assert f.remediation == (
        "spec.maxUnavailable: 1, remove spec.minAvailable (one member at a time: 2 of 3 stay up, above the "
        "quorum of 2 that etcd needs to write, and a member that is down already blocks the next eviction)"
    )
    assert run(tmp_path, fixed(objs, f)) == []
    # Two members: any eviction loses the quorum of 2; the fix is a third member, in words.
    (g,) = [x for x in run(tmp_path, [etcd(2, hard), budget("etcd", app="etcd", minAvailable=2)])
            if x.rule.id == "PS035"]  # fmt: skip
    assert g.patch is None and g.remediation.startswith("run 3 members, then set maxUnavailable: 1")


def test_ps039_the_budget_asked_for_says_the_apps_reason(tmp_path: Path) -> None:
    hard = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [ANTI]}}}
    (f,) = run(tmp_path, [etcd(pod=hard)])
    assert f.rule.id == "PS039"
    assert f.message == (
        f"3 replicas and no PodDisruptionBudget: a drain or node upgrade may evict them all at once — {ETCD_QUORUM}"
    )
    assert f.remediation.endswith(
        "(one member at a time: 2 of 3 stay up, above the quorum of 2 that etcd needs to write)"
    )
    pdb = yaml.safe_load(f.remediation[4 : f.remediation.index(" (one member")])
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "etcd"}}}
    assert run(tmp_path, [etcd(pod=hard), pdb]) == []
    (g,) = run(tmp_path, [etcd(2, hard)])
    assert g.remediation.startswith("run 3 members and add {apiVersion: policy/v1")


def test_a_web_app_and_an_unknown_app_keep_todays_fixes_and_say_so(tmp_path: Path) -> None:
    """Interchangeable replicas: PS037's ScheduleAnyway spread, PS035's and PS039's maxUnavailable 1."""
    app = deployment()
    app["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.acme.io/shop/orders:1.4"
    objs = [app, budget(minAvailable=3)]
    found = run(tmp_path, objs)
    assert ids(found) == [("PS037", "Deployment/web"), ("PS035", "PodDisruptionBudget/web")]
    ps037, ps035 = found
    unknown = ("assumed: interchangeable replicas, any of which may go (an app probesim does not know: "
               ".probesim.yaml → profiles names its family otherwise)")  # fmt: skip
    assert ps035.message.endswith(f"— {unknown}") and ps037.message.endswith(f"— {unknown}")
    assert ps035.patch == {"spec": {"maxUnavailable": 1, "minAvailable": None}}
    assert ps037.patch == {"spec": {"template": {"spec": {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "web"}}}]}}}}  # fmt: skip
    assert ps035.assumed is not None and not ps035.assumed.known
    assert run(tmp_path, fixed(fixed(objs, ps035), ps037)) == []


def test_a_correction_names_the_membership(tmp_path: Path) -> None:
    """MySQL is a single primary by default; a Group Replication cluster is a quorum, said in
    .probesim.yaml → profiles (membership: quorum), and PS037 then asks for the hard rule."""
    objs = [statefulset("mysql", "mysql:8.4")]
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    config = CheckConfig(profiles=(ProfileCorrection(workload="mysql", membership="quorum"),))
    found = [x for x in check([str(f)], None, config).findings if x.rule.id in DISRUPTION]
    (g,) = [x for x in found if x.rule.id == "PS037"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" in str(g.patch)
    assert (
        "assumed: MySQL / MariaDB (image mysql:8.4; .probesim.yaml corrects membership), a quorum"
        in g.message
    )
    default = [x for x in run(tmp_path, copy.deepcopy(objs)) if x.rule.id == "PS037"]
    assert "topologySpreadConstraints" in str(default[0].patch)


def _spread(app: str) -> dict[str, Any]:
    return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": app}}}]}  # fmt: skip


def test_every_family_with_a_quorum_or_a_primary_says_its_source() -> None:
    kept = {p.id: p.membership for p in catalog().values() if p.membership != "independent"}
    assert kept == {
        "postgres": "primary", "mysql": "primary", "redis": "primary", "mongodb": "quorum",
        "rabbitmq": "quorum", "kafka": "quorum", "zookeeper": "quorum", "elasticsearch": "quorum",
        "nats": "quorum", "etcd": "quorum", "cockroachdb": "quorum", "cassandra": "quorum",
    }  # fmt: skip
    assert all(catalog()[f].sources.get("membership") for f in kept)


def test_a_strict_spread_constraint_keeps_members_apart_but_not_with_tainted_nodes_left_out(
    tmp_path: Path,
) -> None:
    # DoNotSchedule, maxSkew 1 over every node (nodeTaintsPolicy Ignore, the default): placing a
    # second member on a node needs every node to hold one (PodTopologySpread's filter: skew =
    # count + 1 − the domains' minimum). With Honor a drain's cordoned node (its
    # node.kubernetes.io/unschedulable taint) is no domain, and 2 − 1 = 1 is allowed.
    strict = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
              "labelSelector": {"matchLabels": {"app": "etcd"}}}  # fmt: skip
    pdb = budget("etcd", app="etcd", maxUnavailable=1)
    assert run(tmp_path, [etcd(pod={"topologySpreadConstraints": [strict]}), pdb]) == []
    honor = {**strict, "nodeTaintsPolicy": "Honor"}
    assert ids(run(tmp_path, [etcd(pod={"topologySpreadConstraints": [honor]}), pdb])) == [
        ("PS037", "StatefulSet/etcd")
    ]


ZONED = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  duration: 1m
  cluster: {nodes: {count: 3, zones: [a, b, c]}}
"""


def test_ps038_on_a_quorum_system_shares_ps037s_patch_with_zones_scheduled_anyway(tmp_path: Path) -> None:
    objs = [etcd(), budget("etcd", app="etcd", maxUnavailable=1)]
    f, g = run(tmp_path, objs, ZONED)
    assert (f.rule.id, g.rule.id) == ("PS037", "PS038") and f.patch == g.patch
    assert g.message.endswith(f"a zone outage can take every replica at once — {ETCD_QUORUM}")
    pod = g.patch["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [ANTI]
    assert pod["topologySpreadConstraints"] == [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "etcd"}}}]  # fmt: skip
    assert run(tmp_path, fixed(objs, g), ZONED) == []


def test_a_sidecar_first_does_not_make_the_members_interchangeable(tmp_path: Path) -> None:
    obj = etcd()
    pod = obj["spec"]["template"]["spec"]
    pod["containers"].insert(0, {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.22.0"})
    (f, g) = run(tmp_path, [obj])
    assert (f.rule.id, g.rule.id) == ("PS039", "PS037")
    assert g.assumed is not None and g.assumed.profile.id == "etcd"
    assert "requiredDuringSchedulingIgnoredDuringExecution" in str(g.patch)


def test_jobs_are_not_judged(tmp_path: Path) -> None:
    # A restartable batch Job: Kubernetes' advice is no budget; its pods run to completion.
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "load"},
           "spec": {"parallelism": 3, "completions": 3, "template": {"spec": {
               "restartPolicy": "OnFailure", "containers": [{"name": "load", "image": "busybox"}]}}}}  # fmt: skip
    assert run(tmp_path, [job]) == []
