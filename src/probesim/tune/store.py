"""The study worked on in memory and kept in its storage a trial at a time.

Optuna's RDB storage writes every step of a trial in a transaction of its own: the trial made,
each of its ten or so parameters, each user attribute, its values and state; with SQLite's
commits that was about 60 ms a trial in the main process, while the workers waited (12 of the
78 s of a 200-trial study). The search runs on an in-memory copy of the study instead (its
trials read from the storage as the run starts, the sampler reading the same trials, numbers
and parameters as it would there), and each finished trial, complete or failed, is added to the
storage in one transaction. A trial the storage already holds — one enqueued and left waiting
by an interrupted run, which this run takes first — is written there step by step, as before.

A finished trial is written while the next one simulates (``keep`` then ``flush``, which the
search calls once the next trial's runs are handed to the workers, and once more as it ends,
however it ends): the writing, about 15 ms a trial, is then off the path the workers wait on. A
run killed outright (SIGKILL) loses at most its last finished trial.

What changes: trials another process adds to the same study while this one runs are not seen
by it until its next run (trials run one after another in one process anyway).
"""

from __future__ import annotations

import optuna
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial, TrialState


class Kept:
    """The storage's study (``saved``) and its in-memory copy (``study``), which the search asks
    and tells; ``keep`` marks a finished trial to write back, ``flush`` writes those marked."""

    def __init__(self, saved: optuna.Study, storage: BaseStorage) -> None:
        self.saved = saved
        self.storage = storage
        self.study_id = storage.get_study_id_from_name(saved.study_name)
        held = saved.get_trials(deepcopy=False)
        self.held = len(held)  # trials the storage holds (numbers below are its own)
        self.study = optuna.create_study(
            storage=optuna.storages.InMemoryStorage(),
            study_name=saved.study_name,
            directions=saved.directions,
        )
        self.study.add_trials(held)
        self.pending: list[int] = []

    def keep(self, number: int) -> None:
        """Trial ``number`` of the copy, finished, to be written at the next ``flush``."""
        self.pending.append(number)

    def flush(self) -> None:
        """Every trial kept since the last flush, into the storage, in the order kept."""
        while self.pending:
            self._write(self.pending[0])
            del self.pending[0]

    def _write(self, number: int) -> None:
        t = self.study.get_trials(deepcopy=False)[number]
        if number >= self.held:
            self.saved.add_trial(t)
            self.held += 1
        else:
            self._finish_held(number, t)

    def _finish_held(self, number: int, t: FrozenTrial) -> None:
        """A trial the storage holds waiting, taken and finished here: its steps written there."""
        st = self.storage
        tid = st.get_trial_id_from_study_id_trial_number(self.study_id, number)
        st.set_trial_state_values(tid, TrialState.RUNNING)
        for name, value in t.params.items():
            dist = t.distributions[name]
            st.set_trial_param(tid, name, dist.to_internal_repr(value), dist)
        for key, value in t.user_attrs.items():
            st.set_trial_user_attr(tid, key, value)
        st.set_trial_state_values(tid, t.state, t.values)
