"""The stress suite's workload as the checked files have it, when no scenario is given: its own
scenario (its Services, the HPA that scales it and the DestinationRules and VirtualServices
naming its Services, found among the files; a VirtualService routing to pods it does not have is
left out, and said), the Services nearest it among variants' folders, and what its containers'
app profiles give a stress (the baseline's typical start, stop-the-world's longer pause) with the
text that says so beside a verdict. analysis/stress.py builds the stresses from them.
"""

from __future__ import annotations

import os
from typing import Any

from probesim.kube.selectors import selects
from probesim.manifests.generated import istio_hosts
from probesim.manifests.kubernetes import SIMULATED_KINDS, Objects
from probesim.mesh.istio import DestinationRule, VirtualService
from probesim.mesh.load import istio_objects
from probesim.model.duration import format_ms, parse_ms
from probesim.model.kubernetes import HorizontalPodAutoscaler, Service, Workload
from probesim.model.scenario import Scenario
from probesim.profiles import Resolved

DURATION_MS = 5 * 60_000  # a stress run's length (the given scenario's when longer)


def dump(m: Any) -> Any:
    """A model as a Scenario document has it."""
    return m.model_dump(mode="json", by_alias=True, exclude_none=True)


def own_scenario(objects: Objects, w: Workload, services: list[Service]) -> tuple[Scenario, str]:
    """``w`` as the manifests have it, in a scenario of its own when no scenario is given: its
    Services, its HPA, the DestinationRules and VirtualServices naming those Services, and the
    Namespaces' labels (Istio's injection), with no behaviour or traffic of its own (the default
    load model's, base_scenario). ``probesim check diff`` runs each side so too. A VirtualService
    that routes elsewhere too (another version's subset, another Service) is left out — ``w``
    alone would get requests meant for pods that are not there — and the text says so."""
    names = {s.name for s in services}
    key = (w.kind, w.metadata.namespace, w.name)
    here = os.path.dirname(objects.origin(w).doc.file)
    variants = any((x.kind, x.metadata.namespace, x.name) == key for x in objects.workloads if x is not w)

    def ours(file: str) -> bool:
        """Whether an object of ``file`` goes with ``w``: any does, but of a workload read in
        several variants' folders (a base and its overlays), only those of its folder or above."""
        there = os.path.dirname(file)
        return not variants or here == there or here.startswith(there + os.sep) or not there

    scaler = next((h for h in objects.hpas if h.spec.scale_target_ref.kind == w.kind
                   and h.spec.scale_target_ref.name == w.name and h.metadata.namespace == w.metadata.namespace
                   and ours(objects.origin(h).doc.file) and _simulated(objects, h)), None)  # fmt: skip
    mesh = [x for x in objects.istio if istio_hosts(x[2]) & names and ours(x[0].file)]
    rules, vss = istio_objects(Objects(istio=mesh))
    files = [doc.file for doc, _, data in mesh if data.get("kind") == "VirtualService"]
    away = [(v, f, why) for v, f in zip(vss, files, strict=True) if (why := _elsewhere(v, w, names, rules))]
    left = "; ".join(f"VirtualService {v.metadata.name} ({os.path.basename(f)}) left out: it {why}"
                     for v, f, why in away)  # fmt: skip
    vss = [v for v in vss if not any(v is x for x, _, _ in away)]
    sc = Scenario.model_validate(
        {
            "name": w.name,
            "spec": {"duration": f"{DURATION_MS // 1000}s"},
            "workloads": [dump(w)],
            "services": [dump(s) for s in services],
            "autoscalers": [dump(scaler)] if scaler is not None else [],
            "destinationRules": [dump(r) for r in rules],
            "virtualServices": [dump(v) for v in vss],
            "namespaceLabels": objects.namespace_labels,
        }
    )
    return sc, left


