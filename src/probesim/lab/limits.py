"""What the lab refuses up front: more than one machine runs faithfully (pods, request rate,
duration, a rollout's peak), node faults, drains and pool upgrades of pods it cannot replace, a
manifest's exec probes without
consent (they would run here, as this user), Envoy when it is not installed; and its
command-line arguments read (``--command``, ``--command-for``), each bad one named in one line."""

from __future__ import annotations

import getpass
import os
import shlex
import shutil

from probesim.engine.fleet import injected
from probesim.errors import InputError
from probesim.lab.envoy import envoy_binary
from probesim.lab.rollout import check_actions, has_actions_of, peak_pods
from probesim.lab.status import selects
from probesim.lab.traffic import meshed, meshed_calls
from probesim.model.kubernetes import PROBE_TYPES, Workload, pod_names_of
from probesim.model.nodes import Drain, NodeDown, NodePoolUpgrade, NodeUp, Uncordon, ZoneDown, ZoneUp
from probesim.model.scenario import Scenario
from probesim.model.traffic import Traffic

# What one machine runs faithfully: each pod is up to three processes (its app and those loaded
# ahead for its restarts) plus an Envoy with Istio's sidecar; the load generator is this process.
MAX_PODS = 12
MAX_RATE = 2000  # requests per second, all routes together (seed 004 sends 2 x 900)
MAX_DURATION_S = 3600


def routes_to(scenario: Scenario, workloads: list[Workload]) -> list[Traffic]:
    """The traffic routes whose Service selects the pods of one of the workloads."""
    out = []
    for t in scenario.spec.traffic:
        name = scenario.service_for(t).name
        service = next((v for v in scenario.services if v.name == name), None)
        if any(selects(service, w.pod_labels) for w in workloads):
            out.append(t)
    return out


def check_nodes(scenario: Scenario, workloads: list[Workload]) -> None:
    """What the lab runs of nodes (``lab.nodes``): several nodes, their failures and returns
    (nodeDown, zoneDown, nodeUp, zoneUp), drains, uncordons and node pool upgrades
    (``lab.drains``), for the pods of Deployments without their own Istio sidecar (a replacement
    would need one started); a StatefulSet's or a bare Pod's pods on nodes are refused in one line."""
    runs = NodeDown | ZoneDown | NodeUp | ZoneUp | Drain | Uncordon | NodePoolUpgrade
    acts = [a for a in scenario.spec.actions if isinstance(a, runs)]
    nodes = scenario.spec.cluster.node_list()
    if not acts and (nodes is None or len(nodes) <= 1):
        return
    for w in workloads:
        if w.kind != "Deployment":
            raise InputError(
                f"{w.kind} {w.name}: the lab runs the pods of Deployments on several nodes only (their "
                "ReplicaSet replaces a pod its node lost); probesim run simulates the others",
                field="spec.cluster.nodes",
            )
        if injected(w, scenario):
            raise InputError(
                f"workload {w.name}: the lab runs node faults for pods without their own Istio sidecar "
                "only (a replacement would need one started); probesim run simulates them",
                field="spec.cluster.nodes",
            )


def check_limits(scenario: Scenario, workloads: list[Workload], seconds: float, allow_exec: bool) -> None:
    """Refuse up front what the lab would not run faithfully on one machine — pods and requests
    counted over all the workloads it runs, several nodes or a node's failure — and a manifest's
    exec probes without consent: they would run here, as this user."""
    check_nodes(scenario, workloads)
    for workload in workloads:
        pods = len(pod_names_of(workload))
        if pods > MAX_PODS:
            raise InputError(
                f"workload {workload.name}: {pods} pods: the lab runs at most {MAX_PODS} pods "
                "(processes on this machine); lower its replicas"
            )
    if seconds > MAX_DURATION_S:
        raise InputError(f"{seconds:g}s: the lab runs at most {MAX_DURATION_S // 3600}h", field="duration")
    rate = sum(t.rate or 0 for t in routes_to(scenario, workloads))
    if rate > MAX_RATE:
        raise InputError(
            f"spec.traffic: {rate:g} requests per second in all: the lab sends at most {MAX_RATE} "
            "per second (one load generator on this machine)"
        )
    check_actions(scenario, workloads, MAX_PODS)
    peaks = {w.name: peak_pods(scenario, w)[0] for w in workloads}
    if len(workloads) > 1 and sum(peaks.values()) > MAX_PODS:
        each = ", ".join(f"{n} {k}" for k, n in peaks.items())
        raise InputError(
            f"workloads {', '.join(peaks)}: up to {sum(peaks.values())} pods at once ({each}): the lab "
            f"runs at most {MAX_PODS} pods (processes on this machine) over all its workloads; lower "
            "their replicas, or run one with --workload"
        )
    for workload in workloads:
        if has_actions_of(scenario, workload) and injected(workload, scenario):
            raise InputError(
                f"workload {workload.name}: the lab runs rollouts of pods without their own Istio "
                "sidecar only (it would have to start one per new pod); probesim run simulates them",
                field="spec.actions",
            )
        c = workload.pod_spec.containers[0]
        for kind in PROBE_TYPES:
            p = c.probe(kind)
            if p is not None and p.exec is not None and not allow_exec:
                raise InputError(
                    f"workload {workload.name}, container {c.name}, {kind}Probe: its exec command "
                    f"({shlex.join(p.exec.command)}) would run on this machine as user {_user()}; "
                    "pass --allow-exec to allow it"
                )


def check_envoy(scenario: Scenario, workloads: list[Workload]) -> None:
    """A run whose routes or calls go through client sidecars, or whose pods have their own,
    needs Envoy: without it, say how to get it before anything starts."""
    sidecars = any(injected(w, scenario) for w in workloads)
    sidecars |= any(meshed_calls(scenario, s) for s in scenario.called_services())
    if sidecars or any(meshed(scenario, t) for t in routes_to(scenario, workloads)):
        envoy_binary()


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def found(argv: list[str], option: str) -> list[str]:
    """``argv`` with its program found on PATH."""
    path = shutil.which(argv[0])
    if path is None:
        raise InputError(f"{option} {argv[0]}: not found or not executable (PATH is searched)")
    return [path, *argv[1:]]


def parse_command_for(items: list[str]) -> dict[str, list[str]]:
    """``--command-for REVISION=COMMAND``: the command split as a shell splits words (quotes
    group; nothing is expanded or piped), its program found on PATH."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        try:
            argv = shlex.split(text)
        except ValueError as e:
            raise InputError(f"{item!r}: {e}", field="--command-for") from None
        if not sep or not key.strip() or not argv:
            raise InputError(
                f"{item!r}: give REVISION=COMMAND, e.g. 2='python3 server_v2.py' (revision 1 is the "
                "manifest's, 2 the first rollout's, …; or a ReplicaSet's name)",
                field="--command-for",
            )
        out[key.strip()] = found(argv, f"--command-for {key.strip()}=")
    return out
