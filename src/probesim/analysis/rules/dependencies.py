"""Rules on dependencies: probes that call them, retries that multiply across layers (need a
scenario)."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Context, Target
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.policy import PRINCIPLES
from probesim.analysis.rules.mesh import http_routes, istio_docs
from probesim.analysis.rules.timing import http_path

rule = REGISTRY.rule


@rule(
    id="PS016",
    name="liveness-on-dependency",
    severity="error",
    title="Liveness probes a path that calls a dependency.",
    why="When the dependency is slow or down, every pod fails liveness at once and is restarted, "
    "forever: restarts cure nothing (seed 004: 82 % errors, CrashLoopBackOff). Known from the "
    "scenario's route calls, or from the app's profile (Spring Boot's aggregate /actuator/health "
    "includes the database; Grafana's /api/health reports its database).",
    fix="Probe a self-contained endpoint for liveness (the app's own liveness endpoint, when it has "
    "one); handle the dependency with timeouts, retries and a circuit breaker.",
)  # fmt: skip
def liveness_dependency(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.liveness_probe
        path = http_path(p) if p is not None else None
        if path is None:
            continue
        rel = ("livenessProbe", "httpGet", "path")
        if t.behavior is not None:
            calls = t.behavior.cost(path).calls
            if calls:
                deps = ", ".join(c.target for c in calls)
                yield ctx.finding("PS016", t, f"livenessProbe {path} calls {deps}", rel)
            continue
        prof = t.profile
        if prof is None or not prof.path_reaches_dependency(path):
            continue
        own_path = profile_liveness_path(t)
        if own_path is None or own_path == path:  # nothing better to point at: PS006's (info) case
            continue
        msg = f"livenessProbe {path}: {prof.profile.name}'s {path} also checks its dependencies (a database)"
        change = {"livenessProbe": {"httpGet": {"path": own_path}}}
        s = t.container.startup_probe
        if s is not None and http_path(s) == path:
            change["startupProbe"] = {"httpGet": {"path": own_path}}
        note = f"{prof.profile.name}'s liveness endpoint, which checks only the process"
        yield ctx.finding("PS016", t, msg, rel, change=change, note=note)


@rule(
    id="PS017",
    name="readiness-on-shared-dependency",
    severity="warning",
    title="Readiness probes a path that calls a dependency every replica shares.",
    why="When the shared dependency is slow, all replicas leave the Service together and it has no "
    "endpoint left, even for requests that never needed the dependency (seed 004, seed 002).",
    fix="Keep readiness to pod-local state; degrade the dependent routes instead.",
)  # fmt: skip
def readiness_dependency(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        p = t.container.readiness_probe
        if p is None or t.behavior is None or http_path(p) is None:
            continue
        calls = t.behavior.cost(http_path(p) or "/").calls
        daemon = t.workload.kind == "DaemonSet"
        if calls and (t.workload.spec.replicas > 1 or daemon):
            deps = ", ".join(c.target for c in calls)
            who = "every node's pod" if daemon else f"all {t.workload.spec.replicas} replicas"
            stance = PRINCIPLES["readiness-pod-local"].stance
            fix = "Keep readiness to pod-local state; degrade the dependent routes instead "
            fix += f"(the guidance is {stance})"
            yield ctx.finding(
                "PS017", t, f"readinessProbe {http_path(p)} calls {deps}, shared by {who}",
                ("readinessProbe", "httpGet", "path"), fix=fix,
            )  # fmt: skip


@rule(
    id="PS025",
    name="retry-amplification",
    severity="warning",
    title="Retries multiply across layers beyond thresholds.retryAmplification.",
    why="A mesh retry policy around an app that retries its own dependency multiplies the tries a "
    "failing dependency receives: 3 × 3 tries is 9 calls for one user request, just when it is "
    "least able to take them. Needs the scenario's route calls.",
    fix="Retry at one layer only, with a budget.",
)  # fmt: skip
def retry_amplification(ctx: Context) -> Iterator[Finding]:
    mesh = 1
    for _doc, _base, data, _obj in istio_docs(ctx, "VirtualService"):
        for _i, r in http_routes(data):
            retries = r.get("retries")
            attempts = retries.get("attempts") if isinstance(retries, dict) else 2  # Istio's default: 2
            mesh = max(mesh, 1 + int(attempts or 0))
    for t in ctx.targets:
        if t.behavior is None:
            continue
        for path, cost in t.behavior.routes.items():
            for c in cost.calls:
                total = mesh * c.retries.attempts
                if total > ctx.thresholds.retry_amplification:
                    tries = f"{mesh} mesh × {c.retries.attempts} app tries"
                    msg = f"{path} → {c.target}: {tries} = {total} calls"
                    yield ctx.finding("PS025", t, msg)


def profile_liveness_path(t: Target) -> str | None:
    """The app's own liveness path, from its profile (None: the app defines its own)."""
    own = t.profile.handler("liveness", 0) if t.profile is not None and t.profile.known else None
    path = own["httpGet"].get("path") if own is not None and "httpGet" in own else None
    return str(path) if path is not None else None
