"""A Deployment's status and its conditions, kept as ``SetDeploymentCondition`` keeps them
(pkg/controller/deployment/util/deployment_util.go): the transition time moves only when the
status does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class Condition:
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str
    last_update: int
    last_transition: int


@dataclass
class DeploymentStatus:
    replicas: int = 0
    updated: int = 0
    ready: int = 0
    available: int = 0
    unavailable: int = 0
    conditions: list[Condition] = field(default_factory=list)

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def set_condition(self, c: Condition) -> None:
        """``SetDeploymentCondition``: no change if status and reason are the same; the
        transition time kept if only the reason changes."""
        cur = self.condition(c.type)
        if cur is not None and cur.status == c.status and cur.reason == c.reason:
            return
        if cur is not None and cur.status == c.status:
            c.last_transition = cur.last_transition
        self.conditions = [x for x in self.conditions if x.type != c.type] + [c]

    def remove_condition(self, kind: str) -> None:
        self.conditions = [x for x in self.conditions if x.type != kind]

    def copy(self) -> DeploymentStatus:
        return DeploymentStatus(
            self.replicas,
            self.updated,
            self.ready,
            self.available,
            self.unavailable,
            [Condition(**vars(c)) for c in self.conditions],
        )
