"""Which of a Service's pods are its ready endpoints, as the EndpointSlice controller decides
(reference/kubelet.md §4.8): a pod Ready and not terminating; every listed pod when the Service
publishes not-ready addresses. Elementwise over arrays (the engine) or for one pod (the lab)."""

from __future__ import annotations

from typing import Any

import numpy as np


def endpoint_ready(ready: Any, deleting: Any, publish_not_ready: bool, listed: Any) -> Any:
    """The EndpointSlice ``ready`` condition of pods the Service lists (``listed``): Ready and
    not being deleted, or, with ``publishNotReadyAddresses``, every listed pod."""
    if publish_not_ready:
        return listed
    return np.logical_and(ready, np.logical_not(deleting))
