"""Build scenarios in tests from plain Python values, through the real YAML loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from probesim.engine import simulate
from probesim.manifests.scenario import load_scenario, scenario_from_text
from probesim.model.scenario import Scenario
from probesim.results import CAUSES, Result
from probesim.scenarios import find


def builtin(name: str) -> Scenario:
    """A built-in scenario (src/probesim/scenarios), loaded as a user's file would be."""
    b = find(name)
    assert b is not None, f"no built-in scenario {name}"
    return load_scenario(str(b.path))


# The kubelet's own rules without the time a restart takes (spec.cluster.containerRestartDelay,
# 100 ms by default): for tests whose numbers read as the reference states those rules.
INSTANT = {"cluster": {"containerRestartDelay": "0s"}}


def http(path: str = "/healthz", **fields: Any) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": 8080}, **fields}


def scenario(
    *,
    probes: dict[str, Any] | None = None,
    behavior: dict[str, Any] | None = None,
    overrides: list[dict[str, Any]] | None = None,
    replicas: int = 1,
    duration: str = "60s",
    step: str = "1s",
    traffic: list[dict[str, Any]] | None = None,
    kind: str = "Deployment",
    pod_spec: dict[str, Any] | None = None,
    workload_spec: dict[str, Any] | None = None,
    service: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    base_dir: Path = Path("."),
    manifests: list[dict[str, Any]] | None = None,
    template_labels: dict[str, str] | None = None,
) -> Scenario:
    container = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"containerPort": 8080, "name": "http"}],
    }
    container.update(probes or {})
    pspec: dict[str, Any] = {"containers": containers or [container], **(pod_spec or {})}
    labels = {"app": "web"}
    if kind == "Pod":
        obj: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "labels": labels},
            "spec": pspec,
        }
    else:
        obj = {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": {**labels, **(template_labels or {})}}, "spec": pspec},
                **(workload_spec or {}),
            },
        }
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}], **(service or {})},
    }
    wb: dict[str, Any] = {}
    if behavior:
        wb["containers"] = {"app": behavior}
    if overrides:
        wb["pods"] = overrides
    sc: dict[str, Any] = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "test"},
        "spec": {
            "duration": duration,
            "step": step,
            "behavior": {"web": wb},
            "traffic": traffic or [],
            **(spec or {}),
        },
    }
    text = yaml.safe_dump_all([sc, obj, svc, *(manifests or [])], sort_keys=False)
    return scenario_from_text(text, "test.yaml", base_dir)


def run(**kw: Any) -> Result:
    return simulate(scenario(**kw))


def times(result: Result, reason: str, obj: str | None = None, contains: str = "") -> list[float]:
    """Seconds at which events with ``reason`` (on ``obj``, message containing ``contains``) happened."""
    return [e.time_ms / 1000 for e in result.events_for(obj, reason) if contains in e.message]


def series(result: Result, key: str) -> list[int]:
    return [int(x) for x in result.series[key]]


def accounted(result: Result) -> None:
    """Every request of every route is accounted for, at every step and in the summary:
    offered = ok + failed + dropped + interrupted + in flight (still awaited by its client)."""
    s = result.series
    for route in result.routes:
        key = f"route.{route.name}"
        done = s[f"{key}.ok"] + s[f"{key}.dropped"] + s[f"{key}.interrupted"]
        done = done + sum(s[f"{key}.{c}"] for c in CAUSES)
        sent = np.cumsum(s[f"{key}.offered"])
        assert np.array_equal(sent, np.cumsum(done) + s[f"{key}.inflight"]), route.name
        assert (s[f"{key}.inflight"] >= 0).all(), route.name
        parts = (route.ok, route.failed_total, route.dropped, route.interrupted, route.in_flight)
        assert route.offered == sum(parts), (route.name, route.offered, parts)
        assert route.in_flight == (int(s[f"{key}.inflight"][-1]) if sent.size else 0)


# The rules of disruption budgets and spreading (PS035–PS040): not the tuner's to fix (it tunes
# probes), so a check of its patch leaves them out.
DISRUPTION_RULES = ("PS035", "PS036", "PS037", "PS038", "PS039", "PS040")


def probe_rules_config(folder: Path) -> str:
    """A check config (``--config``) that leaves out the disruption rules."""
    path = folder / "probe-rules.yaml"
    path.write_text(yaml.safe_dump({"exclude": list(DISRUPTION_RULES)}))
    return str(path)
