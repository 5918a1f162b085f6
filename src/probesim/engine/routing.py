"""Where a traffic entry's requests go: its Service's pods (the selector over each pod's
labels), per pod the container serving the Service port and whether its app listens there, and
the other Services an Istio VirtualService splits or mirrors it to. Built once with the fleet."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF, Behaviors
from probesim.kube.ports import container_port, serving_container
from probesim.kube.selectors import service_matches
from probesim.mesh.istio import find_route
from probesim.model.kubernetes import Container, Service
from probesim.model.scenario import ContainerBehavior, Scenario, call_name, service_calls
from probesim.model.traffic import Traffic

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


@dataclass
class Route:
    name: str
    service: Service
    path: str
    traffic: Traffic
    selects: B  # pods the Service selects
    target_container: I64  # per pod: container serving the port, -1 when the port is unresolved
    closed: B  # per pod: the serving container's app does not listen on the port (refused)
    target: int  # behaviour target index of the path
    timeout: int  # client timeout, ms (INF: none)
    mirror_of: int = -1  # a mirror destination's copies of that route's requests (fire and forget)
    mirror_fraction: float = 0.0
    call: str = ""  # the calls pods make to this Service while serving (call_key), "": traffic's
    acc: float = 0.0
    cursor: int = 0


@dataclass
class PodLabels:
    """Every pod's labels, as the few distinct sets (one per workload revision) and each pod's."""

    groups: list[dict[str, str]]
    group_of: I64
    keys: list[tuple[int, int]] = field(default_factory=list)  # each group's (workload, revision)


def labels_per_pod(
    labels: dict[tuple[int, int], dict[str, str]], pod_workload: I64, pod_template: I64
) -> PodLabels:
    keys = list(labels)
    index = {k: i for i, k in enumerate(keys)}
    group_of = [index[(w, t)] for w, t in zip(pod_workload.tolist(), pod_template.tolist(), strict=True)]
    return PodLabels([labels[k] for k in keys], np.array(group_of, np.int64), keys)


def service_selects(svc: Service, pods: PodLabels) -> B:
    """The pods a Service's selector matches (a Service without selector matches none)."""
    sel = svc.spec.selector
    hit = np.array([service_matches(sel, g) for g in pods.groups], bool)
    return hit[pods.group_of] if pods.group_of.size else np.zeros(0, bool)


def listens(c: Container, b: ContainerBehavior, port: int | None) -> bool:
    """Whether the app of container ``c`` listens on ``port``: the behaviour's ports, else the
    declared ones, else (none declared) every port."""
    ports = b.ports if b.ports is not None else tuple(cp.container_port for cp in c.ports)
    return port is None or not ports or port in ports


def mirror_routes(
    scenario: Scenario,
    routes: list[Route],
    pods: PodLabels,
    first: list[int],
    specs: list[Container],
    beh: list[ContainerBehavior],
    behaviors: Behaviors,
) -> list[Route]:
    """For each route a VirtualService mirrors to a Service of the scenario, a route that carries
    the copies, so that the mirror's pods really process them (reference/envoy-istio.md §5.3)."""
    out = []
    names = {s.name for s in scenario.services}
    for ri, r in enumerate(routes):
        t = r.traffic
        vroute = find_route(
            list(scenario.virtual_services), r.service.name, t.path, dict(t.headers), t.method
        )
        if vroute is None:
            continue
        mirrors = [(vroute.mirror, vroute.mirror_percentage)] if vroute.mirror is not None else []
        mirrors += [(m.destination, m.percentage) for m in vroute.mirrors]
        for dest, pct in mirrors:
            host = dest.host.split(".")[0]
            fraction = 1.0 if pct is None else pct.value / 100
            if host not in names or fraction <= 0:
                continue
            # The client's sidecar sends the copies, balancing each on its own.
            copy = t.model_copy(
                update={
                    "service": host,
                    "name": f"{r.name}>mirror:{host}",
                    "port": None,
                    "timeout": None,
                    "keep_alive": False,
                    "no_endpoint": "refused",
                }
            )
            m = route(scenario, copy, pods, first, specs, beh, behaviors)
            m.mirror_of, m.mirror_fraction = ri, fraction
            out.append(m)
    return out


