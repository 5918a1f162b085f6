"""A real Prometheus server for a lab run (``probesim lab --prometheus``): Debian's
``prometheus`` binary (scripts/prometheus.sh unpacks it into the virtual environment) on
127.0.0.1, its own configuration and data folder inside the run's folder, scraping the lab's
targets every second, stopped with the lab (and, as every lab child, killed if the lab is).

The flags it needs (reference/telemetry.md §6.5): ``--config.file``, ``--storage.tsdb.path``,
``--web.listen-address`` (always 127.0.0.1: the default is every interface); ready when
``/-/ready`` answers 200.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from probesim.errors import InputError
from probesim.lab.hygiene import dies_with_parent

HOST = "127.0.0.1"
SCRAPE_INTERVAL = "1s"
STOP_GRACE_S = 5.0
ENV = "PROBESIM_PROMETHEUS_PATH"


def prometheus_binary() -> str:
    """The Prometheus server to run: $PROBESIM_PROMETHEUS_PATH, the one make setup unpacked
    beside this Python (<venv>/prometheus/usr/bin), or one on PATH."""
    given = os.environ.get(ENV)
    if given:
        if not (Path(given).is_file() and os.access(given, os.X_OK)):
            raise InputError(f"{given} is not an executable Prometheus server", field=ENV)
        return given
    beside = Path(sys.prefix) / "prometheus" / "usr" / "bin" / "prometheus"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("prometheus")
    if found:
        return found
    raise InputError(
        "lab --prometheus runs a Prometheus server and none is installed: run make setup "
        "(scripts/prometheus.sh unpacks Debian's prometheus package), or set "
        f"{ENV} to a prometheus binary"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


Targets = dict[str, list[str] | list[tuple[str, dict[str, str]]]]


# Per job found in a file (its targets added as they start: each Envoy), that file and the path
# its targets serve their metrics on.
FileTargets = dict[str, tuple[Path, str]]


def config(
    targets: Targets, interval: str = SCRAPE_INTERVAL, files: FileTargets | None = None
) -> dict[str, Any]:
    """A configuration scraping ``targets`` every ``interval``: per job, host:port of /metrics
    endpoints, each with the labels its series get (a pod's app: its pod and namespace, as
    Kubernetes service discovery would add them); a target's own labels are kept (honor_labels).
    ``files``: jobs whose targets Prometheus reads from a file (file_sd, re-read when it changes)."""
    jobs: list[dict[str, Any]] = []
    for job, hosts in targets.items():
        static = [
            {"targets": [h]} if isinstance(h, str) else {"targets": [h[0]], "labels": h[1]} for h in hosts
        ]
        jobs.append({"job_name": job, "honor_labels": True, "static_configs": static})
    for job, (path, metrics_path) in (files or {}).items():
        jobs.append({"job_name": job, "honor_labels": True, "metrics_path": metrics_path,
                     "file_sd_configs": [{"files": [str(path)], "refresh_interval": "5s"}]})  # fmt: skip
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "scrape_configs": jobs,
    }


def write_targets(path: Path, targets: list[tuple[str, dict[str, str]]]) -> None:
    """A file_sd file: each host:port with its labels, moved into place whole (Prometheus watches it)."""
    doc = [{"targets": [host], "labels": labels} for host, labels in targets]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    tmp.replace(path)


class Prometheus:
    """One Prometheus server process scraping the lab's targets, its files in ``folder``."""

    def __init__(
        self,
        folder: Path,
        targets: Targets,
        interval: str = SCRAPE_INTERVAL,
        files: FileTargets | None = None,
    ) -> None:
        self.folder = folder
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path, _ in (files or {}).values():
            write_targets(path, [])
        self.config_path = folder / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config(targets, interval, files), sort_keys=False))
        self.data = folder / "data"
        self.port = 0
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def start(self, timeout_s: float = 30.0) -> None:
        """Start it and wait until it is ready; an InputError when it exits or is not ready in time."""
        binary = prometheus_binary()
        self.port = free_port()
        argv = [
            binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.data}",
            f"--web.listen-address={HOST}:{self.port}",
            "--storage.tsdb.retention.time=1d",
            "--log.level=warn",
        ]
        log = (self.folder / "prometheus.log").open("wb")
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *argv, stdout=log, stderr=log, stdin=asyncio.subprocess.DEVNULL, preexec_fn=dies_with_parent()
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.returncode is not None:
                tail = (self.folder / "prometheus.log").read_text(errors="replace")[-300:]
                raise InputError(f"prometheus exited with code {self.proc.returncode} at start: {tail}")
            if await asyncio.to_thread(self._ready):
                return
            await asyncio.sleep(0.2)
        await self.stop()
        raise InputError(f"prometheus was not ready within {timeout_s:g}s")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                return bool(r.status == 200)
        except (OSError, ValueError):
            return False

    def query_range(self, query: str, start: float, end: float, step: float) -> dict[str, Any]:
        """The API's answer to a range query (a blocking call, bounded by its timeout)."""
        form = urllib.parse.urlencode({"query": query, "start": start, "end": end, "step": step}).encode()
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query_range", data=form, timeout=10) as r:
                doc: dict[str, Any] = json.loads(r.read())
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read())
        return doc

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after the grace: Prometheus flushes its head block on SIGTERM."""
        proc, self.proc = self.proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), timeout=STOP_GRACE_S)
        except TimeoutError:
            proc.kill()
            await proc.wait()
