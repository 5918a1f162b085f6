"""Rules on what scales a workload: an HPA whose utilization target cannot be computed because a
container of the pods requests none of the resource, so the HPA never scales; an autoscaler on a
store whose replicas are not interchangeable (a primary and its copies, a quorum's members)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.rules.disruption import app_of
from probesim.manifests.yamlsrc import get_path
from probesim.model.kubernetes import Container, HorizontalPodAutoscaler, ScaledObject, Workload
from probesim.profiles import Profile

rule = REGISTRY.rule


def utilization_resources(h: HorizontalPodAutoscaler) -> list[str]:
    """The resources an HPA targets as a utilization (a share of the pods' requests): its v2
    Resource metrics of type Utilization, v1's targetCPUUtilizationPercentage, or CPU when it
    gives no metric at all (the API's default, 80 %)."""
    if not h.spec.metrics:
        return ["cpu"]
    res = [m.resource for m in h.spec.metrics if m.type == "Resource" and m.resource is not None]
    return [r.name for r in res if r.target.type == "Utilization"]


def _requests(c: Container, resource: str) -> bool:
    """Whether ``c`` requests ``resource``: its request, or its limit (the API server defaults a
    missing request to the limit)."""
    r = c.resources
    return getattr(r.requests, resource, None) is not None or getattr(r.limits, resource, None) is not None


def _defaulted(ctx: Context, namespace: str, resource: str) -> bool:
    """Whether a LimitRange of ``namespace`` among the documents checked gives containers a
    default request (``defaultRequest``, or ``default``: the limit, which the request then
    takes) for ``resource``: admission fills it in."""
    for doc in ctx.docs:
        d = doc.data
        if not isinstance(d, dict) or d.get("kind") != "LimitRange":
            continue
        if str((d.get("metadata") or {}).get("namespace") or "default") != namespace:
            continue
        for item in get_path(d, ("spec", "limits")) or []:
            if (
                isinstance(item, dict)
                and item.get("type", "Container") == "Container"
                and any(
                    isinstance(item.get(k), dict) and resource in item[k]
                    for k in ("defaultRequest", "default")
                )
            ):
                return True
    return False


@rule(
    id="PS043",
    name="hpa-utilization-without-request",
    severity="warning",
    title="An HPA scales on a utilization its pods cannot give: a container requests none of the resource.",
    why="An HPA's Utilization target is usage over the pods' requests. The HPA controller sums the "
    "request of every container of a pod (and of its sidecars) and, when one has none, gives up: "
    "'missing request for cpu in container … of Pod …' (calculatePodRequests in the podautoscaler's "
    "replica calculator), the HPA's condition ScalingActive False with reason "
    "FailedGetResourceMetric, and the workload stays at the replicas it has — however loaded, "
    "through the very surge the HPA was written for. A limit alone counts (the API server copies it "
    "into the request), as does a LimitRange of the namespace with a default, and pod-level "
    "resources (spec.resources.requests) where that feature is on.",
    fix="Set resources.requests for that resource on the container: what it uses at its normal load, "
    "since the utilization the HPA targets is usage over that request; or scale on an AverageValue "
    "target, which needs no request.",
)  # fmt: skip
def hpa_utilization_without_request(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        w = t.workload
        h = ctx.objects.scaler_of(w)
        if not isinstance(h, HorizontalPodAutoscaler):
            continue
        if t.group != "containers" and t.container.restart_policy != "Always":
            continue  # a regular init container's request is not counted
        pod_level = get_path(t.doc.data, (*t.base, *t.spec_path, "resources", "requests")) or {}
        for res in utilization_resources(h):
            if _requests(t.container, res) or res in pod_level or _defaulted(ctx, t.namespace, res):
                continue
            msg = (f"HorizontalPodAutoscaler {h.name} scales {w.kind} {w.name} on {res} utilization, but "
                   f"container {t.container.name} requests no {res}: the HPA cannot compute it ('missing "
                   f"request for {res} in container {t.container.name}', FailedGetResourceMetric) and "
                   f"never scales {w.name}")  # fmt: skip
            yield ctx.finding("PS043", t, msg, ("resources",))


@rule(
    id="PS047",
    name="autoscaled-store",
    severity="warning",
    title="An autoscaler adds and removes replicas of a store whose replicas are not interchangeable.",
    why="An HPA (or a KEDA ScaledObject) scales by starting and deleting pods, as if any replica could "
    "take any request and any could go. A store's replicas are not so. Where one primary takes the "
    "writes (PostgreSQL, MySQL, Redis with replication), a pod the autoscaler adds is an empty store "
    "until something makes it a replica and it has copied the primary — with nothing set up to "
    "replicate (a plain Redis Deployment) each replica stays a store of its own behind one Service, "
    "and clients read what another replica never saw — and scaling in may delete the primary. Where "
    "members vote (etcd, ZooKeeper, MongoDB replica sets, Kafka's controllers, quorum queues), a "
    "member joins and leaves through the store's own reconfiguration, not by a pod starting, and the "
    "quorum it needs moves with the count. What the replicas are is the app's profile "
    "(probesim check --list-profiles), from its image, probes, environment or command; "
    ".probesim.yaml → profiles corrects it.",
    fix="Remove the autoscaler and set the replicas the store needs; scale it by hand or through its "
    "operator (Sentinel or Redis Cluster, a PostgreSQL operator, Strimzi), which adds members as the "
    "store expects. Autoscale the stateless services in front of it instead.",
)  # fmt: skip
def autoscaled_store(ctx: Context) -> Iterator[Finding]:
    said: set[int] = set()
    for t in ctx.targets:
        w = t.workload
        scaler = ctx.objects.scaler_of(w)
        if scaler is None or id(w) in said or t.group != "containers":
            continue
        app = app_of(ctx, [w])
        if app.membership == "independent" or app.resolved is None or not app.resolved.known:
            continue
        said.add(id(w))
        if isinstance(scaler, ScaledObject):
            who = f"ScaledObject {scaler.name}"
            low, high = scaler.spec.min_replica_count, scaler.spec.max_replica_count
        else:
            who = f"HorizontalPodAutoscaler {scaler.name}"
            low, high = scaler.spec.min_replicas, scaler.spec.max_replicas
        if app.membership == "primary":
            cost = ("a pod it adds is an empty store until it is made a replica of the primary (or, with "
                    "nothing replicating, a store of its own behind the same Service), and one it removes "
                    "may be the primary")  # fmt: skip
        else:
            cost = ("members join and leave through the store's reconfiguration, not by a pod starting, "
                    "and the quorum it needs moves with the count")  # fmt: skip
        msg = f"{who} scales {w.kind} {w.name} from {low} to {high} replicas, but {cost} — {app.said(high)}"
        o = ctx.objects.origin(scaler)
        kind = "ScaledObject" if isinstance(scaler, ScaledObject) else "HorizontalPodAutoscaler"
        ns = scaler.metadata.namespace
        f = ctx.raw_finding("PS047", o.doc, o.base, f"{kind}/{scaler.name}", (), msg, ns)
        fix = _store_fix(who, w, low, app.membership, app.resolved.profile)
        yield replace(f, assumed=app.resolved, fix=fix)


def _store_fix(who: str, w: Workload, low: int | None, membership: str, profile: Profile) -> str:
    """PS047's fix for this store: the count to set instead (for a quorum, the autoscaler's
    minimum made odd) and, from the app's profile, how the store itself adds and removes
    members."""
    if membership == "quorum":
        least = max(low or 1, 3)
        odd = least if least % 2 else least + 1
        if odd == low:
            why = "the autoscaler's minimum"
        elif low is not None and low >= 3:
            why = f"the autoscaler's minimum {low}, made odd"
        else:
            why = "the fewest members that ride out one lost"
        count = f"{odd} ({why}; an odd count: 3 members ride out one lost, 5 two)"
    else:
        count = "1, or the primary and the standbys its replication is set up for"
    how = f" Scale {profile.name} through {profile.scale_with}." if profile.scale_with else ""
    return (
        f"Remove {who} and set {w.kind} {w.name}'s spec.replicas to {count}.{how} "
        "Autoscale the stateless services in front of it instead."
    )
