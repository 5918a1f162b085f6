"""Container starts, Ready times and restarts from ``kubectl get pods -o json``; probe
failures, kills and back-offs from ``kubectl get events -o json``.

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


def _items(path: str, command: str) -> list[Any]:
    """The objects of a ``kubectl … -o json`` file (a List's items, or the one object)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=path) from None
    except ValueError as e:
        raise InputError(f"not JSON ({command} -o json writes it): {e}", file=path) from None
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else [doc]
    if not isinstance(items, list):
        raise InputError("items is not a list", file=path, field="items")
    return items


# What the kubelet's events say, by reason and the start of the message (kubelet.md): probe
# failures by probe, containers killed, restarts held back.
PROBE_FAILED = {"Liveness": "Liveness probe failed", "Readiness": "Readiness probe failed",
                "Startup": "Startup probe failed"}  # fmt: skip


def read_events(path: str, pods: str, since: float | None = None) -> dict[str, int]:
    """Per kind (``Liveness``, ``Readiness``, ``Startup`` probe failures, ``Killing``,
    ``BackOff``), how many times the events of ``path`` say it of a pod whose name matches
    ``pods``, counting each event's ``count`` (the API folds repeats into one); ``since``: only
    events last seen then or later (Unix s; a folded event counts whole: its repeats' own times
    are not kept)."""
    import re

    match = re.compile(pods)
    out = dict.fromkeys((*PROBE_FAILED, "Killing", "BackOff"), 0)
    for i, ev in enumerate(_items(path, "kubectl get events")):
        if not isinstance(ev, dict) or ev.get("kind", "Event") != "Event":
            continue
        at = f"items[{i}]"
        obj = _obj(ev, "involvedObject", path, at)
        if obj.get("kind", "Pod") != "Pod" or not match.fullmatch(str(obj.get("name", ""))):
            continue
        last = ev.get("lastTimestamp") or ev.get("eventTime")
        if since is not None and last is not None and _time(last, path, f"{at}.lastTimestamp") < since:
            continue
        count = ev.get("count") or 1
        if not isinstance(count, int) or count < 1:
            raise InputError(f"{count!r} is not a positive count", file=path, field=f"{at}.count")
        reason, message = str(ev.get("reason", "")), str(ev.get("message", ""))
        if reason == "Unhealthy":
            kind = next((k for k, p in PROBE_FAILED.items() if message.startswith(p)), None)
            if kind is not None:
                out[kind] += count
        elif reason in ("Killing", "BackOff"):
            out[reason] += count
    return out


def read_pods(path: str, pods: str, container: str) -> list[PodStart]:
    """The pods of ``path`` whose name matches the regular expression ``pods``, each with its
    container ``container``."""
    import re

    items = _items(path, "kubectl get pods")
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
