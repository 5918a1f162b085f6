"""Time without endpoints per route (RouteSummary.no_endpoint_s), including equal routes."""

from __future__ import annotations

from tests.builders import run


def test_two_equal_traffic_entries_each_count_their_time_without_endpoints() -> None:
    # Two entries equal but for their names once crashed the summary: Route equality reached
    # numpy fields. (Two of one name are refused: their series are keyed on it.)
    r = run(
        replicas=2,
        behavior={"start": "5s"},
        probes={"readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}},
        traffic=[
            {"rate": 1, "name": "a"},
            {"rate": 1, "name": "b"},
            {"rate": 1, "name": "late", "start": "3s"},
        ],
    )
    assert [x.no_endpoint_s for x in r.routes] == [5.0, 5.0, 2.0]
