"""Rules on Istio objects: outlier detection, mirrors, retries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.patch import apply, nest
from probesim.kube.selectors import selects
from probesim.manifests.yamlsrc import get_path
from probesim.model.duration import format_ms, parse_ms

rule = REGISTRY.rule

# -- Istio ------------------------------------------------------------------------------------


def istio_docs(ctx: Context, kind: str) -> Iterator[tuple[Any, Any, dict[str, Any], str]]:
    for doc, base, data in ctx.objects.istio:
        if data.get("kind") == kind:
            name = get_path(data, ("metadata", "name"))
            yield doc, base, data, f"{kind}/{name}"


def _policies(data: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    tp = get_path(data, ("spec", "trafficPolicy"))
    if isinstance(tp, dict):
        yield ("spec", "trafficPolicy"), tp
    for i, sub in enumerate(get_path(data, ("spec", "subsets")) or []):
        if isinstance(sub, dict) and isinstance(sub.get("trafficPolicy"), dict):
            yield ("spec", "subsets", i, "trafficPolicy"), sub["trafficPolicy"]


def _outlier_plan(ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
    """One JSON merge patch for every outlierDetection of a DestinationRule that PS020, PS021 or
    PS022 would change — consecutive5xxErrors 3 for 1, maxEjectionPercent 50 for the default on
    fewer than 10 pods or for 100 without minHealthPercent — so their findings share one fix.
    A subset's policy is in the whole ``subsets`` list (a merge patch replaces lists)."""
    host = str(get_path(data, ("spec", "host")) or "")
    n = _endpoints(ctx, host, str(get_path(data, ("metadata", "namespace")) or "default"))
    patch: dict[str, Any] = {}
    subsets = list(get_path(data, ("spec", "subsets")) or [])
    for path, tp in _policies(data):
        od = tp.get("outlierDetection")
        if not isinstance(od, dict):
            continue
        change: dict[str, Any] = {}
        if od.get("consecutive5xxErrors") == 1:
            change["consecutive5xxErrors"] = 3
        if ("maxEjectionPercent" not in od and n is not None and n < 10) or (
            od.get("maxEjectionPercent") == 100 and not od.get("minHealthPercent")
        ):
            change["maxEjectionPercent"] = 50
        if not change:
            continue
        if path[:2] == ("spec", "subsets"):
            i = int(path[2])
            subsets[i] = apply(subsets[i], {"trafficPolicy": {"outlierDetection": change}}, "merge")
            patch = apply(patch, {"spec": {"subsets": subsets}}, "merge")
        else:
            patch = apply(patch, nest(tuple(str(k) for k in path), {"outlierDetection": change}), "merge")
    return patch


