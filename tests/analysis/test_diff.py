"""probesim diff (issue 44): what a change of manifests does, simulated on both sides, with a
verdict per figure by the noise band; objects matched by kind, namespace and name; the new and
resolved check findings; exit 0 when nothing got worse, 1 when something did, 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from probesim.analysis.diff_figures import COUNT_BAND, EVENT_BAND, SECONDS_BAND, verdict
from probesim.cli import app
from probesim.manifests.changes import field_changes

runner = CliRunner()

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: example/web:1.0
          ports: [{name: http, containerPort: 8080}]
          resources: {requests: {cpu: 500m}, limits: {cpu: 500m}}
          readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 5}
          livenessProbe: {httpGet: {path: /live, port: http}, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3}
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
"""
BEFORE = WEB + "---\n" + SERVICE
AFTER_1S = BEFORE.replace("timeoutSeconds: 5", "timeoutSeconds: 1")

ORDERS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  replicas: 2
  selector: {matchLabels: {app: orders}}
  template:
    metadata: {labels: {app: orders}}
    spec:
      containers:
        - name: app
          image: example/orders:1.0
          ports: [{name: http, containerPort: 8080}]
          resources: {requests: {cpu: 500m}}
          readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 5, failureThreshold: 3}
          livenessProbe: {httpGet: {path: /live, port: http}, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 3}
---
apiVersion: v1
kind: Service
metadata: {name: orders}
spec:
  selector: {app: orders}
  ports: [{port: 80, targetPort: http}]
"""
ORDERS_STARTUP = ORDERS.replace(
    "livenessProbe: {httpGet: {path: /live, port: http}, initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 3}",
    "livenessProbe: {httpGet: {path: /live, port: http}, periodSeconds: 10, failureThreshold: 3}\n"
    "          startupProbe: {httpGet: {path: /live, port: http}, periodSeconds: 5, failureThreshold: 30}",
)
SLOW = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: slow-orders}
manifests: [before/orders.yaml]
spec:
  duration: 5m
  behavior:
    orders:
      containers:
        app: {start: 60s}
  traffic:
    - {service: orders, path: /, rate: 50}
"""


def sides(tmp_path: Path, before: dict[str, str], after: dict[str, str]) -> tuple[str, str]:
    """Two folders of manifests (file name → text each)."""
    for side, files in (("before", before), ("after", after)):
        (tmp_path / side).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (tmp_path / side / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / name).write_text(text)
    return str(tmp_path / "before"), str(tmp_path / "after")


def diff_json(args: list[str], code: int) -> dict[str, Any]:
    r = runner.invoke(app, ["diff", "-f", "json", *args])
    assert r.exit_code == code, r.output[-2000:]
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def figure(doc: dict[str, Any], name: str, run: str | None = None, workload: int = 0) -> dict[str, Any]:
    found = [f for f in doc["workloads"][workload]["figures"] if f["figure"] == name and f["run"] == run]
    assert len(found) == 1, (name, run)
    return found[0]


