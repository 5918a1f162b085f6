"""PS032 rollout-capacity: pods taken away by a rolling update (the controllers' rounding) and new
pods Ready before they serve, against the scenario's load — never a load probesim invents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from probesim.analysis.check import check
from probesim.cli import app
from probesim.manifests.scenario import scenario_from_text

READY = "readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 2}"
CPU = "resources: {requests: {cpu: 500m}, limits: {cpu: 500m}}"  # LOAD: 50 % of a pod

# 50 req/s a replica at 5 ms of CPU each: half of a 500m pod.
LOAD = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {{name: s}}
spec:
  duration: 1m
  behavior:
    web: {{containers: {{app: {{routes: {{/: {{cpu: 5ms}}}}}}}}}}
  traffic: [{{path: /, rate: {rate}}}]
"""


def loaded(replicas: int) -> str:
    return LOAD.format(rate=50 * replicas)


def workload(
    replicas: int,
    strategy: str = "",
    probes: str = READY,
    resources: str = CPU,
    kind: str = "Deployment",
    extra: str = "",
) -> str:
    return f"""\
apiVersion: apps/v1
kind: {kind}
metadata: {{name: web}}
spec:
  replicas: {replicas}
{strategy}{extra}  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: app
          ports: [{{name: http, containerPort: 8080}}]
          {probes}
          {resources}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80, targetPort: http}}]
"""


def rolling(surge: str, unavailable: str) -> str:
    return f"  strategy: {{rollingUpdate: {{maxSurge: {surge}, maxUnavailable: {unavailable}}}}}\n"


def findings(tmp_path: Path, manifest: str, scenario: str | None = None) -> list[tuple[str, str]]:
    (tmp_path / "m.yaml").write_text(manifest)
    sc = scenario_from_text(scenario + "---\n" + manifest, "s.yaml", tmp_path) if scenario else None
    return [
        (f.message, f.fix) for f in check([str(tmp_path / "m.yaml")], sc).findings if f.rule.id == "PS032"
    ]


# LOAD: 50 req/s a replica of 500m (5 ms each) at 50 % of a pod's CPU (its limit = its request).
@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "left"),
    [
        (4, "25%", "50%", 2),  # 50 % of 4 = 2 down: 2 pods at 100 %
        (3, "1", "75%", 1),  # 2.25 rounds down to 2: 1 pod at 150 %
        (2, "0%", "40%", 1),  # 0 and 0.8 rounded down: both 0, so maxUnavailable is 1 (ResolveFenceposts)
        (2, "0", "1", 1),
        (1, "0", "1", 0),  # the only pod goes first
    ],
)
def test_survivors_of_a_rollout_cannot_take_the_load(
    tmp_path: Path, replicas: int, surge: str, unavailable: str, left: int
) -> None:
    [(msg, fix)] = findings(tmp_path, workload(replicas, rolling(surge, unavailable)), loaded(replicas))
    load = f"{50 * replicas} req/s"
    share = (
        "no pod is left to serve them"
        if left == 0
        else f"{round(50 * replicas / left)} % of what they can serve"
    )
    pods = "1 pod" if replicas == 1 else f"{replicas} pods"
    assert msg == (
        f"a rollout (maxSurge {surge}, maxUnavailable {unavailable}) leaves {left} of {pods} to serve {load}: {share}"
    )
    assert fix.startswith(
        "spec.strategy.rollingUpdate.maxSurge: 1, spec.strategy.rollingUpdate.maxUnavailable: 0 ("
    )


def test_the_fix_gives_the_replicas_the_rounding_needs(tmp_path: Path) -> None:
    [(_, fix)] = findings(tmp_path, workload(4, rolling("25%", "50%")), loaded(4))
    # 5 replicas: 50 % of 5 rounds down to 2, 3 serve the scenario's 200 req/s at 67 %.
    assert fix == (
        "spec.strategy.rollingUpdate.maxSurge: 1, spec.strategy.rollingUpdate.maxUnavailable: 0 "
        "(4 pods serving throughout, at 50 %; or replicas: 5 (3 serving during a rollout, at 67 %))"
    )


