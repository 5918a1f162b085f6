#!/usr/bin/env python3
"""Run thousands of hostile inputs through ``probesim run`` and ``probesim check`` as real
processes and count what happened (issue 17; not run in CI).

The inputs come from tests/property/hostile.py (the generator the CI fuzz test uses), profile
"full". Each input is written to a fresh folder and run twice: ``probesim run`` (text or
--json) and ``probesim check`` (one --format, sometimes --scenario or --stress). With
``--options K`` (default 2) each input also gets K hostile command lines of issue 16's commands
and options from tests/property/hostile_options.py: ``--set``, ``--threshold``, ``--runs``,
``--report``, ``sweep``, ``report`` (a run's JSON, a sweep's CSV or Parquet), ``run`` on
manifests and ``tune``; ``--only-options`` runs those alone. ``--streams`` (issue 27) runs
and checks manifest streams whose documents are of every YAML type instead. Each process
has an address-space limit (RLIMIT_AS, 3 GiB), a CPU limit and a wall-clock timeout; its CPU
time and peak memory come from wait4's rusage.

By default every run is a fork of a worker that has imported probesim already, which then calls
``probesim.cli.main()`` with the run's arguments, standard output and error in files: a real
process with its own limits, without paying Python's and probesim's start-up (about a second)
ten thousand times. ``--exec`` runs the installed command line instead (fork + exec), as a user
does.

    .venv/bin/python scripts/fuzz_inputs.py -n 5000 --workers 2 --out /tmp/fuzz

Counts: clean one-line errors (exit 2, one ``error:`` line on stderr), usage errors (exit 2,
typer's box naming the option whose value it refused), successes (exit 0 or 1
with output that parses in its format), tracebacks (or an exit code outside 0, 1, 2, or a
signal), runs past 10 s of CPU, runs above 2 GiB, malformed outputs (unparseable JSON/XML, or
an exit 2 with more than one line on stderr). Each bad run's input is kept under --out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.property.hostile import Case, make_case  # noqa: E402
from tests.property.hostile_options import Command, make_options_case  # noqa: E402

GiB = 1 << 30
CPU_LIMIT_S = 10.0  # past this a run that was not refused up front is an overrun
MEM_LIMIT = 2 * GiB  # peak RSS above this is an overrun
AS_LIMIT = 3 * GiB  # address space: a run asking for more fails (MemoryError) instead of swapping


@dataclass
class Job:
    index: int
    command: str  # run | check | the option command's name
    args: list[str]
    fmt: str
    folder: Path
    case: Case
    stdin: bytes | None = None
    out_name: str = ""  # the stdout/stderr files' stem (default: command)

    @property
    def stem(self) -> str:
        return self.out_name or self.command


@dataclass
class Outcome:
    job: Job
    code: int | None  # None: killed by a signal
    signal: int | None
    cpu_s: float
    maxrss: int  # bytes
    wall_s: float
    stdout: bytes
    stderr: bytes
    timed_out: bool


def _child(job: Job, exec_mode: bool, cpu_limit: int) -> None:
    """In the forked child: limits, files, then probesim. Never returns."""
    try:
        os.setpgid(0, 0)
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.chdir(job.folder)
        if job.stdin is not None:
            (job.folder / f"{job.stem}.in").write_bytes(job.stdin)
            null = os.open(job.folder / f"{job.stem}.in", os.O_RDONLY)
        else:
            null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(job.folder / f"{job.stem}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(job.folder / f"{job.stem}.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if exec_mode:
            code = "from probesim.cli import main; main()"
            os.execv(sys.executable, [sys.executable, "-c", code, *job.args])
        from probesim.cli import main

        sys.argv = ["probesim", *job.args]
        try:
            main()
            status = 0
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # as Python's own top level: the traceback, exit 1
            import traceback

            traceback.print_exc()
            status = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(status)
    except BaseException:
        os._exit(98)


def _preload() -> None:
    """What the commands import lazily, imported once in the parent for its forks."""
    import probesim.analysis.check
    import probesim.cli
    import probesim.engine
    import probesim.manifests.scenario
    import probesim.report.check_outputs
    import probesim.report.sweep_page
    import probesim.report.terminal
    import probesim.runs
    import probesim.sweep  # noqa: F401


def run_all(jobs: list[Job], workers: int, timeout: float, exec_mode: bool, cpu_limit: int) -> list[Outcome]:
    running: dict[int, tuple[Job, float]] = {}
    queue = list(reversed(jobs))
    done: list[Outcome] = []
    last_report = time.monotonic()
    while queue or running:
        while queue and len(running) < workers:
            job = queue.pop()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(job, exec_mode, cpu_limit)
            running[pid] = (job, time.monotonic())
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for p, (job, started) in list(running.items()):
                if now - started > timeout:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p, signal.SIGKILL)
                    running[p] = (job, float("-inf"))  # killed: wait for it
            time.sleep(0.005)
            continue
        job, started = running.pop(pid)
        timed_out = started == float("-inf")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # anything it left behind (a stress pool)
        out = (job.folder / f"{job.stem}.out").read_bytes()
        err = (job.folder / f"{job.stem}.err").read_bytes()
        code = os.waitstatus_to_exitcode(status)
        sig = -code if code < 0 else None
        done.append(
            Outcome(
                job,
                None if sig else code,
                sig,
                usage.ru_utime + usage.ru_stime,
                usage.ru_maxrss * 1024,
                time.monotonic() - started if not timed_out else timeout,
                out,
                err,
                timed_out,
            )
        )
        if time.monotonic() - last_report > 30:
            last_report = time.monotonic()
            print(f"  {len(done)}/{len(jobs)} runs", file=sys.stderr, flush=True)
    return done


def _parses(out: str, fmt: str) -> bool:
    try:
        if fmt in ("json", "sarif"):
            json.loads(out)
        elif fmt == "junit":
            ET.fromstring(out)
        else:
            return bool(out.strip())
    except (ValueError, ET.ParseError, IndexError):
        return False
    return True


def classify(o: Outcome) -> list[str]:
    """The counts this run adds to."""
    out, err = o.stdout.decode("utf-8", "replace"), o.stderr.decode("utf-8", "replace")
    tags = []
    if o.cpu_s > CPU_LIMIT_S:
        tags.append("past 10 s CPU")
    if o.maxrss > MEM_LIMIT:
        tags.append("above 2 GiB")
    if o.timed_out or o.signal == signal.SIGXCPU:
        tags.append("timed out")  # killed by --timeout or --cpu-limit: an overrun, not a crash
        return tags
    if "Traceback" in out or "Traceback" in err or o.code not in (0, 1, 2, 99):
        tags.append("traceback")
        return tags
    if o.code == 99 and o.job.command not in ("run", "check"):
        tags.append("success")  # a threshold crossed (run, sweep's --runs): k6's exit code
        return tags
    if o.code == 2 and err.startswith("Usage: probesim") and "Error" in err:
        # typer's own message for an option's value it refuses (a type, a range, a missing
        # value): names the option and what it takes, in typer's box over several lines.
        tags.append("usage error")
        return tags
    if o.code == 2:
        lines = err.strip().splitlines()
        if o.job.command == "check" and out.strip() and all(ln.startswith("error: ") for ln in lines):
            # check's error entries (issue 27): one line each on stderr, and the report on stdout.
            tags.append("error entries" if _parses(out, o.job.fmt) else "malformed output")
        elif len(lines) == 1 and lines[0].startswith("error: "):
            tags.append("clean error")
        else:
            tags.append("malformed output")  # an input error that is not one line
        return tags
    try:
        if o.job.fmt in ("json", "sarif"):
            json.loads(out)
        elif o.job.fmt == "junit":
            ET.fromstring(out)
    except (ValueError, ET.ParseError):
        tags.append("malformed output")
        return tags
    if o.job.fmt == "text" and any(c in out for c in ("\x1b", "\u202e")):
        tags.append("raw escape in text")  # counted apart: shown, not fatal
    tags.append("success")
    return tags


# --streams (issue 27): run straight from a manifest stream whose documents are of every YAML
# type, beside a valid Deployment and Service: scalars, lists, nulls, tagged values, mappings
# without kind, Lists of scalars, objects with hostile timings (a probe period or a client
# timeout of a year). ``probesim run m.yaml`` (the generated scenario) and ``probesim check``.
_VALID = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: x
          ports: [{name: http, containerPort: 8080}]
          readinessProbe:
            {httpGet: {path: /ready, port: http}, periodSeconds: %(period)s, timeoutSeconds: %(timeout)s}
          livenessProbe: {httpGet: {path: /live, port: http}, initialDelaySeconds: %(delay)s}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: http}]}
"""
_DOCS = [
    "5", "-1", "3.5", ".inf", ".nan", "true", "false", "null", "~", "hello", "'quoted'", "[]", "{}",
    "[1, 2, 3]", "[[1], [2, [3]]]", "- a\n- b", "!!binary aGVsbG8=", "2024-01-01", "!!str 12",
    "!!int '7'", "!!float 1e400", "0x1F", "0o17", "123456789012345678901234567890",
    "{kind: 5}", "{kind: [Deployment]}", "{apiVersion: 5, kind: Deployment}", "{metadata: {name: x}}",
    "{apiVersion: v1, kind: List, items: [1, two, null, [3]]}",
    "{apiVersion: v1, kind: List, items: 7}",
    "{apiVersion: v1, kind: Namespace, metadata: 5}",
    "{apiVersion: v1, kind: Namespace, metadata: {name: default, labels: [a]}}",
    "{apiVersion: v1, kind: Service, metadata: {name: web2}, spec: {clusterIP: None, selector: {app: web}}}",
    "{apiVersion: batch/v1, kind: Job, metadata: {generateName: j-}, spec: {template: {spec: "
    "{restartPolicy: Never, containers: [{name: c, image: x}]}}}}",
    "&a [*a]", "{a: &x 1, b: *x}", "? [a, b]\n: c", "'\\u202e'", "- !!null ''",
]  # fmt: skip
_TIMINGS = ["1", "10", "0", "2147483647", "31536000", "-1", "1.5", "'5'", "null"]


