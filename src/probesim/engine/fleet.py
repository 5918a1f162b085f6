"""The run's state as flat arrays: pods of every workload, and their containers (sorted by pod).

Built once from the Scenario; the kubelet, lifecycle and traffic steps update it in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.behavior import INF, Behaviors, Profile, redirect_targets
from probesim.engine.controllers.adoption import adoptions
from probesim.engine.controllers.templates import WorkloadPlan, plan
from probesim.engine.routing import (
    PodLabels,
    Route,
    call_routes,
    labels_per_pod,
    listens,
    mirror_routes,
    route,
    service_selects,
    with_destinations,
)
from probesim.kube.arithmetic import replica_set_name, resolve_fenceposts
from probesim.kube.hooks import container_hook
from probesim.kube.ports import container_port
from probesim.model.kubernetes import PROBE_TYPES, Container, Probe, ProbeType, Workload, pod_names_of
from probesim.model.nodes import Drain, NodeDown, NodePoolUpgrade, ZoneDown
from probesim.model.scenario import ContainerBehavior, DeletePod, Rollback, Scale, Scenario, service_calls

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
INJECT = "sidecar.istio.io/inject"

# Container states.
WAITING, RUNNING, TERMINATING, EXITED = 0, 1, 2, 3
# Cached probe results (reference/kubelet.md §1.2.6).
UNKNOWN, FAILURE, SUCCESS = -1, 0, 1
HTTP, TCP, EXEC, GRPC = 0, 1, 2, 3


@dataclass
class ProbeSpecArrays:
    """One probe type's settings for every container (``has`` False where not declared)."""

    has: B
    period: I64
    timeout: I64
    delay_s: I64
    success_th: I64
    failure_th: I64
    handler: I64
    target: I64  # behaviour target index (HTTP path, "exec", "grpc")
    port_error: B  # named port not declared: the handler errors and the result is discarded
    closed: B  # the app does not listen on the probe's port: refused
    grace: I64  # probe-level terminationGracePeriodSeconds in ms, -1 when unset
    describe: list[str]  # "http://10.244.0.1:8080/healthz" etc., for event messages
    error: list[str]  # the handler's error when port_error, as the kubelet words it


@dataclass
class Fleet:
    scenario: Scenario
    pod_names: list[str]
    pod_workload: I64
    pod_template: I64  # which of its workload's revisions (0: the manifest's template)
    plans: dict[int, WorkloadPlan]  # per workload that rolls out: its revisions
    pod_ordinal: I64
    pod_replaces: I64  # the StatefulSet pod a replacement slot stands in for; -1 otherwise
    pod_ip: list[str]
    pod_tgps: I64  # pod terminationGracePeriodSeconds in ms
    pod_restart_policy: list[str]
    pod_gate_delay: I64  # all readiness gates set this long after admission (INF: never)
    container_pod: I64
    container_name: list[str]
    container_spec: list[Container]
    container_behavior: list[ContainerBehavior]
    pod_first_container: I64
    behaviors: Behaviors
    probes: dict[ProbeType, ProbeSpecArrays]
    routes: list[Route]
    ordered_ready: list[bool]  # per workload: StatefulSet OrderedReady admission
    replica_set: list[bool]  # per workload: pods created and deleted by a ReplicaSet controller
    publish_not_ready: dict[str, bool] = field(default_factory=dict)
    pod_sidecar: B = field(
        default_factory=lambda: np.zeros(0, bool)
    )  # an Istio sidecar takes inbound traffic
    service_pods: dict[str, B] = field(default_factory=dict)
    pod_labels: PodLabels | None = None  # every pod's labels (its revision's template's)
    # Per container: a restartable init container (a native sidecar, KEP-753); its preStop
    # hook's kind (kube/hooks.py) and length in ms.
    container_sidecar: B = field(default_factory=lambda: np.zeros(0, bool))
    hook_kind: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    hook_length: I64 = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def n_pods(self) -> int:
        return len(self.pod_names)

    @property
    def n_containers(self) -> int:
        return len(self.container_name)

    def container_label(self, c: int) -> tuple[str, str]:
        return self.pod_names[int(self.container_pod[c])], self.container_name[c]


