"""The check rules, in families (probes, start-up, dependencies, kinds, rollout, mesh), each with an
ID, a severity, a one-line title and a docs entry (what goes wrong, the source, the fix);
``docs/rules.md`` is generated from here."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.rules import dependencies, kinds, mesh, probes, rollout, startup  # noqa: F401  (registers)
from probesim.analysis.rules.rollout import Rolling, rolling_update

__all__ = ["Rolling", "rolling_update", "rules_markdown"]

rule = REGISTRY.rule

__all__ = ["Rolling", "rolling_update", "rules_markdown"]


@rule(
    "PS100", "stress-failure", "error",
    "The workload fails a simulated stress (probesim check --stress).",
    "The stress suite simulates each workload behind a Service under doubled and tripled "
    "traffic, a doubled start time, half of its dependency calls hanging, one pod answering "
    "500, a 2 s stop-the-world pause and CPU throttled to the request, and compares error %, "
    "restarts and the lowest ready fraction with thresholds (stress in .probesim.yaml); and "
    "through a rolling update of a new version that behaves as the last and of one that never "
    "becomes Ready, where the old pods must keep serving: errors from the rollout on, available "
    "replicas against replicas − maxUnavailable, and whether it completes (or, for the bad "
    "release, stalls).",
    "Read which stress failed and why; probesim run the workload's scenario under it to see the timeline.",
)  # fmt: skip
def stress_failure(ctx: Context) -> Iterator[Finding]:
    return iter(())  # findings come from the stress suite, not from reading manifests


def rules_markdown() -> str:
    """docs/rules.md, generated from the rules themselves (``make docs``)."""
    lines = [
        "# probesim check rules",
        "",
        "Generated from `src/probesim/analysis/rules/` by `make docs`; do not edit by hand.",
        'Suppress a finding with the annotation `probesim.dev/ignore: "PS010=reason"` on the object',
        "or its pod template (`probesim.dev/ignore-<container>` for one container), or exclude the",
        "rule in `.probesim.yaml`. An unknown rule ID in the annotation is warned about.",
        "",
        "## What is read, and what is skipped",
        "",
        "- **Linted**: every pod template — Deployment, StatefulSet, DaemonSet, ReplicaSet,",
        "  ReplicationController, Job, CronJob (its `jobTemplate`) and bare Pods — with init",
        "  containers and native sidecars (`restartPolicy: Always`); older API versions of these",
        "  kinds (`extensions/v1beta1`, `apps/v1beta1/2`, `batch/v1beta1`) are read with the same rules.",
        "  Services (which containers their `targetPort` reaches, by number or name; only in the same",
        "  namespace), HPAs (any metrics), and Istio DestinationRules and VirtualServices are read",
        "  for the rules. A Job's or CronJob's pods are never behind a Service.",
        "- **Identity**: objects are told apart by kind, namespace and name; the same name in two",
        "  namespaces (or two folders of variants) is two objects, both linted.",
        "- **As the API server reads them**: a field left empty (`annotations:`) is unset; CPU",
        "  quantities take every form Kubernetes takes (`.5`, `500m`, `1e3`, `2Ki`); a YAML 1.1 `=`",
        "  scalar is the string `=`; `kind: List` and every `<Kind>List` with `items` are read item by",
        "  item.",
        "- **Skipped, with a note** (one summary line in text, each with why under `-v`, `skipped` in",
        "  JSON, `runs[0].properties.skipped` in SARIF, `system-out` in JUnit): kinds with no pod",
        "  template (ConfigMap, RBAC, PodDisruptionBudget, …), custom resources and their definitions",
        "  (including a Knative `serving.knative.dev` Service: its controller makes the pods), files that",
        "  hold no Kubernetes object (Chart.yaml, values files, CI workflows, Compose files),",
        "  kustomizations and the patches and plugin configs they name, files with Go template markers,",
        "  and unrendered Helm chart folders (a `Chart.yaml`: pipe `helm template` output instead).",
        "- **Exit 2** only for what you must fix: YAML that does not parse (outside templates), an",
        "  invalid field in an object probesim reads (for example an apps/v1 Deployment without a",
        "  selector, as in a kustomize base that relies on `commonLabels`), a misspelt kind in a",
        "  built-in API group, or no Kubernetes object anywhere (an empty `helm template` pipe, a chart",
        "  folder alone).",
        "",
        "| ID | name | severity | what it finds |",
        "|---|---|---|---|",
    ]
    rules = sorted(REGISTRY.rules.values(), key=lambda r: r.id)
    lines += [f"| [{r.id}](#{r.id.lower()}) | {r.name} | {r.severity} | {r.title} |" for r in rules]
    for r in rules:
        lines += ["", f"## {r.id}", "", f"**{r.name}** ({r.severity}) — {r.title}", ""]
        lines += [f"What goes wrong: {r.why}", "", f"Fix: {r.fix}"]
    return "\n".join(lines) + "\n"
