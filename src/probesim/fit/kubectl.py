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
        name = str((pod.get("metadata") or {}).get("name", ""))
        if not match.fullmatch(name):
            continue
        status = pod.get("status") or {}
        at = f"items[{i}].status"
        ready = next(
            (
                c
                for c in status.get("conditions") or []
                if c.get("type") == "Ready" and c.get("status") == "True"
            ),
            None,
        )
        cs = next((c for c in status.get("containerStatuses") or [] if c.get("name") == container), None)
        if cs is None:
            continue
        running = (cs.get("state") or {}).get("running")
        if not running or "startedAt" not in running:
            continue
        last = (cs.get("lastState") or {}).get("terminated") or {}
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
