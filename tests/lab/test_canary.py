"""The canary built-in through real Envoys (issue 22, item 9): v1 and v2 Deployments behind one
Service, Envoy's weighted clusters per subset (each with the pods of its labels, as Istio's EDS
gives them), outlier detection on v2's; the lab agrees with the simulation."""

from __future__ import annotations

from probesim.engine import simulate
from probesim.lab.compare import agree, compare, outlier_interval_ms
from probesim.lab.orchestrator import run_lab
from tests.builders import builtin
from tests.lab.procs import children_left


def test_canary_split_through_real_envoys_matches_the_simulation() -> None:
    # 100 requests a second from 5 s over 2 sidecars for 20 s: 1,500 requests; Envoy draws each
    # request's subset (90/10) at random, the simulation shares them out exactly (1,350/150).
    # v2's pod 0 answers 500: each sidecar ejects it at its second 500 in v2's cluster, ~6.5 s.
    sc = builtin("canary-split")
    lab = run_lab(sc, 20)
    route = lab.route("/")
    assert route.offered == 1500
    v1, v2 = route.envoy["v1.upstream_rq_total"], route.envoy["v2.upstream_rq_total"]
    assert v1 + v2 == 1500
    assert 150 - 46 <= v2 <= 150 + 46  # binomial(1500, 0.1): 150 ± 4 sd
    assert route.failed_total == route.failed["error_status"] == 4
    assert route.statuses == {200: 1496, 500: 4}
    assert route.envoy["ejections_enforced_total"] == 2
    for client in ("sidecar/client-0", "sidecar/client-1"):
        (eject,) = lab.events_for(client, "OutlierEject")
        assert 5_000 < eject.time_ms < 12_000
        assert "outbound|8080|v2|backend" in eject.message
    assert sorted(w.name for w in lab.workloads) == ["backend-v1", "backend-v2"]
    short = simulate(sc.cut_to(20_000))
    rows = compare(short, lab, outlier_interval_ms(sc))
    assert agree(rows), [r for r in rows if not r["agree"]]
    routes = [(r["reason"], r["measured"]) for r in rows if str(r["object"]).startswith("route/")]
    assert routes == [("failed requests", [4]), ("ejections", [2])]
    assert children_left() == []  # the apps and the Envoys
