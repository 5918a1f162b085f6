"""Every rule on a manifest that should trigger it and on one that should not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from probesim.analysis.check import check
from probesim.analysis.findings import REGISTRY
from probesim.manifests.scenario import scenario_from_text

# Two replicas spread over nodes and a budget guarding them (after the containers and the
# Service, so that the lines above stay where the tests find them): the disruption rules'
# fixtures are in tests/analysis/test_disruption_rules.py.
SPREAD = (
    "      topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, "
    "whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: web}}}]\n"
)
BUDGET = """\
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}
"""


def deployment(container: str, replicas: int = 2, pod: str = "", meta: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(container).strip("\n"), " " * 10)
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
{meta}spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
{pod}      containers:
        - name: app
          ports: [{{name: http, containerPort: 8080}}]
{body}
{SPREAD}---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80, targetPort: http}}]
{BUDGET}"""


GOOD = """\
readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 5}
livenessProbe: {httpGet: {path: /live, port: http}, periodSeconds: 10, failureThreshold: 3}
"""
SCENARIO = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {{name: s}}
spec:
  duration: 1m
  behavior:
    web:
      containers:
        app:
          start: {start}
          routes:
            /ready: {{calls: [{{dependency: db}}]}}
            /live: {{calls: [{{dependency: db, retries: {{attempts: {attempts}}}}}]}}
  dependencies: {{db: {{}}}}
"""


def ids(tmp_path: Path, manifest: str, scenario: str | None = None) -> set[str]:
    (tmp_path / "m.yaml").write_text(manifest)
    sc = None
    if scenario is not None:
        sc = scenario_from_text(scenario + "---\n" + manifest, "s.yaml", tmp_path)
    return {f.rule.id for f in check([str(tmp_path / "m.yaml")], sc).findings}


CASES = {
    "PS001": (deployment("livenessProbe: {httpGet: {path: /live, port: http}}"), deployment(GOOD)),
    "PS002": (
        deployment(GOOD.replace("port: http}, periodSeconds: 5", "port: metrics}, periodSeconds: 5")),
        deployment(GOOD),
    ),
    "PS003": (
        deployment(
            "readinessProbe: {httpGet: {path: /h, port: http}}\nlivenessProbe: {httpGet: {path: /h, port: http}}"
        ),
        deployment(
            "readinessProbe: {httpGet: {path: /h, port: http}}\nlivenessProbe: {httpGet: {path: /h, port: http}, failureThreshold: 6}"
        ),
    ),
    "PS010": (deployment(GOOD.replace("failureThreshold: 3", "failureThreshold: 1")), deployment(GOOD)),
    "PS011": (
        deployment(GOOD.replace("periodSeconds: 5}", "periodSeconds: 5, timeoutSeconds: 5}")),
        deployment(GOOD),
    ),
    "PS014": (
        deployment(
            GOOD.replace("periodSeconds: 10, failureThreshold: 3", "periodSeconds: 30, failureThreshold: 3")
        ),
        deployment(GOOD),
    ),
    "PS015": (
        deployment(GOOD + "startupProbe: {exec: {command: [check]}, failureThreshold: 30}"),
        deployment(
            GOOD + "startupProbe: {exec: {command: [check]}, failureThreshold: 30, timeoutSeconds: 5}"
        ),
    ),
    "PS015 explicit": (  # timeoutSeconds: 1 written out is as short as the default
        deployment(
            GOOD + "startupProbe: {exec: {command: [check]}, failureThreshold: 30, timeoutSeconds: 1}"
        ),
        deployment(
            GOOD + "startupProbe: {exec: {command: [check]}, failureThreshold: 30, timeoutSeconds: 2}"
        ),
    ),
    "PS018": (deployment(GOOD, pod="      terminationGracePeriodSeconds: 90\n"), deployment(GOOD)),
    "PS019": (  # a failing pod keeps its traffic for 3 × 30 s + 1 s
        deployment(GOOD.replace("periodSeconds: 5}", "periodSeconds: 30}")),
        deployment(GOOD.replace("periodSeconds: 5}", "periodSeconds: 15}")),
    ),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires_on_the_bad_manifest_only(tmp_path: Path, rule: str) -> None:
    bad, good = CASES[rule]
    rid = rule.split()[0]  # "PS015 explicit": a second case of PS015
    assert rid in ids(tmp_path, bad)
    assert rid not in ids(tmp_path, good)


@pytest.mark.parametrize(
    ("rule", "bad", "good"),
    [
        # Start time 40 s: a startup budget of 30 s is too small, 60 s is enough.
        ("PS012", ("40s", "startupProbe: {httpGet: {path: /live, port: http}, periodSeconds: 10}"),
         ("40s", "startupProbe: {httpGet: {path: /live, port: http}, periodSeconds: 10, failureThreshold: 6}")),
        # Liveness gives up after 30 s; a 40 s start without a startup probe is killed.
        ("PS013", ("40s", ""), ("20s", "")),
    ],
)  # fmt: skip
def test_start_time_rules_use_the_scenario(
    tmp_path: Path, rule: str, bad: tuple[str, str], good: tuple[str, str]
) -> None:
    for (start, extra), fires in ((bad, True), (good, False)):
        found = ids(tmp_path, deployment(GOOD + extra), SCENARIO.format(start=start, attempts=1))
        assert (rule in found) is fires


def test_dependency_rules_use_the_scenario(tmp_path: Path) -> None:
    found = ids(tmp_path, deployment(GOOD), SCENARIO.format(start="1s", attempts=1))
    assert {"PS016", "PS017"} <= found
    single = ids(tmp_path, deployment(GOOD, replicas=1), SCENARIO.format(start="1s", attempts=1))
    assert "PS017" not in single  # one replica shares nothing
    assert not {"PS012", "PS013", "PS016", "PS017", "PS025"} & ids(
        tmp_path, deployment(GOOD)
    )  # no scenario: silent


ISTIO = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: web}}
spec:
  host: web.default.svc.cluster.local
  trafficPolicy:
    outlierDetection: {{{od}}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: web}}
spec:
  hosts: [web]
  http:
    - {route}
"""