def make_stream_case(rnd: random.Random) -> Case:
    """A manifest stream: the valid pair (with random probe timings) and 1-6 documents of any
    YAML type, shuffled."""
    timing = {k: rnd.choice(_TIMINGS) for k in ("period", "timeout", "delay")}
    docs = [_VALID % timing, *rnd.choices(_DOCS, k=rnd.randint(1, 6))]
    rnd.shuffle(docs)
    text = "\n---\n".join(d.strip("\n") for d in docs) + "\n"
    mutations = [f"{k}={v}" for k, v in timing.items()] + [
        f"doc {d[:30]!r}" for d in docs if d not in (_VALID % timing,)
    ]
    return Case("streams", {"m.yaml": text.encode()}, "m.yaml", ["m.yaml"], mutations,
                run_json=rnd.random() < 0.5, fmt=rnd.choice(["text", "json", "sarif", "junit"]))  # fmt: skip


def _option_job(i: int, k: int, c: Command, folder: Path, case: Case) -> Job:
    for name, data in c.extra_files.items():
        (folder / name).write_bytes(data)
    return Job(
        i, c.name, c.args(folder), c.fmt if c.fmt != "none" else "text-none", folder, case, c.stdin, f"opt{k}"
    )


def _ends(text: str) -> str:
    return text if len(text) < 1600 else text[:800] + " [...] " + text[-800:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "-n", type=int, default=5000, help="inputs (each run and checked, and --options command lines)"
    )
    ap.add_argument("--seed", type=int, default=0, help="first input's seed (input i uses seed + i)")
    ap.add_argument("--workers", type=int, default=2, help="processes at a time (at most 2 here)")
    ap.add_argument("--timeout", type=float, default=120.0, help="wall-clock seconds per run")
    ap.add_argument("--cpu-limit", type=int, default=60, help="RLIMIT_CPU seconds per run")
    ap.add_argument("--exec", dest="exec_mode", action="store_true", help="fork + exec the CLI per run")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "probesim-fuzz")
    ap.add_argument("--profile", choices=["ci", "full"], default="full")
    ap.add_argument("--options", type=int, default=2, help="hostile command lines of issue 16 per input")
    ap.add_argument("--only-options", action="store_true", help="run the option command lines alone")
    ap.add_argument(
        "--streams", action="store_true",
        help="run and check straight from manifest streams of every YAML type (issue 27; no --options)",
    )  # fmt: skip
    a = ap.parse_args()
    if a.streams:
        a.options = 0
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ["COLUMNS"] = "160"
    if not a.exec_mode:
        _preload()
    a.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="probesim-fuzz-"))
    started = time.monotonic()
    counts: Counter[str] = Counter()
    per_command: Counter[tuple[str, str]] = Counter()
    bad: list[dict[str, Any]] = []
    slow: list[tuple[float, str, str]] = []
    peak: dict[str, int] = {}  # command → largest peak RSS of its runs (bytes)
    batch = 200
    try:
        for first in range(0, a.n, batch):
            jobs = []
            for i in range(first, min(first + batch, a.n)):
                folder = work / f"{i:05d}"
                folder.mkdir()
                if a.streams:
                    case = make_stream_case(random.Random(a.seed + i))
                    case.write(folder)
                    run_args = ["run", str(folder / "m.yaml"), *(["--json"] if case.run_json else [])]
                    jobs.append(Job(i, "run", run_args, "json" if case.run_json else "text", folder, case))
                    jobs.append(Job(i, "check", case.check_args(folder), case.fmt, folder, case))
                elif not a.only_options:
                    case = make_case(random.Random(a.seed + i), a.profile)
                    case.write(folder)
                    jobs.append(
                        Job(
                            i, "run", case.run_args(folder), "json" if case.run_json else "text", folder, case
                        )
                    )
                    jobs.append(Job(i, "check", case.check_args(folder), case.fmt, folder, case))
                if a.options:
                    # Their own folder: the commands write files (rows, pages, a study).
                    opt = make_options_case(random.Random(10**9 + a.seed + i), a.profile, a.options)
                    of = work / f"{i:05d}-options"
                    of.mkdir()
                    opt.write(of)
                    for k, c in enumerate(opt.commands):
                        jobs.append(_option_job(i, k, c, of, opt.case))
            for o in run_all(jobs, a.workers, a.timeout, a.exec_mode, a.cpu_limit):
                tags = classify(o)
                counts.update(tags)
                name = o.job.command.split(":")[0]
                peak[name] = max(peak.get(name, 0), o.maxrss)
                for t in tags:
                    per_command[(o.job.command.split(":")[0], t)] += 1
                if o.cpu_s > 3:
                    slow.append((o.cpu_s, f"{o.job.index}:{o.job.command}", " ".join(o.job.case.mutations)))
                if {"traceback", "past 10 s CPU", "above 2 GiB", "malformed output", "timed out"} & set(tags):
                    keep = a.out / f"{a.seed + o.job.index:06d}-{o.job.stem}"
                    shutil.rmtree(keep, ignore_errors=True)
                    shutil.copytree(o.job.folder, keep)
                    bad.append(
                        {
                            "seed": a.seed + o.job.index,
                            "command": o.job.command,
                            "args": [x.replace(str(o.job.folder), ".") for x in o.job.args],
                            "tags": tags,
                            "exit": o.code,
                            "signal": o.signal,
                            "cpu_s": round(o.cpu_s, 2),
                            "maxrss_mb": o.maxrss >> 20,
                            "mutations": [*o.job.case.mutations, *o.job.command.split(":")[1:]],
                            "stderr": _ends(o.stderr.decode("utf-8", "replace")),
                            "kept": str(keep),
                        }
                    )
            for j in jobs:
                shutil.rmtree(j.folder, ignore_errors=True)
            print(
                f"{min(first + batch, a.n)}/{a.n} inputs, {time.monotonic() - started:.0f} s: {dict(counts)}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    report = {
        "inputs": a.n,
        "runs": 2 * a.n,
        "mode": "exec" if a.exec_mode else "fork",
        "seconds": round(elapsed),
        "counts": dict(counts),
        "per_command": {f"{c} {t}": n for (c, t), n in sorted(per_command.items())},
        "slowest": [f"{s:.1f} s {w} {m}" for s, w, m in sorted(slow, reverse=True)[:15]],
        "peak_rss_mb": {c: n >> 20 for c, n in sorted(peak.items())},
        "bad": bad,
    }
    (a.out / "report.json").write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if k != "bad"}, indent=2))
    for b in bad[:30]:
        print(json.dumps(b))
    keys = ("traceback", "past 10 s CPU", "above 2 GiB", "malformed output", "timed out")
    return 1 if any(counts[k] for k in keys) else 0


if __name__ == "__main__":
    sys.exit(main())
