"""The lab's load generator: latency percentiles from its HdrHistogram, open-loop counting."""

from __future__ import annotations

import asyncio

import pytest

from probesim.lab.load import LoadResult, cause_of, constant_rate


def test_latency_percentiles_as_the_simulation_reports_them() -> None:
    r = LoadResult()
    assert r.latency_ms() == {}
    for us in (1000, 2000, 3000, 150_000):
        r.latency_us.record_value(us)
    assert r.latency_ms() == {"p50": 2.0, "p95": 150.0, "p99": 150.0, "max": 150.0}


def test_no_endpoint_counts_as_refused_and_only_127_0_0_1_is_loaded() -> None:
    out = asyncio.run(constant_rate(list, rate=50, duration_s=0.2, timeout_s=1))
    assert (out.sent, out.failed["no_endpoint"], out.statuses, out.latency_ms()) == (10, 10, {}, {})
    with pytest.raises(ValueError, match=r"only sends load to 127\.0\.0\.1"):
        asyncio.run(constant_rate(["http://10.0.0.1:80/"], rate=10, duration_s=0.2))


@pytest.mark.parametrize(
    ("status", "body", "cause"),
    [
        (503, b"no healthy upstream", "no_endpoint"),
        (
            503,
            b"upstream connect error or disconnect/reset before headers. reset reason: connection failure, "
            b"transport failure reason: delayed connect error: Connection refused",
            "restarting",
        ),
        (
            503,
            b"upstream connect error or disconnect/reset before headers. reset reason: connection termination",
            "killed",
        ),
        (504, b"upstream request timeout", "timeout"),
        (503, b"overloaded\n", "rejected"),  # the test app's full queue
        (503, b"maintenance", "error_status"),  # the app's own 503
        (500, b"no healthy upstream", "error_status"),
    ],
)
def test_failed_answers_get_the_simulations_cause_from_envoys_local_replies(
    status: int, body: bytes, cause: str
) -> None:
    assert cause_of(status, body) == cause


def test_answers_are_counted_as_they_come_into_the_result_given() -> None:
    out = LoadResult()
    ret = asyncio.run(constant_rate(list, rate=50, duration_s=0.2, timeout_s=1, out=out))
    assert ret is out
    assert (out.ok, dict(out.failed)) == (0, {"no_endpoint": 10})
