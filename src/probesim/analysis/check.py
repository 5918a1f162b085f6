"""Run the rules over manifests: inputs (files, directories, stdin), the ``.probesim.yaml``
config, suppressions by annotation, and the report every output format renders."""

from __future__ import annotations

import os
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
from probesim.manifests.kubernetes import Skipped, obj_key
from probesim.manifests.yamlsrc import MAX_CHARS, Doc, load_docs, read_text
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
    skipped: list[Skipped] = field(default_factory=list)
    stress: list[StressResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # said on stderr: unknown rules in annotations, …
    # Files that do not parse and objects the API server would refuse: each reported, the rest
    # still linted; the check then exits 2.
    errors: list[InputError] = field(default_factory=list)

    def worst(self) -> Severity | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)

    def fails(self, fail_on: FailOn) -> bool:
        worst = self.worst()
        return fail_on != "never" and worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK[fail_on]


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Fields of a kustomization that name files which are not whole objects.
_KUSTOMIZE_FILE_FIELDS = (
    "patchesStrategicMerge", "patches", "patchesJson6902", "transformers", "generators",
    "validators", "configurations", "replacements",
)  # fmt: skip
_KUSTOMIZE_WHY = "a kustomization: run `kubectl kustomize DIR | probesim check -` to lint what it builds"
_TEMPLATE = re.compile(r"\{\{-?\s*[.$\w(/\"'-]")


@dataclass
class Inputs:
    """The files to read, and the files and folders read past (with why)."""

    files: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)  # unrendered Helm chart folders
    patches: set[str] = field(default_factory=set)  # real paths of kustomize patches and plugins


def _file_note(path: str, why: str) -> Skipped:
    return Skipped("", None, None, path, None, why)


def _kustomize_refs(path: Path, inputs: Inputs) -> None:
    """Note the files a kustomization names as patches, transformers or generators: they are
    pieces of objects, read by kustomize, not manifests to lint."""
    try:
        docs = list(load_docs(*read_text(str(path))))
    except InputError:
        return
    data = docs[0].data if docs else None
    if not isinstance(data, dict):
        return
    for key in _KUSTOMIZE_FILE_FIELDS:
        entries = data.get(key)
        for e in entries if isinstance(entries, list) else []:
            ref = e.get("path") if isinstance(e, dict) else e
            if isinstance(ref, str) and "\n" not in ref and (path.parent / ref).is_file():
                inputs.patches.add(os.path.realpath(path.parent / ref))


def discover(paths: list[str]) -> Inputs:
    """Files to read: the paths given ('-' for stdin), directories walked for *.yaml, *.yml and
    *.json. Helm chart folders (a Chart.yaml) and kustomizations are noted, not read."""
    inputs = Inputs()
    for p in paths:
        if p == "-":
            inputs.files.append(p)
            continue
        path = Path(p)
        try:
            is_dir, exists = path.is_dir(), path.exists()
        except OSError as e:  # a name the system refuses: too long
            raise InputError(f"cannot read: {e.strerror}", file=p) from None
        if is_dir:
            _walk(path, inputs)
        elif exists:
            if path.name in KUSTOMIZATIONS:
                _kustomize_refs(path, inputs)
                inputs.skipped.append(_file_note(p, _KUSTOMIZE_WHY))
            else:
                inputs.files.append(p)
        else:
            raise InputError("file not found", file=p)
    return inputs


def _walk(root: Path, inputs: Inputs) -> None:
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in (".git", ".hg", ".svn", "node_modules"))
        here = Path(d)
        if "Chart.yaml" in names:
            inputs.charts.append(d)
            why = f"an unrendered Helm chart: run `helm template {d} | probesim check -`"
            inputs.skipped.append(_file_note(d, why))
            dirs[:] = []
            continue
        for n in sorted(names):
            f = here / n
            if n in KUSTOMIZATIONS:
                _kustomize_refs(f, inputs)
                inputs.skipped.append(_file_note(str(f), _KUSTOMIZE_WHY))
            elif f.suffix in MANIFEST_SUFFIXES and not n.startswith(".probesim") and f.is_file():
                if f.stat().st_size > MAX_CHARS:  # a lock file, a data dump: no manifest is this big
                    why = f"larger than {MAX_CHARS // 1_000_000} MB: not read"
                    inputs.skipped.append(_file_note(str(f), why))
                else:
                    inputs.files.append(str(f))


def nothing_found(paths: list[str], inputs: Inputs) -> InputError:
    if inputs.charts:
        chart = inputs.charts[0]
        return InputError(
            f"{chart} is an unrendered Helm chart: run `helm template {chart} | probesim check -`"
        )
    shown = "standard input" if paths == ["-"] else ", ".join(paths)
    hint = " (did the command before the pipe fail?)" if "-" in paths else ""
    return InputError(f"no Kubernetes object found in {shown}{hint}")


_COMPOSE = re.compile(r"^(docker-)?compose([.-][\w.-]+)?\.ya?ml$")
# Package and tool configs that are JSON or YAML (a repository's root holds several).
_TOOL_CONFIGS = re.compile(
    r"^(package(-lock)?|composer|tsconfig[\w.-]*|jsconfig|babel\.config|\.babelrc|devcontainer|"
    r"\.eslintrc|\.prettierrc|renovate|lerna|nx|angular|tslint|\.stylelintrc|manifest|app|"
    r"\.?markdownlint|\.pre-commit-config|\.golangci|codecov|\.?goreleaser|mkdocs|dependabot)"
    r"(\.[\w-]+)?\.(json|ya?ml)$"
)
_JSON_KEYS = re.compile(r'"(apiVersion|kind)"\s*:')


