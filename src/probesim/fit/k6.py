"""The traffic k6 sent, from its ``--out json`` lines or its ``--summary-export`` file.

``--out json`` writes one JSON object per line; each ``Point`` of ``http_reqs`` is one request,
with its ``time`` (RFC 3339) and tags (``name``, default the URL) (../shared/reference/
telemetry.md §8.3). The summary export has only totals: ``metrics.http_reqs.rate`` over the run.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse

from probesim.errors import InputError

MAX_LINES = 50_000_000


def request_rates(path: str) -> dict[str, list[tuple[float, float]]]:
    """Per route (the URL's path, or the request's ``name`` tag when it is set), the requests
    sent each second: (Unix second, requests) rows, every second from the first to the last."""
    try:
        f = Path(path).open(encoding="utf-8")  # noqa: SIM115  (closed by the with below)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=path) from None
    if path.endswith(".gz"):
        raise InputError("a gzipped k6 output: gunzip it first", file=path)
    counts: dict[str, Counter[int]] = defaultdict(Counter)
    summary = False
    with f:
        for n, line in enumerate(f, 1):
            if n > MAX_LINES:
                raise InputError(f"more than {MAX_LINES:,} lines", file=path)
            if n == 1 and line.strip() == "{":  # pretty-printed JSON: --summary-export's, not lines
                summary = True
            if (n == 1 and '"root_group"' in line) or summary:
                summary = True
                break
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                raise InputError("not a k6 JSON output line (k6 run --out json=FILE writes them)", file=path,
                                 line=n) from None  # fmt: skip
            if not isinstance(doc, dict) or doc.get("type") != "Point" or doc.get("metric") != "http_reqs":
                continue
            data = doc.get("data") or {}
            tags = data.get("tags") or {}
            route = str(tags.get("name") or "")
            if not route or route == tags.get("url"):
                route = urlparse(str(tags.get("url", ""))).path or "/"
            try:
                t = datetime.fromisoformat(str(data["time"]).replace("Z", "+00:00")).timestamp()
            except (KeyError, ValueError):
                raise InputError(
                    "a Point without an RFC 3339 time", file=path, line=n, field="data.time"
                ) from None
            counts[route][int(t)] += int(data.get("value", 1))
    if summary:
        raise InputError(
            "a k6 summary holds the run's totals, not the traffic over time: give the lines of "
            "k6 run --out json=FILE",
            file=path,
        )
    if not counts:
        raise InputError("no http_reqs points: is this k6 run --out json output?", file=path)
    out = {}
    for route, c in counts.items():
        first, last = min(c), max(c)
        out[route] = [(float(s), float(c.get(s, 0))) for s in range(first, last + 1)]
    return out
