"""The lab's load generator: latency percentiles from its HdrHistogram, open-loop counting."""

from __future__ import annotations

import asyncio

import pytest

from probesim.lab.load import LoadResult, constant_rate


def test_latency_percentiles_as_the_simulation_reports_them() -> None:
    r = LoadResult()
    assert r.latency_ms() == {}
    for us in (1000, 2000, 3000, 150_000):
        r.latency_us.record_value(us)
    assert r.latency_ms() == {"p50": 2.0, "p95": 150.0, "p99": 150.0, "max": 150.0}


def test_no_endpoint_counts_as_refused_and_only_127_0_0_1_is_loaded() -> None:
    out = asyncio.run(constant_rate(list, rate=50, duration_s=0.2, timeout_s=1))
    assert (out.sent, out.statuses[0], out.latency_ms()) == (10, 10, {})
    with pytest.raises(ValueError, match=r"only sends load to 127\.0\.0\.1"):
        asyncio.run(constant_rate(["http://10.0.0.1:80/"], rate=10, duration_s=0.2))