def _retries_plan(data: dict[str, Any]) -> dict[str, Any]:
    """PS024's patch, for every route of the VirtualService at once (the whole ``http`` list: a
    merge patch replaces lists): perTryTimeout, the route's timeout shared by its tries; a route
    with no timeout to share keeps its retries (its finding says what to set)."""
    routes = list(get_path(data, ("spec", "http")) or [])
    changed = False
    for i, route in http_routes(data):
        retries = route.get("retries")
        if not (
            isinstance(retries, dict)
            and (retries.get("attempts") or 0) > 0
            and "perTryTimeout" not in retries
        ):
            continue
        try:
            total = parse_ms(route["timeout"]) if "timeout" in route else None
        except (ValueError, TypeError):
            total = None
        tries = 1 + int(retries.get("attempts") or 0)
        if total and total // tries >= 1:
            routes[i] = apply(route, {"retries": {"perTryTimeout": format_ms(int(total // tries))}}, "merge")
            changed = True
    return {"spec": {"http": routes}} if changed else {}


def _endpoints(ctx: Context, host: str, namespace: str) -> int | None:
    """Pods behind the Service a DestinationRule's host names (a short name is in the rule's own
    namespace; ``name.ns`` and ``name.ns.svc.cluster.local`` name another); None when unknown."""
    parts = host.split(".")
    name, ns = parts[0], parts[1] if len(parts) > 1 else namespace
    svc = next((s for s in ctx.objects.services if s.name == name and s.metadata.namespace == ns), None)
    if svc is None:
        return None
    return sum(w.spec.replicas for w in ctx.objects.workloads if selects(svc, w) and w.kind != "DaemonSet")


@rule(
    id="PS020",
    name="outlier-default-max-ejection-small-service",
    severity="warning",
    title="Outlier detection with the default maxEjectionPercent (10 %) on a service of fewer than 10 pods.",
    why="Current Envoy never ejects a host when ejecting it would exceed max_ejection_percent, and "
    "10 % of fewer than 10 hosts is less than one: the failing pod is never ejected "
    "(reference/envoy-istio.md §8.1).",
    fix="Set maxEjectionPercent explicitly (for example 50).",
)  # fmt: skip
def max_ejection_default(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in istio_docs(ctx, "DestinationRule"):
        host = str(get_path(data, ("spec", "host")) or "")
        n = _endpoints(ctx, host, str(get_path(data, ("metadata", "namespace")) or "default"))
        for path, tp in _policies(data):
            od = tp.get("outlierDetection")
            if isinstance(od, dict) and "maxEjectionPercent" not in od and n is not None and n < 10:
                yield ctx.raw_finding(
                    "PS020",
                    doc,
                    base,
                    obj,
                    (*path, "outlierDetection"),
                    f"{host} has {n} pods: 10 % of them is less than one, so no host is ever ejected",
                    patch=_outlier_plan(ctx, data),
                    note="maxEjectionPercent 50: one of two hosts can be ejected, never all",
                )


@rule(
    id="PS021",
    name="outlier-can-eject-everything",
    severity="warning",
    title="maxEjectionPercent 100 with minHealthPercent 0: every host can be ejected.",
    why="When all hosts fail (a shared dependency, a bad deploy) all are ejected and the client gets "
    "503 no healthy upstream; Istio's panic threshold is 0, so Envoy does not route to them anyway "
    "(reference/envoy-istio.md §8.7).",
    fix="Keep maxEjectionPercent below 100, or set minHealthPercent so the panic mode can help.",
)  # fmt: skip
def eject_everything(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in istio_docs(ctx, "DestinationRule"):
        for path, tp in _policies(data):
            od = tp.get("outlierDetection")
            if (
                isinstance(od, dict)
                and od.get("maxEjectionPercent") == 100
                and not od.get("minHealthPercent")
            ):
                yield ctx.raw_finding(
                    "PS021",
                    doc,
                    base,
                    obj,
                    (*path, "outlierDetection", "maxEjectionPercent"),
                    "every host can be ejected at once (maxEjectionPercent 100, minHealthPercent 0)",
                    patch=_outlier_plan(ctx, data),
                    note="maxEjectionPercent 50: half the hosts at most are ejected, the rest keep serving",
                )


@rule(
    id="PS022",
    name="outlier-consecutive-errors-one",
    severity="warning",
    title="A host is ejected after a single 5xx.",
    why="One error from a healthy pod (a deploy, one bad request) ejects it for baseEjectionTime, "
    "longer each time; with few pods that moves all load to the rest.",
    fix="Use consecutive5xxErrors of 3 or more.",
)  # fmt: skip
def consecutive_one(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in istio_docs(ctx, "DestinationRule"):
        for path, tp in _policies(data):
            od = tp.get("outlierDetection")
            if isinstance(od, dict) and od.get("consecutive5xxErrors") == 1:
                yield ctx.raw_finding(
                    "PS022",
                    doc,
                    base,
                    obj,
                    (*path, "outlierDetection", "consecutive5xxErrors"),
                    "consecutive5xxErrors is 1",
                    patch=_outlier_plan(ctx, data),
                    note="consecutive5xxErrors 3: one stray error no longer ejects a healthy pod",
                )


def http_routes(data: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    for i, r in enumerate(get_path(data, ("spec", "http")) or []):
        if isinstance(r, dict):
            yield i, r


def _only_reads(route: dict[str, Any]) -> bool:
    matches = route.get("match") or []
    methods = []
    for m in matches:
        method = m.get("method") if isinstance(m, dict) else None
        if not isinstance(method, dict):
            return False
        methods.append(str(method.get("exact") or method.get("regex") or method.get("prefix") or ""))
    return bool(methods) and all(m.upper() in ("GET", "HEAD", "OPTIONS") for m in methods)


@rule(
    id="PS023",
    name="mirror-of-writes",
    severity="warning",
    title="A route mirrors requests that may write.",
    why="Mirrored requests are really processed by the mirror and the answers thrown away: a POST "
    "is written twice (seed 003).",
    fix="Mirror only GET/HEAD routes (match on method), or make the mirror target side-effect free.",
)  # fmt: skip
def mirror_writes(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in istio_docs(ctx, "VirtualService"):
        for i, r in http_routes(data):
            if ("mirror" in r or "mirrors" in r) and not _only_reads(r):
                key = "mirror" if "mirror" in r else "mirrors"
                yield ctx.raw_finding(
                    "PS023",
                    doc,
                    base,
                    obj,
                    ("spec", "http", i, key),
                    "mirrors every method, writes included (no match on GET/HEAD)",
                )


@rule(
    id="PS024",
    name="retries-without-per-try-timeout",
    severity="warning",
    title="Retries without a per-try timeout.",
    why="Without perTryTimeout, one try can use the whole route timeout (none by default in Istio), "
    "so a hung upstream is never retried; and Istio's default retry policy does not retry "
    "per-try timeouts unless retryOn has 5xx, gateway-error or reset (reference §5.5).",
    fix="Set perTryTimeout below the client's timeout, and retryOn to include the failures to retry.",
)  # fmt: skip
def retries_per_try(ctx: Context) -> Iterator[Finding]:
    for doc, base, data, obj in istio_docs(ctx, "VirtualService"):
        for i, r in http_routes(data):
            retries = r.get("retries")
            if (
                isinstance(retries, dict)
                and (retries.get("attempts") or 0) > 0
                and "perTryTimeout" not in retries
            ):
                yield ctx.raw_finding(
                    "PS024",
                    doc,
                    base,
                    obj,
                    ("spec", "http", i, "retries"),
                    f"{retries.get('attempts')} retries without perTryTimeout",
                    patch=_retries_plan(data) if "timeout" in r else None,
                    note=f"the route's {r.get('timeout')} shared by its tries",
                )
