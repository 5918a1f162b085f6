"""What is computed once per latency state and remembered across steps and runs (a state's CDF
row on the grid, its chance of outlasting a timeout): a dict keyed on the state's exact bits for
the numpy forms (engine/distributions.py), mirrored into arrays a compiled kernel looks up
(``find`` in engine/kernels_states.py; ``arrays`` brings them up to date). Remembering changes
no result: an entry is what the numpy form computes for that key, to the bit.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

KEY = 4  # a key's int64 words: d, s and sigma's bits, and a timeout's (0 when it has none)


class StateMemo:
    """At most ``capacity`` values of ``width`` floats each, keyed on tuples of 3 ints (float
    bits) and optionally a float; ``entries`` is the dict the numpy forms read and write,
    cleared (with its mirror) when full."""

    def __init__(self, width: int, capacity: int) -> None:
        self.width = width
        self.capacity = capacity
        self.entries: dict[tuple[Any, ...], Any] = {}
        self.keys = np.zeros((capacity, KEY), np.int64)
        self.values = np.zeros((capacity, width))
        # Open addressing, at most half full: an entry's index in keys, or -1.
        self.index = np.full(1 << (2 * capacity - 1).bit_length(), -1, np.int64)
        self._mirrored = 0  # entries (the first ones, in insertion order) in the arrays

    def __len__(self) -> int:
        return len(self.entries)

    def clear(self) -> None:
        self.entries.clear()
        self.index[:] = -1
        self._mirrored = 0

    def arrays(self, nb: ModuleType) -> tuple[I64, F64, I64]:
        """The mirror (keys, values, index) for engine/kernels.py's ``nb``, with every entry."""
        n = len(self.entries)
        if n > self._mirrored:
            # (Past capacity, when one step brought more new states than it holds, the rest are
            # not mirrored: a kernel that does not find a state leaves it to the numpy form.)
            lo, hi = self._mirrored, min(n, self.capacity)
            if hi > lo:
                for j, (key, value) in enumerate(list(self.entries.items())[lo:hi]):
                    tail = int(np.float64(key[3]).view(np.int64)) if len(key) > 3 else 0
                    self.keys[lo + j] = (*key[:3], tail)
                    self.values[lo + j] = value
                nb.memo_insert(self.keys, self.index, lo, hi)
            self._mirrored = n
        return self.keys, self.values, self.index
