"""Hostile command lines for the commands and options of issue 16: ``--set``, ``--threshold``,
``--runs``, ``--report``, ``probesim sweep``, ``probesim report`` (a run's JSON, a sweep's CSV or
Parquet rows), ``probesim run`` on manifests (``--start``, ``--rate``, ``--duration``,
``--print-scenario``) and ``probesim tune``.

Built on tests/property/hostile.py's cases (their files, mutated or not) and value pools, used by
the CI fuzz test (tests/property/test_fuzz_cli.py) and scripts/fuzz_inputs.py. A command's
arguments name the case's files relative to its folder: ``Command.args(root)`` makes them paths.

``profile="ci"`` keeps every command that is not refused up front short: a sweep of at most two
points, ``--runs`` at most 2, one worker, and ``tune`` only with a ``--workload`` the manifests do
not have (its inputs are read and refused; a trial takes seconds). ``profile="full"`` also runs
tune's trials and bigger grids.
"""

from __future__ import annotations

import io
import json
import random
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.property.hostile import (
    BASES,
    HOSTILE_DURATIONS,
    NAMES,
    SMALL_MANIFEST,
    SMALL_SCENARIO,
    Case,
    Profile,
    make_case,
    mutate_data,
    mutate_text,
)

ROOT = "@ROOT@/"  # in an argument: the case's folder

# --set: paths the scenarios have, paths they do not, and paths no scenario can have.
SET_PATHS: tuple[str, ...] = (
    "spec.seed", "spec.duration", "spec.step", "spec.traffic[0].rate", "spec.traffic[0].timeout",
    "spec.traffic[0]", "spec.traffic", "spec", "metadata.name", "deployment/web.spec.replicas",
    "deploy/web.spec.template.spec.containers[0].readinessProbe.periodSeconds", "svc/web.spec.ports[0].port",
    "deployment/default/web.spec.replicas", "sts/web.spec.replicas", "deployment/nope.spec.replicas",
    "spec.traffic[99].rate", "spec.traffic[99999999999999999999999].rate", "spec.traffic[-1].rate",
    "spec.traffic[x].rate", "spec..seed", ".spec", "spec.", "[0]", "", " ", "deployment/", "/web.spec",
    "deployment/a/b/c.spec", "a\\.b\\", "spec.behavior.web.containers.app.start", "x" * 5000,
    ".".join(["a"] * 70), ".".join(["a"] * 63), "spec.traffic[0].rate[0]", "kind", "apiVersion",
    "spec.seed\x00", "spec.\u202eseed", "[/]", "deployment/[bold]x[/bold].spec.replicas",
)  # fmt: skip
SET_VALUES: tuple[str, ...] = (
    "1", "0", "-1", "500", "2.5", "1e309", "nan", ".inf", "-.inf", "true", "null", "~", "10s", "0s", "-1s",
    "'3'", "[]", "{}", "[1, 2]", "{for: 1m, factor: 2}", "{", "[1,", "'", '"', "&a [*a]", "*a", "!!python/object:os.system",
    "!!binary aGVsbG8=", "- 1", "a: b", "---", "... ", "%YAML 1.1", "9" * 5000, "[" * 200 + "]" * 200,
    "{a: " * 100 + "1" + "}" * 100, "\x00", "\x1b[31m", "[/]", ":100:", "<script>", "",
)  # fmt: skip
THRESHOLDS: tuple[str, ...] = (
    "errors: rate<0.01", "p95: <500ms", "restarts: ==0", "ready: min>=2", "available: min>=50%",
    "no_endpoints: <5s", "p95{route:/}: <500ms", "errors{route:nope}: rate<0.1", "ready{workload:web}: min>=1",
    "p(99.9): <1s", "p(0): <1s", "p(100): <1s", "max: <1s", "errors: rate<nan", "errors: rate<inf",
    "errors: rate<1e999", "restarts: ==-1", "restarts: <=" + "9" * 5000, "p95: <1e9h", "p95: <-5ms",
    "errors", "errors:", ": <1", "errors: rate", "errors: <<1", "errors{: rate<1", "errors{route:/: rate<1",
    "p95{" + "{" * 500 + ": <1s", "errors{route:/,route:/}: rate<1", "errors{pod:x}: rate<1", "x: ==0",
    "ready: min>=200%", "ready: min>=-1%", "- errors: rate<1", "errors: rate<0.01\nrestarts: ==0",
    "[bold]x[/bold]: ==0", "\x1b: ==0", "errors: rate<0.01 # c", "ERRORS: RATE<0.01", "",
)  # fmt: skip
RUNS: tuple[str, ...] = ("0", "-1", "1", "2", "100001", "x", "1e3", "99999999999999999999", "", " 2")
OUTPUTS: tuple[str, ...] = (
    "rows.csv", "rows.parquet", "rows.CSV", "rows.txt", ".csv", "missing/rows.csv", "dir.csv", "rows", "-",
    "a" * 300 + ".csv", "rows.csv\x00x", "[bold]rows[/bold].csv",
)  # fmt: skip
REPORTS: tuple[str, ...] = (
    "r.html", "r.HTML", "r.png", ".html", "missing/r.html", "dir.html", "r", "-", "a" * 300 + ".html",
    "r\x00.html", "[/].html", "\u202er.html",
)  # fmt: skip
RATES: tuple[str, ...] = ("0", "-1", "5", "1e9", "1e10", "nan", "inf", "x", "", "1e-300")
STORAGES: tuple[str, ...] = (
    "sqlite:///" + ROOT + "t.db", "sqlite:///" + ROOT + "dir.csv", "sqlite:///" + ROOT + "missing/t.db", "", "x",
    "sqlite://", "sqlite:///:memory:", "nosuch://x", "sqlite:///" + ROOT + "s.yaml",
)  # fmt: skip


