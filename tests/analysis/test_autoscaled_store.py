"""PS047: an autoscaler on a store whose replicas are not interchangeable (review item 5: an HPA
on a standalone Redis behind one Service, each replica a store of its own)."""

from __future__ import annotations

import probesim.analysis.rules  # noqa: F401  (registers the rules)
from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.manifests import kubernetes as k8s
from probesim.manifests.yamlsrc import load_docs
from probesim.profiles import ProfileCorrection, catalog

REDIS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: back}
spec:
  replicas: 1
  selector: {matchLabels: {app: back}}
  template:
    metadata: {labels: {app: back}}
    spec:
      containers:
        - name: redis
          image: redis:7.2
          ports: [{containerPort: 6379}]
          resources: {requests: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: back}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: back}
  minReplicas: 3
  maxReplicas: 10
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]
"""


def found(text: str, corrections: tuple[ProfileCorrection, ...] = ()) -> list[Finding]:
    docs = list(load_docs(text, "x.yaml"))
    return list(REGISTRY.checks["PS047"](Context(k8s.parse(docs), None, corrections=corrections, docs=docs)))


def test_an_hpa_on_a_redis_deployment_is_said_on_the_hpa() -> None:
    (f,) = found(REDIS)
    assert (f.obj, f.line) == ("HorizontalPodAutoscaler/back", 16)
    assert f.message == (
        "HorizontalPodAutoscaler back scales Deployment back from 3 to 10 replicas, but a pod it adds is an "
        "empty store until it is made a replica of the primary (or, with nothing replicating, a store of its "
        "own behind the same Service), and one it removes may be the primary — assumed: Redis / Valkey "
        "(image redis:7.2), one primary takes the writes (Sentinel promotes a replica when the primary is "
        "lost; Redis Cluster shards the keys over several primaries)"
    )
    # The fix names the count to set instead and how this store adds members (its profile's).
    assert f.patch is None and f.remediation == (
        "Remove HorizontalPodAutoscaler back and set Deployment back's spec.replicas to 1, or the primary and "
        "the standbys its replication is set up for. Scale Redis / Valkey through Sentinel (a new replica is "
        "made one by REPLICAOF and the sentinels find it) or Redis Cluster (redis-cli --cluster add-node, then "
        "--cluster reshard moves hash slots to it; a node leaves only once its slots are moved away). "
        "Autoscale the stateless services in front of it instead."
    )


def test_a_quorum_store_and_a_scaled_object_say_the_quorum() -> None:
    etcd = REDIS.replace("redis:7.2", "quay.io/coreos/etcd:v3.5.12").replace("6379", "2379")
    keda = etcd.split("---\n")[0] + (
        "---\napiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: back}\n"
        "spec:\n  scaleTargetRef: {name: back}\n  minReplicaCount: 3\n  maxReplicaCount: 5\n"
        "  triggers: [{type: cpu, metricType: Utilization, metadata: {value: '50'}}]\n"
    )
    (f,) = found(keda)
    assert f.obj == "ScaledObject/back"
    assert f.message.startswith(
        "ScaledObject back scales Deployment back from 3 to 5 replicas, but members join and leave through "
        "the store's reconfiguration, not by a pod starting, and the quorum it needs moves with the count — "
        "assumed: etcd"
    )
    assert f.remediation == (
        "Remove ScaledObject back and set Deployment back's spec.replicas to 3 (the autoscaler's minimum; an "
        "odd count: 3 members ride out one lost, 5 two). Scale etcd through runtime reconfiguration: etcdctl "
        "member add before the new member starts, etcdctl member remove before one goes, one member at a time. "
        "Autoscale the stateless services in front of it instead."
    )
    # The count is the autoscaler's minimum made odd, and never below the 3 a quorum needs to
    # ride out a lost member.
    for least, said in (
        ("4", "5 (the autoscaler's minimum 4, made odd;"),
        ("1", "3 (the fewest members that ride"),
    ):
        (g,) = found(keda.replace("minReplicaCount: 3", f"minReplicaCount: {least}"))
        assert f"spec.replicas to {said}" in g.remediation, g.remediation


def test_every_store_says_how_it_adds_and_removes_members_with_its_source() -> None:
    stores = [p for p in catalog().values() if p.membership != "independent"]
    assert len(stores) >= 12
    for p in stores:
        assert p.scale_with and "scaleWith" in p.sources, p.id


def test_interchangeable_replicas_and_an_app_probesim_does_not_know_are_left_alone() -> None:
    assert found(REDIS.replace("redis:7.2", "example.com/api:1")) == []
    independent = ProfileCorrection.model_validate({"workload": "back", "membership": "independent"})
    assert found(REDIS, (independent,)) == []
    assert found(REDIS.split("---\n")[0]) == []  # no autoscaler
