"""The node-failure built-ins: a node dies behind a plain Service and behind Istio's outlier
detection (issue 45's teaching scenarios). 3 replicas on node-1..3, node-2 (web-1's) dies at
60 s; 30 requests a second."""

from __future__ import annotations

from pathlib import Path

import pytest

from probesim.engine import simulate
from probesim.manifests.scenario import load_scenario
from probesim.scenarios import find
from tests.builders import accounted, builtin, series, times


def test_behind_a_plain_service_every_third_request_fails_until_the_node_controller_notices() -> None:
    # node-monitor-grace-period 50 s from the last lease renewal (55 s, on the 5 s monitor
    # phase): NodeNotReady and MarkPodsNotReady at 105 s, the endpoint dropped then. Until then
    # kube-proxy sends web-1 every third request, and nothing answers: 45 s × 10/s time out.
    r = simulate(builtin("node-failure"))
    route = r.route("/")
    assert route.failed_total == route.failed["not_answering"] == 450
    assert sum(series(r, "route./.not_answering")[:60]) == sum(series(r, "route./.not_answering")[105:]) == 0
    assert times(r, "NodeNotReady", "node/node-2") == [105]
    assert times(r, "PodNotReady", "pod/web-1") == [105]
    # The unreachable taint at the next pass; eviction after the default 300 s toleration; the
    # ReplicaSet's replacement on the spare node, while web-1 stays Terminating on the dead one.
    assert times(r, "TaintManagerEviction", "pod/web-1") == [410]
    assert [e.message for e in r.events_for("pod/web-3", "Scheduled")] == [
        "Successfully assigned default/web-3 to node-4"
    ]
    accounted(r)


def test_behind_istio_the_dead_pod_is_ejected_within_two_seconds_and_one_request_fails() -> None:
    # The client's sidecar kept a connection to web-1 alive: its first request there after the
    # node died (60.033 s) goes out on it and hangs until the client's 5 s timeout — the one
    # failure. While it hangs, least request (two choices by active requests) picks web-1 only
    # when both draws land on it, 1/9 of the requests: the next ones there (60.5, 60.966 and
    # 61.133 s) need a new connection and wait in the pool for the first one's 1 s connect
    # timeout, which fails them all at 61.5 s (purgePendingStreams): three 503s in a row, web-1
    # ejected then. Each is retried on another pod (Istio's default retry policy).
    r = simulate(builtin("node-failure-outlier"))
    route = r.route("/")
    assert route.failed == {**dict.fromkeys(route.failed, 0), "not_answering": 1}
    assert route.ok == 12_599
    ejected = [e.time_ms for e in r.events if e.reason == "OutlierEject"]
    assert ejected[0] == 61_500
    # Back after its 30 s ejection (92 s), web-1's kept-alive connection is gone: its requests
    # fail to connect from the first, and the three pending at the first timeout eject it again.
    assert ejected[1:] == [93_166]
    assert route.envoy["upstream_rq_retry"] == 11
    assert times(r, "NodeNotReady", "node/node-2") == [105]
    accounted(r)


def test_a_budget_of_every_replica_stalls_the_drain_for_good() -> None:
    # minAvailable 100 % of 3: desiredHealthy 3 (rounded up), disruptionsAllowed 0, so every
    # eviction of web-1 is refused (429) and kubectl drain retries every 5 s
    # (EvictErrorRetryDelay) until the run ends: 48 attempts from 60 s to 295 s, no pod touched.
    r = simulate(builtin("drain-stalled-by-pdb"))
    attempts = [60 + 5 * i for i in range(48)]
    assert times(r, "EvictionRefused", "pod/web-1") == attempts
    assert times(r, "Killing") == [] and times(r, "Drained") == []
    assert set(series(r, "pdb.web.allowed")) == {0}
    assert r.route("/").failed_total == 0
    accounted(r)


