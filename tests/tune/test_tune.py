"""probesim tune: on a Deployment whose liveness kills its slow start and whose readiness flaps,
the recommended patch removes both in simulation; the search is deterministic and resumes; the
printed patch, applied to the manifest, gives the figures reported; bad inputs exit 2."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from probesim.cli import app
from probesim.engine import simulate
from probesim.engine.warm import WarmUp
from probesim.tune import reasons, study
from probesim.tune.figures import Row, RunFigures
from probesim.tune.inputs import TuneInputs, load
from probesim.tune.objective import PHASE_MS, Serial, _worst_moment, evaluate, measure, measured, plan
from probesim.tune.patch import merge_patch, strategic_merge, workload_patch
from probesim.tune.report import values_paths
from probesim.tune.space import Setting, Space
from tests.builders import probe_rules_config

runner = CliRunner()

# Starts in 8 s; liveness gives it 2 + 2 × 2 s. Readiness fails on the first 503 of /ready,
# which blips for a second every 10 s while the app serves / fine. Short enough for the lab.
WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: example.com/web:1
          ports: [{name: http, containerPort: 8080}]
          livenessProbe: {httpGet: {path: /healthz, port: http}, initialDelaySeconds: 2, periodSeconds: 2,
                          failureThreshold: 2}
          readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 1, timeoutSeconds: 1,
                           failureThreshold: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
"""
BLIPS = "\n".join(
    f"            - {{kind: errors, at: {t}s, for: 1s, status: 503, paths: [/ready]}}"
    for t in range(15, 300, 10)
)
SCENARIO = f"""\
apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {{name: web-slow-start-blipping-readiness}}
spec:
  duration: 5m
  behavior:
    web:
      containers:
        app:
          start: 8s
          episodes:
{BLIPS}
  traffic:
    - {{service: web, path: /, rate: 20, start: 10s}}
"""


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("case")
    (d / "web.yaml").write_text(WEB)
    (d / "s.yaml").write_text(SCENARIO)
    return d


@pytest.fixture(scope="module")
def inputs(case: Path) -> TuneInputs:
    return load([str(case / "web.yaml")], str(case / "s.yaml"), None)


@pytest.fixture(scope="module")
def outcome(case: Path, inputs: TuneInputs) -> study.Outcome:
    url = f"sqlite:///{case / 'tune.db'}"
    return study.run(inputs, 24, 0, url, "single", Serial())


def test_current_setting_restarts_the_slow_start_forever(outcome: study.Outcome) -> None:
    f = outcome.current.figures
    # Every request of every run fails; the third objective is the budgets spent (a hung pod out
    # and back, a new pod's time to Ready, probes a second: each over its budget, summed).
    assert f.values() == (58000.0, 84.0, 37.166667)
    assert {r.label: r.restarts for r in f.runs}["scenario"] == 12


def test_readiness_flaps_once_liveness_lets_it_start(inputs: TuneInputs) -> None:
    space = Space(inputs.workload, inputs.rule)
    probes = json.loads(json.dumps(space.current().probes))
    probes["app"]["livenessProbe"]["initialDelaySeconds"] = 60
    f = evaluate(plan(inputs, space, Setting(probes)), Serial())
    scenario = next(r for r in f.runs if r.label == "scenario")
    # 29 blips × 2 pods, each taking the pod out: with both out, 20 requests/s find no endpoint.
    assert (scenario.flaps, scenario.failed, scenario.restarts) == (58, 580, 0)


