"""Every request is accounted for (issue 13): offered = ok + failed + dropped + interrupted +
in flight, and a request its client gave up on is a timeout, whatever its server does later."""

from __future__ import annotations

from typing import Any

import pytest

from probesim.engine import simulate
from probesim.scenarios import builtins
from tests.builders import INSTANT, accounted, builtin, run, series


@pytest.mark.parametrize("name", [b.name for b in builtins()])
def test_every_builtin_scenario_accounts_for_every_request(name: str) -> None:
    accounted(simulate(builtin(name)))


def slow(capacity: dict[str, Any], **behavior: Any) -> dict[str, Any]:
    """An app that answers / in 5 s (waiting, no CPU), exactly."""
    return {"routes": {"/": {"wall": "5s"}}, "variability": 0.0, "capacity": capacity, **behavior}


@pytest.mark.parametrize("capacity", [{}, {"workers": 1}])
def test_a_request_the_client_gives_up_on_is_a_timeout(capacity: dict[str, Any]) -> None:
    # 1 request a second, answered in 5 s, a 2 s client timeout: each is a timeout 2 s after it
    # was sent, whether it was being served (no worker limit) or still queued behind the one
    # worker (which serves one every 5 s, each long given up on). The last two are still awaited.
    r = run(behavior=slow(capacity), traffic=[{"rate": 1, "timeout": "2s"}], duration="20s")
    route = r.route("/")
    assert (route.offered, route.ok, route.failed_total, route.in_flight) == (20, 0, 18, 2)
    assert route.failed["timeout"] == 18
    assert series(r, "route./.timeout") == [0, 0] + [1] * 18
    assert series(r, "route./.inflight") == [1] + [2] * 19
    assert route.latency_ms["max"] == 2000
    accounted(r)


def test_a_timeout_is_not_lost_when_its_container_stops_later() -> None:
    # The one worker still holds requests whose clients gave up when the container crashes at
    # 10 s: they stay timeouts, and are not lost again with it.
    r = run(
        spec=INSTANT,  # restarted at once, so the requests at 10 and 11 s meet the new container
        behavior=slow({"workers": 1}, episodes=[{"kind": "crash", "after": "10s"}]),
        traffic=[{"rate": 1, "timeout": "2500ms"}],
        duration="12s",
    )
    route = r.route("/")
    # Sent at 0-7 s: given up on 2.5 s later, seen at the next step (3-10 s; at 10 s before
    # the crash is). Sent at 8 and 9 s: lost with the container at 10 s. Sent at 10 and 11 s:
    # queued in the restarted container (restarted at once, no readiness probe), awaited.
    assert series(r, "route./.timeout") == [0, 0, 0] + [1] * 8 + [0]
    assert series(r, "route./.killed") == [0] * 10 + [2, 0]
    assert series(r, "route./.inflight") == [1, 2] + [3] * 8 + [1, 2]
    assert (route.failed_total, route.failed["timeout"], route.failed["killed"]) == (10, 8, 2)
    assert (route.offered, route.ok, route.in_flight) == (12, 0, 2)
    accounted(r)
