"""Run the rules over manifests: inputs (files, directories, stdin), the ``.probesim.yaml``
config, suppressions by annotation, and the report every output format renders."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from probesim.analysis import rules as _rules  # noqa: F401  (registers the rules)
from probesim.analysis.context import Context, Thresholds
from probesim.analysis.findings import REGISTRY, SEVERITY_RANK, Finding, Rule, Severity
from probesim.analysis.stress import StressResult, StressThresholds, stress_suite
from probesim.errors import InputError
from probesim.manifests import kubernetes as k8s
from probesim.manifests.errors import from_validation
from probesim.manifests.yamlsrc import Doc, load_docs, read_text
from probesim.model.base import Model
from probesim.model.scenario import Scenario

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


@dataclass
class Suppressed:
    finding: Finding
    reason: str


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Suppressed] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stress: list[StressResult] = field(default_factory=list)

    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)

    def fails(self, fail_on: FailOn) -> bool:
        worst = self.worst()
        return fail_on != "never" and worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on]


def yaml_files(paths: list[str]) -> list[str]:
    """Files to read: the paths given, directories walked for *.yaml / *.yml, '-' for stdin."""
    out: list[str] = []
    for p in paths:
        if p == "-":
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            found = sorted(str(f) for f in path.rglob("*") if f.suffix in (".yaml", ".yml") and f.is_file())
            out += [f for f in found if not Path(f).name.startswith(".probesim")]
        elif path.exists():
            out.append(p)
        else:
            raise InputError("file not found", file=p)
    return out


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
    try:
        Thresholds.from_dict(cfg.thresholds)
    except (ValueError, TypeError) as e:
        raise InputError(
            str(e), file=shown, line=docs[0].line_of(("thresholds",)), field="thresholds"
        ) from None
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
) -> CheckReport:
    cfg = config or CheckConfig()
    files = yaml_files(paths)
    docs: list[Doc] = []
    for name in files:
        docs += list(load_docs(*read_text(name)))
    # Scenario files among the inputs are skipped (their objects come in with --scenario).
    docs = [d for d in docs if not (isinstance(d.data, dict) and d.data.get("kind") == "Scenario")]
    objects = k8s.parse(docs)
    ctx = Context(objects, scenario, Thresholds.from_dict(cfg.thresholds))
    report = CheckReport(rules=selected_rules(cfg), files=files, skipped=objects.skipped)
    annotations = {}
    for w in objects.workloads:
        a = {**w.metadata.annotations, **w.spec.template.metadata.annotations}
        annotations[f"{w.kind}/{w.name}"] = a
    for _doc, _base, data in objects.istio:
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        ann = meta.get("annotations") if isinstance(meta, dict) else None
        annotations[f"{data.get('kind')}/{meta.get('name') if isinstance(meta, dict) else ''}"] = (
            {str(k): str(v) for k, v in ann.items()} if isinstance(ann, dict) else {}
        )
    for r in report.rules:
        for finding in REGISTRY.checks[r.id](ctx):
            ignored = _ignores(annotations.get(finding.obj, {}), finding.container)
            reason = ignored.get(r.id) or ignored.get(r.name)
            if reason is not None:
                report.suppressed.append(Suppressed(finding, reason))
            else:
                report.findings.append(finding)
    if stress and any(r.id == "PS100" for r in report.rules):
        results = stress_suite(
            objects.workloads, objects.services, scenario, StressThresholds.from_dict(cfg.stress)
        )
        report.stress = results
        for res in results:
            if res.verdict != "fail":
                continue
            w = next(x for x in objects.workloads if x.name == res.workload)
            doc, base = objects.origins[f"{w.kind}/{w.name}"]
            finding = ctx.raw_finding(
                "PS100", doc, base, f"{w.kind}/{w.name}", (), f"{res.stress}: {res.why}"
            )
            ignored = _ignores(annotations.get(finding.obj, {}), "")
            reason = ignored.get("PS100") or ignored.get("stress-failure")
            (
                report.suppressed.append(Suppressed(finding, reason))
                if reason
                else report.findings.append(finding)
            )
    report.findings.sort(key=lambda x: (x.file, x.line, x.rule.id))
    return report