def test_a_liveness_timeout_lowered_to_1s_restarts_pods_under_the_surge_and_exits_1(tmp_path: Path) -> None:
    before, after = sides(tmp_path, {"web.yaml": BEFORE}, {"web.yaml": AFTER_1S})
    doc = diff_json([before, after], 1)
    assert doc["verdict"] == "worse"
    w = doc["workloads"][0]
    assert (w["key"], w["verdict"], w["simulated"]) == ("Deployment/default/web", "worse", True)
    assert w["changes"] == [
        {
            "key": "Deployment/default/web",
            "status": "changed",
            "before": {"key": "Deployment/default/web", "kind": "Deployment", "namespace": "default",
                       "name": "web", "file": f"{before}/web.yaml", "line": 1},
            "after": {"key": "Deployment/default/web", "kind": "Deployment", "namespace": "default",
                      "name": "web", "file": f"{after}/web.yaml", "line": 1},
            "fields": [{"path": "spec.template.spec.containers[app].livenessProbe.timeoutSeconds",
                        "before": "5", "after": "1"}],
            "note": None,
        }
    ]  # fmt: skip
    # Three times the traffic queues each request for more than a second: the kubelet's HTTP
    # probe fails when its client times out after timeoutSeconds (pkg/probe/http/http.go,
    # DoHTTPProbe; reference/kubelet.md §1.11), and three failures in a row restart the
    # container (pkg/kubelet/prober/worker.go, doProbe: failureThreshold). At 5 s the same
    # queue is answered in time: no restart. Both seeds run alike (the default load model draws
    # nothing random).
    surge = figure(doc, "needless restarts", "stress traffic-x3")
    assert (surge["before"], surge["after"], surge["verdict"]) == ([0, 0], [12, 12], "worse")
    assert figure(doc, "needless restarts")["verdict"] == "worse"
    assert figure(doc, "needless restarts", "stress traffic-x2") == {**figure(doc, "needless restarts", "stress traffic-x2"),
                                                                    "before": [0, 0], "after": [0, 0], "verdict": "same"}  # fmt: skip
    # The timeout changes no probe's period: the probe load is the same, exactly.
    load = figure(doc, "probe load")
    assert (load["before"], load["after"], load["verdict"]) == ([0.3, 0.3], [0.3, 0.3], "same")
    assert doc["seeds"] == [0, 1]
    assert doc["summary"]["figuresWorse"] == 2  # needless restarts and readiness flaps


def test_a_startup_probe_for_a_slow_starter_ends_its_restarts_and_exits_0(tmp_path: Path) -> None:
    before, after = sides(tmp_path, {"orders.yaml": ORDERS}, {"orders.yaml": ORDERS_STARTUP})
    (tmp_path / "slow.yaml").write_text(SLOW)
    doc = diff_json([before, after, "--scenario", str(tmp_path / "slow.yaml")], 0)
    assert doc["verdict"] == "better"
    assert doc["scenario"] == str(tmp_path / "slow.yaml")
    # The app answers 60 s after it starts; liveness from 10 s every 10 s, three misses: the
    # kubelet kills it at 40 s, again and again (its delay runs from each container's start,
    # pkg/kubelet/prober/worker.go doProbe; kubelet.md §2.15). A startup probe holds liveness back
    # until it passes (doProbe's startup gating, kubelet.md §2.16): 30 × 5 s covers the start.
    restarts = figure(doc, "needless restarts")
    assert (restarts["before"], restarts["after"], restarts["verdict"]) == ([94, 94], [0, 0], "better")
    scenario = figure(doc, "needless restarts", "scenario")
    assert (scenario["before"], scenario["after"]) == ([10, 10], [0, 0])
    ready = figure(doc, "time to Ready")
    assert (ready["before"], ready["after"], ready["verdict"]) == ([None, None], [5, 5], "better")
    assert not [f for f in doc["workloads"][0]["figures"] if f["verdict"] == "worse"]
    fields = [f["path"] for f in doc["workloads"][0]["changes"][0]["fields"]]
    assert fields == [
        "spec.template.spec.containers[app].livenessProbe.initialDelaySeconds",
        "spec.template.spec.containers[app].startupProbe",
    ]


def test_a_pure_rename_is_no_change(tmp_path: Path) -> None:
    # The same objects in other files, in another order, keys reordered, a null field added:
    # the API server reads the same objects.
    moved = (
        SERVICE
        + "---\n"
        + WEB.replace("metadata:\n  name: web\n", "metadata:\n  annotations:\n  name: web\n")
        .replace("image: example/web:1.0\n          ports:", "ports:")
        .replace("resources:", "image: example/web:1.0\n          resources:")
    )
    before, after = sides(tmp_path, {"web.yaml": BEFORE}, {"all.yaml": moved})
    doc = diff_json([before, after], 0)
    assert doc["verdict"] == "no change"
    assert (doc["workloads"], doc["added"], doc["removed"], doc["otherChanges"]) == ([], [], [], [])
    assert doc["summary"]["unchanged"] == 2
    assert (doc["newFindings"], doc["resolvedFindings"]) == ([], [])
    text = runner.invoke(app, ["diff", before, after])
    assert text.exit_code == 0
    assert "no change: every object is the same on both sides" in text.output


