"""User text made safe to show on a terminal: the one place that decides it.

Names, paths and messages come from files anyone may write. Shown as they are, ``[/]`` breaks
rich's markup, ``:100:`` turns into an emoji, ESC starts a terminal escape sequence and U+202E
reverses the line; and a 100 KB name makes table layout crawl. So user text is cut to a bound,
control and format characters are written as escapes (``\\x1b``, ``\\u202e``), and it reaches
rich as ``Text``, never as markup.
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported where a Text or markup is made: errors need only cut()
    from rich.text import Text

NAME_LIMIT = 200  # a name, path or field in a table or message
MESSAGE_LIMIT = 1000  # a whole message

# Control, format (bidi overrides, zero-width), surrogate and line/paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def cut(s: str, limit: int = NAME_LIMIT) -> str:
    """``s``, or its first ``limit - 1`` characters and "…"."""
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _escaped(c: str) -> str:
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def visible(s: str, limit: int = NAME_LIMIT, newlines: bool = False) -> str:
    """``s`` cut to ``limit``, with every control or format character written as an escape —
    but, with ``newlines``, line feeds kept (text that is several lines, a script's lines in an
    exec probe's command: shown as lines, not as ``\\x0a``; a CR is still escaped)."""
    s = cut(s, limit)
    if s.isascii() and s.isprintable():
        return s
    return "".join(
        c if newlines and c == "\n" else _escaped(c) if unicodedata.category(c) in _HIDDEN else c for c in s
    )


def cell(s: str, limit: int = NAME_LIMIT, style: str | None = None, newlines: bool = False) -> Text:
    """User text for a table cell or a line: visible, and never read as markup or emoji."""
    from rich.text import Text

    return Text(visible(s, limit, newlines), style=style or "")


def markup(s: str, limit: int = NAME_LIMIT, newlines: bool = False) -> str:
    """User text to put inside a rich markup string (print with ``emoji=False``)."""
    from rich.markup import escape

    return escape(visible(s, limit, newlines))
