"""Istio objects → the Envoy v3 configuration Istio would produce (clusters, routes, the fault
filter), field by field as reference/envoy-istio.md §4-§6 describes, plus a complete static
bootstrap that a real Envoy accepts. Everything listens on 127.0.0.1."""

from __future__ import annotations

from typing import Any

from probesim.mesh.istio import (
    Destination,
    DestinationRule,
    HTTPMatch,
    HTTPRoute,
    OutlierDetection,
    PercentValue,
    StringMatch,
    TrafficPolicy,
    VirtualService,
    ms,
)
from probesim.model.kubernetes import Service

MAX32 = 4294967295
T = "type.googleapis.com/envoy."
DEFAULT_RETRY_ON = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
LB = {
    "ROUND_ROBIN": "ROUND_ROBIN",
    "RANDOM": "RANDOM",
    "LEAST_REQUEST": "LEAST_REQUEST",
    "LEAST_CONN": "LEAST_REQUEST",
}
FAULT_FILTER = "envoy.filters.http.fault"


def duration(value: str | int) -> str:
    """A proto3 JSON duration: "0.2s", never "200ms" (§6.3)."""
    millis = ms(value) if isinstance(value, str) else value
    assert millis is not None
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis / 1000:g}s"


def fqdn(host: str, namespace: str) -> str:
    return host if "." in host else f"{host}.{namespace}.svc.cluster.local"


def cluster_name(host: str, port: int, subset: str | None, namespace: str) -> str:
    return f"outbound|{port}|{subset or ''}|{fqdn(host, namespace)}"


def million(p: PercentValue | None) -> dict[str, Any]:
    """A FractionalPercent from an Istio percentage: value × 10000 per MILLION (no value: 0)."""
    return {"numerator": round((p.value if p else 0.0) * 10_000), "denominator": "MILLION"}


def outlier_detection(od: OutlierDetection) -> dict[str, Any]:
    """§4.2: what Istio emits for an outlierDetection block."""
    out: dict[str, Any] = {"enforcing_success_rate": 0}
    if od.consecutive_5xx_errors is not None:
        out["consecutive_5xx"] = od.consecutive_5xx_errors
        out["enforcing_consecutive_5xx"] = 100 if od.consecutive_5xx_errors > 0 else 0
    if od.consecutive_gateway_errors is not None:
        out["consecutive_gateway_failure"] = od.consecutive_gateway_errors
        out["enforcing_consecutive_gateway_failure"] = 100 if od.consecutive_gateway_errors > 0 else 0
    if od.interval is not None:
        out["interval"] = duration(od.interval)
    if od.base_ejection_time is not None:
        out["base_ejection_time"] = duration(od.base_ejection_time)
    if od.max_ejection_percent:  # 0 cannot be expressed: Envoy's 10 % applies
        out["max_ejection_percent"] = od.max_ejection_percent
    if od.split_external_local_origin_errors:
        out["split_external_local_origin_errors"] = True
        out["enforcing_local_origin_success_rate"] = 0
        if od.consecutive_local_origin_failures:
            out["consecutive_local_origin_failure"] = od.consecutive_local_origin_failures
            out["enforcing_consecutive_local_origin_failure"] = 100
    return out


def connect_timeout(policy: TrafficPolicy | None) -> str:
    """The cluster's connect_timeout: the DestinationRule's connectionPool.tcp.connectTimeout
    (Istio's default 10 s), as the simulation reads it (engine/sidecar/route.py), in Envoy's
    JSON duration (seconds)."""
    pool = policy.connection_pool if policy else None
    tcp = pool.get("tcp") if isinstance(pool, dict) else None
    given = tcp.get("connectTimeout") if isinstance(tcp, dict) else None
    try:
        value = ms(given) if isinstance(given, str) else None
    except ValueError:
        value = None
    return f"{(value or 10_000) / 1000:g}s"


