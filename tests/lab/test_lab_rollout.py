"""A Deployment's rollout run for real by the lab (issue 15 §7): the engine's controllers over real
pods, compared with the simulation (ReplicaSet sizes second by second, the rollout's end, the
failed requests); refused up front when it would need more pods than the lab runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from probesim.cli import app
from probesim.engine import simulate
from probesim.errors import InputError
from probesim.lab.compare import agree, compare
from probesim.lab.orchestrator import Lab, run_lab
from probesim.model.scenario import Scenario
from probesim.results import CAUSES, Result
from tests.builders import http, scenario
from tests.lab.procs import children_left, wait_until


def rollout_scenario(replicas: int = 3, actions: list[dict[str, Any]] | None = None, **kw: Any) -> Scenario:
    """``replicas`` pods at 25 %/25 % (surge 1, unavailable 0 for 3), readiness on /healthz every
    second; at 3 s a rollout to a bad release: it starts (listens) 2 s after its container starts
    and then answers 500 on /, which the readiness probe does not see."""
    v2 = {
        "kind": "rollout",
        "workload": "web",
        "at": "3s",
        "template": {"spec": {"containers": [{"name": "app", "image": "example.com/app:2"}]}},
        "behavior": {
            "containers": {
                "app": {
                    "start": "2s",
                    "episodes": [{"kind": "errors", "after": "0s", "for": "1h", "paths": ["/"]}],
                }
            }
        },
    }
    return scenario(
        replicas=replicas,
        probes={"readinessProbe": http(periodSeconds=1)},
        duration="12s",
        traffic=[{"path": "/", "rate": 20, "start": "1s"}],
        spec={"actions": actions if actions is not None else [v2]},
        **kw,
    )


def sizes(r: Result) -> dict[str, list[int]]:
    """Each ReplicaSet's size at whole seconds 0…11, and its name."""
    out = {}
    for key, v in r.series.items():
        if key.startswith("replicaset."):
            idx = np.searchsorted(r.time_ms, np.arange(12) * 1000, side="right") - 1
            out[key.split(".")[1]] = [int(v[i]) if i >= 0 else 0 for i in idx]
    return out


def test_rollout_runs_for_real_and_agrees_with_the_simulation() -> None:
    sc = rollout_scenario()
    sim = simulate(sc)
    old, new = sorted(sizes(sim), key=lambda k: sizes(sim)[k][0], reverse=True)
    # Simulated: one new pod at a time (surge 1, unavailable 0), each Ready 2 s after it starts.
    assert sizes(sim) == {
        old: [3] * 5 + [2, 2, 1, 1, 0, 0, 0],
        new: [0] * 3 + [1, 1, 2, 2, 3, 3, 3, 3, 3],
    }
    assert (sim.rollouts[0].start_ms, sim.rollouts[0].end_ms) == (3000, 9000)
    # Each new pod takes its share of / from its Ready on: 1/3 over 5-7 s, 2/3 over 7-9 s, all after.
    assert sim.route("/").failed == dict.fromkeys(CAUSES, 0) | {"error_status": 100}

    lab = run_lab(sc)

    assert set(sizes(lab)) == {old, new}
    # Pods named as the simulation names them: the new ReplicaSet's, in creation order.
    started = {e.object for e in lab.events if e.reason == "Started"}
    assert started == {"pod/web-0", "pod/web-1", "pod/web-2", f"pod/{new}-0", f"pod/{new}-1", f"pod/{new}-2"}
    scaled = [e.message for e in lab.events_for("deployment/web", "ScalingReplicaSet")]
    assert scaled == [e.message for e in sim.events_for("deployment/web", "ScalingReplicaSet")]
    [ro] = lab.rollouts
    assert ro.revision == new and ro.end_ms is not None and ro.min_ready == 3
    rows = compare(sim, lab)
    reasons = {(r["object"], r["reason"]) for r in rows}
    assert {(f"replicaset/{old}", "replica removed"), (f"replicaset/{new}", "replica added")} <= reasons
    assert ("deployment/web", "rollout complete") in reasons
    assert ("route//", "failed requests") in reasons  # within 10 %
    assert agree(rows), [r for r in rows if not r["agree"]]
    assert wait_until(lambda: children_left() == [], 5)


