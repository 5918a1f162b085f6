"""``--set path=value``: changes to a scenario or to one of its Kubernetes objects, made on the
parsed YAML before validation, so that a value set on the command line is checked exactly as
the same value written in the file would be (and an error it causes names the ``--set``).

A path is the scenario's (``spec.traffic[0].rate``, ``spec.seed``) or starts with an object
as kubectl names it, ``kind/name`` or ``kind/namespace/name`` (``deployment/web.spec.replicas``,
``svc/prod/web.spec.ports[0].port``). Keys are separated by dots (``\\.`` for a dot inside a
key), list items by ``[index]``. A missing mapping key is created; a list item must exist.
Values are YAML (``500`` a number, ``10s`` a string, ``true`` a boolean, ``null``, ``{a: 1}``);
a sweep gives several, separated by commas (``500,900``; ``[a, b]`` or quotes keep a comma in one
value).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from probesim.errors import InputError
from probesim.manifests.errors import field_path
from probesim.manifests.yamlsrc import MAX_DEPTH, Doc, Path_, load_docs
from probesim.safe import cut

# kubectl's short names of the kinds probesim reads (and a few it reads past).
SHORT_KINDS = {
    "deploy": "deployment",
    "sts": "statefulset",
    "rs": "replicaset",
    "rc": "replicationcontroller",
    "po": "pod",
    "svc": "service",
    "hpa": "horizontalpodautoscaler",
    "dr": "destinationrule",
    "vs": "virtualservice",
    "ns": "namespace",
    "ds": "daemonset",
    "cj": "cronjob",
    "cm": "configmap",
}
_INDEX = re.compile(r"\[(\d+)\]")


@dataclass(frozen=True)
class Override:
    """One ``--set path=value``: where, and the value as YAML read it."""

    text: str  # as given, for messages
    path: str
    value: Any

    @property
    def is_manifest(self) -> bool:
        """Whether the path starts with an object (``kind/name``), not the scenario's field."""
        head = _split_unescaped(self.path, ".")[0]
        return "/" in head


@dataclass(frozen=True)
class Axis:
    """One swept ``--set path=v1,v2,…``: the path and its values, in order."""

    text: str
    path: str
    values: tuple[Any, ...]

    def at(self, i: int) -> Override:
        v = self.values[i]
        return Override(f"{self.path}={show_value(v)}", self.path, v)


def parse_set(text: str) -> Override:
    """``path=value`` → Override; the value is one YAML value (commas included)."""
    path, value_text = _split_assignment(text)
    return Override(text, path, _yaml_value(value_text, text))


def parse_axis(text: str) -> Axis:
    """``path=v1,v2,…`` → Axis; each value is YAML (a flow sequence's items)."""
    path, value_text = _split_assignment(text)
    values = _yaml_value(f"[{value_text}]", text)
    if not isinstance(values, list) or not values:
        raise InputError("give one or more values separated by commas: path=v1,v2", field=f"--set {text}")
    return Axis(text, path, tuple(values))


def _split_assignment(text: str) -> tuple[str, str]:
    path, eq, value = text.partition("=")
    path = path.strip()
    if not eq or not path:
        raise InputError(
            "use path=value, e.g. spec.traffic[0].rate=500 or deployment/web.spec.replicas=3",
            field=f"--set {text}",
        )
    _keys(path, text)  # a path that cannot be read is refused before anything is loaded
    return path, value


def _yaml_value(value_text: str, text: str) -> Any:
    try:
        docs = list(load_docs(value_text, f"--set {text}"))
    except InputError as e:
        raise InputError(f"the value is not YAML: {e.message}", field=f"--set {text}") from None
    if len(docs) > 1:
        raise InputError("the value is not one YAML value", field=f"--set {text}")
    return docs[0].data if docs else None


def show_value(v: Any) -> str:
    """A value as it would be written after ``=`` (YAML flow style)."""
    import yaml

    if isinstance(v, str):
        return v
    return str(yaml.safe_dump(v, default_flow_style=True, width=10**6)).strip().removesuffix("...").strip()


def _split_unescaped(s: str, sep: str) -> list[str]:
    parts, cur, i = [], "", 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            cur += c + s[i + 1]
            i += 2
            continue
        if c == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    parts.append(cur)
    return parts


