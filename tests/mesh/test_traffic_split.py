"""Istio traffic splits in the engine (issue 22, item 9): a VirtualService route's weighted
destinations, DestinationRule subsets by the pods' labels (per revision, so they follow a
rollout), another host, and mirrorPercentage; each destination a cluster of its own in every
client sidecar, with its own load balancer and outlier detection."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from probesim.engine import simulate
from probesim.engine.loop import Simulation
from probesim.engine.sidecar.split import SplitRoute, weighted_counts
from probesim.errors import InputWarning
from probesim.manifests.scenario import scenario_from_text
from probesim.model.scenario import Scenario
from tests.builders import builtin


def _sc(text: str) -> Scenario:
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)  # everything here is simulated: nothing said
        return scenario_from_text(text, "split.yaml", Path("."))


def deployment(name: str, labels: str, replicas: int = 2) -> str:
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {labels}}}
  template:
    metadata: {{labels: {labels}}}
    spec:
      containers:
        - name: app
          ports: [{{name: http, containerPort: 8080}}]
"""


def service(name: str, selector: str) -> str:
    return f"""---
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  selector: {selector}
  ports: [{{name: http, port: 8080, targetPort: http}}]
"""


HEAD = """apiVersion: probesim.dev/v1alpha1
kind: Scenario
metadata: {{name: split}}
spec:
  duration: {duration}
{spec}
"""


