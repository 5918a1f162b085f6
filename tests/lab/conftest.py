"""The lab's tests run one after another in one pytest-xdist worker (``make test`` runs two),
first, so that the other worker takes all the rest beside them: they run real processes in
real time, mostly waiting, beside the other worker's CPU-bound tests — the busy machine they
are written to hold on — but never beside each other. ``busy``: a CPU hog beside a test module's
lab runs (a module that needs another kind defines its own, as test_graph does). A test marked
``waits`` mostly sleeps through real back-off delays (a near-idle app, no hog): it runs in a group
of its own, beside the serialized group, so that its minutes do not add to the long pole."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which appends the group to each node's id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    lab = [i for i in items if "tests/lab/" in i.nodeid.replace("\\", "/")]
    waiting = [i for i in lab if i.get_closest_marker("waits")]
    serial = [i for i in lab if not i.get_closest_marker("waits")]
    for item in serial:
        item.add_marker(pytest.mark.xdist_group("lab"))
    for item in waiting:
        item.add_marker(pytest.mark.xdist_group("lab-waits"))
    chosen = set(map(id, lab))
    items[:] = serial + waiting + [i for i in items if id(i) not in chosen]


@pytest.fixture(scope="module")
def busy() -> Iterator[int]:
    """A CPU-bound process beside the lab for the whole test module (its PID), stopped at the end."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield hog.pid
    finally:
        hog.kill()
        hog.wait(timeout=10)
