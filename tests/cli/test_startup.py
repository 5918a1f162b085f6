"""Start-up (issue 14): what ``probesim --help`` imports, help and tracebacks unchanged by the
light import of typer's help renderer, and built-ins found by their file name. Times are not
tested here (the machine is shared): ``benchmarks/startup.py`` measures them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from probesim import scenarios
from probesim.scenarios import builtins, find, names

# Run the entry point as the installed ``probesim`` script does, or typer's app directly.
MAIN = "import sys; sys.argv[0] = 'probesim'; from probesim.cli import main; main()"
PLAIN = "from probesim.cli import app; app(prog_name='probesim')"


def _py(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_help_imports_no_models_numpy_yaml_or_markdown() -> None:
    code = (
        "import sys, io, contextlib\n"
        "sys.argv = ['probesim', '--help']\n"
        "from probesim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'numpy', 'yaml', 'markdown_it', 'pygments') or m in ('rich.markdown', 'rich.traceback'))))"
    )
    r = _py(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def test_a_plain_run_imports_no_plotting_parallel_tuning_or_manifest_analysis() -> None:
    """``probesim run <built-in>`` without --plot, --report, --json or --runs: matplotlib, plotly,
    dask and optuna never load, nor the manifest analysis (probesim check, generated scenarios);
    nor numpy.random for a run that draws nothing, nor numpy.ma (np.unique's import), nor XML
    (the JUnit writer's, without --junit)."""
    code = (
        "import sys, io, contextlib\n"
        "sys.argv = ['probesim', 'run', 'seed000-demo']\n"
        "from probesim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n        main()\n    except SystemExit as e:\n        assert e.code in (0, None), e.code\n"
        "assert 'Events' in out.getvalue()\n"
        "print('loaded:', *sorted(m for m in sys.modules if m.split('.')[0] in "
        "('matplotlib', 'plotly', 'dask', 'distributed', 'optuna', 'numba', 'pyarrow') "
        "or m.startswith(('probesim.analysis', 'probesim.manifests.generated', 'probesim.manifests.discovery', "
        "'probesim.tune', 'probesim.report.html', 'rich.markdown')) "
        "or m in ('numpy.random', 'numpy.ma', 'xml.etree.ElementTree')))"
    )
    r = _py(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "loaded:"


def test_a_scenario_files_run_imports_no_rules_or_stress_suite(tmp_path: Path) -> None:
    """``probesim run scenario.yaml`` reads the file to see that it is no manifest, but runs it
    without check's rules, its stress suite or concurrent.futures (about 0.08 s)."""
    f = tmp_path / "demo.yaml"
    f.write_text(scenarios.HERE.joinpath("seed000-demo.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    code = (
        "import sys, io, contextlib\n"
        f"sys.argv = ['probesim', 'run', {str(f)!r}]\n"
        "from probesim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n        main()\n    except SystemExit as e:\n        assert e.code in (0, None), e.code\n"
        "assert 'Events' in out.getvalue()\n"
        "print('loaded:', *sorted(m for m in sys.modules if m.startswith(('probesim.analysis.check', "
        "'probesim.analysis.rules', 'probesim.analysis.stress', 'concurrent.futures'))))"
    )
    r = _py(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "loaded:"


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["run", "--help"],
        ["lab", "--help"],
        ["run"],
        ["run", "--bogus"],
        ["nosuch"],
        ["run", "seed000-demo", "--seed", "x"],
        ["run", "seed000-demo", "--runs", "0"],
        ["version"],
        ["schema", "extra"],
    ],
    ids=lambda a: " ".join(a),
)
def test_help_and_usage_errors_are_unchanged(args: list[str]) -> None:
    light, plain = _py(MAIN, *args), _py(PLAIN, *args)
    assert (light.returncode, light.stdout, light.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert "Usage: probesim" in light.stdout + light.stderr or args == ["version"]


def test_an_uncaught_exception_still_gets_typers_rich_traceback() -> None:
    code = (
        "import sys; sys.argv = ['probesim', 'boom']\n"
        "from probesim import cli\n"
        "@cli.app.command('boom')\n"
        "def boom() -> None:\n    raise RuntimeError('kaboom')\n"
        "cli.main()"
    )
    r = _py(code)
    assert r.returncode == 1
    assert "Traceback (most recent call last)" in r.stderr
    assert "RuntimeError: kaboom" in r.stderr


def test_every_builtin_is_named_as_its_file() -> None:
    every = builtins()
    assert [b.name for b in every] == [b.path.stem for b in every] == names()
    for b in every:
        assert find(b.name) == b


def test_find_reads_only_the_named_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def parse_all() -> None:
        raise AssertionError("find parsed every built-in")

    monkeypatch.setattr(scenarios, "builtins", parse_all)
    b = find("seed000-demo")
    assert b is not None and b.path.name == "seed000-demo.yaml" and b.description


@pytest.mark.parametrize(
    "name",
    ["", "nosuch", "../scenarios/seed000-demo", "seed000-demo.yaml", "/etc/passwd", "a" * 5000, "x\0y"],
)
def test_find_refuses_what_is_not_a_builtin_name(name: str) -> None:
    assert find(name) is None


def _threads_after(args: list[str], env: dict[str, str]) -> list[str]:
    """The process's threads (the kernel's count) and its OPENBLAS_NUM_THREADS after ``probesim
    <args>`` ran in it."""
    code = (
        "import os, sys, io, contextlib\n"
        f"sys.argv = ['probesim', *{args!r}]\n"
        "from probesim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main()\n    except SystemExit as e:\n        assert e.code in (0, None), e.code\n"
        "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_a_run_loads_numpy_with_one_blas_thread_and_leaves_the_environment_as_it_was() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _threads_after(["run", "seed000-demo"], env) == ["1", "None"]
    # A user's own setting is theirs: kept, and numpy's BLAS takes it (up to one thread per CPU).
    threads, setting = _threads_after(["run", "seed000-demo"], {**env, "OPENBLAS_NUM_THREADS": "2"})
    assert (int(threads) > 1 or (os.cpu_count() or 1) < 2, setting) == (True, "2")
