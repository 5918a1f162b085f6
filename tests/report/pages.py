"""Result documents for the HTML report's tests: real runs, renamed with hostile text."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from probesim.engine import simulate
from probesim.model.threshold import parse
from probesim.results.thresholds import evaluate
from tests.builders import builtin

# Names a manifest or a hand-edited result may hold: markup, script, quotes, entities, a bidi
# override, and the characters that end a <script> element or a JSON string.
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\'&amp;\u202e</script'


@cache
def _run(name: str) -> str:
    return json.dumps(simulate(builtin(name)).to_json())


def result_doc(name: str) -> dict[str, Any]:
    """``probesim run NAME --json``'s document (a fresh copy)."""
    return json.loads(_run(name))


def renamed(doc: dict[str, Any], old: str, new: str, route: str | None = None) -> dict[str, Any]:
    """``doc`` with workload (and pod, event object, Service) ``old`` renamed ``new``, and its
    first route renamed ``route``: every place the names appear, series keys included."""
    doc = copy.deepcopy(doc)
    doc["scenario"] = new
    for w in doc["summary"]["workloads"]:
        if w["name"] == old:
            w["name"] = new
            w["restartsByPod"] = {p.replace(old, new): n for p, n in w["restartsByPod"].items()}
    first = doc["summary"]["routes"][0]["name"]
    for r in doc["summary"]["routes"]:
        r["service"] = r["service"].replace(old, new)
        if route is not None and r["name"] == first:
            r["name"] = route
    for e in doc["events"]:
        e["object"] = e["object"].replace(old, new)
        e["message"] = e["message"].replace(old, new)
    series = {}
    for k, v in doc["series"].items():
        k = k.replace(f".{old}.", f".{new}.")
        if route is not None and k.startswith(f"route.{first}."):
            k = f"route.{route}." + k[len(f"route.{first}.") :]
        series[k] = v
    doc["series"] = series
    return doc


THRESHOLDS = ("errors: rate<0.01", "restarts: <=8", "p95: <500ms", f"errors{{route:{HOSTILE}}}: rate<0.9")


def verdicts(name: str) -> list[dict[str, Any]]:
    """The THRESHOLDS judged on the built-in ``name``'s run (results/thresholds.py)."""
    return [v.to_json() for v in evaluate([parse(t) for t in THRESHOLDS], simulate(builtin(name)))]


def extras() -> dict[str, Any]:
    """Thresholds (judged on patient-delays-liveness) and check findings as ``run --threshold``
    and ``probesim check`` give them, with hostile text in every string."""
    return {
        "thresholds": verdicts("patient-delays-liveness"),
        "check": {
            "kind": "CheckReport",
            "findings": [
                {
                    "rule": "PS010",
                    "name": "liveness-failure-threshold-one",
                    "severity": "error",
                    "object": f"Deployment/{HOSTILE}",
                    "file": "k8s/web.yaml",
                    "line": 12,
                    "container": "app",
                    "message": f"liveness kills {HOSTILE}",
                    "fix": "raise failureThreshold",
                },
            ],
        },
    }


def with_rollout(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with a rollout of its first workload from 20 s to 35 s in its summary, shaped as
    Result.to_json writes one, its template's name hostile text."""
    w = doc["summary"]["workloads"][0]["name"]
    rollout = {
        "workload": w, "action": "rollout", "replicaSet": f"{w}-5d4588bb9d", "template": HOSTILE,
        "outcome": "complete", "start": 20.0, "end": 35.0, "seconds": 15.0, "stalled": None,
        "superseded": None, "minReady": 2, "minAvailable": 2, "failedByCause": {}, "failed": 0,
    }  # fmt: skip
    return doc | {"summary": doc["summary"] | {"rollouts": [rollout]}}
