"""A setting as the patches ``kubectl patch`` takes, and those patches applied here the way the
API server applies them, so every trial simulates exactly what the printed patch would make.

A workload's patch is a strategic-merge patch: lists of containers (and the other lists the
Kubernetes API merges by a key: env, ports, volumes, …) merge item by item on their merge key,
maps merge recursively, anything else is replaced. A DestinationRule is a custom resource, which
takes no strategic merge: its patch is a JSON merge patch (RFC 7386). Only the fields that change
are written. Patch directives (``$patch``, ``$retainKeys``) are never produced, and not read.
"""

from __future__ import annotations

import copy
import json
import shlex
from typing import Any

from probesim.mesh.istio import DestinationRule
from probesim.model.kubernetes import HANDLERS, Workload
from probesim.tune.space import Setting

# The patchMergeKey of the pod spec's lists (k8s.io/api/core/v1 types.go).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
}


def strategic_merge(doc: Any, patch: Any) -> Any:
    """``patch`` applied to ``doc`` as a strategic merge (neither is changed)."""
    if not isinstance(patch, dict) or not isinstance(doc, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif k in MERGE_KEYS and isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = _merge_list(out[k], v, MERGE_KEYS[k])
        else:
            out[k] = strategic_merge(out.get(k), v)
    return out


def _merge_list(items: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = copy.deepcopy(items)
    for p in patch:
        at = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == p.get(key)), None)
        if at is None:
            out.append(copy.deepcopy(p))
        else:
            out[at] = strategic_merge(out[at], p)
    return out


def merge_patch(doc: Any, patch: Any) -> Any:
    """``patch`` applied to ``doc`` as a JSON merge patch (RFC 7386)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _changed(now: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The fields of a probe that change; a check replaced by another (a tcpSocket by a grpc
    probe) is removed, as a strategic merge removes a field: set to null."""
    out = {k: v for k, v in new.items() if now.get(k) != v}
    if any(k in HANDLERS for k in out):
        out |= {k: None for k in now if k in HANDLERS and k not in new}
    return out


def container_changes(current: Setting, setting: Setting) -> list[dict[str, Any]]:
    """The containers list of a workload patch: per container, the probe fields that change
    (a probe the tuner adds whole)."""
    out = []
    for name, probes in setting.probes.items():
        now = current.probes.get(name, {})
        entry: dict[str, Any] = {}
        for fname, fields in probes.items():
            diff = _changed(now.get(fname, {}), fields) if fname in now else dict(fields)
            if diff:
                entry[fname] = diff
        if entry:
            out.append({"name": name, **entry})
    return out


def workload_patch(w: Workload, current: Setting, setting: Setting) -> dict[str, Any] | None:
    """The strategic-merge patch of ``w`` (as its kind nests the pod spec), None if unchanged."""
    containers = container_changes(current, setting)
    if not containers:
        return None
    pod = {"containers": containers}
    return {"spec": pod} if w.kind == "Pod" else {"spec": {"template": {"spec": pod}}}


def rule_patch(current: Setting, setting: Setting) -> dict[str, Any] | None:
    """The JSON merge patch of the DestinationRule's outlier detection, None if unchanged."""
    if setting.outlier is None or setting.outlier == current.outlier:
        return None
    diff = _changed(current.outlier or {}, setting.outlier)
    return {"spec": {"trafficPolicy": {"outlierDetection": diff}}} if diff else None


def patched_workload(w: Workload, current: Setting, setting: Setting) -> Workload:
    """``w`` with ``setting`` applied through its strategic-merge patch (API defaults applied)."""
    containers = container_changes(current, setting)
    if not containers:
        return w
    dumped = w.model_dump(mode="json", by_alias=True, exclude_none=True)
    # The model keeps every kind in a Deployment's shape (a Pod's spec is its template's); the
    # same patch applied to the manifest itself is read back by the loader in tests/tune.
    merged = strategic_merge(dumped, {"spec": {"template": {"spec": {"containers": containers}}}})
    return Workload.model_validate(merged)


def patched_rule(rule: DestinationRule, current: Setting, setting: Setting) -> DestinationRule:
    patch = rule_patch(current, setting)
    if patch is None:
        return rule
    dumped = rule.model_dump(mode="json", by_alias=True, exclude_none=True)
    return DestinationRule.model_validate(merge_patch(dumped, patch))


def kubectl_command(kind: str, name: str, namespace: str, patch: dict[str, Any], strategic: bool) -> str:
    """The ``kubectl patch`` command that applies ``patch`` (the namespace named unless default)."""
    words = ["kubectl", "patch", kind.lower(), name]
    if namespace != "default":
        words += ["-n", namespace]
    words += ["--type", "strategic" if strategic else "merge", "-p", json.dumps(patch, separators=(",", ":"))]
    return shlex.join(words)


def wrapped_command(command: str) -> str:
    """A shell command one argument group a line (`` \\`` continuations), as a person copies it:
    ``kubectl patch KIND NAME [-n NS] --type T`` then ``-p '…'``."""
    words = shlex.split(command)
    if "-p" not in words:
        return command
    i = words.index("-p")
    head = " ".join(shlex.quote(w) for w in words[:i])
    return f"{head} \\\n  -p {shlex.quote(words[i + 1])}" + "".join(
        f" {shlex.quote(w)}" for w in words[i + 2 :]
    )
