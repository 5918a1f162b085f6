"""Engine throughput: pod-ticks per second for 1,000 pods × 3,600 ticks at 1,000 and 100,000
requests per second, against a per-request reference loop written here.

Run: ``make bench`` (or ``python benchmarks/engine.py [--pods N] [--ticks N]``). Figures vary
with the machine; the ratios are what to compare: the engine's cost per tick must not grow
with the request rate (target: within 10%), and it should beat the per-request loop by far.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import yaml

from probesim.engine import simulate
from probesim.manifests.scenario import scenario_from_text
from probesim.model.scenario import Scenario

TARGET_POD_TICKS = 5_000_000


def fleet(pods: int, ticks: int, rate: float, loaded: bool = False, keep_alive: bool = False) -> Scenario:
    """A Deployment with readiness and liveness probes; a tenth of the pods start slowly and
    hang once, so probes, kills, back-off and endpoint changes all happen during the run."""
    probe = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10}
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": pods,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "ports": [{"containerPort": 8080}],
                            "readinessProbe": probe,
                            "livenessProbe": probe,
                            "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
                        }
                    ]
                },
            },
        },
    }
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    slow = {"app": {"start": "25s", "episodes": [{"kind": "hang", "after": "600s", "for": "45s"}]}}
    cost = {
        "routes": {"/": {"cpu": "5ms", "wall": "20ms"}, "/healthz": {"cpu": "0.2ms"}},
        "capacity": {"workers": 32},
    }
    if loaded:
        slow["app"].update(cost)
    sc = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": f"bench-{pods}x{ticks}-{rate:g}"},
        "spec": {
            "duration": f"{ticks}s",
            "behavior": {
                "web": {
                    "containers": {"app": cost} if loaded else {},
                    "pods": [{"ordinals": list(range(0, pods, 10)), "containers": slow}],
                }
            },
            "traffic": [{"rate": rate, "keepAlive": keep_alive, "preAllocatedVUs": 50}],
        },
    }
    return scenario_from_text(yaml.safe_dump_all([sc, deploy, svc]), "bench.yaml", Path("."))


def engine_rate(sc: Scenario, pods: int, ticks: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        simulate(sc)
        best = min(best, time.perf_counter() - t0)
    return pods * ticks / best


def reference_rate(pods: int, rate: int, ticks: int) -> float:
    """The naive way: one Python step per request (pick the next ready pod, check it,
    count), plus a per-pod probe check each tick. Measured over a few ticks."""
    ready = np.ones(pods, bool)
    ready[::10] = False
    healthy = ready.copy()
    cursor = ok = failed = 0
    t0 = time.perf_counter()
    for tick in range(ticks):
        for p in range(pods):  # probes: one look per pod per tick
            if tick % 10 == 0:
                ready[p] = healthy[p]
        eps = [p for p in range(pods) if ready[p]]
        for _ in range(rate):
            p = eps[cursor % len(eps)]
            cursor += 1
            if healthy[p]:
                ok += 1
            else:
                failed += 1
    return pods * ticks / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--ticks", type=int, default=3600)
    args = ap.parse_args()
    pods, ticks = args.pods, args.ticks
    print(f"engine: {pods} pods × {ticks} ticks (1 s steps)")
    simulate(fleet(100, 60, 10))  # warm up imports and caches before timing
    rates = {}
    for rps in (1_000, 100_000):
        sc = fleet(pods, ticks, rps)
        rates[rps] = engine_rate(sc, pods, ticks)
        simulated = rps * rates[rps] / pods  # requests per second of wall time
        print(f"  {rps:>7,} req/s: {rates[rps]:>14,.0f} pod-ticks/s  ({simulated:,.0f} requests simulated/s)")
    flat = rates[100_000] / rates[1_000]
    verdict = "ok" if abs(1 / flat - 1) <= 0.10 else "MISSED"
    print(f"  cost per tick, 100,000 vs 1,000 req/s: {1 / flat:.3f}× (target within 10%: {verdict})")
    target = "ok" if min(rates.values()) >= TARGET_POD_TICKS else "MISSED"
    print(f"  target ≥ {TARGET_POD_TICKS:,} pod-ticks/s on one core: {target}")
    print("with the capacity model (1 core per pod, 5 ms CPU + 20 ms wait per request, 32 workers):")
    loaded = {}
    for rps in (1_000, 100_000):
        loaded[rps] = engine_rate(fleet(pods, ticks, rps, loaded=True), pods, ticks, repeat=1)
        simulated = rps * loaded[rps] / pods
        print(
            f"  {rps:>7,} req/s: {loaded[rps]:>14,.0f} pod-ticks/s  ({simulated:,.0f} requests simulated/s)"
        )
    ratio = loaded[1_000] / loaded[100_000]
    flatness = "flat" if abs(ratio - 1) <= 0.10 else "NOT flat"
    print(f"  cost per tick, 100,000 vs 1,000 req/s: {ratio:.3f}× ({flatness})")
    print(f"  capacity model costs {rates[1_000] / loaded[1_000]:.1f}× the plain engine")
    print("the same, clients keeping their connections (keepAlive, 50 VUs pre-allocated):")
    kept = {}
    for rps in (1_000, 100_000):
        kept[rps] = engine_rate(fleet(pods, ticks, rps, loaded=True, keep_alive=True), pods, ticks, repeat=1)
        simulated = rps * kept[rps] / pods
        print(f"  {rps:>7,} req/s: {kept[rps]:>14,.0f} pod-ticks/s  ({simulated:,.0f} requests simulated/s)")
    ratio = kept[1_000] / kept[100_000]
    flatness = "flat" if abs(ratio - 1) <= 0.10 else "NOT flat"
    print(f"  cost per tick, 100,000 vs 1,000 req/s: {ratio:.3f}× ({flatness})")
    print(f"  connections cost {loaded[1_000] / kept[1_000]:.2f}× per-request balancing")
    print("reference per-request loop (same fleet, 20 ticks):")
    for rps in (1_000, 100_000):
        ref = reference_rate(pods, rps, 20)
        print(f"  {rps:>7,} req/s: {ref:>14,.0f} pod-ticks/s  → engine is {rates[rps] / ref:,.0f}× faster")


if __name__ == "__main__":
    main()
