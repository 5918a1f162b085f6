"""How the tuner searches: every setting it can sample is one probesim check's probe rules
accept (repaired onto them) and is rebuilt from its parameters; the local search's moves; the
hung pod's figures read at the worst moment; and two studies with different seeds agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from probesim.cli import app
from probesim.tune import checked, search, study
from probesim.tune.inputs import TuneInputs, load
from probesim.tune.objective import Serial, evaluate, plan
from probesim.tune.patch import strategic_merge
from probesim.tune.space import OUTLIER_BOUNDS, PROBE_BOUNDS, Bound, Setting, Space
from tests.builders import probe_rules_config
from tests.tune.test_tune import SLOW, WEB

runner = CliRunner()

RULE = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: shop}
spec:
  host: web.shop.svc.cluster.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 2, interval: 2s, baseEjectionTime: 60s}
"""
# A liveness probe on the readiness probe's own check (PS003: it must outlast it strictly), and
# an exec readiness probe (PS015: a timeout above 1 s).
SAME = WEB.replace("path: /healthz", "path: /ready")
EXEC = WEB.replace(
    "readinessProbe: {httpGet: {path: /ready, port: http},", "readinessProbe: {exec: {command: [cat, /r]},"
)
CASES = {"slow": SLOW, "web-mesh": WEB + RULE, "same-check": SAME, "exec": EXEC}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> TuneInputs:
    return load_text(CASES[request.param])


def _value(b: Bound) -> st.SearchStrategy[int]:
    return st.integers(0, (b.high - b.low) // b.step).map(lambda k: b.low + k * b.step)


@st.composite
def params_for(draw: st.DrawFn, space: Space) -> dict[str, Any]:
    """Any parameters the sampler could draw for ``space`` (define-by-run, as Space.sample asks)."""
    out: dict[str, Any] = {}
    for c in space.workload.pod_spec.containers:
        for kind in ("readiness", "liveness", "startup"):
            if c.probe(kind) is not None:  # type: ignore[arg-type]
                for name, b in PROBE_BOUNDS[kind].items():  # type: ignore[index]
                    out[f"{c.name}.{kind}.{name}"] = draw(_value(b))
        if c.liveness_probe is not None and c.startup_probe is None:
            out[f"{c.name}.startup.add"] = add = draw(st.booleans())
            for name, b in PROBE_BOUNDS["startup"].items() if add else ():
                out[f"{c.name}.startup.{name}"] = draw(_value(b))
    if space.rule is not None:
        for name, b in OUTLIER_BOUNDS.items():
            if name != "consecutiveGatewayErrors":
                out[f"outlier.{name}"] = draw(_value(b))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_sampled_setting_passes_check_and_is_rebuilt_from_its_parameters(
    case: TuneInputs, data: st.DataObject
) -> None:
    space = Space(case.workload, case.rule)
    setting = space.sample(optuna.trial.FixedTrial(data.draw(params_for(space))))
    # No warning on a probe, none that check does not give today: every trial is eligible.
    warned = {f for f in checked.check_findings(case, space, space.current()) if not checked.about_probes(f)}
    assert checked.check_findings(case, space, setting) <= warned
    assert space.repair(setting) == setting
    assert space.sample(optuna.trial.FixedTrial(space.params_of(setting))) == setting


def test_the_rules_fix_is_a_seeded_trial_and_repairs_what_check_finds() -> None:
    got = load_text(SLOW)
    space = Space(got.workload, got.rule)
    fix = checked.rules_fix(got, space)
    # check's fix for periods of 1 s with timeouts of 1 s (PS011): periods of 2 s, liveness's
    # then 5 s, the search space's least (the policy: probing liveness faster buys noise).
    assert fix is not None
    assert [fix.probes["app"][p]["periodSeconds"] for p in ("readinessProbe", "livenessProbe")] == [2, 5]
    # The current setting repaired has the same periods (raised to 2 s, the timeouts kept below);
    # the fix also moves liveness's 290 s delay into a startup probe on its check (PS033), which
    # allows no less: 31 × 10 s ≥ 290 + 7 × 2 s, liveness then at once.
    repaired = space.repair(space.current())
    assert [repaired.probes["app"][p]["periodSeconds"] for p in ("readinessProbe", "livenessProbe")] == [2, 5]
    assert fix.probes["app"]["livenessProbe"]["initialDelaySeconds"] == 0
    assert fix.probes["app"]["startupProbe"] == {
        "httpGet": {"path": "/live", "port": "http"}, "initialDelaySeconds": 0, "periodSeconds": 10,
        "timeoutSeconds": 1, "failureThreshold": 31, "successThreshold": 1,
    }  # fmt: skip
    assert space.repair(fix) == fix
    assert space.sample(optuna.trial.FixedTrial(space.params_of(fix))) == fix
    seeds = [space.repair(space.current()), search.api_defaults(space.current())]
    assert search.next_trial(space, [], 1, seeds) == (space.params_of(seeds[1]), {"origin": "seed"})
    assert search.next_trial(space, [], 2, seeds) is None  # then random, up to STARTUP_TRIALS


def load_text(text: str) -> TuneInputs:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "w.yaml").write_text(text)
        return load([str(Path(d) / "w.yaml")], None, None)


