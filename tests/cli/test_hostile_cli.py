"""Hostile input at the command line (issue 17): every bad file, name or output path ends in
one clean line on stderr, ``error: file:line: object: field: message``, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from probesim.cli import app

runner = CliRunner()

DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app"}]}},
    },
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}


def write_scenario(tmp: Path, spec: dict[str, object], manifests: list[object] | None = None) -> Path:
    doc = {
        "apiVersion": "probesim.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "s"},
        "manifests": manifests if manifests is not None else [DEPLOY, SERVICE],
        "spec": {"duration": "20s", **spec},
    }
    p = tmp / "s.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def fails_cleanly(args: list[str], expected: str) -> str:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert lines[0].startswith("error: "), r.output
    assert expected in lines[0], r.output
    return lines[0]


@pytest.mark.parametrize(
    ("csv", "expected"),
    [
        (b"seconds,rate\n0,5\n10,inf\n", "series.csv:3: seconds and rate must be finite"),
        (b"seconds,rate\n0,5\n10,nan\n", "series.csv:3: seconds and rate must be finite"),
        (b"inf,5\n", "series.csv:1: seconds and rate must be finite"),
        (b"seconds,rate\n0,5\n\n10,\xff\xfe\n", "series.csv:4: not UTF-8 text"),
        (b"0,5\n10,2e9\n", "series.csv:2: seconds must be 0 to"),
        (b"0,5\n1e300,1\n", "series.csv:2: seconds must be 0 to"),
    ],
)
def test_a_bad_series_csv_names_its_file_and_line(tmp_path: Path, csv: bytes, expected: str) -> None:
    (tmp_path / "series.csv").write_bytes(csv)
    s = write_scenario(tmp_path, {"traffic": [{"series": "series.csv"}]})
    fails_cleanly(["run", str(s)], expected)


def test_a_route_calling_an_undefined_dependency_is_named_at_load(tmp_path: Path) -> None:
    routes = {"/": {"calls": [{"dependency": "db"}, {"dependency": "dbx"}]}}
    s = write_scenario(
        tmp_path,
        {
            "dependencies": {"db": {}, "cache": {}},
            "behavior": {"web": {"containers": {"app": {"routes": routes}}}},
            "traffic": [{"rate": 5}],
        },
    )
    line = fails_cleanly(["run", str(s)], "spec.behavior.web.containers.app.routes./.calls[1].dependency")
    assert "route '/' calls dependency 'dbx'" in line
    assert "(defined: 'db', 'cache')" in line
