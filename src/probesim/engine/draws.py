"""The run's random draws: one numpy ``Generator``, seeded by the scenario, made at the first draw.

Every random draw of a run comes from this one generator, in the order the engine asks, so a
scenario and seed give the same run anywhere. Many runs draw nothing (no capacity model, no mesh
faults: the seed cases among them); they never import ``numpy.random`` (about 13 ms of a short
command's start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from numpy.random import Generator


class _Draws:
    """Stands for the generator: any attribute (``random``, ``binomial``…) makes it first."""

    def __init__(self, seed: int | None) -> None:
        self._seed = seed
        self._generator: Generator | None = None

    def __getattr__(self, name: str) -> Any:
        # Called only for what this object lacks: the generator's own methods (and, while a copy
        # is being made, its own attributes, which must not recurse).
        if name.startswith("_"):
            raise AttributeError(name)
        if self._generator is None:
            self._generator = np.random.default_rng(self._seed)
        return getattr(self._generator, name)


def generator(seed: int | None) -> Generator:
    """The run's generator, seeded with ``seed``, made when first drawn from."""
    return cast("Generator", _Draws(seed))
