"""Built-in scenarios: YAML files in this folder, runnable by name (``probesim run NAME``).

A built-in's name (its ``metadata.name``) is its file name without ``.yaml``, so that running
one reads that file alone; only listing them (``probesim scenarios``) parses them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a file name in this folder, no path


@dataclass(frozen=True)
class BuiltIn:
    name: str
    description: str
    path: Path


def _read(p: Path) -> BuiltIn | None:
    """The built-in in file ``p``: its first Scenario document's name and description."""
    import yaml

    for doc in yaml.safe_load_all(p.read_text(encoding="utf-8")):
        if isinstance(doc, dict) and doc.get("kind") == "Scenario":
            meta = doc.get("metadata", {})
            return BuiltIn(meta.get("name", p.stem), meta.get("description", ""), p)
    return None


def builtins() -> list[BuiltIn]:
    """Every built-in, with its description (parses every file)."""
    return [b for p in sorted(HERE.glob("*.yaml")) if (b := _read(p)) is not None]


def names() -> list[str]:
    """The built-ins' names, from their file names alone."""
    return [p.stem for p in sorted(HERE.glob("*.yaml"))]


def find(name: str) -> BuiltIn | None:
    """The built-in called ``name``: the file ``<name>.yaml`` here, if it holds that scenario."""
    if len(name) > 200 or not _NAME.fullmatch(name):  # no path, and not too long for the system
        return None
    p = HERE / f"{name}.yaml"
    try:
        if not p.is_file():
            return None
    except OSError:
        return None
    b = _read(p)
    return b if b is not None and b.name == name else None
