"""Rules for kinds with their own ways to fail: DaemonSets, Jobs."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.patch import nest
from probesim.analysis.rules.handlers import serves_nothing
from probesim.analysis.rules.plan import plan
from probesim.analysis.rules.timing import wants_readiness
from probesim.manifests.yamlsrc import get_path

rule = REGISTRY.rule

# -- kinds with their own ways to fail -----------------------------------------------------------


@rule(
    id="PS030",
    name="daemonset-rollout-unguarded",
    severity="warning",
    title="A DaemonSet's rolling update moves on before the new pod can serve.",
    why="A DaemonSet replaces its pods node by node (maxUnavailable 1 by default) and moves to the "
    "next node when the new pod is available: Ready for minReadySeconds. With no readiness probe "
    "and minReadySeconds 0 the pod is Ready as soon as its containers run, so a release that "
    "crashes after a few seconds or never serves still rolls onto every node; and each node has "
    "only this pod of the DaemonSet, so a bad one is that node's outage. DaemonSets whose "
    "containers serve nothing (the pause image, sleep infinity) are not reported.",
    fix="Add a readinessProbe to the main container, or set minReadySeconds to how long a new pod "
    "must stay up before the update moves on.",
)  # fmt: skip
def daemonset_rollout(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        w = t.workload
        if w.kind != "DaemonSet" or t.group != "containers" or t.index != 0 or w.spec.min_ready_seconds:
            continue
        raw_strategy = get_path(t.doc.data, (*t.base, "spec", "updateStrategy", "type"))
        if raw_strategy == "OnDelete":
            continue
        siblings = [u for u in ctx.targets if u.workload is w and u.group == "containers"]
        if all(serves_nothing(u) for u in siblings):  # pause, sleep: nothing to roll out badly
            continue
        if not any(c.readiness_probe for c in (*w.pod_spec.containers, *w.pod_spec.init_containers)):
            msg = f"{w.name} rolls node by node with no readiness probe and minReadySeconds 0"
            if wants_readiness(t):  # a Service reaches it: the readiness probe PS001's fix adds
                pl = plan(ctx, t)
                yield ctx.finding("PS030", t, msg, **pl.fix("readiness"))
            else:
                note = "a new pod must stay up 30 s before the update moves to the next node"
                yield ctx.finding("PS030", t, msg, patch={"spec": {"minReadySeconds": 30}}, note=note)


@rule(
    id="PS031",
    name="job-liveness-restart-never",
    severity="warning",
    title="A Job's liveness probe kills a pod whose restartPolicy is Never.",
    why="With restartPolicy Never a liveness kill fails the whole pod: the Job starts a new pod "
    "from the beginning, losing the work done, and counts the failure against backoffLimit "
    "(6 by default), so a step that is only slow can fail the Job. With OnFailure the container "
    "restarts in place, with back-off.",
    fix="Use restartPolicy OnFailure, or drop the liveness probe and bound the Job with "
    "activeDeadlineSeconds.",
)  # fmt: skip
def job_liveness_never(ctx: Context) -> Iterator[Finding]:
    for t in ctx.targets:
        w = t.workload
        p = t.container.liveness_probe
        if w.kind in ("Job", "CronJob") and w.pod_spec.restart_policy == "Never" and p is not None:
            yield ctx.finding(
                "PS031", t,
                f"a liveness kill fails the {w.kind}'s pod (restartPolicy Never) and restarts its work",
                ("livenessProbe",),
                patch=nest(tuple(str(k) for k in t.spec_path), {"restartPolicy": "OnFailure"}),
                note="the container restarts in place; or remove the livenessProbe",
            )  # fmt: skip
