"""Rules on start-up: the startup probe's budget against the app's start (needs a scenario)."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.rules.timing import plan
from probesim.model.duration import format_ms

rule = REGISTRY.rule


@rule(
    id="PS012",
    name="startup-budget-below-start-time",
    severity="error",
    title="The startup probe gives up before the app has started.",
    why="The startup probe kills the container after initialDelaySeconds + failureThreshold × "
    "periodSeconds; an app that needs longer is killed before it ever starts, forever "
    "(seed 001: new pods' startup probes failed too). Needs the start time from a scenario.",
    fix="Raise failureThreshold so that the budget covers the slowest real start, with margin.",
)  # fmt: skip
def startup_budget(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.startup_probe
        if p is None or t.behavior is None:
            continue
        budget = (p.initial_delay_seconds + p.failure_threshold * p.period_seconds) * 1000
        if budget <= t.behavior.start:
            pl = plan(ctx, t)
            yield ctx.finding(
                "PS012",
                t,
                f"startup budget {format_ms(budget)} ≤ start time {format_ms(t.behavior.start)}",
                ("startupProbe", "failureThreshold"),
                **pl.fix("startup"),
            )


@rule(
    id="PS013",
    name="slow-start-without-startup-probe",
    severity="error",
    title="Liveness starts before a slow app is up, and there is no startup probe.",
    why="Without a startup probe, liveness runs from initialDelaySeconds; an app slower than "
    "initialDelay + failureThreshold × period is killed before it answers, forever (seed 000). "
    "Needs the start time from a scenario.",
    fix="Add a startupProbe sized to the start time; keep liveness short after it.",
)  # fmt: skip
def slow_start(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None or t.container.startup_probe is not None or t.behavior is None:
            continue
        grace = (p.initial_delay_seconds + p.failure_threshold * p.period_seconds) * 1000
        if grace <= t.behavior.start:
            pl = plan(ctx, t)
            yield ctx.finding(
                "PS013",
                t,
                f"liveness acts after {format_ms(grace)}; the app needs {format_ms(t.behavior.start)}",
                ("livenessProbe",),
                **pl.fix("startup", "liveness"),
            )
