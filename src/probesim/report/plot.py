"""The figure a person wants to look at after a run: replicas (desired / current / ready /
available) on one axis, failed requests per minute on the other, restarts as marks."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a window

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from probesim.results import CAUSES, Result
from probesim.safe import visible


def _plain(text: str) -> str:
    """User text for a matplotlib label: visible (probesim.safe), and a '$' is a dollar, not
    the start of mathtext (which fails on what it cannot parse)."""
    return visible(text).replace("$", r"\$")


def plot_result(result: Result, path: Path, workload: str | None = None) -> None:
    fig = figure(result, workload)
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)


def figure(result: Result, workload: str | None = None) -> Figure:
    """The run's figure, drawn but not saved (the caller closes it: plt.close)."""
    w = result.workload(workload) if workload else result.workloads[0]
    t_min = result.time_ms / 60_000
    fig, ax = plt.subplots(figsize=(11, 5.5), dpi=110)
    styles = {"desired": ("--", "tab:gray"), "current": ("-", "tab:blue"), "ready": ("-", "tab:green"),
              "available": (":", "tab:olive")}  # fmt: skip
    for name, (ls, color) in styles.items():
        ax.step(
            t_min, result.series[f"workload.{w.name}.{name}"], where="post", ls=ls, color=color, label=name
        )
    ax.set_xlabel("time (min)")
    ax.set_ylabel(f"{w.kind.lower()}/{w.name} replicas")
    ax.set_ylim(bottom=0)
    restarts = result.series[f"workload.{w.name}.restarts"]
    new = np.flatnonzero(np.diff(restarts, prepend=0) > 0)
    if new.size:
        ax.plot(t_min[new], np.zeros(new.size) + 0.2, "v", color="tab:red", ms=7, label="container restart")
    end_min = result.duration_ms / 60_000
    for i, ro in enumerate(r for r in result.rollouts if r.workload == w.name):
        stop = ro.end_ms if ro.end_ms is not None else ro.superseded_ms
        ax.axvspan(ro.start_ms / 60_000, end_min if stop is None else stop / 60_000, color="tab:purple",
                   alpha=0.1, label="rollout" if i == 0 else None, gid="rollout")  # fmt: skip
        if ro.stalled_ms is not None:
            ax.axvline(
                ro.stalled_ms / 60_000,
                ls="--",
                color="tab:purple",
                label="progress deadline exceeded",
                gid="rollout stalled",
            )
    ax2 = ax.twinx()
    per_min = max(1, 60_000 // result.step_ms)
    failed = np.zeros(result.time_ms.size, np.int64)
    for r in result.routes:
        failed += sum(result.series[f"route.{r.name}.{c}"] for c in CAUSES)
    bins = np.add.reduceat(failed, np.arange(0, failed.size, per_min))
    ax2.bar(
        t_min[::per_min] + 0.5, bins, width=0.9, alpha=0.25, color="tab:red", label="failed requests / min"
    )
    ax2.set_ylabel("failed requests per minute")
    ax2.set_ylim(bottom=0)
    lines, labels = ax.get_legend_handles_labels()
    l2, lb2 = ax2.get_legend_handles_labels()
    ax.legend(lines + l2, labels + lb2, loc="upper left", fontsize=9)
    ax.set_title(f"{_plain(result.scenario)}: replicas and failures")
    fig.tight_layout()
    return fig
