"""The tuner's patch is one an SRE would sign (issue 41): the smallest change that removes a risk
(every other value the search moved is put back, and each kept value says why), bounded by the
probe policy, priced for what the app must ride out (its profile's slow start), and able to add
the probe that is missing — on workloads of different kinds from tests/analysis/review/."""

from __future__ import annotations

from pathlib import Path

import pytest

from probesim.model.kubernetes import Workload
from probesim.tune import study
from probesim.tune.ablation import MATERIAL, between, worse_by
from probesim.tune.figures import Figures, RunFigures
from probesim.tune.inputs import load
from probesim.tune.objective import Serial, _short_ms, ready_phase_ms
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
    assert any(line.startswith("catalog readinessProbe.") for line in o.put_back)
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
    # What the TCP check cannot see is said beside it, in check's PS001 words (handlers.py's
    # readiness_handler note): a hung pod whose port accepts connections passes a TCP check.
    assert o.reasons == [
        "app readinessProbe added: needed — without it, check would warn: PS001 container app serves "
        "Service web:80 with no readinessProbe. Beware: a TCP check, as check's PS001 fix adds it for an "
        "app probesim does not know: it sees the port closed, not a hang — a hung pod whose port still "
        "accepts connections stays in the Service (the table's 'hung pod out of service after'); the port "
        "speaks HTTP: an httpGet on a path that answers only when the pod can serve is better. If the app "
        "serves a health path, probe it with httpGet (or name the app's family in .probesim.yaml → "
        "profiles) and tune again"
    ]


def _figures(**kw: float) -> Figures:
    run = RunFigures("stress baseline", "stress", 1000, int(kw.get("failed", 0)), 0, 0, 0)
    base: dict = {"failed": 0, "restarts": 0, "detection_s": 40.0, "detected": True, "flaps": 0,  # type: ignore[type-arg]
                  "runs": (run,), "recovery_s": 100.0, "ready_s": 12.0, "probe_rps": 1.2}  # fmt: skip
    return Figures(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("back", "rec", "worse"),
    [
        ({"failed": 5}, {}, None),  # within the 5 the choice counts as equal
        ({"failed": 6}, {}, "failed"),
        ({"restarts": 1}, {}, "restarts"),
        ({"flaps": 1}, {}, "flaps"),
        ({"detection_s": 49.0}, {}, None),  # 9 s later: below a quarter of 40 s
        ({"detection_s": 51.0}, {}, "detection_s"),
        ({"detection_s": 29.0}, {"detection_s": 5.0}, None),  # far later, but within the 30 s asked
        ({"detection_s": 31.0}, {"detection_s": 5.0}, "detection_s"),
        ({"recovery_s": 124.0}, {}, None),
        ({"recovery_s": 126.0}, {}, "recovery_s"),
        ({"recovery_s": 90.0}, {"recovery_s": 20.0}, None),
        ({"ready_s": 14.0}, {}, None),  # 2 s later: not more than 2 s
        ({"ready_s": 15.5}, {}, "ready_s"),
        ({"ready_s": 10.0}, {"ready_s": 0.0}, None),
        ({"probe_rps": 1.75}, {}, None),  # 0.55/s more: not more than half
        ({"probe_rps": 1.9}, {}, "probe_rps"),
        ({"probe_rps": 0.9}, {"probe_rps": 0.1}, None),  # within a probe a second per pod
    ],
)
def test_only_a_material_difference_over_its_budget_keeps_a_changed_value(
    back: dict,
    rec: dict,
    worse: str | None,  # type: ignore[type-arg]
) -> None:
    assert set(MATERIAL) == {"restarts", "flaps", "detection_s", "recovery_s", "ready_s", "probe_rps"}
    assert worse_by(_figures(**back), _figures(**rec)) == worse


@pytest.mark.parametrize(
    ("kind", "key", "old", "new", "tried"),
    [
        ("readiness", "periodSeconds", 30, 2, [20, 15, 10, 8, 6, 5, 4, 3]),  # nearest yours first
        ("startup", "failureThreshold", 1, 120, [2, 4, 5, 8, 15, 30, 45, 90]),  # more than 8: spread
        ("liveness", "failureThreshold", 1, 4, [3]),  # within the bounds (liveness: 3 or more)
        ("readiness", "failureThreshold", 3, 2, []),
        ("outlierDetection", "baseEjectionTime", "30s", "74s", ["45s", "60s"]),
        # 3 or more (check's PS022 fix, mesh.py's _outlier_plan): 2 is on no bound's step
        ("outlierDetection", "consecutive5xxErrors", 1, 5, [3, 4]),
        ("readiness", "periodSeconds", None, 5, []),  # a probe added: all or nothing
    ],
)
def test_a_value_goes_back_as_far_as_it_can_through_round_values(
    kind: str, key: str, old: object, new: object, tried: list[object]
) -> None:
    assert between(kind, key, old, new) == tried


