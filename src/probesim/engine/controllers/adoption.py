"""Which ReplicaSets of a scenario a Deployment claims when the run starts
(``getReplicaSetsForDeployment`` → ``ClaimReplicaSets``, pkg/controller/controller_ref_manager.go
``ClaimObject``): a ReplicaSet in the Deployment's namespace whose **labels** (its own
metadata.labels, not its template's) match the Deployment's selector is adopted when it has no
controller ownerReference (the Deployment is never being deleted here, so ``canAdopt`` holds),
and is the Deployment's already when its controller reference names it; one that no longer
matches is released (it runs on its own). A ReplicaSet controlled by anything else is left
alone. Adoption itself records no event (``AdoptReplicaSet`` only patches the ownerReference).

An adopted ReplicaSet keeps its name, pods and revision annotation: it is the Deployment's new
ReplicaSet when its pod template equals one of the Deployment's ignoring the pod-template-hash
label (``FindNewReplicaSet`` → ``EqualIgnoreHash``), an old one otherwise.

Pure functions of the loaded Scenario (no numpy): the fleet sizes the adopted ReplicaSets' pod
slots from them and the controllers run them as the Deployment's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from probesim.model.kubernetes import Workload
from probesim.model.scenario import Scenario

REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX = "deployment.kubernetes.io/max-replicas"
HASH_LABEL = "pod-template-hash"  # appsv1.DefaultDeploymentUniqueLabelKey


@dataclass(frozen=True)
class Adoption:
    replica_set: int  # the ReplicaSet's workload index
    deployment: int  # the Deployment's workload index
    key: str  # its pod template without the pod-template-hash label (as templates.plan keys them)


def template_key(w: Workload) -> str:
    """``EqualIgnoreHash``'s view of a pod template: as ``templates._key`` serialises one, with
    the pod-template-hash label left out."""
    data = w.model_dump(mode="json", by_alias=True, exclude_none=True)["spec"]["template"]
    labels = data.get("metadata", {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _controller(w: Workload) -> tuple[str, str] | None:
    """The (kind, name) of the object's controller reference, if it has one."""
    ref = next((r for r in w.metadata.owner_references if r.controller), None)
    return (ref.kind, ref.name) if ref is not None else None


def _selects(d: Workload, rs: Workload) -> bool:
    sel = d.spec.selector
    # An empty selector is refused for a Deployment by the API server: it claims nothing here.
    if sel is None or not sel.match_labels or d.metadata.namespace != rs.metadata.namespace:
        return False
    return all(rs.metadata.labels.get(k) == v for k, v in sel.match_labels.items())


def adoptions(s: Scenario) -> dict[int, Adoption]:
    """Per ReplicaSet a Deployment claims: its claim. With two Deployments that both match an
    orphan, the first of the manifests takes it (in a cluster, the one that syncs first)."""
    out: dict[int, Adoption] = {}
    deployments = [(i, w) for i, w in enumerate(s.workloads) if w.kind == "Deployment"]
    for ri, rs in enumerate(s.workloads):
        if rs.kind != "ReplicaSet":
            continue
        owner = _controller(rs)
        for di, d in deployments:
            if owner is not None and owner != ("Deployment", d.name):
                continue
            if _selects(d, rs):
                out[ri] = Adoption(ri, di, template_key(rs))
                break
    return out


def annotation_int(w: Workload, key: str, bits: int) -> int | None:
    """An integer annotation as ``strconv.ParseInt(v, 10, bits)`` reads it; None when absent or
    not a number (``MaxRevision`` skips a revision it cannot parse)."""
    v = w.metadata.annotations.get(key)
    if v is None or not re.fullmatch(r"[+-]?[0-9]+", v):
        return None
    n = int(v)
    return n if -(2 ** (bits - 1)) <= n < 2 ** (bits - 1) else None
