"""The runs tune adds to check's stress suite for a setting: what the app's profile says it must
ride out (its slowest start, its longest pause) and, behind outlier detection, two pods' short
blips, the counterweight to one-pod-500 (objective.plan puts them with the suite's runs)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from probesim.analysis.own_scenario import STOP_THE_WORLD_MS
from probesim.analysis.stress import EVENT_AT_MS
from probesim.kube.load_model import app_profiles
from probesim.model.kubernetes import Workload
from probesim.model.scenario import Scenario
from probesim.profiles import ProfileCorrection, Resolved


def profile_stresses(
    base: dict[str, Any], w: Workload, corrections: Sequence[ProfileCorrection] = ()
) -> list[tuple[str, Scenario]]:
    """What the app's profile (with .probesim.yaml's ``corrections``) says it must ride out,
    when no scenario says what the app does: its slowest start (a cold node, a CPU limit, a
    recovery) and its longest pause (GC) when longer than the suite's 2 s — each a stress whose
    restarts and flaps are needless."""
    found = app_profiles(w, corrections)
    out: list[tuple[str, Scenario]] = []
    slowest = {n: r.start_ms[1] for n, r in found.items() if r.timed and r.start_ms[1] > 0}
    if slowest:
        doc = copy.deepcopy(base)
        containers = doc["spec"]["behavior"][w.name].setdefault("containers", {})
        for name, ms in slowest.items():
            containers.setdefault(name, {})["start"] = f"{ms}ms"
        names = ", ".join(_named(n, found[n]) for n in slowest)
        out.append((f"profile slow start ({names})", Scenario.model_validate(doc)))
    pauses = {n: r.pause_ms for n, r in found.items() if r.timed and r.pause_ms > STOP_THE_WORLD_MS}
    if pauses:
        doc = copy.deepcopy(base)
        containers = doc["spec"]["behavior"][w.name].setdefault("containers", {})
        for name, ms in pauses.items():
            episode = {"kind": "hang", "at": f"{EVENT_AT_MS}ms", "for": f"{ms}ms"}
            containers.setdefault(name, {}).setdefault("episodes", []).append(episode)
        names = ", ".join(_named(n, found[n]) for n in pauses)
        out.append((f"profile pause ({names})", Scenario.model_validate(doc)))
    return out


def _named(container: str, r: Resolved) -> str:
    """Whose start or pause a profile stress runs: the catalog family's, or the container's as
    .probesim.yaml corrects it."""
    return r.profile.name if r.known else f"{container}, as .probesim.yaml says"


BLIPS_LABEL = "stress two-pod-blips"
BLIP_MS = 3000  # each blip: a pod answers 500 this long, then recovers
BLIP_GAP_MS = 60_000  # the second pod's blip, after the first's


def blip_stress(base: dict[str, Any], w: Workload) -> Scenario | None:
    """Transient blips, the counterweight to one-pod-500's pod failing for good, for a workload
    behind outlier detection: pod 0 answers 500 on the traffic's paths for BLIP_MS, then
    recovers; a minute later pod 1 does the same. An ejection that outlasts a blip keeps a
    healthy pod out: while pod 0 is still ejected, maxEjectionPercent may forbid ejecting pod 1
    too (Envoy never ejects past it), and its blip fails every request sent to it; where more
    may be ejected, the pods left carry all the load. A long baseEjectionTime is what one-pod-500
    rewards and this run prices. None without traffic or with fewer than two replicas."""
    spec = base["spec"]
    if w.spec.replicas < 2 or not spec.get("traffic"):
        return None
    doc = copy.deepcopy(base)
    wb = doc["spec"].setdefault("behavior", {}).setdefault(w.name, {})
    containers = wb.setdefault("containers", {})
    paths = sorted({t.get("path", "/") for t in spec["traffic"]})
    for ordinal in (0, 1):
        mine = {c.name: copy.deepcopy(containers.get(c.name, {})) for c in w.pod_spec.containers}
        for ov in wb.get("pods", []):  # the last override naming the pod is the one it runs
            if ordinal in ov["ordinals"]:
                mine.update(copy.deepcopy(ov["containers"]))
        at = EVENT_AT_MS + ordinal * BLIP_GAP_MS
        for b in mine.values():
            blip = {"kind": "errors", "at": f"{at}ms", "for": f"{BLIP_MS}ms", "status": 500, "paths": paths}
            b["episodes"] = [*b.get("episodes", []), blip]
        wb["pods"] = [*wb.get("pods", []), {"ordinals": [ordinal], "containers": mine}]
    return Scenario.model_validate(doc)
