"""Fixes as data: a finding's fix is a patch of its object — a strategic-merge patch for
Kubernetes kinds (what ``kubectl patch --type strategic`` takes: containers merged by name,
ports by containerPort, ``null`` deletes a key), a JSON merge patch for Istio's custom resources
(which have no strategic merge). This module builds such patches, applies them as the API server
would (to re-check a fix), and says them in one line for the text report."""

from __future__ import annotations

import copy
import json
from typing import Any, Literal

from probesim.manifests.yamlsrc import Doc, Path_

PatchType = Literal["strategic", "merge"]

# The strategic-merge keys of the lists a fix touches (k8s.io/api core/v1 patchMergeKey).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "ports": "containerPort"}


def container_patch(spec_path: Path_, group: str, name: str, change: dict[str, Any]) -> dict[str, Any]:
    """The object patch that changes ``change`` in container ``name`` (of ``group``) of the pod
    spec at ``spec_path`` in the object."""
    return nest(spec_path, {group: [{"name": name, **change}]})


def nest(path: Path_, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` placed at ``path`` (string keys only) of an otherwise empty patch."""
    out: dict[str, Any] = value
    for key in reversed(path):
        out = {str(key): out}
    return out


def apply(obj: Any, patch: dict[str, Any], kind: PatchType = "strategic") -> Any:
    """``obj`` with ``patch`` applied, as the API server applies it (a new object)."""
    if not isinstance(obj, dict):
        return copy.deepcopy(patch)
    out = dict(obj)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = apply(out.get(key), value, kind)
        elif kind == "strategic" and key in MERGE_KEYS and isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, MERGE_KEYS[key])
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge_list(old: Any, items: list[Any], key: str) -> list[Any]:
    merged = list(old) if isinstance(old, list) else []
    for item in items:
        at = next(
            (i for i, o in enumerate(merged) if isinstance(o, dict) and o.get(key) == item.get(key)), None
        )
        if at is None:
            merged.append({k: v for k, v in item.items() if v is not None})
        else:
            merged[at] = apply(merged[at], item)
    return merged


def flow(value: Any) -> str:
    """``value`` as YAML flow text: ``{tcpSocket: {port: 5432}, periodSeconds: 5}``."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, str):
        plain = value and not any(c in value for c in ":{}[],#&*!|>'\"%@`") and value.strip() == value
        return (
            value
            if plain and not value[0].isdigit() and value not in ("true", "false", "null")
            else json.dumps(value)
        )
    return json.dumps(value)


def describe(patch: dict[str, Any], original: Any, prefix: str = "") -> list[str]:
    """The patch's changes as ``field: value`` lines, dotted where the field exists in
    ``original`` (``livenessProbe.failureThreshold: 6``), whole where it is new (``add
    readinessProbe: {...}``); ``remove`` for a deleted key. Containers are named by the patch."""
    out: list[str] = []
    for key, value in patch.items():
        here = f"{prefix}{key}"
        old = original.get(key) if isinstance(original, dict) else None
        if value is None:
            if old is not None:
                out.append(f"remove {here}")
        elif isinstance(value, dict) and isinstance(old, dict):
            out += describe(value, old, here + ".")
        elif key in MERGE_KEYS and isinstance(value, list):
            mk = MERGE_KEYS[key]
            for item in value:
                match = next(
                    (o for o in old or [] if isinstance(o, dict) and o.get(mk) == item.get(mk)), None
                )
                rest = {k: v for k, v in item.items() if k != mk}
                if match is None:
                    out.append(f"add to {here}: {flow(item)}")
                else:
                    out += describe(rest, match, "")
        elif isinstance(value, list) and isinstance(old, list) and len(value) == len(old):
            # A list a merge patch gives whole: say what changed in it, item by item.
            for i, (new_item, old_item) in enumerate(zip(value, old, strict=True)):
                if new_item != old_item:
                    if isinstance(new_item, dict) and isinstance(old_item, dict):
                        out += describe(_diff(new_item, old_item), old_item, f"{here}[{i}].")
                    else:
                        out.append(f"{here}[{i}]: {flow(new_item)}")
        elif old is None and isinstance(value, (dict, list)):
            out.append(f"add {here}: {flow(value)}")
        else:
            out.append(f"{here}: {flow(value)}")
    return out


def _diff(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """The merge patch that turns ``old`` into ``new``."""
    out: dict[str, Any] = {k: None for k in old if k not in new}
    for k, v in new.items():
        if k not in old:
            out[k] = v
        elif isinstance(v, dict) and isinstance(old[k], dict):
            d = _diff(v, old[k])
            if d:
                out[k] = d
        elif v != old[k]:
            out[k] = v
    return out


def fix_line(patch: dict[str, Any], obj: Any, note: str = "") -> str:
    """The text ``fix:`` line of a patch of ``obj``: every change, then why (``note``)."""
    text = ", ".join(describe(patch, obj))
    return f"{text} ({note})" if note else text


def scalar_edits(
    doc: Doc, at: Path_, original: Any, change: dict[str, Any]
) -> tuple[tuple[int, str, str, str], ...]:
    """``change`` (of the mapping ``original`` at ``at`` in ``doc``) as text edits — (line, key,
    old value, new value) — when every change replaces a scalar the document already has; ()
    when one adds or removes a field (no text to replace)."""
    out: list[tuple[int, str, str, str]] = []
    for key, value in change.items():
        old = original.get(key) if isinstance(original, dict) else None
        if isinstance(value, dict) and isinstance(old, dict):
            inner = scalar_edits(doc, (*at, key), old, value)
            if not inner:
                return ()
            out += inner
        elif isinstance(value, (int, str)) and isinstance(old, (int, str)) and not isinstance(old, bool):
            line = doc.lines.get((*at, key))
            if line is None:
                return ()
            out.append((line, key, str(old), str(value)))
        else:
            return ()
    return tuple(out)
