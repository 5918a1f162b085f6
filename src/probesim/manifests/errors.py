"""Turn pydantic validation errors into one ``InputError`` naming file, line, object and field."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from probesim.errors import InputError
from probesim.manifests.yamlsrc import Doc, Path_


def field_path(path: Path_) -> str:
    """kubectl's spelling of a path: ``spec.containers[0].livenessProbe``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _data_path(data: Any, loc: tuple[str | int, ...]) -> tuple[Path_, bool]:
    """The part of ``loc`` that exists in ``data`` (pydantic adds union tags such as 'int');
    and whether the last key is missing from its mapping (a required field)."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and part == loc[-1]:
            return (*path, part), True
    return tuple(path), False


_MESSAGES = {
    "extra_forbidden": "unknown field",
    "missing": "required field is missing",
}


def from_validation(
    err: ValidationError, doc: Doc, base: Path_, obj: str | None, data: Any, prefix: Path_ = ()
) -> InputError:
    """The first error of ``err``, raised validating ``data``, found at ``base + prefix`` in
    ``doc`` (``base``: where the object starts; fields are named from there)."""
    e = err.errors()[0]
    loc = tuple(e["loc"])
    rel, missing = _data_path(data, loc)
    msg = _MESSAGES.get(e["type"], e["msg"])
    if e["type"] not in _MESSAGES and "input" in e and not isinstance(e["input"], dict | list):
        msg = f"{msg} (got {e['input']!r})"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    line_path = (*base, *prefix, *(rel[:-1] if missing else rel))
    field = field_path((*prefix, *rel)) or None
    return InputError(msg, file=doc.file, line=doc.line_of(line_path), obj=obj, field=field)


def error_at(doc: Doc, base: Path_, rel: Path_, obj: str | None, msg: str) -> InputError:
    """An error on the field at ``rel`` of the object at ``base`` in ``doc``: its file, line,
    object and kubectl-style field path."""
    return InputError(
        msg, file=doc.file, line=doc.line_of((*base, *rel)), obj=obj, field=field_path(rel) or None
    )


def validate(model: type[Any], doc: Doc, base: Path_, data: Any, obj: str | None, prefix: Path_ = ()) -> Any:
    """``data`` (found at ``base + prefix`` in ``doc``) as ``model``; its first error an InputError
    at its file, line and field."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise from_validation(e, doc, base, obj, data, prefix) from None
