"""The kubelet's preStop hook (pkg/kubelet/kuberuntime/kuberuntime_container.go, ``killContainer``
and ``executePreStopHook``), shared by the engine and the lab.

A container being killed first gets its preStop hook, which the kubelet waits for at most the
grace period; it is not signalled meanwhile and goes on serving. Then ``StopContainer`` sends
SIGTERM with what is left of the grace period — the grace minus the hook's whole seconds
(``int64(...Seconds())`` truncates) — floored at ``minimumGracePeriodInSeconds`` (2 s), and SIGKILL
when that runs out. A hook the kubelet cannot run (tcpSocket, kept in the API for backward
compatibility) fails at once: a ``FailedPreStopHook`` event, then SIGTERM.

How long a hook runs: a sleep action's seconds (KEP-3960); an exec hook that is a plain
``sleep N`` (``sleep 10``, ``/bin/sleep 5``, ``sh -c "sleep 10"``) N; otherwise the scenario's
``preStop`` behaviour for the container, and failing that an assumption the loader says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from probesim.kube.containers import MIN_GRACE
from probesim.model.kubernetes import Container, LifecycleHandler
from probesim.model.scenario import ContainerBehavior

# The handler kinds as the engine keeps them per container.
NO_HOOK, RUNS, FAILS, HTTP_TO_APP = 0, 1, 2, 3
FAILED_MESSAGE = "PreStopHook failed"  # events.FailedPreStopHook; the hook's output is not shown
_SHELLS = {"sh", "bash", "ash", "dash", "zsh"}
_SLEEP = re.compile(r"^(\d+(?:\.\d+)?|\.\d+)([smhd]?)$")
_UNIT_MS = {"": 1000, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True)
class Hook:
    """A container's preStop hook as the engine and the lab run it: its kind (``RUNS``, ``FAILS``,
    ``HTTP_TO_APP``: an httpGet to the app itself, which hangs while the app hangs and fails while
    it refuses connections), how long it runs (ms), and the assumption made about that length
    when neither the manifest nor the scenario says it (None when they do)."""

    kind: int
    length: int
    assumed: str | None = None


NONE = Hook(NO_HOOK, 0)


def plain_sleep(command: tuple[str, ...]) -> int | None:
    """The length in ms of an exec command that only sleeps (``sleep 10``, ``/bin/sleep 2.5``,
    ``sleep 1m``, ``sh -c "sleep 10"``); None for any other command."""
    words = list(command)
    if len(words) == 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] == "-c":
        words = words[2].strip().rstrip(";").split()
    if len(words) != 2 or words[0].rsplit("/", 1)[-1] != "sleep":
        return None
    m = _SLEEP.match(words[1])
    if m is None:
        return None
    return round(float(m.group(1)) * _UNIT_MS[m.group(2)])


def hook_of(handler: LifecycleHandler | None, behavior: ContainerBehavior, request_ms: int = 0) -> Hook:
    """The preStop hook a container runs, from its manifest's handler and its scenario behaviour
    (``request_ms``: how long the app takes to answer the hook's path, for an httpGet hook)."""
    if handler is None:
        return NONE
    if handler.sleep is not None:
        return Hook(RUNS, max(handler.sleep.seconds, 0) * 1000)
    if handler.tcp_socket is not None:
        return Hook(FAILS, 0)
    if handler.exec is not None:
        if behavior.pre_stop is not None:
            return Hook(RUNS, behavior.pre_stop)
        slept = plain_sleep(handler.exec.command)
        if slept is not None:
            return Hook(RUNS, slept)
        return Hook(RUNS, 0, "assumed to end at once")
    assert handler.http_get is not None
    to_app = handler.http_get.host is None
    kind = HTTP_TO_APP if to_app else RUNS
    if behavior.pre_stop is not None:
        return Hook(kind, behavior.pre_stop)
    return Hook(kind, request_ms, f"assumed to take one request's time ({request_ms} ms)")


def container_hook(c: Container, b: ContainerBehavior) -> Hook:
    """Container ``c``'s preStop hook with behaviour ``b``: an httpGet hook with no length of its
    own takes one request's time on its path (the route's CPU and waiting time; none without a
    cost model)."""
    handler = c.lifecycle.pre_stop if c.lifecycle is not None else None
    request = 0
    if handler is not None and handler.http_get is not None:
        cost = b.cost(handler.http_get.path)
        request = round(cost.cpu + cost.wall)
    return hook_of(handler, b, request)


def stop_plan(grace: Any, hook: Any, turn: Any = 0) -> tuple[Any, Any]:
    """``killContainer``'s timing for a container killed with grace period ``grace`` (ms, whole
    seconds) whose preStop hook runs ``hook`` ms (None or negative: no hook, or none that runs)
    and, for a sidecar on pod termination, that then waits ``turn`` ms for the containers it must
    outlive: how long after the kill SIGTERM comes, and the grace period ``StopContainer`` gets
    then. Elementwise over arrays (the engine) or for one container (the lab: plain values)."""
    grace = np.asarray(grace, np.int64)
    hook = np.asarray(-1 if hook is None else hook, np.int64)
    turn = np.asarray(turn, np.int64)
    # executePreStopHook gives up at the grace period, and returns the whole seconds it waited.
    waited = np.where((hook >= 0) & (grace > 0), np.minimum(hook, grace), 0)
    grace = grace - waited // 1000 * 1000
    # terminationOrdering.waitForTurn, bounded by what is left (no wait when nothing is).
    turned = np.where((turn > 0) & (grace > 0), np.minimum(turn, grace), 0)
    grace = grace - turned // 1000 * 1000
    return waited + turned, np.maximum(grace, MIN_GRACE)