@dataclass
class Command:
    """One command line: its name (for counts), arguments (ROOT-relative files), standard input."""

    name: str
    argv: list[str]
    fmt: str = "text"  # what standard output must parse as: text, json, none (a page or rows written)
    stdin: bytes | None = None
    extra_files: dict[str, bytes] = field(default_factory=dict)

    def args(self, root: Path) -> list[str]:
        return [a.replace(ROOT, f"{root}/") for a in self.argv]


@dataclass
class OptionsCase:
    """A hostile case's files and the commands run on them."""

    case: Case
    commands: list[Command]

    def write(self, root: Path) -> None:
        self.case.write(root)
        (root / "dir.csv").mkdir(exist_ok=True)
        (root / "dir.html").mkdir(exist_ok=True)
        for c in self.commands:
            for name, data in c.extra_files.items():
                (root / name).write_bytes(data)


# ---------------------------------------------------------------------------------------------
# Values


def hostile_set(rnd: random.Random, values: int = 1) -> str:
    path = rnd.choice(SET_PATHS)
    vals = ",".join(rnd.choice(SET_VALUES) for _ in range(values))
    form = rnd.random()
    if form < 0.08:
        return rnd.choice(["", "=", "==1", "spec.seed", "spec.seed=", "=1", "spec.seed==1", "x" * 5000])
    return f"{path}={vals}"


def hostile_threshold(rnd: random.Random) -> str:
    t = rnd.choice(THRESHOLDS)
    if rnd.random() < 0.1:
        t = t.replace("/", rnd.choice(NAMES))
    return t


def _root(name: str) -> str:
    return name if name == "-" or name == "" else ROOT + name


# ---------------------------------------------------------------------------------------------
# Files the report reads: a real run's JSON and a real sweep's rows, mutated


@cache
def _real_outputs() -> tuple[bytes, bytes, bytes]:
    """The small scenario's result (--json) and a 2-point sweep's rows (CSV, Parquet if pyarrow
    is there, else b''), simulated once."""
    from probesim.engine import simulate
    from probesim.manifests.scenario import load_scenario
    from probesim.overrides import parse_set
    from probesim.runs import Task, run_task
    from probesim.sweep import write_rows

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "s.yaml").write_text(SMALL_SCENARIO)
        (root / "m.yaml").write_text(SMALL_MANIFEST)
        sc = load_scenario(
            str(root / "s.yaml"), (), [parse_set("spec.duration=15s"), parse_set("spec.step=500ms")]
        )
        doc = simulate(sc).to_json()
        doc["thresholds"] = []
        result = json.dumps(doc).encode()
        rows = []
        for point, rate in enumerate((5, 40)):
            s = load_scenario(str(root / "s.yaml"), (), [parse_set("spec.duration=15s"),
                              parse_set(f"spec.traffic[0].rate={rate}")])  # fmt: skip
            from probesim.model.judged import judged_by

            judged = tuple(judged_by(s, ["restarts: ==0", "errors: rate<0.5"]))
            for run in range(2):
                rows.append(
                    run_task(
                        Task(s, s.spec.seed + run, (("spec.traffic[0].rate", rate),), point, run, judged)
                    )
                )
        write_rows(rows, root / "rows.csv")
        csv = (root / "rows.csv").read_bytes()
        try:
            write_rows(rows, root / "rows.parquet")
            parquet = (root / "rows.parquet").read_bytes()
        except ImportError:
            parquet = b""
    return result, csv, parquet


