"""``probesim diff``: what a change of manifests does. Both sides are read as ``probesim check``
reads its input, their objects matched by kind, namespace and name (manifests/changes.py: an
object moved to another file is the same object), and each workload whose own object or one of
its objects changed — the Services that select it, its HPA or ScaledObject, the
PodDisruptionBudgets that select its pods, the DestinationRules and VirtualServices naming its
Services — is listed with the fields that changed, then simulated on both sides
(analysis/diff_figures.py) when what the simulation reads of it differs. Objects on one side
only are listed, not simulated; unchanged workloads cost nothing. The check rules run over both
sides: the findings of the after side that the before side does not have are new, those it no
longer has resolved (a finding is keyed by its rule, object, container and field, not by its
file or line: one moved is neither)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from probesim.analysis.check import CheckConfig, CheckReport, check
from probesim.analysis.diff_figures import SEEDS, Figure, SideInput, figures, measure, side_input
from probesim.analysis.findings import Finding, Rule
from probesim.errors import InputError
from probesim.kube.load_model import default_rate
from probesim.kube.selectors import selects
from probesim.manifests import kubernetes as k8s
from probesim.manifests.changes import FieldChange, Obj, aligned, field_changes, objects_of
from probesim.manifests.generated import istio_hosts
from probesim.manifests.kubernetes import SIMULATED_KINDS
from probesim.manifests.sides import Side
from probesim.model.kubernetes import Workload
from probesim.model.scenario import Scenario
from probesim.model.selectors import LabelSelector
from probesim.tune.objective import Executor, Serial

Status = Literal["changed", "added", "removed"]


class SideErrors(Exception):
    """The after side does not read (a file that does not parse, an object the API server would
    refuse): the diff is not made, each error is said (exit 2)."""

    def __init__(self, errors: list[InputError]) -> None:
        super().__init__(f"{len(errors)} input errors")
        self.errors = errors


@dataclass(frozen=True)
class ObjRef:
    """An object of one side, as a report names it."""

    key: str
    kind: str
    namespace: str
    name: str
    file: str
    line: int

    @classmethod
    def of(cls, key: str, o: Obj) -> ObjRef:
        return cls(key, o.kind, o.namespace, o.name, o.file, o.line)

    @property
    def shown(self) -> str:
        """``Kind/name``, ``(namespace ns)`` outside the default one, ``(variant folder)`` for one
        of an object's variants."""
        kind = self.key.split("/", 1)[0]
        out = f"{kind}/{self.name}"
        if self.namespace != "default":
            out += f" (namespace {self.namespace})"
        variant = self.key.partition("@")[2]
        return out + (f" (variant {variant})" if variant else "")

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "namespace": self.namespace, "name": self.name,
                "file": self.file, "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class ObjectChange:
    """One object of a changed workload (itself or one of its objects), or an object no workload
    has: changed field by field, or on one side only."""

    status: Status
    before: ObjRef | None
    after: ObjRef | None
    fields: tuple[FieldChange, ...] = ()
    note: str = ""  # what of it the simulation reads

    @property
    def ref(self) -> ObjRef:
        ref = self.after or self.before
        assert ref is not None
        return ref

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.ref.key,
            "status": self.status,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "fields": [f.to_json() for f in self.fields],
            "note": self.note or None,
        }


@dataclass
class WorkloadDiff:
    """A workload on both sides whose objects changed: what changed, and what it does."""

    before: ObjRef
    after: ObjRef
    changes: list[ObjectChange]
    simulated: bool = False
    note: str = ""  # why it was not simulated
    figures: list[Figure] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.after.key

    def moved(self, verdict: str) -> list[str]:
        """The figures with ``verdict`` (over all runs or in one of them), each once; a figure
        worse in one place is not said better for another."""
        worse = [f.name for f in self.figures if f.verdict == "worse"]
        if verdict == "worse":
            return list(dict.fromkeys(worse))
        return list(
            dict.fromkeys(f.name for f in self.figures if f.verdict == verdict and f.name not in worse)
        )

    def count(self, verdict: str) -> int:
        return len(self.moved(verdict))

    @property
    def verdict(self) -> str:
        """worse (a figure is), better (none worse, one better), same, or not simulated."""
        if not self.simulated:
            return "not simulated"
        return "worse" if self.count("worse") else "better" if self.count("better") else "same"

    def order(self) -> tuple[int, int, int]:
        """Worst first: the most figures worse, then the fewest better."""
        return (
            -self.count("worse"),
            {"worse": 0, "better": 1, "same": 2}.get(self.verdict, 3),
            -self.count("better"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.after.kind,
            "namespace": self.after.namespace,
            "name": self.after.name,
            "before": self.before.to_json(),
            "after": self.after.to_json(),
            "verdict": self.verdict,
            "simulated": self.simulated,
            "note": self.note or None,
            "changes": [c.to_json() for c in self.changes],
            "figures": [f.to_json() for f in self.figures],
        }


@dataclass
class DiffReport:
    before: str  # the sides as the user gave them
    after: str
    workloads: list[WorkloadDiff] = field(default_factory=list)  # worst first
    added: list[ObjRef] = field(default_factory=list)
    removed: list[ObjRef] = field(default_factory=list)
    other: list[ObjectChange] = field(default_factory=list)  # changed objects of no workload
    unchanged: int = 0
    new_findings: list[Finding] = field(default_factory=list)
    resolved_findings: list[Finding] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)  # the rules that ran (the after side's)
    seeds: tuple[int, ...] = ()
    scenario: str | None = None  # the user's scenario file; None: each workload alone
    warnings: list[str] = field(default_factory=list)
    before_errors: list[InputError] = field(default_factory=list)  # said; the after side's end the diff

    def worse(self) -> list[tuple[WorkloadDiff, str]]:
        """Each figure worse, once per workload (over all runs or in one of them)."""
        return self._moved("worse")

    def better(self) -> list[tuple[WorkloadDiff, str]]:
        return self._moved("better")

    def _moved(self, verdict: str) -> list[tuple[WorkloadDiff, str]]:
        return [(w, name) for w in self.workloads for name in w.moved(verdict)]

    @property
    def changed(self) -> bool:
        return bool(self.workloads or self.added or self.removed or self.other)


