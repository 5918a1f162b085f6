"""A VirtualService route the engine does not follow (a split by weight or subset, another
host) is said as a warning when the scenario loads, never silently run as something else."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from probesim.errors import InputWarning
from probesim.manifests.scenario import load_scenario
from probesim.scenarios import find

VS = """\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: backend}}
spec:
  hosts: [backend.default.svc.cluster.local]
  http:
    - match: [{{uri: {{prefix: /admin}}}}]
      route: [{{destination: {{host: backend}}}}]
    - route:
{routes}
"""


def _said(tmp_path: Path, routes: str) -> list[str]:
    f = tmp_path / "vs.yaml"
    f.write_text(VS.format(routes=routes), encoding="utf-8")
    b = find("seed003-outlier")
    assert b is not None
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        sc = load_scenario(str(b.path), [str(f)])
    assert len(sc.virtual_services) == 1
    return [str(w.message) for w in said if issubclass(w.category, InputWarning)]


@pytest.mark.parametrize(
    ("routes", "shown"),
    [
        (
            "        - {destination: {host: backend, subset: v1}, weight: 90}\n"
            "        - {destination: {host: backend, subset: v2}, weight: 10}",
            "http[1] routes to backend subset v1 weight 90, backend subset v2 weight 10: not simulated",
        ),
        ("        - {destination: {host: backend, subset: v2}}", "http[1] routes to backend subset v2: not"),
        (
            "        - {destination: {host: backend-canary}}",
            "http[1] routes to backend-canary: not simulated",
        ),
    ],
)
def test_a_split_or_another_destination_is_said(tmp_path: Path, routes: str, shown: str) -> None:
    said = _said(tmp_path, routes)
    # Named by its file and the line of the second http route's destinations.
    assert len(said) == 1 and said[0].startswith(f"{tmp_path / 'vs.yaml'}:9: VirtualService backend: {shown}")


def test_a_route_to_its_own_host_is_what_the_engine_runs(tmp_path: Path) -> None:
    assert (
        _said(tmp_path, "        - {destination: {host: backend.default.svc.cluster.local}, weight: 100}")
        == []
    )
