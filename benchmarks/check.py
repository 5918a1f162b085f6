"""``probesim check`` on a big real manifest: Argo CD's install.yaml (about 34,000 lines, mostly
CustomResourceDefinitions) from ../shared/realworld, in CPU seconds, beside a fair reference run
in the same process: parsing the same text with PyYAML's own libyaml loader (``yaml.load_all``
with CSafeLoader), the least any Python linter of these files must do.

Target (issue 12): under 1 s of CPU for the whole check, beside Python's start-up. A second row
(issue 27) checks all of ../shared/realworld at once, as one directory argument: every file read,
its one error entry (metrics-server's kustomize base) reported beside the findings.
Run: ``make bench`` (or ``python benchmarks/check.py [FILE]``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

from probesim.analysis.check import check

TARGET_S = 1.0
DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "realworld" / "argocd" / "install.yaml"


def cpu(fn: object, repeat: int = 5) -> float:
    """The best of ``repeat`` CPU times of ``fn()`` (the others pay for cache misses and GC)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not path.is_file():
        print(f"skipped: {path} not found (the shared real-world corpus is not beside the project)")
        return
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    reference = cpu(lambda: list(yaml.load_all(text, Loader=loader)))
    ours = cpu(lambda: check([str(path)]))
    verdict = "meets" if ours < TARGET_S else f"misses by {ours - TARGET_S:.2f} s"
    print(f"probesim check {path.name}: {lines:,} lines")
    print(f"  check           {ours:6.3f} s CPU   (target < {TARGET_S:.1f} s: {verdict})")
    print(f"  yaml.load_all   {reference:6.3f} s CPU   (reference: libyaml parse only)")
    print(f"  ratio           {ours / reference:6.2f} x the parse alone")
    corpus = DEFAULT.parents[1]
    if path == DEFAULT and corpus.is_dir():
        report = check([str(corpus)])
        whole = cpu(lambda: check([str(corpus)]), repeat=3)
        print(f"probesim check {corpus.name}/ (whole repository): {len(report.files)} files, "
              f"{len(report.findings)} findings, {len(report.errors)} input error(s)")  # fmt: skip
        print(f"  check           {whole:6.3f} s CPU")


if __name__ == "__main__":
    main()
