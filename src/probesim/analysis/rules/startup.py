"""Rules on start-up: the startup probe's budget against the app's start (the scenario's, else the
slowest its profile documents)."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.rules.plan import plan
from probesim.analysis.rules.timing import (
    Timing,
    delayed,
    slowest_start_ms,
    starts_too_slow,
    startup_short,
)
from probesim.model.duration import format_ms

rule = REGISTRY.rule


@rule(
    id="PS012",
    name="startup-budget-below-start-time",
    severity="error",
    title="The startup probe gives up before the app has started.",
    why="The startup probe kills the container after initialDelaySeconds + failureThreshold × "
    "periodSeconds; an app that needs longer is killed before it ever starts, forever "
    "(seed 001: new pods' startup probes failed too). The start is the scenario's, else the "
    "slowest start of the app's profile where the catalog documents a slow start (a database's "
    "crash recovery, a JVM under a CPU limit: probesim check --list-profiles), as PS013 judges "
    "liveness.",
    fix="Raise failureThreshold so that the budget covers the slowest real start, with margin.",
)  # fmt: skip
def startup_budget(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.startup_probe
        if p is None or not startup_short(t, Timing.of(p)):
            continue
        budget = (p.initial_delay_seconds + p.failure_threshold * p.period_seconds) * 1000
        start_ms = slowest_start_ms(t)
        if t.behavior is not None:
            msg = f"startup budget {format_ms(budget)} ≤ start time {format_ms(start_ms)}"
        else:  # the app's profile: a documented slow start, said as assumed
            assert t.profile is not None
            msg = f"the startup probe gives up after {format_ms(budget)}; "
            msg += f"{t.profile.profile.name} can need {format_ms(start_ms)} to start"
        pl = plan(ctx, t)
        yield ctx.finding("PS012", t, msg, ("startupProbe", "failureThreshold"), **pl.fix("startup"))


@rule(
    id="PS033",
    name="liveness-initial-delay-not-startup-probe",
    severity="info",
    title="Liveness waits out a long initialDelaySeconds where a startup probe belongs.",
    why="An initialDelaySeconds on liveness is a guess at the start time: a start slower than "
    "initialDelay + failureThreshold × period (a cold node, a CPU limit, many pods starting "
    "together, a database's recovery) is killed, every time, and a deadlock in the first seconds "
    "after every start and restart goes unseen for the whole delay. A startup probe covers the "
    "slowest start and hands over to liveness as soon as the app answers (Kubernetes' probe "
    "guide; kube-score). Reported above 10 s without a startup probe; when the start may outlast "
    "what liveness allows, PS013 says so (an error) with the same fix.",
    fix="Add a startupProbe on the same check whose budget covers the slowest start with margin, and "
    "set livenessProbe.initialDelaySeconds to 0.",
)  # fmt: skip
def liveness_initial_delay(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None or t.container.startup_probe is not None or not delayed(Timing.of(p)):
            continue
        if starts_too_slow(t, Timing.of(p)):  # PS013 says it, with this plan
            continue
        start_ms = slowest_start_ms(t)
        msg = f"livenessProbe waits {p.initial_delay_seconds}s before it runs, with no startupProbe"
        if start_ms and t.profile is not None and t.profile.known and t.behavior is None:
            msg += f" ({t.profile.profile.name} can take {format_ms(start_ms)} to start)"
        pl = plan(ctx, t)
        yield ctx.finding(
            "PS033", t, msg, ("livenessProbe", "initialDelaySeconds"), **pl.fix("startup", "liveness")
        )


@rule(
    id="PS013",
    name="slow-start-without-startup-probe",
    severity="error",
    title="Liveness starts before a slow app is up, and there is no startup probe.",
    why="Without a startup probe, liveness runs from initialDelaySeconds; an app slower than "
    "initialDelay + failureThreshold × period is killed before it answers, forever (seed 000). "
    "The start is the scenario's, else the slowest start of the app's profile (a database's "
    "crash recovery, a JVM under a CPU limit: probesim check --list-profiles).",
    fix="Add a startupProbe sized to the start time; keep liveness short after it.",
)  # fmt: skip
def slow_start(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        if p is None or t.container.startup_probe is not None:
            continue
        start_ms = slowest_start_ms(t)
        grace = (p.initial_delay_seconds + p.failure_threshold * p.period_seconds) * 1000
        if start_ms and starts_too_slow(t, Timing.of(p)):
            if t.behavior is not None:
                needs = f"the app needs {format_ms(start_ms)}"
            else:  # the app's profile: a documented slow start (recovery, JVM), said as assumed
                assert t.profile is not None
                needs = f"{t.profile.profile.name} can need {format_ms(start_ms)} to start"
            pl = plan(ctx, t)
            yield ctx.finding(
                "PS013",
                t,
                f"liveness acts after {format_ms(grace)}; {needs}",
                ("livenessProbe",),
                **pl.fix("startup", "liveness"),
            )