def _probe_target(p: Probe) -> str:
    """The behaviour target a probe asks: its HTTP path, 'exec:<command>' or 'grpc:<service>'
    (answered as the behaviour's entry for that command or service, else its 'exec' / 'grpc')."""
    if p.http_get is not None:
        return p.http_get.path
    if p.grpc is not None:
        return f"grpc:{p.grpc.service}" if p.grpc.service else "grpc"
    if p.exec is not None:
        return "exec:" + " ".join(p.exec.command)
    return "tcp"  # answered by the port alone


_HEALTHY = ContainerBehavior()  # a container the scenario says nothing about


def build(scenario: Scenario) -> Fleet:
    pod_names: list[str] = []
    pod_workload: list[int] = []
    pod_ordinal: list[int] = []
    pod_tgps: list[int] = []
    pod_policy: list[str] = []
    pod_gate_delay: list[int] = []
    pod_sidecar: list[bool] = []
    cont_pod: list[int] = []
    cont_name: list[str] = []
    cont_spec: list[Container] = []
    cont_behavior: list[ContainerBehavior] = []
    cont_sidecar: list[bool] = []
    first: list[int] = []
    pod_replaces: list[int] = []
    profiles: list[Profile] = []
    profile_keys: dict[str, int] = {}
    profile_of: list[int] = []

    seen: dict[int, int] = {}  # id(behaviour) → profile: pods share their behaviour objects

    def profile_id(b: ContainerBehavior) -> int:
        if id(b) in seen:
            return seen[id(b)]
        key = b.model_dump_json()
        if key not in profile_keys:
            profile_keys[key] = len(profiles)
            profiles.append(Profile.compile(b))
        seen[id(b)] = profile_keys[key]
        return profile_keys[key]

    plans = {wi: plan(scenario, w.name) for wi, w in enumerate(scenario.workloads) if _rolls(scenario, w)}
    adopted = adoptions(scenario)
    # (Deployment, template) → the adopted ReplicaSet that is that template's: its pods, not
    # the Deployment's own, are that revision's (FindNewReplicaSet finds the adopted one).
    taken = {(di, t): ri for di, p_ in plans.items() for ri, t in p_.adopted.items()}
    pod_template: list[int] = []
    labels: dict[tuple[int, int], dict[str, str]] = {}
    for wi, w in enumerate(scenario.workloads):
        names = pod_names_of(w) if (wi, 0) not in taken else []
        slots = [(ordinal, name, -1) for ordinal, name in enumerate(names)]
        deleted = [
            a.pod
            for a in scenario.spec.actions
            if isinstance(a, DeletePod) and a.pod in names and w.kind != "Pod"
        ]
        pools: list[list[tuple[int, str, int]]] = [slots]
        if w.kind == "StatefulSet":
            # A StatefulSet's replacement keeps the ordinal and the name: slots per ordinal and
            # revision, for deletions, every time a revision becomes the template, scale-ups.
            slots += [(names.index(v), v, -1) for v in deleted]
            p_ = plans.get(wi)
            scales = [
                a.replicas for a in scenario.spec.actions if isinstance(a, Scale) and a.workload == w.name
            ]
            top = max([len(names), *scales])
            faults = node_faults(scenario)  # each may evict every pod, each replaced
            for tpl in range(len(p_.revisions) if p_ is not None else 1):
                times = sum(1 for x in p_.template_of.values() if x == tpl) if p_ is not None else 0
                more = [
                    (o, f"{w.name}-{o}", -1)
                    for o in range(top)
                    for _ in range(
                        times + len(scales) + faults + (deleted.count(f"{w.name}-{o}") if tpl else 0)
                    )
                ]
                if tpl == 0:
                    slots += more
                else:
                    pools.append(more)
        elif w.kind != "Pod":
            # A ReplicaSet's pods are numbered in creation order; slots for replacements and
            # for what an autoscaler may add (never reused, so a name means one pod).
            hpa = scenario.autoscaler_for(w)
            extra = len(deleted) + (max(hpa.spec.max_replicas, len(names)) * 4 if hpa else 0)
            extra += _rollout_slots(scenario, w, plans.get(wi), 0)
            if wi in adopted:
                # Its Deployment's now: the slots one of the Deployment's own ReplicaSets has.
                a = adopted[wi]
                d = scenario.workloads[a.deployment]
                at = plans[a.deployment].adopted[wi]
                d_hpa = scenario.autoscaler_for(d)
                extra += max(d.spec.replicas - len(names), 0) + _rollout_slots(
                    scenario, d, plans[a.deployment], at
                )
                extra += max(d_hpa.spec.max_replicas, d.spec.replicas) * 4 if d_hpa and at == 0 else 0
            if (wi, 0) in taken:
                extra = 0
            slots += [(i, f"{w.name}-{i}", -1) for i in range(len(names), len(names) + extra)]
            if wi in plans:
                # Later revisions' pods, named after their ReplicaSet as kubectl shows them.
                for tpl, rev in enumerate(plans[wi].revisions[1:], start=1):
                    rs = replica_set_name(w.name, rev.key)
                    n = _rollout_slots(scenario, w, plans[wi], tpl) if (wi, tpl) not in taken else 0
                    pools.append([(i, f"{rs}-{i}", -1) for i in range(n)])
        revisions = plans[wi].revisions if wi in plans else None
        for tpl, pool in enumerate(pools):
            rw = revisions[tpl].workload if revisions else w
            wb = revisions[tpl].behavior if revisions else scenario.behavior(w.name)
            labels[(wi, tpl)] = rw.pod_labels
            gates = [g.condition_type for g in rw.pod_spec.readiness_gates]
            gate_delay = max((wb.readiness_gates.get(g, int(INF)) for g in gates), default=0)
            # Regular init containers are not simulated one by one (as if done at once); sidecars
            # come first, in order, then the app containers (Containers gates their starts).
            containers = [c for c in rw.pod_spec.init_containers if c.restart_policy == "Always"]
            n_sidecars = len(containers)
            containers += list(rw.pod_spec.containers)
            sidecar = injected(rw, scenario)
            tgps = rw.pod_spec.termination_grace_period_seconds * 1000
            # Per container name: its behaviour by ordinal (the last override naming the ordinal
            # wins), as sets so that a pod looks its own ordinal up (not every listed one).
            overrides = [(set(ov.ordinals), ov.containers) for ov in wb.pods]
            for ordinal, name, replaces in pool:
                p = len(pod_names)
                pod_replaces.append(replaces)
                pod_names.append(name)
                pod_workload.append(wi)
                pod_template.append(tpl)
                pod_ordinal.append(ordinal)
                pod_tgps.append(tgps)
                pod_policy.append(rw.pod_spec.restart_policy)
                pod_gate_delay.append(gate_delay)
                pod_sidecar.append(sidecar)
                first.append(len(cont_name))
                for ci, c in enumerate(containers):
                    b = wb.containers.get(c.name, _HEALTHY)
                    for ordinals, named in overrides:
                        if ordinal in ordinals and c.name in named:
                            b = named[c.name]
                    cont_pod.append(p)
                    cont_name.append(c.name)
                    cont_spec.append(c)
                    cont_behavior.append(b)
                    cont_sidecar.append(ci < n_sidecars)
                    profile_of.append(profile_id(b))

    ips = [f"10.244.{(i + 1) // 250}.{(i + 1) % 250 + 1}" for i in range(len(pod_names))]
    # Targets: every HTTP path a probe or route asks, plus exec and gRPC checks.
    targets = ["exec", "grpc", "tcp"]
    for c in {id(c): c for c in cont_spec}.values():
        for kind in PROBE_TYPES:
            probe = c.probe(kind)
            if probe is not None and _probe_target(probe) not in targets:
                targets.append(_probe_target(probe))
    for b in {id(b): b for b in cont_behavior}.values():
        targets += [x for x in redirect_targets(b) if x not in targets]
    for t in scenario.spec.traffic:
        if t.path not in targets:
            targets.append(t.path)
    targets += [c.path for c in service_calls(cont_behavior).values() if c.path not in targets]
    behaviors = Behaviors(profiles, np.array(profile_of, np.int64), targets)

    # Containers of one template with one behaviour share every setting but the pod's IP.
    grouped: dict[tuple[int, int], list[int]] = {}
    for i, (c, b) in enumerate(zip(cont_spec, cont_behavior, strict=True)):
        grouped.setdefault((id(c), id(b)), []).append(i)
    groups = list(grouped.values())
    probes = {
        kind: _probe_arrays(kind, cont_spec, cont_behavior, cont_pod, ips, behaviors, groups)
        for kind in PROBE_TYPES
    }
    pod_workload_a = np.array(pod_workload, np.int64)
    selected = labels_per_pod(labels, pod_workload_a, np.array(pod_template, np.int64))
    routes = [
        route(scenario, t, selected, first, cont_spec, cont_behavior, behaviors)
        for t in scenario.spec.traffic
    ]
    routes = [
        with_destinations(scenario, r, selected, first, cont_spec, cont_behavior, behaviors) for r in routes
    ]
    routes += mirror_routes(scenario, routes, selected, first, cont_spec, cont_behavior, behaviors)
    routes += call_routes(scenario, selected, first, cont_spec, cont_behavior, behaviors)
    hooks: dict[tuple[int, int], tuple[int, int]] = {}
    for c, b in {(id(c), id(b)): (c, b) for c, b in zip(cont_spec, cont_behavior, strict=True)}.values():
        h = container_hook(c, b)
        hooks[id(c), id(b)] = (h.kind, h.length)
    kinds_lengths = [hooks[id(c), id(b)] for c, b in zip(cont_spec, cont_behavior, strict=True)]
    return Fleet(
        scenario=scenario,
        pod_names=pod_names,
        pod_workload=pod_workload_a,
        pod_template=np.array(pod_template, np.int64),
        plans=plans,
        pod_ordinal=np.array(pod_ordinal, np.int64),
        pod_replaces=np.array(pod_replaces, np.int64),
        pod_ip=ips,
        pod_tgps=np.array(pod_tgps, np.int64),
        pod_restart_policy=pod_policy,
        pod_gate_delay=np.array(pod_gate_delay, np.int64),
        container_pod=np.array(cont_pod, np.int64),
        container_name=cont_name,
        container_spec=cont_spec,
        container_behavior=cont_behavior,
        pod_first_container=np.array(first, np.int64),
        behaviors=behaviors,
        probes=probes,
        routes=routes,
        ordered_ready=[
            w.kind == "StatefulSet" and (w.spec.pod_management_policy or "OrderedReady") == "OrderedReady"
            for w in scenario.workloads
        ],
        replica_set=[
            w.kind in ("Deployment", "ReplicaSet", "ReplicationController") for w in scenario.workloads
        ],
        publish_not_ready={s.name: s.spec.publish_not_ready_addresses for s in scenario.services},
        service_pods={s.name: service_selects(s, selected) for s in scenario.services},
        pod_sidecar=np.array(pod_sidecar, bool),
        pod_labels=selected,
        container_sidecar=np.array(cont_sidecar, bool),
        hook_kind=np.array([k for k, _ in kinds_lengths], np.int64),
        hook_length=np.array([n for _, n in kinds_lengths], np.int64),
    )


