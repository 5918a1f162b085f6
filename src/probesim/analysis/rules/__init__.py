"""The check rules, in families (probes, start-up, dependencies, kinds, rollout, mesh), each with an
ID, a severity, a one-line title and a docs entry (what goes wrong, the source, the fix);
``docs/rules.md`` is generated from here."""

from __future__ import annotations

from collections.abc import Iterator

from probesim.analysis.context import Context
from probesim.analysis.findings import REGISTRY, Finding
from probesim.analysis.rules import (  # noqa: F401  (registers)
    dependencies,
    disruption,
    kinds,
    mesh,
    probes,
    rollout,
    scaling,
    services,
    startup,
)

__all__ = ["rules_markdown"]

rule = REGISTRY.rule


@rule(
    id="PS100",
    name="stress-failure",
    severity="error",
    title="The workload fails a simulated stress (probesim check --stress).",
    why="The stress suite simulates each workload behind a Service — its app starting in its "
    "profile's typical time, with its HPA and the Istio rules among the files — under doubled "
    "and tripled traffic, a doubled start time, half of its dependency calls hanging, one pod "
    "answering 500 (an HTTP app), a 2 s stop-the-world pause (the app's longest when longer; "
    "the pause's own failures not judged) and CPU throttled to the request, and compares error %, "
    "restarts and the lowest ready fraction with thresholds (stress in .probesim.yaml); "
    "through a rolling update of a new version that behaves as the last and of one that never "
    "becomes Ready, where the old pods must keep serving: errors from the rollout on, available "
    "replicas against replicas − maxUnavailable, and whether it completes (or, for the bad "
    "release, stalls); and through the crash at 2m of the node holding most of its replicas "
    "(node-down) and of that node's zone (zone-down, when it has other nodes too), run for 10 "
    "minutes, for workloads of two replicas or more: the requests failed "
    "until the node controller notices are reported (no probe can see a dead node), and judged "
    "are the lowest ready fraction and whether every replica is Ready again by the end (a "
    "StatefulSet's pod on the lost node waits for it, as Kubernetes has it: said, not judged); "
    "and through a node pool upgrade from 2m (node-drain: GKE's surge upgrade, maxSurge 1, each node "
    "drained in turn through the workload's PodDisruptionBudgets), judged on whether it completes "
    "(a budget that allows no eviction stalls it), failed requests, the lowest ready fraction and "
    "restarts (a replacement killed by liveness before it has started). Without spec.cluster.nodes "
    "in the scenario, the node stresses give the workload 3 nodes in zones a, b and c, each with "
    "room for every replica, and say so.",
    fix="Read which stress failed and why, then see its timeline: the finding's fix is the command that "
    "simulates it again (probesim run MANIFESTS --workload KIND/NAMESPACE/NAME --stress STRESS).",
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
        "  Custom resources that run pods are linted too: an Argo Rollout (`argoproj.io`: its",
        "  `spec.template`, or the Deployment its `spec.workloadRef` names — a Deployment scaled to 0,",
        "  as Argo's convention has it, is then linted as the Rollout only), a Knative Service or",
        "  Configuration (`serving.knative.dev`, with Knative's defaults: containers named",
        "  `user-container`, the port the serving container declares or 8080, and queue-proxy's",
        "  default readiness — a TCP probe of that port — where none is given), and any other custom",
        "  resource with a pod template at `spec.template` (`spec.template.spec.containers`); their",
        "  fixes are JSON merge patches. A Rollout's canary or blue-green strategy is not read (the",
        "  rollout rule and stresses judge Deployments' and StatefulSets' rolling updates).",
        "  Services (which containers their `targetPort` reaches, by number or name; only in the same",
        "  namespace), HPAs (any metrics), KEDA ScaledObjects (`keda.sh`: the scaler of their target,",
        "  0 to 100 replicas unless they say) and Istio DestinationRules and VirtualServices are read",
        "  for the rules. A Job's or CronJob's pods are never behind a Service. PodDisruptionBudgets",
        "  (`policy/v1`, `policy/v1beta1`) are read for the disruption rules (PS035–PS040): their",
        "  selector against the pod templates of the same namespace, and the disruption controller's",
        "  arithmetic over the replicas of the workloads they select (the HPA's or ScaledObject's",
        "  minimum when one scales them); a budget the API server would refuse is not judged.",
        "- **Listed**: every report says what it linted — the text summary counts the workloads (`-v`",
        "  lists each, with what scales it), JSON has `linted` (kind, namespace, name, file, line,",
        "  apiVersion, `scaledBy`), SARIF `runs[0].properties.linted`, JUnit a test case per workload",
        "  and rule.",
        "- **Identity**: objects are told apart by kind, namespace and name; the same name in two",
        "  namespaces (or two folders of variants) is two objects, both linted.",
        "- **As the API server reads them**: a field left empty (`annotations:`) is unset; CPU",
        "  quantities take every form Kubernetes takes (`.5`, `500m`, `1e3`, `2Ki`); a YAML 1.1 `=`",
        "  scalar is the string `=`; `kind: List` and every `<Kind>List` with `items` are read item by",
        "  item.",
        "- **Skipped, with a note** (one summary line in text, each with why under `-v`, `skipped` in",
        "  JSON, `runs[0].properties.skipped` in SARIF, `system-out` in JUnit): kinds with no pod",
        "  template (ConfigMap, RBAC, …), custom resources with no pod template",
        "  at `spec.template` and their definitions, files that",
        "  hold no Kubernetes object (Chart.yaml, values files, CI workflows, Compose files),",
        "  kustomizations and the patches and plugin configs they name, files with Go template markers,",
        "  and unrendered Helm chart folders (a `Chart.yaml`: pipe `helm template` output instead).",
        "- **Exit 2** only for what you must fix: YAML that does not parse (outside templates), an",
        "  invalid field in an object probesim reads (for example an apps/v1 Deployment without a",
        "  selector, as in a kustomize base that relies on `commonLabels`), a misspelt kind in a",
        "  built-in API group, or no Kubernetes object anywhere (an empty `helm template` pipe, a chart",
        "  folder alone). Each error is its document's — a duplicate key names both lines, a syntax",
        "  error its line — and every other document of the file is still linted.",
        "",
        "## How fixes are computed and checked",
        "",
        "- **One probe-timing model** (`rules/timing.py`). A probe's fields are read as times: its budget",
        "  (periodSeconds × failureThreshold, the failures it tolerates), the worst case from a hang to the",
        "  kubelet acting (budget + timeoutSeconds), the start-up budget (initialDelaySeconds + budget)",
        "  and, for liveness, the restart (the act + the probe's or the pod's grace, at least 2 s). Every",
        "  rule on a probe judges with these figures, and takes its fix from one plan per container",
        "  (`rules/plan.py`) that satisfies all of them at once, in this order: a readiness probe is added",
        "  where a Service sends traffic (PS001); exec probes get 5 s, and so does an httpGet or grpc",
        "  liveness on a CPU limit below 100m (PS044, CFS throttling); an httpGet or grpc liveness gets a",
        "  second above the app's documented pauses (PS046: a JVM's GC); a timeout covers twice its check's",
        "  time in a scenario (PS007, the latency tail), and every timeout stays below its period (PS015,",
        "  PS011: the period is raised when the detection target still fits, else the timeout lowered);",
        "  readiness takes a failing pod out within `detectionTarget` (PS019, failureThreshold lowered, or",
        "  the period to a round value with failureThreshold 3); liveness gets failureThreshold 3 for 1",
        "  (PS010), a probe-level grace of 10 s for a long pod grace (PS018), acts within `detectionTarget`",
        "  and is back within `restartTarget` (PS014); liveness outlasts readiness (PS003 on the same",
        "  check, PS005 on another: twice readiness's budget where the target allows, else just above it —",
        "  and when even that is past the target, readiness yields: the target wins, readiness is lowered",
        "  below liveness); a startup probe covers 1.5 × the scenario's start, else the slowest start the",
        "  app's profile documents (PS012, PS013). A TCP check's figures are said as what it acts on, a",
        "  port that stops accepting connections, never a hang (a hung process still accepts them). So two",
        "  findings on one container never ask for two values of one field: they show the same plan, each",
        "  with the probes it touches and those the plan chose against them (liveness with readiness,",
        "  liveness with startup when both change).",
        "- **Handlers that fit the container** (`rules/handlers.py`). A probe the fix adds is the",
        "  app's own check for that probe kind when its profile knows one (below: Spring Boot's",
        "  `/actuator/health/readiness`, Prometheus' `/-/ready`, `pg_isready` for PostgreSQL,",
        "  `redis-cli ping`, `mysqladmin ping`, `rabbitmq-diagnostics`, a TCP check for Kafka and",
        "  ZooKeeper), on the port the app's health endpoints listen on (a management port, or the",
        "  port a probe already uses for them); else a probe already checking that port; else `grpc`",
        "  where the port is gRPC (its name or the Service's appProtocol), and `tcpSocket` otherwise",
        "  — an HTTP port with no known path too (an `httpGet` on a guessed path could never pass;",
        "  the fix says an httpGet on a readiness path is better). A probe's handler is replaced only",
        "  where the risk is the handler: an exec of `grpc_health_probe` with a 1 s timeout becomes the",
        "  kubelet's `grpc: {port: N}` probe (GA in 1.27) with a 3 s timeout and the user's period",
        "  (PS015: a longer exec timeout alone does not help, grpc_health_probe's own -connect-timeout",
        "  and -rpc-timeout are 1 s), kept as an exec where it uses TLS or headers; a TCP readiness",
        "  becomes the app's own check where its profile says what TCP misses (PS045: PostgreSQL in",
        "  recovery, Redis loading its dataset). etcd's endpoints are on the port of the first",
        "  `--listen-metrics-urls` or `--listen-client-urls` URL the kubelet can reach (a catalog field,",
        "  `healthPortFlags`), and a readiness check that needs the cluster's quorum says so, with the",
        "  Services the members reach each other through, which need `publishNotReadyAddresses`. A",
        "  fix that changes a bare Pod's probes says the Pod must be recreated (a Pod's probes are",
        "  immutable). Containers that serve nothing (the",
        "  pause image, `sleep infinity`, `tail -f /dev/null`), ports that only expose metrics",
        "  (named `metrics`, `http-metrics`, `…-metrics`) and headless Services' ports no container",
        "  declares are not asked for probes. No load is invented: PS032 judges a rollout's capacity",
        "  by the scenario's traffic, and without it reports only a Deployment whose rollout leaves",
        "  no pod serving; a StatefulSet of one replica is never told to stop its rollouts.",
        "- **One probe policy** (`analysis/policy.py`): the principles experienced SREs apply, each",
        "  with its sources — readiness where a Service sends traffic, liveness only where a restart",
        "  cures something and more tolerant than readiness (a larger failure budget), failureThreshold",
        "  3 or more on liveness and 2 or more on readiness, a startup probe rather than a long",
        "  initialDelaySeconds, timeouts below periods, the handler that fits the protocol. Every plan",
        "  keeps them, and `tests/analysis/test_profiles.py` checks that no fix of the real-world",
        "  corpus breaks one the original kept. Where the sources disagree (liveness on every server;",
        "  identical liveness and readiness), the policy says which way probesim goes and why.",
        "- **Fixes as data.** Each fix is a patch of its object: a strategic-merge patch for Kubernetes",
        "  kinds (`kubectl patch --type strategic -p '<patch>'`: containers merged by name, ports by",
        "  containerPort, `null` deletes), a JSON merge patch for Istio's resources (`--type merge`;",
        "  lists such as `subsets` and `http` are given whole). JSON has it as `patch` and `patchType`;",
        "  SARIF in the result's `properties`, and as `fixes` with exact replacements when every change",
        "  replaces a value the file already has (SARIF requires located text edits; a field the fix",
        "  adds has no text to replace, so its fix is the patch and the message). The text `fix:` line",
        "  is said from the patch: every changed field (`livenessProbe.failureThreshold: 5`), `add` for",
        "  a new probe or list item, `remove` for a deleted field, then why in parentheses. Findings",
        "  whose cure is code (PS006, PS016, PS017, PS023, PS025, PS100) keep a text fix.",
        "- **Checked.** `tests/analysis/test_fixes.py` applies every finding's patch alone, as the API",
        "  server would, and checks again: the finding is gone and no warning or error is new — over",
        "  every finding of the real-world corpus and over generated manifests (hypothesis); and no two",
        "  findings on one object set one field to two values.",
        "",
        "## App profiles: what probesim assumes about each container",
        "",
        "Before it advises, probesim works out what each container is, from evidence, strongest",
        "first: the image (`quay.io/prometheus/prometheus:v2.51.0` is Prometheus, `bitnami/postgresql`",
        "PostgreSQL; an exporter or an operator of a family is not the family), the probes' paths",
        "(`/actuator/health/…` is Spring Boot, `/q/health/…` Quarkus, `/-/ready` the Prometheus",
        "family), the environment (`SPRING_…`, `QUARKUS_…`, `ASPNETCORE_…`; `MANAGEMENT_SERVER_PORT`",
        "moves Spring's health endpoints) and the program the command runs (`gunicorn`, `puma`,",
        "`nginx`: the executable past wrappers such as `tini` or `gosu`, the module of `python -m`,",
        "and for `sh -c SCRIPT` the first word of each command of the script, never its comments,",
        "options or arguments). The catalog",
        "(`probesim check --list-profiles`; one entry per family, each value with its source in",
        "`src/probesim/profiles/catalog.yaml`) gives the health endpoints per probe kind, the port's",
        "protocol, the start range on a normally loaded node, the worst pause to ride out, which",
        "paths check only the process or also a dependency, and what its replicas are to each other",
        "(`membership`: a quorum system such as etcd, ZooKeeper or a MongoDB replica set; one primary",
        "such as PostgreSQL, MySQL or Redis; else interchangeable replicas), which the disruption",
        "rules' fixes follow (PS035, PS037, PS039) and an autoscaler on such a store is said (PS047);",
        "its worst pause sets the least liveness timeout (PS046). An app no entry matches gets a",
        "generic profile: no health path is guessed, it answers at once, never pauses and its replicas are",
        "interchangeable — said as such. A scenario's behaviour overrides the start (`start:` of the",
        "container); `membership: quorum` in a correction names a cluster the catalog calls otherwise.",
        "",
        "Every finding says what it assumed: `assumed` in JSON (`profile`, `evidence`, `endpoints`,",
        "`start`, `pause`, `corrected`), in the SARIF result's `properties`, and one line per container",
        "in text (`[app] assumed: Spring Boot (probe path /actuator/health/liveness): starts in 20s",
        "(1m30s at worst), pauses up to 2s`). Correct it in one place, `.probesim.yaml`, which every",
        "command reads; the first entry that matches a container wins:",
        "",
        "```yaml",
        "profiles:",
        "  - workload: orders          # and/or container: NAME, image: REGEX",
        "    profile: spring-boot      # a catalog id (probesim check --list-profiles)",
        "    start: {typical: 40s, worst: 3m}",
        "    pause: 3s",
        "  - image: registry.acme.io/  # every image of the registry",
        "    readiness: {httpGet: {path: /ready}}",
        "    liveness: {httpGet: {path: /live}}",
        "    selfContained: [/ready, /live]   # these paths check only the process",
        "```",
        "",
        "| ID | name | family | severity | what it finds |",
        "|---|---|---|---|---|",
    ]
    rules = sorted(REGISTRY.rules.values(), key=lambda r: r.id)
    lines += [
        f"| [{r.id}](#{r.id.lower()}) | {r.name} | {r.family} | {r.severity} | {r.title} |" for r in rules
    ]
    for r in rules:
        lines += ["", f"## {r.id}", "", f"**{r.name}** ({r.family}, {r.severity}) — {r.title}", ""]
        lines += [f"What goes wrong: {r.why}", "", f"Fix: {r.fix}"]
    return "\n".join(lines) + "\n"
