"""The lab's status manager: each pod's Started and Ready conditions from its probe workers'
results (the one place "Pod condition Ready changed" is recorded), and the Services' endpoints
that follow them at once (endpointDelay 0) — a Service's Ready pods, all of them with
publishNotReadyAddresses, never a terminating one — per Envoy cluster as Istio's EDS gives them,
and kube-proxy's choice among them (which falls back to serving terminating pods).
Whoever holds endpoints (the client sidecars: ``lab.traffic``) is told when they change."""

from __future__ import annotations

from collections.abc import Callable

from probesim.kube.endpoints import endpoint_ready, kube_proxy_targets
from probesim.lab.clock import Clock
from probesim.lab.pods import HOST, Pod
from probesim.model.kubernetes import Service
from probesim.model.scenario import Scenario


def started(pod: Pod) -> bool:
    """The container runs and its startup probe (if any) has succeeded for this instance."""
    s = pod.workers.get("startup")
    return pod.run.proc is not None and (s is None or (s.seen == pod.run.instance and s.cached is True))


def is_ready(pod: Pod) -> bool:
    r = pod.workers.get("readiness")
    return started(pod) and (r is None or (r.seen == pod.run.instance and r.cached is True))


def selects(service: Service | None, labels: dict[str, str]) -> bool:
    sel = service.spec.selector if service is not None else None
    return bool(sel) and all(labels.get(k) == v for k, v in (sel or {}).items())


class StatusManager:
    def __init__(self, scenario: Scenario, clock: Clock, pods: list[Pod]) -> None:
        self.scenario = scenario
        self.clock = clock
        self.pods = pods  # the lab's pods, shared: the controller adds to it
        self.on_endpoints: list[Callable[[], None]] = []  # told when endpoints may have changed

    def update(self) -> None:
        """Pod Ready conditions from the probes' results, and the endpoints with them: called on
        every probe result change, start and exit, so endpoints follow at once."""
        changed = False
        for pod in self.pods:
            if pod.frozen:  # its node is down: its kubelet reports nothing, its Ready stays as it was
                continue
            now_ready = is_ready(pod)
            if now_ready != pod.ready:
                pod.ready = now_ready
                pod.ready_since = self.clock.now_ms()
                reason = "PodReady" if now_ready else "PodNotReady"
                type_ = "Normal" if now_ready else "Warning"
                self.clock.event(type_, reason, pod, f"Pod condition Ready changed to {now_ready}")
                changed = True
        if changed:
            self.push_endpoints()

    def push_endpoints(self) -> None:
        """The endpoints changed without a Ready change (a pod being deleted leaves them)."""
        for tell in self.on_endpoints:
            tell()

    def service(self, name: str) -> Service | None:
        return next((v for v in self.scenario.services if v.name == name), None)

    def _live(self, service: Service | None) -> list[Pod]:
        """The pods a Service's endpoints list: Ready and not terminating, or all with
        publishNotReadyAddresses."""
        everyone = service is not None and service.spec.publish_not_ready_addresses
        return [p for p in self.pods if not p.gone and endpoint_ready(p.ready, p.deleting, everyone, True)]

    def endpoints(self, service: str) -> list[tuple[str, int]]:
        """The Service's endpoints as Envoy gets them: its pods' addresses, at their sidecar's
        port when they have one."""
        svc = self.service(service)
        return [(HOST, p.inbound or p.port) for p in self._live(svc) if selects(svc, p.labels)]

    def proxied(self, service: str) -> list[tuple[str, int]]:
        """kube-proxy's view: the Service's ready endpoints, or, when it has none, those
        serving and terminating (``kube_proxy_targets``)."""
        svc = self.service(service)
        everyone = svc is not None and svc.spec.publish_not_ready_addresses
        pods = [p for p in self.pods if not p.gone and selects(svc, p.labels)]
        ready = [bool(endpoint_ready(p.ready, p.deleting, everyone, True)) for p in pods]
        chosen = kube_proxy_targets(ready, [p.ready and p.deleting for p in pods])
        return [(HOST, p.inbound or p.port) for p, take in zip(pods, chosen, strict=True) if take]

    def urls(self, service: str, path: str) -> list[str]:
        """kube-proxy's view (``proxied``), at a request's time."""
        return [f"http://{HOST}:{port}{path}" for _, port in self.proxied(service)]

    def cluster_endpoints(self, clusters: list[str]) -> dict[str, list[tuple[str, int]]]:
        """Each Envoy cluster's endpoints (``outbound|port|subset|host``): the Service's
        endpoints whose pods carry the labels of the cluster's host's selector and subset (a
        subset no DestinationRule defines has none), as Istio's EDS gives them."""
        out: dict[str, list[tuple[str, int]]] = {}
        for name in clusters:
            _, _, subset, fqdn_ = name.split("|", 3)
            host = fqdn_.split(".")[0]
            service = self.service(host)
            want = dict(service.spec.selector) if service is not None and service.spec.selector else None
            if want is not None and subset:
                rule = next(
                    (r for r in self.scenario.destination_rules if r.spec.host.split(".")[0] == host), None
                )
                sub = next((x for x in rule.spec.subsets if x.name == subset), None) if rule else None
                want = {**want, **sub.labels} if sub is not None else None
            out[name] = [
                (HOST, p.inbound or p.port)
                for p in self._live(service)
                if want is not None and all(p.labels.get(k) == v for k, v in want.items())
            ]
        return out
