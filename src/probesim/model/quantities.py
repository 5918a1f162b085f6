"""Kubernetes resource quantities as the API server reads them (resource.Quantity): CPU in
millicores (``Millicores``), memory in bytes (``Bytes``), each read from a number or a string
with an SI or binary suffix or an exponent, and dumped back as a quantity that reads the same."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when a model using these types is made.
import math
import re
from fractions import Fraction
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_SCALE: dict[str, Fraction] = {
    "": Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20),
    "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}  # fmt: skip


def _value(m: re.Match[str]) -> Fraction:
    """The quantity a match of _QUANTITY reads, exactly. An exponent beyond the mantissa's digits
    and 60 more gives the same millicores or bytes (0, 1 or the maximum) as that bound does:
    bounded, 1e99999999 does not take minutes."""
    suffix = m.group(2) or ""
    bound = 60 + len(m.group(1))
    scale = _SCALE[suffix] if suffix in _SCALE else Fraction(10) ** max(-bound, min(bound, int(suffix[1:])))
    return Fraction(m.group(1)) * scale


MAX_MILLICORES = 2**53  # CPU read as millicores (a float holds them exactly)


def parse_cpu(value: object) -> int:
    """A CPU quantity ("250m", "0.5", ".5", 2, "1e3m") in millicores, as the API server reads a
    resource.Quantity: SI and binary suffixes and exponents, rounded up to whole millicores
    (Quantity.MilliValue rounds up), at most MAX_MILLICORES."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("a CPU quantity is a number of cores (0.5, 2) or millicores ('250m')")
    text = str(value).strip() if not isinstance(value, float) else repr(value)
    if isinstance(value, float) and ("inf" in text or "nan" in text):
        raise ValueError(f"invalid CPU quantity {value!r}; use cores (0.5, 2) or millicores ('250m')")
    m = _QUANTITY.match(text) or (_QUANTITY.match(f"{value:f}") if isinstance(value, float) else None)
    if not m:
        raise ValueError(f"invalid CPU quantity {value!r}; use cores (0.5, 2) or millicores ('250m')")
    milli = _value(m) * 1000
    if milli < 0:
        raise ValueError(f"CPU quantity {value!r} must not be negative")
    # The API server takes larger quantities; beyond any node's CPU they all simulate alike.
    return min(math.ceil(milli), MAX_MILLICORES)


# Dumped to JSON as "<n>m", so a dumped object reads back the same (a bare number is cores).
Millicores = Annotated[int, BeforeValidator(parse_cpu), PlainSerializer(lambda v: f"{v}m", when_used="json")]


MAX_BYTES = 2**62  # memory read as bytes (beyond any node's, all alike)


def parse_memory(value: object) -> int:
    """A memory quantity ("512Mi", "1G", 1e9, "128974848") in bytes, as the API server reads a
    resource.Quantity (Quantity.Value rounds a fraction of a byte up), at most MAX_BYTES."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("a memory quantity is a number of bytes or one with a suffix ('512Mi', '2Gi', '1G')")
    text = str(value).strip() if not isinstance(value, float) else repr(value)
    m = _QUANTITY.match(text) or (_QUANTITY.match(f"{value:f}") if isinstance(value, float) else None)
    if not m or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueError(f"invalid memory quantity {value!r}; use bytes or a suffix ('512Mi', '2Gi', '1G')")
    n = _value(m)
    if n < 0:
        raise ValueError(f"memory quantity {value!r} must not be negative")
    return min(math.ceil(n), MAX_BYTES)


def format_bytes(n: int) -> str:
    """Bytes as a quantity a reader takes in: the largest binary suffix that divides it ('512Mi')."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        size = int(_SCALE[suffix])
        if n and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


# Dumped to JSON as a quantity ("512Mi"), which reads back the same.
Bytes = Annotated[int, BeforeValidator(parse_memory), PlainSerializer(format_bytes, when_used="json")]
