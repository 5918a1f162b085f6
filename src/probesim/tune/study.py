"""The search: an Optuna study kept in a database, one trial at a time, and its answer.

Every trial's setting is repaired onto what probesim check's probe rules accept (``space``), so
every trial is one the recommendation may pick. The first trials are seeded (the current
setting, the rules' own fix), the rest up to ``STARTUP_TRIALS`` drawn at random, and from then
on each is a move of a local search around the best setting so far, or, once that is a local
optimum, Optuna's multi-objective TPE's (multivariate, grouped, so a startup probe that is added
or not keeps its own parameters apart) — ``search`` says how. The sampler is made afresh for
every trial with a seed derived from ``--seed`` and the trial's number: what a trial samples
depends only on the seed and the trials already in the study, so a study grown in two runs of 5
trials holds the same trials as one grown in a single run of 10. A setting already simulated is
not simulated again (its figures are copied: the simulation is deterministic). Trials run one
after another (the runs inside a trial run in parallel), which keeps that true whatever the
number of workers.

The study lives in Optuna's RDB storage (SQLite at ``.probesim/tune.db`` unless ``--storage``
names another URL), under a name derived from what was tuned: the scenario and objects as
loaded, the workload, the seed and the version of the search space. The same inputs find the
same study and add to it; changed manifests start a new one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from probesim.engine.kernel_choice import kernels
from probesim.errors import InputError
from probesim.tune import search
from probesim.tune.ablation import minimal
from probesim.tune.checked import HANDLER_RULES, OUTLIER_RULES, about_probes, check_findings, rules_fix
from probesim.tune.figures import OBJECTIVES, Figures, Row
from probesim.tune.inputs import TuneInputs
from probesim.tune.objective import Executor, evaluate, plan
from probesim.tune.reasons import changes, justify, reference, revert, worse_than
from probesim.tune.search import FAILURE_SLACK, FAILURE_TOLERANCE, STARTUP_TRIALS, setting_key
from probesim.tune.space import Setting, Space
from probesim.tune.store import Kept

SPACE_VERSION = 8  # bump when the space or the objectives change: older studies are not mixed in
DEFAULT_TRIALS = 80
DEFAULT_STORAGE = ".probesim/tune.db"
__all__ = ["FAILURE_SLACK", "FAILURE_TOLERANCE", "STARTUP_TRIALS"]


@dataclass(frozen=True)
class Outcome:
    study: str
    storage: str
    trials: int  # completed trials in the study
    added: int  # completed in this run
    timed_out: bool
    current: Row
    front: list[Row]  # the trials on the Pareto front, by failures, restarts, removal time
    recommended: Row | None  # None: keep the current setting
    why: str
    current_on_front: bool = False  # no trial beats the current setting
    reasons: list[str] = field(default_factory=list)  # per recommended value: the figure it decided
    worse: list[str] = field(default_factory=list)  # objectives the recommendation is worse on
    # Values the search changed that made no figure materially worse: put back as they are now.
    put_back: list[str] = field(default_factory=list)
    # What check finds on the probes' handlers, which no timing changes (its own fix does).
    handlers: list[str] = field(default_factory=list)


def storage_url(given: str | None) -> str:
    """The storage URL: ``given``, or SQLite at ./.probesim/tune.db (its folder made)."""
    if given is not None:
        return given
    folder = Path(DEFAULT_STORAGE).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot make the study's folder: {e.strerror}", file=str(folder)) from None
    return f"sqlite:///{DEFAULT_STORAGE}"


def study_name(inputs: TuneInputs, seed: int) -> str:
    """A name that changes with anything that changes the trials' figures."""
    sc = inputs.scenario.to_doc(exclude_none=False)  # a traffic series' rows too: a new CSV, a new study
    fixes = [c.model_dump(mode="json", exclude_none=True) for c in inputs.corrections]
    blob = json.dumps([SPACE_VERSION, seed, inputs.given, inputs.workload.name, sc, fixes], sort_keys=True)
    return f"probesim-tune-{inputs.workload.name}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def _seed_for(seed: int, number: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{number}".encode()).digest()[:4], "big")


