"""API versions the Kubernetes API server no longer serves, for the kinds probesim reads: the
Deprecated API Migration Guide (kubernetes.io/docs/reference/using-api/deprecation-guide/). probesim
still reads such a manifest (as the served version), but a current cluster rejects it, which a
user must hear before trusting any finding about it."""

from __future__ import annotations

from typing import Any

# (apiVersion, kind): (the release that stopped serving it, the version to use)
REMOVED: dict[tuple[str, str], tuple[str, str]] = {
    ("extensions/v1beta1", "Deployment"): ("1.16", "apps/v1"),
    ("extensions/v1beta1", "DaemonSet"): ("1.16", "apps/v1"),
    ("extensions/v1beta1", "ReplicaSet"): ("1.16", "apps/v1"),
    ("apps/v1beta1", "Deployment"): ("1.16", "apps/v1"),
    ("apps/v1beta1", "StatefulSet"): ("1.16", "apps/v1"),
    ("apps/v1beta2", "Deployment"): ("1.16", "apps/v1"),
    ("apps/v1beta2", "StatefulSet"): ("1.16", "apps/v1"),
    ("apps/v1beta2", "DaemonSet"): ("1.16", "apps/v1"),
    ("apps/v1beta2", "ReplicaSet"): ("1.16", "apps/v1"),
    ("batch/v1beta1", "CronJob"): ("1.25", "batch/v1"),
    ("batch/v2alpha1", "CronJob"): ("1.21", "batch/v1"),
    ("policy/v1beta1", "PodDisruptionBudget"): ("1.25", "policy/v1"),
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler"): ("1.25", "autoscaling/v2"),
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): ("1.26", "autoscaling/v2"),
}


def removed_api(obj: Any) -> str | None:
    """What to tell of an object whose apiVersion the API server no longer serves, or None."""
    if not isinstance(obj, dict):
        return None
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    if key not in REMOVED:
        return None
    release, use = REMOVED[key]
    return (f"{key[0]} {key[1]} is no longer served since Kubernetes {release} (use {use}): a current "
            "cluster rejects it (probesim still reads it)")  # fmt: skip
