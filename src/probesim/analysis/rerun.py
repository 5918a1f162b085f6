"""A stress of ``probesim check --stress`` again, alone: the scenario the suite simulates for one
workload under one stress (what ``probesim run MANIFESTS --workload W --stress S`` runs, with its
timeline), and the command that does so, which a PS100 finding names as its fix."""

from __future__ import annotations

import shlex

from probesim.analysis.own_scenario import nearest_services
from probesim.analysis.stress import SUITE, stress_scenario, suite_base
from probesim.errors import InputError
from probesim.kube.selectors import selects
from probesim.manifests.kubernetes import SIMULATED_KINDS, Objects
from probesim.model.kubernetes import Workload
from probesim.model.scenario import Scenario
from probesim.profiles import ProfileCorrection


def workload_arg(objects: Objects, w: Workload) -> str:
    """How ``probesim run --workload`` names ``w``: KIND/NAMESPACE/NAME, and ``@FILE`` when the
    input holds that object more than once (variants: a base and its overlays)."""
    key = f"{w.kind}/{w.metadata.namespace}/{w.name}"
    same = [
        x
        for x in objects.workloads
        if (x.kind, x.metadata.namespace, x.name) == (w.kind, w.metadata.namespace, w.name)
    ]
    return f"{key}@{objects.origin(w).doc.file}" if len(same) > 1 else key


def rerun(
    paths: list[str], scenario: str | None, workload: str, stress: str, config: str | None = None
) -> str:
    """The command that simulates a stress of check --stress again, with its timeline: probesim
    run on the manifests checked (or the scenario, with them as -m), the workload, the stress, and
    the config file whose profile corrections check took (``config``)."""
    args = [scenario, *(a for p in paths for a in ("-m", p))] if scenario is not None else list(paths)
    more = ["--config", config] if config is not None else []
    line = shlex.join(["probesim", "run", *args, "--workload", workload, "--stress", stress, *more])
    return line + (" (the same standard input)" if "-" in args else "")


def stress_scenario_of(
    objects: Objects,
    given: Scenario | None,
    workload: str,
    stress: str,
    corrections: tuple[ProfileCorrection, ...] = (),
) -> Scenario:
    """The scenario check --stress simulates for ``workload`` (KIND/NAME, KIND/NAMESPACE/NAME,
    with ``@FILE`` to choose among variants) under ``stress``, with .probesim.yaml's profile
    ``corrections``: what ``probesim run --workload --stress`` runs."""
    if stress not in SUITE:
        raise InputError(f"unknown stress {stress!r}; the stresses are {', '.join(SUITE)}", field="--stress")
    w = _named(objects, workload)
    if w.kind not in SIMULATED_KINDS:
        raise InputError(
            f"{w.kind} {w.name} is not simulated: the stresses run Deployments, StatefulSets, ReplicaSets, "
            "ReplicationControllers and Pods",
            field="--workload",
        )
    selected = nearest_services(objects, w, [s for s in objects.services if selects(s, w)])
    if not selected:
        raise InputError(f"no Service selects {w.kind} {w.name}'s pods: the stresses send it nothing",
                         field="--workload")  # fmt: skip
    base, app, _left = suite_base(objects, w, selected, given, corrections)
    sc, not_run = stress_scenario(base, w, stress, app)
    if sc is None:
        raise InputError(f"{stress} is not run on {w.kind} {w.name}: {not_run}", field="--stress")
    return sc


def _named(objects: Objects, workload: str) -> Workload:
    """The workload ``workload`` names (probesim run --workload)."""
    key, _, file = workload.partition("@")
    parts = key.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise InputError(
            f"{workload!r}: name a workload as KIND/NAME or KIND/NAMESPACE/NAME", field="--workload"
        )
    kind, name = parts[0], parts[-1]
    found = [
        w for w in objects.workloads
        if w.kind.lower() == kind.lower() and w.name == name
        and (len(parts) == 2 or w.metadata.namespace == parts[1])
        and (not file or objects.origin(w).doc.file == file)
    ]  # fmt: skip
    if not found:
        known = ", ".join(f"{w.kind}/{w.metadata.namespace}/{w.name}" for w in objects.workloads[:10])
        raise InputError(f"no workload {workload} in the manifests given (they hold: {known or 'none'})",
                         field="--workload")  # fmt: skip
    if len(found) > 1:
        where = ", ".join(workload_arg(objects, w) for w in found)
        raise InputError(f"{workload} names several workloads: give one of {where}", field="--workload")
    return found[0]
