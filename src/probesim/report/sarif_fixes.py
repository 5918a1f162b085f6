"""A finding's fix as SARIF 2.1.0 ``fixes``: a fix must name exact text replacements
(artifactChanges → replacements → deletedRegion), so one is given only when every change of the
patch replaces a scalar the file already has and that ``key: value`` is found exactly once on its
line; otherwise the patch travels in the result's ``properties`` alone (``patch``,
``patchType``), with the fix said in the message."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from probesim.analysis.findings import Finding


@lru_cache(maxsize=64)
def _lines(file: str) -> tuple[str, ...] | None:
    try:
        return tuple(Path(file).read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return None


def sarif_fix(f: Finding, uri: str) -> dict[str, Any] | None:
    """The SARIF fix of ``f`` (its artifact at ``uri``), or None when it cannot be located exactly."""
    if not f.edits or f.source or f.file == "-":
        return None
    lines = _lines(f.file)
    if lines is None:
        return None
    replacements = []
    for line, key, old, new in f.edits:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        found = list(
            re.finditer(rf"(?<![\w-]){re.escape(key)}\s*:\s*[\"']?({re.escape(old)})[\"']?(?![\w.])", text)
        )
        if len(found) != 1:
            return None
        start, end = found[0].span(1)
        region = {"startLine": line, "startColumn": start + 1, "endLine": line, "endColumn": end + 1}
        replacements.append({"deletedRegion": region, "insertedContent": {"text": new}})
    return {
        "description": {"text": f.remediation},
        "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": replacements}],
    }
