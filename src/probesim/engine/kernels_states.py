"""The latency states' compiled kernels (engine/distributions.py's maths): the requests grouped by
state (``state_groups``, ``state_bits``), the timeout draws' per-state chance
(``spread_states``) and the quantiles read off a CDF on the grid (``grid_quantiles``, with
numpy's ``searchsorted``). Each is the numpy form it replaces written as loops, to the bit
(engine/kernels.py says what that takes).
"""

from __future__ import annotations

import numpy as np

from probesim.engine.kernels_base import F64, I64, B, jit, maximum, minimum
from probesim.engine.series_names import P50_AT


@jit
def state_groups(d: F64, s: F64, sigma: F64) -> tuple[I64, I64]:
    """engine/distributions.py's state_groups: requests keyed on (d, s) to 0.1 ms and sigma to 0.001,
    in key order, each key's first request and, per request, its key's index."""
    n = d.size
    key = np.empty(n, np.int64)
    for i in range(n):
        dk = np.rint(d[i] * 10)
        sk = np.rint(s[i] * 10)
        dk = minimum(dk, 16777215.0)  # 2**24 - 1
        sk = minimum(sk, 16777215.0)
        key[i] = (np.int64(dk) << 36) | (np.int64(sk) << 12) | np.int64(np.rint(sigma[i] * 1000))
    # A few states (the usual case): kept sorted as they come, each found by bisection.
    few = 16
    uniq = np.empty(few, np.int64)
    first_of = np.empty(few, np.int64)
    count = 0
    for i in range(n):
        x = key[i]
        lo, hi = 0, count
        while lo < hi:
            mid = (lo + hi) // 2
            if uniq[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        if lo < count and uniq[lo] == x:
            continue
        if count == few:
            count = -1
            break
        for j in range(count, lo, -1):
            uniq[j] = uniq[j - 1]
            first_of[j] = first_of[j - 1]
        uniq[lo] = x
        first_of[lo] = i
        count += 1
    if count >= 0:
        inv = np.empty(n, np.int64)
        for i in range(n):
            x = key[i]
            lo, hi = 0, count
            while lo < hi:
                mid = (lo + hi) // 2
                if uniq[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            inv[i] = lo
        return first_of[:count].copy(), inv
    order = np.argsort(key, kind="mergesort")
    inv = np.empty(n, np.int64)
    count = 0
    for j in range(n):
        if j == 0 or key[order[j]] != key[order[j - 1]]:
            count += 1
        inv[order[j]] = count - 1
    first = np.empty(count, np.int64)
    g = 0
    for j in range(n):
        if j == 0 or key[order[j]] != key[order[j - 1]]:
            first[g] = order[j]
            g += 1
    return first, inv


@jit
def state_bits(d: F64, s: F64, sigma: F64, first: I64, inv: I64) -> tuple[bool, I64]:
    """Whether every request has its state's first request's (d, s, sigma) to the bit, and
    those bits per state (3 × states, as int64)."""
    db, sb, gb = d.view(np.int64), s.view(np.int64), sigma.view(np.int64)
    rep = np.empty((3, first.size), np.int64)
    for j in range(first.size):
        f = first[j]
        rep[0, j], rep[1, j], rep[2, j] = db[f], sb[f], gb[f]
    for i in range(d.size):
        j = inv[i]
        if db[i] != rep[0, j] or sb[i] != rep[1, j] or gb[i] != rep[2, j]:
            return False, rep
    return True, rep


@jit
def spread_states(late: F64, inv: I64) -> tuple[F64, I64, int]:
    """distributions.timed_out's per-request chance of a timeout from its state's (``late``, clipped
    to [0, 1] as np.clip does), and the requests to draw for: which is 0 when no state has a
    chance above 0, 1 when all have (every request drawn), else 2 and the requests of those."""
    states = late.size
    p_state = np.empty(states)
    some = 0
    for j in range(states):
        x = minimum(maximum(late[j], 0.0), 1.0)
        p_state[j] = x
        if x != 0.0:
            some += 1
    n = inv.size
    if some == 0:
        return np.empty(0), np.empty(0, np.int64), 0
    p = np.empty(n)
    m = 0
    for i in range(n):
        p[i] = p_state[inv[i]]
        if p[i] != 0.0:
            m += 1
    if some == states:
        return p, np.empty(0, np.int64), 1
    draw = np.empty(m, np.int64)
    e = 0
    for i in range(n):
        if p[i] != 0.0:
            draw[e] = i
            e += 1
    return p, draw, 2


@jit
def _less(a: float, b: float) -> bool:
    """numpy's sort order for floats: nan after every number."""
    return a < b or (b != b and a == a)


@jit
def searchsorted(a: F64, keys: F64) -> I64:
    """np.searchsorted(a, keys) (side left), as numpy's binary search runs it: the bounds kept
    from the previous key when keys ascend, so the same index even where ``a`` is not sorted."""
    n = a.size
    out = np.empty(keys.size, np.int64)
    lo, hi = 0, n
    last = keys[0] if keys.size else 0.0
    for i in range(keys.size):
        key = keys[i]
        if _less(last, key):
            hi = n
        else:
            lo = 0
            hi = hi + 1 if hi < n else n
        last = key
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if _less(a[mid], key):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out


@jit
def grid_quantiles(mix: F64, qs: F64, grid: F64) -> F64:
    """engine/distributions.py's grid_quantiles: quantiles read off a CDF on ``grid``, interpolated
    between grid points."""
    at = searchsorted(mix, qs)
    out = np.empty(qs.size)
    g = grid.size
    for j in range(qs.size):
        i = at[j]
        if i >= g:
            out[j] = grid[g - 1]
        elif i == 0:
            out[j] = grid[0]
        else:
            lo, hi = mix[i - 1], mix[i]
            frac = 0.0 if hi <= lo else (qs[j] - lo) / (hi - lo)
            out[j] = grid[i - 1] + frac * (grid[i] - grid[i - 1])
    return out


@jit
def _slot(index: I64, a: int, b: int, c: int, e: int) -> np.int64:
    """Where a key (four int64 words) starts its probe in a memo's index (engine/state_memo.py)."""
    h = np.uint64(a) * np.uint64(0x9E3779B97F4A7C15)
    h ^= np.uint64(b) * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= np.uint64(c) * np.uint64(0x165667B19E3779F9)
    h ^= np.uint64(e) * np.uint64(0x27D4EB2F165667C5)
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(index.size - 1))


@jit
def find(keys: I64, index: I64, a: int, b: int, c: int, e: int) -> int:
    """The entry of a memo (engine/state_memo.py) with key (a, b, c, e), or -1."""
    mask = index.size - 1
    s = _slot(index, a, b, c, e)
    while True:
        j = index[s]
        if j < 0:
            return -1
        if keys[j, 0] == a and keys[j, 1] == b and keys[j, 2] == c and keys[j, 3] == e:
            return j
        s = (s + 1) & mask


@jit
def memo_insert(keys: I64, index: I64, lo: int, hi: int) -> None:
    """Index a memo's entries lo..hi-1 (their keys in ``keys``)."""
    mask = index.size - 1
    for j in range(lo, hi):
        s = _slot(index, keys[j, 0], keys[j, 1], keys[j, 2], keys[j, 3])
        while index[s] >= 0:
            s = (s + 1) & mask
        index[s] = j


@jit
def step_quantiles(
    step_cdf: F64, latency_cdf: F64, ramp_cdf: F64, ramp_open: B, limits: F64, grid: F64, out: I64, k: int
) -> None:
    """engine/traffic.py's _quantiles for every route (rows of ``step_cdf``): this step's CDF
    added to the run's (and the start-up ramp's while open), and its p50, p95, p99 and max
    (into the route's series block ``out``, whole ms, at most the route's timeout, rounded half
    to even as Python's round)."""
    g = grid.size
    qs = np.empty(4)
    qs[0], qs[1], qs[2] = 0.5, 0.95, 0.99
    mix = np.empty(g)
    for ri in range(step_cdf.shape[0]):
        total = step_cdf[ri, g - 1]
        if total <= 0:
            continue
        for j in range(g):
            latency_cdf[ri, j] += step_cdf[ri, j]
        if ramp_open[ri]:
            for j in range(g):
                ramp_cdf[ri, j] += step_cdf[ri, j]
        for j in range(g):
            mix[j] = step_cdf[ri, j] / total
        qs[3] = 1 - 0.5 / max(np.rint(total), 1.0)
        vals = grid_quantiles(mix, qs, grid)
        limit = limits[ri]
        for j in range(4):
            v = vals[j]
            out[ri, P50_AT + j, k] = np.int64(np.rint(limit if limit < v else v))
