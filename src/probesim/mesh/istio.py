"""Istio networking objects probesim reads: DestinationRule (trafficPolicy, subsets) and
VirtualService (http routes), with Istio's validation of the fields it translates
(reference/envoy-istio.md §4-§5)."""

# No `from __future__ import annotations` here: pydantic would then compile and evaluate every
# field's annotation string when the class is made (about 15 ms of `probesim run`'s start-up).
import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from probesim.model.base import OpenModel, SBool, SFloat, SInt
from probesim.model.duration import parse_ms

IstioDuration = Annotated[str, Field(pattern=r"^(\d+(\.\d+)?(ms|s|m|h))+$")]
Percent = Annotated[SFloat, Field(ge=0, le=100)]


def ms(value: str | None) -> int | None:
    return None if value is None else parse_ms(value)


class OutlierDetection(OpenModel):
    consecutive_5xx_errors: Annotated[SInt, Field(ge=0)] | None = Field(
        default=None, alias="consecutive5xxErrors"
    )
    consecutive_gateway_errors: Annotated[SInt, Field(ge=0)] | None = None
    consecutive_local_origin_failures: Annotated[SInt, Field(ge=0)] | None = None
    split_external_local_origin_errors: SBool = False
    interval: IstioDuration | None = None
    base_ejection_time: IstioDuration | None = None
    max_ejection_percent: Annotated[SInt, Field(ge=0, le=100)] | None = None
    min_health_percent: Annotated[SInt, Field(ge=0, le=100)] | None = None

    @model_validator(mode="after")
    def _istio_validation(self) -> "OutlierDetection":
        if self.consecutive_local_origin_failures and not self.split_external_local_origin_errors:
            raise ValueError("consecutiveLocalOriginFailures needs splitExternalLocalOriginErrors: true")
        for name in ("interval", "base_ejection_time"):
            v = getattr(self, name)
            if v is not None and parse_ms(v) < 1:
                raise ValueError(f"{name} must be at least 1ms")
        return self


class LoadBalancer(OpenModel):
    simple: (
        Literal["UNSPECIFIED", "LEAST_CONN", "RANDOM", "PASSTHROUGH", "ROUND_ROBIN", "LEAST_REQUEST"] | None
    ) = None


class TrafficPolicy(OpenModel):
    outlier_detection: OutlierDetection | None = None
    load_balancer: LoadBalancer | None = None
    connection_pool: dict[str, Any] | None = None


class Subset(OpenModel):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    traffic_policy: TrafficPolicy | None = None


class DestinationRuleSpec(OpenModel):
    host: str
    traffic_policy: TrafficPolicy | None = None
    subsets: tuple[Subset, ...] = ()


class Meta(OpenModel):
    name: str
    namespace: str = "default"


class DestinationRule(OpenModel):
    kind: Literal["DestinationRule"] = "DestinationRule"
    metadata: Meta
    spec: DestinationRuleSpec


class StringMatch(OpenModel):
    exact: str | None = None
    prefix: str | None = None
    regex: str | None = None


class HTTPMatch(OpenModel):
    uri: StringMatch | None = None
    method: StringMatch | None = None
    headers: dict[str, StringMatch] = Field(default_factory=dict)
    without_headers: dict[str, StringMatch] = Field(default_factory=dict)


class PortSelector(OpenModel):
    number: Annotated[SInt, Field(ge=1, le=65535)]


class Destination(OpenModel):
    host: str
    subset: str | None = None
    port: PortSelector | None = None


class RouteDestination(OpenModel):
    destination: Destination
    weight: Annotated[SInt, Field(ge=0)] | None = None


class PercentValue(OpenModel):
    value: Percent


class Delay(OpenModel):
    fixed_delay: IstioDuration
    percentage: PercentValue | None = None


class Abort(OpenModel):
    http_status: Annotated[SInt, Field(ge=200, le=600)]
    percentage: PercentValue | None = None


class Fault(OpenModel):
    delay: Delay | None = None
    abort: Abort | None = None


class MirrorPolicy(OpenModel):
    destination: Destination
    percentage: PercentValue | None = None


class Retries(OpenModel):
    attempts: SInt = 0
    per_try_timeout: IstioDuration | None = None
    retry_on: str | None = None
    retry_ignore_previous_hosts: SBool | None = None
    backoff: IstioDuration | None = None


class HTTPRoute(OpenModel):
    name: str | None = None
    match: tuple[HTTPMatch, ...] = ()
    route: tuple[RouteDestination, ...] = ()
    timeout: IstioDuration | None = None
    retries: Retries | None = None
    fault: Fault | None = None
    mirror: Destination | None = None
    mirror_percentage: PercentValue | None = None
    mirrors: tuple[MirrorPolicy, ...] = ()

    @model_validator(mode="after")
    def _istio_validation(self) -> "HTTPRoute":
        if self.mirror is not None and self.mirrors:
            raise ValueError("mirror and mirrors cannot both be set")
        if not self.route:
            raise ValueError("an http route needs at least one route destination")
        return self


class VirtualServiceSpec(OpenModel):
    hosts: tuple[str, ...] = ()
    http: tuple[HTTPRoute, ...] = ()


class VirtualService(OpenModel):
    kind: Literal["VirtualService"] = "VirtualService"
    metadata: Meta
    spec: VirtualServiceSpec


def find_route(
    vs: list[VirtualService], host: str, path: str, headers: dict[str, str], method: str
) -> HTTPRoute | None:
    """The first VirtualService http route matching a request (§5.2), if any."""
    for v in vs:
        if not any(h.split(".")[0] == host for h in v.spec.hosts):
            continue
        for r in v.spec.http:
            if not r.match:
                return r
            for m in r.match:
                if _matches(m, path, headers, method):
                    return r
    return None


def _sm(sm: StringMatch, value: str | None) -> bool:
    if value is None:
        return False
    if sm.exact is not None:
        return value == sm.exact
    if sm.prefix is not None:
        return value.startswith(sm.prefix)
    if sm.regex is not None:
        return re.fullmatch(sm.regex, value) is not None
    return True  # an empty match: the header is present


def _matches(m: HTTPMatch, path: str, headers: dict[str, str], method: str) -> bool:
    if m.uri is not None and not _sm(m.uri, path):
        return False
    if m.method is not None and not _sm(m.method, method):
        return False
    if any(not _sm(sm, headers.get(name)) for name, sm in m.headers.items()):
        return False
    return all(not _sm(sm, headers.get(name)) for name, sm in m.without_headers.items())
