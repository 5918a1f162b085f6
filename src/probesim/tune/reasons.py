"""The tuner's reasons: one line per recommended value saying the run and figure that decided it,
found by putting that value back as it is now and simulating (or the rule that needs it), and for
an outlier value that is not check's, the figure check's value makes worse; the objectives as the
report names them (FIGURES, LABEL) and the ones the recommendation is worse on. tune/study.py
runs the search and calls these on its answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from probesim.model.kubernetes import HANDLERS
from probesim.tune.ablation import changed_text, replaces_delay, shown, why_needed, with_seed, worse_by
from probesim.tune.checked import check_findings
from probesim.tune.figures import Figures, Row
from probesim.tune.inputs import TuneInputs
from probesim.tune.objective import Executor, evaluate, plan
from probesim.tune.search import FAILURE_SLACK
from probesim.tune.space import TIMINGS, Setting, Space

# The objectives as the report names them, in the order a reason looks for the deciding one,
# with how much worse counts (failed requests: the recommendation's slack).
FIGURES: tuple[tuple[str, str, str, float], ...] = (
    ("scenario_failed", "failed requests in your scenario", "", FAILURE_SLACK),
    ("failed", "failed requests", "", FAILURE_SLACK),
    ("restarts", "needless restarts", "", 0),
    ("flaps", "readiness flaps", "", 0),
    ("short_s", "time with fewer Ready pods than replicas (no hang)", " s", 0.5),
    ("recovery_s", "all replicas Ready again after the hang", " s", 0.5),
    ("ready_s", "a new pod Ready after its app answers", " s", 0.5),
    ("probe_rps", "probe requests per second per pod", "/s", 1e-3),
    ("detection_s", "the hung pod out of service", " s", 0.5),
)
LABEL = {key: (label, unit) for key, label, unit, _ in FIGURES}


def _fig(f: Figures, key: str, unit: str) -> str:
    v = getattr(f, key)
    return f"{v:g}{unit}" if key != "probe_rps" else f"{v:.3g}{unit}"


def worse_than(rec: Figures, now: Figures) -> list[str]:
    """The objectives on which ``rec`` is worse than the current setting's ``now``, said."""
    return [
        f"{label}: {_fig(rec, key, unit)} against {_fig(now, key, unit)} now"
        for key, label, unit, _tol in FIGURES
        if getattr(rec, key) > getattr(now, key) + (1e-9 if "failed" not in key else 0)
    ]


def reference(space: Space, current: Setting, fix: Setting | None) -> Setting:
    """What a changed value is put back to: the user's, or where the user set none, what check's
    fix sets — the probes the tuner adds (readiness) as it adds them, and a startup probe as its
    PS013/PS033 fix adds one (on a period of 10 s, allowing the app's slowest start half again),
    so the timings of a probe the tuner adds are no more the search's pick than a changed value;
    and the outlier detection's fields check's fix changes (PS020-PS022: consecutive5xxErrors 3,
    maxEjectionPercent 50) as it sets them, so the tuner keeps another value only for a measured
    reason (its line in the reasons says which figure check's value makes worse)."""
    ref = space.with_added(current)
    if fix is None:
        return ref
    probes = {c: {f: dict(t) for f, t in ps.items()} for c, ps in ref.probes.items()}
    for c, ps in fix.probes.items():
        if "startupProbe" in ps and "startupProbe" not in probes.get(c, {}):
            probes.setdefault(c, {})["startupProbe"] = dict(ps["startupProbe"])
    outlier = ref.outlier
    if outlier is not None and fix.outlier is not None:
        outlier = {**outlier, **{k: v for k, v in fix.outlier.items() if outlier.get(k) != v}}
    return Setting(probes, outlier)


