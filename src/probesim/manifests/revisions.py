"""Manifests as a git revision has them, for ``probesim diff --git BASE..HEAD -- PATH...``: the
files of the paths given, read from the repository's objects (``git ls-tree``, ``git cat-file
--batch``) into a temporary folder that mirrors the repository, so the files are then read as
any folder is (manifests/discovery.py); and a render command (``helm template``, ``kustomize
build``) run in such a folder, its output the manifests of that side.

Bounded: at most MAX_FILES files and MAX_TOTAL_BYTES bytes a revision, each file at most
yamlsrc.MAX_CHARS (a bigger one is read past, said in a note), each git command and render at
most a few minutes. Symbolic links and submodules are read past (a link's blob is its target's
name, not a manifest). Every failure is an InputError that says what to do: outside a git
repository, an unknown revision, a range that is not ``A..B``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from probesim.errors import InputError
from probesim.manifests.discovery import KUSTOMIZATIONS, MANIFEST_SUFFIXES
from probesim.manifests.yamlsrc import MAX_CHARS

MAX_FILES = 20_000
MAX_TOTAL_BYTES = 200_000_000
GIT_TIMEOUT_S = 120
RENDER_TIMEOUT_S = 300
WORKING_TREE = "the working tree"


@dataclass(frozen=True)
class Revision:
    """One side of a range: the revision as given (``main``, ``HEAD~1``), its commit, or None
    for the files as they are now (``--git main`` compares main with the working tree)."""

    given: str
    commit: str | None

    @property
    def shown(self) -> str:
        """As a report names it: ``main (0123456789ab)``; a commit's SHA alone, shortened."""
        if self.commit is None:
            return self.given
        if self.commit.startswith(self.given) and len(self.given) >= 7:
            return self.commit[:12]
        return f"{self.given} ({self.commit[:12]})"


@dataclass(frozen=True)
class Range:
    top: Path  # the repository's top folder
    base: Revision
    head: Revision


def git(args: Sequence[str], cwd: Path, what: str, stdin: bytes | None = None) -> bytes:
    """``git args`` run in ``cwd``: its standard output; a failure is an InputError saying
    ``what`` was being done and git's own first line."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, input=stdin, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise InputError("--git needs git, which is not installed (or not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"{what}: git took more than {GIT_TIMEOUT_S} s") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"{what}: {said[0] if said else f'git exited with {done.returncode}'}")
    return done.stdout


def toplevel(cwd: Path) -> Path:
    """The top folder of the git repository ``cwd`` is in."""
    try:
        out = git(["rev-parse", "--show-toplevel"], cwd, "--git")
    except InputError:
        raise InputError(
            f"--git reads revisions of the git repository the current folder is in, and {cwd} is in none "
            "(cd into the repository, or compare two folders: probesim diff BEFORE AFTER)"
        ) from None
    return Path(out.decode().strip())


def resolve(top: Path, given: str) -> str:
    """The commit ``given`` names (a branch, a tag, a SHA, HEAD~1)."""
    if not given or given.startswith("-"):
        raise InputError(f"{given!r} is not a revision", field="--git")
    try:
        out = git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{given}^{{commit}}"], top, "--git"
        )
    except InputError:
        raise InputError(
            f"unknown revision {given!r} in {top} (a shallow clone? fetch it: git fetch origin {given})",
            field="--git",
        ) from None
    return out.decode().strip()


def parse_range(given: str, cwd: Path) -> Range:
    """``A..B`` (B as of A), ``A...B`` (B against where it forked from A: what a pull request
    merges), or ``A`` alone (A against the working tree)."""
    top = toplevel(cwd)
    if "..." in given:
        a, _, b = given.partition("...")
        head = resolve(top, b or "HEAD")
        base_commit = resolve(top, a or "HEAD")
        try:
            fork = git(["merge-base", base_commit, head], top, "--git").decode().strip()
        except InputError:
            raise InputError(
                f"{a or 'HEAD'} and {b or 'HEAD'} have no common ancestor here (a shallow clone? fetch more "
                "history: actions/checkout's fetch-depth: 0)",
                field="--git",
            ) from None
        return Range(top, Revision(f"merge-base of {a or 'HEAD'} and {b or 'HEAD'}", fork),
                     Revision(b or "HEAD", head))  # fmt: skip
    if ".." in given:
        a, _, b = given.partition("..")
        return Range(
            top,
            Revision(a or "HEAD", resolve(top, a or "HEAD")),
            Revision(b or "HEAD", resolve(top, b or "HEAD")),
        )
    return Range(top, Revision(given, resolve(top, given)), Revision(WORKING_TREE, None))


def in_repository(paths: Sequence[str], top: Path, cwd: Path) -> list[str]:
    """The paths given (relative to ``cwd``) as paths from the repository's top ('.' for all of
    it); one outside the repository is an error."""
    out = []
    for p in paths or ["."]:
        rel = os.path.relpath(os.path.abspath(cwd / p), top)
        if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
            raise InputError(f"{p} is outside the repository {top}: --git reads paths inside it", file=p)
        out.append(PurePosixPath(*Path(rel).parts).as_posix() if rel != "." else ".")
    return out


@dataclass
class Materialised:
    """A revision's files written under ``root`` at their paths in the repository."""

    root: Path
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # files read past, with why