@given(
    st.lists(st.integers(0, 100), min_size=1, max_size=5).filter(lambda w: sum(w) > 0),
    st.lists(st.integers(0, 500), min_size=1, max_size=40),
)
def test_weighted_counts_are_the_weights_exactly_every_total_requests(
    weights: list[int], steps: list[int]
) -> None:
    # Per step the shares add up to the step's requests; after every whole number of W (the sum
    # of the weights) requests each cluster has had exactly its weight per W; a weight 0 none.
    total = np.zeros(len(weights), np.int64)
    sent, w = 0, sum(weights)
    for n in steps:
        got = weighted_counts(weights, sent, n)
        assert sum(got) == n and min(got) >= 0
        total += got
        sent += n
    got = weighted_counts(weights, sent, (-sent) % w)  # up to the next multiple of W
    total += got
    sent += sum(got)
    assert sent % w == 0
    assert total.tolist() == [x * (sent // w) for x in weights]


@given(st.lists(st.integers(0, 100), min_size=2, max_size=4).filter(lambda w: sum(w) > 0))
def test_weighted_counts_stay_within_three_requests_of_istios_percentages(raw: list[int]) -> None:
    # Istio's weights add up to 100: after any number of requests, one at a time, every
    # cluster's count is within 3 of K × weight / 100.
    weights = [x * 100 // sum(raw) for x in raw]
    weights[0] += 100 - sum(weights)
    total = np.zeros(len(weights), np.int64)
    for k in range(300):
        total += weighted_counts(weights, k, 1)
        assert np.all(np.abs(total - (k + 1) * np.array(weights) / 100) < 3)


def _parts(sc: Scenario) -> tuple[SplitRoute, list[str], object]:
    run = Simulation(sc)
    result = run.run()
    split = run.mesh[0]
    assert isinstance(split, SplitRoute)
    return split, run.fleet.pod_names, result


def test_canary_builtin_splits_90_10_and_ejects_only_in_the_v2_subset() -> None:
    split, names, r = _parts(builtin("canary-split"))
    v1, v2 = split.parts
    # Subsets by labels: version v1 are backend-v1's pods, v2 backend-v2's.
    assert [names[p] for p in v1.pods] == ["backend-v1-0", "backend-v1-1"]
    assert [names[p] for p in v2.pods] == [f"backend-v2-{i}" for i in range(5)]
    assert v1.cluster == "outbound|8080|v1|backend.default.svc.cluster.local"
    # 100 requests a second for 55 s: 90 % and 10 % exactly (5,500 is a multiple of 10).
    assert (v1.sent, v2.sent) == (4950, 550)
    assert v1.detector is None and v2.detector is not None  # the subset's trafficPolicy only
    route = r.route("/")  # type: ignore[attr-defined]
    # Each client sends the bad pod every 5th of its 5 v2 requests a second: two 500s (5 s, 6.6 s)
    # and it is ejected, 30 s later back for two more: 2 × 2 × 2 failed.
    assert route.failed_total == route.failed["error_status"] == 8
    eject = [e.time_ms for e in r.events_for(reason="OutlierEject")]  # type: ignore[attr-defined]
    assert eject == [6600, 6900, 39600, 39900]
    assert all("outbound|8080|v2|" in e.message for e in r.events_for(reason="OutlierEject"))  # type: ignore[attr-defined]


def test_a_split_to_another_host_sends_its_share_to_that_services_pods() -> None:
    # backend's route sends 25 % to backend-canary, another Service whose pods answer 500: exactly
    # a quarter of the 200 requests fail, none of the rest.
    spec = """  behavior:
    canary: {containers: {app: {paths: {/: 500}}}}
  traffic:
    - {service: backend, path: /, rate: 10, start: 0s}"""
    text = (
        HEAD.format(duration="20s", spec=spec)
        + deployment("backend", "{app: backend}")
        + deployment("canary", "{app: canary}")
        + service("backend", "{app: backend}")
        + service("backend-canary", "{app: canary}")
        + """---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: backend}
spec:
  hosts: [backend]
  http:
    - route:
        - {destination: {host: backend}, weight: 75}
        - {destination: {host: backend-canary.default.svc.cluster.local}, weight: 25}
"""
    )
    split, names, r = _parts(_sc(text))
    assert [names[p] for p in split.parts[1].pods] == ["canary-0", "canary-1"]
    assert split.parts[1].cluster == "outbound|8080||backend-canary.default.svc.cluster.local"
    route = r.route("/")  # type: ignore[attr-defined]
    assert route.offered == 200
    assert route.failed["error_status"] == 50 and route.ok == 150


def test_subsets_follow_a_rollout_by_the_new_template_labels() -> None:
    # One Deployment labelled version v1; the rollout at 20 s labels its template v2. Subset v2
    # (weight 50) has no pod before: its half fails as no healthy upstream (503 UH); once the
    # new ReplicaSet's pods are Ready they take it, and subset v1 loses its pods as the old ones
    # go (its labels are the revision's: fleet.py keeps each revision's template labels).
    spec = """  traffic:
    - {service: backend, path: /, rate: 10, start: 0s}
  actions:
    - {at: 20s, kind: rollout, workload: backend, template: {metadata: {labels: {version: v2}}}}"""
    text = (
        HEAD.format(duration="60s", spec=spec)
        + deployment("backend", "{app: backend, version: v1}", replicas=2).replace(
            "selector: {matchLabels: {app: backend, version: v1}}", "selector: {matchLabels: {app: backend}}"
        )
        + service("backend", "{app: backend}")
        + """---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: backend}
spec:
  host: backend
  subsets:
    - {name: v1, labels: {version: v1}}
    - {name: v2, labels: {version: v2}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: backend}
spec:
  hosts: [backend]
  http:
    - route:
        - {destination: {host: backend, subset: v1}, weight: 50}
        - {destination: {host: backend, subset: v2}, weight: 50}
"""
    )
    split, names, r = _parts(_sc(text))
    v1, v2 = split.parts
    assert all(names[p].startswith("backend-") for p in v1.pods)
    assert v1.pods.size + v2.pods.size == len(names)  # every pod in one subset: by its revision
    assert {names[p].rsplit("-", 1)[0] for p in v2.pods}.isdisjoint(
        {names[p].rsplit("-", 1)[0] for p in v1.pods}
    )
    uh = r.series["route./.no_endpoint"]  # type: ignore[attr-defined]
    # Subset v2's half fails as 503 UH until 20 s; in the rollout's step (no readiness probe:
    # the new pods are Ready at once, the old ones go) both subsets have pods; then v1's half.
    assert int(uh[:20].sum()) == 100 and int(uh[20]) == 0  # 200 requests: exactly half
    assert int(uh[21:].sum()) == weighted_counts([50, 50], 210, 390)[0]  # v1's share of the rest
    assert abs(int(uh[21:].sum()) - 195) < 6
    assert r.route("/").envoy["no_healthy_upstream"] == int(uh.sum())  # type: ignore[attr-defined]


def test_mirror_percentage_copies_are_no_client_answers() -> None:
    # mirrorPercentage 50 to a shadow whose pods answer 500: about half the requests are copied
    # there and fail there, the primary route's counts are those of the run without a mirror.
    spec = """  behavior:
    shadow: {containers: {app: {paths: {/: 500}}}}
  traffic:
    - {service: backend, path: /, rate: 20, start: 0s}"""
    base = (
        HEAD.format(duration="50s", spec=spec)
        + deployment("backend", "{app: backend, version: v1}")
        + deployment("shadow", "{app: shadow}")
        + service("backend", "{app: backend}")
        + service("shadow", "{app: shadow}")
        + """---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: backend}
spec:
  host: backend
  subsets: [{name: v1, labels: {version: v1}}]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: backend}
spec:
  hosts: [backend]
  http:
    - route: [{destination: {host: backend, subset: v1}}]
"""
    )
    mirrored = base + "      mirror: {host: shadow}\n      mirrorPercentage: {value: 50}\n"
    plain, copied = simulate(_sc(base)), simulate(_sc(mirrored))
    p, c = plain.route("/"), copied.route("/")
    assert (c.offered, c.ok, c.failed_total) == (p.offered, p.ok, p.failed_total) == (1000, 1000, 0)
    shadow = copied.route("/>mirror:shadow")
    assert shadow.failed["error_status"] == shadow.offered == c.envoy["mirrored"]
    assert 430 <= shadow.offered <= 570  # a binomial draw per client and step: 500 ± 4.5 sd


def test_a_simulated_split_is_not_said_as_unsimulated_and_an_unknown_subset_still_is() -> None:
    from probesim.scenarios import find

    b = find("canary-split")
    assert b is not None
    text = b.path.read_text(encoding="utf-8")
    _sc(text)  # subsets the DestinationRule defines: nothing said
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", InputWarning)
        sc = scenario_from_text(text.replace("subset: v2}", "subset: v3}"), "canary.yaml", Path("."))
    (w,) = [str(x.message) for x in said if issubclass(x.category, InputWarning)]
    assert "not simulated for subset v3 of backend" in w and w.startswith("canary.yaml:")
    split, _, r = _parts(sc)
    assert split.parts[1].pods.size == 0  # no hosts: its 10 % is 503 no healthy upstream
    assert r.route("/").envoy["no_healthy_upstream"] == 550  # type: ignore[attr-defined]
