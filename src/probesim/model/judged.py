"""The thresholds a run of a scenario is judged by: its spec.thresholds and --threshold lines,
read in the threshold language (probesim.model.threshold) and the names their tags give checked
against the scenario's routes, Services and workloads.
"""

from __future__ import annotations

from collections.abc import Sequence

from probesim.model.scenario import Scenario
from probesim.model.threshold import Threshold, parse


def unknown_name(th: Threshold, scenario: Scenario) -> str | None:
    """Why the name a threshold's tag gives is not in the scenario, or None."""
    if th.tag is None:
        return None
    key, value = th.tag
    known: list[str]
    if key == "route":
        known = [t.label for t in scenario.spec.traffic]
    elif key == "service":
        known = [s.name for s in scenario.services]
    else:
        known = [w.name for w in scenario.workloads]
    if value in known:
        return None
    shown = ", ".join(known[:20]) + (", …" if len(known) > 20 else "")
    return f"{th.text!r}: no {key} {value!r} in this scenario; {key}s: {shown or '(none)'}"


def judged_by(scenario: Scenario, extra: Sequence[str], file: str | None = None) -> list[Threshold]:
    """The thresholds a run of ``scenario`` (read from ``file``) is judged by: its
    spec.thresholds, then ``extra`` (--threshold lines); InputError for a line that does not
    read or names what the scenario does not have."""
    from probesim.errors import InputError

    own = len(scenario.spec.thresholds)
    out = []
    for i, line in enumerate((*scenario.spec.thresholds, *extra)):
        mine = i < own
        field = f"spec.thresholds[{i}]" if mine else "--threshold"
        try:
            th = parse(line)
        except ValueError as e:
            raise InputError(str(e), file=file if mine else None, field=field) from None
        problem = unknown_name(th, scenario)
        if problem is not None:
            raise InputError(problem, file=file if mine else None, field=field)
        out.append(th)
    return out
