"""Every time value of a scenario spec with its path in the file: the scenario loader checks
them against the time grid, the actions' checks those of a rolled-out template's behaviour."""

from __future__ import annotations

from probesim.manifests.yamlsrc import Path_
from probesim.model.scenario import ScenarioSpec


def durations(spec: ScenarioSpec) -> list[tuple[Path_, int]]:
    """Every time value of the scenario spec, with its path in the file."""
    out: list[tuple[Path_, int]] = [
        (("spec", "duration"), spec.duration),
        (("spec", "endpointDelay"), spec.endpoint_delay),
        *((("spec", "actions", i, "at"), a.at) for i, a in enumerate(spec.actions)),
        (("spec", "cluster", "nodeMonitorPeriod"), spec.cluster.node_monitor_period),
        (("spec", "cluster", "nodeMonitorGracePeriod"), spec.cluster.node_monitor_grace_period),
        (("spec", "cluster", "defaultUnreachableToleration"), spec.cluster.default_unreachable_toleration),
    ]
    for i, t in enumerate(spec.traffic):
        out += [(("spec", "traffic", i, "start"), t.start)]
        out += [(("spec", "traffic", i, "stop"), t.stop)] if t.stop is not None else []
    for wname, wb in spec.behavior.items():
        base: Path_ = ("spec", "behavior", wname)
        out += [((*base, "readinessGates", g), ms) for g, ms in wb.readiness_gates.items()]
        groups = [((*base, "containers"), wb.containers)]
        groups += [((*base, "pods", i, "containers"), ov.containers) for i, ov in enumerate(wb.pods)]
        for gpath, containers in groups:
            for cname, cb in containers.items():
                cpath = (*gpath, cname)
                out += [((*cpath, "start"), cb.start), ((*cpath, "shutdown"), cb.shutdown)]
                out += [((*cpath, "preStop"), cb.pre_stop)] if cb.pre_stop is not None else []
                for j, ep in enumerate(cb.episodes):
                    for key, ms in (("after", ep.after), ("at", ep.at), ("for", getattr(ep, "for_", None))):
                        if ms is not None:
                            out.append(((*cpath, "episodes", j, key), ms))
    return out