def injected(w: Workload, scenario: Scenario) -> bool:
    """Whether Istio injects its sidecar into the workload's pods, by its injector's policy: if
    the Namespace's ``istio-injection`` label (among the manifests) or the pod's
    ``sidecar.istio.io/inject`` (label, or the older annotation) says disabled / "false", no;
    if either says enabled / "true" (or the Namespace names a revision, ``istio.io/rev``), yes;
    otherwise no."""
    meta = w.spec.template.metadata
    pod = meta.labels.get(INJECT, meta.annotations.get(INJECT, "")).lower()
    ns = scenario.namespace_labels.get(w.metadata.namespace, {})
    space = ns.get("istio-injection", "enabled" if "istio.io/rev" in ns else "")
    if pod == "false" or space == "disabled":
        return False
    return pod == "true" or space == "enabled"


def _probe_arrays(
    kind: ProbeType,
    specs: list[Container],
    beh: list[ContainerBehavior],
    cont_pod: list[int],
    ips: list[str],
    behaviors: Behaviors,
    groups: list[list[int]],
) -> ProbeSpecArrays:
    """One probe type's settings; ``groups``: containers sharing template and behaviour."""
    n = len(specs)
    a = ProbeSpecArrays(
        has=np.zeros(n, bool),
        period=np.ones(n, np.int64),
        timeout=np.ones(n, np.int64),
        delay_s=np.zeros(n, np.int64),
        success_th=np.ones(n, np.int64),
        failure_th=np.ones(n, np.int64),
        handler=np.zeros(n, np.int64),
        target=np.zeros(n, np.int64),
        port_error=np.zeros(n, bool),
        closed=np.zeros(n, bool),
        grace=np.full(n, -1, np.int64),
        describe=[""] * n,
        error=[""] * n,
    )
    for members in groups:
        c, b = specs[members[0]], beh[members[0]]
        p = c.probe(kind)
        if p is None:
            continue
        i = np.array(members, np.int64)
        a.has[i] = True
        a.period[i] = p.period_seconds * 1000
        a.timeout[i] = p.timeout_seconds * 1000
        a.delay_s[i] = p.initial_delay_seconds
        a.success_th[i] = p.success_threshold
        a.failure_th[i] = p.failure_threshold
        a.target[i] = behaviors.target(_probe_target(p))
        if p.termination_grace_period_seconds is not None:
            a.grace[i] = p.termination_grace_period_seconds * 1000
        # "<before>" + pod IP + "<after>", or the same text for every pod (before alone).
        before, after, per_pod = "", "", True
        error = ""
        if p.http_get is not None:
            h = p.http_get
            a.handler[i] = HTTP
            port = container_port(c, h.port)
            scheme = h.scheme.lower()
            before, after = f"{scheme}://", f":{port or h.port}{h.path}"
            if h.host:
                before, per_pod = before + h.host + after, False
            a.port_error[i] = port is None
            a.closed[i] = not listens(c, b, port)
            error = f'strconv.Atoi: parsing "{h.port}": invalid syntax'
        elif p.tcp_socket is not None:
            ts = p.tcp_socket
            a.handler[i] = TCP
            port = container_port(c, ts.port)
            before, after = "", f":{port or ts.port}"
            if ts.host:
                before, per_pod = ts.host + after, False
            a.port_error[i] = port is None
            a.closed[i] = not listens(c, b, port)
            error = f'strconv.Atoi: parsing "{ts.port}": invalid syntax'
        elif p.grpc is not None:
            g = p.grpc
            a.handler[i] = GRPC
            after = f":{g.port}"
            a.closed[i] = not listens(c, b, g.port)
        else:
            assert p.exec is not None
            a.handler[i] = EXEC
            before, per_pod = " ".join(p.exec.command), False
        for m in members:
            a.describe[m] = before + ips[cont_pod[m]] + after if per_pod else before
            a.error[m] = error
    return a