def changes(current: Setting, setting: Setting) -> list[tuple[str, str, str | None, Any, Any]]:
    """Each changed value: (container, probe field, timing or None for a probe added, now, new);
    a probe's check (its handler) changed is ``"handler"`` with the two handlers."""
    out: list[tuple[str, str, str | None, Any, Any]] = []
    for c, probes in setting.probes.items():
        for fname, new in probes.items():
            now = current.probes.get(c, {}).get(fname)
            if now is None:
                out.append((c, fname, None, None, new))
                continue
            was, will = handler_of(now), handler_of(new)
            if will and was != will:
                out.append((c, fname, "handler", was, will))
            out += [(c, fname, k, now.get(k), v) for k, v in new.items() if k in TIMINGS and now.get(k) != v]
    if setting.outlier != current.outlier:
        for k, v in (setting.outlier or {}).items():
            if (current.outlier or {}).get(k) != v:
                out.append(("", "outlierDetection", k, (current.outlier or {}).get(k), v))
    return out


def handler_of(probe: dict[str, Any]) -> dict[str, Any]:
    """A probe's check (its handler fields) without its timings."""
    return {k: v for k, v in probe.items() if k in HANDLERS}


def revert(setting: Setting, change: tuple[str, str, str | None, Any, Any]) -> Setting:
    """``setting`` with one change (``changes``) put back as it is now."""
    c, fname, key, now, _new = change
    probes = {n: {f: dict(t) for f, t in ps.items()} for n, ps in setting.probes.items()}
    outlier = dict(setting.outlier) if setting.outlier is not None else None
    if fname == "outlierDetection" and outlier is not None and key is not None:
        if now is None:
            outlier.pop(key, None)
        else:
            outlier[key] = now
    elif key is None:
        del probes[c][fname]
    elif key == "handler":
        probes[c][fname] = {**now, **{k: v for k, v in probes[c][fname].items() if k not in HANDLERS}}
    else:
        probes[c][fname][key] = now
        if key == "periodSeconds":  # timeoutSeconds is used as min(timeout, period)
            probes[c][fname]["timeoutSeconds"] = min(probes[c][fname]["timeoutSeconds"], now)
    return Setting(probes, outlier)


def justify(
    inputs: TuneInputs,
    space: Space,
    rec: Row,
    now: Row,
    executor: Executor,
    figures_of: Callable[[Setting], Figures] | None = None,
    passes: Callable[[Setting], bool] | None = None,
    fix: Setting | None = None,
) -> list[str]:
    """One line per recommended value: the run and figure that decided it, found by simulating
    the recommendation with that value alone put back as it is now (``figures_of``: a setting's
    figures, known or simulated) and naming the first figure materially worse then
    (ablation.worse_by), under the study's seed or else another; or the rule that needs it. An
    outlier value that is not what check's fix (``fix``) sets says too which figure check's value
    makes worse: the measured reason for not following check."""

    def simulated(s: Setting) -> Figures:
        return figures_of(s) if figures_of is not None else evaluate(plan(inputs, space, s), executor)

    lines = []
    for change in changes(now.setting, rec.setting):
        c, fname, key, old, new = change
        what = changed_text(c, fname, key, old, new, "added")
        reverted = revert(rec.setting, change)
        was = "without it" if key is None else f"with {shown(old)}"
        if fname == "startupProbe" and key is None and replaces_delay(now.setting, rec.setting, c):
            delay = now.setting.probes[c]["livenessProbe"].get("initialDelaySeconds", 0)
            allows = int(new.get("periodSeconds", 10)) * int(new.get("failureThreshold", 3))
            lines.append(
                f"{what}: needed — it stands for the {delay}s your liveness initialDelaySeconds gave the "
                "app to start, which liveness no longer waits (a startup probe rather than a long initial "
                f"delay); it allows {allows}s"
            )
            continue
        if space.repair(reverted) != reverted or (passes is not None and not passes(reverted)):
            needed = why_needed(reverted, rec.setting, bool(inputs.services))
            if not needed:  # no principle of the policy: the check rules that would warn
                warned = check_findings(inputs, space, reverted) - check_findings(inputs, space, rec.setting)
                said = sorted({f"{f[0]} {f[4]}" for f in warned})
                needed = "check would warn: " + "; ".join(said) if said else "check's probe rules refuse it"
            caveat = inputs.caveats.get(c) if key is None and fname == "readinessProbe" else None
            if caveat and inputs.rule is not None:  # Istio's "Health Checking of Istio Services"
                caveat += (
                    "; under Istio keep probe rewriting on (a TCP probe the sidecar captures passes "
                    "while the sidecar runs)"
                )
            line = f"{what}: needed — {was}, {needed}" + (f". Beware: {caveat}" if caveat else "")
        else:
            worse = _worse_with(inputs, space, rec, reverted, executor, simulated)
            line = f"{what}: " + (f"no figure is materially worse {was}" if worse is None else worse(was))
        on_outlier = fix is not None and fname == "outlierDetection"
        checks = (fix.outlier or {}).get(key or "") if fix is not None and on_outlier else None
        if checks is not None and checks not in (new, old):
            line += "; " + _not_checks(inputs, space, rec, change, checks, executor, simulated, passes)
        lines.append(line)
    return lines


