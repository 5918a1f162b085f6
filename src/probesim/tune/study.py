"""The search: an Optuna study kept in a database, one trial at a time, and its answer.

The sampler is Optuna's multi-objective TPE (multivariate, grouped, so a startup probe that is
added or not keeps its own parameters apart), the first ``STARTUP_TRIALS`` trials drawn at
random. It is made afresh for every trial with a seed derived from ``--seed`` and the trial's
number: what a trial samples depends only on the seed and the trials already in the study, so a
study grown in two runs of 5 trials holds the same trials as one grown in a single run of 10.
Trials run one after another (the runs inside a trial run in parallel), which keeps that true
whatever the number of workers.

The study lives in Optuna's RDB storage (SQLite at ``.probesim/tune.db`` unless ``--storage``
names another URL), under a name derived from what was tuned: the scenario and objects as
loaded, the workload, the seed and the version of the search space. The same inputs find the
same study and add to it; changed manifests start a new one.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from probesim.errors import InputError
from probesim.tune.inputs import TuneInputs
from probesim.tune.objective import Executor, Figures, evaluate, plan
from probesim.tune.space import Setting, Space

SPACE_VERSION = 1  # bump when the space or the objectives change: older studies are not mixed in
STARTUP_TRIALS = 10
DEFAULT_TRIALS = 24
DEFAULT_STORAGE = ".probesim/tune.db"
FAILURE_TOLERANCE = 0.01  # failures within 1 % (or 5 requests) of the fewest count as equal
FAILURE_SLACK = 5


@dataclass(frozen=True)
class Row:
    number: int | None  # the trial's; None for the current setting
    setting: Setting
    figures: Figures


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
    sc = inputs.scenario.model_dump(mode="json", by_alias=True)
    blob = json.dumps([SPACE_VERSION, seed, inputs.given, inputs.workload.name, sc], sort_keys=True)
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


def open_study(name: str, storage: str) -> optuna.Study:
    from sqlalchemy.exc import SQLAlchemyError

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return optuna.create_study(
            study_name=name,
            storage=storage,
            directions=["minimize"] * 3,
            load_if_exists=True,
        )
    except (ValueError, ImportError, optuna.exceptions.StorageInternalError, SQLAlchemyError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(
            f"cannot open the study's storage: {why} (give an Optuna storage URL, e.g. "
            "sqlite:///tune.db in an existing folder)",
            field=f"--storage {storage}",
        ) from None


def _row(t: optuna.trial.FrozenTrial) -> Row:
    s = t.user_attrs["setting"]
    return Row(t.number, Setting(s["probes"], s["outlier"]), Figures.from_json(t.user_attrs["figures"]))


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
    space = Space(inputs.workload, inputs.rule)
    current = space.current()
    study = open_study(name, storage)
    start = time.monotonic()
    added = 0
    timed_out = False
    for _ in range(trials):
        if timeout_s is not None and time.monotonic() - start >= timeout_s:
            timed_out = True
            break
        study.sampler = _sampler(seed, len(study.get_trials(deepcopy=False)))
        trial = study.ask()
        try:
            setting = space.sample(trial)
            figures = evaluate(plan(inputs, space, setting), executor)
        except BaseException:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            raise
        trial.set_user_attr("setting", {"probes": setting.probes, "outlier": setting.outlier})
        trial.set_user_attr("figures", figures.to_json())
        study.tell(trial, list(figures.values()))
        added += 1
        if on_trial is not None:
            on_trial(added, Row(trial.number, setting, figures))
    now = Row(None, current, evaluate(plan(inputs, space, current), executor))
    done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    front = pareto([now, *(_row(t) for t in done)])
    recommended, why = recommend(front)
    trials_front = [r for r in front if r.number is not None]
    on_front = len(trials_front) < len(front)
    return Outcome(name, storage, len(done), added, timed_out, now, trials_front, recommended, why, on_front)


def _dominates(a: Row, b: Row) -> bool:
    va, vb = a.figures.values(), b.figures.values()
    return all(x <= y for x, y in zip(va, vb, strict=True)) and va != vb


def pareto(rows: list[Row]) -> list[Row]:
    """The rows no other row beats on one objective without losing on another (the current
    setting among them when nothing beats it), by failures, restarts, removal time, trial."""
    front = [r for r in rows if not any(_dominates(o, r) for o in rows)]
    return sorted(front, key=lambda r: (*r.figures.values(), -1 if r.number is None else r.number))


def recommend(front: list[Row]) -> tuple[Row | None, str]:
    """The front's setting with the fewest failed requests (within 1 % or 5 requests of the
    fewest), then the fewest needless restarts, then the fastest hung-pod removal (the current
    setting first on a tie); None when that is the current setting."""
    fewest = min(r.figures.failed for r in front)
    slack = max(FAILURE_SLACK, int(FAILURE_TOLERANCE * fewest))
    close = [r for r in front if r.figures.failed <= fewest + slack]
    best = min(
        close,
        key=lambda r: (r.figures.restarts, r.figures.detection_s, r.figures.failed, r.number is not None,
                       r.number or 0),
    )  # fmt: skip
    if best.number is None:
        return None, (
            "no trial beats the current setting on failed requests (within "
            f"{slack}), then needless restarts, then hung-pod removal: keep it"
        )
    return best, (
        f"of the Pareto front, the fewest failed requests (within {slack} of the fewest, {fewest}), "
        "then the fewest needless restarts, then the fastest removal of a hung pod"
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
        **(extra or {}),
    }
