"""The stress suite knows the app and the mesh: each container's app profile sets the start the
baseline and start-x2 run and the pause of stop-the-world; the HPA, DestinationRules and
VirtualServices among the files checked are in the stresses; a verdict that leaves the injected
fault's own errors unjudged says why, and a bare Pod behind a shared Service says why it is
stressed alone."""

from __future__ import annotations

from pathlib import Path

from probesim.analysis.own_scenario import profile_note
from probesim.analysis.rerun import stress_scenario_of
from probesim.analysis.stress import apply, stress_suite, suite_base
from probesim.analysis.stress_verdicts import StressResult, StressThresholds
from probesim.manifests import kubernetes as k8s
from probesim.manifests.scenario import scenario_from_text
from probesim.manifests.yamlsrc import load_docs
from probesim.profiles import ProfileCorrection
from tests.analysis.test_rules import deployment

# The kubelet's defaults for a probe that gives none (pkg/apis/core/v1/defaults.go,
# SetDefaults_Probe): periodSeconds 10, timeoutSeconds 1, failureThreshold 3.
PROBES = "livenessProbe: {httpGet: {path: /live, port: http}}\nreadinessProbe: {httpGet: {path: /ready, port: http}}\n"
DR = """---
apiVersion: networking.istio.io/v1beta1
kind: DestinationRule
metadata: {name: web}
spec:
  host: web.default.svc.cluster.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 1, interval: 5s, baseEjectionTime: 30s, maxEjectionPercent: 100}
"""
HPA = """---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 4
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
"""


def suite(
    text: str, only: tuple[str, ...], corrections: tuple[ProfileCorrection, ...] = ()
) -> dict[str, StressResult]:
    objs = k8s.parse(load_docs(text, "m.yaml"))
    got = stress_suite(objs, None, StressThresholds(), processes=1, corrections=corrections)
    return {r.stress: r for r in reversed(got) if r.stress in only}  # the first workload's


def test_a_known_app_starts_in_its_profiles_typical_time_and_start_x2_in_twice_it() -> None:
    """Spring Boot (catalog: typical 20s, worst 1m30s) under the default liveness (10 s × 3): the
    baseline passes, Ready from 20 s; at twice the start (40 s) liveness kills it before it
    answers, again after each back-off (the kubelet's 10 s doubling, kubelet.go backOffPeriod):
    killed near 30 s, 70 s, 120 s, 190 s and 300 s — 5 restarts, never Ready."""
    text = deployment("image: example/petclinic:3\n" + PROBES, replicas=1)
    objs = k8s.parse(load_docs(text, "m.yaml"))
    w = objs.workloads[0]
    base, app, _ = suite_base(objs, w, objs.services, None)
    assert base["spec"]["behavior"]["web"]["containers"]["app"]["start"] == "20000ms"
    sc = apply(base, w, "start-x2", app)
    assert sc is not None and sc.spec.behavior["web"].containers["app"].start == 40_000
    got = suite(text, ("baseline", "start-x2"))
    b, x2 = got["baseline"], got["start-x2"]
    assert (b.verdict, b.restarts, b.ramp_ms) == ("pass", 0, 20_000)
    assert b.why == "app starts in 20s (Spring Boot's typical start, its profile)"
    assert (x2.verdict, x2.restarts, x2.min_ready_fraction, x2.ramp_ms) == ("fail", 5, 0.0, None)
    assert x2.why == (
        "never had all 1 replicas Ready in 5m; 5 restarts > 0; app starts in 40s (twice Spring Boot's "
        "typical 20s; 1m30s at worst)"
    )


def test_a_scenarios_behaviour_wins_over_the_profile() -> None:
    """A scenario that says when the app starts (5 s) is what the stresses run: no profile."""
    text = deployment("image: example/petclinic:3\n" + PROBES, replicas=1)
    scenario = (
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n  duration: 5m\n"
        "  behavior: {web: {containers: {app: {start: 5s}}}}\n"
    )
    objs = k8s.parse(load_docs(text, "m.yaml"))
    given = scenario_from_text(scenario + "---\n" + text, "s.yaml", Path("."))
    w = objs.workloads[0]
    base, app, _ = suite_base(objs, w, objs.services, given)
    assert app is None
    assert base["spec"]["behavior"]["web"]["containers"]["app"]["start"] == "5s"
    sc = apply(base, w, "start-x2", app)
    assert sc is not None and sc.spec.behavior["web"].containers["app"].start == 10_000
    assert profile_note("baseline", base, w, app) == ""


