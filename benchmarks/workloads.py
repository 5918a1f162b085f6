"""The scenarios issue 14's benchmarks run, built in memory (no file is written).

- ``seed``: the seed's own workload: a Deployment whose pods are probed every second
  (readiness and liveness, ``periodSeconds: 1``), a tenth of them starting slowly (25 s) and
  hanging once (45 s, at 600 s of age), requests balanced round robin over the ready pods;
  optionally with the capacity model (route costs, workers) and kept-alive connections;
- ``surge``: the built-in ``gke-surge-defaults`` (capacity model, CPU limits, HPA) scaled to
  ``pods`` replicas and its traffic to the same load per pod;
- ``dependency``: the built-in ``patient-timeout-retry-3`` (a route calling a dependency that
  delays half its answers, with a timeout and retries; keep-alive clients) scaled likewise;
- ``outlier``: the built-in ``seed003-outlier`` (client sidecars, outlier detection) scaled to
  ``pods`` pods, ``clients`` client sidecars and 10 requests per second per pod;
- ``generated``: the scenario ``probesim run`` generates for a Deployment and its Service (3
  replicas requesting 100m of CPU: 30 requests/s, 5 ms of CPU each, the capacity model), for a
  duration (the manifest is written to a temporary directory, the generator's input).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml

from probesim.manifests.scenario import scenario_from_text
from probesim.model.scenario import Scenario

SLOW_EVERY = 10  # one pod in ten starts slowly and hangs once
SLOW_START_S = 25
HANG_AFTER_S = 600
HANG_FOR_S = 45
PERIOD_S = 1


def seed(
    pods: int,
    seconds: int,
    rate: float,
    period: int = PERIOD_S,
    loaded: bool = False,
    keep_alive: bool = False,
) -> Scenario:
    """The seed workload (see the module docstring)."""
    probe = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": period}
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
    hang = {"kind": "hang", "after": f"{HANG_AFTER_S}s", "for": f"{HANG_FOR_S}s"}
    slow: dict[str, Any] = {"app": {"start": f"{SLOW_START_S}s", "episodes": [hang]}}
    cost = {
        "routes": {"/": {"cpu": "5ms", "wall": "20ms"}, "/healthz": {"cpu": "0.2ms"}},
        "capacity": {"workers": 32},
    }
    if loaded:
        slow["app"].update(cost)
    sc = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": f"bench-{pods}x{seconds}-{rate:g}"},
        "spec": {
            "duration": f"{seconds}s",
            "behavior": {
                "web": {
                    "containers": {"app": cost} if loaded else {},
                    "pods": [{"ordinals": list(range(0, pods, SLOW_EVERY)), "containers": slow}],
                }
            },
            "traffic": [{"rate": rate, "keepAlive": keep_alive, "preAllocatedVUs": 50}],
        },
    }
    return scenario_from_text(yaml.safe_dump_all([sc, deploy, svc]), "bench.yaml", Path("."))


def _builtin(name: str) -> tuple[Path, list[dict[str, Any]]]:
    """A built-in's documents, its manifests inlined."""
    from probesim import scenarios

    found = scenarios.find(name)
    assert found is not None, name
    docs = [d for d in yaml.safe_load_all(found.path.read_text(encoding="utf-8")) if d]
    for m in docs[0].pop("manifests", None) or []:
        text = (found.path.parent / m).read_text(encoding="utf-8")
        docs += [d for d in yaml.safe_load_all(text) if d]
    return found.path.parent, docs


def _scaled(name: str, pods: int, rate_factor: float, seconds: int | None, clients: int | None) -> Scenario:
    base, docs = _builtin(name)
    spec = docs[0]["spec"]
    for d in docs[1:]:
        if d.get("kind") == "Deployment":
            d["spec"]["replicas"] = pods
        elif d.get("kind") == "HorizontalPodAutoscaler":
            d["spec"]["minReplicas"] = pods
            d["spec"]["maxReplicas"] = 2 * pods
    for tr in spec.get("traffic", []):
        if clients is not None:
            tr["clients"] = clients
        for key in ("rate", "startRate"):
            if key in tr:
                tr[key] *= rate_factor
        for key in ("preAllocatedVUs", "maxVUs"):  # k6's virtual users, as many more as requests
            if key in tr:
                tr[key] = round(tr[key] * rate_factor)
        for stage in tr.get("stages", []):
            stage["target"] *= rate_factor
    if seconds is not None:
        spec["duration"] = f"{seconds}s"
    docs[0]["metadata"]["name"] = f"{name}-{pods}"
    return scenario_from_text(yaml.safe_dump_all(docs), f"{name}.yaml", base)


def surge(pods: int, seconds: int | None = None) -> Scenario:
    """gke-surge-defaults (10 pods, HPA 10 → 20) scaled to ``pods`` (HPA ``pods`` → 2 × ``pods``)."""
    return _scaled("gke-surge-defaults", pods, pods / 10, seconds, None)


def dependency(pods: int, seconds: int | None = None) -> Scenario:
    """patient-timeout-retry-3 (2 pods whose route calls a dependency that delays half its
    answers by 100 s, with a 200 ms timeout and 3 tries; keep-alive clients at 900 req/s a route)
    scaled to ``pods`` at the same load a pod."""
    return _scaled("patient-timeout-retry-3", pods, pods / 2, seconds, None)


def outlier(pods: int, clients: int, seconds: int | None = None) -> Scenario:
    """seed003-outlier (3 pods, 2 clients, 6 req/s) scaled to ``pods``, ``clients``, 10 req/s a pod."""
    return _scaled("seed003-outlier", pods, pods * 10 / 6, seconds, clients)


def default_max_ejection(rate: int, seconds: int | None = None) -> Scenario:
    """seed003-default-max-ejection (3 pods, one answering 500, 2 client sidecars, Istio's
    default maxEjectionPercent: the failing pod is detected over and over and never ejected)
    at ``rate`` requests/s."""
    return _scaled("seed003-default-max-ejection", 3, rate / 6, seconds, None)


GENERATED_APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: example.com/web:1.0
          ports: [{name: http, containerPort: 8080}]
          resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 256Mi}}
          readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 5}
          livenessProbe: {httpGet: {path: /live, port: http}, periodSeconds: 10}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
"""


def generated(replicas: int = 3, minutes: int = 5) -> Scenario:
    """What ``probesim run deploy.yaml --duration {minutes}m`` runs for a Deployment of
    ``replicas`` (100m of CPU requested each: 10 requests/s a replica)."""
    from probesim.manifests.generated import Options, generate

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deploy.yaml"
        path.write_text(GENERATED_APP % replicas, encoding="utf-8")
        sc, _ = generate([str(path)], Options(duration_ms=minutes * 60_000)).load()
    return sc
