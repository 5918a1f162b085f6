"""What the commands that write a report (probesim check, probesim diff) share: their --format,
--output and --config options, and the report written to the terminal or to --output."""

import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from probesim.cli.common import write_file
from probesim.cli.program import out

OUTPUT_OPTION = typer.Option("--output", "-o", help="Write the report to this file.")


def format_option(formats: Sequence[str]) -> Any:
    """--format / -f, its help naming ``formats``."""
    return typer.Option("--format", "-f", help=f"{' or '.join([', '.join(formats[:-1]), formats[-1]])}.")


def config_option(what: str = "") -> Any:
    """--config, ``what`` saying what it configures after its default (": check's rules")."""
    return typer.Option(help=f"Config file (default: ./.probesim.yaml if present){what}.")


def write_report(output: Path | None, render: Callable[[Console], str | None]) -> None:
    """The report ``render`` makes, on the console it is given (or as the text it returns), to the
    terminal or to ``output``."""
    buffer = io.StringIO()
    console = out if output is None else Console(file=buffer, width=160)
    text = render(console)
    if output is not None:
        write_file(output, text if text is not None else buffer.getvalue(), "the report")
    elif text is not None:
        sys.stdout.write(text)
