"""``probesim sweep``: a scenario run over a grid of ``--set`` values (or random points of it),
each point checked and costed before any runs, and the rows written as CSV or Parquet.

Every point is loaded here, with the same loader and errors as ``probesim run --set``, so that a
bad value anywhere in the grid stops the sweep before it starts, and so that its cost is known:
a sweep costing more than ``--max-total-cost`` (the sum of probesim.cost's estimate over its
runs) is refused up front. The tasks then carry the loaded scenarios (probesim.runs).
"""

from __future__ import annotations

import csv
import io
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probesim.cost import DEFAULT_MAX_TOTAL_COST
from probesim.errors import InputError, check_writable
from probesim.overrides import Axis, show_value
from probesim.runs import Task

MAX_POINTS = 1_000_000  # points loaded up front; a sweep beyond is refused (use --sample)
FORMATS = (".csv", ".parquet")


@dataclass(frozen=True)
class Plan:
    tasks: list[Task]
    points: int  # in the sweep (sampled or the whole grid)
    grid: int  # in the whole grid
    units: int  # the estimated cost of all runs


def grid_size(axes: Sequence[Axis]) -> int:
    return math.prod(len(a.values) for a in axes)


def point_values(axes: Sequence[Axis], i: int) -> tuple[int, ...]:
    """The value indices of grid point ``i`` (the last axis varies fastest, as itertools.product)."""
    out = []
    for a in reversed(axes):
        i, j = divmod(i, len(a.values))
        out.append(j)
    return tuple(reversed(out))


def choose(total: int, sample: int | None, seed: int) -> list[int]:
    """The grid points to run, in grid order: all, or ``sample`` of them drawn with ``seed``."""
    if sample is None or sample >= total:
        return list(range(total))
    return sorted(random.Random(seed).sample(range(total), sample))


def check_output(path: Path) -> None:
    """``-o`` names a .csv or .parquet file in an existing folder (checked before the runs)."""
    if path.suffix.lower() not in FORMATS or path.name == path.suffix:
        raise InputError("rows are written as CSV or Parquet: give a file name ending in .csv or .parquet",
                         file=str(path))  # fmt: skip
    check_writable(path, "the rows")
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(
                "Parquet needs pyarrow: pip install 'probesim[cluster]', or write .csv", file=str(path)
            ) from None


def plan(
    scenario: str,
    axes: Sequence[Axis],
    *,
    manifests: Sequence[str] = (),
    runs: int = 1,
    sample: int | None = None,
    sample_seed: int = 0,
    max_cost: int,
    max_total_cost: int = DEFAULT_MAX_TOTAL_COST,
    thresholds: Sequence[str] = (),
    source: tuple[str, str, Path] | None = None,
) -> Plan:
    """Load and cost every point of the sweep; the tasks, one per point and run, each judged by
    its scenario's thresholds and ``thresholds`` (lines of spec.thresholds). ``source``: the
    scenario's text, the name errors give it and the folder its manifests are relative to,
    instead of reading the file ``scenario`` (a scenario generated from manifests)."""
    from probesim.cost import run_cost
    from probesim.manifests.scenario import scenario_from_text
    from probesim.manifests.yamlsrc import read_text
    from probesim.model.judged import judged_by

    paths = [a.path for a in axes]
    for p in paths:
        if paths.count(p) > 1:
            raise InputError(f"{p} is set twice: give its values in one --set {p}=v1,v2,…")
    if "-" in manifests:
        raise InputError("a sweep reads its manifests once per point: give them as files, not '-'")
    total = grid_size(axes)
    if min(total, sample or total) > MAX_POINTS:
        raise InputError(f"{total:,} points; at most {MAX_POINTS:,} (draw some with --sample K)")
    chosen = choose(total, sample, sample_seed)
    if source is not None:
        text, shown, base = source
    else:
        text, shown = read_text(scenario)  # once: standard input can be read once
        base = Path(scenario).parent if scenario != "-" else Path.cwd()
    loaded = []
    units = 0
    for point in chosen:
        idx = point_values(axes, point)
        overrides = [a.at(j) for a, j in zip(axes, idx, strict=True)]
        sc = scenario_from_text(text, shown, base, manifests, overrides)
        cost = run_cost(sc)
        if cost.units > max_cost:
            where = ", ".join(o.text for o in overrides)
            raise InputError(
                f"the run with --set {where} would cost {cost.explain()}, more than --max-cost "
                f"{max_cost:,}; leave that value out or raise --max-cost",
                file=shown,
            )
        units += cost.units * runs
        inputs = tuple((o.path, o.value) for o in overrides)
        loaded.append((point, sc, inputs, tuple(judged_by(sc, thresholds, shown))))
    points = f"{len(chosen):,} point{'s' if len(chosen) != 1 else ''}"
    what = f"this sweep of {points} × {runs:,} run{'s' if runs > 1 else ''}"
    # Before the tasks exist: --runs 10**20 is refused, not a list too long for memory.
    check_total_cost(
        units, max_total_cost, what, "give fewer values or runs, draw some points with --sample K", shown
    )
    tasks = [
        Task(sc, sc.spec.seed + r, inputs, point=point, run=r, thresholds=judged)
        for point, sc, inputs, judged in loaded
        for r in range(runs)
    ]
    return Plan(tasks, len(chosen), total, units)


