"""A route's latency summary is ordered: p50 ≤ p90 ≤ p95 ≤ p99 ≤ max, also when most steps carry
few requests (each step's max is read at its own count's top quantile, below the run's p99)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from probesim.engine import simulate
from probesim.manifests.generated import Options, generate
from probesim.manifests.scenario import load_scenario
from probesim.scenarios import HERE
from tests.cli.test_run_manifests import deployment, service, write


def ordered(latency: dict[str, float]) -> bool:
    keys = ("p50", "p90", "p95", "p99", "max")
    return all(latency[a] <= latency[b] for a, b in pairwise(keys))


def test_a_light_route_reports_a_max_no_lower_than_its_p99(tmp_path: Path) -> None:
    # 2 replicas at 10 req/s each: 20 requests a step, whose top quantile lies below the run's p99
    # (this case read p99 29.0 ms above a max of 24 ms).
    folder = tmp_path / "k8s"
    folder.mkdir()
    write(folder, "app.yaml", deployment(), service())
    scenario, _ = generate([str(folder)], Options()).load()
    result = simulate(scenario)
    (route,) = result.routes
    assert route.latency_ms["max"] >= route.latency_ms["p99"] > 0
    assert ordered(route.latency_ms)


@pytest.mark.parametrize("name", ["patient-all-ok", "seed003-outlier"])
def test_built_in_latency_summaries_are_ordered(name: str) -> None:
    result = simulate(load_scenario(str(HERE / f"{name}.yaml")))
    assert result.routes
    for route in result.routes:
        if route.latency_ms:
            assert ordered(route.latency_ms), (route.name, route.latency_ms)