def cluster(name: str, policy: TrafficPolicy | None, endpoints: list[tuple[str, int]]) -> dict[str, Any]:
    lb = (
        policy.load_balancer.simple
        if policy and policy.load_balancer and policy.load_balancer.simple
        else None
    )
    c: dict[str, Any] = {
        "name": name,
        "type": "STATIC",
        "connect_timeout": connect_timeout(policy),
        "lb_policy": LB.get(lb or "", "LEAST_REQUEST"),  # Istio's default is LEAST_REQUEST (§4.4)
        "circuit_breakers": {
            "thresholds": [
                {
                    "max_connections": MAX32,
                    "max_pending_requests": MAX32,
                    "max_requests": MAX32,
                    "max_retries": MAX32,
                }
            ]
        },
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [
                {
                    "lb_endpoints": [
                        {"endpoint": {"address": {"socket_address": {"address": a, "port_value": p}}}}
                        for a, p in endpoints
                    ]
                }
            ],
        },
    }
    od = policy.outlier_detection if policy else None
    if od is not None:
        c["outlier_detection"] = outlier_detection(od)
        # minHealthPercent is the LB panic threshold, 0 when unset (§4.2.9).
        c["common_lb_config"] = {"healthy_panic_threshold": {"value": float(od.min_health_percent or 0)}}
    return c


def _string_match(m: StringMatch) -> dict[str, Any]:
    if m.exact is not None:
        return {"exact": m.exact}
    if m.prefix is not None:
        return {"prefix": m.prefix}
    if m.regex is not None:
        return {"safe_regex": {"regex": m.regex}}
    return {}


def route_match(m: HTTPMatch | None) -> dict[str, Any]:
    """§5.2: uri → path/prefix/safe_regex; headers, method → header matchers sorted by name."""
    out: dict[str, Any] = {"prefix": "/"}
    if m is None:
        return out
    if m.uri is not None:
        out = {"path": m.uri.exact} if m.uri.exact is not None else {}
        if m.uri.prefix is not None:
            out = {"prefix": m.uri.prefix}
        if m.uri.regex is not None:
            out = {"safe_regex": {"regex": m.uri.regex}}
    headers = []
    items = [(k, v, False) for k, v in m.headers.items()] + [
        (k, v, True) for k, v in m.without_headers.items()
    ]
    if m.method is not None:
        items.append((":method", m.method, False))
    for name, sm, invert in sorted(items, key=lambda x: x[0]):
        sm_json = _string_match(sm)
        h: dict[str, Any] = {"name": name}
        if not sm_json or sm.regex == "*":
            h["present_match"] = True
        else:
            h["string_match"] = sm_json
        if invert:
            h["invert_match"] = True
            if "present_match" not in h:
                h["treat_missing_header_as_empty"] = True
        headers.append(h)
    if headers:
        out["headers"] = headers
    return out


def retry_policy(route: HTTPRoute) -> dict[str, Any] | None:
    """§5.5: Istio's default policy, overridden field by field; attempts ≤ 0 → none."""
    r = route.retries
    if r is not None and r.attempts <= 0:
        return None
    policy: dict[str, Any] = {
        "retry_on": DEFAULT_RETRY_ON,
        "num_retries": 2,
        "host_selection_retry_max_attempts": 5,
        "retry_host_predicate": [
            {
                "name": "envoy.retry_host_predicates.previous_hosts",
                "typed_config": {
                    "@type": f"{T}extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"
                },
            }
        ],
    }
    if r is None:
        return policy
    policy["num_retries"] = r.attempts
    if r.retry_on:
        parts = [p.strip() for p in r.retry_on.split(",") if p.strip()]
        codes = [int(p) for p in parts if p.isdigit() and 100 <= int(p) <= 599]
        words = [p for p in parts if not p.isdigit()]
        if codes and "retriable-status-codes" not in words:
            words.append("retriable-status-codes")
        policy["retry_on"] = ",".join(words)
        if codes:
            policy["retriable_status_codes"] = codes
    if r.per_try_timeout:
        policy["per_try_timeout"] = duration(r.per_try_timeout)
    if r.retry_ignore_previous_hosts is False:
        del policy["retry_host_predicate"]
    if r.backoff:
        policy["retry_back_off"] = {"base_interval": duration(r.backoff)}
    return policy