def _elsewhere(v: VirtualService, w: Workload, names: set[str], rules: list[DestinationRule]) -> str:
    """Where a VirtualService routes that ``w``'s pods are not (``names``: its Services), "" when
    every route reaches them."""
    for route in v.spec.http:
        for d in (x.destination for x in route.route):
            host = d.host.split(".")[0]
            if host not in names:
                return f"routes to {d.host}, a Service that does not select {w.kind} {w.name}"
            if d.subset is None:
                continue
            subsets = [x for r in rules if r.spec.host.split(".")[0] == host for x in r.spec.subsets]
            sub = next((x for x in subsets if x.name == d.subset), None)
            if sub is None or any(w.pod_labels.get(k) != val for k, val in sub.labels.items()):
                return f"routes to subset {d.subset} of {host}, whose pods are not {w.kind} {w.name}'s"
    return ""


def _simulated(objects: Objects, h: HorizontalPodAutoscaler) -> bool:
    """Whether the HPA scales on a metric probesim simulates (CPU utilization), as ``probesim run``
    takes it from manifests."""
    ignored = objects.unsimulated_metrics.get(h.name, [])
    return not (ignored and len(ignored) == len(h.spec.metrics))


def nearest_services(objects: Objects, w: Workload, services: list[Service]) -> list[Service]:
    """``services``, one of each name: of Services of one name in several variants' folders (a
    base and its overlays), the one whose file is nearest ``w``'s."""
    here = objects.origin(w).doc.file.split(os.sep)

    def near(s: Service) -> int:
        there = objects.origin(s).doc.file.split(os.sep)
        return -next((i for i, (a, b) in enumerate(zip(here, there, strict=False)) if a != b), len(here))

    best: dict[str, Service] = {}
    for s in services:
        if s.name not in best or near(s) < near(best[s.name]):
            best[s.name] = s
    return [s for s in services if best[s.name] is s]


STOP_THE_WORLD_MS = 2000  # stop-the-world-2s's pause, unless the app's profile says a longer one


def pause_ms(app: dict[str, Resolved] | None, container: str) -> int:
    """A container's longest pause, by its app profile (0 when the app is unknown)."""
    p = (app or {}).get(container)
    return p.pause_ms if p is not None and p.timed else 0


def alone_note(objects: Objects, w: Workload, services: list[Service]) -> str:
    """For one replica whose Services send to other workloads too (bare Pods of one group behind
    one Service), why it is stressed alone; "" otherwise."""
    for s in services:
        peers = [f"{x.kind} {x.name}" for x in objects.workloads
                 if x is not w and x.kind in SIMULATED_KINDS and selects(s, x)]  # fmt: skip
        if peers:
            return (f"stressed alone, as every workload is: Service {s.name} also sends to "
                    f"{', '.join(peers)}, each stressed on its own, so the group's loss of one member "
                    "is not simulated here")  # fmt: skip
    return ""


def profile_note(stress: str, base: dict[str, Any], w: Workload, app: dict[str, Resolved] | None) -> str:
    """What a stress took from the app's profiles (said with its verdict): the baseline's start,
    start-x2's doubled one, stop-the-world's longer pause; "" when nothing."""
    timed = {n: p for n, p in (app or {}).items() if p.timed}
    one = len(w.pod_spec.containers) == 1
    parts = []
    for name, p in timed.items():
        label = p.profile.name if p.known else "the app"
        who = label if one else f"[{name}] {label}"
        said = ".probesim.yaml's correction" if p.corrected else "its profile"
        typical = format_ms(p.start_ms[0])
        if stress == "baseline" and p.start_ms[0] > 0:
            parts.append(f"app starts in {typical} ({who}'s typical start, {said})")
        elif stress == "start-x2" and p.start_ms[0] > 0:
            start = format_ms(parse_ms(base["spec"]["behavior"][w.name]["containers"][name]["start"]) * 2)
            parts.append(f"app starts in {start} (twice {who}'s typical {typical}; "
                         f"{format_ms(p.start_ms[1])} at worst)")  # fmt: skip
        elif stress == "stop-the-world-2s" and p.pause_ms > STOP_THE_WORLD_MS:
            parts.append(f"a {format_ms(p.pause_ms)} pause, not 2s: {who}'s longest ({said})")
    return "; ".join(parts)
