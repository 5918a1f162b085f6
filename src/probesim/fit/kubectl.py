"""Container starts, Ready times and restarts from ``kubectl get pods -o json``.

A pod's readiness flip is its ``Ready`` condition's ``lastTransitionTime``; its container's
start is ``state.running.startedAt`` (../shared/reference/telemetry.md §7.1). Only pods Ready
and never restarted tell a start time: a restarted container's current start is not its first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from probesim.errors import InputError


@dataclass(frozen=True)
class PodStart:
    """One pod's container: when it started and when the pod became Ready (Unix seconds)."""

    pod: str
    started: float
    ready: float | None
    restarts: int
    last_reason: str | None  # why the last instance ended (OOMKilled, Error, ...)
    last_exit: int | None


def _time(value: Any, where: str, field: str) -> float:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{value!r} is not an RFC 3339 time", file=where, field=field) from None


def _obj(parent: dict[str, Any], key: str, path: str, at: str) -> dict[str, Any]:
    """``parent[key]``, an object ({} when absent or null); another type is an error naming it."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"is a {type(value).__name__}, not an object", file=path, field=f"{at}.{key}")
    return value


def _objs(parent: dict[str, Any], key: str, path: str, at: str) -> list[dict[str, Any]]:
    """``parent[key]``, a list of objects ([] when absent); anything else is an error naming it."""
    value = parent.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError("is not a list of objects", file=path, field=f"{at}.{key}")
    return value


def read_pods(path: str, pods: str, container: str) -> list[PodStart]:
    """The pods of ``path`` whose name matches the regular expression ``pods``, each with its
    container ``container``."""
    import re

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=path) from None
    except ValueError as e:
        raise InputError(f"not JSON (kubectl get pods -o json writes it): {e}", file=path) from None
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    if not isinstance(items, list):
        raise InputError("items is not a list", file=path, field="items")
    match = re.compile(pods)
    out = []
    for i, pod in enumerate(items):
        if not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod":
            continue
        name = str(_obj(pod, "metadata", path, f"items[{i}]").get("name", ""))
        if not match.fullmatch(name):
            continue
        at = f"items[{i}].status"
        status = _obj(pod, "status", path, f"items[{i}]")
        conditions = _objs(status, "conditions", path, at)
        ready = next((c for c in conditions if c.get("type") == "Ready" and c.get("status") == "True"), None)
        cs = next(
            (c for c in _objs(status, "containerStatuses", path, at) if c.get("name") == container), None
        )
        if cs is None:
            continue
        running = _obj(cs, "state", path, f"{at}.containerStatuses").get("running")
        if not isinstance(running, dict) or "startedAt" not in running:
            continue
        last = _obj(_obj(cs, "lastState", path, f"{at}.containerStatuses"), "terminated", path, at)
        out.append(
            PodStart(
                pod=name,
                started=_time(running["startedAt"], path, f"{at}.containerStatuses.state.running.startedAt"),
                ready=None
                if ready is None
                else _time(ready.get("lastTransitionTime"), path, f"{at}.conditions"),
                restarts=int(cs.get("restartCount", 0)),
                last_reason=last.get("reason"),
                last_exit=last.get("exitCode"),
            )
        )
    return out