def finding_key(f: Finding) -> tuple[str, str, str, str]:
    """What tells one finding from another across the sides: its rule, object, container and
    field — not its file or line, nor its message (a value in it may move with the change)."""
    return (f.rule.id, f.key, f.container, f.field)


def _only(these: list[Finding], those: list[Finding]) -> list[Finding]:
    """The findings of ``these`` that ``those`` does not have (as many as it has fewer of)."""
    left = Counter(finding_key(f) for f in those)
    out = []
    for f in these:
        k = finding_key(f)
        if left[k]:
            left[k] -= 1
        else:
            out.append(f)
    return out


@dataclass
class _Read:
    """One side read: its objects by key, parsed, and checked."""

    side: Side
    objs: dict[str, Obj]
    objects: k8s.Objects
    report: CheckReport
    at: dict[tuple[int, tuple[Any, ...]], str]  # (id(doc), base) → key

    def key_of(self, doc: Any, base: tuple[Any, ...]) -> str | None:
        return self.at.get((id(doc), tuple(base)))

    def workloads(self) -> dict[str, Workload]:
        out: dict[str, Workload] = {}
        for w in self.objects.workloads:
            doc, base = self.objects.origin(w).where
            key = self.key_of(doc, base)
            if key is not None:
                out.setdefault(key, w)
        return out

    def related(self, w: Workload) -> list[str]:
        """The keys of ``w``'s objects: itself, the object whose template it runs (a Rollout's
        workloadRef), the Services that select it, its scaler, the PodDisruptionBudgets that
        select its pods and the Istio rules naming its Services."""
        o = self.objects.origin(w)
        out = [self.key_of(*o.where)]
        if o.declared is not None:
            out.append(self.key_of(o.doc, o.base))
        services = [s for s in self.objects.services if selects(s, w)]
        for s in services:
            out.append(self.key_of(*self.objects.origin(s).where))
        scaler = self.objects.scaler_of(w)
        if scaler is not None:
            out.append(self.key_of(*self.objects.origin(scaler).where))
        names = {s.name for s in services}
        out += [self.key_of(doc, base) for doc, base, data in self.objects.istio if istio_hosts(data) & names]
        for key, obj in self.objs.items():
            if obj.kind == "PodDisruptionBudget" and obj.namespace == w.metadata.namespace:
                sel = (
                    obj.content.get("spec", {}).get("selector")
                    if isinstance(obj.content.get("spec"), dict)
                    else None
                )
                try:
                    selector = LabelSelector.model_validate(sel) if isinstance(sel, dict) else None
                except ValueError:
                    selector = None
                if selector is not None and not selector.empty and selector.matches(w.pod_labels):
                    out.append(key)
        return [k for k in out if k is not None]


def _read(side: Side, objs: dict[str, Obj], cfg: CheckConfig) -> _Read:
    objects = k8s.parse(side.docs, errors=[])
    if objs:
        report = check([], None, cfg, read=(side.docs, side.inputs, side.errors))
    else:
        report = CheckReport(files=side.inputs.files, skipped=side.inputs.skipped, errors=list(side.errors))
    at = {(id(o.doc), tuple(o.base)): k for k, o in objs.items()}
    return _Read(side, objs, objects, report, at)


_NOTES = {
    "PodDisruptionBudget": "not simulated: a PDB guards only drains and evictions; diff's runs drain no node",
}


