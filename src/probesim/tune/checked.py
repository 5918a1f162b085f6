"""What ``probesim check`` says of a setting, as the tuner asks it: the findings on the workload
patched to the setting (through check's public entry point, every rule as it stands), which of
them are about probes, handlers or the outlier detection the tuner cures, and the setting check's
own fixes make of the current one (a seed of the search and what a probe the tuner adds is put
back to)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from probesim.analysis.findings import REGISTRY, SEVERITY_RANK
from probesim.model.kubernetes import Workload
from probesim.tune.inputs import TuneInputs
from probesim.tune.patch import patched_rule, patched_workload, strategic_merge
from probesim.tune.space import Setting, Space

API_VERSIONS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "DaemonSet": "apps/v1",
}


# Families of check's rules no probe setting causes or cures: where replicas land and what
# guards them in a drain, what scales the workload, what its Services reach.
NOT_PROBES = frozenset({"disruption", "scaling", "services"})


def check_findings(inputs: TuneInputs, space: Space, setting: Setting) -> set[tuple[str, str, str, str, str]]:
    """What ``probesim check`` (its public entry point, every rule as it stands) warns of, or
    worse, on the workload patched to ``setting`` beside its Services and DestinationRule: the
    (rule, object, container, field, message) of each finding — the message left out of those of
    the NOT_PROBES families, whose words (what they assumed of the app, from its probes' paths)
    may change with a setting while the finding stays the same."""
    return {
        (f.rule.id, f.obj, f.container, f.field, "" if f.rule.family in NOT_PROBES else f.message)
        for f in _report(inputs, space, setting).findings
        if SEVERITY_RANK[f.severity] >= SEVERITY_RANK["warning"]
    }


def _report(inputs: TuneInputs, space: Space, setting: Setting) -> Any:
    from probesim.analysis.check import check
    from probesim.manifests.yamlsrc import load_docs

    current = space.current()
    w = patched_workload(inputs.workload, current, setting)
    rule = patched_rule(inputs.rule, current, setting) if inputs.rule is not None else None
    docs: list[dict[str, Any]] = []
    for o in [w, *inputs.services]:
        d = o.model_dump(mode="json", by_alias=True, exclude_none=True)
        docs.append({"apiVersion": API_VERSIONS.get(str(d.get("kind")), "v1"), **d})
    if rule is not None:
        d = rule.model_dump(mode="json", by_alias=True, exclude_none=True)
        docs.append({"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule", **d})
    return check([], scenario_docs=list(load_docs(yaml.safe_dump_all(docs, sort_keys=False), "patched.yaml")))


# Check's findings on a probe's handler (a path that checks a dependency, a port the container
# does not declare): the tuner changes timings, not handlers.
HANDLER_RULES = frozenset({"PS002", "PS004", "PS006", "PS016", "PS017"})
# Check's findings on the outlierDetection the tuner searches.
OUTLIER_RULES = frozenset({"PS020", "PS021", "PS022"})


def about_probes(finding: tuple[str, str, str, str, str]) -> bool:
    """Whether a finding is about a probe: its field or its message names one (the word, not
    "probesim", which a message saying what it assumed names)."""
    if REGISTRY.rules[finding[0]].family in NOT_PROBES:
        return False
    return "Probe" in finding[3] or "Probe" in finding[4] or re.search(r"\bprobes?\b", finding[4]) is not None


def outlier_fix(findings: list[Any], space: Space) -> dict[str, Any] | None:
    """The outlierDetection check's fixes make of the DestinationRule's (PS020-PS022: one merge
    patch of the rule's trafficPolicy, the one the tuner tunes); None when they change none."""
    rule = space.rule
    current = space.current_outlier()
    if rule is None or current is None:
        return None
    out = dict(current)
    for f in findings:
        mine = f.obj == f"DestinationRule/{rule.metadata.name}"
        if f.rule.id in OUTLIER_RULES and f.patch is not None and mine:
            change = f.patch.get("spec", {}).get("trafficPolicy", {}).get("outlierDetection", {})
            out.update(change if isinstance(change, dict) else {})
    return out if out != current else None


def rules_fix(inputs: TuneInputs, space: Space) -> Setting | None:
    """The setting ``probesim check``'s own fixes make of the current one (every patch of the
    workload's findings applied, as the re-check property applies them, and of its
    DestinationRule's outlier detection), repaired; None when check finds nothing to fix."""
    w = inputs.workload
    doc = w.model_dump(mode="json", by_alias=True, exclude_none=True)
    findings = _report(inputs, space, space.current()).findings
    patches = [
        f.patch
        for f in findings
        if f.patch is not None and f.patch_type == "strategic" and f.obj == f"{w.kind}/{w.name}"
    ]
    outlier = outlier_fix(findings, space)
    if not patches and outlier is None:
        return None
    for patch in patches:
        doc = strategic_merge(doc, patch)
    fixed = Space(Workload.model_validate(doc), inputs.rule).current()
    now = space.current().probes
    mine: dict[str, dict[str, dict[str, Any]]] = {}
    for c, ps in fixed.probes.items():
        mine[c] = {f: t for f, t in ps.items() if f in now.get(c, {})}
        for f in space.added.get(c, {}):  # a probe the tuner adds: the fix's, with its handler
            if f in ps:
                mine[c][f] = {**space.added[c][f], **ps[f]}
        # A startup probe the fix adds (liveness's delay, or a slow start, moved into it): the
        # space adds one on liveness's check, as the timings the fix gives it.
        ctr = next(x for x in inputs.workload.pod_spec.containers if x.name == c)
        live = ctr.liveness_probe
        if "startupProbe" in ps and "startupProbe" not in now.get(c, {}) and live is not None:
            mine[c]["startupProbe"] = {**space.startup_handler(ctr, live), **ps["startupProbe"]}
    fixed_outlier = outlier if outlier is not None else space.current_outlier()
    return space.repair(space.with_handlers(space.with_added(Setting(mine, fixed_outlier))))
