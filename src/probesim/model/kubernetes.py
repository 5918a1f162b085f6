"""Kubernetes objects as probesim reads them, with the API server's defaults applied.

Defaulting follows ``SetDefaults_Probe`` / ``SetDefaults_PodSpec`` / apps/v1 defaults
(reference/kubelet.md §1.1, §5.6): a field left out or set to 0 takes the default, so every
later layer sees explicit values. Cross-field validation the API server does (exactly one
handler, successThreshold 1 for liveness and startup, …) lives in ``probesim.manifests``, which
knows file and line.
"""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made (about 15 ms of `probesim run`'s start-up).
import re
from typing import Annotated, Literal, Protocol

from pydantic import (
    AfterValidator,
    Field,
    Strict,
    ValidationInfo,
    field_validator,
    model_validator,
)

from probesim.model.base import Int32, Model, NonNegInt32, OpenModel, SBool, SInt
from probesim.model.placement import Affinity, Toleration, TopologySpreadConstraint
from probesim.model.quantities import Bytes, Millicores
from probesim.model.selectors import LabelSelector

IntOrString = Annotated[SInt, Field(ge=0, le=65535)] | str


def _port_number_or_name(v: "int | str") -> "int | str":
    """A probe handler's port as ValidatePortNumOrName checks it: a number from 1 to 65535 (the API
    server refuses 0, which a Service's targetPort takes as "the port"), or a port name."""
    if isinstance(v, int) and not 1 <= v <= 65535:
        raise ValueError("must be a port number between 1 and 65535, inclusive, or a port name")
    return v


PortNumOrName = Annotated[SInt | str, AfterValidator(_port_number_or_name)]
ProbeType = Literal["startup", "readiness", "liveness"]
PROBE_TYPES: tuple[ProbeType, ...] = ("startup", "readiness", "liveness")  # in the kubelet's order


def _default_if_zero(default: int) -> classmethod:  # type: ignore[type-arg]
    def fill(cls: type, v: int) -> int:
        return default if v == 0 else v

    return classmethod(fill)


class HTTPHeader(Model):
    name: str
    value: str = ""  # the Go field decodes a missing value as "": the API server accepts it


class HTTPGetAction(Model):
    path: str = "/"
    port: PortNumOrName
    host: str | None = None
    scheme: Literal["HTTP", "HTTPS"] = "HTTP"
    http_headers: tuple[HTTPHeader, ...] = ()

    @field_validator("path")
    @classmethod
    def _root_if_empty(cls, v: str) -> str:
        return v or "/"


class TCPSocketAction(Model):
    port: PortNumOrName
    host: str | None = None


class ExecAction(Model):
    command: tuple[str, ...] = ()


class GRPCAction(Model):
    port: Annotated[SInt, Field(ge=1, le=65535)]
    service: str | None = None


class SleepAction(Model):
    seconds: Annotated[int, Strict(), Field(ge=-(2**63), le=2**63 - 1)]  # int64, range checked on load


class LifecycleHandler(Model):
    """A lifecycle hook's handler (``LifecycleHandler``): one of exec, httpGet, sleep (KEP-3960).
    tcpSocket is accepted, as the API server accepts it, but the kubelet cannot run it."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    sleep: SleepAction | None = None

    @property
    def kinds(self) -> list[str]:
        """The handler types given, as the manifest names them."""
        names = (("exec", self.exec), ("httpGet", self.http_get), ("sleep", self.sleep),
                 ("tcpSocket", self.tcp_socket))  # fmt: skip
        return [n for n, h in names if h is not None]


class Lifecycle(OpenModel):
    """A container's hooks: probesim runs ``preStop`` (postStart and stopSignal are not simulated)."""

    pre_stop: LifecycleHandler | None = None


# A probe's check, as a manifest names it: exactly one of them (the API server refuses two).
HANDLERS = ("httpGet", "tcpSocket", "exec", "grpc")


class Probe(Model):
    """A container probe; after validation every timing field holds its effective value."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: Int32 = 0
    timeout_seconds: Int32 = 1
    period_seconds: Int32 = 10
    success_threshold: Int32 = 1
    failure_threshold: Int32 = 3
    termination_grace_period_seconds: Int32 | None = None

    _t = field_validator("timeout_seconds")(_default_if_zero(1))
    _p = field_validator("period_seconds")(_default_if_zero(10))
    _s = field_validator("success_threshold")(_default_if_zero(1))
    _f = field_validator("failure_threshold")(_default_if_zero(3))

    @property
    def handler_kind(self) -> Literal["exec", "httpGet", "tcpSocket", "grpc"]:
        if self.http_get is not None:
            return "httpGet"
        if self.tcp_socket is not None:
            return "tcpSocket"
        if self.grpc is not None:
            return "grpc"
        return "exec"


class ContainerPort(OpenModel):
    container_port: Annotated[SInt, Field(ge=1, le=65535)]
    name: str | None = None
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class ResourceList(OpenModel):
    """The CPU (in millicores) and memory (in bytes) of a requests/limits map: CPU for the load
    model, both for where the scheduler can place a pod (others are not modelled)."""

    cpu: Millicores | None = None
    memory: Bytes | None = None


class Resources(OpenModel):
    requests: ResourceList = ResourceList()
    limits: ResourceList = ResourceList()


class Container(OpenModel):
    name: str
    image: str | None = None
    ports: tuple[ContainerPort, ...] = ()
    resources: Resources = Resources()
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    restart_policy: Literal["Always"] | None = None  # only on init containers (sidecars)
    lifecycle: Lifecycle | None = None

    @field_validator("name")
    @classmethod
    def _label(cls, v: str) -> str:
        """A container name is a DNS label, as the API server checks it (length first: the
        pattern never runs on a huge value)."""
        if not v or len(v) > 63 or not re.fullmatch(_DNS1123_LABEL, v):
            raise ValueError(
                "a container name must be a lowercase RFC 1123 label of at most 63 characters: a-z, "
                "0-9 and '-', starting and ending with a letter or digit"
            )
        return v

    def probe(self, kind: ProbeType) -> Probe | None:
        return {
            "startup": self.startup_probe,
            "readiness": self.readiness_probe,
            "liveness": self.liveness_probe,
        }[kind]

    def http_probe_paths(self) -> tuple[str, ...]:
        """The paths its httpGet probes request (without a query), each once, in probe order."""
        paths = [p.http_get.path.split("?", 1)[0] for k in PROBE_TYPES if (p := self.probe(k)) and p.http_get]
        return tuple(dict.fromkeys(paths))


class ReadinessGate(Model):
    condition_type: str


class PodSpec(OpenModel):
    containers: Annotated[tuple[Container, ...], Field(min_length=1)]
    init_containers: tuple[Container, ...] = ()
    restart_policy: Literal["Always", "OnFailure", "Never"] = "Always"
    termination_grace_period_seconds: Int32 = 30
    readiness_gates: tuple[ReadinessGate, ...] = ()
    # Where the scheduler may place the pod (kube/scheduling.py), read when the scenario gives
    # spec.cluster.nodes; nodeName binds it without the scheduler. (None when left out: a
    # template's dump, which names its ReplicaSet, stays what it was without them.)
    node_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: Affinity | None = None
    tolerations: tuple[Toleration, ...] | None = None
    topology_spread_constraints: tuple[TopologySpreadConstraint, ...] | None = None

    @field_validator("termination_grace_period_seconds")
    @classmethod
    def _at_least_one(cls, v: int) -> int:
        """A negative grace period is accepted, with a warning that it "will be treated as 1"
        (warningsForPodSpecAndMeta; podStrategy.CheckGracefulDelete makes it 1)."""
        return 1 if v < 0 else v


_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
GENERATED = "…"  # ends the name of an object that has generateName and no name


class OwnerReference(OpenModel):
    """What probesim reads of a metadata.ownerReferences item: whose controller the object is."""

    kind: str = ""
    name: str = ""
    controller: SBool = False


class ObjectMeta(OpenModel):
    """Names as the API server checks them: ``name`` a DNS-1123 subdomain (253 characters at
    most; a Service's a label of 63, checked by the loader, which knows the kind), ``namespace``
    a DNS-1123 label."""

    # Declared before name, which is checked with it. The API server names an object that has
    # generateName and no name by appending 5 random characters; probesim shows the prefix and
    # "…", as a reader of kubectl's output would recognise it (job-team-a-…).
    generate_name: str | None = None
    name: str
    namespace: str = "default"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _generated_name(cls, data: object) -> object:
        if isinstance(data, dict) and not data.get("name") and isinstance(data.get("generateName"), str):
            return {**data, "name": data["generateName"] + GENERATED}
        return data

    @field_validator("name")
    @classmethod
    def _subdomain(cls, v: str, info: ValidationInfo) -> str:
        prefix: str | None = info.data.get("generate_name")
        if prefix and v == prefix + GENERATED:
            # ValidateObjectMeta checks a generateName as a name prefix: a trailing '-' is allowed.
            v = prefix[:-1] + "a" if prefix.endswith("-") else prefix
            ObjectMeta._subdomain_of(v)
            return prefix + GENERATED
        return ObjectMeta._subdomain_of(v)

    @staticmethod
    def _subdomain_of(v: str) -> str:
        # Length first: the pattern is never run on a huge value.
        if not v or len(v) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(v):
            raise ValueError(
                "must be a lowercase RFC 1123 subdomain of at most 253 characters: a-z, 0-9, '-' "
                "and '.', starting and ending with a letter or digit"
            )
        return v

    @field_validator("namespace")
    @classmethod
    def _label(cls, v: str) -> str:
        if not v or len(v) > 63 or not re.fullmatch(_DNS1123_LABEL, v):
            raise ValueError(
                "must be a lowercase RFC 1123 label of at most 63 characters: a-z, 0-9 and '-', "
                "starting and ending with a letter or digit"
            )
        return v


class _HasMetadata(Protocol):
    @property
    def metadata(self) -> ObjectMeta: ...


class Named:
    """An API object's ``name``: its metadata's (a mixin, so that the models keep their own fields
    in their own order)."""

    @property
    def name(self: _HasMetadata) -> str:
        return self.metadata.name


class TemplateMeta(OpenModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class PodTemplate(OpenModel):
    metadata: TemplateMeta = TemplateMeta()
    spec: PodSpec


Percent = Annotated[str, Field(pattern=r"^[0-9]+%$")]


class RollingUpdate(OpenModel):
    max_surge: Annotated[SInt, Field(ge=0)] | Percent = "25%"
    max_unavailable: Annotated[SInt, Field(ge=0)] | Percent = "25%"


class DeploymentStrategy(OpenModel):
    type: Literal["RollingUpdate", "Recreate"] = "RollingUpdate"
    rolling_update: RollingUpdate | None = None


class StatefulSetRollingUpdate(OpenModel):
    partition: NonNegInt32 = 0
    max_unavailable: Annotated[SInt, Field(ge=1)] | Percent | None = None


class StatefulSetUpdateStrategy(OpenModel):
    type: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    rolling_update: StatefulSetRollingUpdate | None = None


class WorkloadSpec(OpenModel):
    """The fields of Deployment, ReplicaSet and StatefulSet specs that probesim reads."""

    replicas: NonNegInt32 = 1
    min_ready_seconds: NonNegInt32 = 0
    selector: LabelSelector | None = None
    template: PodTemplate
    strategy: DeploymentStrategy | None = None
    pod_management_policy: Literal["OrderedReady", "Parallel"] | None = None
    paused: SBool = False
    progress_deadline_seconds: NonNegInt32 | None = None
    revision_history_limit: NonNegInt32 | None = None
    update_strategy: StatefulSetUpdateStrategy | None = None


class Workload(OpenModel, Named):
    """An object with a pod template, seen as a set of identical pods: a Deployment, ReplicaSet,
    ReplicationController, StatefulSet or bare Pod; a DaemonSet (one node's pod), a Job or
    CronJob (its parallelism), an Argo Rollout, a Knative Service or another custom resource
    with a pod template for the rules — the engine simulates the first five. Which kinds are
    read, and from which API groups, is the manifest loader's (manifests/kubernetes.py)."""

    kind: str
    metadata: ObjectMeta
    spec: WorkloadSpec

    @model_validator(mode="after")
    def _apps_defaults(self) -> "Workload":
        """apps/v1 defaulting (``SetDefaults_Deployment``, ``SetDefaults_StatefulSet``): a
        Deployment's strategy is RollingUpdate 25 % / 25 %, progressDeadlineSeconds 600 and
        revisionHistoryLimit 10; a StatefulSet's pod management policy is OrderedReady, its
        update strategy RollingUpdate with partition 0, revisionHistoryLimit 10."""
        spec = self.spec
        history = {"revision_history_limit": 10} if spec.revision_history_limit is None else {}
        if self.kind == "Deployment":
            strategy = spec.strategy or DeploymentStrategy()
            if strategy.type == "RollingUpdate" and strategy.rolling_update is None:
                strategy = strategy.model_copy(update={"rolling_update": RollingUpdate()})
            deadline = 600 if spec.progress_deadline_seconds is None else spec.progress_deadline_seconds
            spec = spec.model_copy(
                update={"strategy": strategy, "progress_deadline_seconds": deadline, **history}
            )
        elif self.kind == "StatefulSet":
            update = spec.update_strategy or StatefulSetUpdateStrategy()
            if update.type == "RollingUpdate" and update.rolling_update is None:
                update = update.model_copy(update={"rolling_update": StatefulSetRollingUpdate()})
            policy = spec.pod_management_policy or "OrderedReady"
            spec = spec.model_copy(
                update={"pod_management_policy": policy, "update_strategy": update, **history}
            )
        object.__setattr__(self, "spec", spec)
        return self

    @property
    def pod_spec(self) -> PodSpec:
        return self.spec.template.spec

    @property
    def pod_labels(self) -> dict[str, str]:
        return self.spec.template.metadata.labels


class ServicePort(OpenModel):
    name: str | None = None
    port: Annotated[SInt, Field(ge=1, le=65535)]
    target_port: IntOrString | None = None
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"
    app_protocol: str | None = None  # what the port speaks (grpc, http, kubernetes.io/h2c)

    @property
    def effective_target(self) -> int | str:
        """The pod port traffic goes to: ``targetPort``, or ``port`` when it is left out, 0 or ""
        (as the API server defaults it)."""
        t = self.target_port
        return self.port if t is None or t == 0 or t == "" else t


class ServiceSpec(OpenModel):
    selector: dict[str, str] = Field(default_factory=dict)
    ports: tuple[ServicePort, ...] = ()
    publish_not_ready_addresses: SBool = False
    type: Literal["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"] = "ClusterIP"
    cluster_ip: str | None = Field(default=None, alias="clusterIP")
    cluster_ips: tuple[str, ...] = Field(default=(), alias="clusterIPs")

    @property
    def headless(self) -> bool:
        """clusterIP None: DNS names the pods, no port is proxied."""
        ip = self.cluster_ips[0] if self.cluster_ips else self.cluster_ip
        return self.type == "ClusterIP" and ip == "None"


class Service(OpenModel, Named):
    kind: Literal["Service"] = "Service"
    metadata: ObjectMeta
    spec: ServiceSpec


def pod_names_of(w: Workload) -> list[str]:
    """The names probesim gives a workload's pods: ``<name>-<ordinal>`` (a bare Pod keeps its own)."""
    if w.kind == "Pod":
        return [w.name]
    return [f"{w.name}-{i}" for i in range(w.spec.replicas)]


class ScaleTargetRef(OpenModel):
    api_version: str | None = None
    kind: str
    name: str


class HPAPolicy(OpenModel):
    type: Literal["Pods", "Percent"]
    value: Annotated[SInt, Field(ge=1)]
    period_seconds: Annotated[SInt, Field(ge=1, le=1800)]


class HPAScalingRules(OpenModel):
    stabilization_window_seconds: Annotated[SInt, Field(ge=0, le=3600)] | None = None
    select_policy: Literal["Max", "Min", "Disabled"] = "Max"
    policies: tuple[HPAPolicy, ...] = ()
    tolerance: Millicores | None = None  # a Quantity; kept in milli-units (0.1 → 100)


class HPABehavior(OpenModel):
    scale_up: HPAScalingRules | None = None
    scale_down: HPAScalingRules | None = None


class HPAMetricTarget(OpenModel):
    type: Literal["Utilization", "AverageValue", "Value"]
    average_utilization: Annotated[SInt, Field(ge=1)] | None = None


class HPAResourceMetric(OpenModel):
    name: str
    target: HPAMetricTarget


class HPAMetric(OpenModel):
    type: Literal["Resource", "Pods", "Object", "External", "ContainerResource"]
    resource: HPAResourceMetric | None = None


class HPASpec(OpenModel):
    scale_target_ref: ScaleTargetRef
    min_replicas: Annotated[SInt, Field(ge=1)] = 1
    max_replicas: Annotated[SInt, Field(ge=1)]
    metrics: tuple[HPAMetric, ...] = ()
    behavior: HPABehavior | None = None
    target_cpu_utilization_percentage: Annotated[SInt, Field(ge=1)] | None = None  # autoscaling/v1


class HorizontalPodAutoscaler(OpenModel, Named):
    """autoscaling/v2 (or v1) HPA scaling on CPU utilization, with API defaults applied."""

    kind: Literal["HorizontalPodAutoscaler"] = "HorizontalPodAutoscaler"
    metadata: ObjectMeta
    spec: HPASpec

    @property
    def target_utilization(self) -> int:
        """The CPU utilization target in percent (v2 metrics or v1's field; 80 when neither)."""
        for m in self.spec.metrics:
            if m.resource is not None and m.resource.target.average_utilization is not None:
                return m.resource.target.average_utilization
        return self.spec.target_cpu_utilization_percentage or 80

    @property
    def scale_up(self) -> HPAScalingRules | None:
        """Scale-up rules with the API defaults filled in (None: the legacy path, §6.8-6.9)."""
        b = self.spec.behavior
        if b is None:
            return None
        pods, percent = (
            HPAPolicy(type="Pods", value=4, periodSeconds=15),
            HPAPolicy(type="Percent", value=100, periodSeconds=15),
        )
        return _with_defaults(b.scale_up, 0, (pods, percent))

    @property
    def scale_down(self) -> HPAScalingRules | None:
        """Scale-down rules with the API defaults filled in (None: the legacy path)."""
        b = self.spec.behavior
        if b is None:
            return None
        return _with_defaults(b.scale_down, 300, (HPAPolicy(type="Percent", value=100, periodSeconds=15),))


def _with_defaults(
    r: HPAScalingRules | None, window_s: int, policies: tuple[HPAPolicy, ...]
) -> HPAScalingRules:
    r = r or HPAScalingRules()
    window = window_s if r.stabilization_window_seconds is None else r.stabilization_window_seconds
    return r.model_copy(update={"stabilization_window_seconds": window, "policies": r.policies or policies})


class ScaledObjectTarget(OpenModel):
    api_version: str | None = None
    kind: str = "Deployment"  # KEDA's default
    name: str


class ScaledObjectSpec(OpenModel):
    scale_target_ref: ScaledObjectTarget
    min_replica_count: NonNegInt32 = 0  # KEDA scales the target to zero when idle
    max_replica_count: NonNegInt32 = 100


class ScaledObject(OpenModel, Named):
    """A KEDA ScaledObject (keda.sh/v1alpha1): the scaler of its target, as an HPA is (KEDA makes
    an HPA for it, and scales between 0 and 1 itself), with KEDA's defaults applied."""

    kind: Literal["ScaledObject"] = "ScaledObject"
    metadata: ObjectMeta
    spec: ScaledObjectSpec