def test_recommendation_removes_both_problems(outcome: study.Outcome) -> None:
    rec = outcome.recommended
    # Every trial's patch passes probesim check (each is repaired onto what its probe rules and
    # the probe policy accept: readiness 2 failures or more, liveness 3 or more, every 5 s or
    # slower, more tolerant than readiness). The search settles on readiness every 2 s with 2
    # failures and liveness every 5 s with 4 (trial 21); then the values that make no difference
    # are put back as the user has them: liveness's initialDelaySeconds stays 2.
    assert rec is not None and rec.number == 21
    assert rec.setting.probes["app"]["livenessProbe"]["initialDelaySeconds"] == 2
    f = rec.figures
    assert f.values() == (3060.0, 0.0, 1.355556)
    # Liveness every 5 s, 4 failures, lets the 8 s start live (and the 16 s of start-x2); readiness
    # every 2 s, 2 failures, no longer flaps on the 1 s blips. The hung pod is out after 4 s (at the
    # worst moment: the step after a check passed, 2 × 2 s + 1 s less the step) and all replicas
    # back after 29 s (liveness acts in 4 × 5 s + 1 s, the restart starts in 8 s); a new pod is
    # Ready within 2 s of its app answering (at worst it answers just after a check: a period);
    # 0.7 probes a second.
    assert (f.detection_s, f.recovery_s, f.ready_s, f.probe_rps) == (4.0, 29.0, 2.0, 0.7)
    assert f.flaps == 0
    runs = {r.label: (r.failed, r.restarts, r.flaps) for r in f.runs}
    # The scenario's traffic starts at 10 s, after readiness (no initial delay) first passed.
    assert runs["scenario"] == (0, 0, 0)
    # What no probe can prevent: one pod of two answering 500 (half the requests), a start twice
    # as slow as the scenario's while traffic already runs, a 2 s pause.
    assert runs["stress one-pod-500"] == (2900, 0, 0)
    assert runs["stress start-x2"] == (120, 0, 0)
    assert runs["stress stop-the-world-2s"] == (40, 0, 0)
    assert [r.number for r in outcome.front] == [21, 22]
    # Each changed value with what decided it: here the probe policy, each value put back alone.
    assert outcome.reasons == [
        "app readinessProbe.periodSeconds 1 → 2: needed — with 1, a probe's timeout would reach its period",
        "app readinessProbe.failureThreshold 1 → 2: needed — with 1, one slow answer would take the pod out "
        "of the Service",
        "app livenessProbe.periodSeconds 2 → 5: needed — with 2, liveness would be probed more often than "
        "every 5 s (noise, not safety)",
        "app livenessProbe.failureThreshold 2 → 4: needed — with 2, a missed check or a pause would restart "
        "the container",
    ]
    assert not any("search's pick" in line for line in outcome.reasons)


def test_patch_applied_to_the_manifest_gives_the_reported_figures(
    case: Path, inputs: TuneInputs, outcome: study.Outcome, tmp_path: Path
) -> None:
    rec = outcome.recommended
    assert rec is not None
    patch = workload_patch(inputs.workload, outcome.current.setting, rec.setting)
    assert patch is not None
    docs = list(yaml.safe_load_all(WEB))
    docs[0] = strategic_merge(docs[0], patch)
    patched = tmp_path / "web.yaml"
    patched.write_text(yaml.safe_dump_all(docs))
    again = load([str(patched)], str(case / "s.yaml"), None)
    space = Space(again.workload, again.rule)
    assert space.current() == rec.setting
    assert evaluate(plan(again, space, space.current()), Serial()) == rec.figures


def test_same_seed_same_trials_and_a_resumed_study_equals_one_run(
    case: Path, inputs: TuneInputs, outcome: study.Outcome
) -> None:
    import optuna

    url = f"sqlite:///{case / 'tune.db'}"
    first = study.run(inputs, 3, 0, url, "resumed", Serial())
    assert (first.trials, first.added) == (3, 3)
    second = study.run(inputs, 3, 0, url, "resumed", Serial())
    assert (second.trials, second.added) == (6, 3)

    def trials(name: str) -> list[tuple[dict[str, Any], list[float] | None]]:
        s = optuna.load_study(study_name=name, storage=url)
        return [(t.params, t.values) for t in s.trials]

    # Two runs of 3 hold the trials one run of 24 began with, in the same order.
    assert trials("resumed") == trials("single")[:6]
    assert study.study_name(inputs, 0) == study.study_name(load(*_args(case)), 0)
    assert study.study_name(inputs, 0) != study.study_name(inputs, 1)


