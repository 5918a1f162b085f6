"""The PromQL queries ``probesim fit`` runs, built from the metric names a cluster has.

Defaults follow what clusters expose (../shared/reference/telemetry.md): the app's request
histogram under OpenTelemetry's stable name (``http_server_request_duration_seconds``, labels
``http_route`` and ``http_response_status_code``), cAdvisor's CPU counter, kube-state-metrics'
ready, restart and Deployment replica series, cAdvisor's CFS throttling counters, the kubelet's
prober counter and duration histogram. A mapping file renames any of them (a
Prometheus client histogram such as ``http_request_duration_seconds`` with ``handler`` and
``code``); ``--mapping istio`` reads Istio's ``istio_requests_total`` and
``istio_request_duration_milliseconds`` as the server sidecars report them (one route: Istio's
metrics have no path label).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from probesim.errors import InputError


class Mapping(BaseModel):
    """Which series hold what (a ``--mapping`` YAML file sets any of these)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    histogram: str = Field(
        default="http_server_request_duration_seconds",
        description="The app's request-duration histogram (its _bucket, _sum and _count series).",
    )
    unit: Literal["seconds", "milliseconds"] = Field(default="seconds", description="The histogram's unit.")
    route_label: str = Field(
        default="http_route",
        alias="routeLabel",
        description="Its label naming the route ('': none, all requests one route).",
    )
    requests_counter: str = Field(
        default="",
        alias="requestsCounter",
        description="A request counter to count requests and errors by ('': the histogram's _count), "
        "with the histogram's route and status labels.",
    )
    filter: str = Field(
        default="",
        description="More label matchers for the app's series, as PromQL writes them "
        '(Istio: reporter="destination", each request once, as its server\'s sidecar saw it).',
    )
    status_label: str = Field(
        default="http_response_status_code", alias="statusLabel", description="Its label holding the status."
    )
    cpu: str = Field(default="container_cpu_usage_seconds_total", description="CPU seconds used (a counter).")
    ready: str = Field(default="kube_pod_status_ready", description="Pod Ready condition (condition label).")
    restarts: str = Field(
        default="kube_pod_container_status_restarts_total", description="Container restarts (a counter)."
    )
    started: str = Field(
        default="kube_pod_container_state_started", description="When each container started (Unix s)."
    )
    probes: str = Field(
        default="prober_probe_total", description="The kubelet's probe results (probe_type, result)."
    )
    replicas_ready: str = Field(
        default="kube_deployment_status_replicas_ready",
        alias="replicasReady",
        description="The Deployment's Ready replicas (kube-state-metrics).",
    )
    replicas: str = Field(
        default="kube_deployment_status_replicas", description="The Deployment's pods (status.replicas)."
    )
    replicas_available: str = Field(
        default="kube_deployment_status_replicas_available",
        alias="replicasAvailable",
        description="Its available pods (Ready for minReadySeconds).",
    )
    replicas_unavailable: str = Field(
        default="kube_deployment_status_replicas_unavailable",
        alias="replicasUnavailable",
        description="Its unavailable pods (status.unavailableReplicas).",
    )
    spec_replicas: str = Field(
        default="kube_deployment_spec_replicas",
        alias="specReplicas",
        description="The replicas it asks for (spec.replicas: the HPA's choice under one).",
    )
    probe_duration: str = Field(
        default="prober_probe_duration_seconds",
        alias="probeDuration",
        description="The kubelet's probe durations, a histogram in seconds (probe_type).",
    )
    cfs_periods: str = Field(
        default="container_cpu_cfs_periods_total",
        alias="cfsPeriods",
        description="cAdvisor's CFS enforcement periods the container ran in (a counter).",
    )
    cfs_throttled_periods: str = Field(
        default="container_cpu_cfs_throttled_periods_total",
        alias="cfsThrottledPeriods",
        description="cAdvisor's CFS periods in which the container used up its CPU limit (a counter).",
    )
    ejections: str = Field(
        default="envoy_cluster_outlier_detection_ejections_enforced_total",
        description="Envoy's outlier ejections enforced, per upstream cluster (a counter, from the "
        "callers' sidecars: Istio exports it once proxyStatsMatcher includes outlier_detection).",
    )
    cluster_label: str = Field(
        default="cluster_name",
        alias="clusterLabel",
        description="Its label naming the cluster (Istio's; plain Envoy's is envoy_cluster_name).",
    )
    deployment_label: str = Field(
        default="deployment", alias="deploymentLabel", description="Its label naming the Deployment."
    )
    pod_label: str = Field(default="pod", alias="podLabel", description="The label naming the pod.")
    namespace_label: str = Field(
        default="namespace", alias="namespaceLabel", description="... the namespace."
    )
    container_label: str = Field(
        default="container", alias="containerLabel", description="... the container."
    )


PRESETS = {
    # Istio's standard metrics (telemetry.md §4.1): the server sidecar's duration histogram, in
    # ms; its status in response_code; no path label.
    "istio": Mapping(
        histogram="istio_request_duration_milliseconds",
        unit="milliseconds",
        route_label="",
        status_label="response_code",
        requests_counter="istio_requests_total",
        filter='reporter="destination"',
    ),
}


def load_mapping(path: str | None) -> Mapping:
    """The mapping file's names (the defaults without one; a preset's by its name when no such
    file exists); a bad file is an InputError naming it."""
    if path is None:
        return Mapping()
    if path in PRESETS and not Path(path).exists():
        return PRESETS[path]
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read the mapping file: {e.strerror}", file=path) from None
    except yaml.YAMLError as e:
        raise InputError(f"not YAML: {e}", file=path) from None
    try:
        return Mapping.model_validate(data or {})
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        allowed = ", ".join(f.alias or n for n, f in Mapping.model_fields.items())
        raise InputError(f"{first['msg']} (fields: {allowed})", file=path, field=where or None) from None


