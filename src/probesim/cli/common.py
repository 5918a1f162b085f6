"""What the commands share: the one path an input error takes to the user (one line on stderr,
exit 2), the options several commands take, and reading a scenario or a built-in's name."""

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.text import Text

from probesim.cli.program import app, err
from probesim.errors import InputError, InputWarning, check_writable
from probesim.safe import MESSAGE_LIMIT, markup, visible

if TYPE_CHECKING:
    from probesim.manifests.generated import Generated
    from probesim.manifests.variants import Variant
    from probesim.model.scenario import Scenario

F = TypeVar("F", bound=Callable[..., Any])


def fail(e: InputError) -> typer.Exit:
    """One line on stderr, the user's text in it shown as text (probesim.safe); exit 2."""
    line = visible(str(e), limit=10 * MESSAGE_LIMIT)
    err.print(Text.assemble(("error:", "red"), " ", line), soft_wrap=True)
    return typer.Exit(2)


def command(name: str | None = None) -> Callable[[F], F]:
    """Register a command of the app whose input errors (an InputError raised anywhere in it)
    end as ``fail`` ends them: every command reports bad input the same way."""

    def register(f: F) -> F:
        @functools.wraps(f)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return f(*args, **kwargs)
            except InputError as e:
                raise fail(e) from None

        run.__doc__ = flowed(f.__doc__ or "")
        app.command(name)(run)
        return f

    return register


def flowed(doc: str) -> str:
    """A command's docstring as --help shows it: each paragraph's lines joined, so that the
    terminal wraps it (typer's rich mode keeps a paragraph's line breaks after the first, which
    at 80 columns leaves a word or two on every other line); a paragraph of list items or
    indented lines is kept as written."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    kept = [p if any(ln.startswith(("- ", "* ", " ")) for ln in p.splitlines()) else " ".join(p.split("\n"))
            for p in paragraphs]  # fmt: skip
    return "\n\n".join(kept)


def write_file(path: Path, text: str, what: str = "") -> None:
    """Write an output file the user named (``what`` it holds); a failure is an input error
    naming it."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write{' ' if what else ''}{what}: {e.strerror}", file=str(path)) from None


MAX_COST_OPTION = typer.Option(
    "--max-cost",
    help="Refuse a run estimated to cost more than this many work units (about a microsecond each; "
    "steps × (100 + containers + per route 500 + pods × (1 + dependency calls))). "
    "See docs/scenarios.md.",
    min=1,
)
SET_OPTION = typer.Option(
    "--set",
    help="Change a field before the scenario is checked, path=value (repeatable): a scenario field "
    "(spec.traffic[0].rate=500, spec.seed=3) or an object's (deployment/web.spec.replicas=3, "
    "kind/namespace/name.field). The value is YAML: 500, 10s, true.",
)
MAX_TOTAL_COST_OPTION = typer.Option(
    "--max-total-cost",
    help="Refuse many runs (--runs, a sweep) estimated together to cost more than this many work units "
    "(about a microsecond each; the default is about 17 minutes of CPU).",
    min=1,
)
WORKERS_OPTION = typer.Option(help="Local worker processes (default: one per core).", min=1)
SCHEDULER_OPTION = typer.Option(
    help="Run on the Dask distributed cluster whose scheduler is at tcp://host:port (see docs/sweeps.md)."
)


def check_cost(sc: "Scenario", target: str, limit: int) -> None:
    """Refuse, before it starts, a run that would take too long or too much memory."""
    from probesim.cost import run_cost

    cost = run_cost(sc)
    if cost.units > limit:
        raise InputError(
            f"this run would cost {cost.explain()}, more than --max-cost {limit:,}; shorten "
            "spec.duration, coarsen spec.step, run fewer pods or routes, or raise --max-cost",
            file=target,
        )


def check_output_path(path: Path, what: str, suffix: str) -> None:
    """An output file named ``*suffix`` (case aside) in an existing folder, checked before the run."""
    if path.suffix.lower() != suffix or path.name == path.suffix:
        raise InputError(
            f"{what} is written to a {suffix} file: give a file name ending in {suffix}", file=str(path)
        )
    check_writable(path, what)


def exists(path: str) -> bool:
    """Whether ``path`` exists; a name the system refuses (too long, a NUL) does not."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def scenario_path(target: str) -> str:
    """A scenario file's path: ``target`` itself, '-', or the file of the built-in of that name."""
    from probesim.scenarios import find
    from probesim.scenarios import names as builtin_names

    if target == "-" or exists(target):
        return target
    b = find(target)
    if b is None:
        names = ", ".join(builtin_names())
        raise InputError(
            f"no such file, and no built-in scenario of that name (built-in: {names})", file=target
        )
    return str(b.path)


def load(target: str, manifests: Sequence[str] = (), sets: Sequence[str] = ()) -> "Scenario":
    """The scenario a file, '-' or a built-in's name holds, with -m manifests and --set changes;
    its input warnings said on stderr."""
    from probesim.manifests.scenario import load_scenario
    from probesim.overrides import parse_set

    overrides = [parse_set(s) for s in sets]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        sc = load_scenario(scenario_path(target), manifests, overrides)
    warn(dict.fromkeys(str(w.message) for w in said if issubclass(w.category, InputWarning)))
    return sc


def warn(messages: Iterable[str]) -> None:
    """Input warnings, each once, on stderr."""
    for m in messages:
        err.print(
            f"[yellow]warning:[/yellow] {markup(m, MESSAGE_LIMIT)}",
            highlight=False,
            soft_wrap=True,
            emoji=False,
        )


def tell_generated(generated: "Generated", sc: "Scenario") -> None:
    """On stderr, once the run is sure to start: what the scenario generated from manifests
    runs, and a line on what it does not (as check says it)."""
    from probesim.analysis.check import CheckReport
    from probesim.report.check_outputs import render_skipped

    for line in generated.lines(sc):
        err.print(Text(line, style="dim"), soft_wrap=True)
    report = CheckReport(skipped=generated.skipped)
    render_skipped(report, err, False, "not simulated", "--print-scenario lists them, with why")


def one_variant_only(
    variants: "Sequence[Variant | None]", given: Sequence[str], command: str = "run"
) -> None:
    """Refuse what takes one scenario (``given``: --plot, a sweep …) on input of variants."""
    from probesim.manifests.variants import one_scenario_only

    one_scenario_only([v for v in variants if v is not None], given, command)
