"""Built-in scenarios: YAML files in this folder, runnable by name (``probesim run NAME``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).parent


@dataclass(frozen=True)
class BuiltIn:
    name: str
    description: str
    path: Path


def builtins() -> list[BuiltIn]:
    out = []
    for p in sorted(HERE.glob("*.yaml")):
        for doc in yaml.safe_load_all(p.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "Scenario":
                meta = doc.get("metadata", {})
                out.append(BuiltIn(meta.get("name", p.stem), meta.get("description", ""), p))
                break
    return out


def find(name: str) -> BuiltIn | None:
    return next((b for b in builtins() if b.name == name), None)
