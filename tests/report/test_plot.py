"""``probesim run … --plot``'s figure (probesim.report.plot), read from matplotlib's objects:
each rollout is a shaded span from its start to its end (or to the next rollout, or the run's
end), a stalled one has a dashed line where its progress deadline passed, and a run without
rollouts has neither. The PNG itself: tests/cli/test_cli.py and below."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from probesim.engine import simulate
from probesim.report.plot import figure, plot_result
from probesim.results import Result
from tests.builders import builtin


def marks(result: Result) -> tuple[list[tuple[float, float]], list[float], list[str]]:
    """The rollout spans' (start, end) and stalled lines' x, in minutes, and the legend's labels."""
    fig = figure(result)
    try:
        ax: Axes = fig.axes[0]
        spans = [p for p in ax.patches if p.get_gid() == "rollout"]
        assert all(isinstance(p, Rectangle) for p in spans)
        xs = [(p.get_x(), p.get_x() + p.get_width()) for p in spans if isinstance(p, Rectangle)]
        lines = [float(np.asarray(ln.get_xdata())[0]) for ln in ax.lines if ln.get_gid() == "rollout stalled"]
        legend = ax.get_legend()
        assert legend is not None
        return xs, lines, [t.get_text() for t in legend.get_texts()]
    finally:
        plt.close(fig)


def test_a_rollout_is_shaded_from_its_start_to_its_end(tmp_path: Path) -> None:
    r = simulate(builtin("rollout-ready-before-warm"))
    (ro,) = r.rollouts
    assert (ro.start_ms, ro.end_ms) == (60_000, 71_000)
    xs, stalled, labels = marks(r)
    assert xs == [pytest.approx((60_000 / 60_000, 71_000 / 60_000))]
    assert stalled == []
    assert labels.count("rollout") == 1
    out = tmp_path / "run.png"
    plot_result(r, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_a_stalled_rollout_then_its_rollback() -> None:
    """The broken release stalls at 91 s and is superseded by the rollback at 120 s, which is
    done at once: a span to 120 s, the deadline's line at 91 s, and a span of no width."""
    r = simulate(builtin("rollout-stalled-rollback"))
    broken, back = r.rollouts
    assert (broken.stalled_ms, broken.superseded_ms, back.start_ms, back.end_ms) == (
        91_000, 120_000, 120_000, 120_000,
    )  # fmt: skip
    xs, stalled, labels = marks(r)
    assert xs == [
        pytest.approx((broken.start_ms / 60_000, 2.0)),
        pytest.approx((2.0, 2.0)),
    ]
    assert stalled == [pytest.approx(91 / 60)]
    assert labels.count("rollout") == 1 and labels.count("progress deadline exceeded") == 1


def test_a_run_without_rollouts_has_no_marks() -> None:
    r = simulate(builtin("seed000-slow-start-killed"))
    assert r.rollouts == []
    xs, stalled, labels = marks(r)
    assert (xs, stalled) == ([], [])
    assert "rollout" not in labels and "container restart" in labels
