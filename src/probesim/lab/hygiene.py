"""What a lab run leaves behind: nothing, however it ends.

- Every child dies with the lab, even when the lab is killed with SIGKILL: each is started with
  Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, set between fork and exec,
  kept across exec), and exits at once if the lab was already gone by then.
- A run keeps its files (Envoy configurations, sockets and logs, --command output) in one folder,
  ``probesim-lab-*`` in the temporary directory, marked with the run's process (PID and start
  time). The run removes it on the way out; a run that was killed cannot, so each start removes
  the folders of runs whose process is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

PREFIX = "probesim-lab-"
OWNER = "owner"  # "<pid> <start time in clock ticks>" of the run's process
PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return fn


_PRCTL = _load_prctl()


def dies_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` for a child that must not outlive this process (None where Linux's
    parent-death signal is not available). Run in the child between fork and exec."""
    if _PRCTL is None:
        return None
    prctl, parent = _PRCTL, os.getpid()
    option, sig, zero = ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0)

    def preexec() -> None:
        prctl(option, sig, zero, zero, zero)
        if os.getppid() != parent:  # the lab died before the signal was armed
            os._exit(1)

    return preexec


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks since boot, /proc/<pid>/stat field 22); None when
    there is no such process, or it is a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _stale(folder: Path) -> bool:
    """A run folder of ours whose run's process is gone (a folder being created, without its
    owner file yet, is not)."""
    try:
        st = folder.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return False
        pid, ticks = (int(x) for x in (folder / OWNER).read_text().split())
    except (OSError, ValueError):
        return False
    if ticks == 0:  # written where /proc has no start time: whether the PID is in use
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    return start_ticks(pid) != ticks


def sweep(tmp: str | None = None) -> list[Path]:
    """Remove the folders left by lab runs that were killed; returns those removed."""
    base = Path(tmp or tempfile.gettempdir())
    removed = []
    with contextlib.suppress(OSError):
        for folder in base.glob(f"{PREFIX}*"):
            if _stale(folder):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


class RunFolder:
    """The run's folder (mode 0700), marked with this process; earlier runs' leftovers are
    removed first."""

    def __init__(self) -> None:
        sweep()
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX))
        pid = os.getpid()
        mark = self.path / f".{OWNER}"
        mark.write_text(f"{pid} {start_ticks(pid) or 0}")
        mark.replace(self.path / OWNER)

    def sub(self, name: str) -> Path:
        path = self.path / name
        path.mkdir(mode=0o700)
        return path

    def cleanup(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