def _wanted(path: str, everything: bool) -> bool:
    """Whether a file is written: with a render command every file (a chart's templates and
    values, a kustomization's patches); otherwise what discovery reads or notes."""
    name = PurePosixPath(path).name
    return everything or name.endswith(MANIFEST_SUFFIXES) or name in KUSTOMIZATIONS


def materialise(
    top: Path, commit: str, rel: Sequence[str], into: Path, everything: bool = False
) -> Materialised:
    """The files under ``rel`` (paths from the repository's top) at ``commit``, written under
    ``into``. A path the revision does not have yields nothing (objects added or removed by the
    change are on one side only)."""
    listing = git(
        ["ls-tree", "-r", "-z", "-l", "--full-tree", commit, "--", *rel], top, f"listing {commit[:12]}"
    )
    out = Materialised(into)
    blobs: list[tuple[str, str]] = []
    total = 0
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, sha, size = meta.split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if not _wanted(path, everything):
            continue
        if kind != b"blob" or mode == b"120000":
            out.notes.append(f"{path}: {'a symbolic link' if mode == b'120000' else 'a submodule'}: not read")
            continue
        n = int(size)
        if n > MAX_CHARS:
            out.notes.append(f"{path}: larger than {MAX_CHARS // 1_000_000} MB: not read")
            continue
        total += n
        if len(blobs) >= MAX_FILES or total > MAX_TOTAL_BYTES:
            raise InputError(
                f"{commit[:12]} has more than {MAX_FILES:,} files or {MAX_TOTAL_BYTES // 1_000_000} MB under "
                f"{', '.join(rel)}: give the folders that hold the manifests (-- k8s/)",
                field="--git",
            )
        blobs.append((sha.decode(), path))
    if not blobs:
        return out
    data = git(
        ["cat-file", "--batch"], top, f"reading {commit[:12]}", "".join(f"{s}\n" for s, _ in blobs).encode()
    )
    at = 0
    root = into.resolve()
    for _sha, path in blobs:
        header_end = data.index(b"\n", at)
        length = int(data[at:header_end].split()[2])
        body = data[header_end + 1 : header_end + 1 + length]
        at = header_end + 1 + length + 1
        target = (into / path).resolve()
        if root not in target.parents:  # git keeps every path inside its tree; never written elsewhere
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        out.files.append(path)
    return out


def render(command: str, cwd: Path, shown: str) -> str:
    """What ``command`` prints (run by the shell in ``cwd``): the manifests of one side. Its
    failure is an InputError with its last line on standard error."""
    try:
        done = subprocess.run(
            command, shell=True, cwd=cwd, capture_output=True, timeout=RENDER_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"--render {command!r} at {shown}: took more than {RENDER_TIMEOUT_S} s") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        last = said[-1] if said else "no message"
        raise InputError(f"--render {command!r} failed at {shown} (exit {done.returncode}): {last}")
    if len(done.stdout) > MAX_CHARS:
        raise InputError(f"--render {command!r} at {shown}: printed more than {MAX_CHARS // 1_000_000} MB")
    return done.stdout.decode("utf-8", "replace")
