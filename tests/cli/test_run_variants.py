"""probesim run on a folder that holds one object twice (issue 27): the same content is one
object; different content in two folders that are not each complete (a base and an overlay
without its Service) is refused in one line naming both files and the folder to pass (complete
folders run as variants: test_variant_folders.py); a stream document that is a scalar or a
list is no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.cli import app
from tests.analysis.test_rules import GOOD, deployment

runner = CliRunner()
WEB = deployment(GOOD)


def test_the_same_object_twice_is_one_object(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(WEB)
    (tmp_path / "copy.yaml").write_text(WEB)
    r = runner.invoke(app, ["run", str(tmp_path), "--print-scenario"])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("kind: Deployment") == 1


def test_an_overlay_without_its_service_is_refused_in_one_line_naming_both_files(tmp_path: Path) -> None:
    # base/ holds the Deployment and its Service; overlay/ only the Deployment (kustomize's
    # pattern, written out): overlay/ is not complete on its own, so no variants are run.
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "web.yaml").write_text(WEB)
    (tmp_path / "overlay").mkdir()
    (tmp_path / "overlay" / "web.yaml").write_text(WEB.split("---")[0].replace("replicas: 2", "replicas: 3"))
    r = runner.invoke(app, ["run", str(tmp_path)])
    assert r.exit_code == 2
    assert r.output.count("\n") == 1
    assert (
        f"Deployment web is defined in {tmp_path}/base/web.yaml:1 and {tmp_path}/overlay/web.yaml:1"
        in r.output
    )
    assert f"e.g. probesim run {tmp_path}/overlay/" in r.output
    assert f"not run as variants: {tmp_path}/overlay/ has no Service selecting its pods" in r.output
    assert runner.invoke(app, ["run", str(tmp_path / "base"), "--print-scenario"]).exit_code == 0


def test_one_file_defining_a_name_twice_stays_an_error(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(WEB + "---\n" + WEB.replace("replicas: 2", "replicas: 3"))
    r = runner.invoke(app, ["run", str(tmp_path / "m.yaml")])
    assert r.exit_code == 2 and "metadata.name: defined twice (first in" in r.output


@pytest.mark.parametrize("doc", ["5", "[1, 2]", "true", "hello", "{}", "[]", "3.5", "null"])
def test_stream_documents_that_are_not_mappings(tmp_path: Path, doc: str) -> None:
    p = tmp_path / "m.yaml"
    p.write_text(WEB + "---\n" + doc + "\n")
    r = runner.invoke(app, ["run", str(p), "--print-scenario"])
    assert ("Traceback" not in r.output and r.exception is None) or isinstance(r.exception, SystemExit), (
        r.output
    )
    assert r.exit_code == 0, r.output