def test_objects_on_one_side_only_are_listed_not_simulated(tmp_path: Path) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {a: '1'}\n"
    api = BEFORE.replace("web", "api")
    before, after = sides(
        tmp_path, {"web.yaml": BEFORE, "cm.yaml": cm}, {"web.yaml": BEFORE, "api.yaml": api}
    )
    doc = diff_json([before, after], 0)
    assert [(r["key"], r["file"], r["line"]) for r in doc["added"]] == [
        ("Deployment/default/api", f"{after}/api.yaml", 1),
        ("Service/default/api", f"{after}/api.yaml", 19),
    ]
    assert [r["key"] for r in doc["removed"]] == ["ConfigMap/shop/settings"]
    assert doc["workloads"] == []  # web is the same; api has no before to compare with
    assert doc["summary"]["workloadsSimulated"] == 0
    assert doc["verdict"] == "same"
    text = runner.invoke(app, ["diff", before, after]).output
    assert "Objects only after (added) — not simulated" in text
    assert "ConfigMap/settings (namespace shop)" in text


PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 6
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}]
"""


def test_a_pdb_change_is_the_workloads_change_and_costs_no_simulation(tmp_path: Path) -> None:
    before, after = sides(
        tmp_path,
        {"web.yaml": BEFORE, "pdb.yaml": PDB},
        {"web.yaml": BEFORE, "pdb.yaml": PDB.replace("minAvailable: 1", "minAvailable: 2")},
    )
    doc = diff_json([before, after], 0)
    w = doc["workloads"][0]
    assert (w["key"], w["simulated"], w["verdict"]) == ("Deployment/default/web", False, "not simulated")
    assert (
        w["note"] == "nothing the simulation reads of it changed (its runs would be the same on both sides)"
    )
    [change] = w["changes"]
    assert (change["key"], change["fields"]) == (
        "PodDisruptionBudget/default/web",
        [{"path": "spec.minAvailable", "before": "1", "after": "2"}],
    )
    assert (
        change["note"] == "not simulated: a PDB guards only drains and evictions; diff's runs drain no node"
    )
    assert doc["otherChanges"] == []


def test_an_hpa_change_is_simulated_with_its_workload(tmp_path: Path) -> None:
    before, after = sides(
        tmp_path,
        {"web.yaml": BEFORE, "hpa.yaml": HPA},
        {"web.yaml": BEFORE, "hpa.yaml": HPA.replace("maxReplicas: 6", "maxReplicas: 3")},
    )
    doc = diff_json([before, after], 1)
    w = doc["workloads"][0]
    assert (w["simulated"], [c["key"] for c in w["changes"]]) == (
        True,
        ["HorizontalPodAutoscaler/default/web"],
    )
    assert w["changes"][0]["fields"] == [{"path": "spec.maxReplicas", "before": "6", "after": "3"}]
    # Three times the traffic: the HPA scales the three replicas out to serve it, up to
    # maxReplicas (pkg/controller/podautoscaler/horizontal.go, normalizeDesiredReplicas caps the
    # desired count); capped at 3, the pods stay saturated and requests fail.
    failed = figure(doc, "failed requests", "stress traffic-x3")
    assert (failed["before"], failed["after"], failed["verdict"]) == ([0, 0], [40500, 40500], "worse")


BAD_LIVENESS = BEFORE.replace("failureThreshold: 3}", "failureThreshold: 1}")  # PS010 (error)
SLOW_READINESS = BEFORE.replace(
    "periodSeconds: 5}", "periodSeconds: 5, timeoutSeconds: 5}"
)  # PS011 (warning)


def test_findings_are_new_or_resolved_by_rule_object_container_and_field(tmp_path: Path) -> None:
    before, after = sides(tmp_path, {"web.yaml": BAD_LIVENESS}, {"moved-to.yaml": SLOW_READINESS})
    doc = diff_json([before, after, "--fail-on", "never"], 0)
    assert [(f["rule"], f["object"], f["container"], f["file"], f["line"]) for f in doc["newFindings"]] == [
        ("PS011", "Deployment/web", "app", f"{after}/moved-to.yaml", 16)
    ]
    assert [(f["rule"], f["file"]) for f in doc["resolvedFindings"]] == [("PS010", f"{before}/web.yaml")]
    # A finding only moved (another file, another line) is neither new nor resolved.
    same, moved = sides(
        tmp_path / "m",
        {"web.yaml": BAD_LIVENESS},
        {"x.yaml": "\n\n" + SERVICE + "---\n" + WEB.replace("failureThreshold: 3}", "failureThreshold: 1}")},
    )
    doc = diff_json([same, moved], 0)
    assert (doc["newFindings"], doc["resolvedFindings"], doc["verdict"]) == ([], [], "no change")
    # --fail-on new-findings: errors by default, or from the severity given.
    args = [before, after]
    assert runner.invoke(app, ["diff", *args, "--fail-on", "new-findings"]).exit_code == 0
    assert runner.invoke(app, ["diff", *args, "--fail-on", "new-findings=warning"]).exit_code == 1
    assert (
        runner.invoke(app, ["diff", *args, "--fail-on", "never", "--fail-on", "new-findings=info"]).exit_code
        == 0
    )


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    before, after = sides(tmp_path, {"web.yaml": BEFORE}, {"web.yaml": BEFORE, "broken.yaml": "kind: [\n"})
    r = runner.invoke(app, ["diff", before, after])
    assert r.exit_code == 2
    assert r.output.startswith(f"error: {after}/broken.yaml:")
    assert "Traceback" not in r.output
    invalid = sides(
        tmp_path / "i", {"web.yaml": BEFORE}, {"web.yaml": BEFORE.replace("replicas: 3", "replicas: -1")}
    )
    r = runner.invoke(app, ["diff", *invalid])
    assert r.exit_code == 2
    assert "web.yaml:6: Deployment web: spec.replicas:" in r.output
    for args, said in (
        ([before], "give two sides, BEFORE AFTER"),
        (["-", "-"], "standard input can be one side only"),
        ([before, "-", "--scenario", "-"], "standard input cannot hold both the scenario and a side"),
        ([before, after, "--fail-on", "worst"], "unknown --fail-on 'worst'"),
        ([before, before, "-f", "html"], "unknown --format 'html'"),
        ([before, str(tmp_path / "nope")], "file not found"),
    ):
        r = runner.invoke(app, ["diff", *args])
        assert (r.exit_code, said in r.output, r.output.count("\n")) == (2, True, 1), (args, r.output)
    # A before side that does not read is said, and the rest compared: a change may fix it.
    fixed = sides(tmp_path / "f", {"web.yaml": BEFORE, "broken.yaml": "kind: [\n"}, {"web.yaml": BEFORE})
    r = runner.invoke(app, ["diff", *fixed])
    assert r.exit_code == 0
    assert "warning: the before side" in r.output and "could not be read in full" in r.output


def test_standard_input_is_one_side(tmp_path: Path) -> None:
    before, _ = sides(tmp_path, {"web.yaml": BEFORE}, {})
    r = runner.invoke(app, ["diff", before, "-", "-f", "json"], input=BEFORE)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert (doc["after"], doc["verdict"]) == ("standard input", "no change")


@pytest.mark.parametrize(
    ("before", "after", "band", "expected"),
    [
        ((0, 0), (1, 1), EVENT_BAND, "worse"),  # a restart more, under both seeds
        ((0, 2), (1, 3), EVENT_BAND, "same"),  # the seeds overlap: within the noise
        ((3, 3), (0, 1), EVENT_BAND, "better"),
        ((100, 100), (111, 111), COUNT_BAND, "worse"),  # more than 10 % more
        ((100, 100), (109, 109), COUNT_BAND, "same"),
        ((1, 1), (3, 3), COUNT_BAND, "same"),  # 2 requests are within the noise
        ((15, 15), (None, None), SECONDS_BAND, "worse"),  # never out of service
        ((None, None), (30, 30), SECONDS_BAND, "better"),
        ((None,), (None,), SECONDS_BAND, "same"),
        ((10.0, 10.0), (11.0, 11.0), SECONDS_BAND, "same"),  # one step
        ((), (1, 1), EVENT_BAND, "n/a"),  # not run on one side
    ],
)
def test_a_verdict_takes_both_seeds_and_the_noise_band(
    before: tuple[float | None, ...], after: tuple[float | None, ...], band: object, expected: str
) -> None:
    assert verdict(before, after, band) == expected  # type: ignore[arg-type]


def test_field_changes_read_as_paths_with_list_items_by_their_key() -> None:
    before = {
        "metadata": {"annotations": {"probesim.dev/x": "1"}},
        "spec": {"containers": [{"name": "app", "image": "a:1"}, {"name": "log", "image": "l:1"}],
                 "args": ["a", "b"]},
    }  # fmt: skip
    after = {
        "metadata": {"annotations": {"probesim.dev/x": "2"}},
        "spec": {"containers": [{"name": "log", "image": "l:1"}, {"name": "app", "image": "a:2"},
                                {"name": "proxy", "image": "p:1"}], "args": ["a", "c"]},
    }  # fmt: skip
    assert [(c.path, c.before, c.after) for c in field_changes(before, after)] == [
        ('metadata.annotations["probesim.dev/x"]', "1", "2"),
        ("spec.containers[app].image", "a:1", "a:2"),
        ("spec.containers[proxy]", None, {"name": "proxy", "image": "p:1"}),
        ("spec.args[1]", "b", "c"),
    ]


WORKER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 1
  selector: {matchLabels: {app: worker}}
  template:
    metadata: {labels: {app: worker}}
    spec:
      containers:
        - name: app
          image: example/worker:1
          livenessProbe: {exec: {command: [cat, /tmp/ok]}, periodSeconds: 10, timeoutSeconds: 5}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
        - name: app
          image: example/agent:1
"""


