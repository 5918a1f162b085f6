"""The lab's tests run one after another in one pytest-xdist worker (``make test`` runs two),
first, so that the other worker takes all the rest beside them: they run real processes in
real time, mostly waiting, beside the other worker's CPU-bound tests — the busy machine they
are written to hold on — but never beside each other."""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which appends the group to each node's id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    lab = [i for i in items if "tests/lab/" in i.nodeid.replace("\\", "/")]
    for item in lab:
        item.add_marker(pytest.mark.xdist_group("lab"))
    chosen = set(map(id, lab))
    items[:] = lab + [i for i in items if id(i) not in chosen]
