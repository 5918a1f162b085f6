"""The two sides ``probesim diff`` compares, each read as ``probesim check`` reads its input
(manifests/discovery.py): a file, a folder or '-' (standard input, one side at most); the files
of paths at two git revisions (manifests/revisions.py), named by their paths in the repository;
or what a render command prints (``helm template``, ``kustomize build``) run in each side's
folder. A file that cannot be read or parsed is an error entry of its side."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from probesim.errors import InputError
from probesim.manifests import revisions
from probesim.manifests.discovery import Inputs, read_manifests
from probesim.manifests.yamlsrc import Doc


@dataclass
class Side:
    label: str  # before | after
    shown: str  # what the user gave, as a report names it: a path, "main (0123abcd)"
    docs: list[Doc] = field(default_factory=list)
    inputs: Inputs = field(default_factory=Inputs)
    errors: list[InputError] = field(default_factory=list)
    root: str = ""  # the folder variants' folders are named from
    notes: list[str] = field(default_factory=list)  # files read past, said on stderr


def read_side(label: str, path: str, render: str | None = None) -> Side:
    """A side given as a file, a folder or '-'; with ``render``, what the command prints when run
    in that folder."""
    shown = "standard input" if path == "-" else path
    if render is not None:
        if path == "-" or not Path(path).is_dir():
            raise InputError("--render runs in each side's folder: give two folders (or --git)", file=path)
        text = revisions.render(render, Path(path), shown)
        return _rendered(label, shown, text, render)
    side = Side(label, shown, root=path if path != "-" and Path(path).is_dir() else "")
    side.docs, side.inputs = read_manifests([path], side.errors)
    return side


def _rendered(label: str, shown: str, text: str, command: str) -> Side:
    """A side from a render command's output, named ``<command at side>``."""
    name = f"<{command} at {shown}>"
    with tempfile.TemporaryDirectory(prefix="probesim-render-") as tmp:
        out = Path(tmp) / "rendered.yaml"
        out.write_text(text, encoding="utf-8")
        side = Side(label, shown)
        side.docs, side.inputs = read_manifests([str(out)], side.errors)
    _renamed(side, {str(out): name})
    return side


def _renamed(side: Side, names: dict[str, str], prefix: str = "", to: str = "") -> None:
    """Every file name of ``side`` as the user knows it: one of ``names``, or under ``prefix``
    (a temporary folder) as ``to`` + the rest."""

    def name(f: str | None) -> str | None:
        if f is None:
            return None
        if f in names:
            return names[f]
        if prefix and f.startswith(prefix):
            return to + f[len(prefix) :]
        return f

    for d in side.docs:
        d.file = name(d.file) or d.file
    side.inputs.files = [name(f) or f for f in side.inputs.files]
    side.inputs.skipped = [replace(s, file=name(s.file) or s.file) for s in side.inputs.skipped]
    side.inputs.charts = [name(f) or f for f in side.inputs.charts]
    for e in side.errors:
        e.file = name(e.file)


@contextmanager
def git_sides(given: str, paths: Sequence[str], render: str | None, cwd: Path) -> Iterator[tuple[Side, Side]]:
    """The sides of ``--git A..B -- PATH...``: each revision's files under the paths (or what
    ``render`` prints run in that revision's tree), named by their paths from the repository's
    top. The temporary folders last until the context ends."""
    r = revisions.parse_range(given, cwd)
    rel = revisions.in_repository(paths, r.top, cwd)
    here = os.path.relpath(cwd, r.top)
    with tempfile.TemporaryDirectory(prefix="probesim-diff-") as tmp:
        sides = []
        for label, rev in (("before", r.base), ("after", r.head)):
            if rev.commit is None:
                root = r.top
                notes: list[str] = []
            else:
                m = revisions.materialise(
                    r.top, rev.commit, rel, Path(tmp) / label, everything=render is not None
                )
                root, notes = m.root, m.notes
            if render is not None:
                side = _rendered(label, rev.shown, revisions.render(render, root / here, rev.shown), render)
            else:
                wanted = [str(root / p) if p != "." else str(root) for p in rel]
                present = [p for p in wanted if os.path.exists(p)]
                side = Side(label, rev.shown, root="")
                if present:
                    side.docs, side.inputs = read_manifests(present, side.errors)
                _renamed(side, {str(root): "."}, str(root) + os.sep, "")
            side.shown = rev.shown
            side.notes = notes
            sides.append(side)
        yield sides[0], sides[1]
