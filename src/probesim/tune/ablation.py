"""The smallest change that removes a risk: every value the recommendation changes is put back as
the user has it, one at a time, and stays changed only if that makes a figure the user cares
about worse beyond the noise — worse by more than the figure's materiality (MATERIAL) under the
study's seed *and* under another seed — and, for a figure with a budget (a hung pod out of service
within 30 s, …: objective.BUDGETS), over its budget: a value within what the SRE asks is no risk
to remove. Values that make no such difference are put back for good ("the search's pick" never
ships), so an already sound setting gets "keep it" and no patch. A value that cannot go all the
way back goes back as far as it can: to the nearest round value between the two (a
readiness every 10 s, not the search's 2 s, where 30 s is too slow)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from probesim.analysis.patch import flow
from probesim.analysis.policy import PRINCIPLES, broken
from probesim.analysis.rules.timing import Timing
from probesim.tune.figures import BUDGETS, Figures
from probesim.tune.inputs import TuneInputs
from probesim.tune.objective import Executor, evaluate, plan
from probesim.tune.search import setting_key, slack_of
from probesim.tune.space import OUTLIER_BOUNDS, PROBE_BOUNDS, Setting, Space

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
    more than the recommendation's slack (search.slack_of); a figure with a budget only when over it too),
    or None."""
    if back.scenario_failed > rec.scenario_failed + slack_of(rec.scenario_failed):
        return "scenario_failed"
    if back.failed > rec.failed + slack_of(rec.failed):
        return "failed"
    for key, (absolute, relative) in MATERIAL.items():
        a, b = getattr(rec, key), getattr(back, key)
        if b - a > max(absolute, relative * a) and b > BUDGETS.get(key, -1.0):
            return key
    return None


# The values a partial put-back tries, as an SRE writes them (seconds and counts).
ROUND = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 300)
BETWEEN = 8  # at most this many values tried between the user's and the recommendation's


def between(kind: str, key: str, old: object, new: object) -> list[object]:
    """Round values strictly between ``old`` (the user's) and ``new`` (the recommendation's), on
    the field's bounds, nearest the user's first — at most BETWEEN of them, spread over the way
    when there are more; none for a probe added. An outlier duration ("30s") stays one."""
    seconds = isinstance(old, str) and isinstance(new, str) and old.endswith("s") and new.endswith("s")
    a, b = (_seconds(old), _seconds(new)) if seconds else (old, new)
    bounds = OUTLIER_BOUNDS if kind == "outlierDetection" else PROBE_BOUNDS.get(kind, {})  # type: ignore[call-overload]
    bound = bounds.get(key)
    if not isinstance(a, int) or not isinstance(b, int) or bound is None:
        return []
    low, high = sorted((a, b))
    on = sorted({bound.nearest(v) for v in ROUND if low < v < high} - {a, b}, key=lambda v: abs(v - a))
    if len(on) > BETWEEN:
        on = [on[round(i * (len(on) - 1) / (BETWEEN - 1))] for i in range(BETWEEN)]
    return [f"{v}s" for v in on] if seconds else list(on)


def _seconds(d: object) -> int | None:
    """Seconds of an Istio duration the tuner writes ("30s"), None for any other."""
    text = str(d).removesuffix("s")
    return int(text) if text.isdigit() else None


def shown(value: object) -> str:
    """A value as a reason says it: a probe's check in its manifest's flow style."""
    return flow(value) if isinstance(value, dict) else str(value)


