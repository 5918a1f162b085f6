"""The lab runs every workload of a scenario (issue 23 item 6): each with its own pods, probes,
restarts and Service, its traffic sent to its Service; --compare row by row per workload; the
limits counted over all workloads. Beside a CPU-bound process, as a busy machine would be."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from probesim.engine import simulate
from probesim.errors import InputError
from probesim.lab.compare import agree, compare, outlier_interval_ms, simulated_hosts
from probesim.lab.limits import MAX_PODS, MAX_RATE
from probesim.lab.orchestrator import run_lab
from probesim.manifests.scenario import load_scenario
from probesim.report.compare import by_workload, render_lab_comparison
from tests.builders import builtin
from tests.lab.procs import children_left

PATIENT = Path(__file__).parents[2] / "src/probesim/scenarios/manifests/patient-liveness.yaml"

FRONTEND = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: frontend}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: frontend}}
  template:
    metadata: {labels: {app: frontend}}
    spec:
      containers:
        - name: web
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: frontend}
spec:
  selector: {app: frontend}
  ports: [{port: 80, targetPort: 8080}]
"""

# Seed 004's testbed behind a frontend: the backend (patient) checks its dependency in its
# liveness probe (timeout 5 s, failureThreshold 1); the dependency hangs from 8 s, both backend
# pods are killed at 14 s, drain 2 s and restart. The frontend has its own pods, probes and
# traffic, untouched.
GRAPH = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: graph}
manifests: [PATIENT, frontend.yaml]
spec:
  duration: 22s
  step: 100ms
  dependencies:
    httpbin:
      latency: 20ms
      outages: [{at: 8s, for: 12s, mode: hang}]
  behavior:
    patient:
      containers:
        patient:
          start: 2s
          shutdown: 2s
          routes:
            /check-dep: {calls: [{dependency: httpbin}]}
    frontend:
      containers:
        web: {start: 1s}
  traffic:
    - {name: back, service: patient, path: /check-nodep, rate: 20, start: 4s, stop: 20s, keepAlive: true, preAllocatedVUs: 2}
    - {name: front, service: frontend, path: /, rate: 10, start: 4s, stop: 20s}
"""


def graph(tmp_path: Path, replicas: int = 2) -> Path:
    (tmp_path / "frontend.yaml").write_text(FRONTEND.replace("REPLICAS", str(replicas)))
    path = tmp_path / "graph.yaml"
    path.write_text(GRAPH.replace("PATIENT", str(PATIENT)))
    return path


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    """A CPU-bound process for the test's length (one core of the machine's taken)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_every_workload_runs_with_its_own_probes_restarts_and_traffic(
    tmp_path: Path, busy: subprocess.Popen[bytes]
) -> None:
    sc = load_scenario(str(graph(tmp_path)))
    sim = simulate(sc)
    lab = run_lab(sc)
    assert busy.poll() is None  # the busy loop ran throughout
    assert [w.name for w in lab.workloads] == ["patient", "frontend"]
    # The backend's liveness probe waits on the hung dependency: both its pods are killed at
    # 14 s and restarted; the frontend's pods never are.
    for pod in ("pod/patient-0", "pod/patient-1"):
        assert [round(e.time_ms / 1000) for e in lab.events_for(pod, "Killing")] == [14]
    assert lab.workload("patient").total_restarts == 2
    assert lab.workload("frontend").total_restarts == 0
    assert {e.object for e in lab.events if e.reason == "Killing"} == {"pod/patient-0", "pod/patient-1"}
    for pod in ("pod/frontend-0", "pod/frontend-1"):
        (ready,) = lab.events_for(pod, "PodReady")  # once, when it listens (1 s) and is probed
        assert 1000 <= ready.time_ms <= 2500
        assert not lab.events_for(pod, "PodNotReady")
    back, front = lab.route("back"), lab.route("front")
    assert 74 <= back.failed["restarting"] <= 90  # the sidecars' 503s while the backend restarts
    assert front.failed_total == 0 and front.offered == 160
    assert "workload.frontend.ready" in lab.series and "workload.patient.ready" in lab.series
    # Row by row, per workload, the simulation agrees.
    rows = compare(sim, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
    objects = {str(r["object"]) for r in rows}
    assert {"workload/patient", "workload/frontend", "route/back"} <= objects  # route/front: 0 = 0
    busy.kill()  # the test's own child; then none of the lab's is left
    busy.wait(timeout=10)
    assert children_left() == []


def test_limits_count_pods_over_all_workloads(tmp_path: Path) -> None:
    # 2 backend pods + 11 frontend pods: each alone fits, together they do not.
    sc = load_scenario(str(graph(tmp_path, replicas=11)))
    with pytest.raises(
        InputError, match=rf"up to 13 pods at once .* at most {MAX_PODS} pods .* all its workloads"
    ):
        run_lab(sc)
    assert run_lab(sc, 0.1, workload="patient").workloads[0].name == "patient"  # one alone fits
    # Requests per second too: 1,500 to each workload's Service, 3,000 in all.
    path = graph(tmp_path)
    path.write_text(path.read_text().replace("rate: 20,", "rate: 1500,").replace("rate: 10,", "rate: 1500,"))
    with pytest.raises(
        InputError, match=f"3000 requests per second in all: the lab sends at most {MAX_RATE}"
    ):
        run_lab(load_scenario(str(path)))
    assert children_left() == []


def test_compare_rows_are_judged_per_workload(tmp_path: Path) -> None:
    sc = load_scenario(str(graph(tmp_path)))
    sim = simulate(sc)
    rows = compare(sim, replace(sim, source="lab"))  # the simulation as if measured: all agree
    tagged = {(str(r["object"]), str(r["workload"])) for r in rows}
    assert ("workload/patient", "patient") in tagged and ("workload/frontend", "frontend") in tagged
    assert ("pod/patient-0", "patient") in tagged and ("pod/frontend-1", "frontend") in tagged
    assert ("route/back", "") in tagged  # a route: the client's figure
    assert set(by_workload(rows)) == {"patient", "frontend"}
    rows[next(i for i, r in enumerate(rows) if r["object"] == "workload/frontend")]["agree"] = False
    buf = io.StringIO()
    render_lab_comparison(rows, Console(file=buf, width=160))
    text = buf.getvalue()
    assert "workload patient: agrees" in text
    assert f"workload frontend: differs on 1 of {by_workload(rows)['frontend'][0]} figures" in text


CASCADE_APPS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: backend}
spec:
  replicas: 2
  selector: {matchLabels: {app: backend}}
  template:
    metadata: {labels: {app: backend}}
    spec:
      containers:
        - name: api
          ports: [{containerPort: 8080}]
          livenessProbe:
            httpGet: {path: /check-dep, port: 8080}
            initialDelaySeconds: 3
            periodSeconds: 3
            timeoutSeconds: 5
            failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata: {name: backend}
