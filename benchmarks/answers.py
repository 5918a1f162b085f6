"""What users wait for (issue 25's rows that time whole commands): ``probesim tune`` and
``probesim check --stress``, each run as a user runs it, a process of its own, against its target:

- ``probesim tune`` on the 3-replica Deployment whose generated scenario benchmarks/capacity.py
  steps (workloads.GENERATED_APP), 200 trials, and the default trial count for reference, each
  into a study of its own (a fresh SQLite file: a study found again would add to it), in local
  worker processes on every core. Target: 200 trials ≤ 30 s of wall time on 2 cores;
- ``probesim check --stress`` on the 9-workload repository and on the 24-workload one of
  ../shared/realworld, read in place (the issue's 9-workload bank-of-anthos is not in that
  corpus: podinfo-deploy has the 9 workloads the suite stresses, of 13; otel-demo has 24
  Deployments and a StatefulSet, 23 of them behind a Service). Targets: ≤ 2 s and ≤ 5 s;
- ``probesim tune`` with its defaults on each of the seven workloads of different kinds in
  tests/analysis/review (a Go service, Spring Boot, a Python app with no probe, a gRPC service, a
  queue worker, a MySQL StatefulSet, a Flask app behind Istio), under two seeds. Targets: each
  study ≤ 60 s of wall time on 2 cores, and the two seeds' recommendations within 10 % of each
  other on what they leave at risk (failed requests, needless restarts and flaps, budget
  overruns);
- a reference row: the tuner's runs of one setting in this process (CPU, best of 10), with the
  warm-ups they share (engine/warm.py) against each simulated from its start — the same figures.

Each row prints its figure, its target, whether it is met (or by how much it is missed, as the
ratio figure / target) and, beside the wall time the targets are about, the CPU seconds of the
process and its workers (``os.wait4``): both commands fan their simulations out over worker
processes, so wall time is what a user waits for and, on a shared machine, CPU time is the
steadier figure. Best of 3 (tune: of 2, its fastest run's figures, with its main process's own
CPU beside its workers': the workers' over the cores is the least its wall can be, the main
process's own work adds to it); ``--quick``: one run each. The command is this
interpreter's ``probesim`` (``python -c "from probesim.cli import main; main()"``, what the
entry point runs), so a tree run with PYTHONPATH=src is measured as it is.
``probesim run seed000-demo`` (≤ 0.35 s) is benchmarks/startup.py's row.

Run: ``make bench`` (or ``python benchmarks/answers.py [--quick]``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import workloads

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "realworld"
PROBESIM = [sys.executable, "-c", "from probesim.cli import main; main()"]
# The same, writing the process's own CPU seconds (without its workers') to the file named by
# PROBESIM_BENCH_SELF as it exits: what the main process spends while the workers wait or share
# the cores with it.
SELF_CPU = (
    "import atexit, os, resource\n"
    "def _own():\n"
    "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    open(os.environ['PROBESIM_BENCH_SELF'], 'w').write(str(u.ru_utime + u.ru_stime))\n"
    "atexit.register(_own)\n"
    "from probesim.cli import main; main()"
)
TUNE_TRIALS = 200
TUNE_TARGET_S = 30.0
REVIEW = Path(__file__).resolve().parents[1] / "tests" / "analysis" / "review"
KIND_TARGET_S = 60.0
SEEDS_AGREE = 0.10
CHECKS = (("podinfo-deploy", 9, 2.0), ("otel-demo", 24, 5.0))


def timed(
    argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None
) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and the workers it waited for) of one
    run of ``argv``; exits when it fails."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert p.stderr is not None
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"{' '.join(argv[3:])} exited {code}: {' / '.join(tail)}")
    return wall, usage.ru_utime + usage.ru_stime


def best(
    argv_of: object, cwd: Path, repeat: int, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None
) -> tuple[float, float]:
    """The best wall and the best CPU of ``repeat`` runs; ``argv_of(i)`` gives run ``i``'s."""
    runs = [timed(argv_of(i), cwd, ok, env) for i in range(repeat)]  # type: ignore[operator]
    return min(w for w, _ in runs), min(c for _, c in runs)


