"""Ports as Kubernetes resolves them: a probe's or Service's port, a number or the name of a
port the container declares, and which container a Service's targetPort reaches."""

from __future__ import annotations

from probesim.model.kubernetes import Container


def container_port(c: Container, port: int | str) -> int | None:
    """The number a probe or Service port refers to in ``c``; None when a name is not declared."""
    if isinstance(port, int):
        return port
    for cp in c.ports:
        if cp.name == port:
            return cp.container_port
    return None


def serving_container(containers: list[Container], target: int | str) -> int | None:
    """Which container a Service targetPort reaches. A named port must be declared; a number
    reaches the container declaring it, else the first container (undeclared ports still work)."""
    for i, c in enumerate(containers):
        if any(target in (cp.container_port, cp.name) for cp in c.ports):
            return i
    return 0 if isinstance(target, int) else None
