"""Which of a Service's pods are its ready endpoints, as the EndpointSlice controller decides
(reference/kubelet.md §4.8): a pod Ready and not terminating; every listed pod when the Service
publishes not-ready addresses. And which of them kube-proxy sends a connection to: the ready
ones, or, when there is none, those serving and terminating. Elementwise over arrays (the
engine) or for one pod (the lab)."""

from __future__ import annotations

from typing import Any

import numpy as np


def endpoint_ready(ready: Any, deleting: Any, publish_not_ready: bool, listed: Any) -> Any:
    """The EndpointSlice ``ready`` condition of pods the Service lists (``listed``): Ready and
    not being deleted, or, with ``publishNotReadyAddresses``, every listed pod."""
    if publish_not_ready:
        return listed
    return np.logical_and(ready, np.logical_not(deleting))


def kube_proxy_targets(ready: Any, serving_terminating: Any) -> Any:
    """The endpoints kube-proxy balances a Service's connections over, of one Service's
    endpoints (``ready``: their EndpointSlice ready condition; ``serving_terminating``: serving
    and terminating). kube-proxy's ``CategorizeEndpoints`` (pkg/proxy/topology.go) takes the
    ready endpoints, and "if there are 0 cluster-wide endpoints", falls back to those that are
    serving and terminating, so a Service whose every pod is being deleted still reaches the
    ones that answer until they exit."""
    return ready if np.any(ready) else serving_terminating