def test_a_traffic_series_scenario_is_tuned_on_the_same_figures_as_its_rate(
    case: Path, tmp_path: Path
) -> None:
    """Tuned from a scenario whose traffic is a series file (as probesim fit writes it), every
    run sends its rows: the figures are those of the same traffic as a rate, and the study is
    another when the file's rows change."""
    (tmp_path / "web.yaml").write_text(WEB)
    (tmp_path / "t.csv").write_text("0,0\n10,20\n")
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("rate: 20, start: 10s", "series: t.csv"))
    by_series = load([str(tmp_path / "web.yaml")], str(tmp_path / "s.yaml"), None)
    by_rate = load(*_args(case))
    space = Space(by_rate.workload, by_rate.rule)
    current = space.current()
    assert evaluate(plan(by_series, space, current), Serial()) == evaluate(
        plan(by_rate, space, current), Serial()
    )
    name = study.study_name(by_series, 0)
    (tmp_path / "t.csv").write_text("0,0\n10,21\n")
    assert study.study_name(load([str(tmp_path / "web.yaml")], str(tmp_path / "s.yaml"), None), 0) != name


def _args(case: Path) -> tuple[list[str], str, None]:
    return [str(case / "web.yaml")], str(case / "s.yaml"), None


def test_a_settings_runs_measured_together_give_what_each_gives_simulated_from_its_start(
    inputs: TuneInputs,
) -> None:
    # The stress baseline and stop-the-world go on from one warm-up, the hung pod's three runs
    # from another, start-x2 (the scenario's start of 8 s, doubled) runs once per distinct
    # scenario: the figures are those of each run simulated from its start, run by run.
    # Readiness every 7 s and liveness every 11 s: their worst moments are 127 s and 122 s, two
    # runs gone on from the hung pod's warm-up besides the one just past the scripted hang.
    space = Space(inputs.workload, inputs.rule)
    probes = json.loads(json.dumps(space.current().probes))
    probes["app"]["readinessProbe"]["periodSeconds"] = 7
    probes["app"]["livenessProbe"]["periodSeconds"] = 11
    runs = plan(inputs, space, Setting(probes))
    assert [r.label for r in runs if r.warm_until] == ["stress baseline", "stress stop-the-world-2s"]
    assert measured(runs, Serial()) == [measure(r, from_start=True) for r in runs]
    hung = next(r for r in runs if r.kind == "hung")
    first_scenario = hung.scenario.cut_to(hung.hang_at_ms + PHASE_MS)
    first = simulate(first_scenario)
    moved = [_worst_moment(hung, first, kind) for kind in ("readiness", "liveness")]
    assert (hung.hang_at_ms, [m.hang_at_ms for m in moved]) == (120_000, [127_000, 122_000])
    # Each goes on from its warm-up (not simulated from its start after all).
    warm = WarmUp(hung.scenario, hung.hang_at_ms)
    assert [warm.fits(sc) for sc in (first_scenario, *(m.scenario for m in moved))] == [None] * 3
    baseline, pause = (r.scenario for r in runs if r.warm_until)
    assert WarmUp(baseline, runs[0].warm_until).fits(pause) is None
    twice = [*runs, replace(runs[0], label="again")]
    got = measured(twice, Serial())
    assert got[-1] == replace(got[0], label="again")


def test_a_trial_left_waiting_in_the_storage_is_finished_there_at_its_number(
    case: Path, inputs: TuneInputs
) -> None:
    import optuna

    url = f"sqlite:///{case / 'tune.db'}"
    study.run(inputs, 2, 0, url, "waiting", Serial())
    saved = optuna.load_study(study_name="waiting", storage=url)
    params = saved.trials[1].params
    saved.enqueue_trial(params, user_attrs={"move": ["enqueued", 1]})  # as an interrupted run leaves it
    again = study.run(inputs, 1, 0, url, "waiting", Serial())
    assert (again.trials, again.added) == (3, 1)
    stored = optuna.load_study(study_name="waiting", storage=url).trials
    assert [t.state for t in stored] == [optuna.trial.TrialState.COMPLETE] * 3
    assert stored[2].params == params and stored[2].user_attrs["move"] == ["enqueued", 1]
    assert stored[2].values == stored[1].values  # the same setting: its figures copied


