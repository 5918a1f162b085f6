"""Invariants under random node faults (hypothesis): nodes crash or are cut off, alone or a zone
at once, come back or not, while the control plane marks, taints, evicts and the controllers
replace; with and without the load model, keep-alive, client sidecars and StatefulSets."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probesim.engine import simulate
from tests.builders import accounted, scenario


@st.composite
def faulty(draw: st.DrawFn) -> Any:
    n_nodes = draw(st.integers(1, 4))
    zones = draw(st.sampled_from([[], ["a"], ["a", "b"]]))
    duration = draw(st.integers(20, 240))
    actions: list[dict[str, Any]] = []
    if zones and draw(st.booleans()):
        at = draw(st.integers(0, duration))
        mode = draw(st.sampled_from(["crash", "partition"]))
        actions.append({"kind": "zoneDown", "zone": zones[0], "at": f"{at}s", "mode": mode})
        if draw(st.booleans()):
            actions.append(
                {"kind": "zoneUp", "zone": zones[0], "at": f"{draw(st.integers(at + 1, at + 200))}s"}
            )
    else:
        for i in range(1, n_nodes + 1):
            if not draw(st.booleans()):
                continue
            at = draw(st.integers(0, duration))
            mode = draw(st.sampled_from(["crash", "partition"]))
            actions.append({"kind": "nodeDown", "node": f"node-{i}", "at": f"{at}s", "mode": mode})
            if draw(st.booleans()):
                back = draw(st.integers(at + 1, at + 200))
                actions.append({"kind": "nodeUp", "node": f"node-{i}", "at": f"{back}s"})
                if draw(st.booleans()):
                    again = draw(st.integers(back, back + 60))
                    actions.append({"kind": "nodeDown", "node": f"node-{i}", "at": f"{again}s", "mode": mode})
    cluster = {
        "nodes": {"count": n_nodes, "zones": zones, "cpu": draw(st.sampled_from([1, 4]))},
        "nodeMonitorGracePeriod": draw(st.sampled_from(["10s", "50s"])),
        "defaultUnreachableToleration": draw(st.sampled_from(["0s", "20s", "300s"])),
        "podStartDelay": draw(st.sampled_from(["0s", "2s"])),
    }
    loaded = draw(st.booleans())
    behavior: dict[str, Any] = {"start": draw(st.sampled_from(["0s", "3s"]))}
    if loaded:
        behavior["routes"] = {"/": {"cpu": "5ms", "wall": draw(st.sampled_from(["0ms", "300ms", "3s"]))}}
        behavior["capacity"] = {"workers": 8, "queue": 50}
    probes: dict[str, Any] = {}
    if draw(st.booleans()):
        probes["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 2}
    if draw(st.booleans()):
        probes["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 3}
    container = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"requests": {"cpu": draw(st.sampled_from(["100m", "600m"]))}},
        **probes,
    }
    traffic: dict[str, Any] = {
        "rate": draw(st.sampled_from([3, 40, 300])),
        "timeout": draw(st.sampled_from(["1s", "10s", None])),
        "keepAlive": draw(st.booleans()),
        "noEndpoint": draw(st.sampled_from(["refused", "retransmit"])),
    }
    manifests: list[dict[str, Any]] = []
    if draw(st.booleans()):
        policy: dict[str, Any] = {"loadBalancer": {"simple": "ROUND_ROBIN"}}
        if draw(st.booleans()):
            policy["outlierDetection"] = {
                "consecutive5xxErrors": 2,
                "interval": "1s",
                "baseEjectionTime": "5s",
            }
        if draw(st.booleans()):
            policy["connectionPool"] = {"tcp": {"connectTimeout": "1s"}}
        manifests.append(
            {
                "apiVersion": "networking.istio.io/v1",
                "kind": "DestinationRule",
                "metadata": {"name": "web"},
                "spec": {"host": "web", "trafficPolicy": policy},
            }
        )
        traffic["clients"] = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["Deployment", "StatefulSet"]))
    return scenario(
        kind=kind,
        containers=[container],
        behavior=behavior,
        replicas=draw(st.integers(1, 5)),
        traffic=[traffic],
        duration=f"{duration}s",
        workload_spec={"serviceName": "web"} if kind == "StatefulSet" else None,
        manifests=manifests,
        spec={"cluster": cluster, "actions": actions, "seed": draw(st.integers(0, 100))},
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulty())
def test_no_request_is_lost_from_the_books_under_node_faults(sc: Any) -> None:
    # offered = ok + failed + dropped + interrupted + in flight, at every step, whatever the
    # nodes do: a request to a pod on a failed node is a failure or still awaited, never lost.
    r = simulate(sc)
    accounted(r)
    s = r.series
    nodes = sc.spec.cluster.node_list()
    placed = sum(s[f"node.{n.name}.pods"] for n in nodes)
    # Every active pod is on a node or waiting for one (a node also holds terminating pods).
    assert int(placed[-1]) + len(r.pending) >= int(s["workload.web.current"][-1])
    assert sum(len(n.pods_at_end) for n in r.nodes) == int(placed[-1])
    for n in nodes:
        assert set(np.unique(s[f"node.{n.name}.ready"]).tolist()) <= {0, 1}
    ready, current = s["workload.web.ready"], s["workload.web.current"]
    assert (ready <= current).all()
    times = [e.time_ms for e in r.events]
    assert times == sorted(times)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(faulty())
def test_same_faults_same_result(sc: Any) -> None:
    assert json.dumps(simulate(sc).to_json()) == json.dumps(simulate(sc).to_json())
