"""Python's garbage collector in the lab's processes (the lab itself and each test app), held
back for a run: what was loaded before it starts is frozen out of every collection, and the
young generation is collected every 50,000 allocations instead of 700, the oldest rarely.

Without it a run that holds tens of thousands of connections open (seed 004's delayed calls)
spent nearly all of the lab's CPU in full collections — 10.1 of 10.5 s in one run, pauses of
2 s, the load generator 1.9 s behind its schedule — because every collection of the oldest
generation walks every live connection's objects again. Garbage made in a run is mostly
short-lived (a request's objects), which the young generations still collect; the oldest is
collected when it has grown by half again (CPython's own rule) and at most once per 1,000
collections of the middle one."""

from __future__ import annotations

import gc

YOUNG = 50_000
MIDDLE = 50
OLD = 1_000


def hold_back() -> None:
    """Freeze what is loaded now out of every collection and space the collections out."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, MIDDLE, OLD)
