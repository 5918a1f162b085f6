"""probesim run on Kubernetes manifests: the generated scenario, its figures, --print-scenario's
round trip, the options that shape it, and what it says about what it does not run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from probesim.cli import app
from probesim.engine import simulate
from probesim.manifests.generated import Options, generate
from probesim.manifests.scenario import load_scenario

runner = CliRunner()
REALWORLD = Path(__file__).resolve().parents[3] / "shared" / "realworld"


def deployment(name: str = "web", replicas: int = 2, delay: int = 10, **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "example.com/app:1",
                            "ports": [{"containerPort": 8080}],
                            # 100m: the default load model's 10 requests/s per replica
                            "resources": {"requests": {"cpu": "100m"}},
                            "readinessProbe": {
                                "httpGet": {"path": "/ready", "port": 8080},
                                "initialDelaySeconds": delay,
                                "periodSeconds": 5,
                            },
                            **container,
                        }
                    ]
                },
            },
        },
    }


def service(name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


CRONJOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "cleanup"},
    "spec": {
        "schedule": "0 * * * *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
                }
            }
        },
    },
}


def write(folder: Path, name: str, *objects: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / name
    f.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return f


@pytest.fixture
def k8s(tmp_path: Path) -> Path:
    """A folder as users keep one: a Deployment and its Service, a CronJob, a ConfigMap."""
    d = tmp_path / "k8s"
    write(d, "web.yaml", deployment(), service())
    write(d, "jobs.yaml", CRONJOB, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}})
    return d


def run_json(*args: str, stdin: str | None = None) -> dict[str, Any]:
    r = runner.invoke(app, ["run", *args, "--json", "--no-series"], input=stdin)
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_a_folder_runs_each_workload_behind_a_service_for_five_minutes(k8s: Path) -> None:
    r = runner.invoke(app, ["run", str(k8s), "--json", "--no-series"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["scenario"] == "k8s"
    assert doc["duration"] == 300
    route = doc["summary"]["routes"][0]
    # 2 replicas: 20 requests/s for 300 s. Both apps answer at once, and the readiness probe
    # first looks at 10 s: the 10 s before have no endpoint, the start-up ramp's, apart.
    assert (route["name"], route["offered"], route["ok"], route["failed"]) == ("web", 6000, 5800, 200)
    assert {c: n for c, n in route["failedByCause"].items() if n} == {"no_endpoint": 200}
    w = doc["summary"]["workloads"][0]
    assert (w["name"], w["firstReady"], w["restarts"]) == ("web", 10, 0)
    # stderr says what runs and what does not (check's skipped line)
    assert (route["ramp"]["end"], route["ramp"]["failed"], route["steady"]["failed"]) == (10, 200, 0)
    assert (route["steady"]["offered"], route["steady"]["errorRate"]) == (5800, 0.0)
    for k in ("offered", "ok", "failed"):  # the two parts make the run, whose figures keep their meaning
        assert route["ramp"][k] + route["steady"][k] == route[k]
    assert "Service web: 20 requests/s → Deployment web (2 replicas), the app answers at once" in r.stderr
    assert "skipped 2 objects (1 ConfigMap, 1 CronJob): not simulated" in r.stderr


def test_helm_template_output_on_standard_input(k8s: Path) -> None:
    helm = "".join(
        f"---\n# Source: web/templates/{n}.yaml\n{yaml.safe_dump(o)}"
        for n, o in (("deployment", deployment(replicas=1, delay=3)), ("service", service()))
    )
    doc = run_json("-", stdin=helm)
    assert doc["scenario"] == "stdin"
    route = doc["summary"]["routes"][0]
    # the app answers at 3 s; the probe ticks every 5 s from the start, skipping those before its
    # initialDelaySeconds: Ready at 5 s
    assert (route["offered"], route["failed"]) == (10 * 300, 10 * 5)


def test_a_folder_with_nothing_to_run_says_what_it_found(tmp_path: Path) -> None:
    write(tmp_path / "jobs", "cron.yaml", CRONJOB)
    r = runner.invoke(app, ["run", str(tmp_path / "jobs")])
    assert r.exit_code == 2
    assert "nothing to run in" in r.stderr and "found 1 CronJob, no Service." in r.stderr
    assert (
        "Deployments, StatefulSets, ReplicaSets, ReplicationControllers and Pods that a Service" in r.stderr
    )
    assert "Traceback" not in r.output
    chart = tmp_path / "chart"
    write(chart / "templates", "deployment.yaml", deployment())
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 1.0.0\n")
    r = runner.invoke(app, ["run", str(chart)])
    assert r.exit_code == 2 and f"run `helm template {chart} | probesim run -`" in r.stderr


def test_printed_scenario_runs_back_to_the_same_result(k8s: Path, tmp_path: Path) -> None:
    before = {f: f.read_bytes() for f in k8s.iterdir()}
    printed = runner.invoke(app, ["run", str(k8s), "--print-scenario", "--rate", "7"])
    assert printed.exit_code == 0, printed.output
    assert printed.stdout.startswith("# Generated by probesim")
    assert "#   CronJob cleanup (" in printed.stdout  # what is not run, with why
    s = tmp_path / "elsewhere" / "s.yaml"
    s.parent.mkdir()
    s.write_text(printed.stdout)
    assert run_json(str(s)) == run_json(str(k8s), "--rate", "7")
    schema = json.loads(runner.invoke(app, ["schema"]).stdout)
    jsonschema.validate(yaml.safe_load(printed.stdout), schema)  # editors check it as they do a written one
    assert {f: f.read_bytes() for f in k8s.iterdir()} == before  # the user's files as they were


def test_start_rate_and_duration_shape_the_run(k8s: Path) -> None:
    doc = run_json(str(k8s), "--start", "20s", "--rate", "50", "--duration", "1m")
    route = doc["summary"]["routes"][0]
    assert doc["duration"] == 60
    # readiness looks at 10 s and every 5 s: the app answering at 20 s is Ready at 20 s
    assert (route["offered"], route["failed"]) == (50 * 60, 50 * 20)
    assert doc["summary"]["workloads"][0]["firstReady"] == 20
    fine = run_json(str(k8s), "--start", "12.5s", "--duration", "30s")
    assert fine["summary"]["workloads"][0]["firstReady"] == 15  # the probe at 15 s is the first to pass


def test_several_services_and_a_shared_one_get_one_route_each(tmp_path: Path) -> None:
    d = tmp_path / "app"
    write(d, "a.yaml", deployment("api", replicas=3, delay=0), service("api"))
    canary = deployment("api-canary", replicas=1, delay=0)
    canary["spec"]["selector"]["matchLabels"] = {"app": "api", "track": "canary"}
    canary["spec"]["template"]["metadata"]["labels"] = {"app": "api", "track": "canary"}
    write(d, "b.yaml", canary, deployment("web", replicas=1, delay=0), service("web"))
    routes = {r["name"]: r for r in run_json(str(d), "--duration", "10s")["summary"]["routes"]}
    assert {n: r["offered"] for n, r in routes.items()} == {"api": 40 * 10, "web": 10 * 10}


def test_bad_input_names_file_and_line_and_options_are_checked(k8s: Path, tmp_path: Path) -> None:
    bad = deployment()
    bad["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = -5
    f = write(tmp_path / "bad", "web.yaml", bad, service())
    r = runner.invoke(app, ["run", str(f.parent)])
    assert r.exit_code == 2
    assert f"{f}:" in r.stderr and "periodSeconds" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["run", str(k8s), "--duration", "soon"])
    assert (r.exit_code, "--duration" in r.stderr) == (2, True)
    r = runner.invoke(app, ["run", str(k8s), "--duration", "1000h"])  # refused before it starts: one line
    assert r.exit_code == 2 and "--max-cost" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(app, ["run", "seed000-readiness", "--rate", "5"])
    assert r.exit_code == 2 and "--rate shapes the scenario probesim run generates" in r.stderr


def test_realworld_projects_run_in_place() -> None:
    """Projects as published (read where they are): every workload behind a Service runs, 10
    requests/s per replica; their probes have no initial delay, so nothing fails."""
    expected = {
        "emojivoto": {"emoji-svc": 600, "voting-svc": 600, "web-svc": 600},
        # reviews-v1, v2 and v3 behind one Service; its VirtualServices and DestinationRules come along
        "bookinfo": {"details": 600, "ratings": 600, "reviews": 1800, "productpage": 600},
    }
    for project, offered in expected.items():
        folder = REALWORLD / project
        if not folder.is_dir():
            pytest.skip(f"{folder} not present")
        r = runner.invoke(app, ["run", str(folder), "--duration", "1m", "--json", "--no-series"])
        assert r.exit_code == 0, r.output
        routes = json.loads(r.stdout)["summary"]["routes"]
        assert {x["name"]: x["offered"] for x in routes} == offered
        assert all(x["ok"] == x["offered"] for x in routes), routes


def test_set_changes_the_generated_scenario_as_it_would_a_file(k8s: Path) -> None:
    r = runner.invoke(
        app,
        ["run", str(k8s), "--duration", "30s", "--set", "deployment/web.spec.replicas=3", "--set",
         "spec.traffic[0].rate=5", "--json", "--no-series"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["summary"]["workloads"][0]["replicas"] == 3
    assert doc["summary"]["routes"][0]["offered"] == 5 * 30
    assert (
        "Service web: 5 requests/s → Deployment web (3 replicas)" in r.stderr
    )  # what ran, not what was written


def test_a_scenario_runs_alone(k8s: Path, tmp_path: Path) -> None:
    s = tmp_path / "s.yaml"
    s.write_text(runner.invoke(app, ["run", str(k8s), "--print-scenario"]).stdout)
    r = runner.invoke(app, ["run", str(s), str(k8s)])
    assert r.exit_code == 2 and "a scenario runs alone" in r.stderr
    r = runner.invoke(app, ["run", str(s), "--print-scenario"])
    assert r.exit_code == 2 and "is a scenario: change its spec instead" in r.stderr


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    replicas=st.integers(1, 3),
    delay=st.integers(0, 12),
    period=st.integers(1, 10),
    seconds=st.integers(25, 40),
)
def test_figures_follow_the_probes_and_the_printed_scenario_is_the_same(
    tmp_path_factory: pytest.TempPathFactory, replicas: int, delay: int, period: int, seconds: int
) -> None:
    """Offered = 10 per replica × duration; what fails is what is sent before the first
    readiness probe at or after initialDelaySeconds (probes tick every period from the start);
    the printed scenario loads to the same Scenario as the folder."""
    d = tmp_path_factory.mktemp("k8s")
    dep = deployment(replicas=replicas, delay=delay)
    dep["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["periodSeconds"] = period
    write(d, "web.yaml", dep, service())
    options = Options(duration_ms=seconds * 1000)
    g = generate([str(d)], options)
    sc, _ = g.load()
    s = d / "printed" / "s.yaml"
    s.parent.mkdir()
    s.write_text(g.text)
    assert load_scenario(str(s)) == sc
    route = simulate(sc).to_json(series=False)["summary"]["routes"][0]
    rate = 10 * replicas
    ready = -(-delay // period) * period
    assert (route["offered"], route["ok"], route["failed"]) == (
        rate * seconds,
        rate * (seconds - ready),
        rate * ready,
    )


def test_a_healthy_app_answers_on_the_ports_its_probes_and_service_use(tmp_path: Path) -> None:
    """The kubelet and kube-proxy reach ports a container does not declare: probes on 10254
    and a Service targeting 9090, beside the declared 8080, find the app listening."""
    dep = deployment(delay=0)
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["readinessProbe"]["httpGet"]["port"] = 10254
    c["livenessProbe"] = {"tcpSocket": {"port": 10254}}
    svc = service()
    svc["spec"]["ports"] = [{"port": 80, "targetPort": 9090}]
    write(tmp_path / "k8s", "web.yaml", dep, svc)
    g = generate([str(tmp_path / "k8s")], Options(duration_ms=20_000))
    sc, _ = g.load()
    assert sc.spec.behavior["web"].containers["app"].ports == (8080, 9090, 10254)
    route = simulate(sc).to_json(series=False)["summary"]["routes"][0]
    assert (route["offered"], route["ok"]) == (20 * 20, 20 * 20)


def test_traffic_goes_to_the_first_tcp_port_and_target_port_0_is_the_port(tmp_path: Path) -> None:
    """A Service whose first port is UDP (jaeger-agent's) gets its HTTP traffic on its first TCP
    port; targetPort 0 (helm charts write it) is the port, as the API server defaults it."""
    svc = service()
    svc["spec"]["ports"] = [{"port": 6831, "protocol": "UDP"}, {"port": 8080, "targetPort": 0}]
    write(tmp_path / "k8s", "web.yaml", deployment(delay=0), svc)
    g = generate([str(tmp_path / "k8s")], Options(duration_ms=10_000))
    sc, _ = g.load()
    assert sc.spec.traffic[0].port == 8080
    route = simulate(sc).to_json(series=False)["summary"]["routes"][0]
    assert (route["offered"], route["ok"]) == (200, 200)


def test_a_healthy_apps_headline_is_the_steady_state_with_no_errors(tmp_path: Path) -> None:
    """3 replicas of 500m whose readiness first looks at 10 s: the 10 s without an endpoint are
    the start-up ramp's, reported apart; the headline (after it) has no error, and a request
    costs the same 5 ms of CPU at 500m as at 3 cores: its median is a few ms at both (it was
    117 ms at 2 cores when the cost grew with the request), only the node's contention apart."""
    p50 = []
    for cpu in ("500m", "3"):
        dep = deployment(replicas=3, delay=10)
        dep["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        d = tmp_path / cpu
        write(d, "web.yaml", dep, service())
        r = runner.invoke(app, ["run", str(d), "--no-events"], terminal_width=200)
        assert r.exit_code == 0, r.output
        head = r.stdout.split("Start-up ramp")[0]
        assert "Requests after the start-up ramp (the steady state)" in head
        [row] = [line.split() for line in head.splitlines() if line.strip().startswith("web ")]
        rate = 150 if cpu == "500m" else 900  # half the request at 5 ms a request, per replica
        assert row[2:6] == [str(rate * 290), str(rate * 290), "0", "0.0"]
        assert f"web: 0s to 10s, {rate * 10} offered, {rate * 10} failed (100.0 %): no_endpoint" in r.stdout
        assert row[7] == "ms"
        p50.append(float(row[6]))
    assert p50 == [4.7, 7.1]
