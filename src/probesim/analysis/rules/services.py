"""Rules on a Service that reaches no pod: a selector that matches no pod of its namespace while
a workload it was plainly meant for is labelled otherwise or lives in another namespace, and a
target port the selected pods do not have. Every probe setting is moot then: the Service has no
endpoint however the pods' probes answer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.kube.selectors import selects, service_matches
from probesim.manifests.yamlsrc import get_path
from probesim.model.kubernetes import Container, Service, ServicePort, Workload

rule = REGISTRY.rule


def _labels(d: dict[str, str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


def _meant_for(s: Service, workloads: list[Workload]) -> Workload | None:
    """The workload a Service that selects nothing was plainly written for: one whose pods its
    selector matches in (exactly one) other namespace; else one that carries every key of its selector (with
    another value) and shares the Service's name or has it as a label value, of its own namespace
    first. None when none is that close: a Service for pods an operator creates from a custom
    resource, or for pods in files not checked, is no mistake."""
    sel = s.spec.selector
    elsewhere = [w for w in workloads if service_matches(sel, w.pod_labels)]
    if len({w.metadata.namespace for w in elsewhere}) > 1:
        return None  # the same pods in several namespaces: which one it is for is not plain
    if elsewhere:
        return min(elsewhere, key=lambda w: w.name != s.name)
    close = [
        w for w in workloads if set(sel) <= set(w.pod_labels) and s.name in (w.name, *w.pod_labels.values())
    ]
    close.sort(key=lambda w: (w.metadata.namespace != s.metadata.namespace, w.name != s.name))
    return close[0] if close else None


@rule(
    id="PS041",
    name="service-selects-no-pod",
    severity="warning",
    title="A Service's selector matches no pod of its namespace, yet the workload it is for is checked.",
    why="A Service sends traffic only to pods of its own namespace whose labels carry every pair of "
    "its selector (the EndpointSlice controller). One whose selector matches none has no endpoint: "
    "clients get connection refused (or a timeout) however healthy the pods and whatever their "
    "probes say. It happens when a label is renamed on one side only, and when the Service has no "
    "metadata.namespace while its workload has one: kubectl apply puts the Service in the namespace "
    "it is run with (-n, else the context's, usually default), not the workload's. Reported only "
    "when a workload in the files checked is plainly the one meant (its pods match the selector in "
    "another namespace, or carry every key of the selector and have the Service's name as their "
    "workload's name or a label value): Services for pods an operator creates, or for pods in other "
    "files, are not judged.",
    fix="Make the selector match the pod template's labels (spec.template.metadata.labels), or put the "
    "Service in the workload's namespace.",
)  # fmt: skip
def service_selects_no_pod(ctx: Context) -> Iterator[Finding]:
    workloads = [w for w in ctx.objects.workloads if w.kind not in ("Job", "CronJob")]
    for s in ctx.objects.services:
        sel = s.spec.selector
        if not sel or s.spec.type == "ExternalName" or any(selects(s, w) for w in workloads):
            continue
        w = _meant_for(s, workloads)
        if w is None:
            continue
        o = ctx.objects.origin(s)
        ns, wns = s.metadata.namespace, w.metadata.namespace
        set_ns = get_path(o.doc.data, (*o.base, "metadata", "namespace")) is not None
        where = f"{w.kind} {w.name}"
        if service_matches(sel, w.pod_labels):  # the right labels, in another namespace
            said = f"is in namespace {ns}"
            if not set_ns:
                said = "sets no namespace: kubectl apply puts it in the one it runs in "
                said += f"({ns} unless -n says another)"
            msg = f"selects {_labels(sel)}, the labels of {where}'s pods, but those are in namespace {wns} "
            msg += f"and the Service {said}: it has no endpoint"
            note = f"a Service selects pods of its own namespace only; {where} is in {wns}"
            rel = ("metadata", "namespace") if set_ns else ("metadata",)
            moved: dict[str, Any] = {"metadata": {"namespace": wns}}
            yield ctx.raw_finding("PS041", o.doc, o.base, f"Service/{s.name}", rel, msg, ns, moved, note)
            continue
        wrong = {k: v for k, v in sel.items() if w.pod_labels.get(k) != v}
        fixed = {k: w.pod_labels[k] for k in sel}
        there = "" if wns == ns else f" (in namespace {wns}: put the Service there too)"
        msg = f"selects {_labels(sel)}, which no pod in namespace {ns} carries: {where}'s pods are "
        msg += f"labelled {_labels({k: w.pod_labels[k] for k in wrong})}{there}; the Service has no endpoint"
        note = f"the labels of {where}'s pod template"
        patch2: dict[str, Any] = {"spec": {"selector": fixed}}
        if wns != ns:
            patch2["metadata"] = {"namespace": wns}
            note += f", in its namespace ({wns})"
        yield ctx.raw_finding(
            "PS041", o.doc, o.base, f"Service/{s.name}", ("spec", "selector"), msg, ns, patch2, note
        )


def _mentions(raw: dict[str, Any], port: int) -> bool:
    """Whether a container's command, args or environment (its manifest ``raw``) name ``port``:
    the app is told to listen there, declared or not."""
    words = [
        str(w) for key in ("command", "args") for w in raw.get(key) or [] if isinstance(raw.get(key), list)
    ]
    env = raw.get("env")
    words += [str(e.get("value", "")) for e in env if isinstance(e, dict)] if isinstance(env, list) else []
    return any(str(port) in re.split(r"[^0-9]+", w) for w in words)


def _misses(sp: ServicePort, w: Workload, raw: dict[int, dict[str, Any]]) -> str | None:
    """Why port ``sp`` of ``s`` reaches none of ``w``'s containers, or None when it may: a named
    target no container declares; a number, when the pod declares one port of its protocol, not
    that one, and nothing in the container names the number (an app with several ports often
    listens on more than it lists: not judged)."""
    target = sp.effective_target
    cs = serving_containers(w)
    declared = [(c, cp) for c in cs for cp in c.ports]
    if isinstance(target, str):
        if any(cp.name == target for _, cp in declared):
            return None
        names = ", ".join(sorted({cp.name for _, cp in declared if cp.name})) or "none"
        return (
            f"port {sp.port} targets the named port {target!r}, which {w.kind} {w.name}'s containers "
            f"do not declare (named ports: {names}): its pods get no endpoint for it"
        )
    same = [(c, cp) for c, cp in declared if cp.protocol == sp.protocol]
    if (
        len(same) != 1
        or same[0][1].container_port == target
        or any(_mentions(raw.get(id(c), {}), target) for c in cs)
    ):
        return None
    c, cp = same[0]
    return (
        f"port {sp.port} sends to {target}, but {w.kind} {w.name}'s one declared port is "
        f"{cp.container_port} (container {c.name}): unless the app also listens on {target}, every "
        "request is refused"
    )


@rule(
    id="PS042",
    name="service-target-port-not-on-pod",
    severity="warning",
    title="A Service's targetPort is not a port its pods have.",
    why="kube-proxy sends a Service port's traffic to the pod's targetPort (the port itself when "
    "left out). A named targetPort must be a containerPort name of the pod: a pod without it gets "
    "no endpoint for that port (the EndpointSlice controller leaves it out), so the Service sends "
    "nothing there. A number needs no declaration — an app may listen on ports its container does "
    "not list — so a number is judged only for a pod that declares a single port (of the "
    "protocol) and names the target nowhere in its command, args or environment: then it is most "
    "often a typo or a port changed on one side only, and every request is refused.",
    fix="Set targetPort to the containerPort the app listens on (or its name), or declare that port "
    "in the container.",
)  # fmt: skip
def service_target_port(ctx: Context) -> Iterator[Finding]:
    workloads = [w for w in ctx.objects.workloads if w.kind not in ("Job", "CronJob")]
    raw = {id(t.container): t.raw for t in ctx.targets}
    for s in ctx.objects.services:
        if s.spec.type == "ExternalName" or s.spec.headless:
            continue
        # The pods it selects, or those PS041 says it was meant for: its fix moves it to them.
        chosen = [w for w in workloads if selects(s, w)]
        meant = _meant_for(s, workloads) if not chosen and s.spec.selector else None
        if meant is not None and service_matches(s.spec.selector, meant.pod_labels):
            chosen = [meant]
        if not chosen:
            continue
        o = ctx.objects.origin(s)
        for i, sp in enumerate(s.spec.ports):
            why = [_misses(sp, w, raw) for w in chosen]
            if any(m is None for m in why):  # one selected workload has it: traffic reaches it
                continue
            w = chosen[0]
            same = [cp for c in serving_containers(w) for cp in c.ports if cp.protocol == sp.protocol]
            patch: dict[str, Any] | None = None
            note = ""
            if len(chosen) == 1 and len(same) == 1:  # the one port the pod has: the fix is plain
                ports = [dict(p) for p in get_path(o.doc.data, (*o.base, "spec", "ports")) or []]
                ports[i]["targetPort"] = same[0].container_port
                patch = {"spec": {"ports": ports}}
                note = (
                    f"spec.ports[{i}].targetPort {sp.effective_target} → {same[0].container_port}, the "
                    f"one port {w.kind} {w.name}'s containers declare; the list's other fields as they are"
                )
            rel = ("spec", "ports", i, "targetPort") if sp.target_port is not None else ("spec", "ports", i)
            obj, ns = f"Service/{s.name}", s.metadata.namespace
            yield ctx.raw_finding("PS042", o.doc, o.base, obj, rel, str(why[0]), ns, patch, note)


def serving_containers(w: Workload) -> list[Container]:
    """The containers that can take a Service's traffic: the app containers and the sidecars
    (init containers with restartPolicy Always)."""
    sidecars = [c for c in w.pod_spec.init_containers if c.restart_policy == "Always"]
    return [*w.pod_spec.containers, *sidecars]
