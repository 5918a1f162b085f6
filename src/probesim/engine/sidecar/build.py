"""Which traffic routes go through client sidecars, and their clusters, from the scenario's
Istio objects: the DestinationRule and VirtualService route of a request, subsets (a subset's
trafficPolicy merged over the rule's), split weights, the load balancer, each host's
"ip:port" (build_mesh).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.fleet import Fleet
from probesim.engine.routing import Route
from probesim.engine.sidecar.route import MeshRoute
from probesim.engine.sidecar.split import Sidecars, SplitRoute
from probesim.kube.ports import container_port
from probesim.mesh.envoy import cluster_name
from probesim.mesh.istio import DestinationRule, HTTPRoute, TrafficPolicy, find_route
from probesim.model.kubernetes import Service
from probesim.model.scenario import Scenario
from probesim.model.traffic import Traffic

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


def istio_for(scenario: Scenario, host: str, t: Traffic) -> tuple[DestinationRule | None, HTTPRoute | None]:
    """The DestinationRule for a Service and the VirtualService route a request matches; with
    neither, the request does not go through a sidecar's Envoy."""
    rule = next((r for r in scenario.destination_rules if r.spec.host.split(".")[0] == host), None)
    return rule, find_route(list(scenario.virtual_services), host, t.path, dict(t.headers), t.method)


def _rule_for(scenario: Scenario, host: str) -> DestinationRule | None:
    return next((r for r in scenario.destination_rules if r.spec.host.split(".")[0] == host), None)


def _subset_rule(rule: DestinationRule | None, subset: str | None) -> DestinationRule | None:
    """The DestinationRule as a subset's cluster gets it: the subset's trafficPolicy fields
    replace the rule's (Istio merges them field by field)."""
    if rule is None or subset is None:
        return rule
    sub = next((s for s in rule.spec.subsets if s.name == subset), None)
    if sub is None or sub.traffic_policy is None:
        return rule
    base = rule.spec.traffic_policy or TrafficPolicy()
    over = {
        k: v for k, v in vars(sub.traffic_policy).items() if v is not None and k in TrafficPolicy.model_fields
    }
    policy = base.model_copy(update=over)
    return rule.model_copy(update={"spec": rule.spec.model_copy(update={"traffic_policy": policy})})


def subset_selects(fleet: Fleet, rule: DestinationRule | None, subset: str | None) -> B:
    """The pods whose labels (their revision's template's) carry a subset's labels; every pod
    without a subset, none for a subset no DestinationRule of the host defines."""
    labels = fleet.pod_labels
    if subset is None or labels is None:
        return np.ones(fleet.n_pods, bool)
    sub = next((s for s in rule.spec.subsets if s.name == subset), None) if rule else None
    if sub is None:
        return np.zeros(fleet.n_pods, bool)
    hit = np.array([all(g.get(k) == v for k, v in sub.labels.items()) for g in labels.groups], bool)
    return hit[labels.group_of] if labels.group_of.size else np.zeros(0, bool)


def splits(route: HTTPRoute | None, host: str) -> bool:
    """Whether a VirtualService route sends a traffic route's requests elsewhere than its own
    Service's pods: several destinations, a subset, or another host."""
    if route is None:
        return False
    ds = [d.destination for d in route.route]
    return len(ds) > 1 or ds[0].subset is not None or ds[0].host.split(".")[0] != host


def route_weights(route: HTTPRoute) -> list[int]:
    """Each destination's weight: as written; all unset, an even split; one unset among set
    ones, 0 (Istio's validation asks for all or none)."""
    ws = [d.weight for d in route.route]
    if all(w is None for w in ws):
        return [1] * len(ws)
    return [w or 0 for w in ws]


def _lb(rule: DestinationRule | None) -> str:
    policy = rule.spec.traffic_policy if rule else None
    return (
        policy.load_balancer.simple
        if policy and policy.load_balancer and policy.load_balancer.simple
        else "LEAST_REQUEST"
    )


def build_mesh(scenario: Scenario, fleet: Fleet, rng: np.random.Generator) -> dict[int, Sidecars]:
    """A MeshRoute for each traffic route whose Service has a DestinationRule or VirtualService;
    a SplitRoute of one per destination where the VirtualService route splits it."""
    out: dict[int, Sidecars] = {}
    services = {s.name: s for s in scenario.services}
    for ri, route in enumerate(fleet.routes):
        if route.mirror_of >= 0:
            continue  # copies go straight to the mirror's endpoints
        host = route.service.name
        t = route.traffic
        rule, vroute = istio_for(scenario, host, t)
        if rule is None and vroute is None:
            continue
        # The pods' calls to a Service go through one client sidecar for all of them, as the
        # lab's (docs/fidelity.md).
        sidecars = [f"calls-{host}"] if route.call else None
        if vroute is not None and splits(vroute, host):
            parts = []
            for d in vroute.route:
                dhost = d.destination.host.split(".")[0]
                svc = services.get(dhost)
                drule = _rule_for(scenario, dhost)
                sub = d.destination.subset
                if svc is None:  # not a Service of the scenario: no hosts (said at load)
                    pods = np.zeros(0, np.int64)
                    port = d.destination.port.number if d.destination.port else 80
                else:
                    selects = fleet.service_pods.get(dhost, np.zeros(fleet.n_pods, bool))
                    selects = selects & subset_selects(fleet, drule, sub) & (route.target_container >= 0)
                    pods = np.flatnonzero(selects)
                    port = svc.spec.ports[0].port if svc.spec.ports else 80
                    if d.destination.port is not None:
                        port = d.destination.port.number
                prule = _subset_rule(drule, sub)
                cluster = cluster_name(dhost, port, sub, svc.metadata.namespace if svc else "default")
                parts.append(
                    MeshRoute(
                        route.name,
                        pods,
                        _upstreams(fleet, route, pods, svc),
                        cluster,
                        t.clients,
                        prule,
                        vroute,
                        _lb(prule),
                        rng,
                        scenario.spec.step,
                        sidecars,
                        t.timeout,
                    )
                )
            every = np.flatnonzero(route.selects & (route.target_container >= 0))
            out[ri] = SplitRoute(
                parts, route_weights(vroute), every, _upstreams(fleet, route, every, route.service)
            )
            continue
        pods = np.flatnonzero(route.selects & (route.target_container >= 0))
        port = route.service.spec.ports[0].port if route.service.spec.ports else 80
        cluster = cluster_name(host, port, None, route.service.metadata.namespace)
        out[ri] = MeshRoute(
            route.name,
            pods,
            _upstreams(fleet, route, pods, route.service),
            cluster,
            t.clients,
            rule,
            vroute,
            _lb(rule),
            rng,
            scenario.spec.step,
            sidecars,
            t.timeout,
        )
    return out


def _upstreams(fleet: Fleet, route: Route, pods: I64, svc: Service | None) -> list[str]:
    """ "ip:port" per host, for the event log: the port its serving container declares."""
    out = []
    svc_ports = svc.spec.ports if svc else ()
    target = svc_ports[0].effective_target if svc_ports else 80
    for p in pods.tolist():
        c = fleet.container_spec[int(route.target_container[p])]
        out.append(f"{fleet.pod_ip[p]}:{container_port(c, target) or target}")
    return out