CELLS: tuple[str, ...] = (
    "", "nan", "inf", "-inf", "1e999", "-0", "true", "false", "1.5", "-1", "x", "9" * 5000, "١٢", "1_000",
    "0x10", "\x00", '"', '""', "'", "\r", "\n", ",", *NAMES[:20],
)  # fmt: skip


def _mutate_csv(rnd: random.Random, data: bytes, profile: Profile) -> tuple[bytes, str]:
    lines = data.decode().splitlines()
    kind = rnd.choice(["cell", "header", "drop-column", "dup-column", "many-rows", "many-columns", "text",
                       "ragged", "many-points"])  # fmt: skip
    cells = [line.split(",") for line in lines]  # the rows file quotes nothing but bracketed names
    if kind == "cell" and len(cells) > 1:
        r, c = rnd.randrange(len(cells)), rnd.randrange(len(cells[0]))
        cells[r][c] = rnd.choice(CELLS)
    elif kind == "header":
        cells[0][rnd.randrange(len(cells[0]))] = rnd.choice([*NAMES, "point", "run", "seed", "threshold[x].ok",
                                                             "route[x].failed", "workload[", "]"])  # fmt: skip
    elif kind == "drop-column":
        i = rnd.randrange(len(cells[0]))
        cells = [row[:i] + row[i + 1 :] for row in cells]
    elif kind == "dup-column":
        i = rnd.randrange(len(cells[0]))
        cells = [[*row, row[i]] for row in cells]
    elif kind == "many-rows":
        n = rnd.choice([2000, 200_000] if profile == "full" else [500, 5000])
        cells = [cells[0]] + [cells[1 + i % (len(cells) - 1)] for i in range(n)]
    elif kind == "many-columns":
        n = rnd.choice([1000, 20_000] if profile == "full" else [300, 2000])
        cells = [
            row + [f"route[r{i}].failed" if j == 0 else str(i) for i in range(n)]
            for j, row in enumerate(cells)
        ]
    elif kind == "many-points":  # a distinct value of the swept field on every row
        n = rnd.choice([5000, 100_000] if profile == "full" else [300, 3000])
        cells = [cells[0]] + [[str(i), str(i), *cells[1 + i % (len(cells) - 1)][2:]] for i in range(n)]
    elif kind == "ragged" and len(cells) > 1:
        r = rnd.randrange(1, len(cells))
        cells[r] = cells[r][: rnd.randrange(len(cells[r]))]
    else:
        return mutate_text(rnd, data, profile)[0], "csv-text"
    return ("\n".join(",".join(row) for row in cells) + "\n").encode(), f"csv-{kind}"


