"""Which forms a run's capacity model takes: the compiled kernels (engine/kernels.py, numba)
or the numpy forms (engine/capacity.py, engine/distributions.py, engine/traffic.py).

The serving step, the capacity a container has for arrivals, what arrivals it takes, and the
latency states, timeout draws and quantiles of what it served run as compiled kernels when numba
loads, its cache holds them and the run is long enough to pay for loading them (``kernels``);
otherwise as the numpy forms. Both give the same results to the bit. ``PROBESIM_KERNELS=numpy``
forces the numpy forms, ``PROBESIM_KERNELS=numba`` the kernels whatever the run's length or the
cache (compiling them if need be). engine/kernels.py is imported only here, when a run takes
it, so that runs without a capacity model never load numba.
"""

from __future__ import annotations

import os
from types import ModuleType

# A run of at least this many capacity-model steps (or a process that has run as many) loads the
# kernels: loading numba and the cached kernels costs about 0.2 s of CPU, which the kernels
# save in about that many steps of a small fleet (docs/performance.md).
KERNEL_STEPS = 4000
_kernels: ModuleType | None = None  # engine/kernels.py, once a run took it
_steps_run = 0  # capacity-model steps this process has run with the numpy forms
_numpy_only = False  # numba missing, or the kernels not in its cache: the numpy forms


def kernels(steps: int) -> ModuleType | None:
    """engine/kernels.py for a run of ``steps`` capacity-model steps, or None for the numpy
    forms: when ``PROBESIM_KERNELS=numpy``; when numba cannot be imported; unless forced
    (``PROBESIM_KERNELS=numba``), when neither this run nor the ones this process ran before are
    long enough to pay for loading numba, or when numba's on-disk cache does not hold the
    kernels (compiling them takes seconds: ``make setup`` or ``python -m probesim.kernel_cache``
    does it once). Once a run took them, every run after does."""
    global _kernels, _steps_run, _numpy_only
    mode = os.environ.get("PROBESIM_KERNELS", "auto")
    if mode == "numpy":
        return None
    if _kernels is not None:
        return _kernels
    forced = mode == "numba"
    if not forced and (_numpy_only or _steps_run + steps < KERNEL_STEPS):
        _steps_run += steps
        return None
    try:
        from probesim.engine import kernels as nb
    except Exception:  # numba missing, its llvmlite broken, or no cache directory it can use
        _numpy_only = True
        return None
    if not forced and not nb.cached():
        _numpy_only = True
        return None
    if forced:
        nb.forget_stale()  # compiled before engine/kernels_base.py changed: compiled again
    _kernels = nb
    return nb


_active: ModuleType | None = None  # the current run's kernels (results are the same without)


def loaded_kernels() -> ModuleType | None:
    """engine/kernels.py if the current run (the last capacity model made) took it."""
    return _active


def run_with(nb: ModuleType | None) -> ModuleType | None:
    """``nb`` as the current run's kernels."""
    global _active
    _active = nb
    return nb
