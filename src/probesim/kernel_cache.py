"""The capacity model's compiled kernels put into numba's on-disk cache once per machine
(``make setup`` runs ``python -m probesim.kernel_cache``), so that compiling them (seconds) never
happens inside a user's run: engine/kernels.py loads them only from a warm cache."""

from __future__ import annotations

from probesim.engine import kernels


def warm_up() -> bool:
    """Compile every kernel into the cache (the signatures runs use: three built-ins, with and
    without dependency calls, one with answers due after their step, run with the kernels); True
    if the cache now holds them."""
    import os

    from probesim.engine import simulate
    from probesim.manifests.scenario import load_scenario
    from probesim.scenarios import find

    kernels.forget_stale()  # compiled before engine/kernels_base.py changed: compiled again
    before = os.environ.get("PROBESIM_KERNELS")
    os.environ["PROBESIM_KERNELS"] = "numba"
    try:
        runs = ("patient-timeout-retry-1", "rollout-max-unavailable-under-load", "patient-delays-liveness")
        for name in runs:
            found = find(name)
            assert found is not None, name
            simulate(load_scenario(str(found.path)))
    finally:
        if before is None:
            del os.environ["PROBESIM_KERNELS"]
        else:
            os.environ["PROBESIM_KERNELS"] = before
    return kernels.cached()


if __name__ == "__main__":
    import sys
    import time

    t0 = time.process_time()
    ok = warm_up()
    print(f"probesim kernels: {'cached' if ok else 'NOT cached'} ({time.process_time() - t0:.1f} s CPU)")
    sys.exit(0 if ok else 1)