def changed_text(c: str, fname: str, key: str | None, old: object, new: object, whole: str) -> str:
    """``app livenessProbe.periodSeconds 10 → 5``; a check: ``app livenessProbe {tcpSocket: …} →
    {grpc: …}``; a probe added or not (``whole``): ``app readinessProbe added``."""
    head = f"{c + ' ' if c else ''}{fname}"
    if key is None:
        return f"{head} {whole}"
    if key == "handler":
        return f"{head} check {shown(old)} → {shown(new)}"
    return f"{head}.{key} {old} → {new}"


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
    known: dict[tuple[int, str], Figures] = {}
    refused: dict[str, bool] = {}

    def memo(seed: int, s: Setting) -> Figures:
        key = (seed, setting_key(s))
        if key not in known:
            known[key] = figures_of(s) if seed == 0 else evaluate(plan(other, space, s), executor)
        return known[key]

    def serves_as_well(back: Setting, rec: Setting) -> bool:
        key = setting_key(back)
        if key not in refused:
            refused[key] = space.repair(back) != back or not passes(back)
        if refused[key] or worse_by(memo(0, back), memo(0, rec)) is not None:
            return False
        return worse_by(memo(1, back), memo(1, rec)) is None

    rec = setting
    known[(0, setting_key(rec))] = figures
    # A search's pick that shortened the user's liveness delay without the startup probe check's
    # fix adds in its place gets that probe back: the delay was the app's start allowance.
    for c, ps in current.probes.items():
        if (
            "startupProbe" in ps
            and "startupProbe" not in rec.probes.get(c, {})
            and replaces_delay(current, rec, c)
        ):
            probes = {n: {f: dict(t) for f, t in q.items()} for n, q in rec.probes.items()}
            probes.setdefault(c, {})["startupProbe"] = dict(ps["startupProbe"])
            guarded = Setting(probes, rec.outlier)
            if space.repair(guarded) == guarded and passes(guarded):
                rec = guarded
    # Twice over: a value that could not go back with another still changed (a liveness period
    # with the search's longer threshold) may once that one is back.
    for _ in range(2):
        for c, fname, key, old, new in changes(current, rec):
            if fname == "startupProbe" and key is None and replaces_delay(current, rec, c):
                continue  # the start allowance the user's liveness delay gave: not dropped
            for value in [old, *between(fname.removesuffix("Probe"), key or "", old, new)]:
                back = reverted(rec, (c, fname, key, value, new))
                if serves_as_well(back, rec):
                    rec = back
                    break
    olds = {(c, f, k): old for c, f, k, old, _new in changes(current, setting)}
    final = {(c, f, k): new for c, f, k, _old, new in changes(current, rec)}
    put_back: list[str] = []
    for (c, fname, key), searched in {(c, f, k): n for c, f, k, _o, n in changes(current, setting)}.items():
        old = olds[(c, fname, key)]
        value = final.get((c, fname, key), old)
        if value == searched:
            continue
        what = changed_text(c, fname, key, searched, value, "not added")
        if fname == "outlierDetection":  # back to the user's value, or check's fix's where it has one
            whose = "yours" if old == (space.current().outlier or {}).get(key or "") else "check's fix's"
            if value != old:
                what += f" (the nearest to {whose}, {shown(old)}, that serves as well)"
            elif whose != "yours":
                what += " (as check's fix sets it)"
        elif value != old:
            what += f" (the nearest to yours, {shown(old)}, that serves as well)"
        elif fname not in space.current().probes.get(c, {}):  # a probe the tuner adds
            what += " (as check's fix adds it)"
        put_back.append(what)
    return Minimal(rec, memo(0, rec), put_back)


def replaces_delay(current: Setting, setting: Setting, container: str) -> bool:
    """Whether ``setting`` gives ``container``'s liveness less initial delay than the user's
    (``current``): the startup probe it adds then stands for the start the delay allowed (the
    probe guidance, principle 3: a startup probe rather than a long initial delay), and putting
    the probe back alone would leave the app less time to start than its owner gave it — on an
    app whose start probesim does not know, the delay is the only evidence of it."""
    now = current.probes.get(container, {}).get("livenessProbe") or {}
    new = setting.probes.get(container, {}).get("livenessProbe") or {}
    return int(new.get("initialDelaySeconds", 0)) < int(now.get("initialDelaySeconds", 0))


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
