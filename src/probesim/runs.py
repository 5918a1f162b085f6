"""Many runs at once: the tasks of ``probesim run --runs`` and ``probesim sweep``, and the one
way they execute, in local processes or on a Dask distributed cluster.

A task is small and self-contained: the loaded, validated scenario (a few kB pickled; the
manifest and series files it was read from are not needed where it runs), the seed, and the
thresholds to judge. It returns a row: a plain dict of the run's inputs, seed, figures
(probesim.results.figures) and threshold verdicts. Rows come back in task order, whatever
order they finished in or however many workers ran them, so results do not depend on the
number of workers.

Locally the tasks run in a ``concurrent.futures.ProcessPoolExecutor``; with ``--scheduler`` in
the cluster's ``distributed.Client.get_executor()``, the same ``concurrent.futures`` interface.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from probesim.errors import InputError

if TYPE_CHECKING:
    from rich.progress import Progress

    from probesim.model.scenario import Scenario
    from probesim.model.threshold import Threshold

CONNECT_TIMEOUT_S = 10.0  # to reach a Dask scheduler


@dataclass(frozen=True)
class Task:
    scenario: Scenario
    seed: int
    inputs: tuple[tuple[str, Any], ...] = ()  # the swept paths and this point's values
    point: int = 0
    run: int = 0
    thresholds: tuple[Threshold, ...] = field(default=())


def with_seed(sc: Scenario, seed: int) -> Scenario:
    """``sc`` run with another seed (what ``probesim run --seed`` does)."""
    return sc.model_copy(update={"spec": sc.spec.model_copy(update={"seed": seed})})


def run_task(task: Task) -> dict[str, Any]:
    """Simulate one task and return its row (runs in a worker process)."""
    from probesim.engine import simulate
    from probesim.results.figures import figures

    result = simulate(with_seed(task.scenario, task.seed))
    row: dict[str, Any] = {"point": task.point, **dict(task.inputs), "run": task.run, "seed": task.seed}
    row.update(figures(result))
    if task.thresholds:
        from probesim.results.thresholds import evaluate

        for v in evaluate(task.thresholds, result):
            row[f"threshold[{v.threshold.text}].ok"] = v.ok
            row[f"threshold[{v.threshold.text}].value"] = v.value
    return row


def threshold_names(row: dict[str, Any]) -> list[str]:
    """The thresholds judged in a row, by their text."""
    return [
        k[len("threshold[") : -len("].ok")] for k in row if k.startswith("threshold[") and k.endswith("].ok")
    ]


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def one_thread_per_worker() -> None:
    """Let numpy's BLAS use one thread in each worker process, as Dask's nanny does for its
    workers: a worker is one core's work, and BLAS threads of several workers contending for
    the cores spin (two local workers took 225 ms of CPU a run instead of 122-163 ms). Read by
    OpenBLAS when numpy loads, so call it before; a value the user set is kept."""
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, "1")


@contextmanager
def executor(workers: int | None = None, scheduler: str | None = None) -> Iterator[cf.Executor]:
    """Local worker processes (``workers``, default all cores), or the Dask cluster whose
    scheduler is at ``scheduler`` (tcp://host:port)."""
    if scheduler is None:
        # Imported before the workers fork, so that each does not import the engine again.
        import probesim.engine
        import probesim.results.figures  # noqa: F401

        n = workers or os.cpu_count() or 1
        pool = cf.ProcessPoolExecutor(max_workers=n)
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return
    client = _connect(scheduler)
    try:
        ex = client.get_executor(pure=False)
        try:
            yield ex
        finally:
            ex.shutdown(wait=False)
    finally:
        client.close()


def _connect(scheduler: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "--scheduler needs Dask's distributed package: pip install 'probesim[cluster]'"
        ) from None
    if not scheduler.startswith(("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")):
        raise InputError("give the scheduler's address as tcp://host:port", field=f"--scheduler {scheduler}")
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as e:
        raise InputError(
            f"cannot reach the Dask scheduler within {CONNECT_TIMEOUT_S:g} s: {e}",
            field=f"--scheduler {scheduler}",
        ) from None


def run_all(
    tasks: Sequence[Task],
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Every task's row, in task order, shown on ``progress`` (started here, once the worker
    processes exist: forking them while its refresh thread runs could copy a held lock)."""
    rows: list[dict[str, Any] | None] = [None] * len(tasks)
    with executor(workers, scheduler) as ex:
        futures = {ex.submit(run_task, t): i for i, t in enumerate(tasks)}
        with progress if progress is not None else nullcontext():
            bar = None if progress is None else progress.add_task("runs", total=len(tasks))
            for fut in cf.as_completed(futures):
                rows[futures[fut]] = fut.result()
                if progress is not None and bar is not None:
                    progress.advance(bar)
    return [r for r in rows if r is not None]
