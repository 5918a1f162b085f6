"""probesim tune on a workload behind Istio outlier detection agrees with probesim check (review
items 3 and 9): the search stays within check's outlier fix (consecutive5xxErrors 3 or more,
maxEjectionPercent 50 at most), a value the search changed goes back to check's fix where check
has one, a value that is not check's says which figure check's makes worse, and a long ejection
is priced by pods that blip and recover, not only rewarded by a pod that fails for good."""

from __future__ import annotations

from pathlib import Path

import pytest

from probesim.tune import reasons, study
from probesim.tune.checked import rules_fix
from probesim.tune.figures import Row
from probesim.tune.inputs import TuneInputs, load
from probesim.tune.objective import Serial, evaluate, plan
from probesim.tune.report import recommended_heading
from probesim.tune.space import OUTLIER_BOUNDS, Setting, Space
from probesim.tune.stresses import BLIPS_LABEL

# istioinaction's ch6 simple-backend (an app probesim does not know, two replicas, no probe) behind
# its DestinationRule: one 5xx ejects a pod, every pod may be ejected. On it the earlier tuner
# recommended consecutive5xxErrors 2 and maxEjectionPercent 90 with 12 trials, and 2, 90 and a
# baseEjectionTime of 90s with 40 (on the review's files, 240s: its out/tune_sb2.txt), where
# check's fix is 3 and 50.
BACKEND = """\
apiVersion: v1
kind: Service
metadata: {name: backend}
spec:
  selector: {app: backend}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
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
        - name: app
          image: example.com/backend:1
          ports: [{name: http, containerPort: 8080}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: backend}
spec:
  host: backend.default.svc.cluster.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 1, interval: 5s, baseEjectionTime: 30s, maxEjectionPercent: 100}
"""
CHECKS_FIX = {"consecutive5xxErrors": 3, "maxEjectionPercent": 50}  # analysis/rules/mesh.py _outlier_plan


@pytest.fixture(scope="module")
def got(tmp_path_factory: pytest.TempPathFactory) -> TuneInputs:
    d = tmp_path_factory.mktemp("backend")
    (d / "backend.yaml").write_text(BACKEND)
    return load([str(d / "backend.yaml")], None, None)


@pytest.fixture(scope="module")
def space(got: TuneInputs) -> Space:
    return Space(got.workload, got.rule, got.added, got.app, got.handlers)


def test_the_search_stays_within_checks_outlier_fix(space: Space) -> None:
    assert (OUTLIER_BOUNDS["consecutive5xxErrors"].low, OUTLIER_BOUNDS["maxEjectionPercent"].high) == (3, 50)
    # The repair moves what PS022 and PS021 warn of onto check's fix, not onto 2 and 90.
    od = {"consecutive5xxErrors": 1, "interval": "5s", "maxEjectionPercent": 100}
    assert space.repair(Setting({}, od)).outlier == {**od, **CHECKS_FIX}
    # With minHealthPercent, Envoy's panic mode keeps routing: 100 % is the user's to keep (PS021).
    healthy = {"consecutive5xxErrors": 4, "maxEjectionPercent": 100, "minHealthPercent": 50}
    assert space.repair(Setting({}, healthy)).outlier == healthy


def test_a_changed_outlier_value_goes_back_to_checks_fix(got: TuneInputs, space: Space) -> None:
    fix = rules_fix(got, space)
    assert fix is not None and fix.outlier is not None
    current = space.current()
    assert current.outlier is not None
    assert fix.outlier == {**current.outlier, **CHECKS_FIX}
    # What the ablation puts a changed value back to: the user's, but check's fix where it has one.
    ref = reasons.reference(space, current, fix)
    assert ref.outlier == {**current.outlier, **CHECKS_FIX}


def _with(space: Space, **outlier: object) -> Setting:
    s = space.with_added(space.current())
    return Setting(s.probes, {**(s.outlier or {}), **CHECKS_FIX, **outlier})


