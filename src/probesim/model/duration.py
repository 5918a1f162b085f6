"""Durations as users write them in scenario files ("1m30s", "500ms"), held as integer ms."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(us|µs|ms|s|m|h)")  # ASCII digits, as Go reads them
_UNIT_MS = {
    u: Decimal(v)
    for u, v in {"us": "0.001", "µs": "0.001", "ms": "1", "s": "1000", "m": "60000", "h": "3600000"}.items()
}
MAX_MS = 366 * 24 * 3_600_000


def parse_ms(value: Any) -> int:
    """Milliseconds in a Go-style duration string; a bare number is an error (which unit?)."""
    ms = _parse(value)
    if ms != ms.to_integral_value():
        raise ValueError(f"duration {value!r} is not a whole number of milliseconds")
    return int(ms)


def parse_ms_float(value: Any) -> float:
    """Like ``parse_ms`` but allows fractions of a millisecond ("0.5ms", "250us")."""
    return float(_parse(value))


def _parse(value: Any) -> Decimal:
    """The milliseconds of a duration string, in decimal: exact ("1.001s" is 1001 ms; in binary
    floating point it was 1000.9999999999999, not a whole number)."""
    if isinstance(value, bool) or not isinstance(value, str):
        if isinstance(value, int | float):
            raise ValueError(f"duration {value!r} has no unit; write e.g. '{value}s' or '{value}ms'")
        raise ValueError("a duration must be a string such as '10s', '500ms' or '1m30s'")
    text = value.strip()
    pos, total = 0, Decimal(0)
    # Each part is matched where the last one ended, never searched for: a search (finditer)
    # retried from every position of a long digit run, quadratic (100k digits took minutes).
    while pos < len(text) and (m := _PART.match(text, pos)):
        number = m.group(1)
        if len(number.split(".")[0].lstrip("0")) > 15:  # 1e15 us is over a year (and no overflow)
            total = Decimal("Infinity")
        else:
            total += Decimal(number) * _UNIT_MS[m.group(2)]
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
    if ms % 1000:  # exact decimals ('{:g}' kept 6 digits: 1044936 was '1044.94s')
        return f"{ms}ms" if ms < 1000 else f"{ms // 1000}.{ms % 1000:03d}".rstrip("0") + "s"
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