def check_total_cost(units: int, limit: int, what: str, advice: str, file: str) -> None:
    """Refuse runs whose estimated cost together is over ``limit`` (--max-total-cost)."""
    if units > limit:
        raise InputError(
            f"{what} would cost about {units:,} units (roughly {units / 1e6 / 60:,.1f} min of CPU), more "
            f"than --max-total-cost {limit:,}; {advice}, or raise --max-total-cost",
            file=file,
        )


def columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every column of ``rows``, in order of first appearance."""
    return list(dict.fromkeys(k for row in rows for k in row))


def _cell(v: Any) -> str:
    """A CSV cell: a float's shortest exact text (read back bit for bit), true/false, empty for
    None, other inputs as YAML flow text."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, int | str):
        return str(v)
    return show_value(v)


def write_rows(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """``rows`` to ``path``: CSV, or Parquet for a .parquet name."""
    cols = columns(rows)
    try:
        if path.suffix.lower() == ".parquet":
            _write_parquet(rows, cols, path)
            return
        with path.open("w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for row in rows:
                w.writerow([_cell(row.get(c)) for c in cols])
    except OSError as e:
        raise InputError(f"cannot write the rows: {e.strerror}", file=str(path)) from None


def _write_parquet(rows: Sequence[dict[str, Any]], cols: Sequence[str], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data: dict[str, list[Any]] = {}
    for c in cols:
        values = [row.get(c) for row in rows]
        kinds = {type(v) for v in values if v is not None}
        if kinds <= {int, float} and float in kinds:
            values = [None if v is None else float(v) for v in values]
        elif len(kinds) > 1 or not kinds <= {int, float, bool, str}:
            values = [None if v is None else _cell(v) for v in values]  # a mixed input column
        data[c] = values
    pq.write_table(pa.table(data), path)


# -- reading rows back (probesim report rows.csv) -----------------------------------------------

PARQUET_MAGIC = b"PAR1"
_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")


def _read_cell(text: str) -> Any:
    """A CSV cell as ``_cell`` wrote it: empty None, true/false, an int, a finite float, else text."""
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        v = float(text)
        return v if math.isfinite(v) else text
    return text


def read_rows(data: bytes, file: str) -> tuple[list[str], list[dict[str, Any]]]:
    """A sweep's rows from the bytes of its CSV or Parquet file (told apart by Parquet's magic
    number): the columns in order and one dict per row, as ``write_rows`` was given them (a
    swept value that was not a number, boolean or text comes back as its YAML text)."""
    if data.startswith(PARQUET_MAGIC):
        return _read_parquet(data, file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a sweep's rows: the file is neither UTF-8 CSV nor Parquet", file=file) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise InputError(
                "not a sweep's rows: the file is empty (write one with probesim sweep)", file=file
            )
        rows = []
        parsed: dict[str, Any] = {}  # each distinct cell read once (a sweep repeats most values)
        for cells in reader:
            if not cells:
                continue
            if len(cells) != len(header):
                raise InputError(
                    f"{len(cells)} cells, the header {len(header)}: a sweep's rows line up with their header",
                    file=file,
                    line=reader.line_num,
                )
            rows.append({c: parsed[v] if v in parsed else parsed.setdefault(v, _read_cell(v))
                         for c, v in zip(header, cells, strict=True)})  # fmt: skip
    except csv.Error as e:
        raise InputError(f"not CSV: {e}", file=file, line=reader.line_num) from None
    return header, rows


def _read_parquet(data: bytes, file: str) -> tuple[list[str], list[dict[str, Any]]]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            "reading Parquet needs pyarrow: pip install 'probesim[cluster]'", file=file
        ) from None
    try:
        table = pq.read_table(pa.BufferReader(data))
        cols = [str(c) for c in table.column_names]
    except (pa.ArrowException, OSError, ValueError) as e:  # UnicodeDecodeError: a name not UTF-8
        raise InputError(f"not a Parquet file pyarrow can read: {e}", file=file) from None
    plain = (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean, pa.types.is_string,
             pa.types.is_large_string, pa.types.is_null)  # fmt: skip
    for f in table.schema:
        if not any(t(f.type) for t in plain):
            raise InputError(
                f"column {f.name!r} is of type {f.type}: a sweep's columns are numbers, booleans or text",
                file=file,
            )
    try:
        data_cols = table.to_pydict()
    except (pa.ArrowException, ValueError) as e:
        raise InputError(f"not a Parquet file pyarrow can read: {e}", file=file) from None
    rows = []
    for i in range(table.num_rows):
        row = {}
        for c in cols:
            v = data_cols[c][i]
            row[c] = None if isinstance(v, float) and not math.isfinite(v) else v
        rows.append(row)
    return cols, rows
