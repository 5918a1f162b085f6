"""Fuzzing the command line with hostile scenarios and manifests (issue 17): ``probesim run`` and
``probesim check`` (every --format) end with exit 0, 1 or 2, never a traceback; an input error
is one line on stderr; what they print parses in its format. The inputs come from
tests/property/hostile.py (scripts/fuzz_inputs.py runs thousands of them as real processes).
Issue 16's commands and options (--set, --threshold, --runs, --report, sweep, report, run on
manifests, tune) get hostile values and files from tests/property/hostile_options.py."""

from __future__ import annotations

import json
import random
import tempfile
import traceback
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from probesim.cli import app
from tests.property.hostile import FORMATS, make_case
from tests.property.hostile_options import make_options_case

EXIT_CODES = {0, 1, 2, 99}
runner = CliRunner()  # stdout and stderr apart (result.stdout, result.stderr)


def assert_clean(r: Result, args: list[str], fmt: str) -> None:
    """What every run must be: a known exit code, no traceback, one line for an input error,
    output parseable in its format."""
    shown = f"{args[0]} ... {' '.join(args[-3:])}"
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        tb = "".join(traceback.format_exception(r.exception))
        raise AssertionError(f"{shown}: uncaught exception\n{tb}")
    assert r.exit_code in EXIT_CODES, (shown, r.exit_code, r.output[-2000:])
    assert "Traceback" not in r.output, (shown, r.output[-2000:])
    if r.exit_code == 2:
        lines = r.stderr.strip().splitlines()
        if args[0] != "check":
            assert len(lines) <= 1, (shown, r.stderr[-2000:])
            return
        # check reads everything, then judges: one "error:" line per error entry, each naming
        # the input file (or the option at fault), and the report still written in its format.
        assert all(line.startswith("error: ") for line in lines), (shown, r.stderr[-2000:])
        if not r.stdout.strip():
            return
    elif r.exit_code not in (0, 1):
        return
    if fmt in ("json", "sarif"):
        json.loads(r.stdout)
    elif fmt == "junit":
        ET.fromstring(r.stdout)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
@given(st.randoms(use_true_random=False))
def test_hostile_inputs_end_cleanly_in_run_and_check(rnd: random.Random) -> None:
    case = make_case(rnd, "ci")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        case.write(root)
        args = case.run_args(root)
        assert_clean(runner.invoke(app, args), args, "json" if case.run_json else "text")
        if case.manifests:  # the same manifests in a generated scenario (probesim run k8s/)
            args = ["run", *(str(root / m) for m in case.manifests), "--duration", "10s"]
            args += ["--json"] if case.run_json else []
            assert_clean(runner.invoke(app, args), args, "json" if case.run_json else "text")
        for fmt in FORMATS:
            args = case.check_args(root, fmt)
            assert_clean(runner.invoke(app, args), args, fmt)


def assert_option_clean(r: Result, args: list[str], fmt: str) -> None:
    """As ``assert_clean``; typer's own refusal of an option's value (its usage box, naming the
    option and what it takes) is clean too, and a crossed threshold exits 99."""
    if r.exit_code == 2 and r.stderr.startswith("Usage: probesim") and "Error" in r.stderr:
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        return
    assert_clean(r, args, fmt)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
@given(st.randoms(use_true_random=False))
def test_hostile_options_end_cleanly(rnd: random.Random) -> None:
    """issue 16's commands and options (--set, --threshold, --runs, --report, sweep, report of a
    run's JSON or a sweep's rows, run on manifests, tune) on hostile values and files."""
    case = make_options_case(rnd, "ci", commands=2)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        case.write(root)
        for c in case.commands:
            args = c.args(root)
            r = runner.invoke(app, args, input=c.stdin)
            assert_option_clean(r, args, "text" if c.fmt == "none" else c.fmt)
