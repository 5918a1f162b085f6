"""The probe policy: what experienced SREs recommend for probes (the public guidance gathered in
the project's reference, each principle with its sources), as one set of checks that check's
rules and fixes and the tuner apply alike. ``broken`` says which principles a container's probe
settings break, given what the app is (its profile) and whether a Service sends it traffic; the
fixes are tested never to break a principle the original kept.

Where the sources disagree the principle says which way probesim goes and why (``stance``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from probesim.model.kubernetes import ProbeType

if TYPE_CHECKING:
    from probesim.profiles import Resolved


class Timing(Protocol):
    """A probe's timing as the policy reads it (rules/timing.py's Timing is one)."""

    @property
    def period(self) -> int: ...
    @property
    def timeout(self) -> int: ...
    @property
    def failure(self) -> int: ...
    @property
    def delay(self) -> int: ...
    @property
    def budget(self) -> int: ...


@dataclass(frozen=True)
class Principle:
    id: str
    title: str
    sources: str
    stance: str = ""  # where the sources disagree: which way probesim goes, and why
    broken_as: str = ""  # what breaking it does, in a few words ("one slow answer takes the pod out")


PRINCIPLES: dict[str, Principle] = {
    p.id: p
    for p in (
        Principle(
            "readiness-on-serving",
            "Readiness on every container a Service sends traffic to; none on containers that serve "
            "nothing (workers, metrics-only sidecars).",
            "Kubernetes 'Pod Lifecycle'; Henning Jacobs; kube-score; Google Cloud, AWS EKS and AKS "
            "best practices",
            broken_as="the Service would send requests to a pod before it can serve",
        ),
        Principle(
            "liveness-only-where-restart-cures",
            "Liveness only where a restart cures something, and never through a dependency.",
            "Spring Boot reference; AWS EKS best practices; Henning Jacobs; ASP.NET Core health checks",
            stance="Polaris, Checkov and the AKS checklist want liveness on every server; Zalando's "
            "and kube-score's guidance only when needed. probesim never asks for a liveness probe "
            "that is missing, and judges the one that is there.",
        ),
        Principle(
            "startup-not-initial-delay",
            "A startup probe, not a long initialDelaySeconds, for a slow or variable start; with a "
            "startup probe liveness needs no initial delay (at most 10 s).",
            "Kubernetes 'Configure Liveness, Readiness and Startup Probes'; kube-score; AWS EKS",
            broken_as="liveness would wait out a long initial delay instead of a startup probe",
        ),
        Principle(
            "liveness-more-tolerant",
            "Liveness is more tolerant than readiness: its failure budget (period × failureThreshold) "
            "is larger, so a struggling pod leaves rotation before it is killed.",
            "Kubernetes probe docs; Henning Jacobs; ingress-nginx#5671; sentry charts#307",
            stance="kube-score says probes must never be identical; its users dispute it (#339, #296). "
            "probesim accepts identical checks when liveness's budget is larger.",
            broken_as="liveness would give up no later than readiness",
        ),
        Principle(
            "liveness-rides-out-pauses",
            "Liveness never restarts on a single miss (failureThreshold ≥ 3), and its window outlasts "
            "the app's worst pause.",
            "gardener and other incidents (failureThreshold 1 → CrashLoopBackOff)",
            broken_as="a missed check or a pause would restart the container",
        ),
        Principle(
            "liveness-not-too-often",
            "Liveness every 5 s or slower: probing it every second or two buys noise, not safety "
            "(sub-second reaction belongs to readiness, the load balancer or the mesh).",
            "Kubernetes probe docs; Dapr's probe settings",
            broken_as="liveness would be probed more often than every 5 s (noise, not safety)",
        ),
        Principle(
            "timeout-below-period",
            "A probe's timeout stays below its period.",
            "OpenShift health checks; etcd exec liveness incident (183 restarts)",
            broken_as="a probe's timeout would reach its period",
        ),
        Principle(
            "readiness-does-not-flap",
            "Readiness does not flip on one slow answer: failureThreshold ≥ 2.",
            "Kubernetes probe docs; Henning Jacobs; kube-score",
            stance="some guides accept failureThreshold 1; probesim asks for 2, since an emptied "
            "Service refuses connections.",
            broken_as="one slow answer would take the pod out of the Service",
        ),
        Principle(
            "readiness-pod-local",
            "Readiness checks what this pod needs to serve, not a dependency every replica shares.",
            "Henning Jacobs; AWS EKS best practices; Colin Breck vs Kubernetes probe docs, ASP.NET Core",
            stance="contested: some want a pod that cannot reach its database out of rotation. probesim "
            "sides with pod-local readiness, since a blip of a dependency every replica shares takes "
            "them all out at once and the Service refuses even the requests that never needed it.",
            broken_as="a shared dependency's blip would take every replica out of the Service",
        ),
        Principle(
            "handler-fits-protocol",
            "The handler fits the protocol: httpGet for HTTP, grpc for gRPC health, the client or "
            "tcpSocket for binary protocols — never httpGet on a database's port.",
            "Kubernetes probe docs; Bitnami charts; Colin Breck",
        ),
    )
}

# Above this a liveness initialDelaySeconds blinds liveness to a deadlock after every start: the
# work of a startup probe (judgement, from the guidance's 0-10 s).
MAX_LIVENESS_DELAY_S = 10
LIVENESS_PERIOD_S = 5  # the least liveness period (the guidance: 5-30 s)


def more_tolerant(live: Timing, ready: Timing) -> bool:
    """Liveness gives a failing pod more time than readiness does (principle 4)."""
    return live.budget > ready.budget


def broken(
    timings: Mapping[ProbeType, Timing],
    serves: bool,
    profile: Resolved | None = None,
    liveness_path: str | None = None,
) -> set[str]:
    """The principles a container's probes break: ``timings`` its probes, ``serves`` whether a
    Service sends it traffic, ``profile`` what the app is (its worst pause, the paths that check
    a dependency), ``liveness_path`` the HTTP path liveness probes."""
    out: set[str] = set()
    if liveness_path is not None and profile is not None and profile.path_reaches_dependency(liveness_path):
        out.add("liveness-only-where-restart-cures")
    live, ready, start = timings.get("liveness"), timings.get("readiness"), timings.get("startup")
    if serves and ready is None:
        out.add("readiness-on-serving")
    if live is not None:
        if live.failure < 3:
            out.add("liveness-rides-out-pauses")
        pause_s = (profile.pause_ms / 1000) if profile is not None else 0.0
        if live.budget <= pause_s:
            out.add("liveness-rides-out-pauses")
        if ready is not None and not more_tolerant(live, ready):
            out.add("liveness-more-tolerant")
        if live.delay > MAX_LIVENESS_DELAY_S:
            out.add("startup-not-initial-delay")
        if live.period < LIVENESS_PERIOD_S:
            out.add("liveness-not-too-often")
    if ready is not None and ready.failure < 2:
        out.add("readiness-does-not-flap")
    for p in (live, ready, start):
        if p is not None and p.timeout >= p.period:
            out.add("timeout-below-period")
    return out
