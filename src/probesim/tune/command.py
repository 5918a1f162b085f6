"""``probesim tune``: the command's work, kept out of cli/tune.py (which declares the options
and writes the study's page)."""

from __future__ import annotations

import concurrent.futures as cf
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.text import Text

from probesim.errors import InputError, check_writable
from probesim.profiles import ProfileCorrection
from probesim.safe import visible
from probesim.tune import inputs as tune_inputs
from probesim.tune import report, study
from probesim.tune.figures import Row

T = TypeVar("T")
R = TypeVar("R")


class Pool:
    """The runs of a trial over a ``concurrent.futures`` executor (local processes or Dask's):
    every item is submitted at once, its results read in order as they come."""

    def __init__(self, ex: cf.Executor) -> None:
        self.ex = ex

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        return self.ex.map(fn, items)


def tune(
    paths: Sequence[str],
    scenario: str | None,
    workload: str | None,
    trials: int,
    seed: int,
    storage: str | None,
    name: str | None,
    timeout: str | None,
    scheduler: str | None,
    workers: int | None,
    output: Path | None,
    as_json: bool,
    out: Console,
    err: Console,
    write_page: Callable[[study.Outcome, tune_inputs.TuneInputs, list[report.PatchOut]], None] | None = None,
    corrections: Sequence[ProfileCorrection] = (),
) -> None:
    """Load, search, print (and hand the outcome to ``write_page``, the caller's writer of the
    study's HTML page); ``corrections``: .probesim.yaml's profile corrections. Raises InputError
    for anything the user can fix."""
    from probesim.runs import executor

    if output is not None:
        check_writable(output, "the patch")
    timeout_s = None if timeout is None else _seconds(timeout)
    got = tune_inputs.load(paths, scenario, workload, corrections)
    if got.given:
        from probesim.cost import DEFAULT_MAX_COST, run_cost

        cost = run_cost(got.scenario)
        if cost.units > DEFAULT_MAX_COST:
            raise InputError(
                f"every trial simulates this scenario, which would cost {cost.explain()}, more than "
                f"{DEFAULT_MAX_COST:,} (probesim run's --max-cost default): shorten spec.duration, "
                "coarsen spec.step or run fewer pods",
                file=scenario,
            )
    from probesim.tune.objective import scripts_restarts

    if scripts_restarts(got.scenario, got.workload.name):
        got.notes.append(
            f"the scenario scripts deadlocks or crashes for {got.workload.name}: its restarts are due, "
            "so none is counted as needless (the figure stays 0)"
        )
    for m in got.warnings + got.notes:
        err.print(Text.assemble(("warning: ", "yellow"), visible(m, 1000)), soft_wrap=True)
    url = study.storage_url(storage)
    study_name = name or study.study_name(got, seed)

    def progress(n: int, row: Row) -> None:
        err.print(
            Text(f"trial {row.number} ({n}/{trials}): {report.render_figures_note(row.figures)}"),
            highlight=False,
        )

    with executor(workers, scheduler) as ex:
        outcome = study.run(got, trials, seed, url, study_name, Pool(ex), timeout_s, progress)
    best = outcome.recommended
    ps = report.patches(got, outcome.current.setting, best.setting) if best is not None else []
    files: list[str] = []
    if output is not None and ps:
        files = _write(ps, output)
    if write_page is not None:
        write_page(outcome, got, ps)
    if as_json:
        extra = {
            "patches": [
                {
                    "kind": p.kind,
                    "name": p.name,
                    "namespace": p.namespace,
                    "type": "strategic" if p.strategic else "merge",
                    "patch": p.patch,
                    "command": p.command(),
                }
                for p in ps
            ],
            "helmSource": got.source,
        }
        sys.stdout.write(json.dumps(study.to_json(outcome, extra), indent=2) + "\n")
        return
    report.render(outcome, got, out)
    report.render_patches(ps, got, files, out)


def _seconds(given: str) -> float:
    """--timeout's duration (scenario units: 90s, 10m, 1h) in seconds."""
    from probesim.model.duration import parse_ms

    try:
        ms = parse_ms(given)
    except ValueError as e:
        raise InputError(str(e), field="--timeout") from None
    if ms <= 0:
        raise InputError(f"{given} is not a positive duration", field="--timeout")
    return ms / 1000


def _write(ps: list[report.PatchOut], output: Path) -> list[str]:
    """The workload's patch to ``output``; a DestinationRule's beside it."""
    files: list[str] = []
    for p in ps:
        beside = f"{output.stem}-{p.kind.lower()}-{p.name}{output.suffix}"
        path = output if not files else output.with_name(beside)
        try:
            path.write_text(p.yaml(), encoding="utf-8")
        except OSError as e:
            raise InputError(f"cannot write the patch: {e.strerror}", file=str(path)) from None
        files.append(str(path))
    return files
