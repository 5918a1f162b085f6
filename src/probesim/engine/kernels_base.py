"""numpy's semantics written as numba loops, shared by the compiled kernels
(engine/kernels_capacity.py, engine/kernels_serving.py, engine/kernels_states.py): the ``jit``
they are compiled with (numba's on-disk cache, numpy's error model), ``np.minimum`` and
``np.maximum`` as they propagate nan, and sums in numpy's order (``pairwise``, numpy's
``pairwise_sum`` to the bit; ``column_sums``, ``x.sum(axis=0)``).

numba compiles these into each kernel that calls them, and its cache checks only the kernel's
own source file: engine/kernels.py's ``cached()`` takes a kernel compiled before this file
changed as not cached (and ``forget_stale()`` has it compiled again).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

TWO53 = 9007199254740992.0  # 2**53: floor(min(x, 2**53)) as numpy computes it
PW_BLOCKSIZE = 128  # numpy's pairwise summation block

jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@jit
def minimum(a: float, b: float) -> float:
    """np.minimum: nan if either is."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


@jit
def maximum(a: float, b: float) -> float:
    """np.maximum: nan if either is."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@jit
def _block(a: F64, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``a[lo:lo + n]`` for n ≤ its block (eight partial sums)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        j = lo + i
        r0 += a[j]
        r1 += a[j + 1]
        r2 += a[j + 2]
        r3 += a[j + 3]
        r4 += a[j + 4]
        r5 += a[j + 5]
        r6 += a[j + 6]
        r7 += a[j + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@jit
def pairwise(a: F64, lo: int, n: int) -> float:
    """numpy's pairwise sum of ``a[lo:lo + n]`` (its ``pairwise_sum``, to the bit): blocks of
    PW_BLOCKSIZE, halves above (split at a multiple of 8) added as numpy's recursion adds them.
    Written with a stack, not recursion: numba's cache crashes on loading recursive functions."""
    if n <= PW_BLOCKSIZE:
        return _block(a, lo, n)
    seg_lo = np.empty(64, np.int64)
    seg_n = np.empty(64, np.int64)
    seg_state = np.empty(64, np.int64)
    vals = np.empty(64)
    sp = 1
    seg_lo[0], seg_n[0], seg_state[0] = lo, n, 0
    vsp = 0
    while sp > 0:
        top = sp - 1
        s_lo, s_n, state = seg_lo[top], seg_n[top], seg_state[top]
        if s_n <= PW_BLOCKSIZE:
            vals[vsp] = _block(a, s_lo, s_n)
            vsp += 1
            sp -= 1
            continue
        n2 = s_n // 2
        n2 -= n2 % 8
        if state == 0:  # the first half
            seg_state[top] = 1
            seg_lo[sp], seg_n[sp], seg_state[sp] = s_lo, n2, 0
            sp += 1
        elif state == 1:  # then the second
            seg_state[top] = 2
            seg_lo[sp], seg_n[sp], seg_state[sp] = s_lo + n2, s_n - n2, 0
            sp += 1
        else:  # both done: their sum
            vals[vsp - 2] = vals[vsp - 2] + vals[vsp - 1]
            vsp -= 1
            sp -= 1
    return vals[0]


@jit
def column_sums(x: F64) -> F64:
    """``x.sum(axis=0)`` as numpy adds it: row after row, or pairwise with one column."""
    rows, cols = x.shape
    out = np.zeros(cols)
    if cols == 1:
        col = np.empty(rows)
        for r in range(rows):
            col[r] = x[r, 0]
        out[0] = pairwise(col, 0, rows)
        return out
    for c in range(cols):
        out[c] = x[0, c]
    for r in range(1, rows):
        for c in range(cols):
            out[c] += x[r, c]
    return out
