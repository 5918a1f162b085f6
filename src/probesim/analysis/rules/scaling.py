"""Rules on what scales a workload: an HPA whose utilization target cannot be computed because a
container of the pods requests none of the resource, so the HPA never scales."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.manifests.yamlsrc import get_path
from probesim.model.kubernetes import Container, HorizontalPodAutoscaler

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
