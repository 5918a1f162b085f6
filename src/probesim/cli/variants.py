"""``probesim run`` on input of several variants (manifests/variants.py): each variant's
generated scenario, loaded and checked by the caller before any runs, is run in turn and
reported: as text, a section per variant headed by its folder and the files read; as JSON, a
list of variant results, each with its folder, its files and the run's result document. The
exit code is the worst variant's (99 when one crossed a threshold, as a single run)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from probesim.manifests.generated import Generated
    from probesim.model.scenario import Scenario
    from probesim.model.threshold import Threshold

VARIANTS_KIND = "VariantResults"


def run_variants(
    judged: Sequence[tuple[Scenario, Generated, list[Threshold]]],
    seed: int | None,
    as_json: bool,
    series: bool,
    event_lines: int | None,
    out: Console,
) -> int:
    """Run each variant and report them all; the exit code (0 or 99)."""
    from rich.rule import Rule
    from rich.text import Text

    from probesim.engine import simulate
    from probesim.report.terminal import render_result
    from probesim.report.thresholds import render_thresholds
    from probesim.results.result import RESULT_VERSION
    from probesim.results.thresholds import EXIT_CROSSED, crossed, evaluate
    from probesim.runs import with_seed
    from probesim.safe import visible

    docs: list[dict[str, Any]] = []
    code = 0
    for sc, g, thresholds in judged:
        result = simulate(with_seed(sc, seed) if seed is not None else sc)
        verdicts = evaluate(thresholds, result)
        folder = g.variant.folder if g.variant is not None else g.shown
        files = g.variant.files if g.variant is not None else []
        if crossed(verdicts):
            code = EXIT_CROSSED
        if as_json:
            doc = result.to_json(series=series)
            doc["thresholds"] = [v.to_json() for v in verdicts]
            docs.append({"folder": folder, "files": files, "crossed": crossed(verdicts), "result": doc})
            continue
        out.print(Rule(style="dim"))
        out.print(Text(visible(g.heading(), 1000), style="bold"), soft_wrap=True)
        out.print(Text(visible("files: " + ", ".join(files), 4000), style="dim"), soft_wrap=True)
        render_result(result, out, events=event_lines != 0, event_lines=event_lines)
        render_thresholds(verdicts, out)
    if as_json:
        whole = {"apiVersion": RESULT_VERSION, "kind": VARIANTS_KIND, "variants": docs}
        sys.stdout.write(json.dumps(whole, indent=2) + "\n")
    return code
