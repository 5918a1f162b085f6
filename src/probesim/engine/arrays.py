"""Array helpers the engine's phases share.

``np.unique`` imports ``numpy.ma`` the first time it runs (about 10 ms of a run's start-up) and
sorts stably to return indices; the engine only needs the sorted distinct values, and where each
element falls among them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def distinct(x: npt.NDArray[np.int64]) -> I64:
    """The sorted distinct values of ``x`` (``np.unique(x)``)."""
    s = np.sort(x, axis=None)
    if s.size < 2:
        return s
    keep = np.empty(s.size, bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def distinct_inverse(x: npt.NDArray[np.int64]) -> tuple[I64, I64]:
    """The sorted distinct values of ``x`` and, per element, the index of its own
    (``np.unique(x, return_inverse=True)``)."""
    values = distinct(x)
    return values, np.searchsorted(values, x)


def span(idx: I64) -> slice | I64:
    """``idx`` (ascending, distinct) as a slice when its elements are consecutive, so that
    indexing with it is a view (no gather) and assigning through it a copy (no scatter);
    otherwise ``idx`` itself. Either indexes the same elements."""
    if idx.size and int(idx[-1]) - int(idx[0]) + 1 == idx.size:
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx
