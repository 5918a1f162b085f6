"""Run the rules over manifests: inputs (files, directories, stdin), the ``.probesim.yaml``
config, suppressions by annotation, and the report every output format renders."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError

from probesim.analysis import rules as _rules  # noqa: F401  (registers the rules)
from probesim.analysis.context import Context, Thresholds
from probesim.analysis.findings import REGISTRY, SEVERITY_RANK, Finding, Rule, Severity
from probesim.analysis.patch import apply, describe, fix_line
from probesim.analysis.rerun import rerun, workload_arg
from probesim.analysis.stress import stress_suite
from probesim.analysis.stress_verdicts import StressResult, StressThresholds
from probesim.errors import InputError
from probesim.manifests import kubernetes as k8s
from probesim.manifests.discovery import Inputs, nothing_found, read_manifests
from probesim.manifests.errors import from_validation
from probesim.manifests.kubernetes import Skipped, obj_key
from probesim.manifests.removed_apis import removed_api
from probesim.manifests.yamlsrc import Doc, get_path, load_docs, read_text
from probesim.model.base import Model
from probesim.model.kubernetes import ScaledObject, Workload
from probesim.model.scenario import Scenario
from probesim.profiles import ProfileCorrection, catalog

IGNORE = "probesim.dev/ignore"
FailOn = Literal["info", "warning", "error", "never"]


class CheckConfig(Model):
    """``.probesim.yaml``: which rules run, their thresholds, when the check fails."""

    include: tuple[str, ...] = Field(default=(), description="Only these rules (IDs or names).")
    exclude: tuple[str, ...] = Field(default=(), description="Never these rules (IDs or names).")
    thresholds: dict[str, Any] = Field(
        default_factory=dict,
        description="detectionTarget, restartTarget, longGracePeriod (durations), retryAmplification.",
    )
    fail_on: FailOn = "error"
    stress: dict[str, Any] = Field(
        default_factory=dict,
        description="Stress verdict thresholds: maxErrorPercent, maxRestarts, minReadyFraction.",
    )
    profiles: tuple[ProfileCorrection, ...] = Field(
        default=(),
        description="Corrections of what probesim assumed about an app: each selects containers "
        "(workload, container, image) and gives a catalog profile or the fields to take instead.",
    )
    _file: str | None = PrivateAttr(default=None)  # where it was read (None: the defaults)

    @property
    def file(self) -> str | None:
        """The file it was read from, as the user named it."""
        return self._file


@dataclass
class Suppressed:
    finding: Finding
    reason: str


@dataclass(frozen=True)
class Linted:
    """A workload the rules ran over: where it is (a Rollout's own document, for one whose pods
    are a Deployment's template: ``template`` then says which), and its scaler (HPA or KEDA
    ScaledObject), if any."""

    kind: str
    namespace: str
    name: str
    file: str
    line: int
    api_version: str | None = None
    scaled_by: dict[str, Any] | None = None
    template: dict[str, Any] | None = None  # {kind, name, file, line} of the object it runs
    findings_file: str = ""  # where its findings are (the template's file)

    @property
    def key(self) -> str:
        return obj_key(self.kind, self.namespace, self.name)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "file": self.file,
            "line": self.line,
            "apiVersion": self.api_version,
        }
        if self.scaled_by is not None:
            out["scaledBy"] = self.scaled_by
        if self.template is not None:
            out["template"] = self.template
        return out


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Suppressed] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    stress: list[StressResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # said on stderr: unknown rules in annotations, …
    # Files that do not parse and objects the API server would refuse: each reported, the rest
    # still linted; the check then exits 2.
    errors: list[InputError] = field(default_factory=list)
    linted: list[Linted] = field(default_factory=list)  # the workloads the rules ran over

    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)

    def fails(self, fail_on: FailOn) -> bool:
        worst = self.worst()
        return fail_on != "never" and worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on]


def load_config(path: str | None) -> CheckConfig:
    candidate = path or (".probesim.yaml" if Path(".probesim.yaml").is_file() else None)
    if candidate is None:
        return CheckConfig()
    text, shown = read_text(candidate)
    docs = list(load_docs(text, shown))
    if not docs:
        return CheckConfig()
    try:
        cfg = CheckConfig.model_validate(docs[0].data)
    except ValidationError as e:
        raise from_validation(e, docs[0], (), "config", docs[0].data) from None
    known = {r.id for r in REGISTRY.rules.values()} | {r.name for r in REGISTRY.rules.values()}
    for key in ("include", "exclude"):
        for i, rid in enumerate(getattr(cfg, key)):
            if rid not in known:
                raise InputError(
                    f"unknown rule {rid!r}; see `probesim check --list-rules`",
                    file=shown, line=docs[0].line_of((key, i)), obj="config", field=f"{key}[{i}]",
                )  # fmt: skip
    for i, c in enumerate(cfg.profiles):
        if c.profile is not None and c.profile not in catalog():
            raise InputError(
                f"unknown profile {c.profile!r}; known: {', '.join(catalog())}",
                file=shown, line=docs[0].line_of(("profiles", i, "profile")), obj="config",
                field=f"profiles[{i}].profile",
            )  # fmt: skip
    try:
        Thresholds.from_dict(cfg.thresholds)
    except (ValueError, TypeError) as e:
        raise InputError(
            str(e), file=shown, line=docs[0].line_of(("thresholds",)), field="thresholds"
        ) from None
    cfg._file = candidate
    return cfg


def selected_rules(cfg: CheckConfig) -> list[Rule]:
    def named(r: Rule, names: tuple[str, ...]) -> bool:
        return r.id in names or r.name in names

    return [
        r
        for r in REGISTRY.rules.values()
        if (not cfg.include or named(r, cfg.include)) and not named(r, cfg.exclude)
    ]


_IGNORE_ITEM = re.compile(r"^\s*([A-Za-z0-9-]+)\s*(?:=\s*(.*?))?\s*$")


def _ignores(annotations: dict[str, str], container: str) -> dict[str, str]:
    """Rule → reason from ``probesim.dev/ignore`` and ``probesim.dev/ignore-<container>``."""
    out: dict[str, str] = {}
    for key in (IGNORE, f"{IGNORE}-{container}" if container else None):
        if key and key in annotations:
            for item in re.split(r"[;,\n]", annotations[key]):
                m = _IGNORE_ITEM.match(item)
                if m and m.group(1):
                    out[m.group(1)] = m.group(2) or "no reason given"
    return out


def check(
    paths: list[str],
    scenario: Scenario | None = None,
    config: CheckConfig | None = None,
    stress: bool = False,
    scenario_docs: list[Doc] | None = None,
    given: tuple[list[str], str | None] | None = None,
    read: tuple[list[Doc], Inputs, list[InputError]] | None = None,
) -> CheckReport:
    """Lint the manifests in ``paths`` (and ``scenario_docs``, the objects a scenario file holds
    itself); with ``stress``, also run the stress suite. ``given``: the paths and the scenario
    file the user gave (the command a stress finding names to run it again; ``paths`` and no
    scenario file when None). ``read``: the documents of ``paths`` read already, with what was
    read past and the errors reading them (probesim diff reads each side once)."""
    cfg = config or CheckConfig()
    errors: list[InputError] = []
    if read is not None:
        docs, inputs, errors = list(read[0]), read[1], list(read[2])
    else:
        docs, inputs = read_manifests(paths, errors) if paths else ([], Inputs())
    docs += scenario_docs or []
    # A scenario that carries the objects of the paths given (--print-scenario's output): each once.
    objects = k8s.parse(docs, errors=errors, once=bool(scenario_docs))
    skipped = inputs.skipped + objects.skipped
    if (
        not errors
        and not any(s.kind for s in skipped)
        and not (objects.workloads or objects.services or objects.hpas or objects.istio)
    ):
        raise nothing_found(paths, inputs)
    ctx = Context(
        objects, scenario, Thresholds.from_dict(cfg.thresholds), corrections=cfg.profiles, docs=docs
    )
    files = inputs.files + [
        f for f in dict.fromkeys(d.file for d in scenario_docs or []) if f not in inputs.files
    ]
    # The budgets the disruption rules read are not skipped.
    budgets = {(b.doc.file, b.doc.line_of(b.base)) for b in ctx.budgets}
    skipped = [s for s in skipped if s.kind != "PodDisruptionBudget" or (s.file, s.line) not in budgets]
    report = CheckReport(rules=selected_rules(cfg), files=files, skipped=skipped, errors=errors)
    report.linted = _linted(objects)
    fixed = _CustomFixes(objects)
    annotations: dict[str, dict[str, str]] = {}
    for w in objects.workloads:
        a = {**w.metadata.annotations, **w.spec.template.metadata.annotations}
        annotations[obj_key(w.kind, w.metadata.namespace, w.name)] = a
    for _doc, _base, data in objects.istio:
        raw_meta = data.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        ann = meta.get("annotations")
        key = obj_key(str(data.get("kind")), str(meta.get("namespace") or "default"), str(meta.get("name")))
        annotations[key] = {str(k): str(v) for k, v in ann.items()} if isinstance(ann, dict) else {}
    for b in ctx.budgets:
        ann = get_path(b.doc.data, (*b.base, "metadata", "annotations"))
        key = obj_key("PodDisruptionBudget", b.namespace, b.name)
        annotations[key] = {str(k): str(v) for k, v in ann.items()} if isinstance(ann, dict) else {}
    for doc in ctx.docs:  # a List's items too
        items = (
            doc.data.get("items") if isinstance(doc.data, dict) and doc.data.get("kind") == "List" else None
        )
        for i, obj in enumerate(items if isinstance(items, list) else [doc.data]):
            said = removed_api(obj)
            if said:
                meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
                line = doc.line_of(("items", i) if items is not None else ())
                report.warnings.append(f"{doc.file}:{line}: {obj.get('kind')} {meta.get('name')}: {said}")
    known = {r.id for r in REGISTRY.rules.values()} | {r.name for r in REGISTRY.rules.values()}
    for key, ann in annotations.items():
        for name in ann:
            if name == IGNORE or name.startswith(f"{IGNORE}-"):
                unknown = [
                    rid for rid in _ignores({name: ann[name]}, name[len(IGNORE) + 1 :]) if rid not in known
                ]
                for rid in unknown:
                    report.warnings.append(
                        f"{key}: annotation {name} names unknown rule {rid!r} (probesim check --list-rules)"
                    )
    for r in report.rules:
        for finding in REGISTRY.checks[r.id](ctx):
            _file(report, fixed(finding), annotations)
    if stress and any(r.id == "PS100" for r in report.rules):
        results = stress_suite(
            objects, scenario, StressThresholds.from_dict(cfg.stress), corrections=cfg.profiles
        )
        report.stress = results
        for res in results:
            if res.verdict != "fail":
                continue
            w = objects.workloads[res.index]
            o = objects.origin(w)
            msg = f"{res.stress}: {res.why}"
            finding = ctx.raw_finding(
                "PS100", o.doc, o.base, f"{w.kind}/{w.name}", (), msg, w.metadata.namespace
            )
            user_paths, scenario_file = given or (paths, None)
            if scenario is not None and scenario_file is None:
                scenario_file = "SCENARIO"  # a scenario given as an object: its file is the caller's
            # Its profile corrections shape the stress: the command reads the same file.
            read_from = cfg.file if cfg.profiles else None
            command = rerun(user_paths, scenario_file, workload_arg(objects, w), res.stress, read_from)
            fix = f"see the stress's timeline: {command}"
            _file(report, replace(finding, fix=fix), annotations)
    report.findings.sort(key=lambda x: (x.file, x.line, x.rule.id))
    return report


def _linted(objects: k8s.Objects) -> list[Linted]:
    """The workloads the rules ran over, in file order."""
    out = []
    for w in objects.workloads:
        o = objects.origin(w)
        doc, base = o.where
        raw = get_path(doc.data, base)
        api = raw.get("apiVersion") if isinstance(raw, dict) else None
        if not api and base and isinstance(doc.data, dict):  # an item of a List takes the List's
            api = doc.data.get("apiVersion")
        s = objects.scaler_of(w)
        scaled = None
        if isinstance(s, ScaledObject):
            scaled = {"kind": s.kind, "name": s.name, "minReplicas": s.spec.min_replica_count,
                      "maxReplicas": s.spec.max_replica_count}  # fmt: skip
        elif s is not None:
            scaled = {"kind": s.kind, "name": s.name, "minReplicas": s.spec.min_replicas,
                      "maxReplicas": s.spec.max_replicas}  # fmt: skip
        source = objects.template_of.get(id(w))
        template = None
        if source is not None:
            template = {"kind": source.kind, "name": source.name, "file": o.doc.file,
                        "line": o.doc.line_of(o.base)}  # fmt: skip
        line = doc.line_of(base)
        out.append(Linted(w.kind, w.metadata.namespace, w.name, doc.file, line, str(api) if api else None,
                          scaled, template, o.doc.file))  # fmt: skip
    return sorted(out, key=lambda x: (x.file, x.line))


class _CustomFixes:
    """Findings on workloads of custom resources, as their objects take a fix: a JSON merge patch
    (the API server has no strategic merge for custom resources: ``kubectl patch --type merge``,
    the containers list given whole, said item by item); and a Rollout whose pods are a
    Deployment's template says that its fix goes to that Deployment."""

    def __init__(self, objects: k8s.Objects) -> None:
        self.custom: dict[str, tuple[Any, Any]] = {}  # key → (its object, with Knative's names)
        self.referenced: dict[str, Workload] = {}
        for w in objects.workloads:
            key = obj_key(w.kind, w.metadata.namespace, w.name)
            if id(w) in objects.custom:
                o = objects.origin(w)
                raw = get_path(o.doc.data, o.base)
                self.custom[key] = (raw, _named(raw, o.spec_path, w))
            if id(w) in objects.template_of:
                self.referenced[key] = objects.template_of[id(w)]

    def __call__(self, f: Finding) -> Finding:
        if f.key in self.referenced:
            d = self.referenced[f.key]
            where = (
                f"{d.kind} {d.name}'s pod template, which the Rollout runs (spec.workloadRef), takes the fix"
            )
            return replace(f, message=f"{f.message}; {where}")
        if f.key not in self.custom or f.patch is None or f.patch_type != "strategic":
            return f
        raw, named = self.custom[f.key]
        merged = _merge_patch(raw, _unnamed(apply(named, f.patch)))
        # Said from the strategic patch, over the containers as it names them: each changed field.
        said = ", ".join(describe(f.patch, raw))
        note = f.fix[len(said) + 2 : -1] if f.fix.startswith(said + " (") and f.fix.endswith(")") else ""
        return replace(f, patch=merged, patch_type="merge", fix=fix_line(f.patch, named, note))


