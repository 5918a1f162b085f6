"""The tuner's patch is one an SRE would sign (issue 41): the smallest change that removes a risk
(every other value the search moved is put back, and each kept value says why), bounded by the
probe policy, priced for what the app must ride out (its profile's slow start), and able to add
the probe that is missing — on workloads of different kinds from tests/analysis/review/."""

from __future__ import annotations

from pathlib import Path

import pytest

from probesim.tune import study
from probesim.tune.ablation import MATERIAL, worse_by
from probesim.tune.inputs import load
from probesim.tune.objective import Figures, RunFigures, Serial
from probesim.tune.patch import workload_patch

REVIEW = Path(__file__).resolve().parents[1] / "analysis" / "review"


def _tuned(tmp_path: Path, manifest: Path | str, trials: int) -> tuple[study.Outcome, dict]:  # type: ignore[type-arg]
    path = manifest if isinstance(manifest, Path) else tmp_path / "m.yaml"
    if not isinstance(manifest, Path):
        path.write_text(manifest)
    inputs = load([str(path)], None, None)
    o = study.run(inputs, trials, 0, f"sqlite:///{tmp_path / 't.db'}", "s", Serial())
    patch = workload_patch(inputs.workload, o.current.setting, o.recommended.setting) if o.recommended else {}
    return o, patch or {}


def _container(patch: dict) -> dict:  # type: ignore[type-arg]
    [c] = patch["spec"]["template"]["spec"]["containers"]
    return c  # type: ignore[no-any-return]


def test_a_plain_deployment_gets_the_one_value_that_removes_its_risk(tmp_path: Path) -> None:
    # A fast Go service, 3 replicas: liveness kills on a single miss (failureThreshold 1). The
    # search also moves readiness, which makes no material difference: put back as it is.
    o, patch = _tuned(tmp_path, REVIEW / "go-api.yaml", 20)
    assert _container(patch) == {"name": "catalog", "livenessProbe": {"failureThreshold": 4}}
    assert o.reasons == [
        "catalog livenessProbe.failureThreshold 1 → 4: needed — with 1, liveness would give up no later than "
        "readiness; a missed check or a pause would restart the container"
    ]
    assert o.put_back and all(line.startswith("catalog readinessProbe.") for line in o.put_back)
    assert o.recommended is not None and o.recommended.figures.restarts == 0  # the pause no longer kills


def test_a_slow_starting_database_gets_a_startup_probe_not_a_longer_delay(tmp_path: Path) -> None:
    # MySQL (its profile: up to 5 minutes of crash recovery) with liveness after 30 s: the profile's
    # slow-start run restarts it 5 times; the patch adds a startup probe on mysqladmin ping that
    # allows 1.5 × 5 minutes, gives the exec probes time to fork, and a liveness kill its own grace.
    o, patch = _tuned(tmp_path, REVIEW / "mysql-statefulset.yaml", 20)
    slow = next(r for r in o.current.figures.runs if r.label.startswith("profile slow start"))
    assert (slow.label, slow.restarts) == ("profile slow start (MySQL / MariaDB)", 5)
    c = _container(patch)
    startup = c["startupProbe"]
    assert startup["exec"] == {"command": ["mysqladmin", "ping", "-h", "127.0.0.1"]}
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 450
    assert c["livenessProbe"]["terminationGracePeriodSeconds"] == 10
    assert "initialDelaySeconds" not in c["livenessProbe"] or c["livenessProbe"]["initialDelaySeconds"] <= 10
    assert o.recommended is not None
    rec_slow = next(r for r in o.recommended.figures.runs if r.label.startswith("profile slow start"))
    assert rec_slow.restarts == 0
    assert not any("search's pick" in line for line in o.reasons)


NO_PROBES = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ghcr.io/acme/web:1.0
        ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
"""


def test_a_deployment_with_no_probe_is_tuned_and_given_its_readiness(tmp_path: Path) -> None:
    o, patch = _tuned(tmp_path, NO_PROBES, 12)
    # The readiness probe check's fix adds, at its timings: the search's cheaper ones (a period of
    # half a minute) make no material difference and are put back to them.
    assert _container(patch) == {
        "name": "app",
        "readinessProbe": {"tcpSocket": {"port": "http"}, "initialDelaySeconds": 0, "periodSeconds": 5,
                           "timeoutSeconds": 1, "failureThreshold": 3, "successThreshold": 1},
    }  # fmt: skip
    assert o.reasons == [
        "app readinessProbe added: needed — without it, check would warn: PS001 container app serves "
        "Service web:80 with no readinessProbe"
    ]


def _figures(**kw: float) -> Figures:
    run = RunFigures("stress baseline", "stress", 1000, int(kw.get("failed", 0)), 0, 0, 0)
    base: dict = {"failed": 0, "restarts": 0, "detection_s": 10.0, "detected": True, "flaps": 0,  # type: ignore[type-arg]
                  "runs": (run,), "recovery_s": 40.0, "ready_s": 0.0, "probe_rps": 0.4}  # fmt: skip
    return Figures(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("back", "worse"),
    [
        ({"failed": 5}, None),  # within the 5 the choice counts as equal
        ({"failed": 6}, "failed"),
        ({"restarts": 1}, "restarts"),
        ({"flaps": 1}, "flaps"),
        ({"detection_s": 14.0}, None),  # 4 s later: below 5 s
        ({"detection_s": 16.0}, "detection_s"),
        ({"recovery_s": 49.0}, None),  # 9 s later: below 10 s
        ({"recovery_s": 51.0}, "recovery_s"),
        ({"probe_rps": 0.6}, None),  # 0.2/s more: below 0.25/s
        ({"probe_rps": 0.7}, "probe_rps"),
    ],
)
def test_only_a_material_difference_keeps_a_changed_value(back: dict, worse: str | None) -> None:  # type: ignore[type-arg]
    assert set(MATERIAL) == {"restarts", "flaps", "detection_s", "recovery_s", "ready_s", "probe_rps"}
    assert worse_by(_figures(**back), _figures()) == worse