def test_a_pool_upgrade_under_a_slow_starter_with_tight_liveness_stalls_and_cascades() -> None:
    # GKE's surge upgrade: node-4 created at 60 s, Ready at 120 s; node-1 cordoned and drained
    # then (web-0 evicted, the budget allowing one). Its replacement web-3 needs 60 s to start
    # but liveness (initialDelay 10, period 10, threshold 3) kills it at 50 s, every time; with
    # web-3 never Ready the budget (maxUnavailable 1: desiredHealthy 2) allows no more evictions,
    # so node-2's drain is refused from 181 s to the end; the two warm pods, overloaded (34/s
    # where they serve 25), leave the Service from 136 s and flap out of it every 21 s; a liveness
    # probe waits for a worker behind the queue (not behind the 8 requests at work), and the
    # queue the Service left them drains each time before three probes in a row time out, until
    # 211 s: restarted every 70 s from then — the lab's times (issue 45; 171 s and every 40 s
    # while a probe waited a step late for every request held; every 50 s at a 1 s step, where
    # a pod restarted at 211.1 s is Ready at 212 s, not at once, and leaves the Service 0.9 s
    # later: its queue has drained 0.9 s less when the liveness probe of 251 s comes, and it
    # fails). Each kill resets what the pod held: its queue and its 8 requests at work, of which
    # the simulation counted some 3.5 as answered before issue 45 (the lab, its costs exact:
    # 280 reset, 301 simulated beside it).
    r = simulate(builtin("pool-upgrade-slow-start-killed"))
    assert [e.time_ms / 1000 for e in r.events_for("node/node-1", "Drained")] == [121]
    assert times(r, "Drained", "node/node-2") == [] and times(r, "NodePoolUpgraded") == []
    assert times(r, "EvictionRefused", "pod/web-1")[0] == 181
    assert times(r, "Killing", "pod/web-3")[0] == 150
    assert times(r, "PodReady", "pod/web-3") == []
    for pod in ("pod/web-1", "pod/web-2"):
        assert times(r, "PodNotReady", pod)[:4] == [136, 157, 178, 199]
        assert times(r, "Killing", pod) == [211, 281, 351, 421]
    assert r.workload("web").restarts == {"web-0": 0, "web-1": 4, "web-2": 4, "web-3": 6}
    route = r.route("/")
    failed = route.failed
    assert (failed["no_endpoint"], failed["rejected"], failed["timeout"], failed["killed"]) == (
        2593,
        1133,
        3,
        293,
    )
    accounted(r)


WARM_PODS = """      pods:
        - ordinals: [0, 1, 2]                # running for days before the upgrade: warm
          containers:
            app: {start: 0s, routes: *routes, capacity: *capacity}
"""


@pytest.mark.parametrize(
    "cpu", [("38ms", "40ms"), ("42ms", "40ms"), ("41ms", "39ms"), ("42ms", "42ms"), ("38ms", "38ms")]
)
def test_the_overloads_timeline_holds_with_a_few_per_cent_more_or_less_cpu_a_request(
    tmp_path: Path, cpu: tuple[str, str]
) -> None:
    # The lab runs this built-in for real, where each pod's CPU per request is the script's
    # give or take a little; an overload whose every flap and kill moves with 1 ms (as it did at
    # 30 requests/s and a queue of 64) cannot be compared. With web-1 and web-2 at ±5 %, every
    # event of theirs stays where it was.
    b = find("pool-upgrade-slow-start-killed")
    assert b is not None
    text = b.path.read_text()
    assert WARM_PODS in text
    pods = "      pods:\n" + "".join(
        f"        - ordinals: [{i}]\n          containers:\n"
        f"            app: {{start: 0s, routes: {{/: {{cpu: {c}}}}}, capacity: *capacity}}\n"
        for i, c in enumerate(("40ms", *cpu))
    )
    changed = tmp_path / "perturbed.yaml"
    changed.write_text(text.replace(WARM_PODS, pods))
    ref, moved = simulate(builtin("pool-upgrade-slow-start-killed")), simulate(load_scenario(str(changed)))
    for pod in ("pod/web-1", "pod/web-2"):
        for reason in ("PodReady", "PodNotReady", "Killing"):
            assert times(moved, reason, pod) == times(ref, reason, pod), (pod, reason)


def test_the_same_upgrade_with_a_startup_probe_and_a_spare_replica_rides_through() -> None:
    # startupProbe (up to 120 s) holds liveness off the cold start: each replacement is Ready
    # 60 s after it is placed, the budget allows the next eviction then, and the four nodes are
    # replaced one a minute; with four replicas, three carry the load while one starts.
    r = simulate(builtin("pool-upgrade-startup-probe"))
    assert times(r, "Drained") == [121, 182, 243, 304]
    assert times(r, "NodePoolUpgraded") == [304]
    assert [times(r, "PodReady", f"pod/web-{i}") for i in (4, 5, 6, 7)] == [[180], [241], [302], [363]]
    assert r.workload("web").total_restarts == 0
    assert r.route("/").failed_total == 0 and r.route("/").ok == 15_810
    accounted(r)
