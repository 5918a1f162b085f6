"""The one error type for bad user input: it names the file, line, object and field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from probesim.safe import MESSAGE_LIMIT, NAME_LIMIT, cut


@dataclass
class InputError(Exception):
    """Bad input that the user must fix. The CLI prints ``str(err)`` and exits 2.

    ``str(err)`` is bounded: a giant value in the input is cut, not echoed whole."""

    message: str
    file: str | None = None
    line: int | None = None
    obj: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = cut(self.file, NAME_LIMIT) + (f":{self.line}" if self.line else "")
        parts = [where] + [cut(p, NAME_LIMIT) for p in (self.obj, self.field) if p]
        prefix = ": ".join(p for p in parts if p)
        message = cut(self.message, MESSAGE_LIMIT)
        return f"{prefix}: {message}" if prefix else message


class InputWarning(UserWarning):
    """Input probesim reads but does not simulate in full; the CLI prints each once on stderr."""


def check_writable(path: Path, what: str) -> None:
    """``path`` can be written as a file: not a folder, in a folder that exists. Checked before a
    run, so that a long run does not end in a write error."""
    try:
        if path.is_dir():
            raise InputError(f"cannot write {what}: is a directory", file=str(path))
        if not path.parent.is_dir():
            raise InputError(f"cannot write {what}: no such folder", file=str(path))
    except OSError as e:  # a name too long for the system
        raise InputError(f"cannot write {what}: {e.strerror}", file=str(path)) from None
