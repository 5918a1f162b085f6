"""``probesim compare``: scenarios run and printed side by side."""

import sys
from typing import Annotated

import typer

from probesim.cli.common import MAX_COST_OPTION, check_cost, command, load
from probesim.cli.program import out
from probesim.cost import DEFAULT_MAX_COST


@command()
def compare(
    targets: Annotated[list[str], typer.Argument(help="Scenario files or built-in names, two or more.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    seed: Annotated[int | None, typer.Option(help="Run every scenario with this seed.", min=0)] = None,
    max_cost: Annotated[int, MAX_COST_OPTION] = DEFAULT_MAX_COST,
) -> None:
    """Run scenarios and print them side by side: per route requests/s, error %, p95 and max
    latency, restarts, time without endpoints, dropped iterations.

    Example: [bold]probesim compare patient-all-ok patient-delays-no-probes patient-delays-liveness[/bold]
    """
    import json

    from probesim.engine import simulate
    from probesim.report.compare import render_compare, rows

    results = []
    for target in targets:
        sc = load(target)
        check_cost(sc, target, max_cost)
        if seed is not None:
            sc = sc.model_copy(update={"spec": sc.spec.model_copy(update={"seed": seed})})
        results.append(simulate(sc))
    if as_json:
        sys.stdout.write(json.dumps(rows(results), indent=2) + "\n")
    else:
        render_compare(results, out)
