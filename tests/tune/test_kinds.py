"""The tuner's patch on workloads of every kind an SRE tunes (issue 41's review): a fast Go
service, a slow-starting Spring Boot service, a Python web app with no probe, a .NET gRPC service
probed by TCP, a queue worker with no Service, a MySQL StatefulSet, a Flask app behind Istio, a
Spring Boot service with no probe, and the plain 3-replica Deployment of the earlier advice. On
each: every changed value says the figure or the rule that decided it; no restart or readiness
flap where a restart cures nothing (the pause, the slow starts, the CPU limit); a deadlocked pod
restarted and every replica Ready again within two minutes (where a probe can see a deadlock); a
new pod Ready within about ten seconds of its app answering; the patched manifests pass
``probesim check --fail-on warning``; the patch breaks no principle of the probe policy that the
original or check's own fix kept; a slow starter gets a startup probe, and a container with no
probe gets the probes it needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from probesim.cli import app
from probesim.tune import checked, reasons, study
from probesim.tune.ablation import policy_broken
from probesim.tune.inputs import load
from probesim.tune.objective import Serial
from probesim.tune.patch import merge_patch, rule_patch, strategic_merge, workload_patch
from probesim.tune.space import Space
from tests.builders import probe_rules_config
from tests.tune.test_tune import SLOW

REVIEW = Path(__file__).resolve().parents[1] / "analysis" / "review"

SPRING_NO_PROBES = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: owners}
spec:
  replicas: 2
  selector: {matchLabels: {app: owners}}
  template:
    metadata: {labels: {app: owners}}
    spec:
      containers:
      - name: owners
        image: ghcr.io/acme/spring-petclinic-owners:3.2
        ports: [{name: http, containerPort: 8080}]
        resources: {requests: {cpu: 500m, memory: 512Mi}, limits: {memory: 512Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: owners}
spec:
  selector: {app: owners}
  ports: [{port: 80, targetPort: http}]
"""

# kind → (manifest, what the patch must add: probe fields per container)
KINDS: dict[str, tuple[str, dict[str, set[str]]]] = {
    "go-api": ("go-api.yaml", {}),
    "spring-jvm": ("spring-jvm.yaml", {"orders": {"readinessProbe", "startupProbe"}}),
    "python-web": ("python-web.yaml", {"web": {"readinessProbe"}}),
    "grpc-service": ("grpc-service.yaml", {}),
    "queue-worker": ("queue-worker.yaml", {}),
    "mysql-statefulset": ("mysql-statefulset.yaml", {"mysql": {"startupProbe"}}),
    "flask-istio": ("flask-istio.yaml", {}),
    "spring-no-probes": (SPRING_NO_PROBES, {"owners": {"readinessProbe", "livenessProbe", "startupProbe"}}),
    "plain-deployment": (SLOW, {}),
}
# The runs in which a restart cures nothing: a restart or a flap there is a false kill.
RIDE_OUT = ("stress stop-the-world-2s", "stress cpu-limit-at-request", "stress start-x2", "profile ")


def _tuned(tmp_path: Path, kind: str) -> tuple[study.Outcome, Any, Path]:
    source, _ = KINDS[kind]
    path = REVIEW / source if source.endswith(".yaml") else tmp_path / "m.yaml"
    if not source.endswith(".yaml"):
        path.write_text(source)
    inputs = load([str(path)], None, None)
    o = study.run(inputs, 20, 0, f"sqlite:///{tmp_path / 't.db'}", "s", Serial())
    return o, inputs, path