def test_variants_are_matched_by_folder_and_a_worker_has_no_time_in_service(tmp_path: Path) -> None:
    # A base and its prod overlay on both sides; the change is prod's only. The DaemonSet is the
    # same in both folders before, and prod's changes: still matched folder by folder.
    prod = WORKER.replace("replicas: 1", "replicas: 2")
    before, after = sides(
        tmp_path,
        {"base/w.yaml": WORKER, "prod/w.yaml": prod},
        {
            "base/w.yaml": WORKER,
            "prod/w.yaml": prod.replace("replicas: 2", "replicas: 3").replace("agent:1", "agent:2"),
        },
    )
    doc = diff_json([before, after], 0)
    assert (doc["added"], doc["removed"], doc["summary"]["unchanged"]) == ([], [], 2)  # base's two
    worker, agent = doc["workloads"]
    assert (worker["key"], worker["changes"][0]["fields"]) == (
        "Deployment/default/worker@prod",
        [{"path": "spec.replicas", "before": "2", "after": "3"}],
    )
    assert (agent["key"], agent["simulated"], agent["verdict"]) == (
        "DaemonSet/default/agent@prod",
        False,
        "not simulated",
    )
    assert agent["note"].startswith("not simulated: probesim simulates Deployments, StatefulSets")
    # A worker no Service selects: no request reaches it, so no time in service to compare; a
    # release that never becomes Ready is restarted by its liveness by design: no flap counted.
    names = {f["figure"] for f in worker["figures"] if f["run"] is None}
    assert "hung pod in service" not in names and "replicas back after a hang" in names
    assert not [
        f
        for f in worker["figures"]
        if f["run"] == "stress rollout-never-ready" and f["figure"] == "readiness flaps"
    ]
    assert worker["verdict"] == "same"
    text = runner.invoke(app, ["diff", before, after]).output
    assert "Deployment/worker (variant prod)  the same within the noise" in text