@pytest.mark.parametrize(
    ("manifest", "why"),
    [
        (workload(4, rolling("25%", "49%")), "1.96 rounds down to 1: 3 pods at 67 %"),
        (workload(4, rolling("25%", "25%")), "the default strategy"),
        (workload(1, ""), "25 % of 1 rounds to 0 down, 1 up: a pod more"),
        (workload(4, "  strategy: {type: Recreate}\n"), "Recreate takes every pod down on purpose"),
        (
            workload(2, kind="StatefulSet", extra="  serviceName: web\n  updateStrategy: {type: OnDelete}\n"),
            "OnDelete",
        ),
        (
            workload(
                2,
                kind="StatefulSet",
                extra="  serviceName: web\n  updateStrategy: {rollingUpdate: {partition: 2}}\n",
            ),
            "a partition above every ordinal updates nothing",
        ),
        (workload(3, kind="StatefulSet", extra="  serviceName: web\n"), "one at a time: 2 of 3 at 75 %"),
    ],
)
def test_no_finding(tmp_path: Path, manifest: str, why: str) -> None:
    replicas = int(manifest.split("replicas: ")[1].split("\n")[0])
    assert findings(tmp_path, manifest, loaded(replicas)) == [], why


def test_a_statefulset_replaces_one_pod_at_a_time(tmp_path: Path) -> None:
    [(msg, fix)] = findings(
        tmp_path, workload(2, kind="StatefulSet", extra="  serviceName: web\n"), loaded(2)
    )
    assert (
        msg
        == "a rollout (one pod at a time) leaves 1 of 2 pods to serve 100 req/s: 100 % of what they can serve"
    )
    # the scenario's 100 req/s over the 2 of 3 that serve during a rollout
    assert fix == "spec.replicas: 3 (2 serving during a rollout, at 50 %, if the app can run that many)"
    sts = "  serviceName: web\n  updateStrategy: {rollingUpdate: {maxUnavailable: 50%}}\n"
    [(msg, _)] = findings(tmp_path, workload(4, kind="StatefulSet", extra=sts), loaded(4))
    assert (
        msg
        == "a rollout (maxUnavailable 50%) leaves 2 of 4 pods to serve 200 req/s: 100 % of what they can serve"
    )
    # 40 % of 4 rounds down to 1: 3 serve at 67 %.
    assert (
        findings(tmp_path, workload(4, kind="StatefulSet", extra=sts.replace("50%", "40%")), loaded(4)) == []
    )
    # Without a scenario's traffic no load is assumed: nothing to judge a rollout's capacity by.
    assert findings(tmp_path, workload(2, kind="StatefulSet", extra="  serviceName: web\n")) == []


# The app answers / with 503 until 20 s after it starts; its /healthz answers from 5 s.
COLD = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {{name: s}}
spec:
  duration: 3m
  behavior:
    web:
      containers:
        app:
          start: 5s
          routes: {{/: {{cpu: 100ms}}}}
          episodes: [{{kind: errors, after: 0s, for: 20s, status: 503, paths: [/]}}]
  traffic:
    - {{path: /, rate: {rate}, start: 30s}}
