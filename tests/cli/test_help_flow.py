"""--help shows a command's paragraphs flowed to the terminal's width: typer's rich mode keeps the
source's line breaks within a paragraph after the first, which at 80 columns left a word or two
on every other line."""

from __future__ import annotations

from typer.testing import CliRunner

from probesim.cli import app
from probesim.cli.common import flowed


def test_a_paragraphs_lines_are_joined_and_lists_kept() -> None:
    doc = """Summary line.

    A paragraph written over
    two lines.

    - an item
    - another
    """
    assert flowed(doc) == "Summary line.\n\nA paragraph written over two lines.\n\n- an item\n- another"


def test_the_labs_help_wraps_at_80_columns_without_ragged_lines() -> None:
    r = CliRunner().invoke(app, ["lab", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert r.exit_code == 0
    text = r.output
    # The rollout paragraph reads on, wrapped at the width, not at the source's breaks.
    assert "run for real: its controller creates the new revision's pods" in " ".join(text.split())
    lines = [ln.strip() for ln in text.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("A Deployment's rollout"))
    paragraph = lines[start : lines.index("", start)]
    assert all(len(ln) >= 60 for ln in paragraph[:-1]), paragraph  # every line but the last full
