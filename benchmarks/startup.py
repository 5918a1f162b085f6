"""The command line's start-up: ``probesim --help`` and ``probesim run seed000-demo`` as real
processes, best of several runs, in wall and CPU (user + system) seconds, beside a fair
reference measured in the same run: ``python -c pass`` (the interpreter),
``python -c "import typer"`` (the least any Typer command line pays before doing anything) and
the libraries a run needs, imported and nothing done (the floor of ``probesim run``).

The capacity model's kernels (engine/kernels.py, numba): ``probesim run`` on a 3-replica
Deployment's manifest (the generated scenario, 5 minutes of the capacity model) with the numpy
forms, with the kernels loaded from numba's on-disk cache, and with them compiled into an empty
cache (once: what a machine's first such run pays; ``make setup`` warms the cache).

Targets (issue 14): ``--help`` at most 0.12 s and ``run seed000-demo`` at most 0.35 s of wall
time on an idle 2-core machine. A second reference, the libraries with probesim's own modules
a run imports (nothing run), splits a miss of the run's target into the libraries, probesim's
modules (most of it pydantic building the models' validators) and the run itself. On a
shared, busy machine wall time waits for the CPU: compare the CPU figures then (a process alone
on an idle core has wall ≈ CPU + a few ms).
Python modules are run from their bytecode cache, as an installed probesim's are (the cache goes
to a directory of its own, so a tree or environment set not to write it, PYTHONDONTWRITEBYTECODE,
is left as it is; compiling probesim's modules anew costs about 0.1 s more), after a first run
that fills it.
Run: ``make bench`` (or ``python benchmarks/startup.py [RUNS]``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 7
# The floor of any probesim run: the libraries it is built on (Typer, rich, pydantic, numpy,
# PyYAML), imported and nothing done; numpy's BLAS on one thread, as probesim loads it.
FLOOR = (
    "import os; os.environ['OPENBLAS_NUM_THREADS'] = '1'; "
    "import typer, rich.console, rich.table, pydantic, numpy, yaml"
)


# What ``probesim run <built-in>`` imports of its own on top of FLOOR (the command line, the
# engine, the built-ins' loader and the terminal report), nothing run: a miss of the run's
# target is then split into the libraries, probesim's modules and the run itself.
MODULES = (
    FLOOR + "; from probesim.cli import main; import probesim.engine, probesim.manifests.scenario, "
    "probesim.scenarios, probesim.report.terminal, probesim.report.thresholds"
)


def probesim() -> str:
    """The ``probesim`` entry point beside this interpreter (the one a user runs)."""
    here = Path(sys.executable).parent / "probesim"
    return str(here) if here.is_file() else shutil.which("probesim") or "probesim"


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "probesim-bench-pycache")


def best(
    argv: list[str], runs: int, env: dict[str, str] | None = None, warm: bool = True
) -> tuple[float, float]:
    """The best wall and the best CPU (user + system) seconds of ``runs`` runs of ``argv``, after
    one that fills the bytecode cache (``warm``)."""
    walls, cpus = [], []
    env = ENV if env is None else env
    if warm:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        walls.append(time.perf_counter() - t)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {p.returncode}")
        cpus.append(usage.ru_utime + usage.ru_stime)
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="?", type=int, default=RUNS, help=f"runs of each command (default {RUNS})")
    runs = ap.parse_args().runs
    if runs < 1:
        ap.error("runs must be at least 1")
    py, cli = sys.executable, probesim()
    rows: list[tuple[str, list[str], float | None]] = [
        ("python -c pass", [py, "-c", "pass"], None),
        ('python -c "import typer"', [py, "-c", "import typer"], None),
        ("the libraries a run needs", [py, "-c", FLOOR], None),
        ("+ probesim's modules", [py, "-c", MODULES], None),
        ("probesim --help", [cli, "--help"], 0.12),
        ("probesim run seed000-demo", [cli, "run", "seed000-demo"], 0.35),
    ]
    print(f"start-up, best of {runs} runs ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    print(f"  {'':28} {'wall s':>7} {'CPU s':>7}   target (wall, idle machine)")
    got: dict[str, float] = {}
    for name, argv, target in rows:
        wall, cpu = best(argv, runs)
        got[name] = min(wall, cpu)
        if target is None:
            verdict = "reference"
        elif wall <= target:
            verdict = f"≤ {target:.2f}: meets"
        elif cpu <= target:
            verdict = f"≤ {target:.2f}: meets in CPU (wall waited for a busy CPU)"
        else:
            # The lesser of the two: CPU time counts numpy's BLAS thread starting beside the
            # main one, wall time counts waiting for a busy CPU.
            verdict = f"≤ {target:.2f}: misses by {min(wall, cpu) - target:.2f} s"
        if target is not None:
            verdict += f" ({min(wall, cpu) / target:.2f} × target)"
        print(f"  {name:28} {wall:7.3f} {cpu:7.3f}   {verdict}")
        if target is not None and min(wall, cpu) > target and name.startswith("probesim run"):
            floor, modules = got["the libraries a run needs"], got["+ probesim's modules"]
            run = min(wall, cpu) - modules
            said = f"+{run:.3f} s" if run >= 0 else "within the noise (the modules' row measured more)"
            print(
                f"  {'':28} {'':15}   of which the libraries {floor:.3f} s, probesim's modules "
                f"+{modules - floor:.3f} s, the run and its output {said}"
            )
    kernel_rows(cli, runs)


def kernel_rows(cli: str, runs: int) -> None:
    """``probesim run`` on a generated capacity scenario: the numpy forms, the kernels from the
    cache, the kernels compiled anew (into an empty cache, once)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import workloads

    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "deploy.yaml"
        manifest.write_text(workloads.GENERATED_APP % 3, encoding="utf-8")
        argv = [cli, "run", str(manifest)]
        print("  probesim run deploy.yaml (3 replicas, generated: 5 min of the capacity model)")
        numpy_wall, numpy_cpu = best(argv, runs, ENV | {"PROBESIM_KERNELS": "numpy"})
        print(f"  {'  numpy forms':28} {numpy_wall:7.3f} {numpy_cpu:7.3f}   reference")
        wall, cpu = best(argv, runs, ENV | {"PROBESIM_KERNELS": "numba"})
        print(
            f"  {'  kernels, cached':28} {wall:7.3f} {cpu:7.3f}   {cpu - numpy_cpu:+.3f} s CPU: numba's load"
        )
        cold = ENV | {"PROBESIM_KERNELS": "numba", "NUMBA_CACHE_DIR": str(Path(tmp) / "numba-cache")}
        wall, cpu = best(argv, 1, cold, warm=False)
        said = f"{cpu - numpy_cpu:+.3f} s CPU: compiling"
        print(f"  {'  kernels, compiled (once)':28} {wall:7.3f} {cpu:7.3f}   {said}")


if __name__ == "__main__":
    main()