def verdict(value: float, target: float) -> str:
    ratio = value / target
    return f"met ({ratio:.2f} × target)" if value <= target else f"MISSED ×{ratio:.1f} ({ratio:.2f} × target)"


def row(name: str, figure: str, target: str, outcome: str, note: str = "") -> None:
    print(f"| {name} | {figure} | {target} | {outcome} | {note} |", flush=True)


def tune_rows(repeat: int) -> None:
    from probesim.tune.study import DEFAULT_TRIALS

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "deploy.yaml").write_text(workloads.GENERATED_APP % 3, encoding="utf-8")

        own = d / "own-cpu"
        env = {**os.environ, "PROBESIM_BENCH_SELF": str(own)}

        def tune(trials: int) -> Callable[[int], list[str]]:
            def argv(i: int) -> list[str]:
                db = f"sqlite:///{d / f'tune-{trials}-{i}.db'}"
                probesim = [sys.executable, "-c", SELF_CPU]
                return [*probesim, "tune", "deploy.yaml", "--trials", str(trials), "--storage", db, "--json"]

            return argv

        for trials in (TUNE_TRIALS, DEFAULT_TRIALS):
            runs = []
            for i in range(repeat):
                w, c = timed(tune(trials)(i), d, env=env)
                runs.append((w, c, float(own.read_text())))
            wall, cpu, main_cpu = min(runs)  # the fastest run's figures
            name = f"`probesim tune` on the generated 3-replica Deployment, {trials} trials"
            figure = f"{wall:.1f} s wall ({cpu:.1f} s CPU)"
            # On n cores the workers' CPU over n is the least the wall can be; the main process's
            # own work (sampling, planning, writing, checking) adds to it where it does not overlap.
            pace = (
                f"{wall / trials * 1000:.0f} ms a trial; its main process {main_cpu:.1f} s of "
                f"CPU, its workers {cpu - main_cpu:.1f} s ({(cpu - main_cpu) / (os.cpu_count() or 1):.1f} s "
                "of wall at the least on these cores)"
            )
            if trials == TUNE_TRIALS:
                target = f"≤ {TUNE_TARGET_S:g} s wall"
                row(name, figure, target, verdict(wall, TUNE_TARGET_S), pace)
            else:
                at = TUNE_TARGET_S * trials / TUNE_TRIALS
                row(
                    f"{name} (the default)", figure, "reference", f"{wall / at:.2f} × the target's pace", pace
                )


def _chosen(doc: dict[str, Any]) -> tuple[float, float, float]:
    """What the recommendation (or the current setting, kept) leaves at risk: failed requests,
    needless restarts and flaps, and how far its figures overrun their budgets (each figure over
    its budget less 1, summed: 0 within every budget). The smallest change puts every value back
    that keeps its figure within its budget, so two seeds may stop at different values within
    them (readiness every 6 s or 10 s, both inside the 30 s asked): what they must agree on is
    what is left at risk."""
    from probesim.tune.figures import BUDGETS

    f = (doc.get("recommended") or doc["current"])["figures"]
    keys = {
        "detection_s": "detectionSeconds",
        "recovery_s": "allReadyAgainSeconds",
        "ready_s": "readySeconds",
        "probe_rps": "probesPerSecond",
    }
    over = sum(max(0.0, f[keys[k]] / v - 1) for k, v in BUDGETS.items())
    return float(f["failed"]), float(f["restarts"] + f["flaps"]), over


def _apart(a: float, b: float) -> float:
    """How far apart two figures are, relative to the larger (0 when both are 0)."""
    return abs(a - b) / max(abs(a), abs(b)) if max(abs(a), abs(b)) > 0 else 0.0