class _Watched:
    """Runs each item when its result is read (as a pool's results come); notes how many
    trials the storage holds when a setting's runs are handed out and when its first result
    is read; raises KeyboardInterrupt instead on the ``interrupt_at``-th setting."""

    def __init__(self, url: str, name: str, interrupt_at: int = 0) -> None:
        self.url, self.name, self.interrupt_at = url, name, interrupt_at
        self.stored_when_handed: list[int] = []
        self.stored_when_read: list[int] = []

    def stored(self) -> int:
        import optuna

        return len(optuna.load_study(study_name=self.name, storage=self.url).trials)

    def map(self, fn: Any, items: Any) -> Any:
        from probesim.tune.objective import measure_all

        first_round = fn is measure_all
        if first_round:
            if len(self.stored_when_handed) + 1 == self.interrupt_at:
                raise KeyboardInterrupt
            self.stored_when_handed.append(self.stored())
        work = list(items)

        def results() -> Any:
            if first_round:
                self.stored_when_read.append(self.stored())
            for x in work:
                yield fn(x)

        return results()


def test_a_finished_trial_is_written_while_the_next_simulates_and_none_is_lost_when_stopped(
    case: Path, inputs: TuneInputs, tmp_path: Path
) -> None:
    import optuna

    url = f"sqlite:///{tmp_path / 'tune.db'}"
    ex = _Watched(url, "overlap")
    study.run(inputs, 3, 0, url, "overlap", ex)
    # Trial n's runs are handed out before the trial before it is written, and read after: the
    # writing happened while they ran. Every trial is written before the front is justified
    # (its runs after the loop).
    assert ex.stored_when_handed[:3] == [0, 0, 1]
    assert ex.stored_when_read[:3] == [0, 1, 2]
    assert set(ex.stored_when_handed[3:]) | set(ex.stored_when_read[3:]) <= {3}
    assert len(optuna.load_study(study_name="overlap", storage=url).trials) == 3
    stopped = _Watched(url, "stopped", interrupt_at=3)
    with pytest.raises(KeyboardInterrupt):
        study.run(inputs, 5, 0, url, "stopped", stopped)
    stored = optuna.load_study(study_name="stopped", storage=url).trials
    done, failed = optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL
    assert [t.state for t in stored] == [done, done, failed]
    assert stored[1].values == optuna.load_study(study_name="overlap", storage=url).trials[1].values


def test_strategic_merge_merges_containers_by_name_and_merge_patch_replaces() -> None:
    doc = {"spec": {"containers": [{"name": "a", "image": "x", "livenessProbe": {"periodSeconds": 5}},
                                   {"name": "b", "image": "y"}]}}  # fmt: skip
    patch = {"spec": {"containers": [{"name": "b", "startupProbe": {"tcpSocket": {"port": 1}}},
                                     {"name": "a", "livenessProbe": {"failureThreshold": 9}}]}}  # fmt: skip
    assert strategic_merge(doc, patch) == {"spec": {"containers": [
        {"name": "a", "image": "x", "livenessProbe": {"periodSeconds": 5, "failureThreshold": 9}},
        {"name": "b", "image": "y", "startupProbe": {"tcpSocket": {"port": 1}}},
    ]}}  # fmt: skip
    assert merge_patch({"a": [1, 2], "b": {"c": 1, "d": 2}}, {"a": [3], "b": {"c": None}}) == {
        "a": [3],
        "b": {"d": 2},
    }


def _cli(args: list[str]) -> Any:
    return runner.invoke(app, ["tune", *args])


