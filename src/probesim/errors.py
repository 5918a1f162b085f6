"""The one error type for bad user input: it names the file, line, object and field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class InputError(Exception):
    """Bad input that the user must fix. The CLI prints ``str(err)`` and exits 2."""

    message: str
    file: str | None = None
    line: int | None = None
    obj: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "")
        parts = [p for p in (where, self.obj, self.field) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message
