"""The latency-distribution maths of what the capacity model served: the log-normal CDFs of
latency d + s·X (``lognormal_cdf``) on a log-spaced grid (``GRID``), summed over requests
(``mixture_cdf``, ``grouped_cdfs``), requests grouped by state (``state_groups``), quantiles
read off the grid (``grid_quantiles``, ``quantiles``) and the binomial draws of requests that
took longer than a timeout (``timed_out``). Each runs as a compiled kernel when the run took
them (engine/kernel_choice.py), to the bit the same.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF
from probesim.engine.draws import binomial
from probesim.engine.kernel_choice import loaded_kernels
from probesim.engine.state_memo import StateMemo

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

# Latency grid for route quantiles: 0.1 ms .. 1e6 ms, log-spaced.
GRID = np.logspace(-1, 6, 281)  # 6 % apart


def norm_cdf(x: F64) -> F64:
    """Φ(x), vectorized (Abramowitz-Stegun 7.1.26 for erf, |error| < 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-z * z)
    return np.asarray(0.5 * (1.0 + np.sign(x) * erf), np.float64)


def lognormal_cdf(x: F64, d: F64, s: F64, sigma: F64) -> F64:
    """P(d + s·X ≤ x) for X log-normal with mean 1 and log-sd ``sigma`` (a step at d + s when 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        y = (x - d) / s
        pos = y > 0
        logy = np.log(np.where(pos, y, 1.0))
        sig = np.maximum(sigma, 1e-9)
        z = (logy + sig * sig / 2) / sig
        out = np.where(pos, norm_cdf(z), 0.0)
    return np.where(s <= 0, (x >= d).astype(np.float64), out)


def mixture_cdf(counts: I64, d: F64, s: F64, sigma: F64, states: States | None = None) -> F64:
    """CDF on GRID of a mixture: ``counts[i]`` requests with latency d_i + s_i·X_i (``states``:
    their state_groups, if in hand)."""
    total = counts[counts > 0].sum()
    if total == 0:
        return np.ones(GRID.size)
    return grouped_cdfs(counts, d, s, sigma, np.zeros(counts.size, np.int64), 1, states)[0] / total


def grouped_cdfs(
    counts: I64, d: F64, s: F64, sigma: F64, group: I64, n_groups: int, states: States | None = None
) -> F64:
    """Per group g (rows): the sum over requests i of group g of ``counts[i]`` times the CDF on
    GRID of latency d_i + s_i·X_i — unnormalized, so that groups add up (``states``: the
    requests' state_groups, if in hand)."""
    out = np.zeros((n_groups, GRID.size))
    keep = counts > 0
    if keep.all() and states is not None:
        first, inv = states
    elif not keep.any():
        return out
    else:
        counts, d, s, sigma, group = counts[keep], d[keep], s[keep], sigma[keep], group[keep]
        first, inv = state_groups(d, s, sigma)
    # bincount adds the weights in element order, as add.at would (same sums, to the bit).
    at = inv if n_groups == 1 else group * first.size + inv
    w = np.bincount(at, weights=counts, minlength=n_groups * first.size)
    w = w.reshape(n_groups, first.size)
    return np.asarray(w @ _cdf_rows(d[first], s[first], sigma[first]), np.float64)


States = tuple[I64, I64]  # per state, its first request; per request, its state


def state_groups(d: F64, s: F64, sigma: F64) -> States:
    """Requests in the same state share a latency distribution: keyed on (d, s) to 0.1 ms and
    sigma to 0.001, in key order, each key's first request and, per request, its key's index
    (np.unique's index and inverse)."""
    nb = loaded_kernels()
    if nb is not None:
        c = np.ascontiguousarray  # (one layout: one compiled signature)
        first, inv = nb.state_groups(c(d, np.float64), c(s, np.float64), c(sigma, np.float64))
        return first, inv
    # (np.rint is np.round to 0 decimals, without its Python wrapper; in place: no temporaries.)
    ds = np.stack([d, s])
    ds *= 10
    np.rint(ds, out=ds)
    np.minimum(ds, 2**24 - 1, out=ds)
    key, sk = ds.astype(np.int64)
    key <<= 36
    sk <<= 12
    key |= sk
    key |= np.rint(sigma * 1000).astype(np.int64)
    srt = np.sort(key)
    new = np.empty(srt.size, bool)
    new[:1] = True
    np.not_equal(srt[1:], srt[:-1], out=new[1:])
    uniq = srt[new]
    if uniq.size <= 16:
        # A few states (the usual case): no stable argsort; a pass per key for its first.
        inv = np.searchsorted(uniq, key)
        first = np.argmax(inv[None, :] == np.arange(uniq.size)[:, None], axis=1)
        return first, inv
    order = np.argsort(key, kind="stable")
    new = np.empty(key.size, bool)
    new[:1] = True
    np.not_equal(key[order[1:]], key[order[:-1]], out=new[1:])
    inv = np.empty(key.size, np.int64)
    inv[order] = np.cumsum(new) - 1
    return order[new], inv


_MEMO_MAX = 2048  # entries: for CDF rows of 281 floats each, a bounded 4.6 MB (and its mirror)
# CDF rows on GRID by the exact bits of (d, s, sigma): the states of a run recur step after step.
CDF_ROWS = StateMemo(GRID.size, _MEMO_MAX)


def _cdf_rows(d: F64, s: F64, sigma: F64) -> F64:
    """lognormal_cdf(GRID) per (d, s, sigma), one row each, remembered across steps."""
    bits = (d.view(np.int64).tolist(), s.view(np.int64).tolist(), sigma.view(np.int64).tolist())
    keys = list(zip(*bits, strict=True))
    rows = [CDF_ROWS.entries.get(key) for key in keys]
    missing = [i for i, row in enumerate(rows) if row is None]
    if missing:
        m = np.array(missing, np.int64)
        new = lognormal_cdf(GRID[None, :], d[m][:, None], s[m][:, None], sigma[m][:, None])
        if len(CDF_ROWS) + len(missing) > _MEMO_MAX:
            CDF_ROWS.clear()
        for j, i in enumerate(missing):
            rows[i] = CDF_ROWS.entries[keys[i]] = new[j]
    return np.array(rows)


def grid_quantiles(mix: F64, qs: tuple[float, ...]) -> list[float]:
    """Quantiles (ms) read off a CDF on GRID, interpolated between grid points."""
    nb = loaded_kernels()
    if nb is not None and mix.dtype == np.float64 and mix.size == GRID.size:
        out_: list[float] = nb.grid_quantiles(
            np.ascontiguousarray(mix), np.array(qs, np.float64), GRID
        ).tolist()
        return out_
    out = []
    g = _GRID
    for q, i in zip(qs, np.searchsorted(mix, qs).tolist(), strict=True):
        if i >= len(g):
            out.append(g[-1])
        elif i == 0:
            out.append(g[0])
        else:
            lo, hi = float(mix[i - 1]), float(mix[i])
            frac = 0.0 if hi <= lo else (q - lo) / (hi - lo)
            out.append(g[i - 1] + frac * (g[i] - g[i - 1]))
    return out


_GRID: list[float] = GRID.tolist()


def quantiles(counts: I64, d: F64, s: F64, sigma: F64, qs: tuple[float, ...]) -> list[float]:
    """Latency quantiles (ms) of a mixture: ``counts[i]`` requests with latency d_i + s_i·X_i."""
    if not (counts > 0).any():
        return [0.0] * len(qs)
    return grid_quantiles(mixture_cdf(counts, d, s, sigma), qs)


# P(latency > timeout) by the exact bits of (d, s, sigma) and the timeout, as CDF_ROWS.
LATE = StateMemo(1, _MEMO_MAX)


def timed_out(
    counts: I64,
    d: F64,
    s: F64,
    sigma: F64,
    timeout: float,
    rng: np.random.Generator,
    states: States | None = None,
) -> I64:
    """How many of ``counts`` requests took longer than ``timeout`` (a binomial draw each;
    ``states``: the requests' state_groups, if in hand)."""
    if not math.isfinite(timeout) or timeout >= INF:
        return np.zeros_like(counts)
    if d.size == 0:
        return np.zeros(counts.shape, np.int64)
    first, inv = state_groups(d, s, sigma) if states is None else states
    nb = loaded_kernels()
    if nb is not None:
        c = np.ascontiguousarray
        d, s, sigma = c(d, np.float64), c(s, np.float64), c(sigma, np.float64)
        same, rep = nb.state_bits(d, s, sigma, first, inv)
    else:
        bits = np.stack([d, s, sigma]).view(np.int64)
        rep = bits[:, first]
        same = bool((bits == rep.take(inv, axis=1)).all())  # (take: rep[:, inv], without fancy indexing)
    if same:
        # Requests in the same state (to the bit) share one probability: computed once each.
        keys = list(zip(*rep.tolist(), [timeout] * first.size, strict=True))
        late = [LATE.entries.get(key) for key in keys]
        missing = [i for i, x in enumerate(late) if x is None]
        if missing:
            m = first[missing]
            new = (1.0 - lognormal_cdf(np.full(m.size, timeout), d[m], s[m], sigma[m])).tolist()
            if len(LATE) + len(missing) > _MEMO_MAX:
                LATE.clear()
            for j, i in enumerate(missing):
                late[i] = LATE.entries[keys[i]] = new[j]
        if nb is not None:
            p, drawn, which = nb.spread_states(np.array(late, np.float64), inv)
            if which == 0:  # no state can time out
                return np.zeros(counts.shape, np.int64)
            draw = None if which == 1 else drawn
        else:
            p_state = np.clip(np.array(late, np.float64), 0.0, 1.0)
            some = p_state != 0.0
            if not some.any():
                return np.zeros(counts.shape, np.int64)
            p = p_state[inv]
            draw = None if some.all() else np.flatnonzero(some[inv])
    else:
        p = np.clip(1.0 - lognormal_cdf(np.full(d.shape, timeout), d, s, sigma), 0.0, 1.0)
        draw = np.flatnonzero(p != 0.0)
    if draw is None:
        return binomial(rng, counts, p)
    # A zero probability draws nothing (numpy's binomial returns 0 at once), so only the rest
    # are drawn, in order: the same draws.
    out = np.zeros(counts.shape, np.int64)
    out[draw] = binomial(rng, counts[draw], p[draw])
    return out
