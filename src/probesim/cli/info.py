"""The commands that tell: ``scenarios`` (the built-ins), ``demo`` (the seed-000 logical
demo), ``schema`` (the JSON Schemas of scenarios, results and diff reports) and ``version``."""

import sys
from typing import Annotated

import typer

from probesim import __version__
from probesim.cli.common import command
from probesim.cli.program import out
from probesim.errors import InputError


@command()
def scenarios() -> None:
    """List the built-in scenarios, each with what it shows. Run one with 'probesim run NAME'."""
    from probesim.report.listings import render_builtins
    from probesim.scenarios import builtins

    render_builtins(builtins(), out)


@command()
def demo(
    show_events: Annotated[bool, typer.Option("--events", help="Print each combination's log.")] = False,
) -> None:
    """The seed-000 demo on the logical tick model.

    pod-1 is warm; pod-2 needs 8 ticks to start and hangs for 3 ticks from age 14; 2 requests
    per tick for 26 ticks. Eight probe combinations: only readiness + startup + a loose
    liveness give 0 dropped and 0 restarts.
    """
    from probesim.demo import RPS, TICKS, run_demo
    from probesim.report.listings import render_demo

    render_demo(run_demo(), TICKS, RPS, out, show_events)


@command()
def schema(
    result: Annotated[
        bool,
        typer.Option(
            "--result",
            help="The JSON Schema of the result probesim run --json and lab --json write instead (for "
            "whatever reads results: a dashboard, a CI step).",
        ),
    ] = False,
    diff: Annotated[
        bool,
        typer.Option(
            "--diff",
            help="The JSON Schema of the report probesim diff --format json writes instead (for a CI step "
            "or bot that reads it).",
        ),
    ] = False,
) -> None:
    """Print the JSON Schema of scenario files (for editor completion and validation), or with
    --result of the result documents, or with --diff of diff's reports."""
    import json

    if result and diff:
        raise InputError("--result and --diff print different schemas: give one")
    if diff:
        from probesim.report.diff_document import json_schema as diff_schema

        sys.stdout.write(json.dumps(diff_schema(), indent=2) + "\n")
        return
    if result:
        from probesim.results.document import json_schema

        sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
        return
    from probesim.model.scenario import API_VERSION, ScenarioFile

    doc = ScenarioFile.model_json_schema(by_alias=True)
    doc = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"{API_VERSION}/Scenario", **doc}
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


@command()
def version() -> None:
    """Print probesim's version."""
    out.print(f"probesim {__version__}")
