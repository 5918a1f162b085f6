"""What rules look at: every container of every workload, with its file, lines, raw YAML, the
Services that select it, the Istio objects, and — when a scenario is given — what the app does."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from probesim.analysis.budgets import Budget, read_budgets
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.patch import container_patch, fix_line, scalar_edits
from probesim.kube.ports import container_port
from probesim.kube.selectors import selects
from probesim.manifests.errors import field_path
from probesim.manifests.kubernetes import Objects
from probesim.manifests.yamlsrc import Doc, Path_, get_path
from probesim.model.duration import parse_ms
from probesim.model.kubernetes import Container, ProbeType, Service, ServicePort, Workload
from probesim.model.scenario import ContainerBehavior, Scenario
from probesim.profiles import ProfileCorrection, Resolved, resolve


@dataclass
class Thresholds:
    """Configurable limits (``.probesim.yaml`` → ``thresholds``)."""

    detection_target_ms: int = 60_000  # worst-case time for liveness to act on a hang
    restart_target_ms: int = 120_000  # ... and for the container to be back
    retry_amplification: int = 10  # tries multiplied across layers
    long_grace_ms: int = 60_000  # a pod grace period this long deserves a probe-level one

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Thresholds:
        t = cls()
        for key, attr in (
            ("detectionTarget", "detection_target_ms"),
            ("restartTarget", "restart_target_ms"),
            ("longGracePeriod", "long_grace_ms"),
        ):
            if key in d:
                setattr(t, attr, parse_ms(d[key]))
        if "retryAmplification" in d:
            t.retry_amplification = int(d["retryAmplification"])
        return t


@dataclass
class Target:
    """One container of one workload, as the rules see it."""

    workload: Workload
    container: Container
    group: str  # containers | initContainers
    index: int
    doc: Doc
    base: Path_  # where the object starts in the document
    spec_path: Path_  # the pod spec inside the object
    raw: dict[str, Any]
    services: list[Service]  # the Services that select the pod
    behavior: ContainerBehavior | None  # from the scenario, if any
    # The Service ports that reach this container: (Service, port, target) for each.
    serves: list[tuple[Service, int, int | str]] = field(default_factory=list)
    profile: Resolved | None = None  # what the container is (probesim.profiles): set by Context

    @property
    def path(self) -> Path_:
        return (*self.spec_path, self.group, self.index)

    @property
    def obj(self) -> str:
        return f"{self.workload.kind}/{self.workload.name}"

    @property
    def namespace(self) -> str:
        return self.workload.metadata.namespace

    def raw_probe(self, kind: ProbeType) -> dict[str, Any]:
        p = self.raw.get(f"{kind}Probe")
        return p if isinstance(p, dict) else {}


@dataclass
class Context:
    objects: Objects
    scenario: Scenario | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    targets: list[Target] = field(default_factory=list)
    corrections: tuple[ProfileCorrection, ...] = ()  # .probesim.yaml → profiles
    # The documents read: the kinds check does not simulate but judges are read from them
    # (PodDisruptionBudgets, into ``budgets``).
    docs: list[Doc] = field(default_factory=list)
    budgets: list[Budget] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.budgets = read_budgets(self.docs)
        beh = self.scenario.spec.behavior if self.scenario else {}
        for w in self.objects.workloads:
            origin = self.objects.origin(w)
            doc, base, spec_path = origin.doc, origin.base, origin.spec_path
            pod = get_path(doc.data, (*base, *spec_path))
            # A Job's pods run to completion: no Service sends them traffic.
            services = (
                [] if w.kind in ("Job", "CronJob") else [s for s in self.objects.services if selects(s, w)]
            )
            wb = beh.get(w.name)
            targets: list[Target] = []
            for group, containers in (
                ("initContainers", w.pod_spec.init_containers),
                ("containers", w.pod_spec.containers),
            ):
                raw_list = pod.get(group) if isinstance(pod, dict) else None
                for i, c in enumerate(containers):
                    raw = raw_list[i] if isinstance(raw_list, list) and i < len(raw_list) else {}
                    b = wb.containers.get(c.name) if wb else None
                    if wb and b is None and self.scenario is not None:
                        b = ContainerBehavior()
                    t = Target(w, c, group, i, doc, base, spec_path, raw, services, b)
                    t.profile = resolve(
                        w.name, c.name, raw, self.corrections, b.start if b is not None and wb else None
                    )
                    targets.append(t)
            _route_service_ports(targets, services)
            self.targets += targets

    def finding(
        self,
        rule_id: str,
        t: Target,
        message: str,
        rel: Path_ = (),
        fix: str = "",
        change: dict[str, Any] | None = None,
        patch: dict[str, Any] | None = None,
        note: str = "",
    ) -> Finding:
        """A finding on ``t``; its fix a ``change`` of the container's fields or a ``patch`` of the
        object, said as the fix line (with ``note``: why those values); else the text ``fix``."""
        path = (*t.path, *rel)
        edits: tuple[tuple[int, str, str, str], ...] = ()
        if change and t.workload.kind == "Pod" and any(str(k).endswith("Probe") for k in change):
            # The API server refuses a change of a running Pod's probes (only images and a few
            # fields of a Pod's spec are mutable): the fix is a new Pod.
            recreate = "a Pod's probes cannot be changed in place: delete the Pod and create it with the fix"
            note = f"{note}; {recreate}" if note else recreate
        if change:
            patch = container_patch(tuple(str(k) for k in t.spec_path), t.group, t.container.name, change)
            edits = scalar_edits(t.doc, (*t.base, *t.path), t.raw, change)
        if patch:
            fix = fix_line(patch, get_path(t.doc.data, t.base), note)
        return Finding(
            rule=REGISTRY.rules[rule_id],
            message=message,
            obj=t.obj,
            file=t.doc.file,
            line=t.doc.line_of((*t.base, *path)),
            field=field_path(path),
            container=t.container.name,
            source=t.doc.source,
            namespace=t.namespace,
            fix=fix,
            patch=patch or None,
            edits=edits,
            assumed=t.profile,
        )

    def raw_finding(
        self,
        rule_id: str,
        doc: Doc,
        base: Path_,
        obj: str,
        rel: Path_,
        message: str,
        namespace: str = "default",
        patch: dict[str, Any] | None = None,
        note: str = "",
    ) -> Finding:
        """A finding on an object that is not a container (an Istio resource: its ``patch`` is a
        JSON merge patch)."""
        return Finding(
            rule=REGISTRY.rules[rule_id],
            message=message,
            obj=obj,
            file=doc.file,
            line=doc.line_of((*base, *rel)),
            field=field_path(rel),
            source=doc.source,
            namespace=namespace,
            fix=fix_line(patch, get_path(doc.data, base), note) if patch else "",
            patch=patch,
            patch_type="merge",
        )


_METRICS = re.compile(r"^(https?-)?metrics(-.*)?$|^.*-metrics$|^exporter$")


def metrics_only(sp: ServicePort, t: Target) -> bool:
    """A Service port that only exposes metrics for scraping (its name, or the container port's
    name, says so: ``metrics``, ``http-metrics``, ``…-metrics``): no client traffic goes there."""
    names = [sp.name or ""]
    target = sp.effective_target
    names += [cp.name or "" for cp in t.container.ports if target in (cp.container_port, cp.name)]
    named = [n.lower() for n in names if n]
    return bool(named) and all(_METRICS.match(n) for n in named)


def _route_service_ports(targets: list[Target], services: list[Service]) -> None:
    """Which containers each Service port reaches: the one declaring the target port (by number
    or name). A port no container declares still reaches the pod (the kubelet and kube-proxy need
    no declaration): it is given to a container with a readiness probe, else to the first one —
    except on a headless Service, whose ports nothing proxies (it names the pods in DNS). A port
    that only exposes metrics carries no client traffic and is not counted."""
    serving = [t for t in targets if t.group == "containers" or t.container.restart_policy == "Always"]
    for s in services:
        for sp in s.spec.ports:
            target = sp.effective_target
            hit = [t for t in serving if container_port(t.container, target) is not None
                   and any(target in (cp.container_port, cp.name) for cp in t.container.ports)]  # fmt: skip
            if hit:
                hit = [t for t in hit if not metrics_only(sp, t)]
            elif s.spec.headless or _METRICS.match((sp.name or "").lower()):
                continue  # nothing declares it and nothing proxies it, or scrapes only
            else:  # undeclared: the container with a readiness probe, else the first app
                apps = [t for t in serving if t.group == "containers"]
                hit = [t for t in apps if t.container.readiness_probe is not None][:1] or apps[:1]
            for t in hit:
                t.serves.append((s, sp.port, target))