@pytest.mark.parametrize(
    ("rule", "od", "route", "fires"),
    [
        ("PS020", "consecutive5xxErrors: 3", "route: [{destination: {host: web}}]", True),
        (
            "PS020",
            "consecutive5xxErrors: 3, maxEjectionPercent: 50",
            "route: [{destination: {host: web}}]",
            False,
        ),
        ("PS021", "maxEjectionPercent: 100", "route: [{destination: {host: web}}]", True),
        (
            "PS021",
            "maxEjectionPercent: 100, minHealthPercent: 50",
            "route: [{destination: {host: web}}]",
            False,
        ),
        ("PS022", "consecutive5xxErrors: 1", "route: [{destination: {host: web}}]", True),
        ("PS022", "consecutive5xxErrors: 2", "route: [{destination: {host: web}}]", False),
        (
            "PS023",
            "maxEjectionPercent: 50",
            "{route: [{destination: {host: web}}], mirror: {host: shadow}}",
            True,
        ),
        (
            "PS023",
            "maxEjectionPercent: 50",
            "{match: [{method: {exact: GET}}], route: [{destination: {host: web}}], mirror: {host: shadow}}",
            False,
        ),
        (
            "PS024",
            "maxEjectionPercent: 50",
            "{route: [{destination: {host: web}}], retries: {attempts: 3}}",
            True,
        ),
        (
            "PS024",
            "maxEjectionPercent: 50",
            "{route: [{destination: {host: web}}], retries: {attempts: 3, perTryTimeout: 1s}}",
            False,
        ),
    ],
)
def test_istio_rules(tmp_path: Path, rule: str, od: str, route: str, fires: bool) -> None:
    found = ids(tmp_path, deployment(GOOD) + ISTIO.format(od=od, route=route))
    assert (rule in found) is fires