def _why_not_manifest(file: str, data: Any = None) -> str:
    """Why a file without a Kubernetes object (its documents lack apiVersion and kind) is read past."""
    name = Path(file).name
    if name == "Chart.yaml":
        return "Helm chart metadata, not a Kubernetes object"
    if name.startswith("values") and name.endswith((".yaml", ".yml")):
        return "Helm values, not a Kubernetes object"
    if "/.github/workflows/" in file.replace(os.sep, "/"):
        return "a CI workflow, not a Kubernetes object"
    if _COMPOSE.match(name):
        return "a Compose file, not a Kubernetes object"
    if _TOOL_CONFIGS.match(name) or "/.devcontainer/" in file.replace(os.sep, "/"):
        return "a package or tool config, not a Kubernetes object"
    if isinstance(data, dict) and ("panels" in data or "dashboard" in data):
        return "a dashboard, not a Kubernetes object"
    return "no Kubernetes object (no document has apiVersion and kind)"


def _is_manifest(data: Any) -> bool:
    """A document is a Kubernetes object when it has apiVersion and kind (or names a kind probesim
    reads, whose missing apiVersion is then an error)."""
    if not isinstance(data, dict):
        return False
    kind = data.get("kind")
    return isinstance(kind, str) and bool(kind) and (bool(data.get("apiVersion")) or kind in k8s.READ_KINDS)


def _unreadable_json(shown: str, text: str) -> str | None:
    """Why a .json file that does not parse is not a manifest: JSON with comments or trailing
    commas (a dashboard export, devcontainer.json, babel.config.json) that names no apiVersion and
    kind. None when it may be a broken manifest (then it is an error)."""
    if not shown.endswith(".json") or len(_JSON_KEYS.findall(text)) >= 2:
        return None
    if re.search(r"(^|\s)(//|/\*)", text):
        return f"JSON with comments: {_why_not_manifest(shown)}"
    return f"not plain JSON, and no apiVersion and kind: {_why_not_manifest(shown)}"


def _read_file(name: str, inputs: Inputs, errors: list[InputError] | None) -> list[Doc]:
    """The documents of one file; a file that cannot be read or parsed is an error entry in
    ``errors`` (raised when None), keeping the documents before the error."""
    try:
        text, shown = read_text(name)
    except InputError as e:
        if errors is None:
            raise
        errors.append(e)
        return []
    found: list[Doc] = []
    try:
        for d in load_docs(text, shown):
            found.append(d)
    except InputError as e:
        if _TEMPLATE.search(text):
            why = "Go template markers ({{ }}): render it first (helm template)"
            inputs.skipped.append(_file_note(shown, why))
            return []
        if (json_why := _unreadable_json(shown, text)) is not None:
            inputs.skipped.append(_file_note(shown, json_why))
            return []
        if errors is None:
            raise
        errors.append(e)
    # Scenario files among the inputs are skipped (their objects come in with --scenario).
    found = [d for d in found if not (isinstance(d.data, dict) and d.data.get("kind") == "Scenario")]
    if found and not any(_is_manifest(d.data) for d in found):
        inputs.skipped.append(_file_note(shown, _why_not_manifest(shown, found[0].data)))
        return []
    return found


def read_manifests(paths: list[str], errors: list[InputError] | None = None) -> tuple[list[Doc], Inputs]:
    """Every document to lint, with the files read past noted in the returned inputs. With
    ``errors``, a file that cannot be read or parsed is noted there and the others still read."""
    inputs = discover(paths)
    docs: list[Doc] = []
    for name in inputs.files:
        if name != "-" and os.path.realpath(name) in inputs.patches:
            inputs.skipped.append(_file_note(name, "a kustomize patch or plugin config, not a whole object"))
            continue
        docs += _read_file(name, inputs, errors)
    return docs, inputs


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
    scenario_docs: list[Doc] | None = None,
) -> CheckReport:
    """Lint the manifests in ``paths`` (and ``scenario_docs``, the objects a scenario file holds
    itself); with ``stress``, also run the stress suite."""
    cfg = config or CheckConfig()
    errors: list[InputError] = []
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
    ctx = Context(objects, scenario, Thresholds.from_dict(cfg.thresholds))
    files = inputs.files + [
        f for f in dict.fromkeys(d.file for d in scenario_docs or []) if f not in inputs.files
    ]
    report = CheckReport(rules=selected_rules(cfg), files=files, skipped=skipped, errors=errors)
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
            _file(report, finding, annotations)
    if stress and any(r.id == "PS100" for r in report.rules):
        results = stress_suite(objects, scenario, StressThresholds.from_dict(cfg.stress))
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
            _file(report, finding, annotations)
    report.findings.sort(key=lambda x: (x.file, x.line, x.rule.id))
    return report


def _file(report: CheckReport, finding: Finding, annotations: dict[str, dict[str, str]]) -> None:
    """Report ``finding``, or its suppression when an annotation ignores its rule."""
    ignored = _ignores(annotations.get(finding.key, {}), finding.container)
    reason = ignored.get(finding.rule.id) or ignored.get(finding.rule.name)
    if reason is not None:
        report.suppressed.append(Suppressed(finding, reason))
    else:
        report.findings.append(finding)
