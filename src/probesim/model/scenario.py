"""The scenario: what the user's pods do (workload behaviour), the traffic, the run settings,
and the Kubernetes objects they run in.

``ScenarioFile`` is the YAML a user writes (``probesim schema`` prints its JSON Schema);
``Scenario`` is the loaded, cross-checked experiment the engine takes.
"""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made (about 15 ms of `probesim run`'s start-up).
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from probesim.mesh.istio import DestinationRule, VirtualService
from probesim.model.base import Model, SBool, SFloat, SInt
from probesim.model.cluster import Cluster
from probesim.model.disruption import PodDisruptionBudget
from probesim.model.duration import Duration, FineDuration
from probesim.model.kubernetes import HorizontalPodAutoscaler, Service, Workload
from probesim.model.nodes import (
    Drain,
    NodeDown,
    NodePoolUpgrade,
    NodeUp,
    Uncordon,
    ZoneDown,
    ZoneUp,
)
from probesim.model.quantities import Millicores
from probesim.model.threshold import ThresholdLine
from probesim.model.traffic import Traffic

API_VERSION = "probesim.dev/v1alpha1"

HttpStatus = Annotated[SInt, Field(ge=100, le=599)]


class _Timed(Model):
    """When an episode starts: ``after`` the container (re)started — so it recurs in every
    container instance — or ``at`` a point of the scenario clock, once."""

    after: Duration | None = Field(default=None, description="Container age at which it starts.")
    at: Duration | None = Field(default=None, description="Scenario time at which it starts (once).")

    @model_validator(mode="after")
    def _one_anchor(self) -> "_Timed":
        if (self.after is None) == (self.at is None):
            raise ValueError("give exactly one of 'after' (container age) or 'at' (scenario time)")
        return self


class Hang(_Timed):
    """The app stops answering (requests and probes time out) for ``for``."""

    kind: Literal["hang"]
    for_: Duration = Field(alias="for", description="How long it hangs.")
    accepts_tcp: SBool = Field(default=True, description="Whether the port still accepts connections.")


class Deadlock(_Timed):
    """A hang that never ends by itself: only a restart cures it."""

    kind: Literal["deadlock"]
    accepts_tcp: SBool = True


class Crash(_Timed):
    """The process exits with ``exitCode``."""

    kind: Literal["crash"]
    exit_code: Annotated[SInt, Field(ge=0, le=255)] = 1


class Errors(_Timed):
    """The app answers ``status`` on ``paths`` (all HTTP paths, exec and gRPC checks when
    omitted) for ``for`` (forever when omitted). ``exec`` and ``grpc`` in ``paths`` stand for
    exec and gRPC health checks."""

    kind: Literal["errors"]
    for_: Duration | None = Field(default=None, alias="for")
    status: HttpStatus = 500
    paths: tuple[str, ...] | None = None


Episode = Annotated[Hang | Deadlock | Crash | Errors, Field(discriminator="kind")]


class Retries(Model):
    """Retries of a dependency call by the app's client."""

    attempts: Annotated[SInt, Field(ge=1, le=10)] = Field(description="Tries in all (1: no retry).")
    backoff: FineDuration = Field(default=0.0, description="Wait before each retry.")
    budget: Annotated[SFloat, Field(gt=0, le=100)] | None = Field(
        default=None,
        description="Retries allowed, in percent of first tries (a retry budget); omitted: no limit.",
    )


class CircuitBreaker(Model):
    """The app's breaker on a dependency: after ``failures`` failed calls in a row it fails
    calls at once for ``open``, then lets ``halfOpenCalls`` through to decide."""

    failures: Annotated[SInt, Field(ge=1)] = 5
    open: Duration = 30_000
    half_open_calls: Annotated[SInt, Field(ge=1)] = 1


class DependencyCall(Model):
    """A call the route makes while handling a request: to a shared dependency of
    ``spec.dependencies`` (``dependency``), or to a Service of the scenario (``service``), whose
    Ready endpoints answer it as they answer any client, balanced per call as kube-proxy
    balances a new connection."""

    dependency: str | None = Field(default=None, description="A name of spec.dependencies.")
    service: str | None = Field(
        default=None, description="A Service of the scenario: its pods serve the call, with their costs."
    )
    port: SInt | str | None = Field(
        default=None, description="With 'service': its port number or name; default: the first."
    )
    path: str = Field(default="/", description="With 'service': the path called.")
    timeout: Duration | None = Field(
        default=100_000,
        description="The app's client timeout per try (.NET HttpClient's default 100s); null: none.",
    )
    retries: Retries = Retries(attempts=1)
    circuit_breaker: CircuitBreaker | None = None
    on_error: HttpStatus = Field(default=500, description="What the route answers when the call fails.")

    @model_validator(mode="after")
    def _one_target(self) -> "DependencyCall":
        if (self.dependency is None) == (self.service is None):
            raise ValueError("give exactly one of 'dependency' or 'service'")
        if self.dependency is not None and (self.port is not None or self.path != "/"):
            raise ValueError("'port' and 'path' go with 'service' (a dependency answers every path)")
        return self

    @property
    def target(self) -> str:
        """What is called, as results and breakers name it: the dependency's name, or
        'service/<name>' (a Service and a dependency may share a name)."""
        return self.dependency if self.dependency is not None else f"service/{self.service}"


class RouteErrors(Model):
    """A share of a path's requests the app answers with an error status once it has served
    them (a bug on some inputs, a flaky downstream it does not model): each request on its own."""

    percent: Annotated[SFloat, Field(gt=0, le=100)] = Field(description="Requests answered so, in percent.")
    status: HttpStatus = Field(default=500, description="The status they get.")


class RouteCost(Model):
    """What one request to a path costs the app."""

    cpu: FineDuration = Field(default=0.0, description="CPU time per request (e.g. '20ms').")
    wall: FineDuration = Field(default=0.0, description="Time per request spent waiting, not on CPU (I/O).")
    calls: tuple[DependencyCall, ...] = Field(default=(), description="Dependency calls, one after another.")
    errors: RouteErrors | None = Field(
        default=None,
        description="A share of requests answered with an error status after their calls succeeded "
        "(probesim fit measures it from the app's request histogram).",
    )


FREE = RouteCost()  # one instance: pods share it (building one per lookup cost seconds at 100k pods)


class Capacity(Model):
    """How many requests the app works on at once, and how many may wait."""

    workers: Annotated[SInt, Field(ge=1)] | None = Field(
        default=None, description="Requests in progress at once (thread pool); omitted: unlimited (async)."
    )
    queue: Annotated[SInt, Field(ge=0)] | None = Field(
        default=None, description="Requests waiting for a worker; beyond it they are refused (503)."
    )
    probes: Literal["shared", "separate"] = Field(
        default="shared",
        description="shared: probes wait in the same queue as requests; separate: own port or thread.",
    )


class Warmup(Model):
    """A cold container works slower for a while (JIT, caches)."""

    for_: Duration = Field(alias="for")
    factor: Annotated[SFloat, Field(ge=1, le=100)] = Field(
        description="CPU cost multiplier while warming up."
    )


class ContainerBehavior(Model):
    start: Duration = Field(default=0, description="Time from process start until the app answers.")
    starting_status: HttpStatus | None = Field(
        default=None,
        description="Status answered while starting; omitted: connections are refused until started.",
    )
    shutdown: Duration = Field(default=0, description="Time the app takes to exit after SIGTERM.")
    ignores_sigterm: SBool = Field(default=False, description="Only SIGKILL at the grace period ends it.")
    pre_stop: Duration | None = Field(
        default=None,
        description="How long the container's preStop hook runs when the manifest does not say: an exec "
        "hook that is not a plain 'sleep N', or an httpGet hook (default: one request's time). A sleep "
        "hook's length is its seconds. The kubelet waits for the hook, at most the grace period, "
        "before SIGTERM; the app keeps answering meanwhile.",
    )
    paths: dict[str, HttpStatus] = Field(
        default_factory=dict,
        description="Status per exact HTTP path when healthy; others answer 200. Also 'exec' (all exec "
        "probes; 'exec:<command>' for one command, its words joined by spaces) and 'grpc' (all gRPC "
        "probes; 'grpc:<service>' for one service name): 2xx passes, anything else fails.",
    )
    redirects: dict[str, str] = Field(
        default_factory=dict,
        description="Path → Location of a redirect it answers (302 unless 'paths' gives a 3xx). A path on "
        "the same host is followed, as the kubelet and clients do (up to 10 hops); an absolute URL "
        "is another host: a probe takes the 3xx as success with a ProbeWarning event.",
    )
    ports: tuple[Annotated[SInt, Field(ge=1, le=65535)], ...] | None = Field(
        default=None,
        description="Ports the app listens on (default: the container's declared ports, or every port "
        "when it declares none). A probe or request to another port is refused.",
    )
    episodes: tuple[Episode, ...] = ()
    routes: dict[str, RouteCost] = Field(
        default_factory=dict,
        description="Cost per exact HTTP path ('*': every other path). Any cost turns the capacity model on.",
    )
    capacity: Capacity = Capacity()
    warmup: Warmup | None = None
    idle_cpu: Millicores = Field(
        default=0,
        description="CPU the app uses besides its requests (runtime, GC, timers, its own metrics), in "
        "cores or '30m': it counts against the CPU limit and in the container's CPU usage.",
    )
    variability: Annotated[SFloat, Field(ge=0, le=3)] = Field(
        default=0.5, description="Spread of service times (sigma of a log-normal around the cost)."
    )

    @property
    def loaded(self) -> bool:
        """Whether requests cost anything, i.e. the capacity model applies."""
        return any(r.cpu > 0 or r.wall > 0 or r.calls or r.errors for r in self.routes.values())

    def cost(self, path: str) -> RouteCost:
        """What a request (or probe) to ``path`` costs: its route, else the route of 'exec' or
        'grpc' for 'exec:<command>' and 'grpc:<service>', else '*', else nothing."""
        if not self.routes:
            return FREE
        return self.routes.get(path) or self.routes.get(generic(path)) or self.routes.get("*") or FREE


def generic(target: str) -> str:
    """The behaviour key every probe of a kind shares: 'exec' for 'exec:<command>', 'grpc' for
    'grpc:<service>'; a path is its own."""
    return target.split(":", 1)[0] if target.startswith(("exec:", "grpc:")) else target


class PodOverride(Model):
    """Behaviour for some pods only, by ordinal (0-based, as pod names ``<workload>-<n>``)."""

    ordinals: Annotated[tuple[Annotated[SInt, Field(ge=0)], ...], Field(min_length=1)]
    containers: dict[str, ContainerBehavior]


class WorkloadBehavior(Model):
    containers: dict[str, ContainerBehavior] = Field(
        default_factory=dict,
        description="Per container name; containers not named start at once and stay healthy.",
    )
    pods: tuple[PodOverride, ...] = ()
    readiness_gates: dict[str, Duration] = Field(
        default_factory=dict,
        description="Readiness-gate condition type → time after pod start when a controller sets it True.",
    )

    def container_behaviors(self) -> list[ContainerBehavior]:
        """Every container behaviour it gives: per container, and per pod override."""
        return [cb for cbs in (self.containers, *(ov.containers for ov in self.pods)) for cb in cbs.values()]


def call_key(c: DependencyCall) -> str:
    """Calls to one Service, port, path and client timeout share a route."""
    return f"{c.service}|{c.port if c.port is not None else ''}|{c.path}|{c.timeout}"


def call_name(c: DependencyCall) -> str:
    """A call route's name in results: calls:<service>[:<port>]<path>."""
    return f"calls:{c.service}{'' if c.port is None else f':{c.port}'}{c.path}"


def service_calls(beh: list[ContainerBehavior]) -> dict[str, DependencyCall]:
    """Every call to a Service that a route cost of these behaviours makes, one per call_key, in
    the order first met."""
    out: dict[str, DependencyCall] = {}
    for b in {id(b): b for b in beh}.values():
        for cost in b.routes.values():
            for c in cost.calls:
                if c.service is not None:
                    out.setdefault(call_key(c), c)
    return out


class DeletePod(Model):
    """``kubectl delete pod``: the pod terminates with its grace period; its controller
    replaces it (a ReplicaSet at once, a StatefulSet once the old pod is gone)."""

    kind: Literal["deletePod"]
    pod: str = Field(description="Pod name, as probesim names pods: <workload>-<ordinal>.")
    at: Duration


class _WorkloadAction(Model):
    """Something done to a workload at a scenario time (``kubectl rollout …``, ``kubectl scale``)."""

    workload: str = Field(description="The workload's metadata.name (a Deployment, or as the kind allows).")
    at: Duration


class Rollout(_WorkloadAction):
    """A new pod template, as ``kubectl apply`` of an edited manifest, ``kubectl set image`` or
    ``kubectl patch`` give it: ``template`` is a strategic-merge patch of ``spec.template``
    (containers merged by name, ports by containerPort, env by name; ``null`` removes a key);
    ``behavior`` is what the new version's app does (omitted: the same as the version it
    replaces). The Deployment rolls out a new ReplicaSet as its strategy says."""

    kind: Literal["rollout"]
    template: dict[str, Any] = Field(
        default_factory=dict,
        description="Strategic-merge patch of the pod template, e.g. "
        "{spec: {containers: [{name: app, image: app:2}]}}.",
    )
    behavior: WorkloadBehavior | None = Field(
        default=None, description="The new version's behaviour (as spec.behavior.<workload>)."
    )


class Rollback(_WorkloadAction):
    """``kubectl rollout undo``: back to the previous revision, or to ``toRevision``."""

    kind: Literal["rollback"]
    to_revision: Annotated[SInt, Field(ge=1)] | None = Field(
        default=None, description="kubectl rollout undo --to-revision; omitted: the previous revision."
    )


class Restart(_WorkloadAction):
    """``kubectl rollout restart``: the template gets a new restartedAt annotation, so every pod is
    replaced as in a rollout, with the same behaviour."""

    kind: Literal["restart"]


class Scale(_WorkloadAction):
    """``kubectl scale --replicas``. An autoscaler of the workload goes on deciding afterwards."""

    kind: Literal["scale"]
    replicas: Annotated[SInt, Field(ge=0, le=2**31 - 1)]


class Pause(_WorkloadAction):
    """``kubectl rollout pause``: template changes wait (no new ReplicaSet) until resumed."""

    kind: Literal["pause"]


class Resume(_WorkloadAction):
    """``kubectl rollout resume``."""

    kind: Literal["resume"]


class Partition(_WorkloadAction):
    """``kubectl patch statefulset <name> -p '{"spec": {"updateStrategy": {"rollingUpdate":
    {"partition": N}}}}'``: a StatefulSet's RollingUpdate partition changes during the run (a
    phased update lowers it step by step). Ordinals from ``partition`` up are updated to the
    update revision, highest first; those below keep the current revision, and a pod below it that
    is deleted comes back at the current revision."""

    kind: Literal["partition"]
    partition: Annotated[SInt, Field(ge=0, le=2**31 - 1)] = Field(
        description="spec.updateStrategy.rollingUpdate.partition from then on (an integer, 0 or more)."
    )


class SetReadinessGate(Model):
    """A controller (a load balancer's, say) sets a readiness-gate condition of a workload's
    pods, or of one pod, to True or back to False."""

    kind: Literal["readinessGate"]
    workload: str | None = Field(default=None, description="Every pod of this workload that exists then.")
    pod: str | None = Field(default=None, description="One pod, as probesim names pods.")
    condition: str = Field(description="The gate's conditionType.")
    status: SBool = Field(description="true: the condition is True; false: False (the pod is not Ready).")
    at: Duration

    @model_validator(mode="after")
    def _one_target(self) -> "SetReadinessGate":
        if (self.workload is None) == (self.pod is None):
            raise ValueError("give exactly one of 'workload' or 'pod'")
        return self


NodeAction = NodeDown | ZoneDown | NodeUp | ZoneUp
WorkloadAction = Rollout | Rollback | Restart | Scale | Pause | Resume


Action = Annotated[
    DeletePod
    | Rollout
    | Rollback
    | Restart
    | Scale
    | Pause
    | Resume
    | Partition
    | SetReadinessGate
    | NodeDown
    | ZoneDown
    | NodeUp
    | ZoneUp
    | Drain
    | Uncordon
    | NodePoolUpgrade,
    Field(discriminator="kind"),
]


class DelayFault(Model):
    """Istio fault delay: ``percent`` of calls wait ``delay`` first (in the caller's sidecar)."""

    delay: Duration
    percent: Annotated[SFloat, Field(ge=0, le=100)]


class AbortFault(Model):
    """Istio fault abort: ``percent`` of calls fail at once with ``abort`` (flag FI)."""

    abort: HttpStatus
    percent: Annotated[SFloat, Field(ge=0, le=100)]


class Outage(Model):
    """The dependency is down for a while: connections refused, or calls hang."""

    at: Duration
    for_: Duration = Field(alias="for")
    mode: Literal["refuse", "hang"] = "refuse"


class Dependency(Model):
    """A service every pod calls (a database, an API); shared by all callers."""

    latency: FineDuration = Field(default=20.0, description="Typical answer time.")
    variability: Annotated[SFloat, Field(ge=0, le=3)] = 0.5
    capacity: Annotated[SInt, Field(ge=1)] | None = Field(
        default=None,
        description="Calls it works on at once, from all callers; beyond, calls are refused (503).",
    )
    faults: tuple[DelayFault | AbortFault, ...] = ()
    outages: tuple[Outage, ...] = ()


class ScenarioSpec(Model):
    duration: Duration
    step: Duration = 1000
    seed: Annotated[SInt, Field(ge=0, le=2**63 - 1)] = 0
    endpoint_delay: Duration = Field(
        default=0, description="Delay from a pod's Ready change to clients seeing the endpoint change."
    )
    behavior: dict[str, WorkloadBehavior] = Field(default_factory=dict, description="Per workload name.")
    traffic: tuple[Traffic, ...] = ()
    actions: tuple[Action, ...] = Field(default=(), description="Things done to the cluster during the run.")
    cluster: Cluster = Cluster()
    dependencies: dict[str, Dependency] = Field(default_factory=dict)
    thresholds: tuple[ThresholdLine, ...] = Field(
        default=(),
        description="Pass/fail criteria, as k6's thresholds: one 'metric: condition' line each "
        "(probesim run --threshold takes the same text); probesim run exits 99 when one is crossed.",
    )

    @model_validator(mode="after")
    def _distinct_traffic(self) -> "ScenarioSpec":
        # A route's series, summary and thresholds are keyed on its name (else its path).
        first: dict[str, int] = {}
        for i, t in enumerate(self.traffic):
            if t.label.startswith("calls:"):
                raise ValueError(
                    f"traffic[{i}] is named {t.label!r}: names starting 'calls:' are the results' "
                    "names of the calls pods make to a Service; give it another name"
                )
            j = first.setdefault(t.label, i)
            if j != i:
                what = (
                    f"traffic[{i}] has the name of traffic[{j}] ({t.label!r})"
                    if t.name
                    else f"traffic[{j}] and traffic[{i}] both send to {t.label!r} without a name"
                )
                raise ValueError(
                    f"{what}: give each traffic entry its own name (its series, summary and "
                    "thresholds are keyed on it)"
                )
        return self


class Metadata(Model):
    name: str
    description: str = ""


class ScenarioFile(Model):
    """A probesim scenario file."""

    api_version: Literal["probesim.dev/v1alpha1"]
    kind: Literal["Scenario"]
    metadata: Metadata
    manifests: tuple[str | dict[str, Any], ...] = Field(
        default=(), description="Kubernetes YAML files (relative to this file) or inline objects."
    )
    spec: ScenarioSpec


class Scenario(Model):
    """One experiment, fully loaded: the engine's and the lab's input."""

    name: str
    description: str = ""
    spec: ScenarioSpec
    workloads: tuple[Workload, ...]
    services: tuple[Service, ...] = ()
    autoscalers: tuple[HorizontalPodAutoscaler, ...] = ()
    disruption_budgets: tuple[PodDisruptionBudget, ...] = ()
    destination_rules: tuple[DestinationRule, ...] = ()
    virtual_services: tuple[VirtualService, ...] = ()
    namespace_labels: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Labels of the Namespace objects among the manifests."
    )

    def autoscaler_for(self, workload: Workload) -> HorizontalPodAutoscaler | None:
        return next(
            (
                h
                for h in self.autoscalers
                if h.spec.scale_target_ref.name == workload.name
                and h.spec.scale_target_ref.kind == workload.kind
            ),
            None,
        )

    def workload(self, name: str) -> Workload:
        return next(w for w in self.workloads if w.name == name)

    def behavior(self, workload: str) -> WorkloadBehavior:
        return self.spec.behavior.get(workload, WorkloadBehavior())

    def container_behaviors(self) -> list[ContainerBehavior]:
        """Every container behaviour the scenario gives: per workload, per pod override, and
        each rollout's new version's."""
        wbs = [*self.spec.behavior.values()]
        wbs += [a.behavior for a in self.spec.actions if isinstance(a, Rollout) and a.behavior is not None]
        return [
            cb
            for wb in wbs
            for cbs in (wb.containers, *(ov.containers for ov in wb.pods))
            for cb in cbs.values()
        ]

    def called_services(self) -> list[str]:
        """The Services the pods call while serving (``calls: [{service: …}]``), in the order first met."""
        return list(dict.fromkeys(str(c.service) for c in service_calls(self.container_behaviors()).values()))

    def to_doc(self, exclude_none: bool = True) -> dict[str, Any]:
        """The scenario as a document that validates back to it: its dump, with each traffic
        ``series``' rows in place (read from the CSV when the scenario loaded, they are no field
        a dump writes; without them the copy would send nothing)."""
        doc = self.model_dump(mode="json", by_alias=True, exclude_none=exclude_none)
        for t, raw in zip(self.spec.traffic, doc["spec"].get("traffic", []), strict=True):
            if t.points:
                raw["points"] = [list(p) for p in t.points]
        return doc

    def service_for(self, t: Traffic) -> Service:
        """The Service a traffic route calls (its ``service``, else the first; the loader checks
        there is one)."""
        return next(s for s in self.services if s.name == t.service) if t.service else self.services[0]

    def cut_to(self, duration_ms: int) -> "Scenario":
        """The same scenario over another span (to simulate what the lab ran)."""
        return self.model_copy(update={"spec": self.spec.model_copy(update={"duration": duration_ms})})
