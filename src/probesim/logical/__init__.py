"""The seed-000 tick model: the book chapter's probe simulator, ported to Python.

Logical integer ticks, no probe timeout, no CrashLoopBackOff, a startup probe that waits forever,
one container per pod. It is the readable teaching model; ``probesim.engine`` is the
Kubernetes-faithful one. Both count consecutive results with ``probesim.consecutive``.
"""

from probesim.logical.sim import Behavior, Config, Pod, Probe, Sim

__all__ = ["Behavior", "Config", "Pod", "Probe", "Sim"]
