"""The node lifecycle controller's arithmetic and the scheduler's and taint eviction's rules on
their own (kube/node_lifecycle.py, kube/scheduling.py), each against the upstream code it
follows."""

from __future__ import annotations

import pytest

from probesim.kube.node_lifecycle import (
    FULL,
    NORMAL,
    PARTIAL,
    eviction_rate,
    last_renewal,
    unknown_at,
    zone_state,
)
from probesim.kube.scheduling import fit_error
from probesim.kube.taints import (
    NOT_READY,
    UNREACHABLE,
    Taint,
    min_toleration_ms,
    tolerates,
    with_default_tolerations,
)
from probesim.model.placement import Toleration

NO_EXECUTE = Taint(UNREACHABLE, "", "NoExecute")


@pytest.mark.parametrize(
    ("down", "grace", "unknown"),
    [
        (60_000, 50_000, 105_000),  # last renewal 50 s, seen at the 50 s pass; first pass after 100 s
        (60_000, 40_000, 95_000),  # the default before v1.32
        (59_000, 50_000, 105_000),  # renewal 50 s: the same
        (50_000, 50_000, 95_000),  # the renewal due at 50 s does not happen: last 40 s
        (61_000, 50_000, 115_000),  # renewal at 60 s, 55 s later
    ],
)
def test_a_node_goes_unknown_at_the_first_pass_strictly_after_probe_time_plus_grace(
    down: int, grace: int, unknown: int
) -> None:
    # tryUpdateNodeHealth: nc.now().After(nodeHealth.probeTimestamp.Add(gracePeriod)), the
    # probeTimestamp the pass's now when it saw a renewed Lease (node_lifecycle_controller.go).
    assert unknown_at(down, 5_000, grace) == unknown


def test_last_renewal_before_the_failure() -> None:
    assert [last_renewal(t) for t in (1, 10_000, 10_001, 0)] == [0, 0, 10_000, -10_000]


@pytest.mark.parametrize(
    ("ready", "not_ready", "state"),
    [
        (0, 1, FULL),
        (0, 3, FULL),
        (2, 1, NORMAL),
        (1, 2, NORMAL),
        (2, 3, PARTIAL),
        (1, 3, PARTIAL),
        (3, 3, NORMAL),
    ],
)
def test_zone_state(ready: int, not_ready: int, state: str) -> None:
    # ComputeZoneState: full with no Ready node; partial with more than 2 not Ready making at
    # least unhealthyZoneThreshold (0.55) of the zone.
    assert zone_state(ready, not_ready) == state


def test_tainting_rates() -> None:
    # setLimiterInZone: healthy rate for normal and fully disrupted zones; ReducedQPSFunc for a
    # partially disrupted one: the secondary rate above largeClusterSizeThreshold (50), else 0.
    assert eviction_rate(NORMAL, 3) == eviction_rate(FULL, 3) == 0.1
    assert eviction_rate(PARTIAL, 51) == 0.01 and eviction_rate(PARTIAL, 50) == 0.0


def test_default_tolerations_are_added_unless_the_pod_has_its_own() -> None:
    # DefaultTolerationSeconds admission: a toleration with an empty key or effect counts.
    added = with_default_tolerations(())
    assert [(t.key, t.effect, t.toleration_seconds) for t in added] == [
        (NOT_READY, "NoExecute", 300),
        (UNREACHABLE, "NoExecute", 300),
    ]
    own = Toleration(key=UNREACHABLE, operator="Exists", effect="NoExecute", tolerationSeconds=30)
    assert [t.key for t in with_default_tolerations((own,))] == [UNREACHABLE, NOT_READY]
    everything = Toleration(operator="Exists")
    assert with_default_tolerations((everything,)) == (everything,)


def test_toleration_matching() -> None:
    # Toleration.ToleratesTaint: empty effect matches all; empty key with Exists every key;
    # Equal compares values.
    assert tolerates(Toleration(operator="Exists"), NO_EXECUTE)
    assert tolerates(Toleration(key=UNREACHABLE, operator="Exists"), NO_EXECUTE)
    assert not tolerates(Toleration(key=UNREACHABLE, operator="Exists", effect="NoSchedule"), NO_EXECUTE)
    assert tolerates(Toleration(key="gpu", value="true"), Taint("gpu", "true", "NoSchedule"))
    assert not tolerates(Toleration(key="gpu", value="yes"), Taint("gpu", "true", "NoSchedule"))


def test_min_toleration_time() -> None:
    # getMinTolerationTime (taint_eviction.go): the least matching tolerationSeconds; 0 or less
    # evicts at once; none set: forever; a taint not tolerated at all: at once.
    def tol(seconds: int | None) -> Toleration:
        return Toleration(key=UNREACHABLE, operator="Exists", effect="NoExecute", tolerationSeconds=seconds)

    assert min_toleration_ms([NO_EXECUTE], (tol(300), tol(60))) == 60_000
    assert min_toleration_ms([NO_EXECUTE], (tol(-5),)) == 0
    assert min_toleration_ms([NO_EXECUTE], (tol(None),)) is None
    assert min_toleration_ms([NO_EXECUTE], ()) == 0


def test_fit_error_sorts_each_histogram_as_strings() -> None:
    # FitError.Error: "0/N nodes are available: " + sorted "count reason" strings, then
    # DefaultPreemption's own histogram (pkg/scheduler/framework/types.go).
    msg = fit_error(
        [
            ["Insufficient cpu"],
            ["node(s) had untolerated taint {a: }"],
            ["Insufficient cpu", "Insufficient memory"],
        ]
    )
    assert msg == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint {a: }, 2 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption "
        "victims found for incoming pod."
    )