def test_help_teaches_with_examples() -> None:
    r = runner.invoke(app, ["diff", "--help"], terminal_width=120)
    assert r.exit_code == 0
    for said in (
        "probesim diff k8s-old/ k8s/",
        "probesim diff --git main..HEAD -- k8s/",
        "probesim diff --git origin/main...HEAD -f markdown -o diff.md -- k8s/",
        "--render 'helm template ./chart'",
        "Exit codes: 0 nothing got worse (--fail-on), 1 something did, 2 bad input",
    ):
        assert said in r.output, said


def test_the_figures_of_all_runs_sum_the_runs_both_sides_ran() -> None:
    from probesim.analysis.diff_figures import Measured, figures
    from probesim.tune.figures import Figures, RunFigures

    def side(*runs: RunFigures) -> Measured:
        f = Figures(0, 0, 15.0, True, 0, runs, 35.0, 5.0, 0.3)
        return Measured([f, f])

    base = RunFigures("stress baseline", "stress", 1000, 0, 0, 0, 0)
    # Two replicas: one pod of two answering 500 applies after the change only (the suite skips
    # it for one replica); its restarts are its own row's, not compared with nothing.
    one_pod = RunFigures("stress one-pod-500", "stress", 1000, 500, 6, 6, 0)
    got = {(f.name, f.run): (f.before, f.after, f.verdict) for f in figures(side(base), side(base, one_pod))}
    assert got[("needless restarts", "")] == ((0.0, 0.0), (0.0, 0.0), "same")
    assert got[("failed requests", "")] == ((0.0, 0.0), (0.0, 0.0), "same")
    assert got[("needless restarts", "stress one-pod-500")] == ((), (6.0, 6.0), "n/a")


