"""What probesim lab shows while it runs: pods as kubectl shows them, requests per route."""

from __future__ import annotations

import io

from rich.console import Console

from probesim.lab.load import LoadResult
from probesim.lab.orchestrator import Lab
from probesim.lab.progress import Progress, pod_status, view
from tests.builders import builtin


def render(lab: Lab) -> str:
    buf = io.StringIO()
    Console(file=buf, width=120).print(view(lab, 40))
    return buf.getvalue()


def test_pods_and_routes_as_kubectl_and_k6_would_name_them() -> None:
    sc = builtin("seed000-demo")
    lab = Lab(sc, sc.workloads[0])
    assert [pod_status(p) for p in lab.pods] == ["Pending", "Pending"]
    p0, p1 = lab.pods
    p0.run.instance, p0.ready = 0, True
    p0.run.proc = object()  # type: ignore[assignment]  # running: any process
    p1.run.instance, p1.run.restarts = 1, 1
    lab.loads["/"] = LoadResult(sent=12, ok=9)
    lab.loads["/"].failed["no_endpoint"] = 3
    text = render(lab)
    assert "seed000-demo" in text and "of 40s" in text
    row0 = next(line for line in text.splitlines() if "app-0" in line).split()
    row1 = next(line for line in text.splitlines() if "app-1" in line).split()
    assert row0[:4] == ["app-0", "1/1", "Running", "0"]
    assert row1[:4] == ["app-1", "0/1", "CrashLoopBackOff", "1"]
    route = next(line for line in text.splitlines() if line.strip().startswith("/")).split()
    assert route == ["/", "12", "9", "3", "0"]


def test_no_live_view_off_a_terminal() -> None:
    sc = builtin("seed000-demo")
    buf = io.StringIO()
    with Progress(Console(file=buf), 40) as progress:
        progress(Lab(sc, sc.workloads[0]))
    assert progress.live is None and buf.getvalue() == ""
