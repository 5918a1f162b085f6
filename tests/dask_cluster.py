"""A real Dask cluster for tests: a scheduler and two worker processes on 127.0.0.1, started with
bounded waits and closed whatever the tests did."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def local_cluster() -> Iterator[str]:
    """Yield the scheduler's address (``tcp://127.0.0.1:…``); for a module-scoped fixture."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
        timeout=60,  # a bounded start, on a busy machine
    )
    try:
        with distributed.Client(cluster, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield str(cluster.scheduler_address)
    finally:
        cluster.close(timeout=30)
