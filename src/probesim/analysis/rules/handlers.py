"""Which check fits a container's port: the handler a fix gives a new probe. The app's own
endpoint for that probe kind when its profile knows it (Spring Boot's readiness group, Prometheus'
``/-/ready``, ``pg_isready`` for PostgreSQL: probesim.profiles), else a probe already checking
that port, ``grpc`` where the port speaks gRPC (its name or the Service's appProtocol),
``tcpSocket`` otherwise — never an ``httpGet`` on a guessed path; and which containers serve
nothing (``pause``, ``sleep infinity``) and need no probe at all."""

from __future__ import annotations

import re
from typing import Any

from probesim.analysis.context import Target
from probesim.kube.ports import container_port
from probesim.model.kubernetes import ProbeType

KINDS: tuple[ProbeType, ...] = ("liveness", "readiness", "startup")

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


def port_kind(t: Target, port: int | str) -> str:
    """``http``, ``grpc`` or ``""`` (unknown): from the port's name (container or Service) and
    the Service port's appProtocol."""
    number = container_port(t.container, port)
    names = [cp.name or "" for cp in t.container.ports if cp.container_port == number]
    for sv, _p, target in t.serves:
        if target == port:
            for sp in sv.spec.ports:
                if sp.effective_target == port:
                    names += [sp.name or "", sp.app_protocol or ""]
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
    known = profile_handler(t, "readiness", port)
    if known is not None:
        return known
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
    kind = port_kind(t, port)
    if kind == "grpc" and number is not None:  # a gRPC probe takes a port number only
        return {"grpc": {"port": number}}, "gRPC health checking"
    note = "the port speaks HTTP: an httpGet on a path that answers only when the pod can serve is better"
    return {"tcpSocket": {"port": shown}}, note if kind == "http" else ""


def health_port(t: Target, served: int | str) -> int | str:
    """Where the profile's health endpoints listen: its health port (Keycloak's management port,
    Spring's MANAGEMENT_SERVER_PORT), else the port a probe already uses for one of them, else the
    port the container serves."""
    prof = t.profile
    if prof is None:
        return served
    if prof.profile.health_port is not None:
        return prof.profile.health_port
    handlers = [prof.handler(k, 0) for k in KINDS]
    paths = {str(h["httpGet"].get("path")) for h in handlers if h is not None and "httpGet" in h}
    paths |= set(prof.profile.paths)
    for kind in KINDS:
        hp = t.raw_probe(kind).get("httpGet")
        if isinstance(hp, dict) and "port" in hp and str(hp.get("path", "")).startswith(tuple(paths)):
            port: int | str = hp["port"]
            return port
    return served


def profile_handler(t: Target, kind: ProbeType, served: int | str) -> tuple[dict[str, Any], str] | None:
    """The app's own handler for a ``kind`` probe from its profile, and the note saying so; None
    when the profile does not know one (an app that defines its own endpoints)."""
    prof = t.profile
    if prof is None or not prof.known:
        return None
    number = container_port(t.container, served)
    raw = getattr(prof.profile, kind, None) or (prof.profile.liveness if kind == "startup" else None)
    if raw is None:
        return None
    name = prof.profile.name
    if "exec" in raw:  # a command's words are strings
        handler = prof.handler(kind, str(number if number is not None else served))
        note = f"{name}'s own client"
    elif "tcpSocket" in raw:
        handler = prof.handler(kind, _port_text(t, served))
        note = f"{name} speaks its own protocol ({prof.profile.protocol}): a TCP check, which proves only "
        note += "that it listens"
    else:
        handler = prof.handler(kind, health_port(t, _port_text(t, served)))
        note = f"{name}'s own {kind} endpoint"
        path = str(handler["httpGet"].get("path", "")) if handler and "httpGet" in handler else ""
        if kind == "readiness" and prof.profile.membership == "quorum" and prof.path_reaches_dependency(path):
            note += quorum_note(t, name)
    assert handler is not None
    return handler, note


def quorum_note(t: Target, name: str) -> str:
    """Why a readiness check that needs the cluster's quorum is still the one to add, what it
    costs, and the Services the members find each other through, which must then publish
    members that are not Ready yet."""
    note = (
        f", which answers only while the cluster has quorum: when quorum is lost every member goes "
        f"unready at once and the Service is left empty — chosen because a member without a leader "
        f"cannot serve {name}'s consistent reads and writes anyway"
    )
    words = " ".join(
        str(w)
        for key in ("command", "args")
        for w in (t.raw.get(key) if isinstance(t.raw.get(key), list) else [])  # type: ignore[union-attr]
    )
    words += " " + " ".join(str(e.get("value", "")) for e in t.raw.get("env") or [] if isinstance(e, dict))
    peers = [
        sv.name
        for sv in t.services
        if not sv.spec.publish_not_ready_addresses
        and re.search(rf"(//|@|^|[\s=,.]){re.escape(sv.name)}[.:]", words)
    ]
    if peers:
        names = ", ".join(dict.fromkeys(peers))
        note += (
            f"; the other members reach this one through Service {names}: set "
            f"publishNotReadyAddresses: true on it, or a member that is not Ready yet is unreachable, "
            f"no leader is elected and no member ever becomes Ready"
        )
    return note