def fault(route: HTTPRoute) -> dict[str, Any] | None:
    """§5.1: the per-route HTTPFault; no percentage means 0 %."""
    f = route.fault
    if f is None or (f.delay is None and f.abort is None):
        return None
    out: dict[str, Any] = {"@type": f"{T}extensions.filters.http.fault.v3.HTTPFault"}
    if f.delay is not None:
        out["delay"] = {
            "fixed_delay": duration(f.delay.fixed_delay),
            "percentage": million(f.delay.percentage),
        }
    if f.abort is not None:
        out["abort"] = {"http_status": f.abort.http_status, "percentage": million(f.abort.percentage)}
    return out


class Translator:
    """Istio objects of one namespace, with the Services that give their ports and pods."""

    def __init__(
        self,
        rules: list[DestinationRule],
        services: list[VirtualService],
        k8s_services: list[Service],
        endpoints: dict[str, list[tuple[str, int]]] | None = None,
    ) -> None:
        self.rules = rules
        self.vs = services
        self.k8s = {s.name: s for s in k8s_services}
        self.endpoints = endpoints or {}
        self.clusters: dict[str, dict[str, Any]] = {}

    def _port(self, d: Destination) -> int:
        if d.port is not None:
            return d.port.number
        svc = self.k8s.get(d.host.split(".")[0])
        return svc.spec.ports[0].port if svc and svc.spec.ports else 80

    def _policy(self, host: str, subset: str | None, namespace: str) -> TrafficPolicy | None:
        """The DestinationRule policy for a destination; a subset's policy replaces the top
        level one whole (§4.2.13)."""
        for dr in self.rules:
            if fqdn(dr.spec.host, dr.metadata.namespace) != fqdn(host, namespace):
                continue
            if subset is not None:
                for s in dr.spec.subsets:
                    if s.name == subset and s.traffic_policy is not None:
                        top = dr.spec.traffic_policy or TrafficPolicy()
                        return top.model_copy(
                            update={k: v for k, v in s.traffic_policy.__dict__.items() if v is not None}
                        )
            return dr.spec.traffic_policy
        return None

    def cluster_for(self, d: Destination, namespace: str) -> str:
        name = cluster_name(d.host, self._port(d), d.subset, namespace)
        if name not in self.clusters:
            eps = self.endpoints.get(d.host.split(".")[0], [])
            self.clusters[name] = cluster(name, self._policy(d.host, d.subset, namespace), eps)
        return name

    def routes(self, vs: VirtualService) -> list[dict[str, Any]]:
        ns = vs.metadata.namespace
        out = []
        for i, r in enumerate(vs.spec.http):
            action: dict[str, Any] = {}
            if len(r.route) == 1:
                action["cluster"] = self.cluster_for(r.route[0].destination, ns)
            else:
                weighted = [
                    {"name": self.cluster_for(rd.destination, ns), "weight": rd.weight or 0} for rd in r.route
                ]
                action["weighted_clusters"] = {"clusters": weighted}
            action["timeout"] = duration(r.timeout) if r.timeout else "0s"  # Istio: disabled (§5.4)
            policy = retry_policy(r)
            if policy is not None:
                action["retry_policy"] = policy
            mirrors = [(r.mirror, r.mirror_percentage)] if r.mirror is not None else []
            mirrors += [(m.destination, m.percentage) for m in r.mirrors]
            policies = []
            for dest, pct in mirrors:
                if pct is not None and pct.value == 0:
                    continue  # an explicit 0 drops the mirror
                fraction = million(pct) if pct is not None else {"numerator": 100, "denominator": "HUNDRED"}
                policies.append(
                    {
                        "cluster": self.cluster_for(dest, ns),
                        "runtime_fraction": {"default_value": fraction},
                        "trace_sampled": False,
                        "disable_shadow_host_suffix_append": True,  # Istio ≥ 1.28 (§5.3)
                    }
                )
            if policies:
                action["request_mirror_policies"] = policies
            per_filter = fault(r)
            for j, m in enumerate(r.match or (None,)):
                entry: dict[str, Any] = {
                    "name": f"{vs.metadata.name}.{r.name or i}.{j}",
                    "match": route_match(m),
                }
                entry["route"] = action
                if per_filter is not None:
                    entry["typed_per_filter_config"] = {FAULT_FILTER: per_filter}
                out.append(entry)
        return out

    def virtual_hosts(self) -> list[dict[str, Any]]:
        """One per VirtualService, and Istio's default one (a single route to the Service's
        cluster, no timeout, the default retries) for each Service or rule host no
        VirtualService names; ``*`` when there is only one."""
        named = {(fqdn(h, vs.metadata.namespace)) for vs in self.vs for h in vs.spec.hosts}
        entries: list[tuple[str, list[str], list[dict[str, Any]]]] = []
        for vs in self.vs:
            domains = {d for h in vs.spec.hosts for d in (h, fqdn(h, vs.metadata.namespace))}
            entries.append((vs.metadata.name, sorted(domains), self.routes(vs)))
        plain = {s.name: s.metadata.namespace for s in self.k8s.values()}
        plain.update({dr.spec.host.split(".")[0]: dr.metadata.namespace for dr in self.rules})
        for host, ns in sorted(plain.items()):
            if fqdn(host, ns) in named:
                continue
            dest = Destination.model_validate({"host": host})
            port = self._port(dest)
            action: dict[str, Any] = {"cluster": self.cluster_for(dest, ns), "timeout": "0s"}
            action["retry_policy"] = retry_policy(
                HTTPRoute.model_validate({"route": [{"destination": {"host": host}}]})
            )
            route = {"name": "default", "match": {"prefix": "/"}, "route": action}
            domains = {host, fqdn(host, ns), f"{host}:{port}", f"{fqdn(host, ns)}:{port}"}
            entries.append((f"{fqdn(host, ns)}:{port}", sorted(domains), [route]))
        return [
            {"name": name, "domains": ["*"] if len(entries) == 1 else domains, "routes": routes}
            for name, domains, routes in entries
        ]

    def config(self) -> dict[str, Any]:
        """Clusters, route configuration and HTTP filters."""
        vhosts = self.virtual_hosts()
        for dr in self.rules:  # clusters for rules no route uses (still pushed by Istio)
            self.cluster_for(Destination.model_validate({"host": dr.spec.host}), dr.metadata.namespace)
        return {
            "clusters": list(self.clusters.values()),
            "route_config": {"name": "probesim", "virtual_hosts": vhosts},
            "http_filters": http_filters(),
        }

    def bootstrap(
        self, listen_port: int = 10000, admin_port: int = 9901, event_log: str | None = None
    ) -> dict[str, Any]:
        cfg = self.config()
        hcm = {
            "@type": f"{T}extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "probesim",
            "route_config": cfg["route_config"],
            "http_filters": cfg["http_filters"],
        }
        boot: dict[str, Any] = {
            "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin_port}}},
            "static_resources": {
                "listeners": [
                    {
                        "name": "probesim",
                        "address": {"socket_address": {"address": "127.0.0.1", "port_value": listen_port}},
                        "filter_chains": [
                            {
                                "filters": [
                                    {
                                        "name": "envoy.filters.network.http_connection_manager",
                                        "typed_config": hcm,
                                    }
                                ]
                            }
                        ],
                    }
                ],
                "clusters": cfg["clusters"],
            },
        }
        if event_log:
            boot["cluster_manager"] = {"outlier_detection": {"event_log_path": event_log}}
        return boot


def http_filters() -> list[dict[str, Any]]:
    """Istio's chain as far as it matters here: an empty fault filter, then the router (§5.1.1)."""
    return [
        {
            "name": FAULT_FILTER,
            "typed_config": {"@type": f"{T}extensions.filters.http.fault.v3.HTTPFault"},
        },
        {
            "name": "envoy.filters.http.router",
            "typed_config": {"@type": f"{T}extensions.filters.http.router.v3.Router"},
        },
    ]
