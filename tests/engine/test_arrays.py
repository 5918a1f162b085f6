"""The engine's stand-ins for np.unique and its per-state shortcuts in the capacity model give
what the plain numpy forms give, to the bit (and draw the same random numbers)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from probesim.engine import distributions
from probesim.engine.arrays import distinct, distinct_inverse, span
from probesim.engine.distributions import GRID, grouped_cdfs, lognormal_cdf, state_groups, timed_out

ints = hnp.arrays(np.int64, st.integers(0, 60), elements=st.integers(-5, 40))


@given(ints)
def test_distinct_is_np_unique(x: np.ndarray) -> None:
    assert np.array_equal(distinct(x), np.unique(x))
    values, inverse = distinct_inverse(x)
    want, want_inverse = np.unique(x, return_inverse=True)
    assert np.array_equal(values, want) and np.array_equal(inverse, want_inverse)


@given(st.sets(st.integers(0, 30)), st.integers(0, 20), st.integers(0, 12))
def test_span_indexes_the_same_elements(members: set[int], lo: int, run: int) -> None:
    x = np.arange(50) * 7
    for idx in (np.array(sorted(members), np.int64), np.arange(lo, lo + run)):
        ix = span(idx)
        assert isinstance(ix, slice) == (idx.size > 0 and bool((np.diff(idx) == 1).all()))
        assert np.array_equal(x[ix], x[idx])


def _requests(seed: int, n: int, states: int) -> tuple[np.ndarray, ...]:
    """``n`` requests in ``states`` distinct states (d, s, sigma), a few with no count."""
    rng = np.random.default_rng(seed)
    d0 = rng.uniform(0, 40_000, states).round(1)
    s0 = rng.uniform(0, 20_000, states)
    g0 = rng.choice([0.0, 0.3, 0.8], states)
    pick = rng.integers(0, states, n)
    counts = rng.integers(0, 50, n)
    return counts, d0[pick], s0[pick], g0[pick]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 300), st.sampled_from([1, 3, 16, 17, 200]))
def test_state_groups_are_np_unique_of_the_key(seed: int, n: int, states: int) -> None:
    _, d, s, sigma = _requests(seed, n, states)
    dk = np.minimum(np.round(d * 10), 2**24 - 1).astype(np.int64)
    sk = np.minimum(np.round(s * 10), 2**24 - 1).astype(np.int64)
    key = (dk << 36) | (sk << 12) | np.round(sigma * 1000).astype(np.int64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    got_first, got_inverse = state_groups(d, s, sigma)
    assert np.array_equal(got_first, first) and np.array_equal(got_inverse, inverse)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 300), st.sampled_from([1, 4, 40]), st.booleans())
def test_per_state_shortcuts_are_the_plain_forms(seed: int, n: int, states: int, cold: bool) -> None:
    counts, d, s, sigma = _requests(seed, n, states)
    if cold:  # the remembered rows and probabilities are only a cache
        distributions.CDF_ROWS.clear()
        distributions.LATE.clear()
    timeout = 30_000.0
    plain_rng, rng = np.random.default_rng(seed), np.random.default_rng(seed)
    p = np.clip(1.0 - lognormal_cdf(np.full(d.shape, timeout), d, s, sigma), 0.0, 1.0)
    want = plain_rng.binomial(counts, p).astype(np.int64)
    assert np.array_equal(timed_out(counts, d, s, sigma, timeout, rng), want)
    assert rng.random() == plain_rng.random()  # the same draws were taken
    keep = counts > 0
    group = np.arange(n) % 3
    got = grouped_cdfs(counts, d, s, sigma, group, 3)
    if keep.any():
        first, inverse = state_groups(d[keep], s[keep], sigma[keep])
        w = np.bincount(group[keep] * first.size + inverse, weights=counts[keep], minlength=3 * first.size)
        rows = lognormal_cdf(
            GRID[None, :], d[keep][first][:, None], s[keep][first][:, None], sigma[keep][first][:, None]
        )
        want_cdf = w.reshape(3, first.size) @ rows
    else:
        want_cdf = np.zeros((3, GRID.size))
    assert got.tobytes() == want_cdf.tobytes()


def test_timeouts_of_states_that_share_a_key_are_drawn_each() -> None:
    """Two requests 0.01 ms apart share a key (0.1 ms) but not their chance of a timeout."""
    counts = np.array([40, 40, 0, 40])
    d = np.array([29_000.01, 29_000.02, 29_000.01, 0.0])
    s = np.array([1_000.0, 1_000.0, 1_000.0, 5.0])
    sigma = np.array([0.8, 0.8, 0.8, 0.0])
    p = np.clip(1.0 - lognormal_cdf(np.full(4, 30_000.0), d, s, sigma), 0.0, 1.0)
    assert p[0] != p[1] and p[3] == 0.0
    want = np.random.default_rng(7).binomial(counts, p)
    assert np.array_equal(timed_out(counts, d, s, sigma, 30_000.0, np.random.default_rng(7)), want)
