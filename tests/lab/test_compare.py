"""The simulation-vs-lab comparison, figure by figure, on hand-made results (no processes)."""

from __future__ import annotations

import numpy as np

from probesim.lab.compare import agree, compare, outlier_interval_ms, per_second
from probesim.model.scenario import Rollout
from probesim.results import CAUSES, Event, Result, RouteSummary, WorkloadSummary
from tests.builders import builtin, scenario


def result(
    source: str,
    events: list[tuple[int, str, str]],
    ready: list[tuple[int, int]],
    failed: dict[str, int] | None = None,
    restarts: int = 0,
    ejections: int = 0,
) -> Result:
    fails = dict.fromkeys(CAUSES, 0) | (failed or {})
    first = min((t for t, r, _ in events if r == "PodReady"), default=None)
    return Result(
        scenario="s",
        seed=0,
        step_ms=1000,
        duration_ms=10_000,
        time_ms=np.array([t for t, _ in ready], np.int64),
        series={"workload.web.ready": np.array([n for _, n in ready], np.int64)},
        events=[Event(t, "Normal", r, o, "") for t, r, o in events],
        workloads=[WorkloadSummary("web", "Deployment", 2, {"web-0": restarts}, first, None, 0, 0.0, 0)],
        routes=[
            RouteSummary(
                "/", "web", 20, 20 - sum(fails.values()), fails, envoy={"ejections_enforced_total": ejections}
            )
        ],
        source=source,
    )


SIM = result(
    "simulation",
    [
        (0, "Started", "pod/web-0"),
        (3000, "PodReady", "pod/web-0"),
        (5000, "OutlierEject", "sidecar/client-0"),
    ],
    [(t * 1000, 0 if t < 3 else 1) for t in range(10)],
    {"not_answering": 3, "no_endpoint": 2},
    ejections=1,
)


def rows_by(rows: list[dict[str, object]]) -> dict[tuple[object, object], dict[str, object]]:
    return {(r["object"], r["reason"]): r for r in rows}


