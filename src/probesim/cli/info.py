"""The commands that tell: ``scenarios`` (the built-ins), ``demo`` (the seed-000 logical
demo), ``schema`` (the scenario format's JSON Schema) and ``version``."""

import sys
from typing import Annotated

import typer

from probesim import __version__
from probesim.cli.common import command
from probesim.cli.program import out


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
) -> None:
    """Print the JSON Schema of scenario files (for editor completion and validation), or with
    --result of the result documents."""
    import json

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