def test_stop_the_world_pauses_for_the_profiles_longer_pause_judged_without_the_pause_itself() -> None:
    """Elasticsearch's profile pauses 3 s: both replicas hang 3 s at 2m; the requests of those
    3 s (3/240 of the judged 4 minutes: 1.25 %) fail whatever the settings, so the verdict judges
    the others (none) and says so. An app without a longer pause keeps the 2 s."""
    text = deployment("image: elasticsearch:8.14.0\n" + PROBES, replicas=2)
    objs = k8s.parse(load_docs(text, "m.yaml"))
    w = objs.workloads[0]
    base, app, _ = suite_base(objs, w, objs.services, None)
    sc = apply(base, w, "stop-the-world-2s", app)
    assert sc is not None
    assert [(e.at, e.for_) for e in sc.spec.behavior["web"].containers["app"].episodes] == [(120_000, 3_000)]
    r = suite(text, ("stop-the-world-2s",))["stop-the-world-2s"]
    assert (r.verdict, r.error_percent, r.restarts) == ("pass", 1.25, 0)
    assert r.why == (
        "the 1.2 % failed include the 3s pause's own, with every replica paused at once (no setting "
        "serves them): judged without them, 0.0 %; a 3s pause, not 2s: Elasticsearch / OpenSearch's "
        "longest (its profile)"
    )
    plain = k8s.parse(load_docs(deployment("image: example/web:1\n" + PROBES), "m.yaml"))
    base, app, _ = suite_base(plain, plain.workloads[0], plain.services, None)
    sc = apply(base, plain.workloads[0], "stop-the-world-2s", app)
    assert sc is not None and sc.spec.behavior["web"].containers["app"].episodes[0].for_ == 2_000


def test_a_correction_of_the_pause_in_probesim_yaml_is_the_stress_pause() -> None:
    """.probesim.yaml's profiles correct the pause the stress runs (5 s here)."""
    text = deployment("image: example/web:1\n" + PROBES, replicas=2)
    fix = (ProfileCorrection.model_validate({"workload": "web", "profile": "go", "pause": "5s"}),)
    r = suite(text, ("stop-the-world-2s",), fix)["stop-the-world-2s"]
    assert (r.verdict, r.error_percent) == ("pass", 2.0833333333333335)  # 5 s of 240 s
    assert r.why.endswith("a 5s pause, not 2s: Go web server's longest (.probesim.yaml's correction)")
    # An app probesim does not know, corrected: its start is the stress's (not ignored for want
    # of a catalog family), said as the user's.
    start = (
        ProfileCorrection.model_validate({"workload": "web", "start": {"typical": "20s", "worst": "40s"}}),
    )
    b = suite(text, ("baseline",), start)["baseline"]
    assert b.why.endswith("app starts in 20s (the app's typical start, .probesim.yaml's correction)"), b.why


def test_one_pod_500_is_not_run_on_an_app_that_speaks_no_http() -> None:
    """Redis speaks its own protocol: no request of it answers 500 (review item 2's ZooKeeper)."""
    r = suite(deployment("image: redis:7\n", replicas=2), ("one-pod-500",))["one-pod-500"]
    assert (r.verdict, r.why) == (
        "skipped",
        "Redis / Valkey speaks the redis protocol, not HTTP (its profile): no request answers 500 (give "
        "--scenario with its behaviour to stress its errors)",
    )


def test_one_pod_500_says_why_its_errors_are_not_judged() -> None:
    """One pod of two answers 500 on "/": half the requests fail (kube-proxy spreads them evenly),
    which no probe on /ready can see: the pass says those errors are the fault's own, and what it
    judges instead."""
    r = suite(deployment("image: example/web:1\n" + PROBES, replicas=2), ("one-pod-500",))["one-pod-500"]
    assert (r.verdict, r.error_percent, r.restarts) == ("pass", 50.0, 0)
    assert r.why == (
        "the 50.0 % failed are the injected fault itself, not judged: pod 0 answers 500 on / and its "
        "readiness probe checks /ready, which still answers; only a mesh's outlier detection (none here) "
        "would eject it from the callers' load balancing; judged instead: what the probes do about it — "
        "restarts (0) and the lowest ready fraction (100 %) after the start-up ramp"
    )


