"""What the API server holds of each pod that clients' endpoints follow: whether it was
created (admitted), whether it has a deletionTimestamp, whether it is gone, and its Ready
condition as clients see it — ``endpointDelay`` after the kubelet set it. ``version`` changes
whenever any of it may have, so that the traffic recomputes a route's endpoints only then.
Also which pods sit on a failed node (``unreachable``). The run's phases write it; the traffic,
the record and the HPA's metrics read it."""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

B = npt.NDArray[np.bool_]


class PodStatus:
    def __init__(self, n: int, endpoint_delay: int) -> None:
        self.admitted = np.zeros(n, bool)
        self.deleting = np.zeros(n, bool)  # has a deletionTimestamp
        self.gone = np.zeros(n, bool)  # all containers stopped: removed from the API
        # On a failed node (crashed or cut off): nothing reaches the pod, its kubelet reports
        # nothing (engine/nodes.py).
        self.unreachable = np.zeros(n, bool)
        self.unreachable_n = 0
        self.version = 0  # bumps whenever what traffic sees may have changed
        self.endpoint_delay = endpoint_delay
        # Ready as set at each change (time, every pod's Ready), oldest first: what clients see
        # is the last entry at least endpointDelay old.
        self.visible_history: deque[tuple[int, B]] = deque([(-endpoint_delay - 1, np.zeros(n, bool))])

    def cut_off(self, pods: npt.NDArray[np.int64]) -> None:
        """Pods whose node failed."""
        self.unreachable[pods] = True
        self.unreachable_n = int(self.unreachable.sum())
        self.version += 1

    def reconnect(self, pods: npt.NDArray[np.int64]) -> None:
        """Pods whose node is back."""
        self.unreachable[pods] = False
        self.unreachable_n = int(self.unreachable.sum())
        self.version += 1

    def ready_set(self, t: int, ready: B) -> None:
        """The pods' Ready conditions changed at ``t`` (``ready``: every pod's, kept as given)."""
        self.visible_history.append((t, ready))

    def visible_ready(self, t: int) -> B:
        """Pod Ready as clients see it, ``endpointDelay`` late."""
        cutoff = t - self.endpoint_delay
        h = self.visible_history
        while len(h) > 1 and h[1][0] <= cutoff:
            h.popleft()
            self.version += 1
        return h[0][1]