def _keys(path: str, text: str) -> Path_:
    """``spec.traffic[0].rate`` → ("spec", "traffic", 0, "rate")."""
    out: list[str | int] = []
    for seg in _split_unescaped(path, "."):
        key, i = "", 0
        while i < len(seg) and seg[i] != "[":
            if seg[i] == "\\" and i + 1 < len(seg):
                i += 1
            key += seg[i]
            i += 1
        if not key and not (out and i < len(seg)):
            raise InputError(
                f"empty key in {path!r} (a dot inside a key is written \\.)", field=f"--set {text}"
            )
        if key:
            out.append(key)
        while i < len(seg):
            m = _INDEX.match(seg, i)
            if m is None:
                raise InputError(
                    f"bad index {seg[i:]!r} in {path!r}: list items are [0], [1], … ('\\[' for a [ in a key)",
                    field=f"--set {text}",
                )
            out.append(int(m.group(1)))
            i = m.end()
    if len(out) > MAX_DEPTH:
        raise InputError(f"a path of more than {MAX_DEPTH} keys", field=f"--set {cut(text)}")
    return tuple(out)


@dataclass(frozen=True)
class Applied:
    """Where an override landed: to tell a later validation error it caused."""

    override: Override
    obj: str | None  # "Deployment web"; None: the scenario
    field: str  # kubectl's spelling, relative to the object or scenario

    def caused(self, e: InputError) -> bool:
        if self.obj is None:
            if e.obj not in ("Scenario", None):
                return False
        elif e.obj != self.obj:
            return False
        if not e.field:
            return False
        return _within(e.field, self.field) or _within(self.field, e.field)


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith((f"{outer}.", f"{outer}["))


def apply_to_scenario(head: Doc, overrides: Iterable[Override]) -> list[Applied]:
    """Apply the scenario-field overrides to the Scenario document (in place)."""
    done = []
    for o in overrides:
        if o.is_manifest:
            continue
        keys = _keys(o.path, o.text)
        if not isinstance(keys[0], str):
            raise InputError("a path starts with a field name, e.g. spec.seed", field=f"--set {o.text}")
        _assign(head.data, keys, o.value, o)
        done.append(Applied(o, None, field_path(keys)))
    return done


def apply_to_manifests(docs: Sequence[Doc], overrides: Iterable[Override]) -> list[Applied]:
    """Apply the object overrides (``kind/name.path``) to the object they name among ``docs``
    (in place)."""
    done = []
    for o in overrides:
        if not o.is_manifest:
            continue
        obj, label, rest = _find_object(docs, o)
        keys = _keys(rest, o.text)
        _assign(obj, keys, o.value, o)
        done.append(Applied(o, label, field_path(keys)))
    return done


def attribute(e: InputError, applied: Sequence[Applied]) -> InputError:
    """``e`` told as the ``--set`` that caused it, when one did; else ``e`` noting the
    overrides in force (an error elsewhere may follow from them: a step that no longer divides
    a time)."""
    if e.field and e.field.startswith("--set "):
        return e  # an override that could not be applied says so itself
    for a in applied:
        if a.caused(e):
            return InputError(e.message, file=f"--set {a.override.text}", obj=e.obj, field=e.field)
    if applied:
        given = ", ".join(a.override.text for a in applied)
        return InputError(f"{e.message} (with --set {given})", e.file, e.line, e.obj, e.field)
    return e


def _objects(docs: Sequence[Doc]) -> Iterator[tuple[dict[str, Any], str]]:
    """Every object among ``docs`` with its kind (the items of Lists included: a typed list's
    items may leave their kind out)."""
    for d in docs:
        data = d.data
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            continue
        kind = data["kind"]
        if kind.endswith("List") and isinstance(data.get("items"), list):
            for item in data["items"]:
                if isinstance(item, dict):
                    item_kind = item.get("kind", kind.removesuffix("List"))
                    if isinstance(item_kind, str) and item_kind:
                        yield item, item_kind
        else:
            yield data, kind


