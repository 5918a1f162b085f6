"""Runs per second of ``probesim sweep`` / ``run --runs``: the same tasks (patient-delays-liveness,
a seed-dependent built-in of about 0.13 s of CPU a run, and the tiny seed000-readiness, where
the per-task overhead shows) in 1 and 2 local worker processes and on a Dask cluster of two
worker processes on 127.0.0.1 (the test cluster: LocalCluster, processes=True).

Wall-clock throughput, best of ``--repeat``: the machine is shared, so the load average is
printed beside it, and the workers' and the parent's CPU time per run too (the parent's:
shipping tasks and collecting rows). Each measurement starts its own local pool (forked:
cheap) or connects a client to the running cluster, as a sweep does; the cluster's own start
is not counted.
Run: ``make bench`` (or ``python benchmarks/sweep.py [--runs N] [--repeat N]``).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable

from probesim.runs import one_thread_per_worker

one_thread_per_worker()  # before numpy loads, as probesim sweep and run --runs do

from probesim.manifests.scenario import load_scenario  # noqa: E402
from probesim.runs import Task, run_all  # noqa: E402
from probesim.scenarios import find  # noqa: E402


def tasks(name: str, runs: int) -> list[Task]:
    b = find(name)
    assert b is not None
    sc = load_scenario(str(b.path))
    return [Task(sc, sc.spec.seed + i, run=i) for i in range(runs)]


def best(
    fn: Callable[[], object], repeat: int, workers_cpu: Callable[[], float]
) -> tuple[float, float, float]:
    """The best wall time of ``fn()``, and the parent's and the workers' CPU time in that repeat."""
    out = (float("inf"), 0.0, 0.0)
    for _ in range(repeat):
        w, c, k = time.perf_counter(), time.process_time(), workers_cpu()
        fn()
        out = min(out, (time.perf_counter() - w, time.process_time() - c, workers_cpu() - k))
    return out


def children_cpu() -> float:
    """CPU time of the finished child processes (a local pool's, once it is shut down)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=16, help="Runs per measurement.")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-cluster", action="store_true", help="Skip the Dask cluster.")
    args = ap.parse_args()
    work = {name: tasks(name, args.runs) for name in ("patient-delays-liveness", "seed000-readiness")}
    print(f"{args.runs} runs a measurement, best of {args.repeat}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'scenario':<26}{'executor':<18}{'runs/s':>8}{'worker CPU/run':>16}{'parent CPU/run':>16}")

    def report(name: str, where: str, wall: float, cpu: float, wcpu: float) -> None:
        per = [f"{x / args.runs * 1000:>13.1f} ms" for x in (wcpu, cpu)]
        print(f"{name:<26}{where:<18}{args.runs / wall:>8.1f}{per[0]}{per[1]}")

    for name, ts in work.items():
        run_all(ts[:1], workers=1)  # imports warm
        for n in (1, 2):
            wall, cpu, wcpu = best(lambda ts=ts, n=n: run_all(ts, workers=n), args.repeat, children_cpu)
            report(name, f"local, {n} worker{'s' if n > 1 else ''}", wall, cpu, wcpu)
    if args.no_cluster:
        return
    import psutil
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
        timeout=60,
    )  # fmt: skip
    try:
        with Client(cluster, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
            pids = list(client.run(os.getpid).values())
        address = str(cluster.scheduler_address)

        def dask_cpu() -> float:
            return sum(sum(psutil.Process(p).cpu_times()[:2]) for p in pids)

        for name, ts in work.items():
            run_all(ts[:2], scheduler=address)  # imports warm on both workers
            wall, cpu, wcpu = best(lambda ts=ts: run_all(ts, scheduler=address), args.repeat, dask_cpu)
            report(name, "Dask, 2 workers", wall, cpu, wcpu)
    finally:
        cluster.close(timeout=30)


if __name__ == "__main__":
    main()
