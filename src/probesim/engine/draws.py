"""The run's random draws: one numpy ``Generator``, seeded by the scenario, made at the first draw.

Every random draw of a run comes from this one generator, in the order the engine asks, so a
scenario and seed give the same run anywhere. Many runs draw nothing (no capacity model, no mesh
faults: the seed cases among them); they never import ``numpy.random`` (about 13 ms of a short
command's start-up).

A few draws at a time are made one by one (``binomial``, ``lognormal``): numpy's array form
costs about 8 µs more a call than its scalar one, which draws with the same C function, in the
same order, so the same values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

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
        return getattr(self._made(), name)

    def _made(self) -> Generator:
        """The generator, made at the first call."""
        if self._generator is None:
            self._generator = np.random.default_rng(self._seed)
        return self._generator


def generator(seed: int | None) -> Generator:
    """The run's generator, seeded with ``seed``, made when first drawn from."""
    return cast("Generator", _Draws(seed))


def numpy_generator(rng: Generator) -> Generator:
    """The numpy ``Generator`` behind the run's ``rng`` (made now if nothing drew yet): what a
    compiled kernel draws from, advancing the same state as the run's other draws."""
    return rng._made() if isinstance(rng, _Draws) else rng


# Up to this many values, one scalar call each (a 3-pod fleet's draws are 3 values).
ONE_BY_ONE = 8


def binomial(rng: Generator, n: npt.NDArray[np.int64], p: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """``rng.binomial(n, p)`` for arrays of one shape, as int64: the same draws."""
    if n.size > ONE_BY_ONE or n.ndim != 1 or n.shape != p.shape:
        return np.asarray(rng.binomial(n, p), np.int64)
    draw = rng.binomial
    return np.array([draw(a, b) for a, b in zip(n.tolist(), p.tolist(), strict=True)], np.int64)


def lognormal(
    rng: Generator, mean: npt.NDArray[np.float64], sigma: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """``rng.lognormal(mean, sigma)`` for arrays of one shape: the same draws."""
    if mean.size > ONE_BY_ONE or mean.ndim != 1 or mean.shape != sigma.shape:
        return np.asarray(rng.lognormal(mean, sigma), np.float64)
    draw = rng.lognormal
    return np.array([draw(m, s) for m, s in zip(mean.tolist(), sigma.tolist(), strict=True)], np.float64)