def _patched(path: Path, inputs: Any, o: study.Outcome, tmp_path: Path) -> Path:
    """The manifests with the recommended patches applied, as kubectl would."""
    assert o.recommended is not None
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    w, rule = inputs.workload, inputs.rule
    wp = workload_patch(w, o.current.setting, o.recommended.setting)
    rp = rule_patch(o.current.setting, o.recommended.setting)
    out = []
    for d in docs:
        if (d["kind"], d["metadata"]["name"]) == (w.kind, w.name) and wp is not None:
            d = strategic_merge(d, wp)
        if rule is not None and (d["kind"], d["metadata"]["name"]) == ("DestinationRule", rule.metadata.name):
            d = merge_patch(d, rp) if rp is not None else d
        out.append(d)
    patched = tmp_path / "patched.yaml"
    patched.write_text(yaml.safe_dump_all(out, sort_keys=False))
    return patched


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_patch_is_one_an_sre_would_sign(tmp_path: Path, kind: str) -> None:
    o, inputs, path = _tuned(tmp_path, kind)
    rec = o.recommended
    assert rec is not None, o.why
    # Every changed value with the run and figure, or the rule, that decided it.
    changes = reasons.changes(o.current.setting, rec.setting)
    assert len(o.reasons) == len(changes) > 0
    for line in o.reasons:
        assert "search's pick" not in line and "no figure is materially worse" not in line, line
    # No false kill: nothing restarted or taken out where a restart cures nothing.
    ride_out = [r for r in rec.figures.runs if r.label.startswith(RIDE_OUT)]
    assert ride_out and all((r.restarts, r.flaps) == (0, 0) for r in ride_out), ride_out
    assert (rec.figures.restarts, rec.figures.flaps) == (0, 0)
    # A deadlock cured: restarted, every replica Ready again within two minutes — unless no
    # probe can see one (a web app with no health endpoint), which the tuner says.
    if kind == "python-web":
        assert rec.figures.recovery_s == 300
        assert any("no liveness probe added — probesim knows no endpoint" in n for n in inputs.notes)
    else:
        assert rec.figures.recovery_s <= 120, rec.figures
    # A new pod Ready within about ten seconds of its app answering.
    assert rec.figures.ready_s <= 10, rec.figures
    # The patched manifests pass check --fail-on warning.
    patched = _patched(path, inputs, o, tmp_path)
    r = CliRunner().invoke(
        app, ["check", str(patched), "--fail-on", "warning", "--config", probe_rules_config(tmp_path)]
    )
    assert r.exit_code == 0, r.output
    # Judged by the probe policy check's fixes follow: no principle broken that the original or
    # check's own fix kept.
    space = Space(inputs.workload, inputs.rule, inputs.added, inputs.app, inputs.handlers)
    serves = bool(inputs.services)
    fix = checked.rules_fix(inputs, space)
    kept_by = [policy_broken(o.current.setting, serves)] + ([policy_broken(fix, serves)] if fix else [])
    assert all(policy_broken(rec.setting, serves) <= broken for broken in kept_by), kept_by
    # What a container lacked, added: a startup probe for a slow starter, probes for none.
    containers = {c["name"]: c for c in (workload_patch(inputs.workload, o.current.setting, rec.setting) or {})
                  .get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])}  # fmt: skip
    for name, fields in KINDS[kind][1].items():
        assert fields <= set(containers[name]), containers.get(name)


def test_a_grpc_service_probed_by_tcp_gets_grpc_probes_which_see_a_deadlock(tmp_path: Path) -> None:
    o, inputs, _ = _tuned(tmp_path, "grpc-service")
    assert o.current.figures.recovery_s == 300  # a TCP check never sees the hung app
    rec = o.recommended
    assert rec is not None
    c = workload_patch(inputs.workload, o.current.setting, rec.setting)["spec"]["template"]["spec"][
        "containers"
    ][0]  # type: ignore[index]
    assert c["livenessProbe"]["grpc"] == {"port": 5001} and c["livenessProbe"]["tcpSocket"] is None
    [why] = [line for line in o.reasons if line.startswith("pricing livenessProbe check")]
    assert why.startswith(
        "pricing livenessProbe check {tcpSocket: {port: grpc}} → {grpc: {port: 5001}}: all replicas"
    )
    assert why.endswith("300 s with {tcpSocket: {port: grpc}} (hung pod run)")


def test_a_spring_service_with_no_probe_gets_its_own_endpoints(tmp_path: Path) -> None:
    o, inputs, _ = _tuned(tmp_path, "spring-no-probes")
    assert o.recommended is not None
    patch = workload_patch(inputs.workload, o.current.setting, o.recommended.setting)
    [c] = patch["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    assert c["readinessProbe"]["httpGet"]["path"] == "/actuator/health/readiness"
    assert c["livenessProbe"]["httpGet"]["path"] == "/actuator/health/liveness"
    assert c["startupProbe"]["httpGet"]["path"] == "/actuator/health/liveness"
    budget = c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"]
    assert budget >= 90  # Spring Boot's slowest start in its profile
    assert any(line.startswith("owners livenessProbe added: all replicas Ready again") for line in o.reasons)