"""
ONE_CORE = "resources: {limits: {cpu: 1}}"  # 10 req/s a pod at 100 ms of CPU each


@pytest.mark.parametrize(
    ("probes", "ready"),
    [
        (READY, "5s"),
        (
            "readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5, successThreshold: 3}",
            "15s",
        ),
        ("livenessProbe: {httpGet: {path: /healthz, port: http}}", "0s"),  # Ready once running
    ],
)
def test_new_pods_ready_before_they_serve(tmp_path: Path, probes: str, ready: str) -> None:
    [(msg, fix)] = findings(tmp_path, workload(4, probes=probes, resources=ONE_CORE), COLD.format(rate=16))
    assert msg == (
        f"new pods can be Ready {ready} after they start, / answers from 20s: a rollout "
        "(maxSurge 25%, maxUnavailable 25%) sends them requests they fail"
    )
    if probes.startswith("readinessProbe"):
        delay = 20 if "successThreshold" not in probes else 10  # 10 s + 2 more periods of 5 s
        out = "7s" if "successThreshold" not in probes else "16s"
        assert fix == (
            f"readinessProbe.httpGet.path: / (readiness not before / answers; or readinessProbe.initialDelaySeconds: "
            f"{delay}; readiness takes a failing pod out within {out})"
        )
    else:  # the liveness probe's check, less tolerant, not before / answers
        assert fix == (
            "add readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5, timeoutSeconds: 1, "
            "failureThreshold: 3, initialDelaySeconds: 20} (readiness not before / answers; readiness takes a "
            "failing pod out within 16s, liveness acts on a hang within 31s; the liveness probe's check, less tolerant)"
        )


@pytest.mark.parametrize(
    "probes",
    [
        "readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 2}",  # the path the traffic needs
        "readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 2, initialDelaySeconds: 20}",
        # 5 s + 3 more periods of 5 s: the third success comes at 20 s, when / answers
        "readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5, successThreshold: 4}",
    ],
)
def test_readiness_that_waits_for_the_app_is_not_reported(tmp_path: Path, probes: str) -> None:
    assert findings(tmp_path, workload(4, probes=probes, resources=ONE_CORE), COLD.format(rate=16)) == []


def test_cold_pods_count_against_capacity_unless_min_ready_seconds_covers_them(tmp_path: Path) -> None:
    # 25 req/s over 4 pods of 10 req/s: 3 warm pods take 83 %, but the first new pod counted Ready
    # lets one more old pod go while it is cold: 2 serve, at 125 %.
    manifest = workload(4, resources=ONE_CORE)
    [(msg, fix)] = findings(tmp_path, manifest, COLD.format(rate=25))
    assert msg.endswith("requests they fail; meanwhile 2 of 4 pods serving, at 125 % of what they can serve")
    assert fix.startswith(
        "readinessProbe.httpGet.path: / (readiness not before / answers; or readinessProbe.initialDelaySeconds: 20;"
    )
    # 35 req/s: even 3 warm pods are not enough (117 %), so the fix adds capacity too.
    [(msg, fix)] = findings(tmp_path, manifest, COLD.format(rate=35))
    assert fix.endswith(
        "; 4 pods serving throughout, at 88 %; or replicas: 5 (4 serving during a rollout, at 88 %))"
    )
    # minReadySeconds 15: a new pod is available at 20 s, when it serves; it still gets requests
    # while Ready and cold, but no warm pod leaves for it.
    [(msg, _)] = findings(
        tmp_path, workload(4, resources=ONE_CORE, extra="  minReadySeconds: 15\n"), COLD.format(rate=25)
    )
    assert msg.endswith("sends them requests they fail")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "rollout-ready-before-warm",
            "new pods can be Ready 5s after they start, / answers from 20s: a rollout (maxSurge 25%, "
            "maxUnavailable 25%) sends them requests they fail",
        ),
        (
            "rollout-max-unavailable-under-load",
            "a rollout (maxSurge 0, maxUnavailable 1) leaves 3 of 4 pods to serve 150 req/s: 120 % of what "
            "they can serve",
        ),
    ],
)
def test_the_built_ins_show_their_lesson(name: str, message: str) -> None:
    path = Path(__file__).resolve().parents[2] / "src" / "probesim" / "scenarios" / f"{name}.yaml"
    r = CliRunner().invoke(app, ["check", "--scenario", str(path), "-f", "json"])
    assert [f["message"] for f in json.loads(r.output)["findings"] if f["rule"] == "PS032"] == [message]


HPA = """---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: MIN
  maxReplicas: 10
"""


def test_an_autoscaled_deployment_rolls_out_at_its_autoscalers_minimum(tmp_path: Path) -> None:
    """Review item 5: azure-vote-front's manifest says replicas: 1 and its HPA keeps 3 at least;
    PS032 said a rollout leaves 0 of 1 pod while PS037 counted 3 replicas. It now judges the
    rollout at the HPA's minimum, as the disruption rules count the replicas."""
    one = workload(1, rolling("1", "1"))
    assert [m for m, _ in findings(tmp_path, one)] == [
        "a rollout (maxSurge 1, maxUnavailable 1) leaves 0 of 1 pod: the Service has no endpoint until the new "
        "pod is Ready"
    ]
    assert findings(tmp_path, one + HPA.replace("MIN", "3")) == []  # 2 of 3 serve throughout
    # At an HPA minimum of 1 the rollout still empties the Service, and says at how many replicas.
    [(msg, _)] = findings(tmp_path, one + HPA.replace("MIN", "1"))
    assert msg.startswith(
        "a rollout (maxSurge 1, maxUnavailable 1, 1 replica at its HPA's minimum) leaves 0 of 1 pod"
    )