_GIVEN = "\0named"  # marks a container _named gave a name


def _named(raw: Any, spec_path: tuple[Any, ...], w: Workload) -> Any:
    """``raw`` with its containers named as the model names them (Knative names a container
    that has none): a strategic patch names containers so."""
    out = copy.deepcopy(raw)
    pod = get_path(out, spec_path)
    for group, containers in (
        ("initContainers", w.pod_spec.init_containers),
        ("containers", w.pod_spec.containers),
    ):
        items = pod.get(group) if isinstance(pod, dict) else None
        for item, c in zip(items if isinstance(items, list) else [], containers, strict=False):
            if isinstance(item, dict) and not item.get("name"):
                item["name"] = c.name
                item[_GIVEN] = True
    return out


def _unnamed(data: Any) -> Any:
    """``data`` without the names ``_named`` gave (a copy)."""
    if isinstance(data, dict):
        given = data.get(_GIVEN, False)
        return {k: _unnamed(v) for k, v in data.items() if k != _GIVEN and not (given and k == "name")}
    if isinstance(data, list):
        return [_unnamed(v) for v in data]
    return data


def _merge_patch(old: Any, new: Any) -> Any:
    """The JSON merge patch that turns ``old`` into ``new`` (lists given whole)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    out: dict[str, Any] = {k: None for k in old if k not in new}
    for k, v in new.items():
        if k not in old:
            out[k] = v
        elif v != old[k]:
            out[k] = _merge_patch(old[k], v)
    return out


def _file(report: CheckReport, finding: Finding, annotations: dict[str, dict[str, str]]) -> None:
    """Report ``finding``, or its suppression when an annotation ignores its rule."""
    ignored = _ignores(annotations.get(finding.key, {}), finding.container)
    reason = ignored.get(finding.rule.id) or ignored.get(finding.rule.name)
    if reason is not None:
        report.suppressed.append(Suppressed(finding, reason))
    else:
        report.findings.append(finding)