def _rolls(scenario: Scenario, w: Workload) -> bool:
    """Whether the workload's controller runs over revisions: every Deployment (its first
    ReplicaSet is named after its template's hash) and StatefulSet."""
    return w.kind in ("Deployment", "StatefulSet")


def _rollout_slots(scenario: Scenario, w: Workload, p: WorkloadPlan | None, t: int) -> int:
    """Slots a revision's ReplicaSet may fill beyond the manifest's replicas (revision 0) or in
    all (later ones): every time the revision becomes the Deployment's template, the largest
    size plus its surge; once more the largest size, for the proportional scaling of an old
    ReplicaSet mid-rollout; and per scale action, the largest size (pods removed and added)."""
    hpa = scenario.autoscaler_for(w)
    scales = [a for a in scenario.spec.actions if isinstance(a, Scale) and a.workload == w.name]
    n = max([w.spec.replicas, hpa.spec.max_replicas if hpa else 0, *(a.replicas for a in scales)])
    extra = (len(scales) + node_faults(scenario)) * n
    if p is None or len(p.revisions) == 1:
        return extra
    surge = 0
    if w.spec.strategy is not None and w.spec.strategy.rolling_update is not None:
        ru = w.spec.strategy.rolling_update
        surge = resolve_fenceposts(ru.max_surge, ru.max_unavailable, n)[0]
    # A rollback's revision is chosen when it runs (among the ReplicaSets then): any may be it.
    actions = scenario.spec.actions
    times = sum(1 for i, target in p.template_of.items() if target == t or isinstance(actions[i], Rollback))
    slots = times * (n + surge) + n + extra
    if t > 0:
        deleted_or_hpa = max(hpa.spec.max_replicas, n) * 4 if hpa else 0
        slots += deleted_or_hpa
    return slots


def node_faults(scenario: Scenario) -> int:
    """How many node failures and drains the scenario scripts: each may have every pod evicted
    and replaced (a ReplicaSet's and a StatefulSet's pods need a slot per replacement); a node
    pool upgrade drains every node of the pool."""
    pool = scenario.spec.cluster.node_list() or []
    return sum(
        len(pool) if isinstance(a, NodePoolUpgrade) else 1
        for a in scenario.spec.actions
        if isinstance(a, NodeDown | ZoneDown | Drain | NodePoolUpgrade)
    )
