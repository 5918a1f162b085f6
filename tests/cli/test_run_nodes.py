"""probesim run with spec.cluster.nodes: the Nodes table (each node's zone, its pods at the end,
a pod stuck Terminating marked so, the pods that ran there before, its time not Ready) and the
pods still Pending, at any width; nothing of it without nodes."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from probesim.cli import app
from probesim.engine import simulate
from probesim.report.terminal import render_result
from tests.builders import scenario

SCENARIO = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: node-down}
spec:
  duration: 8m
  cluster:
    nodes: {count: 3, zones: [a, b, c], cpu: 1}
  actions:
    - {kind: nodeDown, node: node-2, at: 60s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          resources: {requests: {cpu: 400m}}
"""


def rows(text: str) -> dict[str, list[str]]:
    out = {}
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells and cells[0].startswith("node-"):
            out[cells[0]] = cells
    return out


def test_run_prints_where_the_pods_ran(tmp_path: Path) -> None:
    """Two 400m pods fit a 1-CPU node: web-0..web-2 one per node, web-3 back on node-1. node-2
    fails at 60 s, is Unknown from 105 s (6m15s to the end), its pod is evicted at 410 s and stays
    Terminating there; its replacement web-4 lands on node-3."""
    (tmp_path / "s.yaml").write_text(SCENARIO)
    out = CliRunner().invoke(
        app, ["run", str(tmp_path / "s.yaml"), "--events", "none"], env={"COLUMNS": "140"}
    )
    assert out.exit_code == 0, out.output
    assert "Nodes" in out.output
    got = rows(out.output)
    assert got["node-1"] == ["node-1", "a", "web-0, web-3", "-", "-"]
    assert got["node-2"] == ["node-2", "b", "web-1 (Terminating)", "-", "6m15s"]
    assert got["node-3"] == ["node-3", "c", "web-2, web-4", "-", "-"]
    assert "Pending" not in out.output


def test_pending_pods_are_named() -> None:
    c = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "900m"}}}
    r = simulate(
        scenario(
            containers=[c], replicas=3, duration="5s", spec={"cluster": {"nodes": {"count": 2, "cpu": 1}}}
        )
    )
    buffer = io.StringIO()
    render_result(r, Console(width=100, file=buffer, color_system=None), events=False)
    assert "Pending at the end (no node could take them): web-2" in buffer.getvalue()


@pytest.mark.parametrize("width", [60, 80])
def test_the_table_fits_a_narrow_terminal(width: int) -> None:
    r = simulate(
        scenario(
            replicas=3, duration="5s", spec={"cluster": {"nodes": {"count": 3, "zones": ["a", "b", "c"]}}}
        )
    )
    buffer = io.StringIO()
    render_result(r, Console(width=width, file=buffer, color_system=None), events=False)
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "node-2" in text


def test_no_nodes_no_table() -> None:
    r = simulate(scenario(replicas=2, duration="5s"))
    buffer = io.StringIO()
    render_result(r, Console(width=120, file=buffer, color_system=None), events=False)
    assert "Nodes" not in buffer.getvalue()
