"""The ``probesim`` Typer app, its two consoles and the entry point: how a command line is
started (what is imported, and when) and how standard output failing ends it. The commands
themselves are the other modules of this package, one each."""

import errno
import os
import sys
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

app = typer.Typer(
    name="probesim",
    help=(
        "See what Kubernetes probes will do to your service before production does.\n\n"
        "probesim simulates the kubelet's startup, readiness and liveness probes, container "
        "restarts with CrashLoopBackOff, pod readiness and Service endpoints for your real "
        "manifests, under a scripted workload and traffic, deterministically and in seconds."
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)
# Not a terminal (a pipe, CI logs): wide enough that tables are not cut to 80 columns. No emoji
# codes: ":100:" in a user's path is text.
out = Console(width=None if sys.stdout.isatty() else 160, emoji=False)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160, emoji=False)


def main() -> None:
    _import_typer_help()
    _build_only_the_command_given()
    if sys.argv[1:2] and sys.argv[1] in _SIMULATING and not {"--help", "-h"} & set(sys.argv[2:]):
        _numpy_with_one_blas_thread()
    try:
        app()
    except SystemExit:
        _flush_stdout()
        raise
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EDQUOT, errno.EFBIG):
            raise
        _stdout_failed(e)
    _flush_stdout()


# The commands that import numpy (they simulate, or read a run's series).
_SIMULATING = frozenset({"run", "sweep", "compare", "report", "check", "diff", "tune", "lab", "demo"})


def _numpy_with_one_blas_thread() -> None:
    """Import numpy with its BLAS (OpenBLAS) on one thread.

    OpenBLAS starts a thread per CPU as numpy loads, and they spin looking for work for a tenth
    of a second or so: about a sixth of the CPU time of ``probesim run seed000-demo``, for a
    library whose one matrix product here (a few hundred rows, results the same to the bit on
    one thread: benchmarks/startup.py) does not need them. OpenBLAS reads the variable once,
    as it loads, so it is removed at once: nothing probesim starts (the lab's apps, Envoy)
    inherits it, and a user's own setting is left as it is (the worker processes of run --runs
    and sweep keep it set: runs.one_thread_per_worker)."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


class _Markdown:
    """Stands in for rich.markdown.Markdown in typer.rich_utils: the real one, made on use."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _Traceback:
    """Stands in for rich.traceback.Traceback in typer.rich_utils: the real one, made on use."""

    @staticmethod
    def from_exception(*args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


def _import_typer_help() -> None:
    """Import typer's help and error renderer without rich.markdown and rich.traceback.

    typer.rich_utils imports both at its top (markdown-it, pygments: about 50 ms, a third of
    ``probesim --help``), though it makes a Markdown only in markdown markup mode (ours is rich)
    and a Traceback only for an uncaught exception. Stand-ins that import the real class when
    called take their place while it loads, so help, errors and tracebacks are unchanged
    (tests/cli/test_startup.py). Done only if neither is loaded yet; the real modules load
    normally afterwards.
    """
    stand_ins = {"rich.markdown": ("Markdown", _Markdown), "rich.traceback": ("Traceback", _Traceback)}
    if "typer.rich_utils" in sys.modules or any(m in sys.modules for m in stand_ins):
        return
    import types

    for name, (attr, cls) in stand_ins.items():
        module = types.ModuleType(name)
        setattr(module, attr, cls)
        sys.modules[name] = module
    try:
        import typer.rich_utils  # noqa: F401
    except ImportError:  # a typer wanting more of them: load it as it is
        sys.modules.pop("typer.rich_utils", None)
    finally:
        for name in stand_ins:
            del sys.modules[name]


def _build_only_the_command_given() -> None:
    """Let typer build only the command named on the command line (and ``version``, so that the
    app stays a group of commands: typer runs a lone command without its name).

    typer builds every command's click parameters before it looks at the arguments, 5 % of
    ``probesim run seed000-demo``. Help, usage errors and what a command does are the same
    (tests/cli/test_startup.py compares them with the whole app); anything else (no command,
    an option, an unknown name, the lab group) is given the whole app."""
    from typer.main import get_command_name

    given = sys.argv[1] if len(sys.argv) > 1 else ""
    partner = "schema" if given == "version" else "version"
    keep = [
        c
        for c in app.registered_commands
        if (c.name or get_command_name(c.callback.__name__ if c.callback else "")) in (given, partner)
    ]
    if len(keep) == 2:
        app.registered_commands = keep


def _flush_stdout() -> None:
    """Flush standard output now: a full disk is then an error here, not a traceback at exit."""
    try:
        sys.stdout.flush()
    except OSError as e:
        _stdout_failed(e)


def _stdout_failed(e: OSError) -> None:
    """Standard output cannot be written (a full disk, a closed pipe): one line, exit 2 (a
    closed pipe, as ``| head``: quietly, exit 1)."""
    # What is still buffered goes nowhere, so that Python's own flush at exit cannot fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    if e.errno == errno.EPIPE:
        raise SystemExit(1)
    err.print(Text.assemble(("error:", "red"), f" <stdout>: cannot write: {e.strerror}"), soft_wrap=True)
    raise SystemExit(2)
