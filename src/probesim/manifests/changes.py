"""Two sets of manifests object by object, for ``probesim diff``: every Kubernetes object of each
side keyed by kind, namespace and name (a custom kind by its API group too: a Knative Service is
no Service), compared as the API server would read it (null fields left out, a List's item with
its List's apiVersion and kind), and the fields that differ as readable paths.

An object is the same wherever it is written: moved to another file or another place in its
file, it has not changed. Two objects of one key on one side with different content are
variants (a base and its overlay): each is keyed by its folder too, and matched with the
other side's of that folder.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from probesim.manifests import kubernetes as k8s
from probesim.manifests.kubernetes import KNOWN_GROUP_KINDS, obj_key
from probesim.manifests.yamlsrc import Doc, Path_
from probesim.safe import cut

# Set by the API server, not by whoever wrote the manifest (an object exported from a cluster).
SERVER_FIELDS = ("creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "selfLink")
# The keys that tell apart the items of a list (the API's patchMergeKey), as kubectl diff shows them.
LIST_KEYS = ("name", "containerPort", "mountPath", "devicePath", "port", "key")
VALUE_LIMIT = 120  # characters of a value shown in a change


@dataclass(frozen=True)
class Obj:
    """One object of one side: its key, where it is, and its content as compared."""

    key: str  # Kind/namespace/name (Kind.group/… for a custom resource of a built-in kind's name)
    kind: str
    namespace: str
    name: str
    api_version: str
    file: str
    line: int
    content: Any
    doc: Doc
    base: Path_


@dataclass(frozen=True)
class FieldChange:
    path: str  # spec.template.spec.containers[app].livenessProbe.timeoutSeconds
    before: Any  # None: not set
    after: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "before": shown_value(self.before), "after": shown_value(self.after)}


def _group(api: str) -> str:
    return api.split("/", 1)[0] if "/" in api else ""


_BUILT_IN_KINDS = frozenset(k for kinds in KNOWN_GROUP_KINDS.values() for k in kinds)


def kind_key(kind: str, api_version: str) -> str:
    """The kind as objects are keyed: alone (apps/v1 and extensions/v1beta1 are one Deployment),
    but a custom resource's of a built-in kind's name with its API group (``Service.serving.
    knative.dev`` is no Service)."""
    group = _group(api_version)
    custom = group not in KNOWN_GROUP_KINDS and "." in group and not group.endswith(".k8s.io")
    return f"{kind}.{group}" if custom and kind in _BUILT_IN_KINDS else kind


def _items(doc: Doc) -> Iterable[tuple[Path_, Any]]:
    """The objects of a document: itself, or each item of a List (``<Kind>List``)."""
    data = doc.data
    kind = data.get("kind") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        for i in range(len(data["items"])):
            yield ("items", i), k8s.content(doc, ("items", i))
    else:
        yield (), k8s.content(doc, ())


def _cleaned(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without its status and the fields the API server sets."""
    out = {k: v for k, v in data.items() if k != "status"}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = {k: v for k, v in meta.items() if k not in SERVER_FIELDS}
    return out


def _folder(file: str, root: str) -> str:
    """The folder of ``file`` relative to ``root`` ('.' for the root itself)."""
    if file == "-" or file.startswith("<"):
        return "."
    return os.path.relpath(os.path.dirname(file) or ".", root or ".")


def objects_of(docs: Iterable[Doc], root: str = "") -> dict[str, Obj]:
    """Every Kubernetes object of ``docs`` by key. An object in several folders (variants: a base
    and its overlays, content alike or not) is keyed ``key@folder`` in each, the folder relative
    to ``root``; given twice in one folder, the first is it."""
    found: dict[str, dict[str, Obj]] = {}  # key → folder → its first object there
    for doc in docs:
        for base, data in _items(doc):
            if not isinstance(data, dict):
                continue
            kind, api, meta = data.get("kind"), data.get("apiVersion"), data.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if not (
                isinstance(kind, str) and kind and isinstance(api, str) and api and isinstance(name, str)
            ):
                continue
            ns = meta.get("namespace") if isinstance(meta, dict) else None
            namespace = ns if isinstance(ns, str) and ns else "default"
            key = obj_key(kind_key(kind, api), namespace, name)
            o = Obj(key, kind, namespace, name, api, doc.file, doc.line_of(base), _cleaned(data), doc, base)
            found.setdefault(key, {}).setdefault(_folder(doc.file, root), o)
    out: dict[str, Obj] = {}
    for key, folders in found.items():
        if len(folders) == 1:
            out[key] = next(iter(folders.values()))
        else:
            for folder, o in folders.items():
                out[f"{key}@{folder}"] = o
    return out


def aligned(these: dict[str, Obj], those: dict[str, Obj], root: str = "") -> dict[str, Obj]:
    """``these`` keyed as ``those`` is: an object in one folder here, whose key is in several
    folders there, keyed by its folder too (one variant of them, matched with that folder's)."""
    split = {k.partition("@")[0] for k in those if "@" in k}
    return {(f"{k}@{_folder(o.file, root)}" if k in split else k): o for k, o in these.items()}


def _list_key(before: list[Any], after: list[Any]) -> str | None:
    """The key that tells the items of both lists apart (each item a mapping with a distinct
    value of it), if any."""
    items = [*before, *after]
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for k in LIST_KEYS:
        for side in (before, after):
            values = [x.get(k) for x in side]
            if any(v is None for v in values) or len(set(map(str, values))) != len(values):
                break
        else:
            return k
    return None


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _step(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _PLAIN.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def field_changes(before: Any, after: Any, path: str = "") -> list[FieldChange]:
    """The fields that differ between two objects (or values), each once at its deepest path:
    mappings key by key, lists item by item on their merge key (containers by name) where they
    have one, else by position."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[FieldChange] = []
        for k in [*before, *(k for k in after if k not in before)]:
            if before.get(k) != after.get(k):
                out += field_changes(before.get(k), after.get(k), _step(path, k))
        return out
    if isinstance(before, list) and isinstance(after, list) and before != after:
        key = _list_key(before, after)
        if key is not None:
            b = {str(x[key]): x for x in before}
            a = {str(x[key]): x for x in after}
            out = []
            for k in [*b, *(k for k in a if k not in b)]:
                if b.get(k) != a.get(k):
                    out += field_changes(b.get(k), a.get(k), f"{path}[{k}]")
            return out
        if len(before) == len(after):
            return [c for i, (x, y) in enumerate(zip(before, after, strict=True))
                    for c in field_changes(x, y, f"{path}[{i}]")]  # fmt: skip
    return [] if before == after else [FieldChange(path or "(the object)", before, after)]


def shown_value(v: Any) -> str | None:
    """A value as a change shows it: a scalar as YAML writes it, a mapping or list as compact
    JSON, cut to VALUE_LIMIT; None when the field is not set."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float | str):
        return cut(str(v), VALUE_LIMIT)
    return cut(json.dumps(v, separators=(", ", ": "), ensure_ascii=False, default=str), VALUE_LIMIT)