_CALLS = Traffic(rate=0.0)  # a call route's traffic: its arrivals are the callers' calls


def call_routes(
    scenario: Scenario,
    pods: PodLabels,
    first: list[int],
    specs: list[Container],
    beh: list[ContainerBehavior],
    behaviors: Behaviors,
) -> list[Route]:
    """A route per Service the pods call while serving (``calls: [{service: …}]``): what the
    callers send, balanced per call over the Service's Ready endpoints, served by its pods like
    any client's requests (their costs, backlog, probes beside them). Its arrivals are the
    callers' calls of the step before (engine/traffic.py); the answers the callers get are their
    outcome classes (engine/capacity.py)."""
    calls = service_calls(beh)
    known = {s.name for s in scenario.services}
    names: set[str] = set()
    out = []
    for key, c in calls.items():
        if c.service not in known:
            continue  # (the loader refuses it; a scenario made in code may lack it: refused calls)
        name = call_name(c)
        while name in names:
            name += "'"  # another client timeout to the same path
        names.add(name)
        t = _CALLS.model_copy(
            update={"name": name, "service": c.service, "port": c.port, "path": c.path, "timeout": c.timeout}
        )
        r = route(scenario, t, pods, first, specs, beh, behaviors)
        r.call = key
        out.append(r)
    return out


def with_destinations(
    scenario: Scenario,
    r: Route,
    pods: PodLabels,
    first: list[int],
    specs: list[Container],
    beh: list[ContainerBehavior],
    behaviors: Behaviors,
) -> Route:
    """A route whose VirtualService route sends requests to other Services of the scenario
    (a traffic split across hosts) also holds their pods, each with the container serving
    that Service's port: the client sidecars pick among them (engine/sidecar/)."""
    t = r.traffic
    vroute = find_route(list(scenario.virtual_services), r.service.name, t.path, dict(t.headers), t.method)
    if vroute is None:
        return r
    names = {s.name for s in scenario.services}
    for d in vroute.route:
        host = d.destination.host.split(".")[0]
        if host == r.service.name or host not in names:
            continue
        port = d.destination.port.number if d.destination.port else None
        other = route(
            scenario, t.model_copy(update={"service": host, "port": port}), pods, first, specs, beh, behaviors
        )
        new = other.selects & ~r.selects
        r.target_container[new] = other.target_container[new]
        r.closed[new] = other.closed[new]
        r.selects = r.selects | other.selects
    return r


def route(
    scenario: Scenario,
    t: Traffic,
    pods: PodLabels,
    first: list[int],
    specs: list[Container],
    beh: list[ContainerBehavior],
    behaviors: Behaviors,
) -> Route:
    svc = scenario.service_for(t)
    port = next(p for p in svc.spec.ports if t.port is None or t.port in (p.port, p.name))
    selects = service_selects(svc, pods)
    target_container = np.full(pods.group_of.size, -1, np.int64)
    closed = np.zeros(pods.group_of.size, bool)
    serving: dict[int, int | None] = {}  # per revision of a workload: its pods' containers are the same
    listening: dict[tuple[int, int], bool] = {}  # per (container spec, behaviour)
    for p in np.flatnonzero(selects).tolist():
        wi = int(pods.group_of[p])
        if wi not in serving:
            n_cont = (first[p + 1] if p + 1 < len(first) else len(specs)) - first[p]
            serving[wi] = serving_container(specs[first[p] : first[p] + n_cont], port.effective_target)
        tc = serving[wi]
        if tc is not None:
            c = first[p] + tc
            target_container[p] = c
            key = (id(specs[c]), id(beh[c]))
            if key not in listening:
                listening[key] = listens(specs[c], beh[c], container_port(specs[c], port.effective_target))
            closed[p] = not listening[key]
    return Route(
        name=t.label,
        service=svc,
        path=t.path,
        traffic=t,
        selects=selects,
        target_container=target_container,
        closed=closed,
        target=behaviors.target(t.path),
        timeout=t.timeout if t.timeout is not None else int(INF),
    )
