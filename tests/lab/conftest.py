"""The lab's tests run one after another in one pytest-xdist worker (``make test`` runs two):
they run real processes in real time, mostly waiting, beside the other worker's CPU-bound
tests — the busy machine they are written to hold on — but never beside each other."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/lab/" in item.nodeid.replace("\\", "/") or item.nodeid.startswith("lab/"):
            item.add_marker(pytest.mark.xdist_group("lab"))