def _kind_matches(given: str, kind: str) -> bool:
    g, k = given.lower(), kind.lower()
    g = SHORT_KINDS.get(g, g)
    plural = k[:-1] + "ies" if k.endswith("y") else k + "es" if k.endswith(("s", "x", "ch")) else k + "s"
    return g in (k, plural)


def _find_object(docs: Sequence[Doc], o: Override) -> tuple[dict[str, Any], str, str]:
    """The object an override's path names, how errors name it ("Deployment web"), and the
    rest of the path (inside it)."""
    kind_text, _, rest = o.path.partition("/")
    namespace = None
    head = _split_unescaped(rest, ".")[0]
    if "/" in head:
        namespace, _, rest = rest.partition("/")
    of_kind = [(d, k, _name(d), _namespace(d)) for d, k in _objects(docs) if _kind_matches(kind_text, k)]
    here = [x for x in of_kind if namespace is None or x[3] == namespace]
    named = [x for x in here if x[2] and (rest == x[2] or rest.startswith(x[2] + "."))]
    if named:
        longest = max(len(x[2]) for x in named)
        named = [x for x in named if len(x[2]) == longest]
    where = f" in namespace {namespace}" if namespace else ""
    if not named:
        if not of_kind:
            kinds = sorted({k for _, k in _objects(docs)})
            raise InputError(
                f"no object of kind {kind_text!r} among the manifests (kinds: {', '.join(kinds) or 'none'})",
                field=f"--set {o.text}",
            )
        wanted = _split_unescaped(rest, ".")[0]
        spaced = namespace is not None or len({x[3] for x in of_kind}) > 1
        known = ", ".join(
            f"{x[1].lower()}/{x[3]}/{x[2]}" if spaced else f"{x[1].lower()}/{x[2]}" for x in of_kind
        )
        raise InputError(f"no {of_kind[0][1]} named {wanted!r}{where} (there are: {known})",
                         field=f"--set {o.text}")  # fmt: skip
    if len(named) > 1:
        spaces = ", ".join(sorted(x[3] for x in named))
        raise InputError(
            f"{named[0][1]} {named[0][2]} is in several namespaces ({spaces}): name one, "
            f"{kind_text}/<namespace>/{named[0][2]}.<field>",
            field=f"--set {o.text}",
        )
    obj, kind, name, _ = named[0]
    inner = rest[len(name) + 1 :]
    if not inner:
        raise InputError(
            f"give a field of {kind} {name}: {kind_text}/{name}.<field>=value", field=f"--set {o.text}"
        )
    return obj, f"{kind} {name}", inner


def _name(d: dict[str, Any]) -> str:
    meta = d.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _namespace(d: dict[str, Any]) -> str:
    meta = d.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) and ns else "default"


def _describe(v: Any) -> str:
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return f"a list of {len(v)} items"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    return "a string"


def _assign(root: Any, keys: Path_, value: Any, o: Override) -> None:
    """Set ``keys`` in ``root`` to a copy of ``value``, making missing mappings on the way."""
    node = root
    for i, key in enumerate(keys):
        here = field_path(keys[:i]) or "the document"
        last = i == len(keys) - 1
        if isinstance(key, int):
            if not isinstance(node, list):
                raise InputError(
                    f"{here} is {_describe(node)}, not a list: no item [{key}]", field=f"--set {o.text}"
                )
            if key >= len(node):
                have = f"[0] to [{len(node) - 1}]" if node else "none"
                raise InputError(
                    f"index out of range: {here} has {len(node)} items ({have})", field=f"--set {o.text}"
                )
            if last:
                node[key] = copy.deepcopy(value)
                return
            child = node[key]
        else:
            if not isinstance(node, dict):
                hint = f"; give an index: {here}[0]" if isinstance(node, list) else ""
                raise InputError(f"{here} is {_describe(node)}, not a mapping{hint}", field=f"--set {o.text}")
            if last:
                node[key] = copy.deepcopy(value)
                return
            child = node.get(key)
            if child is None:
                if isinstance(keys[i + 1], int):
                    raise InputError(
                        f"{field_path(keys[: i + 1])} is not set: there is no item {keys[i + 1]} to change",
                        field=f"--set {o.text}",
                    )
                child = node[key] = {}
        node = child
