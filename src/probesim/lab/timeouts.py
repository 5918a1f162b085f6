"""aiohttp client timeouts that end when they say: by default aiohttp rounds a deadline of 5 s
or more up to the next whole second of the loop's clock, which made a kubelet-like probe with
timeoutSeconds 5 fail up to a second late."""

from __future__ import annotations

import math

import aiohttp


def exact(total: float | None) -> aiohttp.ClientTimeout:
    """A timeout of ``total`` seconds for the whole request (None: none), never rounded up."""
    return aiohttp.ClientTimeout(total=total, ceil_threshold=math.inf)
