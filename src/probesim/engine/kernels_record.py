"""The run record's compiled kernels: a step's CPU series per workload (``record_cpu``:
engine/recording.py's). The numpy form written as loops, to the bit (engine/kernels.py says
what that takes).
"""

from __future__ import annotations

import numpy as np

from probesim.engine.kernels_base import F64, I64, B, jit, pairwise


@jit
def record_cpu(
    k: int,
    container_pod: I64,
    n_pods: int,
    active: I64,
    used_m: F64,
    throttled: B,
    idle: F64,
    wl_flat: I64,
    wl_ends: I64,
    rows: I64,
    out: I64,
) -> None:
    """Recorder.record_cpu: per workload (its pods ``wl_flat`` up to ``wl_ends``; its series
    ``out[rows[i]]``), the CPU its pods used this step (the sum and the busiest pod, rounded
    half to even, in millicores) and how many were throttled. ``used_m``: the ``active``
    containers' CPU; ``idle``: every container's own, or none."""
    per_pod = np.zeros(n_pods)
    for j in range(active.size):  # (np.bincount's weights, added in order)
        per_pod[container_pod[active[j]]] += used_m[j]
    if idle.size:
        extra = np.zeros(n_pods)
        for c in range(idle.size):
            extra[container_pod[c]] += idle[c]
        for p in range(n_pods):
            per_pod[p] = per_pod[p] + extra[p]
    hot = np.zeros(n_pods, np.bool_)
    for j in range(active.size):
        c = active[j]
        if throttled[c]:
            hot[container_pod[c]] = True
    lo = 0
    for i in range(wl_ends.size):
        hi = wl_ends[i]
        n = hi - lo
        vals = np.empty(n)
        top = 0.0
        count = 0
        for e in range(n):
            p = wl_flat[lo + e]
            vals[e] = per_pod[p]
            if e == 0 or per_pod[p] > top:  # (never nan: the numpy form's round would raise)
                top = per_pod[p]
            if hot[p]:
                count += 1
        r = rows[i]
        out[r, 0, k] = np.int64(np.rint(pairwise(vals, 0, n)))
        out[r, 1, k] = np.int64(np.rint(top)) if n else 0
        out[r, 2, k] = count
        lo = hi