def test_blips_price_the_long_ejection_a_pod_failing_for_good_rewards(got: TuneInputs, space: Space) -> None:
    """Envoy ejects a host for baseEjectionTime × the times it was ejected, and never past
    maxEjectionPercent (source/extensions/clusters/common/outlier_detection_impl.cc, ejectHost):
    with 240 s, pod 0, ejected for its 3 s blip, is still out when pod 1 blips a minute later, so
    pod 1 cannot be ejected (one of two is 50 %) and its blip fails every request sent to it."""
    figures = {
        b: evaluate(plan(got, space, _with(space, baseEjectionTime=b)), Serial()) for b in ("30s", "240s")
    }
    failed = {b: {r.label: r.failed for r in f.runs} for b, f in figures.items()}
    assert (failed["30s"]["stress one-pod-500"], failed["240s"]["stress one-pod-500"]) == (35, 3)
    assert (failed["30s"][BLIPS_LABEL], failed["240s"][BLIPS_LABEL]) == (6, 63)
    assert (figures["30s"].failed, figures["240s"].failed) == (81, 106)
    # No DestinationRule, no blip run: its cost is the outlier detection's, which is not tuned then.
    bare = Space(got.workload, None, got.added, got.app, got.handlers)
    plain = TuneInputs(got.scenario, got.given, got.workload, got.services, None)
    assert BLIPS_LABEL not in [r.label for r in plan(plain, bare, bare.with_added(bare.current()))]


def test_an_outlier_value_other_than_checks_says_the_figure_checks_makes_worse(
    got: TuneInputs, space: Space
) -> None:
    now = space.current()
    rec = _with(space, consecutive5xxErrors=5)
    fix = rules_fix(got, space)
    rec_row = Row(1, rec, evaluate(plan(got, space, rec), Serial()))
    now_row = Row(None, now, evaluate(plan(got, space, now), Serial()))
    lines = reasons.justify(got, space, rec_row, now_row, Serial(), fix=fix)
    line = next(x for x in lines if "consecutive5xxErrors" in x)
    assert line == (
        "outlierDetection.consecutive5xxErrors 1 → 5: needed — with 1, check would warn: PS022 "
        "consecutive5xxErrors is 1; not check's fix's 3: no figure is materially worse with check's 3"
    )


def test_the_tuned_outlier_detection_is_checks_fix_and_its_readiness_says_what_it_cannot_see(
    got: TuneInputs, tmp_path: Path
) -> None:
    o = study.run(got, 12, 0, f"sqlite:///{tmp_path / 'tune.db'}", "backend", Serial())
    assert o.recommended is not None
    assert o.recommended.setting.outlier == {
        "consecutive5xxErrors": 3, "splitExternalLocalOriginErrors": False, "interval": "5s",
        "baseEjectionTime": "30s", "maxEjectionPercent": 50,
    }  # fmt: skip
    assert o.reasons[1:] == [
        "outlierDetection.consecutive5xxErrors 1 → 3: needed — with 1, check would warn: PS022 "
        "consecutive5xxErrors is 1",
        "outlierDetection.maxEjectionPercent 100 → 50: needed — with 100, check would warn: PS021 every "
        "host can be ejected at once (maxEjectionPercent 100, minHealthPercent 0)",
    ]
    # The TCP readiness check's PS001 fix adds, with what it cannot see: the hung pod stays in.
    assert o.reasons[0].startswith(
        "app readinessProbe added: needed — without it, check would warn: PS001 container app serves "
        "Service backend:80 with no readinessProbe. Beware: a TCP check, as check's PS001 fix adds it "
        "for an app probesim does not know: it sees the port closed, not a hang"
    )
    assert o.reasons[0].endswith(
        "under Istio keep probe rewriting on (a TCP probe the sidecar captures passes while the sidecar runs)"
    )
    assert o.recommended.figures.detection_s == 300.0  # the table's "never": what the caveat points at


def test_the_recommended_heading_claims_a_trial_only_with_its_own_values() -> None:
    assert recommended_heading(26, 0) == "RECOMMENDED (trial 26)"
    assert recommended_heading(26, 1) == "RECOMMENDED (trial 26, then 1 value put back as listed below)"
    assert recommended_heading(26, 5) == "RECOMMENDED (trial 26, then 5 values put back as listed below)"