def _change(before: _Read, after: _Read, key: str) -> ObjectChange | None:
    b, a = before.objs.get(key), after.objs.get(key)
    if b is not None and a is not None:
        if b.content == a.content:
            return None
        fields = tuple(field_changes(b.content, a.content))
        return ObjectChange("changed", ObjRef.of(key, b), ObjRef.of(key, a), fields, _NOTES.get(a.kind, ""))
    if a is not None:
        return ObjectChange("added", None, ObjRef.of(key, a), (), _NOTES.get(a.kind, ""))
    if b is not None:
        return ObjectChange("removed", ObjRef.of(key, b), None, (), _NOTES.get(b.kind, ""))
    return None


def diff(
    before: Side,
    after: Side,
    scenario: Scenario | None = None,
    config: CheckConfig | None = None,
    executor: Executor | None = None,
    scenario_file: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> DiffReport:
    """What ``after`` changes of ``before``: the objects on one side only, each changed
    workload's changes and figures, the other changed objects, the new and resolved findings.
    The after side's input errors are raised together (SideErrors)."""
    cfg = config or CheckConfig()
    ob, oa = objects_of(before.docs, before.root), objects_of(after.docs, after.root)
    ob, oa = aligned(ob, oa, before.root), aligned(oa, ob, after.root)
    b, a = _read(before, ob, cfg), _read(after, oa, cfg)
    if a.report.errors:
        raise SideErrors(a.report.errors)
    if not b.objs and not a.objs:
        raise InputError(f"no Kubernetes object in {before.shown} nor in {after.shown}")
    seed = scenario.spec.seed if scenario is not None else 0
    report = DiffReport(before.shown, after.shown, seeds=tuple(seed + i for i in range(SEEDS)),
                        scenario=scenario_file)  # fmt: skip
    report.before_errors = list(b.report.errors)
    report.warnings = list(dict.fromkeys([*before.notes, *after.notes, *a.report.warnings]))
    report.rules = a.report.rules or b.report.rules
    report.new_findings = _only(a.report.findings, b.report.findings)
    report.resolved_findings = _only(b.report.findings, a.report.findings)
    report.added = [ObjRef.of(k, o) for k, o in a.objs.items() if k not in b.objs]
    report.removed = [ObjRef.of(k, o) for k, o in b.objs.items() if k not in a.objs]
    report.unchanged = sum(1 for k, o in a.objs.items() if k in b.objs and b.objs[k].content == o.content)

    wb, wa = b.workloads(), a.workloads()
    claimed: set[str] = set()
    pairs: list[tuple[WorkloadDiff, SideInput, SideInput]] = []
    for key, w_after in wa.items():
        w_before = wb.get(key)
        if w_before is None:
            continue
        mine = list(dict.fromkeys([*b.related(w_before), *a.related(w_after)]))
        changes = [c for k in mine if (c := _change(b, a, k)) is not None]
        claimed.update(mine)
        if not changes:
            continue
        wd = WorkloadDiff(ObjRef.of(key, b.objs[key]), ObjRef.of(key, a.objs[key]), changes)
        report.workloads.append(wd)
        if w_after.kind not in SIMULATED_KINDS or w_before.kind not in SIMULATED_KINDS:
            wd.note = ("not simulated: probesim simulates Deployments, StatefulSets, ReplicaSets, "
                       "ReplicationControllers and Pods (its check findings are compared)")  # fmt: skip
            continue
        rate = default_rate(w_before)  # the load both sides take when the scenario sends none
        sb = side_input(b.objects, w_before, scenario, rate)
        sa = side_input(a.objects, w_after, scenario, rate)
        if sb.fingerprint() == sa.fingerprint():
            wd.note = "nothing the simulation reads of it changed (its runs would be the same on both sides)"
            continue
        pairs.append((wd, sb, sa))
    if pairs:
        if progress is not None:
            names = ", ".join(p[0].after.shown for p in pairs[:5])
            names += f" and {len(pairs) - 5} more workloads" if len(pairs) > 5 else ""
            progress(f"simulating {names} on both sides under seeds {report.seeds[0]} and {report.seeds[1]}")
        measured = measure([(sb, sa) for _, sb, sa in pairs], report.seeds, executor or Serial())
        for (wd, _, _), (mb, ma) in zip(pairs, measured, strict=True):
            wd.simulated = True
            wd.figures = figures(mb, ma)
    report.workloads.sort(key=WorkloadDiff.order)
    keys = set(b.objs) | set(a.objs)
    for k in sorted(keys - claimed):
        c = _change(b, a, k)
        if c is not None and c.status == "changed":
            report.other.append(c)
    return report


def fails(report: DiffReport, fail_on: Sequence[str]) -> bool:
    """Whether the diff fails under ``--fail-on`` (each of: worse, new-findings[=severity],
    never)."""
    from probesim.analysis.findings import SEVERITY_RANK

    if "never" in fail_on:
        return False
    for rule in fail_on:
        if rule == "worse" and report.worse():
            return True
        if rule.startswith("new-findings"):
            least = rule.partition("=")[2] or "error"
            if any(SEVERITY_RANK[f.severity] >= SEVERITY_RANK[least] for f in report.new_findings):
                return True
    return False
