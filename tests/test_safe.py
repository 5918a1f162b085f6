"""probesim.safe: user text for a terminal is cut, shows control characters, and is never markup."""

from __future__ import annotations

import io

from rich.console import Console

from probesim.errors import InputError
from probesim.safe import MESSAGE_LIMIT, cell, cut, markup, visible


def test_cut_keeps_short_text_and_marks_a_cut() -> None:
    assert cut("abc", 3) == "abc"
    assert cut("abcd", 3) == "ab…"


def test_control_and_bidi_characters_are_shown_as_escapes() -> None:
    assert visible("a\x1b[31mb\u202ec\x00d\x7f\u200be\n") == "a\\x1b[31mb\\u202ec\\x00d\\x7f\\u200be\\x0a"
    assert visible("héllo wörld ✓ 日本") == "héllo wörld ✓ 日本"  # printable text is left alone
    # Text of several lines (an exec probe's script) keeps its line feeds when asked; nothing else.
    assert visible("a\nb\r\x1b\u2028", newlines=True) == "a\nb\\x0d\\x1b\\u2028"


def test_markup_and_emoji_codes_print_as_written() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=200)
    console.print(cell("[/] [bold]x[/bold] :100:"))
    console.print(f"[red]e:[/red] {markup('[/] :smile:')}", emoji=False)
    assert buf.getvalue().splitlines() == ["[/] [bold]x[/bold] :100:", "e: [/] :smile:"]


def test_an_input_error_is_bounded_whatever_its_parts() -> None:
    e = InputError("m" * 10_000_000, file="f" * 1000, line=3, obj="o" * 1000, field="x")
    text = str(e)
    assert len(text) < 3 * 200 + MESSAGE_LIMIT + 20
    assert text.startswith("f" * 199 + "…:3: " + "o" * 199 + "…: x: mmm") and text.endswith("…")
