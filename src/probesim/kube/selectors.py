"""Which pods a Service sends to, as Kubernetes decides it: a Service's selector (a plain
label map, AND of its pairs) matches a pod's labels; a Service without a selector selects no
pod (its endpoints are managed by hand), and only pods of its own namespace."""

from __future__ import annotations

from probesim.model.kubernetes import Service, Workload


def service_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """Whether a Service ``selector`` matches a pod's ``labels`` (an empty one matches none)."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def selects(s: Service, w: Workload) -> bool:
    """Whether Service ``s`` selects ``w``'s pods: the same namespace, and its selector matches."""
    return s.metadata.namespace == w.metadata.namespace and service_matches(s.spec.selector, w.pod_labels)
