"""Consecutive-result threshold logic shared by the seed-000 tick model and the engine.

The kubelet keeps, per probe worker, the last result and how many times in a row it was seen
(``lastResult`` / ``resultRun``); a verdict changes only once ``failureThreshold`` failures or
``successThreshold`` successes have been seen in a row (reference/kubelet.md §2.2.18). The seed's
``gate`` (ok / ng counters) is the same rule written differently. Both callers use these
functions: the engine on arrays of workers, the tick model on one worker (0-d arrays).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def next_run(last_passed: npt.ArrayLike, run: npt.ArrayLike, passed: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Length of the current streak after recording ``passed``.

    A result equal to the previous one extends the streak; a different one starts a new streak
    of length 1.
    """
    return np.where(np.equal(last_passed, passed), np.add(run, 1), 1).astype(np.int64)


def reaches_threshold(
    passed: npt.ArrayLike,
    run: npt.ArrayLike,
    success_threshold: npt.ArrayLike,
    failure_threshold: npt.ArrayLike,
) -> npt.NDArray[np.bool_]:
    """Whether a streak of ``run`` results equal to ``passed`` is long enough to be the verdict.

    Thresholds below 1 count as 1, as in the seed (the API server rejects them anyway).
    """
    need = np.where(passed, np.maximum(success_threshold, 1), np.maximum(failure_threshold, 1))
    return np.asarray(np.greater_equal(run, need))
