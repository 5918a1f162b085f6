"""``probesim run --runs N``: one scenario run with N seeds (its seed, seed + 1, …), each
summary figure given as mean, standard deviation and range over the runs, and each threshold
as the share of runs that crossed it.

The runs execute as a sweep's do (probesim.runs); the statistics are computed in seed order,
exactly (probesim.results.figures.stats), so they do not depend on the number of workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from probesim.results.figures import Stats, aggregate
from probesim.runs import Task, run_all, threshold_names

if TYPE_CHECKING:
    from rich.progress import Progress

    from probesim.model.scenario import Scenario
    from probesim.model.threshold import Threshold

MONTE_CARLO_KIND = "MonteCarlo"


@dataclass(frozen=True)
class Crossed:
    text: str
    runs: int  # the runs that crossed it
    of: int  # the runs judged

    @property
    def share(self) -> float:
        return self.runs / self.of if self.of else 0.0


@dataclass(frozen=True)
class MonteCarlo:
    scenario: str
    seeds: list[int]
    rows: list[dict[str, Any]]  # one per run, in seed order
    figures: dict[str, Stats]
    thresholds: list[Crossed]

    def to_json(self) -> dict[str, Any]:
        from probesim.results.result import RESULT_VERSION

        return {
            "apiVersion": RESULT_VERSION,
            "kind": MONTE_CARLO_KIND,
            "scenario": self.scenario,
            "runs": len(self.seeds),
            "seeds": self.seeds,
            "figures": {name: s.to_json() for name, s in self.figures.items()},
            "thresholds": [
                {"threshold": c.text, "crossedRuns": c.runs, "runs": c.of, "crossedShare": c.share}
                for c in self.thresholds
            ],
        }


def figure_names(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The figure columns of run rows, in order (not inputs, seeds or thresholds)."""
    return [k for k in dict.fromkeys(k for row in rows for k in row) if k.startswith(("route[", "workload["))]


def monte_carlo(
    sc: Scenario,
    runs: int,
    thresholds: Sequence[Threshold] = (),
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> MonteCarlo:
    seeds = [sc.spec.seed + i for i in range(runs)]
    tasks = [Task(sc, s, run=i, thresholds=tuple(thresholds)) for i, s in enumerate(seeds)]
    rows = run_all(tasks, workers, scheduler, progress)
    return summarize(sc.name, rows)


def summarize(scenario: str, rows: Sequence[dict[str, Any]]) -> MonteCarlo:
    """The Monte Carlo summary of run rows (each with its ``seed``)."""
    crossed = [
        Crossed(t, sum(1 for r in rows if r.get(f"threshold[{t}].ok") is False), len(rows))
        for t in (threshold_names(rows[0]) if rows else [])
    ]
    return MonteCarlo(
        scenario, [int(r["seed"]) for r in rows], list(rows), aggregate(rows, figure_names(rows)), crossed
    )
