"""What a k6 run sent and what it got, from its ``--out json`` lines or its ``--summary-export``.

``--out json`` writes one JSON object per line; each ``Point`` is one sample with its ``time``
(RFC 3339) and tags (``name``, default the URL): ``http_reqs`` one per request,
``http_req_duration`` its duration in ms, ``http_req_failed`` 1 when its status was not expected
(200-399) (../shared/reference/telemetry.md §8.2-8.3). The summary export has only the run's
totals: ``metrics.http_reqs`` its ``count`` and ``rate``, ``metrics.http_req_duration`` its
``med`` and ``p(95)``, ``metrics.http_req_failed`` its ``value`` (the failed share), and a
submetric per tag where a threshold named one (``http_req_duration{name:/api}``) (§8.1).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

import numpy as np

from probesim.errors import InputError

MAX_LINES = 50_000_000
MAX_SUMMARY_BYTES = 64 << 20
LINES = "k6 --out json"
SUMMARY = "k6 --summary-export"
SUBMETRIC = re.compile(r"^(\w+)\{(\w+):(.*)\}$")


def route_of(name: str, url: str) -> str:
    """A request's route: its ``name`` tag when the script set one, else its URL's path."""
    if name and name != url and not name.startswith(("http://", "https://")):
        return name
    return urlparse(url or name).path or "/"


@dataclass
class Record:
    """A k6 run: per route, the requests sent each second (lines only) and what the requests got."""

    source: str
    # Per route, (Unix second, requests) rows every second from the first to the last; a summary
    # has no times: its routes' mean rates over ``duration_s`` instead.
    rates: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    mean_rates: dict[str, float] = field(default_factory=dict)
    duration_s: float = 0.0
    # Per route, the samples' (end time, value) arrays of http_req_duration and http_req_failed.
    durations: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    failures: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    totals: dict[str, dict[str, float]] = field(default_factory=dict)  # a summary's, per route

    @property
    def timed(self) -> bool:
        return self.source == LINES

    def got(self, since: float | None = None) -> dict[str, dict[str, float]]:
        """Per route what the requests got — ``requests`` (that ended), ``p50Ms``, ``p95Ms`` (k6's
        percentiles: linear between the sorted samples), ``failedShare`` — from the samples
        that ended at or after ``since`` (a summary's totals are the whole run's)."""
        if not self.timed:
            return self.totals
        empty = (np.zeros(0), np.zeros(0))

        def after(samples: tuple[Any, Any]) -> Any:
            t, v = samples
            return v[t >= since] if since is not None else v

        out: dict[str, dict[str, float]] = {}
        for route in sorted({*self.durations, *self.failures}):
            row: dict[str, float] = {}
            ms, failed = after(self.durations.get(route, empty)), after(self.failures.get(route, empty))
            if ms.size:
                row["requests"] = float(ms.size)
                row["p50Ms"] = float(np.percentile(ms, 50))
                row["p95Ms"] = float(np.percentile(ms, 95))
            if failed.size:
                row["failedShare"] = float(failed.mean())
            if row:
                out[route] = row
        return out


def read(path: str) -> Record:
    """The k6 run in ``path``: its JSON lines or its summary export (told apart by their start);
    gzipped when the name ends in .gz, as k6 writes it then."""
    try:
        with _open(path) as f:
            first = f.readline()
            f.seek(0)
            if first.strip() == "{" or '"root_group"' in first or '"metrics"' in first:
                text = f.read(MAX_SUMMARY_BYTES + 1)
                if len(text) > MAX_SUMMARY_BYTES:
                    raise InputError(f"a k6 summary larger than {MAX_SUMMARY_BYTES >> 20} MB", file=path)
                return _summary(path, text)
            return _lines(path, f)
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text: a k6 output is JSON", file=path) from None
    except (OSError, EOFError) as e:  # unreadable, or a .gz that is not gzip or is cut short
        raise InputError(f"cannot read: {getattr(e, 'strerror', None) or e}", file=path) from None


def _open(path: str) -> IO[str]:
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return Path(path).open(encoding="utf-8")


def _lines(path: str, f: Any) -> Record:
    counts: dict[str, Counter[int]] = defaultdict(Counter)
    samples: dict[str, dict[str, tuple[list[float], list[float]]]] = {
        "http_req_duration": defaultdict(lambda: ([], [])),
        "http_req_failed": defaultdict(lambda: ([], [])),
    }
    for n, line in enumerate(f, 1):
        if n > MAX_LINES:
            raise InputError(f"more than {MAX_LINES:,} lines", file=path)
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            raise InputError("not a k6 JSON output line (k6 run --out json=FILE writes them)", file=path,
                             line=n) from None  # fmt: skip
        if not isinstance(doc, dict) or doc.get("type") != "Point":
            continue
        metric = doc.get("metric")
        if metric != "http_reqs" and metric not in samples:
            continue
        data = doc.get("data")
        if not isinstance(data, dict):
            raise InputError("a Point without its data", file=path, line=n, field="data")
        tags = data.get("tags") or {}
        route = route_of(str(tags.get("name") or ""), str(tags.get("url") or ""))
        try:
            t = datetime.fromisoformat(str(data["time"]).replace("Z", "+00:00")).timestamp()
        except (KeyError, ValueError):
            raise InputError("a Point without an RFC 3339 time", file=path, line=n,
                             field="data.time") from None  # fmt: skip
        value = data.get("value", 1)
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise InputError(f"a Point's value is {value!r}: a number", file=path, line=n, field="data.value")
        if metric == "http_reqs":
            counts[route][int(t)] += int(value)
        else:
            ts, vs = samples[metric][route]
            ts.append(t)
            vs.append(float(value))
    if not counts:
        raise InputError("no http_reqs points: is this k6 run --out json output?", file=path)
    rec = Record(LINES)
    for route, c in counts.items():
        first, last = min(c), max(c)
        rec.rates[route] = [(float(s), float(c.get(s, 0))) for s in range(first, last + 1)]

    def arrays(by_route: dict[str, tuple[list[float], list[float]]]) -> dict[str, tuple[Any, Any]]:
        return {r: (np.array(ts), np.array(vs)) for r, (ts, vs) in by_route.items()}

    rec.durations = arrays(samples["http_req_duration"])
    rec.failures = arrays(samples["http_req_failed"])
    return rec


def _summary(path: str, text: str) -> Record:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InputError(f"not JSON: {e}", file=path) from None
    if not isinstance(doc, dict):
        raise InputError("not a k6 summary (k6 run --summary-export=FILE writes an object)", file=path)
    if "version" in doc and "root_group" not in doc:
        raise InputError(
            "k6's new machine-readable summary is not read: give the classic --summary-export file "
            "(without --new-machine-readable-summary) or k6 run --out json=FILE",
            file=path,
        )
    metrics = doc.get("metrics")
    if not isinstance(metrics, dict):
        raise InputError("no metrics object: is this k6 run --summary-export output?", file=path,
                         field="metrics")  # fmt: skip

    def number(metric: str, key: str, obj: Any) -> float | None:
        if not isinstance(obj, dict) or key not in obj:
            return None
        v = obj[key]
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise InputError(f"{v!r}: a number of 0 or more", file=path, field=f"metrics.{metric}.{key}")
        return float(v)

    reqs = metrics.get("http_reqs")
    count, rate = number("http_reqs", "count", reqs), number("http_reqs", "rate", reqs)
    if count is None or rate is None or rate == 0:
        raise InputError("no requests in the summary (metrics.http_reqs needs its count and rate)",
                         file=path, field="metrics.http_reqs")  # fmt: skip
    rec = Record(SUMMARY, duration_s=count / rate)
    # Per route ("*": the whole run's), each metric's name in the file and its object.
    by_route: dict[str, dict[str, tuple[str, Any]]] = defaultdict(dict)
    for key, obj in metrics.items():
        m = SUBMETRIC.match(key)
        if m is None:
            by_route["*"][key] = (key, obj)
        elif m.group(2) in ("name", "url"):
            tag = m.group(3)
            by_route[route_of(tag, "" if m.group(2) == "name" else tag)][m.group(1)] = (key, obj)
    for route, ms in by_route.items():

        def get(metric: str, key: str, ms: dict[str, tuple[str, Any]] = ms) -> float | None:
            name, obj = ms.get(metric, (metric, None))
            return number(name, key, obj)

        row: dict[str, float] = {}
        if (n := get("http_reqs", "count")) is not None:
            row["requests"] = n
            if route != "*":
                rec.mean_rates[route] = n / rec.duration_s
        if (p50 := get("http_req_duration", "med")) is not None:
            row["p50Ms"] = p50
        if (p95 := get("http_req_duration", "p(95)")) is not None:
            row["p95Ms"] = p95
        if (failed := get("http_req_failed", "value")) is not None:
            if failed > 1:
                raise InputError(f"{failed:g}: a share of 0 to 1", file=path,
                                 field="metrics.http_req_failed.value")  # fmt: skip
            row["failedShare"] = failed
        if row:
            rec.totals[route] = row
    if not rec.mean_rates:
        rec.mean_rates["*"] = rate
    return rec
