"""``probesim diff`` as a pull request's check runs it (issue 44's benchmark row): a process of
its own with its worker processes, on every push, so it must answer in a few seconds on 2 cores.

- one changed workload: the 3-replica Deployment of tests/analysis/test_diff.py with its liveness
  timeout lowered from 5 s to 1 s, two folders. Both sides' runs — the stress suite and its two
  rollouts, the profile's runs, the hung pod — under two seeds: 40 runs, 36 distinct. Target:
  ≤ 5 s of wall time on 2 cores;
- the same change among 24 unchanged workloads (25 Deployments, each behind its Service): the
  unchanged ones are read and checked, never simulated. Target: at most 1 s more than the first
  row;
- the same change read from git (``--git HEAD~1..HEAD -- k8s``, a fixture repository of two
  commits): the revisions' files materialised from the repository's objects. Target: ≤ 5 s.

Each row prints wall time (what the pull request waits for) and, beside it, the CPU seconds of
the process and its workers (``os.wait4``), the steadier figure on a shared machine. Best of 3
(``--quick``: one run each). The command is this interpreter's ``probesim`` (benchmarks/
answers.py's ``PROBESIM``), so a tree run with PYTHONPATH=src is measured as it is.

Run: ``make bench`` (or ``python benchmarks/diff.py [--quick]``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.analysis.test_diff import AFTER_1S, BEFORE

from answers import PROBESIM, best, row, verdict

TARGET_S = 5.0
UNCHANGED_MORE_S = 1.0
UNCHANGED = 24


def _folders(root: Path, others: int) -> None:
    for side, web in (("before", BEFORE), ("after", AFTER_1S)):
        d = root / side
        d.mkdir()
        (d / "web.yaml").write_text(web)
        for i in range(others):
            (d / f"app{i}.yaml").write_text(BEFORE.replace("web", f"app{i}"))


def _repository(root: Path) -> Path:
    repo = root / "repo"
    (repo / "k8s").mkdir(parents=True)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "bench@example.com")
    git("config", "user.name", "bench")
    for text, message in ((BEFORE, "web"), (AFTER_1S, "lower the liveness timeout")):
        (repo / "k8s" / "web.yaml").write_text(text)
        git("add", ".")
        git("commit", "-q", "-m", message)
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run each instead of the best of 3")
    repeat = 1 if parser.parse_args().quick else 3
    print("| workload | figure | target | outcome | note |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "one").mkdir()
        _folders(d / "one", 0)
        one_wall, one_cpu = best(lambda i: [*PROBESIM, "diff", "before", "after"], d / "one", repeat, ok=(1,))
        name = "`probesim diff` of one changed workload (liveness timeout 5 s → 1 s), two folders"
        note = "both sides × 2 seeds: the stress suite, its rollouts, the hung pod"
        figure = f"{one_wall:.2f} s wall ({one_cpu:.2f} s CPU)"
        row(name, figure, f"≤ {TARGET_S:g} s wall", verdict(one_wall, TARGET_S), note)
        (d / "many").mkdir()
        _folders(d / "many", UNCHANGED)
        wall, cpu = best(lambda i: [*PROBESIM, "diff", "before", "after"], d / "many", repeat, ok=(1,))
        target = one_wall + UNCHANGED_MORE_S
        row(f"the same change among {UNCHANGED} unchanged workloads", f"{wall:.2f} s wall ({cpu:.2f} s CPU)",
            f"≤ the row above + {UNCHANGED_MORE_S:g} s ({target:.2f} s)", verdict(wall, target),
            f"{wall - one_wall:+.2f} s: the unchanged ones read and checked, not simulated")  # fmt: skip
        repo = _repository(d)
        argv = [*PROBESIM, "diff", "--git", "HEAD~1..HEAD", "--", "k8s"]
        wall, cpu = best(lambda i: argv, repo, repeat, ok=(1,))
        figure = f"{wall:.2f} s wall ({cpu:.2f} s CPU)"
        row("the same change from git (`--git HEAD~1..HEAD -- k8s`)", figure, f"≤ {TARGET_S:g} s wall",
            verdict(wall, TARGET_S), f"{wall - one_wall:+.2f} s for git")  # fmt: skip


if __name__ == "__main__":
    main()
