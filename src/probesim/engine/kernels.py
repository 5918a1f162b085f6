"""Compiled kernels for the capacity model (numba, cached on disk), in one module the runs take
(``kernel_choice.kernels``), and whether numba's cache holds them (``cached``): its serving step
(``serve``), the capacity each container has for arrivals (``step_capacity``,
``step_capacity_calls``) and what arrivals it takes (``take``; ``arrive`` with a route's round
robin; ``split_classes``, among a route's outcome classes), in engine/kernels_capacity.py;
the serving phase's work in engine/serving.py: a one-class route's whole serving in the usual
case (``serve_route``; with the capacity step and the quantiles for a run of one route,
``serve_step``), the served cohorts (``cohorts_one``, ``cohorts``), their latency
parts (``latency_parts``), the answers due later (``pend_later``) and delivered when due
(``deliver``: engine/traffic.py's), in engine/kernels_serving.py;
the latency states (``state_groups``), the timeout draws' per-state bookkeeping
(``state_bits``, ``spread_states``), the remembered per-state values (``find``,
``memo_insert``: engine/state_memo.py's mirror), the grid quantiles (``grid_quantiles``) and
a step's route quantiles (``step_quantiles``), in engine/kernels_states.py; the probe workers'
runs on loaded containers (``probe_start``, ``probe_finish``, ``probe_apply``,
``steady_sets``, their ticks ``probe_tick`` and ``next_wake``: engine/kubelet.py's), in
engine/kernels_probes.py; a step's CPU series (``record_cpu``: engine/recording.py's), in
engine/kernels_record.py; numpy's semantics they share, in engine/kernels_base.py, and where
the route series sit in a route's block, in engine/series_names.py.

Each kernel is the numpy form it replaces (in engine/capacity.py, engine/distributions.py or
engine/traffic.py) written as loops over containers, so that a step's cost follows the
containers served, not the few hundred numpy calls of a few microseconds each it took: the same
operations on the same values in the same order, so the same results to the bit
(tests/engine/test_kernels.py runs both on the same scenarios). What that takes:

- floating-point reductions in numpy's order: a column sum of a rows × columns array adds the
  rows one after another, except when it has one column, where numpy sums the column pairwise
  (``column_sums``); ``np.add.at`` adds in element order;
- numpy's semantics where they differ from Python's: a division by zero gives inf or nan
  (``error_model="numpy"``), ``np.minimum``, ``np.maximum`` and ``np.clip`` propagate nan,
  ``np.searchsorted`` is numpy's own binary search (``searchsorted``);
- random draws stay in numpy, in the run's order, and kernels take their results — except the
  binomial class split (``split_classes``), which draws from the run's own numpy Generator with
  numba's port of numpy's binomial (inversion and BTPE, the same values and generator state:
  tests/engine/test_kernels.py holds it to numpy's over generated counts and shares; numba
  before 0.61 drew other values for mid-sized counts, hence pyproject's floor). numba unboxes
  a Generator argument at ~7 µs a call: a kernel that draws pays off only over many draws;
  no exp and log of arrays (numpy's AVX-512 forms give other last bits than LLVM's), nor BLAS
  products;
- no recursion: numba's cache crashes loading a recursive function.

These modules import numba: engine/kernel_choice.py imports this one only when a run uses
the kernels (``kernel_choice.kernels``), so that runs without a capacity model never load numba.
Compiling the kernels takes seconds, once per machine (numba's on-disk cache, beside these files or in
NUMBA_CACHE_DIR): ``python -m probesim.kernel_cache`` (``make setup`` runs it) compiles them
by running two small built-ins with them, and says whether the cache holds them.
"""

from __future__ import annotations

import os
from typing import Any

import numba  # noqa: F401  (without numba this module does not load, even with the ones below loaded)

