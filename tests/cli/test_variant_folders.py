"""probesim run on a base and two overlays (issue 27 item 5): the same-name objects of staging/
and prod/ are two variants, each run with the shared base/ and reported on its own; tune,
sweep and what draws one run refuse them in one line naming the variants; check --stress runs
each variant's workload behind its own Service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from probesim.cli import app
from probesim.errors import InputError
from probesim.manifests.generated import Options, generate_all

runner = CliRunner()

BASE = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: api-config}
data: {LOG_LEVEL: info}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: api}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: api}}
"""


def api(replicas: int, period: int, failures: int, port_name: str = "http") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec:
      containers:
        - name: app
          image: registry.example.com/api:1.4.2
          ports: [{{name: http, containerPort: 8080}}]
          envFrom: [{{configMapRef: {{name: api-config}}}}]
          resources: {{requests: {{cpu: 200m, memory: 256Mi}}}}
          readinessProbe:
            httpGet: {{path: /ready, port: http}}
            periodSeconds: {period}
            failureThreshold: {failures}
---
apiVersion: v1
kind: Service
metadata: {{name: api}}
spec:
  selector: {{app: api}}
  ports: [{{name: {port_name}, port: 80, targetPort: http}}]
"""


PROD_HPA = """\
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 4
  maxReplicas: 8
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
"""


def overlays(tmp: Path) -> Path:
    """k8s/base (a ConfigMap and a PDB), k8s/staging (2 replicas, readiness every 5 s) and
    k8s/prod (4 replicas, readiness every 10 s, an HPA staging does not have)."""
    k8s = tmp / "k8s"
    for sub in ("base", "staging", "prod"):
        (k8s / sub).mkdir(parents=True)
    (k8s / "base" / "config.yaml").write_text(BASE)
    (k8s / "staging" / "api.yaml").write_text(api(2, 5, 3, "http-staging"))
    (k8s / "prod" / "api.yaml").write_text(api(4, 10, 2) + PROD_HPA)
    return k8s


def test_each_folder_is_a_variant_with_the_shared_base(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    found = generate_all([str(k8s)], Options())
    assert [g.variant.folder for g in found if g.variant] == [f"{k8s}/prod", f"{k8s}/staging"]
    prod, staging = (g.load()[0] for g in found)
    assert found[0].variant is not None and found[0].variant.files == [
        f"{k8s}/base/config.yaml",
        f"{k8s}/prod/api.yaml",
    ]
    assert found[0].variant.common == (f"{k8s}/base",)
    for sc, replicas, period, failures in ((prod, 4, 10, 2), (staging, 2, 5, 3)):
        (w,) = sc.workloads
        probe = w.pod_spec.containers[0].readiness_probe
        assert probe is not None
        assert (w.spec.replicas, probe.period_seconds, probe.failure_threshold) == (
            replicas,
            period,
            failures,
        )
        # 100 requests/s per core of request: 20 a replica at 200m.
        assert [t.rate for t in sc.spec.traffic] == [20.0 * replicas]
    assert [h.name for h in prod.autoscalers] == ["api"] and staging.autoscalers == ()
    assert [p.name for p in staging.services[0].spec.ports] == ["http-staging"]
    assert sc.name == "staging" and prod.name == "prod"


def test_run_reports_each_variant_in_json(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    r = runner.invoke(app, ["run", str(k8s), "--json", "--no-series"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "VariantResults"
    got = [
        (
            v["folder"],
            v["files"],
            v["crossed"],
            v["result"]["summary"]["workloads"][0]["replicas"],
            v["result"]["summary"]["routes"][0]["offered"],
        )
        for v in doc["variants"]
    ]
    assert got == [
        (f"{k8s}/prod", [f"{k8s}/base/config.yaml", f"{k8s}/prod/api.yaml"], False, 4, 80 * 300),
        (f"{k8s}/staging", [f"{k8s}/base/config.yaml", f"{k8s}/staging/api.yaml"], False, 2, 40 * 300),
    ]


def test_run_prints_a_section_per_variant_headed_by_its_folder(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    r = runner.invoke(app, ["run", str(k8s), "--no-events"])
    assert r.exit_code == 0, r.output
    out = r.stdout
    prod = out.index(f"variant {k8s}/prod/ (with {k8s}/base)")
    staging = out.index(f"variant {k8s}/staging/ (with {k8s}/base)")
    assert prod < staging
    rows = [ln.split() for ln in out.splitlines() if ln.strip().startswith("deployment/api")]
    assert [row[1] for row in rows] == ["4", "2"]  # REPLICAS: prod's section, then staging's
    assert out.index("deployment/api", prod) < staging
    assert f"files: {k8s}/base/config.yaml, {k8s}/prod/api.yaml" in out
    assert r.stderr.count("a generated scenario (5m") == 2


def test_the_exit_code_is_the_worst_variants(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    r = runner.invoke(app, ["run", str(k8s), "--json", "--no-series", "--threshold", "ready: min>=3"])
    assert r.exit_code == 99, r.output
    doc = json.loads(r.stdout)
    assert [(v["folder"], v["crossed"]) for v in doc["variants"]] == [
        (f"{k8s}/prod", False),
        (f"{k8s}/staging", True),
    ]
    ok = runner.invoke(app, ["run", str(k8s), "--json", "--no-series", "--threshold", "ready: min>=2"])
    assert ok.exit_code == 0, ok.output


def test_a_variant_runs_alone_from_the_suggested_paths(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    r = runner.invoke(app, ["run", str(k8s / "prod"), str(k8s / "base"), "--print-scenario"])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("kind: HorizontalPodAutoscaler") == 1 and "replicas: 4" in r.stdout
    assert "replicas: 2" not in r.stdout


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["run", "{k8s}", "--print-scenario"], "--print-scenario prints one scenario"),
        (["run", "{k8s}", "--plot", "{tmp}/p.png"], "--plot draws one run"),
        (["run", "{k8s}", "--runs", "3"], "--runs repeats one scenario"),
        (["run", "{k8s}", "--junit", "{tmp}/j.xml"], "--junit writes one run's thresholds"),
        (["sweep", "{k8s}", "-o", "{tmp}/rows.csv", "--set", "deployment/api.spec.replicas=1,2"],
         "a sweep varies one scenario"),
        (["tune", "{k8s}", "--trials", "2"], "the tuner tunes one workload of one variant"),
    ],
)  # fmt: skip
def test_what_takes_one_scenario_refuses_variants_naming_them(
    tmp_path: Path, args: list[str], what: str
) -> None:
    k8s = overlays(tmp_path)
    r = runner.invoke(app, [a.format(k8s=k8s, tmp=tmp_path) for a in args])
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1, r.output
    command = args[0]
    given = f"{k8s}/prod -m {k8s}/base" if command == "sweep" else f"{k8s}/prod {k8s}/base"
    assert (
        f"the input holds 2 variants ({k8s}/prod/, {k8s}/staging/): {what}; give one variant's folder, "
        f"e.g. probesim {command} {given}"
    ) in r.output
    assert not (tmp_path / "rows.csv").exists() and not (tmp_path / "p.png").exists()


def test_tune_on_an_incomplete_overlay_suggests_tune(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    (k8s / "prod" / "api.yaml").write_text(api(4, 10, 2).split("---")[0])  # no Service
    r = runner.invoke(app, ["tune", str(k8s), "--trials", "2"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"run one at a time, e.g. probesim tune {k8s}/prod/" in r.output
    assert (
        f"{k8s}/prod/ has no Service selecting its pods (Service api in {k8s}/staging/api.yaml:21)"
        in r.output
    )


def test_an_hpa_for_a_workload_only_another_variant_has_is_refused(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    (k8s / "staging" / "hpa.yaml").write_text(PROD_HPA.replace("name: api}\n", "name: worker}\n", 1)
                                              .replace("kind: Deployment, name: api", "kind: Deployment, name: worker"))  # fmt: skip
    (k8s / "prod" / "worker.yaml").write_text(
        api(1, 5, 3).replace("name: api", "name: worker").replace("app: api", "app: worker")
    )
    r = runner.invoke(app, ["run", str(k8s)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert (
        f"{k8s}/staging/ has no Deployment worker to scale (in {k8s}/prod/worker.yaml:1) "
        "for its HorizontalPodAutoscaler worker"
    ) in r.output


def test_two_contents_in_one_folder_suggest_a_file(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(api(2, 5, 3))
    (tmp_path / "b.yaml").write_text(api(3, 5, 3))
    r = runner.invoke(app, ["run", str(tmp_path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"Deployment api is defined in {tmp_path}/a.yaml:1 and {tmp_path}/b.yaml:1" in r.output
    assert (
        f"e.g. probesim run {tmp_path}/b.yaml; not run as variants: both files are in {tmp_path}/" in r.output
    )


def test_a_base_beside_nested_overlays_is_three_variants(tmp_path: Path) -> None:
    # kustomize's layout: base/ and overlays/{prod,staging}/, each with whole objects.
    for sub, replicas in (("base", 1), ("overlays/prod", 4), ("overlays/staging", 2)):
        (tmp_path / sub).mkdir(parents=True)
        (tmp_path / sub / "api.yaml").write_text(api(replicas, 5, 3))
    found = generate_all([str(tmp_path)], Options())
    got = [(g.variant.folder if g.variant else None, g.load()[0].workloads[0].spec.replicas) for g in found]
    assert got == [
        (f"{tmp_path}/base", 1),
        (f"{tmp_path}/overlays/prod", 4),
        (f"{tmp_path}/overlays/staging", 2),
    ]


def test_a_file_beside_the_variant_folders_is_refused(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(api(1, 5, 3))
    (tmp_path / "prod").mkdir()
    (tmp_path / "prod" / "api.yaml").write_text(api(4, 5, 3))
    r = runner.invoke(app, ["run", str(tmp_path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"Deployment api is defined in {tmp_path}/api.yaml:1 and {tmp_path}/prod/api.yaml:1" in r.output
    assert f"e.g. probesim run {tmp_path}/prod/" in r.output


def test_the_same_object_in_both_variants_and_the_base_is_read_in_each(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    shared = api(1, 5, 3).replace("name: api", "name: worker").replace("app: api", "app: worker")
    (k8s / "base" / "worker.yaml").write_text(shared)
    (k8s / "prod" / "worker.yaml").write_text(shared)  # the same content: one object
    found = generate_all([str(k8s)], Options())
    assert [sorted(w.name for w in g.load()[0].workloads) for g in found] == [["api", "worker"]] * 2


def test_check_stress_runs_each_variants_workload_behind_its_own_service(tmp_path: Path) -> None:
    k8s = overlays(tmp_path)
    r = runner.invoke(app, ["check", str(k8s), "--stress", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {(s["workload"], s["stress"]): s for s in json.loads(r.stdout)["stress"]}
    # One pod of four (prod) or of two (staging) answers 500: a quarter or a half of requests.
    assert rows[(f"Deployment/api ({k8s}/prod)", "one-pod-500")]["errorPercent"] == pytest.approx(25, abs=1)
    assert rows[(f"Deployment/api ({k8s}/staging)", "one-pod-500")]["errorPercent"] == pytest.approx(
        50, abs=1
    )
    assert {w for w, _s in rows} == {f"Deployment/api ({k8s}/prod)", f"Deployment/api ({k8s}/staging)"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        st.sampled_from(["dev", "qa", "staging", "prod", "eu-prod"]),
        st.tuples(st.integers(1, 5), st.booleans()),  # replicas, has its Service
        min_size=2,
        max_size=4,
    )
)
def test_variants_are_run_exactly_when_every_folder_is_complete(
    tmp_path_factory: pytest.TempPathFactory, layout: dict[str, tuple[int, bool]]
) -> None:
    k8s = tmp_path_factory.mktemp("repo") / "k8s"
    (k8s / "base").mkdir(parents=True)
    (k8s / "base" / "config.yaml").write_text(BASE)
    for folder, (replicas, service) in layout.items():
        (k8s / folder).mkdir()
        text = api(replicas, 5, 3)
        (k8s / folder / "api.yaml").write_text(text if service else text.split("---")[0])
    complete = all(service for _r, service in layout.values())
    # The same replicas everywhere: one Deployment given several times, no variants.
    same = len({r for r, _s in layout.values()}) == 1
    if same:
        if not any(service for _r, service in layout.values()):
            with pytest.raises(InputError, match="nothing to run"):
                generate_all([str(k8s)], Options())
            return
        found = generate_all([str(k8s)], Options())
        assert len(found) == 1 and found[0].variant is None
        assert [w.spec.replicas for w in found[0].load()[0].workloads] == [next(iter(layout.values()))[0]]
        return
    if not complete:
        # A folder without the Service another has is not complete; with none anywhere,
        # each folder is, and has nothing to run.
        some = any(service for _r, service in layout.values())
        with pytest.raises(
            InputError, match="has no Service selecting its pods" if some else "nothing to run"
        ):
            generate_all([str(k8s)], Options())
        return
    found = generate_all([str(k8s)], Options())
    assert [g.variant.folder for g in found if g.variant] == [f"{k8s}/{f}" for f in sorted(layout)]
    for g in found:
        assert g.variant is not None
        folder = g.variant.folder.rsplit("/", 1)[1]
        assert g.variant.files == [f"{k8s}/base/config.yaml", f"{k8s}/{folder}/api.yaml"]
        assert [w.spec.replicas for w in g.load()[0].workloads] == [layout[folder][0]]
