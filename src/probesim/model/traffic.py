"""A scenario's traffic: open-loop requests to a Service, as a constant rate, k6-like stages or
a series of rates, with spikes on top, and what the clients do (timeouts, k6's VUs and
gracefulStop, keep-alive, what a client meets without an endpoint, sidecars, headers)."""

# No `from __future__ import annotations` here (see model/scenario.py).
from typing import Annotated, Literal

from pydantic import Field, model_validator

from probesim.model.base import Model, SFloat, SInt
from probesim.model.duration import Duration

Rate = Annotated[SFloat, Field(ge=0, le=1e9)]


class Stage(Model):
    """Like a k6 ramping-arrival-rate stage: move linearly to ``target`` over ``duration``
    (0s: a step)."""

    duration: Duration
    target: Rate


class Spike(Model):
    """Extra requests per second for a while, on top of the base rate."""

    at: Duration
    for_: Duration = Field(alias="for")
    rate: Rate


class Traffic(Model):
    """Open-loop requests to a Service (arrivals do not wait for answers). The base rate is one
    of: ``rate`` (constant), ``stages`` (ramps and steps from ``startRate``; traffic ends with the
    last stage) or ``series`` (a CSV of ``seconds,rate`` rows, each rate held until the next row);
    ``spikes`` add to it."""

    name: str | None = Field(
        default=None,
        description="This traffic's name in the results (default: its path); each entry needs its own.",
    )
    service: str | None = Field(default=None, description="Service name; default: the only Service.")
    port: SInt | str | None = Field(
        default=None, description="Service port number or name; default: the first."
    )
    path: str = "/"
    rate: Rate | None = Field(default=None, description="Requests per second, constant.")
    start_rate: Rate = Field(default=0.0, description="Where stages start from.")
    stages: tuple[Stage, ...] = ()
    series: str | None = Field(default=None, description="CSV file (relative to the scenario): seconds,rate.")
    points: tuple[tuple[int, float], ...] = Field(
        default=(), description="Filled by probesim from 'series': (ms, rate) rows.", exclude=True
    )
    spikes: tuple[Spike, ...] = ()
    start: Duration = 0
    stop: Duration | None = None
    timeout: Duration | None = Field(
        default=60_000, description="Client timeout (k6's default 60s); null: wait forever."
    )
    graceful_stop: Duration = Field(
        default=30_000,
        description="Like k6's gracefulStop: requests still unanswered this long after 'stop' (or the "
        "last stage) are interrupted and counted as neither ok nor failed.",
    )
    clients: Annotated[SInt, Field(ge=1, le=1000)] = Field(
        default=1, description="Client pods, each with its own sidecar deciding alone (mesh routes)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="Request headers (for VirtualService matches)."
    )
    method: str = "GET"
    max_vus: Annotated[SInt, Field(ge=1)] | None = Field(
        default=None,
        alias="maxVUs",
        description="Like k6's constant-arrival-rate maxVUs: requests in flight at once; "
        "arrivals beyond are dropped iterations.",
    )
    pre_allocated_vus: Annotated[SInt, Field(ge=1)] | None = Field(
        default=None,
        alias="preAllocatedVUs",
        description="Like k6's preAllocatedVUs: the clients' connections when 'keepAlive' is on "
        "(more open as requests wait); default 1.",
    )
    keep_alive: bool = Field(
        default=False,
        alias="keepAlive",
        description="Clients reuse their connections (k6's and most HTTP clients' default). "
        "kube-proxy picks a pod per connection, not per request: a connection stays with its pod "
        "while the pod is NotReady, and requests spread over pods as the connections do. It closes "
        "when the container serving it stops, unless the pod has an Istio sidecar, which keeps it "
        "and answers 503 meanwhile. Off: every request is balanced on its own (round robin). "
        "Routes through client sidecars balance per request either way.",
    )
    no_endpoint: Literal["refused", "retransmit"] = Field(
        default="refused",
        alias="noEndpoint",
        description="What a client opening a connection meets when the Service has no Ready "
        "endpoint: 'refused' (kube-proxy's REJECT reaches it: the request fails at once) or "
        "'retransmit' (the rejection is lost on the way, as through some cloud load balancers: "
        "the client's TCP resends its SYN 1, 3, 7, 15, 31 and 63 s after the first, and the "
        "request goes on when an endpoint is back, or times out). Through client sidecars their "
        "Envoy answers 503 instead.",
    )

    @model_validator(mode="after")
    def _one_base_rate(self) -> "Traffic":
        given = [
            k
            for k, v in (("rate", self.rate is not None), ("stages", self.stages), ("series", self.series))
            if v
        ]
        if len(given) != 1:
            raise ValueError("give exactly one of 'rate', 'stages' or 'series'")
        if self.pre_allocated_vus and self.max_vus and self.pre_allocated_vus > self.max_vus:
            raise ValueError("'preAllocatedVUs' cannot be more than 'maxVUs' (as in k6)")
        return self

    @property
    def label(self) -> str:
        return self.name or self.path

    def end(self) -> int | None:
        """When arrivals stop (ms), if they do."""
        if self.stop is not None:
            return self.stop
        if self.stages:
            return self.start + sum(st.duration for st in self.stages)
        return None

    def rate_at(self, t: int) -> float:
        """Requests per second wanted at scenario time ``t`` (ms)."""
        if t < self.start or (self.stop is not None and t >= self.stop):
            return 0.0
        base = self._base(t - self.start)
        return base + sum(s.rate for s in self.spikes if s.at <= t < s.at + s.for_)

    def _base(self, t: int) -> float:
        if self.rate is not None:
            return self.rate
        if self.stages:
            begin, level = 0, self.start_rate
            for st in self.stages:
                if t < begin + st.duration:
                    return level + (st.target - level) * (t - begin) / st.duration
                begin, level = begin + st.duration, st.target
            return 0.0
        current = 0.0
        for ms, r in self.points:
            if ms > t:
                break
            current = r
        return current