def _not_checks(
    inputs: TuneInputs,
    space: Space,
    rec: Row,
    change: tuple[str, str, str | None, Any, Any],
    checks: Any,
    executor: Executor,
    simulated: Callable[[Setting], Figures],
    passes: Callable[[Setting], bool] | None,
) -> str:
    """Why an outlier value is not the one check's fix sets (``checks``): the figure check's
    value makes worse, measured; or that it makes none worse (the search's pick, kept only
    because the put-back found check's value refused or worse under the other seed)."""
    c, fname, key, _old, _new = change
    back = revert(rec.setting, (c, fname, key, checks, _new))
    was = f"with check's {shown(checks)}"
    if space.repair(back) != back or (passes is not None and not passes(back)):
        return f"not check's fix's {shown(checks)}: check's own rules refuse it with the other values"
    worse = _worse_with(inputs, space, rec, back, executor, simulated)
    return f"not check's fix's {shown(checks)}: " + (
        f"no figure is materially worse {was}" if worse is None else worse(was)
    )


def _worse_with(
    inputs: TuneInputs,
    space: Space,
    rec: Row,
    back: Setting,
    executor: Executor,
    simulated: Callable[[Setting], Figures],
) -> Callable[[str], str] | None:
    """The first figure materially worse with ``back`` than with the recommendation, under the
    study's seed or else another, as a reason says it (given how ``back`` differs: "with 30s");
    None when none is."""
    after, ref, note = simulated(back), rec.figures, ""
    k = worse_by(after, ref)
    if k is None:  # not under the study's seed: under the other one
        other = with_seed(inputs, inputs.scenario.spec.seed + 1)
        after = evaluate(plan(other, space, back), executor)
        ref = evaluate(plan(other, space, rec.setting), executor)
        k, note = worse_by(after, ref), ", under another seed"
    if k is None:
        return None
    label, unit = LABEL[k]
    run = ""
    if k in ("failed", "restarts"):
        attr = "failed" if k == "failed" else "counted_restarts"
        diffs = [
            (getattr(y, attr) - getattr(x, attr), x.label)
            for x, y in zip(ref.runs, after.runs, strict=True)
            if x.kind != "hung"
        ]
        top = max(diffs, default=(0, ""))
        run = f" ({top[1]}: {top[0]:+d})" if top[0] > 0 else ""
    elif k == "scenario_failed":
        run = " (your scenario)"
    elif k in ("recovery_s", "detection_s"):
        run = " (hung pod run)"
    elif k == "ready_s":
        run = " (stress baseline)"
    a, b = _fig(ref, k, unit), _fig(after, k, unit)
    return lambda was: f"{label} {a}, {b} {was}{run}{note}"
