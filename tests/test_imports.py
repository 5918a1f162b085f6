"""The import graph of probesim's modules, read with ``ast`` from the sources (nothing is
imported): no import circles, no module importing another's private names, and no import of a
higher layer beyond the upward imports listed below, which are there today and are to go
(issue 23; docs/architecture.md, "Layers").

Every import counts, wherever it is written: at the top of a module, under ``TYPE_CHECKING``
(the types are a dependency all the same) and inside functions. An import inside a function
only defers loading (probesim keeps numpy, pydantic's Istio models, plotly... out of commands
that do not need them), so it still makes the importer depend on what it imports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# The layers, lowest first: a module may import its own layer and those below it. A module
# belongs to the layer of the longest prefix listed that names it or a package above it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("probesim", "probesim.errors", "probesim.safe")),
    ("model", ("probesim.model", "probesim.mesh.istio")),
    ("semantics", ("probesim.consecutive", "probesim.mesh.envoy", "probesim.kube", "probesim.profiles")),
    ("results", ("probesim.results",)),
    ("engine", ("probesim.engine", "probesim.logical", "probesim.demo", "probesim.cost")),
    ("lab", ("probesim.lab",)),
    ("inputs", ("probesim.manifests", "probesim.mesh.load", "probesim.overrides", "probesim.scenarios")),
    ("batch", ("probesim.runs", "probesim.montecarlo", "probesim.sweep", "probesim.kernel_cache")),
    ("analysis", ("probesim.analysis", "probesim.tune", "probesim.fit")),
    ("outputs", ("probesim.report",)),
    ("cli", ("probesim.cli", "probesim.__main__")),
)

# Imports of a higher layer allowed (importer -> imported module): none. The test fails on any;
# a new one that cannot be avoided is to be listed here, with why.
ALLOWED_UPWARD: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Import:
    importer: str  # the module that imports
    module: str  # the probesim module it imports (a module or package of the tree)
    name: str | None  # the name taken from it (``from module import name``), if any
    line: int


@cache
def modules() -> dict[str, Path]:
    """Every module of the tree by dotted name (a package by its own name)."""
    out = {}
    for p in sorted((SRC / "probesim").rglob("*.py")):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _resolved(importer: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if modules()[importer].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


@cache
def imports() -> tuple[Import, ...]:
    """Every import of a probesim module by a probesim module, wherever it is written."""
    mods = modules()
    out = []
    for importer, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                out += [Import(importer, a.name, None, node.lineno) for a in node.names if a.name in mods]
            elif isinstance(node, ast.ImportFrom):
                base = _resolved(importer, node)
                if base not in mods:
                    continue
                for a in node.names:
                    sub = f"{base}.{a.name}"  # ``from package import module``
                    if sub in mods:
                        out.append(Import(importer, sub, None, node.lineno))
                    else:
                        out.append(Import(importer, base, a.name, node.lineno))
    return tuple(out)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def layer(module: str) -> int:
    """The index in LAYERS of a module's layer."""
    best, found = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    assert found >= 0, f"{module} is in no layer: add it to LAYERS"
    return found


def edges() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {m: set() for m in modules()}
    for i in imports():
        if i.module != i.importer:
            out[i.importer].add(i.module)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's), each
    sorted; iterative, so a long chain does not reach Python's recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def upward() -> set[tuple[str, str]]:
    return {(i.importer, i.module) for i in imports() if layer(i.module) > layer(i.importer)}


# -- the tests ---------------------------------------------------------------------------------


def test_the_reader_sees_the_imports_it_should() -> None:
    # A check of the reader itself on imports known to be there: a module-level one, a lazy one
    # inside a function, one under TYPE_CHECKING, a relative one, and a package's submodule.
    got = {(i.importer, i.module, i.name) for i in imports()}
    assert ("probesim.engine.loop", "probesim.engine.sidecar.build", "build_mesh") in got
    assert ("probesim.runs", "probesim.engine", "simulate") in got  # inside a function
    assert ("probesim.cost", "probesim.model.scenario", "Scenario") in got  # TYPE_CHECKING
    assert ("probesim.analysis.check", "probesim.analysis.rules", None) in got
    assert len(modules()) > 100


def test_circles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    found = circles(edges())
    assert not found, "import circles among probesim modules: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_module_imports_another_modules_private_names() -> None:
    # ``from probesim.x import _name``, and ``x._name`` on a probesim module imported as ``x``.
    bad = [
        f"{i.importer}:{i.line} imports {i.module}.{i.name}"
        for i in imports()
        if i.name is not None and _private(i.name) and i.module != i.importer
    ]
    mods = modules()
    for importer, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases |= {a.asname: a.name for a in node.names if a.asname and a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                base = _resolved(importer, node)
                for a in node.names:
                    if f"{base}.{a.name}" in mods:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and _private(node.attr)
            ):
                bad.append(f"{importer}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert not bad, "private names used from another module (make them public or move them):\n" + "\n".join(
        bad
    )


def test_every_module_has_a_layer() -> None:
    for m in modules():
        layer(m)


def test_no_new_import_of_a_higher_layer() -> None:
    new = sorted(upward() - ALLOWED_UPWARD)
    names = [n for n, _ in LAYERS]
    assert not new, "imports of a higher layer (docs/architecture.md, Layers):\n" + "\n".join(
        f"{a} ({names[layer(a)]}) imports {b} ({names[layer(b)]})" for a, b in new
    )


def test_the_allowed_upward_imports_are_all_still_there() -> None:
    gone = sorted(ALLOWED_UPWARD - upward())
    assert not gone, "no longer imported: delete from ALLOWED_UPWARD:\n" + "\n".join(
        f"{a} -> {b}" for a, b in gone
    )
