"""The run's generator (engine/draws.py): the draws of numpy's own generator with that seed, in
the same order, though made only at the first draw."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from probesim.engine.draws import generator


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1) | st.none(), calls=st.lists(st.integers(0, 3), max_size=12))
def test_the_same_draws_as_numpys_generator_with_that_seed(seed: int | None, calls: list[int]) -> None:
    if seed is None:  # unseeded: nothing to compare draw for draw, but it draws
        assert 0 <= generator(None).random() < 1
        return
    ours, numpys = generator(seed), np.random.default_rng(seed)
    for c in calls:
        a, b = (
            (g.random(3), g.binomial(10, 0.3), g.integers(0, 100), g.multinomial(5, [0.5, 0.5]))[c]
            for g in (ours, numpys)
        )
        np.testing.assert_array_equal(a, b)


def test_the_generator_is_made_at_the_first_draw_only() -> None:
    g = generator(7)
    assert g._generator is None  # type: ignore[attr-defined]
    first = g.random()
    made = g._generator  # type: ignore[attr-defined]
    assert made is not None and first == np.random.default_rng(7).random()
    g.random()
    assert g._generator is made


def test_a_copy_does_not_recurse_and_draws_on_from_the_same_state() -> None:
    g = generator(3)
    g.random()
    c = copy.deepcopy(g)
    assert c.random() == g.random()
