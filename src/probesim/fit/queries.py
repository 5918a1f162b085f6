"""The PromQL queries ``probesim fit`` runs, built from the metric names a cluster has.

Defaults follow what clusters expose (../shared/reference/telemetry.md): the app's request
histogram under OpenTelemetry's stable name (``http_server_request_duration_seconds``, labels
``http_route`` and ``http_response_status_code``), cAdvisor's CPU counter, kube-state-metrics'
ready and restart series. A mapping file renames any of them (a Prometheus client histogram
such as ``http_request_duration_seconds`` with ``handler`` and ``code``, or Istio's
``istio_request_duration_milliseconds``).
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
        default="http_route", alias="routeLabel", description="Its label naming the route."
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
    pod_label: str = Field(default="pod", alias="podLabel", description="The label naming the pod.")
    namespace_label: str = Field(
        default="namespace", alias="namespaceLabel", description="... the namespace."
    )
    container_label: str = Field(
        default="container", alias="containerLabel", description="... the container."
    )


def load_mapping(path: str | None) -> Mapping:
    """The mapping file's names (the defaults without one); a bad file is an InputError naming it."""
    if path is None:
        return Mapping()
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


def queries(m: Mapping, namespace: str, pods: str, container: str, window: str) -> dict[str, str]:
    """Each query fit runs, by the name its answer is saved under (``<name>.json``).

    ``pods`` is a regular expression of the workload's pod names (``web-.*``); ``window`` the
    rate window, several scrape intervals long (rate needs two samples inside it)."""
    sel = f'{m.namespace_label}="{namespace}",{m.pod_label}=~"{pods}"'
    app = sel  # the app's own series: scraped from its pods, labelled with them
    h, r, s = m.histogram, m.route_label, m.status_label
    return {
        "requests": f"sum by ({r}) (rate({h}_count{{{app}}}[{window}]))",
        "errors": f'sum by ({r}) (rate({h}_count{{{app},{s}=~"5.."}}[{window}]))',
        "latency_sum": f"sum by ({r}) (rate({h}_sum{{{app}}}[{window}]))",
        "buckets": f"sum by ({r}, le) (rate({h}_bucket{{{app}}}[{window}]))",
        "cpu": f'sum(rate({m.cpu}{{{sel},{m.container_label}="{container}"}}[{window}]))',
        "ready": f'sum({m.ready}{{{sel},condition="true"}})',
        "restarts": f'sum({m.restarts}{{{sel},{m.container_label}="{container}"}})',
        "pod_ready": f'{m.ready}{{{sel},condition="true"}}',
        "pod_started": f'{m.started}{{{sel},{m.container_label}="{container}"}}',
    }


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
}
