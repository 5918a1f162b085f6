"""Answers to fit's queries: from a Prometheus server's HTTP API (``query_range`` over the
period), or from saved API responses (``<name>.json`` each, as ``curl`` writes them).

The API's JSON (../shared/reference/telemetry.md §6): ``{"status": "success", "data":
{"resultType": "matrix", "result": [{"metric": {...}, "values": [[t, "v"], ...]}]}}``; a
``vector`` answer (an instant query) is a series of one sample. Values are strings so that
``NaN`` and ``+Inf`` survive; a NaN sample (no request in the window) is left out.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from probesim.errors import InputError

F64 = npt.NDArray[np.float64]
MAX_RESPONSE_BYTES = 64 << 20
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Series:
    """One labelled series: sample times (Unix seconds) and values."""

    labels: dict[str, str]
    t: F64
    v: F64


def parse_response(doc: Any, query: str, where: str) -> list[Series]:
    """The series of one API response; anything else is an InputError naming the query."""
    what = f"the answer to {query!r}"
    if not isinstance(doc, dict):
        raise InputError(f"{what} is not a Prometheus API response (a JSON object)", file=where)
    if doc.get("status") != "success":
        raise InputError(
            f"{what}: Prometheus said {doc.get('errorType', 'error')}: {str(doc.get('error', '?'))[:300]}",
            file=where,
        )
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") not in ("matrix", "vector"):
        kind = data.get("resultType") if isinstance(data, dict) else None
        raise InputError(f"{what} is a {kind!r} result, not a matrix or vector", file=where, field="data")
    out = []
    for i, item in enumerate(data.get("result") or []):
        try:
            labels = {str(k): str(v) for k, v in item["metric"].items()}
            rows = item["values"] if data["resultType"] == "matrix" else [item["value"]]
            pairs = [(float(ts), float(v)) for ts, v in rows]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InputError(
                f"{what}: result[{i}] is not a series (metric, values)", file=where, field=f"data.result[{i}]"
            ) from None
        pairs = [(ts, v) for ts, v in pairs if not math.isnan(v)]
        out.append(Series(labels, np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])))
    return out


class Saved:
    """Answers saved as ``<name>.json`` in a folder (the API's JSON, e.g. from curl)."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise InputError("not a folder of saved query results", file=folder)

    def answer(self, name: str, query: str) -> list[Series] | None:
        path = self.folder / f"{name}.json"
        if not path.exists():
            return None
        try:
            if path.stat().st_size > MAX_RESPONSE_BYTES:
                raise InputError(
                    f"over {MAX_RESPONSE_BYTES >> 20} MiB: query a coarser --step", file=str(path)
                )
            doc = json.loads(path.read_bytes())
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", file=str(path)) from None
        except ValueError as e:
            raise InputError(f"not JSON: {e}", file=str(path)) from None
        return parse_response(doc, query, str(path))


class Live:
    """A Prometheus server's ``/api/v1/query_range`` over [start, end] every ``step`` seconds."""

    def __init__(self, url: str, start: float, end: float, step: float) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise InputError(f"{url!r} is not an http(s) URL of a Prometheus server", field="--prometheus")
        if end <= start:
            raise InputError("the period ends before it starts", field="--end")
        if (end - start) / step > 11_000:
            raise InputError(
                f"{(end - start) / step:,.0f} points a series: Prometheus gives at most 11,000; raise --step",
                field="--step",
            )
        self.url = url.rstrip("/") + "/api/v1/query_range"
        self.start, self.end, self.step = start, end, step

    def answer(self, name: str, query: str) -> list[Series] | None:
        form = urllib.parse.urlencode(
            {"query": query, "start": self.start, "end": self.end, "step": self.step}
        ).encode()
        req = urllib.request.Request(
            self.url, data=form, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
                body = r.read(MAX_RESPONSE_BYTES + 1)
            if len(body) > MAX_RESPONSE_BYTES:
                too_big = f"the answer to {query!r} is over {MAX_RESPONSE_BYTES >> 20} MiB: raise --step"
                raise InputError(too_big, file=self.url)
        except urllib.error.HTTPError as e:  # 400 bad_data, 422 execution, 503: the body says why
            body = e.read(MAX_RESPONSE_BYTES)
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            reason = getattr(e, "reason", e)
            raise InputError(f"cannot reach Prometheus: {reason}", file=self.url) from None
        try:
            doc = json.loads(body)
        except ValueError:
            raise InputError(f"the answer to {query!r} is not JSON", file=self.url) from None
        return parse_response(doc, query, self.url)


def only(series: list[Series] | None) -> Series | None:
    """The one series of a sum() query (none: None)."""
    if not series:
        return None
    return series[0]
