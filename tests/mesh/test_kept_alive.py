"""A client sidecar's kept-alive connection to a host whose node dies (engine/sidecar/pool.py):
the request that takes it hangs, and while it does least request steers away from the host."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from probesim.engine import simulate
from probesim.engine.sidecar.pool import two_choices
from tests.builders import accounted, scenario, series


def envoy_two_choices(active: list[int]) -> list[float]:
    """Envoy's unweightedHostPick with choice_count 2, over every pair of draws: the first
    draw is kept unless the second has fewer active requests."""
    k = len(active)
    wins = [0] * k
    for first, second in itertools.product(range(k), repeat=2):
        wins[second if active[second] < active[first] else first] += 1
    return [w / (k * k) for w in wins]


def test_one_hung_request_leaves_its_host_one_pick_in_nine_of_three() -> None:
    assert two_choices(np.array([0, 1, 0])).tolist() == [4 / 9, 1 / 9, 4 / 9]
    assert two_choices(np.array([2, 2, 2, 2])).tolist() == [0.25] * 4


@given(st.lists(st.integers(0, 3), min_size=1, max_size=7))
def test_two_choices_is_envoys_pick_over_every_pair_of_draws(active: list[int]) -> None:
    got = two_choices(np.array(active, np.int64))
    assert np.allclose(got, envoy_two_choices(active))
    assert abs(got.sum() - 1.0) < 1e-12


def run(lb: str) -> object:
    rule = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": "web"},
        "spec": {
            "host": "web",
            "trafficPolicy": {
                "loadBalancer": {"simple": lb},
                "connectionPool": {"tcp": {"connectTimeout": "1s"}},
            },
        },
    }
    no_retries = {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": "web"},
        "spec": {
            "hosts": ["web"],
            "http": [{"route": [{"destination": {"host": "web"}}], "retries": {"attempts": 0}}],
        },
    }
    return simulate(
        scenario(
            probes={"readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5}},
            replicas=3,
            duration="100s",
            traffic=[{"path": "/", "rate": 90, "clients": 1, "timeout": "10s"}],
            manifests=[rule, no_retries],
            spec={
                "cluster": {"nodes": {"count": 3, "zones": ["a", "b", "c"]}},
                "actions": [{"kind": "nodeDown", "node": "node-2", "at": "60s"}],
            },
        )
    )


def test_least_request_sends_a_ninth_to_the_dead_host_while_its_request_hangs() -> None:
    """No outlier detection, no retries, 90 requests a second: every request that reaches web-1
    after its node dies fails. The first hangs on the kept-alive connection until the client's
    10 s timeout; until then least request picks web-1 only when both draws land on it (10 a
    second, not 30); after it, a third again."""
    r = run("LEAST_REQUEST")
    failed = series(r, "route./.not_answering")
    during, after = sum(failed[61:70]), sum(failed[71:100])
    assert 60 <= during <= 120, during  # 9 s × 10/s
    assert 780 <= after <= 960, after  # 29 s × 30/s
    accounted(r)


def test_round_robin_gives_the_dead_host_its_turn_whatever_hangs_there() -> None:
    """Round robin does not look at active requests: web-1's third of the requests fails from
    the crash on, the first of them hung on the kept-alive connection."""
    r = run("ROUND_ROBIN")
    failed = series(r, "route./.not_answering")
    assert failed[61:100] == [30] * 39
    assert r.route("/").failed["not_answering"] == 30 * 40
    accounted(r)