def test_a_change_of_replicas_is_judged_under_the_before_sides_load(tmp_path: Path) -> None:
    # The default load model sizes traffic to the replicas (kube/load_model.py): both sides take
    # the before side's, 3 × 50 requests per second, so one replica must serve what three did.
    before, after = sides(
        tmp_path, {"web.yaml": BEFORE}, {"web.yaml": BEFORE.replace("replicas: 3", "replicas: 1")}
    )
    doc = diff_json([before, after], 1)
    baseline = figure(doc, "failed requests", "stress baseline")
    assert (baseline["before"], baseline["after"], baseline["verdict"]) == ([0, 0], [13500, 13500], "worse")
    # One pod of one answering 500 is not a stress the suite runs: that row is not compared.
    assert figure(doc, "failed requests", "stress one-pod-500")["verdict"] == "n/a"


def test_each_variant_is_simulated_with_the_istio_rules_of_its_own_folder() -> None:
    """A base and its overlay hold the same Deployment; only the overlay's folder has a
    DestinationRule. Each side runs each variant as check --stress does (own_scenario): the base
    without the overlay's rule, the overlay with it — not both with every rule of the files."""
    from probesim.analysis.diff_figures import side_input
    from probesim.manifests import kubernetes as k8s
    from probesim.manifests.yamlsrc import load_docs

    rule = (
        "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: web}\n"
        "spec:\n  host: web\n  trafficPolicy: {outlierDetection: {consecutive5xxErrors: 3}}\n"
    )
    docs = [
        *load_docs(WEB + "---\n" + SERVICE, "k/base/web.yaml"),
        *load_docs(WEB + "---\n" + SERVICE + "---\n" + rule, "k/overlay/web.yaml"),
    ]
    objects = k8s.parse(docs)
    base, overlay = objects.workloads
    assert [objects.origin(w).doc.file for w in (base, overlay)] == ["k/base/web.yaml", "k/overlay/web.yaml"]
    assert side_input(objects, base, None).given.destination_rules == ()
    got = side_input(objects, overlay, None)
    assert [r.metadata.name for r in got.given.destination_rules] == ["web"]
    assert got.rule is not None and got.rule.metadata.name == "web"