def test_the_destination_rule_and_hpa_among_the_files_are_in_the_stresses() -> None:
    """Without --scenario, the DestinationRule naming the workload's Service and its HPA are in
    every stress: the callers' sidecar ejects the pod answering 500 after its first 5xx
    (consecutive5xxErrors 1, Envoy's outlier detection), so 0.4375 % fail instead of 50 %. The
    command a PS100 finding names (probesim run --workload --stress) runs the same scenario."""
    text = deployment("image: example/web:1\n" + PROBES, replicas=2) + DR + HPA
    objs = k8s.parse(load_docs(text, "m.yaml"))
    sc = stress_scenario_of(objs, None, "Deployment/web", "one-pod-500")
    assert [r.metadata.name for r in sc.destination_rules] == ["web"]
    assert [h.metadata.name for h in sc.autoscalers] == ["web"]
    r = suite(text, ("one-pod-500",))["one-pod-500"]
    assert (r.verdict, r.error_percent, r.restarts) == ("pass", 0.4375, 0)
    assert "DestinationRule web's outlier detection, in this run, ejects it" in r.why


def test_a_bare_pod_behind_a_shared_service_says_why_it_is_stressed_alone() -> None:
    """Pods m0 and m1 behind Service group (etcd's members, review item 2): each is stressed on
    its own, and the stresses a single replica does not take say so."""
    pod = """---
apiVersion: v1
kind: Pod
metadata: {name: NAME, labels: {app: group}}
spec:
  containers: [{name: NAME, image: example/m:1, ports: [{containerPort: 2379}]}]
"""
    svc = "apiVersion: v1\nkind: Service\nmetadata: {name: group}\nspec:\n  selector: {app: group}\n  ports: [{port: 2379}]\n"
    text = svc + pod.replace("NAME", "m0") + pod.replace("NAME", "m1")
    r = suite(text, ("node-down",))["node-down"]
    assert (r.workload, r.verdict) == ("Pod/m0", "skipped")
    assert r.why == (
        "one replica: its node's loss is an outage whatever the settings; stressed alone, as every "
        "workload is: Service group also sends to Pod m1, each stressed on its own, so the group's loss "
        "of one member is not simulated here"
    )


def test_a_virtual_service_routing_to_another_versions_subset_is_left_out_and_said() -> None:
    """Bookinfo's reviews: a VirtualService sends every request to subset v1. Stressed alone,
    reviews-v2 would get requests for pods that are not there (100 % failed): it is left out of
    v2's stresses, and the baseline says so; v1's keep it."""
    v2 = deployment("image: example/web:1\n" + PROBES).replace("app: web}", "app: web, version: v2}")
    dr = (
        "---\napiVersion: networking.istio.io/v1beta1\nkind: DestinationRule\nmetadata: {name: web}\n"
        "spec: {host: web, subsets: [{name: v1, labels: {version: v1}}, {name: v2, labels: {version: v2}}]}\n"
    )
    vs = (
        "---\napiVersion: networking.istio.io/v1beta1\nkind: VirtualService\nmetadata: {name: web}\n"
        "spec: {hosts: [web], http: [{route: [{destination: {host: web, subset: SUBSET}}]}]}\n"
    )
    for subset, kept in (("v1", False), ("v2", True)):
        objs = k8s.parse(load_docs(v2 + dr + vs.replace("SUBSET", subset), "m.yaml"))
        w = objs.workloads[0]
        base, _app, left = suite_base(objs, w, objs.services, None)
        assert [v["metadata"]["name"] for v in base["virtualServices"]] == (["web"] if kept else [])
        assert left == (
            ""
            if kept
            else "VirtualService web (m.yaml) left out: it routes to subset v1 of web, whose pods are not "
            "Deployment web's"
        )