from probesim.engine import (
    kernels_base,
    kernels_capacity,
    kernels_probes,
    kernels_record,
    kernels_serving,
    kernels_states,
    series_names,
)
from probesim.engine.kernels_capacity import (
    arrive,
    serve,
    split_classes,
    step_capacity,
    step_capacity_calls,
    take,
)
from probesim.engine.kernels_probes import (
    next_wake,
    probe_apply,
    probe_finish,
    probe_start,
    probe_tick,
    steady_sets,
)
from probesim.engine.kernels_record import record_cpu
from probesim.engine.kernels_serving import (
    PARTS,
    cohorts,
    cohorts_one,
    deliver,
    latency_parts,
    pend_later,
    serve_route,
    serve_step,
)
from probesim.engine.kernels_states import (
    grid_quantiles,
    memo_insert,
    spread_states,
    state_bits,
    state_groups,
    step_quantiles,
)

__all__ = [
    "KERNELS",
    "PARTS",
    "arrive",
    "cached",
    "cohorts",
    "cohorts_one",
    "deliver",
    "forget_stale",
    "grid_quantiles",
    "latency_parts",
    "memo_insert",
    "next_wake",
    "pend_later",
    "probe_apply",
    "probe_finish",
    "probe_start",
    "probe_tick",
    "record_cpu",
    "serve",
    "serve_route",
    "serve_step",
    "split_classes",
    "spread_states",
    "state_bits",
    "state_groups",
    "steady_sets",
    "step_capacity",
    "step_capacity_calls",
    "step_quantiles",
    "take",
]

KERNELS: tuple[Any, ...] = (
    serve,
    take,
    split_classes,
    arrive,
    step_capacity,
    step_capacity_calls,
    state_groups,
    cohorts_one,
    cohorts,
    state_bits,
    spread_states,
    latency_parts,
    pend_later,
    deliver,
    serve_route,
    serve_step,
    memo_insert,
    grid_quantiles,
    step_quantiles,
    probe_start,
    probe_finish,
    probe_apply,
    steady_sets,
    probe_tick,
    next_wake,
    record_cpu,
)


def _compiled() -> list[Any]:
    """Every function compiled in the kernels' modules: the kernels and the helpers they call."""
    modules = (kernels_capacity, kernels_probes, kernels_record, kernels_serving, kernels_states)
    return [
        f
        for m in modules
        for f in vars(m).values()
        if hasattr(f, "_cache") and getattr(getattr(f, "py_func", None), "__module__", None) == m.__name__
    ]


# Files the kernels take code or constants from (numba compiles those functions into the kernels
# calling them, and freezes those constants there, but checks only a kernel's own source file):
# kernels_serving's serve_step calls kernels_capacity's serve and kernels_states' quantiles, so a
# change there must compile it again too (a stale serve_step served the old capacity model).
_SHARED = (kernels_base.__file__, series_names.__file__, kernels_capacity.__file__, kernels_states.__file__)


def _older(function: Any) -> bool:
    """Whether the cache holds ``function`` compiled before one of the _SHARED files last
    changed."""
    index = function._cache._cache_file
    return bool(index._load_index()) and os.path.getmtime(index._index_path) < max(
        os.path.getmtime(f) for f in _SHARED
    )


def cached() -> bool:
    """Whether numba's on-disk cache holds every kernel, compiled from its sources (an index
    for another source is stale: numba checks the file's time stamp and size; one compiled
    before one of the _SHARED files changed is too)."""
    try:
        return all(bool(k._cache._cache_file._load_index()) and not _older(k) for k in KERNELS)
    except Exception:  # numba's cache internals moved: say no, and the numpy forms run
        return False


def forget_stale() -> None:
    """Empty the cache index of every function of the kernels' modules compiled before one of
    the _SHARED files changed, so that its next call compiles it again."""
    try:
        for f in _compiled():
            if _older(f):
                f._cache.flush()
    except Exception:  # numba's cache internals moved: its own checks stand
        pass