def queries(
    m: Mapping,
    namespace: str,
    pods: str,
    container: str,
    window: str,
    workload: str | None = None,
    service: str | None = None,
) -> dict[str, str]:
    """Each query fit runs, by the name its answer is saved under (``<name>.json``).

    ``pods`` is a regular expression of the workload's pod names (``web-.*``); ``window`` the
    rate window, several scrape intervals long (rate needs two samples inside it); ``workload``
    the Deployment's name, for its replicas; ``service`` the Service in front of it, for the
    outlier ejections of its Envoy clusters (``outbound|<port>|<subset>|<service>.<namespace>.svc…``)."""
    sel = f'{m.namespace_label}="{namespace}",{m.pod_label}=~"{pods}"'
    app = sel + (f",{m.filter}" if m.filter else "")  # the app's own series, scraped from its pods
    ctr = f'{sel},{m.container_label}="{container}"'
    h, r, s = m.histogram, m.route_label, m.status_label
    by, by_le = (f" by ({r}) ", f" by ({r}, le) ") if r else ("", " by (le) ")
    count = m.requests_counter or f"{h}_count"
    out = {
        "requests": f"sum{by}(rate({count}{{{app}}}[{window}]))",
        "errors": f'sum{by}(rate({count}{{{app},{s}=~"5.."}}[{window}]))',
        "latency_sum": f"sum{by}(rate({h}_sum{{{app}}}[{window}]))",
        "buckets": f"sum{by_le}(rate({h}_bucket{{{app}}}[{window}]))",
        "cpu": f"sum(rate({m.cpu}{{{ctr}}}[{window}]))",
        "ready": f'sum({m.ready}{{{sel},condition="true"}})',
        "restarts": f"sum({m.restarts}{{{ctr}}})",
        "pod_ready": f'{m.ready}{{{sel},condition="true"}}',
        "pod_started": f"{m.started}{{{ctr}}}",
        "probes": f"sum by (probe_type, result) ({m.probes}{{{ctr}}})",
        "probe_seconds": f"sum by (probe_type) (rate({m.probe_duration}_sum{{{ctr}}}[{window}]))",
        "probe_runs": f"sum by (probe_type) (rate({m.probe_duration}_count{{{ctr}}}[{window}]))",
        "cfs_periods": f"sum(rate({m.cfs_periods}{{{ctr}}}[{window}]))",
        "throttled_periods": f"sum(rate({m.cfs_throttled_periods}{{{ctr}}}[{window}]))",
    }
    if workload is not None:
        dep = f'{m.namespace_label}="{namespace}",{m.deployment_label}="{workload}"'
        out["replicas_ready"] = f"sum({m.replicas_ready}{{{dep}}})"
        out["replicas"] = f"sum({m.replicas}{{{dep}}})"
        out["replicas_available"] = f"sum({m.replicas_available}{{{dep}}})"
        out["replicas_unavailable"] = f"sum({m.replicas_unavailable}{{{dep}}})"
        out["replicas_desired"] = f"sum({m.spec_replicas}{{{dep}}})"
    if service is not None:
        # A PromQL string: each regex backslash doubled.
        clusters = rf"outbound\\|[0-9]+\\|[^|]*\\|{service}\\.{namespace}\\.svc\\..*"
        out["ejections"] = f'sum({m.ejections}{{{m.cluster_label}=~"{clusters}"}})'
    return out


# What each answer is for, as --print-queries and docs/fit.md say it.
PURPOSE = {
    "requests": "requests per second by route: the traffic, and with cpu the CPU per request",
    "errors": "5xx answers per second by route: the error rate of each path",
    "latency_sum": "seconds spent answering per second by route: with requests, the mean latency",
    "buckets": "the latency histogram's buckets by route: the spread of service times",
    "cpu": "CPU cores the app's containers use: with requests, the CPU per request",
    "ready": "Ready pods: compared with the simulation's (--compare)",
    "restarts": "container restarts: compared with the simulation's (--compare)",
    "pod_ready": "each pod's Ready condition over time: with pod_started, when the app first answered",
    "pod_started": "when each pod's container started: with pod_ready, the app's start",
    "probes": "the kubelet's probe results by probe type: failures beside the simulation's (--compare)",
    "replicas_ready": "the Deployment's Ready replicas: the ready pods when the pod series are missing",
    "probe_seconds": "seconds the kubelet's probes took per second by probe type: with probe_runs, "
    "their mean duration, the wait of the probes' paths",
    "probe_runs": "probe runs timed per second by probe type (successes and unknowns)",
    "cfs_periods": "CFS periods per second the container ran in: with throttled_periods, its throttled share",
    "throttled_periods": "CFS periods per second the container was throttled in (its CPU limit used up)",
    "replicas": "the Deployment's pods: compared with the simulation's (--compare)",
    "replicas_available": "its available pods: compared with the simulation's (--compare)",
    "replicas_unavailable": "its unavailable pods: compared with the simulation's (--compare)",
    "ejections": "outlier ejections of the Service's pods by its callers' Envoys: compared with "
    "the simulation's (--compare)",
    "replicas_desired": "the replicas it asks for (the HPA's choice under one): compared with the "
    "simulation's (--compare)",
}
