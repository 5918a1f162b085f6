"""The kubelet's rules for a container's life: CrashLoopBackOff exactly as ``doBackOff`` does it,
the restart decision by restartPolicy, and the shortest grace period (reference/kubelet.md §3).
Elementwise over numpy arrays (the engine) or for one container (the lab: plain values).

Back-off per container: no entry until a start finds an exited instance; a start is refused
while ``now - finishedAt < backoff``; each allowed restart doubles the entry (10 s → 300 s) unless
the exited instance finished more than 600 s after the entry's last update, which resets it.
So the waits are 0, 10, 20, 40 … 300 s, measured from the previous instance's finish (§3.6).
"""

from __future__ import annotations

from typing import Any

import numpy as np

INITIAL_BACKOFF = 10_000
MAX_BACKOFF = 300_000
BACKOFF_RESET = 600_000  # 2 × max in client-go; a flat 10 min in newer kubelets (§3.7)
MIN_GRACE = 2_000  # minimumGracePeriodInSeconds (§2.4.32)


def back_off(now: Any, finished: Any, backoff: Any, updated: Any) -> tuple[Any, Any]:
    """``doBackOff``: may a container start at ``now``, given the exit it checks (``finished``)
    and its back-off entry (``backoff`` ms, 0 for none, last ``updated``)? Returns whether it
    may, and the entry after a start (``Next``), elementwise over arrays (the engine) or for one
    container (the lab: 0-d arrays)."""
    now, finished, backoff, updated = (np.asarray(x, np.int64) for x in (now, finished, backoff, updated))
    expired = (backoff > 0) & (finished - updated > BACKOFF_RESET)
    allowed = ~((backoff > 0) & ~expired & (now - finished < backoff))
    later = np.where((backoff == 0) | expired, INITIAL_BACKOFF, np.minimum(2 * backoff, MAX_BACKOFF))
    return allowed, np.where(allowed, later, backoff)


def restarts(always: Any, on_failure: Any, code: Any, deleting: Any) -> Any:
    """Whether a container that exited with ``code`` is restarted: restartPolicy Always does,
    OnFailure when the code is not 0, Never does not, and none in a pod being deleted
    (elementwise; ``always`` and ``on_failure`` say the policy)."""
    return ~np.asarray(deleting) & (np.asarray(always) | (np.asarray(on_failure) & (np.asarray(code) != 0)))


def restarts_with(policy: str, code: int, deleting: bool = False) -> bool:
    """``restarts`` for one container of a pod whose restartPolicy is ``policy``."""
    return bool(restarts(policy == "Always", policy == "OnFailure", code, deleting))