def test_cli_prints_front_patch_and_kubectl_command(case: Path, tmp_path: Path) -> None:
    out = tmp_path / "patch.yaml"
    storage = f"sqlite:///{tmp_path / 't.db'}"
    # 12 trials: the seeds and the random ones, then the first moves.
    args = [
        str(case / "web.yaml"),
        "--scenario",
        str(case / "s.yaml"),
        "--trials",
        "12",
        "--storage",
        storage,
    ]
    r = _cli([*args, "--workers", "1", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "Pareto front" in r.output and "Current and recommended" in r.output
    # The command wrapped as a person copies it: one argument group a line.
    assert "kubectl patch deployment web -n shop --type strategic \\\n  -p '" in r.output
    assert f"written to {out}" in r.output
    patch = yaml.safe_load(out.read_text())
    assert patch["spec"]["template"]["spec"]["containers"][0]["name"] == "app"
    again = _cli([*args, "--workers", "1", "--json"])
    doc = json.loads(again.stdout)
    assert (doc["trials"], doc["added"]) == (24, 12)
    assert doc["patches"][0]["command"].startswith("kubectl patch deployment web -n shop --type strategic")


@pytest.mark.parametrize(
    ("files", "extra", "message"),
    [
        ({"svc.yaml": WEB.split("---\n")[1]}, [], "no workload to tune"),
        (  # a DaemonSet alone: said why it is not tuned, not "found: none"
            {"ds.yaml": WEB.split("---\n")[0].replace("kind: Deployment", "kind: DaemonSet")},
            [],
            "(found: DaemonSet web); DaemonSet workloads are not simulated, so not tuned (probesim check judges them)",
        ),
        ({"web.yaml": WEB}, ["--workload", "api"], "no workload named 'api' (workloads: web)"),
        (
            {"web.yaml": WEB, "api.yaml": WEB.replace("web", "api")},
            [],
            "several workloads could be tuned (api, web): choose one with --workload",
        ),
        ({"web.yaml": WEB}, ["--timeout", "soon"], "--timeout"),
        ({"web.yaml": WEB}, ["--storage", "nonsense"], "--storage nonsense: cannot open the study's storage"),
        (
            {"web.yaml": WEB},
            ["--storage", "sqlite:////no/such/folder/t.db"],
            "cannot open the study's storage: (sqlite3.OperationalError) unable to open database file",
        ),
        ({"web.yaml": WEB}, ["-o", "a" * 300 + ".yaml"], "cannot write the patch: File name too long"),
        (
            {"web.yaml": WEB, "long.scenario": SCENARIO.replace("duration: 5m", "duration: 100h")},
            ["--scenario", "LONG"],
            "every trial simulates this scenario, which would cost",
        ),
    ],
)
def test_bad_inputs_exit_2_saying_what_to_give(
    tmp_path: Path, files: dict[str, str], extra: list[str], message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    extra = [str(tmp_path / "long.scenario") if x == "LONG" else x for x in extra]
    r = _cli([str(tmp_path), "--storage", f"sqlite:///{tmp_path / 't.db'}", *extra])
    assert r.exit_code == 2
    assert message in " ".join(r.output.split())
    assert "Traceback" not in r.output


def test_helm_rendered_input_names_the_values_the_template_reads(tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: chart\nversion: 0.1.0\n")
    (chart / "templates" / "deployment.yaml").write_text(
        "          livenessProbe:\n            {{- toYaml .Values.probes.liveness | nindent 12 }}\n"
        "          readinessProbe:\n            {{- toYaml .Values.readiness | nindent 12 }}\n"
    )
    (tmp_path / "rendered.yaml").write_text(
        "---\n# Source: chart/templates/deployment.yaml\n"
        + WEB.replace("---\n", "---\n# Source: chart/templates/service.yaml\n")
    )
    got = load([str(tmp_path)], None, None)
    assert got.source == "chart/templates/deployment.yaml"
    where = str(chart / "templates" / "deployment.yaml")
    assert values_paths(got) == [
        ("readinessProbe", "readiness", f"{where}:4"),
        ("livenessProbe", "probes.liveness", f"{where}:2"),
    ]
    # Without the chart on disk, nothing is guessed.
    alone = load([str(tmp_path / "rendered.yaml")], None, None)
    assert alone.source == "chart/templates/deployment.yaml" and values_paths(alone) == []


def test_in_the_lab_the_patched_workload_neither_restarts_nor_flaps(
    inputs: TuneInputs, outcome: study.Outcome, tmp_path: Path
) -> None:
    from probesim.engine import simulate
    from probesim.lab.compare import agree, compare
    from probesim.lab.orchestrator import run_lab
    from probesim.manifests.scenario import load_scenario
    from tests.lab.procs import children_left

    rec = outcome.recommended
    assert rec is not None
    patch = workload_patch(inputs.workload, outcome.current.setting, rec.setting)
    docs = list(yaml.safe_load_all(WEB))
    docs[0] = strategic_merge(docs[0], patch)
    (tmp_path / "web.yaml").write_text(yaml.safe_dump_all(docs))
    named = SCENARIO.replace("metadata:", "manifests: [web.yaml]\nmetadata:", 1)
    (tmp_path / "s.yaml").write_text(named)
    sc = load_scenario(str(tmp_path / "s.yaml"))
    # Only the lab's own processes: earlier tests may have left long-lived helpers (the
    # resource tracker of a process pool) that are not this test's.
    before = set(children_left())
    # 20 s: the 8 s start, traffic from 10 s, the blip at 15 s.
    lab = run_lab(sc, 20.0)
    rows = compare(simulate(sc.cut_to(lab.duration_ms)), lab)
    assert agree(rows), [r for r in rows if not r["agree"]]
    assert lab.workload("web").total_restarts == 0
    assert lab.events_for(reason="PodNotReady") == []
    assert len(lab.events_for(reason="PodReady")) == 2  # each pod once, for good
    assert set(children_left()) <= before


def test_the_front_holds_the_current_setting_and_keeps_it_when_no_trial_beats_it() -> None:
    from probesim.tune.figures import Figures

    def row(n: int | None, failed: int, restarts: int, removal: float) -> Row:
        return Row(n, Setting(), Figures(failed, restarts, removal, True, 0, ()))

    # (108 failed against 86 would be as few: within 2·√172 = 26, what chance makes of them.)
    current, slower, faster = row(None, 86, 0, 11.0), row(4, 86, 0, 27.0), row(9, 120, 0, 5.0)
    front = study.pareto([current, slower, faster])
    assert front == [current, faster]  # trial 4 only loses to it
    assert study.recommend(front)[0] is None
    # Within the slack of the fewest, no restart beats one restart.
    better = row(7, 90, 0, 30.0)
    restarting = row(None, 86, 1, 11.0)
    assert study.recommend(study.pareto([restarting, better]))[0] == better


def test_outlier_detection_is_searched_and_patched_as_a_json_merge(tmp_path: Path) -> None:
    import optuna

    from probesim.tune.patch import kubectl_command, patched_rule, rule_patch

    rule = """\
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: shop}
spec:
  host: web.shop.svc.cluster.local
  trafficPolicy:
    outlierDetection: {consecutive5xxErrors: 2, interval: 2s, baseEjectionTime: 60s}
"""
    (tmp_path / "web.yaml").write_text(WEB + rule)
    got = load([str(tmp_path / "web.yaml")], None, None)
    assert got.rule is not None
    space = Space(got.workload, got.rule)
    params = {
        "app.readiness.periodSeconds": 2, "app.readiness.timeoutSeconds": 1, "app.readiness.failureThreshold": 2,
        "app.readiness.successThreshold": 1, "app.readiness.initialDelaySeconds": 0,
        "app.liveness.periodSeconds": 5, "app.liveness.timeoutSeconds": 5, "app.liveness.failureThreshold": 3,
        "app.liveness.initialDelaySeconds": 0, "app.startup.add": True, "app.startup.periodSeconds": 2,
        "app.startup.timeoutSeconds": 1, "app.startup.failureThreshold": 30,
        "outlier.consecutive5xxErrors": 5, "outlier.interval": 10, "outlier.baseEjectionTime": 30,
        "outlier.maxEjectionPercent": 50,
    }  # fmt: skip
    setting = space.sample(optuna.trial.FixedTrial(params))
    current = space.current()
    # Liveness every 5 s (the policy's least), its timeout 5 capped below the period (4); the
    # startup probe copies its handler. Readiness's period is 2 s at least (its timeout must stay below it: PS011); the
    # policy's thresholds: readiness 2 or more, liveness 3 or more.
    assert workload_patch(got.workload, current, setting) == {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "readinessProbe": {"periodSeconds": 2, "failureThreshold": 2},
         "livenessProbe": {"initialDelaySeconds": 0, "periodSeconds": 5, "timeoutSeconds": 4,
                           "failureThreshold": 3},
         "startupProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                         "initialDelaySeconds": 0, "periodSeconds": 2, "timeoutSeconds": 1,
                                         "successThreshold": 1, "failureThreshold": 30}},
    ]}}}}  # fmt: skip
    patch = rule_patch(current, setting)
    assert patch == {"spec": {"trafficPolicy": {"outlierDetection": {
        "consecutive5xxErrors": 5, "interval": "10s", "baseEjectionTime": "30s", "maxEjectionPercent": 50,
    }}}}  # fmt: skip
    od = patched_rule(got.rule, current, setting).spec.traffic_policy.outlier_detection  # type: ignore[union-attr]
    assert (od.consecutive_5xx_errors, od.interval, od.max_ejection_percent) == (5, "10s", 50)
    assert kubectl_command("DestinationRule", "web", "shop", patch, strategic=False) == (
        "kubectl patch destinationrule web -n shop --type merge -p "
        """'{"spec":{"trafficPolicy":{"outlierDetection":{"consecutive5xxErrors":5,"interval":"10s","""
        """"baseEjectionTime":"30s","maxEjectionPercent":50}}}}'"""
    )
    # The hung pod is out once every client sidecar ejected it, or sooner by its probes.
    runs = plan(got, space, setting)
    assert [r.label for r in runs][-1] == "hung pod" and runs[-1].clients == 1 and runs[-1].hosts