class _Event:
    def __init__(self, t: int, reason: str, obj: str) -> None:
        self.time_ms, self.reason, self.object = t, reason, obj


def test_time_short_of_replicas_is_the_union_of_the_pods_notready_spells() -> None:
    events = [_Event(t, r, o) for t, r, o in [
        (3, "PodNotReady", "pod/a"),  # before every replica was first Ready: not counted
        (4, "PodReady", "pod/a"),
        (10, "PodNotReady", "pod/a"), (15, "PodNotReady", "pod/b"), (20, "PodReady", "pod/a"),
        (30, "PodReady", "pod/b"), (40, "PodNotReady", "pod/a"), (41, "PodNotReady", "pod/other"),
    ]]  # fmt: skip
    # a 10-20 and b 15-30 overlap: 20 s short; a again from 40 to the end (50): 10 s more.
    assert _short_ms(events, {"pod/a", "pod/b"}, 5, 50) == 30


@pytest.mark.parametrize(
    ("probes", "worst_ms"),
    [
        ({"readinessProbe": {"periodSeconds": 28}}, 28_000),  # the app answers just after a check
        ({"readinessProbe": {"periodSeconds": 5, "successThreshold": 2}}, 10_000),
        # the startup probe sees it a period later; readiness then runs at once (a pod sync)
        ({"startupProbe": {"periodSeconds": 10}, "readinessProbe": {"periodSeconds": 5}}, 10_000),
        ({"startupProbe": {"periodSeconds": 10}, "readinessProbe": {"periodSeconds": 5, "successThreshold": 3}},
         20_000),
        ({"livenessProbe": {"periodSeconds": 10}}, 0),  # no readiness: Ready as soon as it runs
    ],
)  # fmt: skip
def test_a_new_pod_waits_at_worst_a_period_of_the_probe_that_lets_it_in(probes: dict, worst_ms: int) -> None:  # type: ignore[type-arg]
    checks = {name: {"httpGet": {"path": "/h", "port": 8080}, **t} for name, t in probes.items()}
    w = Workload.model_validate({
        "kind": "Deployment", "metadata": {"name": "w"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"containers": [{"name": "c", "image": "x", **checks}]}}},
    })  # fmt: skip
    assert ready_phase_ms(w) == worst_ms


def test_the_patch_points_at_each_probe_line_and_says_which_are_to_add(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from probesim.cli import app

    (tmp_path / "m.yaml").write_text(NO_PROBES)
    db = f"sqlite:///{tmp_path / 't.db'}"
    r = CliRunner().invoke(
        app, ["tune", str(tmp_path / "m.yaml"), "--trials", "6", "--storage", db, "--workers", "1"]
    )
    assert r.exit_code == 0, r.output
    # What it assumed about the app, as check says it: here an app probesim does not know.
    assert "[app] assumed: an app probesim does not know: no health path guessed" in r.stdout
    lines = r.stdout.split("Or set the same fields in the manifest:\n")[1].splitlines()
    # The container's line (11: "- name: app"), the probe not being there to point at.
    assert lines[0].strip() == f"{tmp_path / 'm.yaml'}:11 (container app: add its readinessProbe)"


AD_SERVICE = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: ads}
spec:
  replicas: 2
  selector: {matchLabels: {app: ads}}
  template:
    metadata: {labels: {app: ads}}
    spec:
      containers:
        - name: server
          image: example.com/ads:1
          ports: [{containerPort: 9555}]
          readinessProbe: {tcpSocket: {port: 9555}, initialDelaySeconds: 20, periodSeconds: 15}
          livenessProbe: {tcpSocket: {port: 9555}, initialDelaySeconds: 20, periodSeconds: 15}
---
apiVersion: v1
kind: Service
metadata: {name: ads}
spec:
  selector: {app: ads}
  ports: [{port: 9555}]
"""


def test_a_shorter_liveness_delay_comes_with_the_startup_probe_that_stands_for_it(tmp_path: Path) -> None:
    # The expert review's Online Boutique adservice (a Java service probesim does not know): the
    # tuner cut liveness's initialDelaySeconds 20 -> 10, which the probe policy asks for only in
    # favour of a startup probe (principle 3), and shipped no startup probe — less time to start
    # than its owner gave it, on an app whose start only that delay says. The startup probe
    # check's fix adds comes with it, and says why.
    o, patch = _tuned(tmp_path, AD_SERVICE, 20)
    c = _container(patch)
    assert c["livenessProbe"]["initialDelaySeconds"] == 10  # the policy's bound without a long delay
    assert c["startupProbe"] == {
        "tcpSocket": {"port": 9555}, "initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1,
        "failureThreshold": 7, "successThreshold": 1,
    }  # fmt: skip
    assert o.reasons[-1] == (
        "server startupProbe added: needed — it stands for the 20s your liveness initialDelaySeconds gave the "
        "app to start, which liveness no longer waits (a startup probe rather than a long initial delay); it "
        "allows 70s"
    )
