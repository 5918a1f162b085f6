"""Side-by-side results of several runs, one row per scenario and route, like seed 004's table:
requests per second, error %, p95 and max latency, restarts, time without endpoints."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from probesim.results import Result
from probesim.safe import cell


def _rate(result: Result, name: str) -> float:
    series = result.series[f"route.{name}.offered"]
    active = int((series > 0).sum())
    r = result.route(name)
    return (r.ok + r.failed_total) / (active * result.step_ms / 1000) if active else 0.0


def rows(results: list[Result]) -> list[dict[str, Any]]:
    out = []
    for res in results:
        restarts = sum(w.total_restarts for w in res.workloads)
        for r in res.routes:
            out.append(
                {
                    "scenario": res.scenario,
                    "route": r.name,
                    "requestsPerSecond": round(_rate(res, r.name), 1),
                    "errorPercent": round(100 * r.error_rate, 2),
                    "p95Ms": r.latency_ms.get("p95"),
                    "maxMs": r.latency_ms.get("max"),
                    "restarts": restarts,
                    "noEndpointSeconds": r.no_endpoint_s,
                    "dropped": r.dropped,
                    "interrupted": r.interrupted,
                }
            )
    return out


def _ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1000:.2f} s" if v >= 1000 else f"{v:.0f} ms"


def render_compare(results: list[Result], console: Console) -> None:
    t = Table(box=box.SIMPLE, title="Comparison", title_justify="left")
    for h in ("SCENARIO", "ROUTE"):
        t.add_column(h)
    for h in ("REQ/S", "ERRORS", "P95", "MAX", "RESTARTS", "NO ENDPOINTS", "DROPPED"):
        t.add_column(h, justify="right")
    last = None
    for row in rows(results):
        t.add_row(
            cell(row["scenario"]) if row["scenario"] != last else "",
            cell(row["route"]),
            f"{row['requestsPerSecond']:.0f}",
            f"{row['errorPercent']:.1f} %",
            _ms(row["p95Ms"]),
            _ms(row["maxMs"]),
            str(row["restarts"]),
            f"{row['noEndpointSeconds']:.0f} s",
            str(row["dropped"]),
        )
        last = row["scenario"]
    console.print(t)


def _cell(values: list[Any], unit: str) -> str:
    if unit == "ms":
        return ", ".join(f"{v / 1000:g}" for v in values) or "-"
    if unit == "replicas":  # run-length: 0×5 3×11 reads as 0 for 5 s, then 3 for 11 s
        runs: list[list[int]] = []
        for v in values:
            if runs and runs[-1][0] == v:
                runs[-1][1] += 1
            else:
                runs.append([v, 1])
        return " ".join(f"{v}×{n}s" for v, n in runs)
    return ", ".join(str(v) for v in values)


def by_workload(rows: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per workload the rows are about (``workload``, in the rows' order): its rows, and how many
    of them disagree."""
    out: dict[str, tuple[int, int]] = {}
    for r in rows:
        w = str(r.get("workload", ""))
        if w:
            n, bad = out.get(w, (0, 0))
            out[w] = (n + 1, bad + (not r["agree"]))
    return out


def render_lab_comparison(rows: list[dict[str, Any]], console: Console) -> None:
    """``probesim lab --compare``'s rows (probesim.lab.compare): times in seconds, counts, and
    ready replicas as runs of seconds, with each row's tolerance and verdict."""
    t = Table(box=box.SIMPLE, title="Simulation vs lab", title_justify="left")
    for h in ("OBJECT", "FIGURE", "SIMULATED", "MEASURED", "TOLERANCE", "AGREE"):
        t.add_column(h)
    for r in rows:
        unit = str(r["unit"])
        tol = f"±{r['tolerance'] / 1000:g} s" if unit in ("ms", "replicas") else f"±{r['tolerance']}"
        t.add_row(
            cell(str(r["object"])),
            cell(str(r["reason"])),
            _cell(r["simulated"], unit),
            _cell(r["measured"], unit),
            tol,
            _verdict(r),
        )
    console.print(t)
    workloads = by_workload(rows)
    if len(workloads) > 1:
        for name, (n, bad) in workloads.items():
            verdict = "[green]agrees[/]" if not bad else f"[red]differs on {bad} of {n} figures[/]"
            console.print(f"workload {cell(name)}: {verdict}", highlight=False)
    unfaithful = [r for r in rows if r.get("faithful") is False]
    differ = sum(not r["agree"] for r in rows if r.get("faithful") is not False)
    if not differ and not unfaithful:
        console.print("[green]the simulation agrees with the lab[/]")
    elif differ:
        console.print(f"[red]the simulation and the lab differ on {differ} of {len(rows)} figures[/]")
    if unfaithful:
        within = sum(bool(r.get("withinTolerance")) for r in unfaithful)
        console.print(
            f"[yellow]the lab could not hold the run faithfully for {len(unfaithful)} of {len(rows)} "
            f"figures (NOT FAITHFUL: the machine's limits, not the app's); {within} of them are "
            "within their tolerance all the same[/]"
        )


def _verdict(r: dict[str, Any]) -> str:
    """A row's AGREE cell: yes, no, or not faithful (with whether its values agree all the same)."""
    if r.get("faithful") is False:
        values = "values agree" if r.get("withinTolerance") else "values differ"
        return f"[yellow]not faithful[/] ({values})"
    return "[green]yes[/]" if r["agree"] else "[red]no[/]"