def test_the_same_run_measured_a_little_later_agrees_figure_by_figure() -> None:
    lab = result(
        "lab",
        [
            (4, "Started", "pod/web-0"),
            (3012, "PodReady", "pod/web-0"),
            (9500, "OutlierEject", "sidecar/client-0"),
        ],
        [(t * 50, 0 if t * 50 < 3012 else 1) for t in range(200)],
        {"timeout": 3, "restarting": 2},  # what a client sees of not_answering / no_endpoint
        ejections=1,
    )
    rows = compare(SIM, lab, outlier_tolerance_ms=5000)
    by = rows_by(rows)
    assert by[("pod/web-0", "PodReady")]["measured"] == [3012]
    assert by[("sidecar/client-0", "OutlierEject")]["tolerance"] == 5000  # one interval
    assert by[("workload/web", "ready replicas")]["simulated"] == [0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    assert by[("workload/web", "ready replicas")]["measured"] == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    assert by[("route//", "failed: timed out")]["measured"] == [3]
    assert by[("route//", "failed: refused")]["simulated"] == [2]
    assert by[("route//", "ejections")]["agree"] is True
    assert ("workload/web", "restarts") not in by  # none on either side
    assert agree(rows)


def test_each_kind_of_difference_is_caught() -> None:
    lab = result(
        "lab",
        [
            (0, "Started", "pod/web-0"),
            (4100, "PodReady", "pod/web-0"),
            (11_000, "OutlierEject", "sidecar/client-0"),
        ],
        [(t * 1000, 0 if t < 5 else 1) for t in range(10)],
        {"error_status": 9},
        restarts=2,
    )
    by = rows_by(compare(SIM, lab, outlier_tolerance_ms=5000))
    assert by[("pod/web-0", "PodReady")]["agree"] is False  # 1.1 s late
    assert by[("pod/web-0", "Started")]["agree"] is True
    assert by[("sidecar/client-0", "OutlierEject")]["agree"] is False  # 6 s late
    assert by[("workload/web", "ready replicas")]["agree"] is False  # 0 at 4 s: 2 s from any 0
    assert by[("workload/web", "restarts")]["agree"] is False  # 0 vs 2
    assert by[("route//", "failed requests")]["agree"] is False  # 5 vs 9
    assert by[("route//", "failed: error status")]["agree"] is False
    assert by[("route//", "ejections")]["agree"] is False  # 1 vs 0
    missing = result("lab", [(0, "Started", "pod/web-0")], [(0, 0)])
    assert rows_by(compare(SIM, missing))[("pod/web-0", "PodReady")]["agree"] is False


def test_per_second_takes_the_last_sample_at_or_before_each_second() -> None:
    r = result("lab", [], [(30, 1), (990, 2), (1000, 3), (2600, 4)])
    assert per_second(r, "workload.web.ready", 4) == [0, 3, 3, 4]


def test_the_ejection_tolerance_is_the_longest_outlier_interval() -> None:
    assert outlier_interval_ms(builtin("seed003-outlier")) == 2000
    assert outlier_interval_ms(scenario()) == 10_000  # Envoy's default


def test_an_event_without_a_partner_is_allowed_only_in_the_runs_last_second() -> None:
    late = result("lab", [(0, "Started", "pod/web-0"), (9_400, "Started", "pod/web-0")], [(0, 0)])
    early = result("lab", [(0, "Started", "pod/web-0"), (8_500, "Started", "pod/web-0")], [(0, 0)])
    assert rows_by(compare(SIM, late))[("pod/web-0", "Started")]["agree"] is True  # 10 s run
    assert rows_by(compare(SIM, early))[("pod/web-0", "Started")]["agree"] is False


def _eject(t: int, url: str, enforced: bool = True, action: str = "EJECT") -> Event:
    msg = (
        f'{{"type":"CONSECUTIVE_GATEWAY_FAILURE","cluster_name":"c","upstream_url":"{url}",'
        f'"action":"{action}","num_ejections":1,"enforced":{"true" if enforced else "false"}}}'
    )
    return Event(t, "Warning", f"Outlier{action.title()}", "sidecar/client-0", msg, "envoy")


def test_detections_envoy_logs_as_not_enforced_are_not_ejections() -> None:
    # Istio's defaults detect gateway errors (and success rate) without enforcing: Envoy logs
    # each as an EJECT line with "enforced": false. Only enforced ones are ejections; the others
    # are counted apart.
    sim = result("simulation", [], [(0, 0)])
    sim.events[:] = [_eject(5000, "10.244.0.2:8080"), _eject(7000, "10.244.0.3:8080", enforced=False)]
    lab = result("lab", [], [(0, 0)])
    lab.events[:] = [
        _eject(5200, "127.0.0.1:4001"),
        _eject(6900, "127.0.0.1:4002", enforced=False),
        _eject(8100, "127.0.0.1:4002", enforced=False),
    ]
    by = rows_by(compare(sim, lab, outlier_tolerance_ms=2000))
    assert by[("sidecar/client-0", "OutlierEject")]["measured"] == [5200]
    assert by[("sidecar/client-0", "OutlierEject")]["agree"] is True
    assert by[("sidecar/client-0", "detected, not enforced")]["simulated"] == [1]
    assert by[("sidecar/client-0", "detected, not enforced")]["measured"] == [2]


def test_ejections_are_compared_per_pod_by_name() -> None:
    sim = result("simulation", [], [(0, 0)])
    sim.events[:] = [_eject(5000, "10.244.0.2:8080"), _eject(6000, "10.244.0.3:8080")]
    lab = result("lab", [], [(0, 0)])
    lab.events[:] = [_eject(5100, "127.0.0.1:4002"), _eject(6100, "127.0.0.1:4001")]
    hosts = {
        "10.244.0.2:8080": "web-0",
        "10.244.0.3:8080": "web-1",
        "127.0.0.1:4001": "web-0",
        "127.0.0.1:4002": "web-1",
    }
    by = rows_by(compare(sim, lab, outlier_tolerance_ms=2000, hosts=hosts))
    # The lab ejected web-1 first: per pod, each is a second off.
    assert by[("sidecar/client-0 → pod/web-0", "OutlierEject")]["simulated"] == [5000]
    assert by[("sidecar/client-0 → pod/web-0", "OutlierEject")]["measured"] == [6100]
    assert by[("sidecar/client-0 → pod/web-1", "OutlierEject")]["measured"] == [5100]
    # Without the addresses' pods, the sidecar's ejections in order (as before).
    assert rows_by(compare(sim, lab, outlier_tolerance_ms=2000))[("sidecar/client-0", "OutlierEject")][
        "agree"
    ]


def test_simulated_hosts_names_the_pods_behind_the_sidecars_addresses() -> None:
    from probesim.lab.compare import simulated_hosts

    assert simulated_hosts(builtin("seed003-outlier")) == {
        "10.244.0.2:8080": "backend-0",
        "10.244.0.3:8080": "backend-1",
        "10.244.0.4:8080": "backend-2",
    }


def test_ready_replicas_between_the_simulations_within_a_second_agree() -> None:
    # Two pods leave at 4 s in the simulation; for real one goes just before the second, the
    # other just after: 1 Ready at 4 s lies between 2 and 0 and agrees; 1 where the simulation
    # stays at 2 does not.
    sim = result("sim", [], [(t * 1000, 2 if t < 4 else 0) for t in range(10)])
    straddling = result("lab", [], [(t * 1000, 2 if t < 4 else 1 if t == 4 else 0) for t in range(10)])
    assert rows_by(compare(sim, straddling))[("workload/web", "ready replicas")]["agree"] is True
    dip = result("lab", [], [(t * 1000, 1 if t == 1 else 2 if t < 4 else 0) for t in range(10)])
    assert rows_by(compare(sim, dip))[("workload/web", "ready replicas")]["agree"] is False


def test_the_exit_code_tells_a_difference_from_a_run_the_lab_could_not_hold() -> None:
    """1: a figure the lab measured faithfully differs; 3: the figures it measured faithfully
    agree, but the machine was too busy to hold the run faithfully (headroom's NOT FAITHFUL marks
    every row then), whether those rows' values agree or not; 0: every figure agrees."""
    from rich.console import Console

    from probesim.lab.compare import AGREES, DIFFERS, NOT_FAITHFUL, keep_values, outcome
    from probesim.lab.headroom import Demand, Monitor, ProcFigures, judge, mark_unfaithful
    from probesim.report.compare import render_lab_comparison

    def rows() -> list[dict[str, object]]:
        return [
            {"object": "pod/web-0", "reason": "Killing", "unit": "ms", "simulated": [5_000],
             "measured": [5_040], "tolerance": 1000, "agree": True},
            {"object": "route//", "reason": "failed requests", "unit": "count", "simulated": [0],
             "measured": [1], "tolerance": 2, "agree": True},
        ]  # fmt: skip

    ok = rows()
    keep_values(ok)
    assert outcome(ok) == AGREES == 0
    differs = rows()
    differs[0]["agree"] = False
    keep_values(differs)
    assert outcome(differs) == DIFFERS == 1
    # An app that waited for a CPU 3 s beside its 5 s: every row marked not faithful.
    m = Monitor(dict)
    m.t1 = m.t0 + 10
    m.procs = {1: ProcFigures("app web-0", cpu_s=5.0, waited_s=3.0)}
    h = judge(m, 1.0, 1024, Demand(), {}, {})
    held = rows()
    keep_values(held)
    mark_unfaithful(held, h)
    assert [(r["agree"], r["faithful"], r["withinTolerance"]) for r in held] == [(False, False, True)] * 2
    assert outcome(held) == NOT_FAITHFUL == 3
    differs_too = rows()
    differs_too[0]["agree"] = False
    keep_values(differs_too)
    mark_unfaithful(differs_too, h)
    assert outcome(differs_too) == NOT_FAITHFUL  # no verdict on what the lab could not hold
    console = Console(record=True, width=200)
    render_lab_comparison(held, console)
    text = console.export_text()
    assert "not faithful (values agree)" in text
    assert "differ on" not in text
    assert (
        "the lab could not hold the run faithfully for 2 of 2 figures (NOT FAITHFUL: the machine's "
        "limits, not the app's); 2 of them are within their tolerance all the same"
    ) in text


def test_the_lab_is_compared_with_a_simulation_of_the_costs_its_app_spends() -> None:
    # The lab's test app spends each request's cost exactly; `lab --compare` simulates the same:
    # every container behaviour, per pod override and of a rollout's new version, at
    # variability 0, and nothing else changed.
    from probesim.engine import simulate
    from probesim.lab.compare import as_the_lab_runs

    sc = builtin("pool-upgrade-slow-start-killed")
    exact = as_the_lab_runs(sc)
    assert [cb.variability for cb in sc.container_behaviors()] == [0.5, 0.5]  # the app, ordinals 0-2
    assert [cb.variability for cb in exact.container_behaviors()] == [0.0, 0.0]
    unchanged = [cb.model_copy(update={"variability": 0.0}) for cb in sc.container_behaviors()]
    assert exact.container_behaviors() == unchanged and exact.workloads == sc.workloads
    # The spread's tail is what timed out near the 5 s client timeout; without it nothing does,
    # as in the lab (measured: 0), and the liveness kills fall at the same times.
    spread, spent = simulate(sc), simulate(exact)
    assert spread.route("/").failed["timeout"] > 0 and spent.route("/").failed["timeout"] == 0
    kills = [[e.time_ms for e in r.events if e.reason == "Killing"] for r in (spread, spent)]
    assert kills[0] == kills[1]
    rolled = as_the_lab_runs(builtin("rollout-slow-release-killed"))
    assert rolled.container_behaviors() and {cb.variability for cb in rolled.container_behaviors()} == {0.0}
    assert any(isinstance(a, Rollout) and a.behavior is not None for a in rolled.spec.actions)


def test_the_simulation_beside_the_lab_runs_at_a_tenth_of_a_second() -> None:
    # The lab's times are continuous. pool-upgrade-slow-start-killed's restarted pods, at a 1 s
    # step Ready at the next second (212 s for a start at 211.1 s), at 0.1 s Ready as they start,
    # as in the lab: 0.9 s earlier out of the Service too (248.1 s), their queue drained that much
    # longer before the liveness probe of 251 s, which passes — killed every 70 s, not every 50 s.
    # Measured in the lab (issue 45): kills at 211, 281, 351 and 421 s.
    from dataclasses import replace

    from probesim.engine import simulate
    from probesim.lab.compare import beside

    sc = builtin("pool-upgrade-slow-start-killed")
    coarse = sc.model_copy(update={"spec": sc.spec.model_copy(update={"step": 1000})})
    assert [e.time_ms for e in simulate(coarse).events_for("pod/web-1", "Killing")][:2] == [211_000, 261_000]
    lab = replace(simulate(coarse), source="lab")  # its span and hosts are what beside reads
    sim, _ = beside(coarse, lab)
    assert int(np.diff(sim.time_ms[:2])[0]) == 100
    assert [e.time_ms for e in sim.events_for("pod/web-1", "Killing")] == [211_000, 281_000, 351_000, 421_000]
