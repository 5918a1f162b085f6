"""What rules look at: every container of every workload, with its file, lines, raw YAML, the
Services that select it, the Istio objects, and — when a scenario is given — what the app does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probesim.analysis.findings import REGISTRY, Finding
from probesim.manifests.errors import field_path
from probesim.manifests.kubernetes import Objects
from probesim.manifests.yamlsrc import Doc, Path_
from probesim.model.duration import parse_ms
from probesim.model.kubernetes import Container, ProbeType, Service, Workload
from probesim.model.scenario import ContainerBehavior, Scenario


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
    services: list[Service]
    behavior: ContainerBehavior | None  # from the scenario, if any

    @property
    def path(self) -> Path_:
        return (*self.spec_path, self.group, self.index)

    @property
    def obj(self) -> str:
        return f"{self.workload.kind}/{self.workload.name}"

    def raw_probe(self, kind: ProbeType) -> dict[str, Any]:
        p = self.raw.get(f"{kind}Probe")
        return p if isinstance(p, dict) else {}


@dataclass
class Context:
    objects: Objects
    scenario: Scenario | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    targets: list[Target] = field(default_factory=list)

    def __post_init__(self) -> None:
        beh = self.scenario.spec.behavior if self.scenario else {}
        for w in self.objects.workloads:
            doc, base = self.objects.origins[f"{w.kind}/{w.name}"]
            spec_path: Path_ = ("spec",) if w.kind == "Pod" else ("spec", "template", "spec")
            pod = _get(doc.data, (*base, *spec_path))
            services = [s for s in self.objects.services if _selects(s, w)]
            wb = beh.get(w.name)
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
                    self.targets.append(Target(w, c, group, i, doc, base, spec_path, raw, services, b))

    def finding(self, rule_id: str, t: Target, message: str, rel: Path_ = ()) -> Finding:
        path = (*t.path, *rel)
        return Finding(
            rule=REGISTRY.rules[rule_id],
            message=message,
            obj=t.obj,
            file=t.doc.file,
            line=t.doc.line_of((*t.base, *path)),
            field=field_path(path),
            container=t.container.name,
            source=t.doc.source,
        )

    def raw_finding(self, rule_id: str, doc: Doc, base: Path_, obj: str, rel: Path_, message: str) -> Finding:
        return Finding(
            rule=REGISTRY.rules[rule_id],
            message=message,
            obj=obj,
            file=doc.file,
            line=doc.line_of((*base, *rel)),
            field=field_path(rel),
            source=doc.source,
        )


def _get(data: Any, path: Path_) -> Any:
    for p in path:
        if isinstance(data, dict) and isinstance(p, str):
            data = data.get(p)
        elif isinstance(data, list) and isinstance(p, int) and 0 <= p < len(data):
            data = data[p]
        else:
            return None
    return data


def _selects(s: Service, w: Workload) -> bool:
    sel = s.spec.selector
    return bool(sel) and all(w.pod_labels.get(k) == v for k, v in sel.items())
