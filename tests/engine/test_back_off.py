"""The kubelet's doBackOff (engine/containers.back_off), one rule for the engine's arrays and
the lab's one container: exact cases from the reference (§3.7), and arrays equal to calls one
element at a time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from probesim.kube.containers import back_off


def test_the_ladder_of_the_reference() -> None:
    # No entry yet: starts, the entry becomes 10 s.
    assert [int(x) for x in back_off(50_000, 40_000, 0, 0)] == [True, 10_000]
    # Within the entry since the exit: refused, the entry unchanged.
    assert [int(x) for x in back_off(49_000, 40_000, 20_000, 30_000)] == [False, 20_000]
    # Past it: starts, doubled, capped at 300 s.
    assert [int(x) for x in back_off(61_000, 40_000, 20_000, 30_000)] == [True, 40_000]
    assert [int(x) for x in back_off(10**6, 400_000, 300_000, 300_000)] == [True, 300_000]
    # An exit more than 10 min after the entry's update resets it: starts at once, 10 s again.
    assert [int(x) for x in back_off(700_001, 700_000, 300_000, 99_999)] == [True, 10_000]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2_000_000),
            st.integers(0, 2_000_000),
            st.sampled_from([0, 10_000, 20_000, 160_000, 300_000]),
            st.integers(0, 2_000_000),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_arrays_give_what_each_element_gives(rows: list[tuple[int, int, int, int]]) -> None:
    cols = [np.array(c, np.int64) for c in zip(*rows, strict=True)]
    may, later = back_off(*cols)
    for i, row in enumerate(rows):
        one_may, one_later = back_off(*row)
        assert (bool(may[i]), int(later[i])) == (bool(one_may), int(one_later))
        if not one_may:
            assert int(one_later) == row[2]  # a refusal leaves the entry as it was
