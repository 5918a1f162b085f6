"""Finding the manifests in what a user gives (files, directories, '-' for stdin) and reading
them: every file read, what is not a manifest read past with why (charts, kustomizations and
their patches, tool configs, JSON that is no object), a file that cannot be read noted as an
error entry while the others are still read. ``probesim check``, ``run`` on manifests, ``tune``
and ``fit`` all read through here."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probesim.errors import InputError
from probesim.manifests.kubernetes import READ_KINDS, Skipped
from probesim.manifests.yamlsrc import MAX_CHARS, Doc, load_docs, read_documents, read_text

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
    return isinstance(kind, str) and bool(kind) and (bool(data.get("apiVersion")) or kind in READ_KINDS)


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
    """The documents of one file. A file that cannot be read, or a document that cannot be parsed
    (a duplicate key, a syntax error), is an error entry in ``errors`` (the first raised when
    None); every other document of the file is still read."""
    try:
        text, shown = read_text(name)
    except InputError as e:
        if errors is None:
            raise
        errors.append(e)
        return []
    found: list[Doc] = []
    failed: list[InputError] = []
    for d in read_documents(text, shown):
        if isinstance(d, InputError):
            failed.append(d)
        else:
            found.append(d)
    if failed:
        if _TEMPLATE.search(text):
            why = "Go template markers ({{ }}): render it first (helm template)"
            inputs.skipped.append(_file_note(shown, why))
            return []
        if (json_why := _unreadable_json(shown, text)) is not None:
            inputs.skipped.append(_file_note(shown, json_why))
            return []
        if errors is None:
            raise failed[0]
        errors.extend(failed)
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