def _sampler(seed: int, number: int) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(
            seed=_seed_for(seed, number),
            n_startup_trials=STARTUP_TRIALS,
            multivariate=True,
            group=True,
            constant_liar=False,
        )


def open_study(name: str, storage: str) -> Kept:
    """The study in its storage, and the in-memory copy the search works on (tune/store.py)."""
    from sqlalchemy.exc import SQLAlchemyError

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        where = optuna.storages.get_storage(storage)
        saved = optuna.create_study(
            study_name=name,
            storage=where,
            directions=["minimize"] * len(OBJECTIVES),
            load_if_exists=True,
        )
        return Kept(saved, where)
    except (ValueError, ImportError, optuna.exceptions.StorageInternalError, SQLAlchemyError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(
            f"cannot open the study's storage: {why} (give an Optuna storage URL, e.g. "
            "sqlite:///tune.db in an existing folder)",
            field=f"--storage {storage}",
        ) from None


def _check_and_flush(passes: Callable[[Setting], bool], s: Setting, into: list[bool], kept: Kept) -> None:
    """A trial's work in the main process while the workers simulate it: the trials finished
    before it written to the storage, and whether check passes its setting (into ``into``)."""
    kept.flush()
    into.append(passes(s))


def run(
    inputs: TuneInputs,
    trials: int,
    seed: int,
    storage: str,
    name: str,
    executor: Executor,
    timeout_s: float | None = None,
    on_trial: Callable[[int, Row], None] | None = None,
) -> Outcome:
    """Add up to ``trials`` trials to the study (fewer when ``timeout_s`` runs out), and read
    its front."""
    space = Space(inputs.workload, inputs.rule, inputs.added, inputs.app, inputs.handlers)
    current = space.current()
    # Loaded here, before local workers fork, the capacity model's kernels are theirs from their
    # first run, instead of each worker's once its numpy forms have run KERNEL_STEPS steps.
    per_setting = sum(r.scenario.spec.duration // r.scenario.spec.step for r in plan(inputs, space, current))
    kernels(per_setting * trials)
    kept = open_study(name, storage)
    study = kept.study
    # What check warns of today that is not about probes (a missing CPU request, say): no probe
    # setting causes or cures it. A patch passes when check warns of nothing else: no warning on
    # a probe, none new; on a workload clean but for its probes, check --fail-on warning passes.
    # So is a finding on a probe's handler (its path, port or command), which no timing changes:
    # said beside the recommendation, with check's fix for it.
    found_now = check_findings(inputs, space, current)
    # Those on a probe whose check the tuner changes (check's own fix of it) are the tuner's to
    # cure: a setting that puts that check back is refused, as check would warn of it again.
    changed = [(c, f".{fname}") for c, fields in space.handlers.items() for fname in fields]
    handlers = {
        f
        for f in found_now
        if f[0] in HANDLER_RULES and not any(f[2] == c and at in f".{f[3]}" for c, at in changed)
    }
    # The outlier detection is tuned with the probes where the workload has a DestinationRule:
    # what check says of it is the tuner's to cure, as a probe's timing is.
    tuned = OUTLIER_RULES if inputs.rule is not None else frozenset()
    warned = {f for f in found_now if not about_probes(f) and f[0] not in tuned} | handlers

    def passes(s: Setting) -> bool:
        return check_findings(inputs, space, s) <= warned

    fix = rules_fix(inputs, space)
    # With the probes the tuner adds, as check's fix has them, and the checks its fixes give.
    start_from = space.with_handlers(space.with_added(current))
    seeds = [space.repair(start_from), *([fix] if fix else []), space.repair(search.api_defaults(start_from))]
    seeds = list({setting_key(s): s for s in seeds}.values())
    read: dict[int, search.Done] = {}
    start = time.monotonic()
    added = 0
    timed_out = False
    try:
        for _ in range(trials):
            if timeout_s is not None and time.monotonic() - start >= timeout_s:
                timed_out = True
                break
            every = study.get_trials(deepcopy=False)
            for t in every:
                if t.state == optuna.trial.TrialState.COMPLETE and t.number not in read:
                    read[t.number] = search.read(t, passes)
            done = [read[n] for n in sorted(read)]
            if not any(t.state == optuna.trial.TrialState.WAITING for t in every):
                nxt = search.next_trial(space, done, len(every), seeds)
                if nxt is not None:
                    study.enqueue_trial(nxt[0], user_attrs=nxt[1])
            study.sampler = _sampler(seed, len(every))
            trial = study.ask()
            eligible: list[bool] = []
            try:
                setting = space.sample(trial)
                known = next(
                    (d.figures for d in done if setting_key(d.setting) == setting_key(setting)), None
                )
                meanwhile = functools.partial(_check_and_flush, passes, setting, eligible, kept)
                figures = known or evaluate(plan(inputs, space, setting), executor, meanwhile)
                if not eligible:
                    meanwhile()
            except BaseException:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                kept.keep(trial.number)
                raise
            trial.set_user_attr("setting", {"probes": setting.probes, "outlier": setting.outlier})
            trial.set_user_attr("figures", figures.to_json())
            trial.set_user_attr("eligible", eligible[0])
            study.tell(trial, list(figures.values()))
            kept.keep(trial.number)
            added += 1
            if on_trial is not None:
                on_trial(added, Row(trial.number, setting, figures))
    finally:
        kept.flush()
    done_trials = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    rows = [search.read(t, passes) for t in done_trials]
    # A setting's figures are those of a trial with the same setting (the simulation is
    # deterministic): the current one is usually the first trial, and a value put back by
    # justify often gives one tried already.
    tried = {setting_key(d.setting): d.figures for d in rows}

    def figures_of(s: Setting) -> Figures:
        got = tried.get(setting_key(s))
        return got if got is not None else evaluate(plan(inputs, space, s), executor)

    now = Row(None, current, figures_of(current))
    # Only settings whose patch check passes are offered: the front is theirs, and the current's
    # when check passes it too (a current setting check warns of on a probe — no readiness probe
    # where a Service sends traffic, a liveness that kills on one miss — is not kept for its
    # figures: the best setting that passes is recommended instead).
    offered = [Row(d.number, d.setting, d.figures) for d in rows if d.eligible]
    current_passes = passes(current)
    front = pareto([now, *offered] if current_passes or not offered else offered)
    recommended, why = recommend(front, current=current)
    if not offered and not current_passes:
        refused = sorted({f"{f[0]} {f[4]}" for f in check_findings(inputs, space, rows[-1].setting) - warned})
        why = (
            "no trial's patch passes probesim check (the last was refused for "
            + ("; ".join(refused) or "a probe warning")
            + "): keep the current setting for now, and see probesim check's own fix for it"
        )
    trials_front = [r for r in front if r.number is not None]
    on_front = len(trials_front) < len(front)
    put_back: list[str] = []
    if recommended is not None:  # the smallest change: values that make no difference put back
        # Put back to what the user has, or for a probe the tuner adds, to check's fix's timings
        # (the policy's defaults where the user set none).
        m = minimal(inputs, space, reference(space, current, fix), recommended.setting, recommended.figures,
                    executor, figures_of, passes, changes, revert)  # fmt: skip
        put_back = m.put_back
        if not changes(current, m.setting):
            recommended, why = (
                None,
                (
                    "every value the search changed makes no figure materially worse put back as it is now, "
                    "under two seeds: keep the current setting"
                ),
            )
        else:
            recommended = Row(recommended.number, m.setting, m.figures)
    reasons = (
        justify(inputs, space, recommended, now, executor, figures_of, passes, fix)
        if recommended is not None
        else []
    )
    worse = worse_than(recommended.figures, now.figures) if recommended is not None else []
    return Outcome(
        name,
        storage,
        len(done_trials),
        added,
        timed_out,
        now,
        trials_front,
        recommended,
        why,
        on_front,
        reasons,
        worse,
        put_back,
        sorted(f"{f[0]} {f[4]}" for f in handlers),
    )


def _dominates(a: Row, b: Row) -> bool:
    va, vb = a.figures.values(), b.figures.values()
    return all(x <= y for x, y in zip(va, vb, strict=True)) and va != vb


def pareto(rows: list[Row]) -> list[Row]:
    """The rows no other row beats on one objective without losing on another (the current
    setting among them when nothing beats it), by failures, restarts, removal time, trial."""
    front = [r for r in rows if not any(_dominates(o, r) for o in rows)]
    return sorted(front, key=lambda r: (*r.figures.values(), -1 if r.number is None else r.number))


def recommend(
    front: list[Row], passes: Callable[[Row], bool] | None = None, current: Setting | None = None
) -> tuple[Row | None, str]:
    """The front's setting with the fewest failed requests (within the slack of the fewest:
    search.slack_of), then the fewest needless restarts and flaps, then the least spent of the
    budgets for a hung pod's recovery, a new pod's time to Ready and probe load
    (``budget_cost``), among those whose patch ``passes`` (probesim check: the current setting
    always does, as it is what is deployed); None when that is the current setting. Ties go to
    the current setting, then to the patch that changes fewest values (from ``current``), then
    by the setting itself: never by trial number, which depends on the seed."""
    order_by = search.ranked([r.figures for r in front])
    fewest, slack = order_by.fewest, order_by.slack
    # The user's own scenario first (no scenario: every setting fails 0 there).
    close = [r for r in front if r.figures.scenario_failed <= order_by.fewest_own + order_by.slack_own]
    least = min(r.figures.restarts + r.figures.flaps for r in close)
    own = any(x.kind == "scenario" for x in front[0].figures.runs)

    def changed(r: Row) -> int:
        return len(changes(current, r.setting)) if current is not None else 0

    order = sorted(
        close,
        key=lambda r: order_by.key(r.figures, (r.number is not None, changed(r), setting_key(r.setting))),
    )
    best = next((r for r in order if r.number is None or passes is None or passes(r)), order[0])
    if best.number is None:
        return None, (
            f"no trial beats the current setting on failed requests (within {slack}), then needless "
            "restarts, then the budgets (a hung pod out within 30 s and replicas back within 90 s, Ready "
            "within 10 s, a probe a second) with a patch probesim check passes: keep it"
        )
    first = (
        f"the fewest failed requests in your scenario (within {order_by.slack_own} of the fewest, "
        f"{order_by.fewest_own}), then over every run"
        if own
        else "the fewest failed requests"
    )
    return best, (
        f"of the Pareto front, {first} (within {slack} of the fewest, {fewest}), "
        f"then the fewest needless restarts and readiness flaps ({least}), then the least spent of the "
        "budgets: a hung "
        "pod out of service within 30 s and its replicas all Ready again within 90 s, a new pod "
        "Ready within 10 s of its app answering, a probe a second per pod; its patch passes "
        "probesim check --fail-on warning"
    )


def to_json(o: Outcome, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    def row(r: Row) -> dict[str, Any]:
        return {
            "trial": r.number,
            "setting": {"probes": r.setting.probes, "outlierDetection": r.setting.outlier},
            "figures": r.figures.to_json(),
        }

    return {
        "study": o.study,
        "storage": o.storage,
        "trials": o.trials,
        "added": o.added,
        "timedOut": o.timed_out,
        "current": row(o.current),
        "front": [row(r) for r in o.front],
        "currentOnFront": o.current_on_front,
        "recommended": None if o.recommended is None else row(o.recommended),
        "why": o.why,
        "reasons": o.reasons,
        "putBack": o.put_back,
        "handlerFindings": o.handlers,
        "worseThanCurrent": o.worse,
        **(extra or {}),
    }