spec:
  selector: {app: backend}
  ports: [{port: 80, targetPort: 8080}]
"""

# frontend → backend → db, as seed 004's testbed behind a frontend and seed 001's cascade across
# services: db hangs from 8 s on; the backend's /work calls it with a 1 s timeout (then
# answers 500), and its liveness probe waits on it (timeout 5 s, failureThreshold 1): both
# backend pods are killed at 14 s, drain 2 s, restart and listen 2 s later. The frontend's
# route calls the backend's Service for every request and answers 500 when the call fails.
CASCADE = """\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {name: cascade}
manifests: [apps.yaml, frontend.yaml]
spec:
  duration: 22s
  step: 100ms
  dependencies:
    db:
      latency: 20ms
      outages: [{at: 8s, for: 14s, mode: hang}]
  behavior:
    backend:
      containers:
        api:
          start: 2s
          shutdown: 2s
          routes:
            /check-dep: {calls: [{dependency: db}]}
            /work: {cpu: 2ms, calls: [{dependency: db, timeout: 1s}]}
    frontend:
      containers:
        web:
          start: 1s
          routes:
            /: {cpu: 1ms, calls: [{service: backend, path: /work, timeout: 3s}]}
  traffic:
    - {name: front, service: frontend, path: /, rate: 10, start: 4s, stop: 20s}
"""


def test_a_slow_dependency_cascades_through_the_backend_to_the_frontend_simulated_as_measured(
    tmp_path: Path, busy: subprocess.Popen[bytes]
) -> None:
    (tmp_path / "apps.yaml").write_text(CASCADE_APPS)
    # Its readiness on a path of its own (its "/" calls the backend: readiness would cascade too).
    frontend = FRONTEND.replace("REPLICAS", "2").replace("path: /,", "path: /healthz,")
    (tmp_path / "frontend.yaml").write_text(frontend)
    (tmp_path / "cascade.yaml").write_text(CASCADE)
    sc = load_scenario(str(tmp_path / "cascade.yaml"))
    sim = simulate(sc)
    lab = run_lab(sc)
    assert busy.poll() is None
    # The backend's liveness probe waits on the hung db: both pods killed at 14 s; the frontend,
    # whose requests all fail meanwhile, is never restarted.
    for pod in ("pod/backend-0", "pod/backend-1"):
        assert [round(e.time_ms / 1000) for e in lab.events_for(pod, "Killing")] == [14]
    assert lab.workload("frontend").total_restarts == 0
    front, calls = lab.route("front"), lab.route("calls:backend/work")
    assert front.offered == 160
    # ok: 4-8 s, before the hang; every request after it fails with the frontend's 500.
    assert 36 <= front.ok <= 44 and front.failed_total == front.failed["error_status"]
    # The backend's side: every call counted, refused while it restarted (16-18 s, no app).
    assert calls.service == "backend" and calls.offered == front.offered
    assert 35 <= calls.failed["restarting"] <= 45
    rows = compare(sim, lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
    objects = {str(r["object"]) for r in rows}
    assert {"route/front", "route/calls:backend/work", "workload/backend"} <= objects
    busy.kill()
    busy.wait(timeout=10)
    assert children_left() == []


def test_calls_to_a_service_with_a_destination_rule_go_through_a_real_envoy_that_ejects_the_bad_canary(
    busy: subprocess.Popen[bytes],
) -> None:
    # The built-in: the backend Service's canary pod answers 500 from 4 s; the callers'
    # sidecar (a real Envoy, configured as probesim envoy-config translates the rule) ejects it
    # after 3 consecutive 5xx, and the frontend barely notices.
    sc = builtin("service-call-outlier")
    sim = simulate(sc)
    lab = run_lab(sc)
    assert busy.poll() is None
    ejects = lab.events_for("sidecar/calls-backend", "OutlierEject")
    assert len(ejects) == 1 and 4000 <= ejects[0].time_ms <= 5500
    assert lab.hosts[json.loads(ejects[0].message)["upstream_url"]] == "backend-canary-0"
    front, calls = lab.route("front"), lab.route("calls:backend/work")
    assert front.offered == 160 and front.failed_total <= 5
    assert calls.offered == front.offered and calls.envoy["ejections_enforced_total"] == 1
    rows = compare(sim, lab, outlier_interval_ms(sc), {**simulated_hosts(sc), **lab.hosts})
    assert agree(rows), [r for r in rows if not r["agree"]]
    assert "sidecar/calls-backend → pod/backend-canary-0" in {str(r["object"]) for r in rows}
    busy.kill()
    busy.wait(timeout=10)
    assert children_left() == []