def _mutate_json(rnd: random.Random, data: bytes, profile: Profile) -> tuple[bytes, str]:
    doc = json.loads(data)
    if rnd.random() < 0.6:
        done = mutate_data(rnd, [doc], profile)
        try:
            text = json.dumps(doc, allow_nan=True).encode()
        except (ValueError, RecursionError):
            text = data
        return text, "json-" + "-".join(done)
    if rnd.random() < 0.5 and isinstance(doc.get("series"), dict):
        n = rnd.choice([10_000, 1_000_000] if profile == "full" else [10_000, 100_000])
        doc["series"] = {k: (v * (n // max(1, len(v))))[:n] for k, v in doc["series"].items()}
        return json.dumps(doc).encode(), "json-long-series"
    return mutate_text(rnd, data, profile)[0], "json-text"


def _parquet_bytes(rnd: random.Random, data: bytes) -> tuple[bytes, str]:
    kind = rnd.choice(["as-is", "truncate", "flip", "magic-only", "junk"])
    if kind == "truncate":
        return data[: rnd.randrange(len(data))], "parquet-truncate"
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rnd.randint(1, 20)):
            out[rnd.randrange(len(out))] = rnd.getrandbits(8)
        return bytes(out), "parquet-flip"
    if kind == "magic-only":
        return b"PAR1", "parquet-magic"
    if kind == "junk":
        return b"PAR1" + bytes(rnd.getrandbits(8) for _ in range(200)) + b"PAR1", "parquet-junk"
    return data, "parquet"


def _typed_parquet(rnd: random.Random) -> tuple[bytes, str]:
    """A Parquet file of odd types: lists, structs, NaN, huge ints, nulls, binary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, Any] = {"point": [0, 1], "x": [1.0, float("nan")], "run": [0, 0], "seed": [1, 2]}
    extra = rnd.choice([
        ("route[a].failed", pa.array([[1], [2]])), ("route[a].failed", pa.array([{"a": 1}, {"a": 2}])),
        ("route[a].failed", pa.array([2**63 - 1, -(2**63)])), ("route[a].failed", pa.array([None, None])),
        ("route[a].failed", pa.array([b"\x00", b"\xff"])), ("threshold[t].ok", pa.array([1, 0])),
        ("route[a].failed", pa.array([float("inf"), float("nan")])), ("point", pa.array([0.5, 1.5])),
    ])  # fmt: skip
    table = pa.table({**{k: pa.array(v) for k, v in cols.items()}, extra[0]: extra[1]})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue(), "parquet-types"


def report_command(rnd: random.Random, profile: Profile) -> Command:
    result, csv, parquet = _real_outputs()
    which = rnd.random()
    if which < 0.35:
        data, kind = _mutate_json(rnd, result, profile) if rnd.random() < 0.85 else (result, "json")
        name = rnd.choice(["r.json", "r.csv", "r"])
    elif which < 0.75 or not parquet:
        data, kind = _mutate_csv(rnd, csv, profile) if rnd.random() < 0.85 else (csv, "csv")
        name = rnd.choice(["rows.csv", "rows.json", "rows"])
    elif which < 0.9:
        data, kind = _parquet_bytes(rnd, parquet)
        name = rnd.choice(["rows.parquet", "rows.csv"])
    else:
        data, kind = _typed_parquet(rnd)
        name = "rows.parquet"
    out = rnd.choice(REPORTS) if rnd.random() < 0.2 else "r.html"
    stdin = rnd.random() < 0.1
    argv = ["report", "-" if stdin else ROOT + name, "-o", _root(out)]
    if rnd.random() < 0.1:
        argv += ["--check", rnd.choice([ROOT + name, ROOT + "missing.json", "-"])]
    return Command(f"report:{kind}", argv, "none", data if stdin else None, {} if stdin else {name: data})


# ---------------------------------------------------------------------------------------------
# Commands on a case


def clean_case(rnd: random.Random, profile: Profile) -> Case:
    """A base's files unmutated (CI: its scenario simulates 10 s)."""
    name, texts, scenario, named = rnd.choice(BASES)
    files = {k: v.encode() for k, v in texts.items()}
    if profile == "ci":
        docs = list(yaml.load_all(files[scenario], Loader=yaml.SafeLoader))
        for d in docs:
            if isinstance(d, dict) and d.get("kind") == "Scenario" and isinstance(d.get("spec"), dict):
                d["spec"]["duration"] = "10s"
        files[scenario] = yaml.safe_dump_all(docs, sort_keys=False).encode()
    return Case(name, files, scenario, list(named))


EVENTS = ["all", "none", "0", "3", "ALL", " 7 ", "-3", "1e3", "9" * 40, "٣", "[bold]x", ""]


def run_command(rnd: random.Random, case: Case, profile: Profile) -> Command:
    """run SCENARIO with hostile --set, --threshold, --runs, --report (and --json)."""
    argv = ["run", ROOT + case.scenario]
    for _ in range(rnd.choice([0, 1, 1, 2, 3])):
        argv += ["--set", hostile_set(rnd)]
    for _ in range(rnd.choice([0, 1, 1, 2])):
        argv += ["--threshold", hostile_threshold(rnd)]
    runs = rnd.random() < 0.3
    if runs:
        argv += ["--runs", rnd.choice(RUNS) if rnd.random() < 0.5 else "2", "--workers", "1"]
    if rnd.random() < 0.35:
        argv += ["--report", _root(rnd.choice(REPORTS) if rnd.random() < 0.4 else "r.html")]
    if rnd.random() < 0.1:
        argv += ["--junit", _root(rnd.choice(["j.xml", "j.html", "dir.html", "missing/j.xml"]))]
    if rnd.random() < 0.15:
        argv += ["--events", rnd.choice(EVENTS)]
    as_json = rnd.random() < 0.3
    if as_json:
        argv.append("--json")
    if rnd.random() < 0.05:  # an option of manifests on a scenario
        argv += [rnd.choice(["--start", "--rate", "--duration"]), "10"]
    return Command("run-options", argv, "json" if as_json else "text")


def sweep_command(rnd: random.Random, case: Case, profile: Profile) -> Command:
    argv = [
        "sweep",
        ROOT + case.scenario,
        "-o",
        _root(rnd.choice(OUTPUTS) if rnd.random() < 0.25 else "rows.csv"),
    ]
    axes = rnd.choice([0, 1, 1, 2]) if profile == "full" else rnd.choice([0, 1, 1])
    for _ in range(axes):
        argv += ["--set", hostile_set(rnd, rnd.choice([1, 2] if profile == "ci" else [1, 2, 3, 50]))]
    if rnd.random() < 0.3:
        argv += ["--runs", rnd.choice(RUNS) if rnd.random() < 0.6 or profile == "full" else "2"]
    if rnd.random() < 0.2:
        argv += [
            "--sample",
            rnd.choice(["1", "0", "-1", "x", "1000000000"]),
            "--seed",
            rnd.choice(["0", "-1", "x"]),
        ]
    if rnd.random() < 0.3:
        argv += ["--threshold", hostile_threshold(rnd)]
    if rnd.random() < 0.4:
        argv += ["--report", _root(rnd.choice(REPORTS) if rnd.random() < 0.4 else "r.html")]
    if rnd.random() < 0.1:
        argv += ["--max-total-cost", rnd.choice(["1", "0", "x", "1000000000000"])]
    argv += ["--workers", "1" if profile == "ci" or rnd.random() < 0.5 else "2"]
    return Command("sweep", argv, "none")


def manifests_command(rnd: random.Random, case: Case, profile: Profile) -> Command:
    """run on the case's manifests (a generated scenario), with its options."""
    files = [ROOT + m for m in case.manifests] or [ROOT + case.scenario]
    argv = ["run", *files]
    if rnd.random() < 0.4:
        argv += ["--start", str(rnd.choice(HOSTILE_DURATIONS) or "")]
    if rnd.random() < 0.4:
        argv += ["--rate", rnd.choice(RATES)]
    # CI: seconds of simulated time unless the duration is the hostile part.
    hostile = rnd.random() < 0.4
    argv += ["--duration", str(rnd.choice(HOSTILE_DURATIONS) or "") if hostile else "10s"]
    if rnd.random() < 0.2:
        argv.append("--print-scenario")
    if rnd.random() < 0.3:
        argv += ["--set", hostile_set(rnd)]
    if rnd.random() < 0.2:
        argv += ["--threshold", hostile_threshold(rnd)]
    if rnd.random() < 0.2:
        argv += ["--report", _root("r.html")]
    as_json = rnd.random() < 0.2
    if as_json:
        argv.append("--json")
    return Command(
        "run-manifests", argv, "none" if "--print-scenario" in argv else "json" if as_json else "text"
    )


def tune_command(rnd: random.Random, case: Case, profile: Profile) -> Command:
    files = [ROOT + m for m in case.manifests] or [ROOT + case.scenario]
    argv = ["tune", *files, "--storage", rnd.choice(STORAGES) if rnd.random() < 0.2 else STORAGES[0]]
    real = profile == "full" and rnd.random() < 0.3
    # CI: a workload no base has (a trial takes seconds): the inputs are read, then refused.
    absent = [n for n in NAMES if n.strip() and n not in ("web", "patient", "app", "backend")]
    if not real:  # full: the only workload with probes behind a Service, when there is one
        argv += ["--workload", rnd.choice(absent)]
    argv += ["--trials", rnd.choice(["1", "0", "-1", "x", "10001"]) if rnd.random() < 0.2 else "1"]
    if rnd.random() < 0.3:
        argv += ["--scenario", ROOT + case.scenario]
    if rnd.random() < 0.2:
        argv += ["--timeout", str(rnd.choice(HOSTILE_DURATIONS) or "")]
    if rnd.random() < 0.2:
        argv += ["--study", rnd.choice(NAMES)]
    if rnd.random() < 0.3:
        argv += ["--report", _root(rnd.choice(REPORTS))]
    if rnd.random() < 0.2:
        argv += ["-o", _root(rnd.choice(["p.yaml", "dir.html", "missing/p.yaml"]))]
    as_json = rnd.random() < 0.3
    if as_json:
        argv.append("--json")
    argv += ["--workers", "1"]
    return Command("tune", argv, "json" if as_json else "text")


MAKERS = {"run-options": run_command, "sweep": sweep_command, "run-manifests": manifests_command,
          "tune": tune_command}  # fmt: skip


def make_options_case(rnd: random.Random, profile: Profile = "ci", commands: int = 2) -> OptionsCase:
    """A hostile case (hostile.make_case, or its files unmutated) and ``commands`` command lines on it."""
    # Half the time the options alone are hostile: the files as the base has them.
    case = make_case(rnd, profile) if rnd.random() < 0.5 else clean_case(rnd, profile)
    out = []
    for _ in range(commands):
        kind = rnd.choice(["run-options", "run-options", "sweep", "sweep", "report", "report", "run-manifests",
                           "tune"])  # fmt: skip
        out.append(report_command(rnd, profile) if kind == "report" else MAKERS[kind](rnd, case, profile))
    return OptionsCase(case, out)
