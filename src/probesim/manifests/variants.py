"""Variants: the input holds one object (kind, namespace and name) with different content in
files of different folders, such as ``staging/`` and ``prod/`` overlays beside a shared
``base/``. Each folder is then a variant, run on its own with the files common to all.
(DestinationRules and VirtualServices of one name are all read, as before: not variants.)

The folders are found from the objects defined twice: for two definitions with different
content, the folders just below the two files' common ancestor are variant folders
(``k8s/staging`` and ``k8s/prod`` for ``k8s/staging/api.yaml`` and ``k8s/prod/api.yaml``); a
variant folder that holds others (``k8s/overlays`` holding ``k8s/overlays/prod``) gives way to
them. Every file under no variant folder is common to all the variants.

A folder is complete on its own when what its objects need is in it or in a common file:
a workload that a Service of the input selects has a Service selecting it; a Service that
selects a workload of the input selects one; an HPA has the object it scales; a
DestinationRule or VirtualService has the Service it names (probesim reads no
PodDisruptionBudget or ConfigMap, so they need nothing). A variant may lack what another has (an
HPA, a DestinationRule): it runs without. When the folders are not variants so (two
definitions in one folder, or one beside a variant folder) or one is not complete, a run is
refused in one line naming two of the files and the folder to pass.

The same content given twice is one object (parse's ``once``), whichever files hold it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from probesim.errors import InputError
from probesim.manifests import kubernetes as k8s
from probesim.manifests.yamlsrc import Doc, Path_
from probesim.model.kubernetes import HorizontalPodAutoscaler, Service, Workload


@dataclass(frozen=True)
class Variant:
    """One variant: its folder (as the user's paths name it), the common paths that go with it
    (folders, or files when their folder holds variants), and its documents in input order."""

    folder: str
    common: tuple[str, ...]
    docs: tuple[Doc, ...] = field(repr=False)

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths to give probesim to read this variant alone."""
        return (self.folder, *self.common)

    @property
    def files(self) -> list[str]:
        """The files read for this variant, in input order."""
        return list(dict.fromkeys(d.file for d in self.docs))


@dataclass(frozen=True)
class _Def:
    """One definition of an object: where, and its content as the API server reads it."""

    key: str
    kind: str
    name: str
    doc: Doc
    base: Path_
    content: str
    obj: Any = field(compare=False, repr=False)  # the model read, or an Istio object's data

    @property
    def where(self) -> str:
        return f"{self.doc.file}:{self.doc.line_of(self.base)}"


def split(docs: Sequence[Doc], objects: k8s.Objects, command: str = "run") -> list[Variant] | None:
    """The variants of ``docs`` (whose objects, read without ``unique``, are ``objects``), None
    when no object has two contents. An InputError, one line, when two contents are not
    variants of complete folders; ``command`` is what its hint suggests running."""
    defs = _definitions(objects)
    by_key: dict[str, list[_Def]] = {}
    for d in defs:
        by_key.setdefault(d.key, []).append(d)
    # Istio objects of one name are not variants: probesim reads them all (one folder may hold
    # alternative VirtualServices, as Istio's bookinfo sample does), as it always has.
    conflicts = {
        k: ds
        for k, ds in by_key.items()
        if len({d.content for d in ds}) > 1 and ds[0].kind not in k8s.ISTIO_READ
    }
    if not conflicts:
        return None
    roots: set[str] = set()
    for ds in conflicts.values():
        for a, b in _pairs(ds):
            roots |= _roots(a, b, command)
    # A variant folder holding others gives way to them (base/ beside overlays/{prod,staging}/).
    final = sorted(r for r in roots if not any(o != r and _under(o, r) for o in roots))
    home: dict[str, str | None] = {}
    for doc in docs:
        home.setdefault(doc.file, next((r for r in final if _under(_dir(doc.file), r)), None))
    for ds in conflicts.values():
        for d in ds:
            if home[d.doc.file] is None:
                outer = next((r for r in roots if _under(_dir(d.doc.file), r)), _dir(d.doc.file))
                other = next(x for x in ds if x.content != d.content)
                why = f"{d.doc.file} is in {outer}/ beside the variant folders {_listed(final, outer)}"
                raise refusal(d, other, command, why)
    for r in final:
        scope = [d for d in defs if home[d.doc.file] in (r, None)]
        for d in scope:
            if home[d.doc.file] is None and not isinstance(d.obj, Workload):
                continue  # a common HPA or rule for what only some variants hold applies where it can
            need = _needs(d, defs, scope)
            if need is not None:
                why = f"{r}/ has no {need} for its {d.kind} {d.name}"
                ds = conflicts.get(d.key) or next(
                    c for c in conflicts.values() if any(home[x.doc.file] == r for x in c)
                )
                here = next(x for x in ds if home[x.doc.file] == r)
                raise refusal(next(x for x in ds if x.content != here.content), here, command, why)
    return [_variant(r, final, docs, home) for r in final]


def refusal(first: _Def, other: _Def, command: str, why: str | None = None) -> InputError:
    """One object with two contents that cannot be run as variants: name both files, and the
    folder to pass."""
    folder = _dir(other.doc.file)
    obj = f"{first.kind} {first.name}"
    if first.doc.file == other.doc.file or other.doc.file.startswith("<"):
        return InputError(
            f"defined twice (first in {first.where})",
            file=other.doc.file,
            line=other.doc.line_of((*other.base, "metadata", "name")),
            obj=obj,
            field="metadata.name",
        )
    hint = (
        f"e.g. probesim {command} {folder}/"
        if folder != _dir(first.doc.file)
        else (f"e.g. probesim {command} {other.doc.file}")
    )
    because = f"; not run as variants: {why}" if why else ""
    return InputError(
        f"{obj} is defined in {first.where} and {other.where}, with different content (two variants?): "
        f"run one at a time, {hint}{because}"
    )


def one_only(variants: Sequence[Variant], command: str, what: str) -> InputError:
    """Input of several variants given to a command that takes one (``what``: why it takes one)."""
    folders = ", ".join(f"{v.folder}/" for v in variants)
    v = variants[0]
    # sweep takes one target; more manifests go with -m.
    given = " ".join((v.folder, *(f"-m {c}" for c in v.common))) if command == "sweep" else " ".join(v.paths)
    return InputError(
        f"the input holds {len(variants)} variants ({folders}): {what}; give one variant's folder, "
        f"e.g. probesim {command} {given}"
    )


ONE_SCENARIO = {
    "--plot": "--plot draws one run",
    "--report": "--report shows one run",
    "--runs": "--runs repeats one scenario",
    "--junit": "--junit writes one run's thresholds",
    "--print-scenario": "--print-scenario prints one scenario",
}


def one_scenario_only(variants: Sequence[Variant], given: Sequence[str], command: str) -> None:
    """Refuse, naming the variants, what takes one scenario (``given``: options such as
    --plot, or why the command takes one) when the input holds several."""
    if given and variants:
        raise one_only(variants, command, ONE_SCENARIO.get(given[0], given[0]))


def _variant(root: str, roots: list[str], docs: Sequence[Doc], home: dict[str, str | None]) -> Variant:
    common: list[str] = []
    for d in docs:
        if home[d.file] is None and d.file not in common:
            common.append(d.file)
    # Common files by their folder, unless that folder holds variants too (then by file).
    shown = [f if any(_under(r, _dir(f)) for r in roots) else _dir(f) for f in common]
    kept = tuple(d for d in docs if home[d.file] in (None, root))
    return Variant(root, tuple(dict.fromkeys(shown)), kept)


def _definitions(objects: k8s.Objects) -> list[_Def]:
    out = []
    read: list[Workload | Service | HorizontalPodAutoscaler] = [
        *objects.workloads,
        *objects.services,
        *objects.hpas,
    ]
    for x in read:
        if id(x) in objects.custom or id(x) in objects.template_of:
            continue  # a custom resource's workload: never run, so never a variant to choose
        o = objects.origin(x)
        key = k8s.obj_key(x.kind, x.metadata.namespace, x.metadata.name)
        out.append(_Def(key, x.kind, x.metadata.name, o.doc, o.base, _content(o.doc, o.base), x))
    for doc, base, data in objects.istio:
        raw = data.get("metadata")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        name, ns = str(meta.get("name")), str(meta.get("namespace") or "default")
        kind = str(data["kind"])
        out.append(_Def(k8s.obj_key(kind, ns, name), kind, name, doc, base, _content(doc, base), data))
    return out


def _content(doc: Doc, base: Path_) -> str:
    return json.dumps(k8s.content(doc, base), sort_keys=True, default=str)


def _needs(d: _Def, defs: list[_Def], scope: list[_Def]) -> str | None:
    """What ``d`` needs that some object of the input is but none of ``scope`` (the objects of
    its variant) is, as a message names it with where the input has it; None when nothing."""
    x = d.obj
    mine = {id(s) for s in scope}
    # By what each object is, not its kind's name: a Knative Service is a workload.
    if isinstance(x, Workload):
        services = [s for s in defs if isinstance(s.obj, Service) and _selects(s.obj, x)]
        if services and not any(id(s) in mine for s in services):
            return f"Service selecting its pods (Service {services[0].name} in {services[0].where})"
    elif isinstance(x, Service):
        workloads = [w for w in defs if isinstance(w.obj, Workload) and _selects(x, w.obj)]
        if workloads and not any(id(w) in mine for w in workloads):
            return f"workload it selects ({workloads[0].kind} {workloads[0].name} in {workloads[0].where})"
    elif isinstance(x, HorizontalPodAutoscaler):
        ref = x.spec.scale_target_ref
        key = k8s.obj_key(ref.kind, x.metadata.namespace, ref.name)
        targets = [t for t in defs if t.key == key]
        if targets and not any(id(t) in mine for t in targets):
            return f"{ref.kind} {ref.name} to scale (in {targets[0].where})"
    else:  # DestinationRule, VirtualService
        spec = x.get("spec") if isinstance(x.get("spec"), dict) else {}
        hosts = spec.get("hosts") if d.kind == "VirtualService" else [spec.get("host")]
        names = {h.split(".")[0] for h in hosts if isinstance(h, str)} if isinstance(hosts, list) else set()
        services = [s for s in defs if isinstance(s.obj, Service) and s.name in names]
        if services and not any(id(s) in mine for s in services):
            return f"Service it names ({services[0].name} in {services[0].where})"
    return None


def _selects(s: Any, w: Any) -> bool:
    """Whether Service ``s`` selects workload ``w``'s pods (as analysis.context.selects)."""
    sel = s.spec.selector
    same_ns = s.metadata.namespace == w.metadata.namespace
    return bool(sel) and same_ns and all(w.pod_labels.get(k) == v for k, v in sel.items())


def _pairs(ds: list[_Def]) -> list[tuple[_Def, _Def]]:
    """Every pair of definitions with different content (each copy of a content is in a
    variant folder of its own: staging/ and qa/ may hold the same object, prod/ another)."""
    return [(a, b) for i, a in enumerate(ds) for b in ds[i + 1 :] if a.content != b.content]


def _roots(a: _Def, b: _Def, command: str) -> set[str]:
    """The two variant folders two definitions of different content are in."""
    fa, fb = a.doc.file, b.doc.file
    if fa == fb or fa.startswith("<") or fb.startswith("<"):
        raise refusal(a, b, command)
    da, db = _dir(fa), _dir(fb)
    try:
        top = os.path.commonpath([da, db]) or "."
    except ValueError:  # one path absolute, one relative
        raise refusal(a, b, command, "give both folders alike (both relative or both absolute)") from None
    if da == db:
        raise refusal(a, b, command, f"both files are in {da}/")
    if top in (da, db):
        inner, outer = (fb, fa) if top == da else (fa, fb)
        raise refusal(a, b, command, f"{outer} is in a folder that holds {inner}")
    return {_child(top, da), _child(top, db)}


def _dir(file: str) -> str:
    return os.path.normpath(os.path.dirname(file) or ".")


def _child(top: str, folder: str) -> str:
    """The folder just below ``top`` on the way to ``folder``."""
    rel = os.path.relpath(folder, top)
    return os.path.normpath(os.path.join(top, rel.split(os.sep)[0]))


def _under(folder: str, root: str) -> bool:
    return folder == root or folder.startswith(root.rstrip(os.sep) + os.sep) or root == "."


def _listed(roots: list[str], outer: str) -> str:
    inside = [f"{r}/" for r in roots if _under(r, outer)]
    return ", ".join(inside)
