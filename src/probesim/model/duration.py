"""Durations as users write them in scenario files ("1m30s", "500ms"), held as integer ms."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_PART = re.compile(r"(\d+(?:\.\d+)?)(us|µs|ms|s|m|h)")
_UNIT_MS = {"us": 0.001, "µs": 0.001, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
MAX_MS = 366 * 24 * 3_600_000


def parse_ms(value: Any) -> int:
    """Milliseconds in a Go-style duration string; a bare number is an error (which unit?)."""
    ms = parse_ms_float(value)
    if ms != int(ms):
        raise ValueError(f"duration {value!r} is not a whole number of milliseconds")
    return int(ms)


def parse_ms_float(value: Any) -> float:
    """Like ``parse_ms`` but allows fractions of a millisecond ("0.5ms", "250us")."""
    if isinstance(value, bool) or not isinstance(value, str):
        if isinstance(value, int | float):
            raise ValueError(f"duration {value!r} has no unit; write e.g. '{value}s' or '{value}ms'")
        raise ValueError("a duration must be a string such as '10s', '500ms' or '1m30s'")
    text = value.strip()
    pos, total = 0, 0.0
    for m in _PART.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_MS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(
            f"invalid duration {value!r}; use units us, ms, s, m, h as in '10s', '500ms', '1m30s'"
        )
    if total > MAX_MS:
        raise ValueError(f"duration {value!r} is longer than a year")
    return total


def format_ms(ms: int) -> str:
    """The shortest exact Go-style form: 90000 → '1m30s', 1500 → '1.5s', 20 → '20ms'."""
    if ms % 1000:
        return f"{ms}ms" if ms < 1000 else f"{ms / 1000:g}s"
    s = ms // 1000
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec else "")
    return out or "0s"


Duration = Annotated[
    int,
    BeforeValidator(parse_ms),
    PlainSerializer(format_ms, return_type=str),
    WithJsonSchema(
        {"type": "string", "pattern": r"^(\d+(\.\d+)?(ms|s|m|h))+$", "examples": ["10s", "500ms", "1m30s"]}
    ),
]


FineDuration = Annotated[
    float,
    BeforeValidator(parse_ms_float),
    PlainSerializer(lambda ms: f"{ms:g}ms", return_type=str),
    WithJsonSchema(
        {"type": "string", "pattern": r"^(\d+(\.\d+)?(us|µs|ms|s|m|h))+$", "examples": ["20ms", "0.5ms"]}
    ),
]