def test_retry_amplification_across_layers(tmp_path: Path) -> None:
    mesh = deployment(GOOD) + ISTIO.format(
        od="maxEjectionPercent: 50",
        route="{route: [{destination: {host: web}}], retries: {attempts: 3, perTryTimeout: 1s}}",
    )
    assert "PS025" in ids(tmp_path, mesh, SCENARIO.format(start="1s", attempts=3))  # 4 × 3 = 12 > 10
    assert "PS025" not in ids(tmp_path, mesh, SCENARIO.format(start="1s", attempts=2))  # 4 × 2 = 8


def test_every_rule_has_docs_and_a_fixture() -> None:
    covered = (
        {c.split()[0] for c in CASES}
        | {"PS004", "PS005", "PS006", "PS007"}  # PS005-PS007: tests/analysis/test_fixes.py
        | {
            "PS012",
            "PS013",
            "PS016",
            "PS017",
            "PS020",
            "PS021",
            "PS022",
            "PS023",
            "PS024",
            "PS025",
            "PS030",  # tests/analysis/test_kinds_and_inputs.py
            "PS031",
            "PS032",  # tests/analysis/test_rollout_rule.py
            "PS033",  # tests/analysis/test_profiles.py
            "PS034",  # tests/analysis/test_profiles.py
            "PS045",  # tests/analysis/test_handlers_review.py
            "PS100",  # tests/analysis/test_stress.py
        }
        | {"PS035", "PS036", "PS037", "PS038", "PS039", "PS040"}  # tests/analysis/test_disruption_rules.py
        | {"PS041", "PS042"}  # tests/analysis/test_service_rules.py
        | {"PS043"}  # tests/analysis/test_scaling_rule.py
        | {"PS044"}  # tests/analysis/test_throttle_rule.py
        | {"PS046"}  # tests/analysis/test_pause_timeout.py
        | {"PS047"}  # tests/analysis/test_autoscaled_store.py
    )
    for r in REGISTRY.rules.values():
        assert r.title.endswith(".")
        assert len(r.why) > 40 and r.fix
        assert r.id in covered, f"{r.id} has no fixture"


def test_rules_doc_is_generated_from_the_rules() -> None:
    from probesim.analysis.rules import rules_markdown

    assert (Path(__file__).parents[2] / "docs" / "rules.md").read_text() == rules_markdown(), "run make docs"


def test_numeric_probe_port_not_declared_is_info(tmp_path: Path) -> None:
    found = ids(
        tmp_path, deployment(GOOD.replace("port: http}, periodSeconds: 5", "port: 9090}, periodSeconds: 5"))
    )
    assert "PS004" in found
    assert "PS004" not in ids(
        tmp_path, deployment(GOOD.replace("port: http}, periodSeconds: 5", "port: 8080}, periodSeconds: 5"))
    )


def test_every_rule_has_the_family_of_the_module_declaring_it() -> None:
    from probesim.analysis.findings import REGISTRY

    families = {r.id: r.family for r in REGISTRY.rules.values()}
    assert set(families.values()) == {
        "probes",
        "startup",
        "dependencies",
        "kinds",
        "rollout",
        "mesh",
        "disruption",
        "scaling",
        "services",
        "stress",
    }
    assert (families["PS001"], families["PS020"], families["PS100"]) == ("probes", "mesh", "stress")
    from probesim.analysis.check import check
    from probesim.report.check_outputs import to_sarif
    from tests.analysis.test_realworld import REALWORLD

    if not REALWORLD.is_dir():
        pytest.skip("the shared real-world corpus is not beside the project")
    rules = to_sarif(check([str(REALWORLD / "bookinfo")]))["runs"][0]["tool"]["driver"]["rules"]
    assert all(r["properties"]["tags"] == ["kubernetes", families[r["id"]]] for r in rules)