def test_replica_set_sizes_that_move_too_late_disagree() -> None:
    """The comparison can fail: the lab's sizes moving 3 s after the simulated ones do not agree."""
    sim = simulate(rollout_scenario())
    lab = simulate(rollout_scenario())
    for key in [k for k in lab.series if k.startswith("replicaset.")]:
        v = lab.series[key]
        lab.series[key] = np.concatenate([np.full(3, v[0]), v[:-3]])  # 1 s steps: 3 s late
    old, new = sorted(sizes(sim), key=lambda k: sizes(sim)[k][0], reverse=True)
    rows = {(r["object"], r["reason"]): r for r in compare(sim, lab) if r["object"].startswith("replicaset/")}
    assert rows[(f"replicaset/{old}", "replica added")]["agree"]  # its 3 at the start
    assert rows[(f"replicaset/{old}", "replica removed")]["simulated"] == [5000, 7000, 9000]
    assert rows[(f"replicaset/{old}", "replica removed")]["measured"] == [8000, 10000]  # one past the end
    assert not rows[(f"replicaset/{old}", "replica removed")]["agree"]
    assert rows[(f"replicaset/{new}", "replica added")]["simulated"] == [3000, 5000, 7000]
    assert not rows[(f"replicaset/{new}", "replica added")]["agree"]


def test_more_pods_than_the_lab_runs_is_refused_up_front() -> None:
    # 11 replicas + maxSurge 25 % (3, rounded up) = 14 pods at once, above the lab's 12.
    with pytest.raises(InputError, match=r"up to 14 pods at once .* at most 12 pods"):
        run_lab(rollout_scenario(replicas=11))
    scale = {"kind": "scale", "workload": "web", "at": "1s", "replicas": 10}  # 10 + 3
    with pytest.raises(InputError, match="up to 13 pods"):
        run_lab(rollout_scenario(actions=[scale]))
    assert children_left() == []


def test_command_for_names_a_revision() -> None:
    sc = rollout_scenario()
    with pytest.raises(InputError, match=r"'7' is not a revision .* 1 or web-\w+ \(the manifest's\), 2 or"):
        run_lab(sc, command_for=["7=true"])
    with pytest.raises(InputError, match="REVISION=COMMAND"):
        run_lab(sc, command_for=["2"])
    lab = Lab(sc, sc.workloads[0], None, {"2": ["/bin/true"]})
    assert lab.controllers["web"].commands == {1: ["/bin/true"]}
    assert children_left() == []


def test_the_cli_names_a_bad_command_for(tmp_path: Path) -> None:
    sc = tmp_path / "s.yaml"
    sc.write_text(
        "apiVersion: probesim.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec:\n  duration: 10s\n"
        "  actions:\n    - {kind: restart, workload: web, at: 2s}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec: {containers: [{name: app}]}\n"
    )
    for arg, says in [
        ("3=true", "'3' is not a revision of the scenario's workload"),
        ("2=no-such-program-here", "not found or not executable"),
        ("2='unclosed", "No closing quotation"),
    ]:
        out = CliRunner().invoke(app, ["lab", str(sc), "--command-for", arg])
        assert out.exit_code == 2, out.output
        assert says in " ".join(out.output.split()) and "Traceback" not in out.output
    assert children_left() == []


def test_a_deleted_pod_is_replaced_by_its_replica_set_for_real_as_simulated() -> None:
    """``kubectl delete pod web-1`` at 3 s (issue 45: the lab dropped deletePod actions without a
    word): its container stopped, and its ReplicaSet's replacement web-2 created, started and
    Ready at once, as the simulation has them; nothing fails (the Service has web-0 and web-2)."""
    sc = rollout_scenario(replicas=2, actions=[{"kind": "deletePod", "pod": "web-1", "at": "3s"}])
    sim = simulate(sc)
    assert [(e.time_ms, e.reason, e.object) for e in sim.events if e.time_ms > 0] == [
        (3000, "Killing", "pod/web-1"),
        (3000, "Scheduled", "pod/web-2"),
        (3000, "Created", "pod/web-2"),
        (3000, "Started", "pod/web-2"),
        (3000, "PodNotReady", "pod/web-1"),
        (3000, "PodReady", "pod/web-2"),
    ]
    lab = run_lab(sc)
    [killed] = [e.time_ms for e in lab.events_for("pod/web-1", "Killing")]
    assert 3000 <= killed < 3500  # at the first of the lab's rounds (every 50 ms) from 3 s
    assert len(lab.events_for("pod/web-2", "Started")) == 1
    assert lab.route("/").failed_total == 0
    rows = compare(sim, lab)
    reasons = {(r["object"], r["reason"]) for r in rows}
    assert {("pod/web-1", "Killing"), ("pod/web-1", "PodNotReady"), ("pod/web-2", "PodReady")} <= reasons
    assert agree(rows), [r for r in rows if not r["agree"]]
    assert wait_until(lambda: children_left() == [], 5)


def test_a_deletion_the_lab_cannot_run_is_refused_up_front() -> None:
    delete = {"kind": "deletePod", "pod": "web-1", "at": "1s"}
    sc = scenario(kind="StatefulSet", replicas=2, duration="5s", spec={"actions": [delete]})
    with pytest.raises(InputError, match=r"deletePod of web-1: the lab deletes a Deployment's pods only"):
        run_lab(sc)
    assert children_left() == []
