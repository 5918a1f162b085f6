"""What ``probesim lab`` shows while it runs: its pods as ``kubectl get pods`` shows them and each
route's requests so far, redrawn a few times a second on a terminal (rich Live)."""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from probesim.lab.orchestrator import Lab
    from probesim.lab.pods import Pod


def pod_status(pod: Pod) -> str:
    if pod.run.killing or pod.deleting:
        return "Terminating"
    if pod.run.proc is None:
        return "CrashLoopBackOff" if pod.run.restarts or pod.run.instance >= 0 else "Pending"
    return "Running"


def view(lab: Lab, duration_s: float) -> Group:
    elapsed = time.monotonic() - lab.t0
    head = Text(
        f"probesim lab {lab.scenario.name}: {min(elapsed, duration_s):5.1f}s of {duration_s:g}s"
        + ("  (waiting for answers on their way)" if lab.finishing else "")
    )
    pods = Table(box=box.SIMPLE, pad_edge=False)
    for h in ("NAME", "READY", "STATUS", "RESTARTS", "PORT"):
        pods.add_column(h)
    for p in (p for p in lab.pods if not p.gone):  # a deleted pod, once stopped, is no longer listed
        pods.add_row(p.name, "1/1" if p.ready else "0/1", pod_status(p), str(p.run.restarts), str(p.port))
    routes = Table(box=box.SIMPLE, pad_edge=False)
    for h in ("ROUTE", "SENT", "OK", "FAILED", "DROPPED"):
        routes.add_column(h)
    for name, res in lab.loads.items():
        failed = sum(res.failed.values())
        routes.add_row(
            name, str(res.sent), str(res.ok), f"[red]{failed}[/]" if failed else "0", str(res.dropped)
        )
    return Group(head, pods, routes) if lab.loads else Group(head, pods)


class Progress:
    """A live view on ``console`` when it is a terminal; nothing otherwise (CI logs, pipes)."""

    def __init__(self, console: Console, duration_s: float) -> None:
        self.duration_s = duration_s
        self.live = (
            Live(console=console, refresh_per_second=4, transient=True) if console.is_terminal else None
        )

    def __call__(self, lab: Lab) -> None:
        if self.live is not None:
            self.live.update(view(lab, self.duration_s))

    def __enter__(self) -> Progress:
        if self.live is not None:
            self.live.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.live is not None:
            self.live.stop()
