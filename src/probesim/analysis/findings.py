"""What a check reports: rules (ID, severity, docs) and findings (where, what, why)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from probesim.profiles import Resolved

Severity = Literal["info", "warning", "error"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
DOCS = "docs/rules.md#"  # the rule's section in the project's rule reference


@dataclass(frozen=True)
class Rule:
    id: str  # PS010
    name: str  # liveness-failure-threshold-one
    severity: Severity
    title: str  # one line: what is wrong
    why: str  # what goes wrong, and the incident or source
    fix: str  # how to fix it
    family: str = ""  # the module of analysis/rules/ that holds it: probes, startup, mesh, ...

    @property
    def help_uri(self) -> str:
        return f"{DOCS}{self.id.lower()}"


@dataclass(frozen=True)
class Finding:
    rule: Rule
    message: str
    obj: str  # Deployment/web
    file: str
    line: int
    field: str = ""  # spec.template.spec.containers[0].livenessProbe.failureThreshold
    container: str = ""
    source: str | None = None  # helm template the object came from
    namespace: str = "default"
    fix: str = ""  # what to change, with the value the rule computed; the rule's fix when empty
    # The fix as data: a patch of the object (strategic merge for Kubernetes kinds, JSON merge
    # for Istio's), from which ``fix`` was said; None when the fix needs a change no patch makes.
    patch: dict[str, Any] | None = None
    patch_type: str = "strategic"
    # The patch as text edits, when every change replaces a scalar the file already has:
    # (line, key, old value, new value); SARIF's fixes are located from them.
    edits: tuple[tuple[int, str, str, str], ...] = ()
    # What the finding assumed about the app (the container's profile, with its evidence).
    assumed: Resolved | None = None

    @property
    def severity(self) -> Severity:
        return self.rule.severity

    @property
    def key(self) -> str:
        """The object as ``kind/namespace/name`` (how objects are told apart)."""
        kind, _, name = self.obj.partition("/")
        return f"{kind}/{self.namespace}/{name}"

    @property
    def remediation(self) -> str:
        return self.fix or self.rule.fix

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule.id,
            "name": self.rule.name,
            "severity": self.severity,
            "message": self.message,
            "object": self.obj,
            "namespace": self.namespace,
            "container": self.container or None,
            "file": self.file,
            "line": self.line,
            "field": self.field or None,
            "source": self.source,
            "fix": self.remediation,
            "patch": self.patch,
            "patchType": self.patch_type if self.patch is not None else None,
            "help": self.rule.help_uri,
            "assumed": self.assumed.to_json() if self.assumed is not None else None,
        }


@dataclass
class Registry:
    rules: dict[str, Rule] = field(default_factory=dict)
    checks: dict[str, Callable[..., Iterator[Finding]]] = field(default_factory=dict)

    def rule(
        self, *, id: str, name: str, severity: Severity, title: str, why: str, fix: str
    ) -> Callable[[Callable[..., Iterator[Finding]]], Callable[..., Iterator[Finding]]]:
        """Declare a rule (each field by name) and register the check that finds it; its family
        is the module of analysis/rules/ it is declared in (``stress`` for the package's own)."""

        def register(fn: Callable[..., Iterator[Finding]]) -> Callable[..., Iterator[Finding]]:
            if id in self.rules:
                raise ValueError(f"rule {id} defined twice")
            module = fn.__module__.rsplit(".", 1)[-1]
            family = "stress" if module == "rules" else module
            self.rules[id] = Rule(id, name, severity, title, why, fix, family)
            self.checks[id] = fn
            return fn

        return register


REGISTRY = Registry()
