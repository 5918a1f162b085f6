"""Which check fits a container's port: the handler a fix gives a new probe. ``httpGet`` only
where the port speaks HTTP and a path is known (a probe already using HTTP there), ``grpc`` where
it speaks gRPC (its name or the Service's appProtocol), the image's own client for the common
servers (``pg_isready``, ``redis-cli ping``, …), ``tcpSocket`` otherwise; and which containers
serve nothing (``pause``, ``sleep infinity``) and need no probe at all."""

from __future__ import annotations

import re
from typing import Any

from probesim.analysis.context import Target
from probesim.kube.ports import container_port

# The image's own client, by the image's name (its last path component, before the tag): the
# server's own image only (rabbitmq, not rabbitmq-exporter).
LOCAL = "127.0.0.1"
CLIENTS: tuple[tuple[re.Pattern[str], list[str]], ...] = (
    (re.compile(r"(postgres|postgresql|postgis|timescaledb)"), ["pg_isready", "-h", LOCAL, "-p", "{port}"]),
    (re.compile(r"(redis|valkey|keydb)"), ["redis-cli", "-p", "{port}", "ping"]),
    (re.compile(r"rabbitmq"), ["rabbitmq-diagnostics", "-q", "ping"]),
    (re.compile(r"(mysql|mariadb|percona-server)"), ["mysqladmin", "ping", "-h", LOCAL, "-P", "{port}"]),
)  # fmt: skip
_IDLE = re.compile(r"^(sleep\s+(infinity|inf|\d{4,})|tail\s+-f\s+/dev/null)$")


def image_name(t: Target) -> str:
    image = (t.container.image or "").split("@")[0]
    return image.rsplit("/", 1)[-1].split(":")[0].lower()


def serves_nothing(t: Target) -> bool:
    """A container that only holds the pod open: the pause image, or a command that sleeps."""
    if image_name(t) == "pause":
        return True
    parts = [t.raw.get("command"), t.raw.get("args")]
    words = [str(w) for part in parts if isinstance(part, list) for w in part]
    if (
        words[:2] in (["sh", "-c"], ["/bin/sh", "-c"], ["bash", "-c"], ["/bin/bash", "-c"])
        and len(words) == 3
    ):
        words = words[2].split()
    return bool(_IDLE.match(" ".join(words).strip()))


def _port_text(t: Target, port: int | str) -> int | str:
    """The port as a probe names it: the container's name for it when it has one declared."""
    if isinstance(port, str) and container_port(t.container, port) is not None:
        return port
    number = container_port(t.container, port)
    named = next((cp.name for cp in t.container.ports if cp.container_port == number and cp.name), None)
    return named or (number if number is not None else port)


def _kind_of_port(t: Target, port: int | str) -> str:
    """``http``, ``grpc`` or ``""`` (unknown): from the port's name (container or Service) and
    the Service port's appProtocol."""
    number = container_port(t.container, port)
    names = [cp.name or "" for cp in t.container.ports if cp.container_port == number]
    for sv, _p, target in t.serves:
        if target == port:
            for sp in sv.spec.ports:
                if sp.effective_target == port:
                    names += [sp.name or "", str(getattr(sp, "app_protocol", None) or "")]
                    extra = sp.model_extra or {}
                    names.append(str(extra.get("appProtocol") or ""))
    if isinstance(port, str):
        names.append(port)
    for n in (x.lower() for x in names if x):
        if n == "grpc" or n.startswith(("grpc-", "grpc_")) or n.endswith("-grpc") or n == "kubernetes.io/h2c":
            return "grpc"
        if n in ("http", "https", "http2", "web") or n.startswith(("http-", "https-", "http_")):
            return "http"
    return ""


def readiness_handler(t: Target) -> tuple[dict[str, Any], str] | None:
    """The handler of a readiness probe to add to ``t`` (raw, as in a manifest), and a note on
    the choice when it is not the obvious one; None when the port it serves is a name the
    container does not declare (a probe could not name it: PS002)."""
    port = t.serves[0][2] if t.serves else (t.container.ports[0].container_port if t.container.ports else 80)
    if container_port(t.container, port) is None:
        return None
    shown = _port_text(t, port)
    number = container_port(t.container, port)
    for kind in ("liveness", "startup"):  # a probe already checking this port: the same check
        raw = t.raw_probe(kind)
        for h in ("httpGet", "grpc", "tcpSocket"):
            hp = raw.get(h)
            if (
                isinstance(hp, dict)
                and container_port(t.container, hp.get("port", -1)) in (number, None)
                and (hp.get("port") in (port, shown, number))
            ):
                return {h: dict(hp)}, f"the {kind} probe's check, less tolerant"
    kind = _kind_of_port(t, port)
    if kind == "grpc" and number is not None:  # a gRPC probe takes a port number only
        return {"grpc": {"port": number}}, "gRPC health checking"
    image = image_name(t)
    for pattern, command in CLIENTS:
        if pattern.fullmatch(image):
            cmd = [c.replace("{port}", str(number if number is not None else port)) for c in command]
            return {"exec": {"command": cmd}}, f"the {image} image's own client"
    note = "the port speaks HTTP: an httpGet on a path that answers only when the pod can serve is better"
    return {"tcpSocket": {"port": shown}}, note if kind == "http" else ""