def kinds_rows() -> None:
    import json

    for manifest in sorted(REVIEW.glob("*.yaml")):
        with tempfile.TemporaryDirectory() as tmp:
            got = []
            for seed in (0, 1):
                db = f"sqlite:///{Path(tmp) / f's{seed}.db'}"
                argv = [*PROBESIM, "tune", str(manifest), "--seed", str(seed), "--storage", db, "--json"]
                start = time.monotonic()
                done = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, check=False)
                wall = time.monotonic() - start
                if done.returncode != 0:
                    row(f"`probesim tune` on {manifest.stem}", "failed", "", "—", done.stderr.strip()[-200:])
                    break
                got.append((wall, _chosen(json.loads(done.stdout))))
            if len(got) < 2:
                continue
            slowest = max(w for w, _ in got)
            apart = max(_apart(a, b) for a, b in zip(got[0][1], got[1][1], strict=True))
            outcome = verdict(slowest, KIND_TARGET_S)
            if apart > SEEDS_AGREE:
                outcome += f"; seeds {apart:.0%} apart (target ≤ {SEEDS_AGREE:.0%})"
            figures = ", ".join(f"{x:g}" for x in got[0][1][:2]) + f", {got[0][1][2]:.3f}"
            row(
                f"`probesim tune` (defaults) on {manifest.stem}, seeds 0 and 1",
                f"{slowest:.1f} s wall",
                f"≤ {KIND_TARGET_S:g} s; seeds ≤ {SEEDS_AGREE:.0%} apart",
                outcome,
                f"seed 0: failed, restarts+flaps, budget overrun {figures}; seeds {apart:.1%} apart",
            )


def warm_up_row(repeat: int) -> None:
    """The tuner's runs of one setting (the generated Deployment's current one), in this process:
    with the warm-ups they share (the hung pod's three runs, the stress baseline and
    stop-the-world) against each simulated from its start, the same figures."""
    from probesim.engine.kernel_choice import kernels
    from probesim.tune.inputs import load
    from probesim.tune.objective import measure_all, plan
    from probesim.tune.space import Space

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "deploy.yaml"
        path.write_text(workloads.GENERATED_APP % 3, encoding="utf-8")
        inputs = load([str(path)], None, None)
    space = Space(inputs.workload, inputs.rule)
    runs = plan(inputs, space, space.current())
    tasks = [tuple(r for r in runs if r.warm_until), *((r,) for r in runs if not r.warm_until)]
    kernels(10**9)  # (as tune loads them)

    def cpu(from_start: bool) -> float:
        t = time.process_time()
        for task in tasks:
            measure_all(task, from_start)
        return time.process_time() - t

    cpu(False), cpu(True)  # (warm: the state memo and the kernels' first calls)
    shared = min(cpu(False) for _ in range(repeat * 5))
    alone = min(cpu(True) for _ in range(repeat * 5))
    row(
        "`probesim tune`'s runs of one setting (the same Deployment's), in one process",
        f"{shared * 1000:.0f} ms CPU with the warm-ups shared",
        f"reference: {alone * 1000:.0f} ms with each run from its start",
        f"{shared / alone:.2f} × the reference",
        "the hung pod's three runs go on from the scripted hang, stop-the-world from the baseline's 2m",
    )


def check_rows(repeat: int) -> None:
    for name, workloads_n, target in CHECKS:
        path = CORPUS / name
        label = f"`check --stress` on {name} ({workloads_n} workloads, ../shared/realworld)"
        if not path.is_dir():
            row(label, "skipped", f"≤ {target:g} s", "—", f"{path} not found")
            continue
        # Exit 1: the suite's findings (a failed stress is an error finding), not a failure to run.
        wall, cpu = best(lambda _i, p=path: [*PROBESIM, "check", "--stress", str(p)], CORPUS, repeat, (0, 1))
        row(label, f"{wall:.2f} s wall ({cpu:.2f} s CPU)", f"≤ {target:g} s", verdict(wall, target))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one run of each")
    args = ap.parse_args()
    print(f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; wall, CPU of the process and its workers)")
    print("| workload | probesim | target | outcome | note |")
    print("|---|---|---|---|---|")
    check_rows(1 if args.quick else 3)
    tune_rows(1 if args.quick else 2)
    kinds_rows()
    warm_up_row(1 if args.quick else 2)


if __name__ == "__main__":
    main()
