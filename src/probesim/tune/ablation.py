"""The smallest change that removes a risk: every value the recommendation changes is put back as
the user has it, one at a time, and stays changed only if that makes a figure the user cares
about worse beyond the noise — worse by more than the figure's materiality (MATERIAL) under the
study's seed *and* under another seed. Values that make no such difference are put back for good
("the search's pick" never ships), so an already sound setting gets "keep it" and no patch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from probesim.analysis.policy import PRINCIPLES, broken
from probesim.analysis.rules.timing import Timing
from probesim.tune.inputs import TuneInputs
from probesim.tune.objective import Executor, Figures, evaluate, plan
from probesim.tune.search import slack_of
from probesim.tune.space import Setting, Space

# How much worse each figure must be to matter: (absolute, relative to the better value). A
# difference below both is no reason to change what the user wrote (a reviewer's margin).
MATERIAL: dict[str, tuple[float, float]] = {
    "restarts": (0.5, 0.0),  # any needless restart
    "flaps": (0.5, 0.0),  # any readiness flap
    "detection_s": (5.0, 0.25),  # the hung pod out of service
    "recovery_s": (10.0, 0.25),  # all replicas Ready again after the hang
    "ready_s": (2.0, 0.25),  # a new pod Ready after its app answers
    "probe_rps": (0.25, 0.5),  # probe requests per second per pod
}


def worse_by(back: Figures, rec: Figures) -> str | None:
    """The first figure on which ``back`` is materially worse than ``rec`` (failed requests by
    more than the recommendation's slack, 1 % or 5), or None."""
    if back.failed > rec.failed + slack_of(rec.failed):
        return "failed"
    for key, (absolute, relative) in MATERIAL.items():
        a, b = getattr(rec, key), getattr(back, key)
        if b - a > max(absolute, relative * a):
            return key
    return None


@dataclass(frozen=True)
class Minimal:
    setting: Setting
    figures: Figures
    put_back: list[str]  # the values put back as they are now, said


def with_seed(inputs: TuneInputs, seed: int) -> TuneInputs:
    """``inputs`` with the scenario simulated under another seed (the noise's other draw)."""
    spec = inputs.scenario.spec.model_copy(update={"seed": seed})
    return replace(inputs, scenario=inputs.scenario.model_copy(update={"spec": spec}))


def minimal(
    inputs: TuneInputs,
    space: Space,
    current: Setting,
    setting: Setting,
    figures: Figures,
    executor: Executor,
    figures_of: Callable[[Setting], Figures],
    passes: Callable[[Setting], bool],
    changes: Callable[[Setting, Setting], list[tuple[str, str, str | None, object, object]]],
    reverted: Callable[[Setting, tuple[str, str, str | None, object, object]], Setting],
) -> Minimal:
    """``setting`` with every value changed from ``current`` put back that makes no figure
    materially worse under two seeds, one at a time in the order of the changes (a value the
    probe rules need with the others kept, and any whose setting check refuses, stays).
    ``current`` is the user's setting with the probes the tuner adds at check's fix's timings."""
    other = with_seed(inputs, inputs.scenario.spec.seed + 1)

    def again(s: Setting) -> Figures:
        return evaluate(plan(other, space, s), executor)

    put_back: list[str] = []
    rec, rec_figures = setting, figures
    rec_other: Figures | None = None
    for change in changes(current, setting):
        back = reverted(rec, change)
        if space.repair(back) != back or not passes(back):
            continue
        if worse_by(figures_of(back), rec_figures) is not None:
            continue
        rec_other = rec_other or again(rec)
        if worse_by(again(back), rec_other) is not None:
            continue
        c, fname, key, old, new = change
        what = f"{c + ' ' if c else ''}{fname}" + (f".{key} {new} → {old}" if key else " not added")
        if fname in space.added.get(c, {}):
            what += " (as check's fix adds it)"
        put_back.append(what)
        rec, rec_figures, rec_other = back, figures_of(back), None
    return Minimal(rec, rec_figures, put_back)


def policy_broken(setting: Setting, serves: bool) -> set[str]:
    """The probe policy's principles ``setting`` breaks, container by container (timings only)."""
    out: set[str] = set()
    fields = (("readiness", "readinessProbe"), ("liveness", "livenessProbe"), ("startup", "startupProbe"))
    for probes in setting.probes.values():
        timings = {
            kind: Timing(
                p["periodSeconds"], p["timeoutSeconds"], p["failureThreshold"], p["initialDelaySeconds"]
            )
            for kind, name in fields
            if (p := probes.get(name)) is not None
        }
        out |= broken(timings, serves and "readiness" in timings)  # type: ignore[arg-type]
    return out


def why_needed(reverted: Setting, kept: Setting, serves: bool) -> str:
    """Why a value cannot be put back alone: what breaking the policy's principles it would break
    does; empty when it breaks none (a rule of check's refuses it: the caller says which)."""
    new = sorted(policy_broken(reverted, serves) - policy_broken(kept, serves))
    said = [PRINCIPLES[p].broken_as for p in new if PRINCIPLES[p].broken_as]
    return "; ".join(said)
