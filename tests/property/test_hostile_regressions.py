"""Regressions from fuzzing hostile input (issue 17; tests/property/hostile.py,
scripts/fuzz_inputs.py): each case once crashed, ran away or was read wrongly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from probesim.analysis.stress import stress_suite
from probesim.analysis.stress_verdicts import StressThresholds
from probesim.cli import app
from probesim.errors import InputError
from probesim.manifests import kubernetes as k8s
from probesim.manifests.yamlsrc import load_docs
from probesim.model.duration import format_ms, parse_ms, parse_ms_float
from tests.property.hostile import SMALL_MANIFEST, SMALL_SCENARIO

runner = CliRunner()


def one_line_error(args: list[str], expected: str) -> str:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert expected in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "text", ["9" * 1_000_000, "9" * 1_000_000 + "s", "1s" + "9" * 1_000_000, "1." + "9" * 10**6]
)
def test_a_long_digit_run_parses_in_linear_time(text: str) -> None:
    # The pattern was searched from every position: 100k digits took 340 s, 8k took 2 s.
    t = time.process_time()
    with pytest.raises(ValueError, match="duration"):
        parse_ms_float(text)
    assert time.process_time() - t < 1.0


def test_durations_take_ascii_digits_only() -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_ms("١٠s")  # Arabic-Indic digits: float() reads them, Go's ParseDuration does not
    assert parse_ms("1m30s") == 90_000 and parse_ms_float("250us") == 0.25


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=366 * 24 * 3_600_000))
def test_format_then_parse_is_the_identity(ms: int) -> None:
    assert parse_ms(format_ms(ms)) == ms


def _deployment(container_name: str) -> str:
    return SMALL_MANIFEST.replace("- name: app", f"- name: {yaml.safe_dump(container_name).splitlines()[0]}")


@pytest.mark.parametrize("name", ["App", "a_b", "a.b", "-a", "a-", "a" * 64, "[/]", "a\u202eb", "", "😀"])
def test_container_names_are_dns_labels(name: str) -> None:
    text = _deployment(name)
    with pytest.raises(InputError, match="container name must be a lowercase RFC 1123 label of at most 63"):
        k8s.parse(list(load_docs(text, "m.yaml")))


@pytest.mark.parametrize("name", ["a", "app", "a" * 63, "web-1", "0"])
def test_valid_container_names_pass(name: str) -> None:
    objects = k8s.parse(list(load_docs(_deployment(name), "m.yaml")))
    assert objects.workloads[0].pod_spec.containers[0].name == name


def test_a_bad_container_name_is_one_line_in_run_and_check(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(_deployment("App[/]"))
    (tmp_path / "s.yaml").write_text(SMALL_SCENARIO)
    expected = "Deployment web: spec.template.spec.containers[0].name: a container name must be"
    one_line_error(["run", str(tmp_path / "s.yaml")], expected)
    one_line_error(["check", str(tmp_path / "m.yaml"), "-f", "sarif"], expected)


def test_a_manifest_or_series_path_too_long_for_the_system_is_one_line(tmp_path: Path) -> None:
    long = "a" * 300  # stat() fails with ENAMETOOLONG (a name over 255 bytes): a traceback
    (tmp_path / "s.yaml").write_text(SMALL_SCENARIO.replace("manifests: [m.yaml]", f"manifests: [{long}]"))
    one_line_error(["run", str(tmp_path / "s.yaml")], "manifests[0]: manifest file")
    one_line_error(["check", "--scenario", str(tmp_path / "s.yaml")], "manifests[0]: manifest file")
    one_line_error(["check", long], "cannot read: File name too long")
    (tmp_path / "m.yaml").write_text(SMALL_MANIFEST)
    series = SMALL_SCENARIO.replace("- {path: /, rate: 20, start: 2s}", f"- {{series: {long}}}")
    (tmp_path / "s.yaml").write_text(series)
    one_line_error(["run", str(tmp_path / "s.yaml")], "spec.traffic[0].series: series file")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_file_that_never_ends_is_refused_not_read_into_memory() -> None:
    one_line_error(["check", "/dev/zero", "-f", "json"], "/dev/zero: more than 10 million characters")


def test_stress_skips_a_run_too_costly_or_invalid_instead_of_crashing() -> None:
    # 10 requests/s per replica made a rate over 1e9 (a ValidationError, a traceback), and a
    # stress run was never checked against the cost limit run applies.
    for replicas, why in [(2**31 - 1, "too costly to simulate: "), (1_000_000, "too costly to simulate: ")]:
        text = SMALL_MANIFEST.replace("replicas: 2", f"replicas: {replicas}")
        objects = k8s.parse(list(load_docs(text, "m.yaml")))
        t = time.process_time()
        results = stress_suite(objects, None, StressThresholds(), processes=1)
        assert time.process_time() - t < 5
        assert {r.verdict for r in results} == {"skipped"}
        assert all(
            why in r.why and "more than 10,000,000" in r.why for r in results if r.stress == "baseline"
        )


@pytest.mark.parametrize("value", ["9" * 5000, "-" + "1" * 100_000])
def test_an_integer_too_long_for_python_is_one_line(tmp_path: Path, value: str) -> None:
    # int() refuses more than 4300 digits with a ValueError: a traceback from the YAML reader.
    (tmp_path / "m.yaml").write_text(SMALL_MANIFEST.replace("replicas: 2", f"replicas: {value}"))
    one_line_error(["check", str(tmp_path / "m.yaml")], "m.yaml:5: Deployment web: cannot read this int of")


def test_an_invalid_date_is_read_as_a_string_as_kubernetes_does() -> None:
    docs = list(load_docs("a: 2001-13-45\nb: 2001-12-14\n", "x.yaml"))
    assert docs[0].data == {"a": "2001-13-45", "b": "2001-12-14"}


def test_an_explicit_timestamp_tag_that_is_no_timestamp_is_a_string() -> None:
    # PyYAML's constructor raised AttributeError ('NoneType' object has no attribute 'groupdict').
    docs = list(load_docs("a: !!timestamp 2001-12-14t21:59:43.10-05:00\nb: !!timestamp x\n", "x.yaml"))
    assert docs[0].data == {"a": "2001-12-14t21:59:43.10-05:00", "b": "x"}


def test_a_manifest_file_listed_twice_is_refused_before_it_is_read_again(tmp_path: Path) -> None:
    # Found by scripts/fuzz_inputs.py: one 80 KB manifest listed 4,000 times was read 4,000
    # times (a minute of CPU) only to define every object again.
    (tmp_path / "m.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n"
    )
    s = tmp_path / "s.yaml"
    s.write_text(
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
        "manifests: [m.yaml, ./m.yaml]\nspec: {duration: 1s}\n"
    )
    r = CliRunner().invoke(app, ["run", str(s)])
    assert r.exit_code == 2
    assert "manifest file" in r.output and "is already listed (manifests[0])" in r.output