def test_moves_in_order_pattern_first_then_cyclic_then_pairs() -> None:
    got = load_text(SLOW)
    space = Space(got.workload, got.rule)
    params = {"app.readiness.periodSeconds": 10, "app.readiness.timeoutSeconds": 1,
              "app.readiness.failureThreshold": 3, "app.readiness.successThreshold": 1,
              "app.readiness.initialDelaySeconds": 0, "app.liveness.periodSeconds": 10,
              "app.liveness.timeoutSeconds": 1, "app.liveness.failureThreshold": 3,
              "app.liveness.initialDelaySeconds": 0, "app.startup.add": False}  # fmt: skip
    moves = search.neighbours(space, params, ("app.liveness.periodSeconds", -2))
    # The move that improved, twice as far; then from its parameter on, a fifth of a period (2 s),
    # one step of the others; the readiness probe's last, wrapping round.
    assert [(n, d) for n, d, _ in moves[:4]] == [
        ("app.liveness.periodSeconds", -4),
        ("app.liveness.periodSeconds", -2),
        ("app.liveness.periodSeconds", 2),
        ("app.liveness.timeoutSeconds", 1),  # 0 is below the bound: one move only
    ]
    assert moves[0][2]["app.liveness.periodSeconds"] == 6
    toggle = next(p for n, _, p in moves if n == "app.startup.add")
    # A startup probe added starts from the liveness probe's timings.
    assert {k: v for k, v in toggle.items() if k.startswith("app.startup.")} == {
        "app.startup.add": True, "app.startup.periodSeconds": 10, "app.startup.timeoutSeconds": 1,
        "app.startup.failureThreshold": 3,
    }  # fmt: skip
    assert moves[-1][0] == "app.readiness.initialDelaySeconds"
    wide = search.pairs(params)
    assert [n for n, _, _ in wide[:1]] == ["app.readiness.failureThreshold+timeoutSeconds"]
    assert (
        wide[0][2]["app.readiness.failureThreshold"] == 2 and wide[0][2]["app.readiness.timeoutSeconds"] == 2
    )
    assert {n for n, _, _ in wide} == {
        f"app.{k}.failureThreshold+{f}"
        for k in ("readiness", "liveness")
        for f in ("timeoutSeconds", "periodSeconds")
    }


def test_the_hung_pod_is_read_at_each_probe_worst_moment() -> None:
    """Readiness every 7 s (1 failure, timeout 1 s), liveness every 10 s (3 failures): a hang at
    2 min falls 1 s after a readiness check and on a liveness check. At their worst moments — the
    step after a check passed — the pod is out after 7 s (period + timeout, less the step) and
    back after 31 s (3 × 10 s + 1 s), whatever the age at which the hang was scripted."""
    got = load_text(SLOW)
    space = Space(got.workload, got.rule)
    probes = json.loads(json.dumps(space.current().probes))
    probes["app"]["readinessProbe"].update(
        periodSeconds=7, timeoutSeconds=1, failureThreshold=1, initialDelaySeconds=0
    )
    probes["app"]["livenessProbe"].update(
        periodSeconds=10, timeoutSeconds=1, failureThreshold=3, initialDelaySeconds=0
    )
    f = evaluate(plan(got, space, Setting(probes)), Serial())
    hung = next(r for r in f.runs if r.kind == "hung")
    # Readiness checks at 119 s and 126 s: the hang at 127 s; liveness checks at 120 s: at 121 s.
    assert (hung.hang_at_ms, hung.recovery_hang_at_ms) == (127_000, 121_000)
    assert (f.detection_s, f.recovery_s) == (7.0, 31.0)


def test_two_studies_with_different_seeds_agree_on_every_objective(tmp_path: Path) -> None:
    """The issue-26 Deployment tuned at the default trial count with seeds 1 and 2: the failed
    requests, needless restarts and budgets spent of the two recommendations agree within 10 %,
    and each recommendation cures the hang within 90 s, makes a new pod Ready within 10 s of its
    app answering, costs at most a probe a second per pod and passes probesim check --fail-on
    warning. 50–65 s a study on 2 cores (docs/tune.md, "Convergence")."""
    (tmp_path / "web.yaml").write_text(SLOW)
    recs = []
    for seed in (1, 2):
        db = f"sqlite:///{tmp_path / 't.db'}"
        r = runner.invoke(
            app, ["tune", str(tmp_path / "web.yaml"), "--seed", str(seed), "--storage", db, "--json"]
        )
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["trials"] == study.DEFAULT_TRIALS
        rec = doc["recommended"]["figures"]
        assert rec["allReadyAgainSeconds"] <= 90 and rec["readySeconds"] <= 10 and rec["probesPerSecond"] <= 1
        [patch] = [p for p in doc["patches"] if p["kind"] == "Deployment"]
        docs = list(yaml.safe_load_all(SLOW))
        docs[0] = strategic_merge(docs[0], patch["patch"])
        (tmp_path / f"patched-{seed}.yaml").write_text(yaml.safe_dump_all(docs))
        checked = runner.invoke(
            app,
            [
                "check",
                str(tmp_path / f"patched-{seed}.yaml"),
                "--fail-on",
                "warning",
                "--config",
                probe_rules_config(tmp_path),
            ],
        )
        assert checked.exit_code == 0, checked.output
        from probesim.tune.figures import Figures

        recs.append(Figures.from_json(rec).values())
    for a, b in zip(*recs, strict=True):
        assert abs(a - b) <= 0.1 * max(abs(a), abs(b)), recs