# The 3-replica Deployment (its app answers at once, 500m CPU) with the setting an earlier
# tuner recommended: readiness that waits 35 s, liveness that waits 290 s, two probes a second.
SLOW = """\
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
          image: example.com/web:1.0
          ports: [{name: http, containerPort: 8080}]
          resources: {requests: {cpu: 500m, memory: 256Mi}, limits: {memory: 256Mi}}
          readinessProbe: {httpGet: {path: /ready, port: http}, periodSeconds: 1, initialDelaySeconds: 35}
          livenessProbe: {httpGet: {path: /live, port: http}, periodSeconds: 1, initialDelaySeconds: 290,
                          failureThreshold: 7}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
"""


def test_the_recommendation_cures_a_hang_quickly_keeps_rollouts_fast_and_probes_cheap(tmp_path: Path) -> None:
    """Pod 0 deadlocks for good at 2 min (a restart cures it): the recommended setting restarts
    it and has all 3 replicas Ready again within 90 s, a new pod Ready within 10 s of its app
    answering, at most a probe a second per pod, and its patched manifest passes probesim check
    --fail-on warning; each changed value says what decided it. 40 trials: about 40 s."""
    (tmp_path / "web.yaml").write_text(SLOW)
    db = f"sqlite:///{tmp_path / 't.db'}"
    r = runner.invoke(app, ["tune", str(tmp_path / "web.yaml"), "--trials", "40", "--storage", db, "--json",
                            "--workers", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    now, rec = doc["current"]["figures"], doc["recommended"]["figures"]
    assert now["allReadyAgainSeconds"] > 90 and now["readySeconds"] >= 35 and now["probesPerSecond"] == 2
    hung = next(x for x in rec["runs"] if x["kind"] == "hung")
    assert hung["restarts"] >= 1  # liveness acted: only a restart cures the deadlock
    assert rec["allReadyAgainSeconds"] <= 90
    assert rec["readySeconds"] <= 10
    assert rec["probesPerSecond"] <= 1
    assert (rec["failed"], rec["restarts"]) == (now["failed"], 0)
    # Worse than now on the hung pod's time in service (readiness no longer polls every second)
    # and said so, with both figures.
    worse = rec["detectionSeconds"] > now["detectionSeconds"]
    assert doc["worseThanCurrent"] == (
        [
            f"the hung pod out of service: {rec['detectionSeconds']:g} s against {now['detectionSeconds']:g} s now"
        ]
        if worse
        else []
    )
    assert len(doc["reasons"]) >= 2 and all(": " in line for line in doc["reasons"])
    [patch] = [p for p in doc["patches"] if p["kind"] == "Deployment"]
    docs = list(yaml.safe_load_all(SLOW))
    docs[0] = strategic_merge(docs[0], patch["patch"])
    (tmp_path / "patched.yaml").write_text(yaml.safe_dump_all(docs))
    checked = runner.invoke(
        app,
        [
            "check",
            str(tmp_path / "patched.yaml"),
            "--fail-on",
            "warning",
            "--config",
            probe_rules_config(tmp_path),
        ],
    )
    assert checked.exit_code == 0, checked.output


def test_a_value_is_justified_by_the_figure_that_decided_it_not_by_failures_within_the_slack(
    inputs: TuneInputs,
) -> None:
    """Put back, a value costs 100 more failed requests of 30,000 (within the slack the
    recommendation counts as equal: 2·√60,000 = 489) and three times the probes: the reason said
    is the probes; 600 more is the failed requests."""
    from probesim.tune.figures import Figures

    space = Space(inputs.workload, inputs.rule)
    now = space.repair(space.current())  # as the policy has it: readiness every 2 s, 2 failures, ...
    probes = json.loads(json.dumps(now.probes))
    probes["app"]["readinessProbe"]["periodSeconds"] = 4  # 2 × 4 s: liveness's 3 × 5 s still outlasts it
    rec_setting = Setting(probes, now.outlier)

    def figures(failed: int, rps: float) -> Figures:
        run = RunFigures("stress traffic-x3", "stress", 40_000, failed, 0, 0, 0)
        return Figures(failed, 0, 8.0, True, 0, (run,), 39.0, 0.0, rps)

    rec = Row(1, rec_setting, figures(30_000, 0.35))
    current = Row(None, now, figures(30_100, 1.1))
    for back, says in (
        (figures(30_100, 1.1), "probe requests per second per pod 0.35/s, 1.1/s with 2"),
        (figures(30_600, 1.1), "failed requests 30000, 30600 with 2 (stress traffic-x3: +600)"),
    ):
        (line,) = reasons.justify(inputs, space, rec, current, Serial(), figures_of=lambda s, b=back: b)
        assert line == f"app readinessProbe.periodSeconds 2 → 4: {says}", line
    # A value that cannot be put back alone says the principle of the probe policy it keeps.
    probes["app"]["readinessProbe"]["failureThreshold"] = 4  # 4 × 4 s: liveness must outlast it
    probes["app"]["livenessProbe"]["failureThreshold"] = 4
    rec = Row(1, Setting(probes, now.outlier), figures(30_000, 0.35))
    lines = reasons.justify(inputs, space, rec, current, Serial(), figures_of=lambda s: figures(30_000, 0.35))
    assert (
        "app livenessProbe.failureThreshold 3 → 4: needed — with 3, liveness would give up no later than readiness"
        in lines
    )


def test_a_study_loads_the_kernels_before_its_workers_take_runs(
    monkeypatch: pytest.MonkeyPatch, case: Path, inputs: TuneInputs
) -> None:
    """Loaded before local workers fork, the kernels are theirs from their first run: no run of a
    study long enough to pay for them takes the numpy forms first (they give the same figures)."""
    pytest.importorskip("numba")
    from probesim.engine import kernel_choice

    monkeypatch.setattr(kernel_choice, "_kernels", None)
    monkeypatch.setattr(kernel_choice, "_steps_run", 0)
    monkeypatch.setattr(kernel_choice, "_numpy_only", False)
    monkeypatch.setenv("PROBESIM_KERNELS", "auto")
    space = Space(inputs.workload, inputs.rule)
    per_setting = sum(
        r.scenario.spec.duration // r.scenario.spec.step for r in plan(inputs, space, space.current())
    )
    assert per_setting * 2 >= kernel_choice.KERNEL_STEPS  # (two trials are long enough)
    from probesim.engine import kernels as nb

    if not nb.cached():
        pytest.skip("numba's cache does not hold the kernels (make setup warms it)")
    study.run(inputs, 2, 0, f"sqlite:///{case / 'preload.db'}", "preload", Serial())
    assert kernel_choice._kernels is not None and kernel_choice._steps_run == 0
