"""Text output of a big run: 1,000 pods (benchmarks/engine.py's fleet: a tenth start slowly
and hang once, so probes fail, kill and restart) rendered as ``probesim run`` prints it, in CPU
seconds beside the run itself: the timeline aggregated as kubectl does and cut to its first and
last lines (the default), every line (``--events all``), and the events as JSON (all of them).

Target (issue 14): the default text output at most 10 % of the run it reports (before: 9.4 s of
text with events against 1.3 s without, for a run of about a second), written to a pipe as
``probesim run > file`` writes it; the events' own share (default minus --no-events) beside it.
Run: ``make bench`` (or ``python benchmarks/events.py [--pods N] [--ticks N]``).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from probesim.engine import simulate
from probesim.model.scenario import Scenario
from probesim.report.terminal import EVENT_LINES, aggregate, render_events, render_result

TARGET_RATIO = 0.1  # default text output within a tenth of the run's own time


def _fleet(pods: int, ticks: int, rate: float) -> Scenario:
    """benchmarks/workloads.py's seed workload, probes every 10 s."""
    sys.path.insert(0, str(Path(__file__).parent))
    import workloads

    return workloads.seed(pods, ticks, rate, period=10)


def cpu(fn: Callable[[], object], repeat: int = 3) -> float:
    """The best of ``repeat`` CPU times of ``fn()``."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def text(result: object, event_lines: int | None, events: bool = True) -> str:
    """The run's text output as ``probesim run`` writes it to a pipe (160 columns)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=160, emoji=False, force_terminal=False)
    render_result(result, console, events=events, event_lines=event_lines)  # type: ignore[arg-type]
    return buffer.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--ticks", type=int, default=1200)
    args = ap.parse_args()
    sc = _fleet(args.pods, args.ticks, 1000.0)
    result = simulate(sc)
    run = cpu(lambda: simulate(sc))
    lines = len(aggregate(result.events))
    folding = cpu(lambda: render_events(result.events, Console(file=io.StringIO(), width=160), EVENT_LINES))
    none = cpu(lambda: text(result, EVENT_LINES, events=False))
    default = cpu(lambda: text(result, EVENT_LINES))
    every = cpu(lambda: text(result, None), repeat=1)
    as_json = cpu(lambda: json.dumps(result.to_json(series=False), indent=2), repeat=1)
    ratio = default / run
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(
        f"text output of {args.pods:,} pods × {args.ticks:,} s: {len(result.events):,} events in {lines:,} "
        "lines as kubectl aggregates them"
    )
    print(f"  run (simulate)               {run:6.3f} s CPU")
    print(f"  text, --no-events            {none:6.3f} s CPU")
    print(
        f"  text, default (2 × {EVENT_LINES} lines)  {default:6.3f} s CPU   "
        f"{ratio:.2f} × the run (target ≤ {TARGET_RATIO}: {verdict})"
    )
    print(
        f"  events alone (default − none) {default - none:6.3f} s CPU   "
        f"{(default - none) / run:.2f} × the run (folding and writing the events table: {folding:.3f} s)"
    )
    print(f"  text, --events all           {every:6.3f} s CPU   every line: for reference")
    print(f"  --json events (no series)    {as_json:6.3f} s CPU   every event")


if __name__ == "__main__":
    main()
