"""The capacity model's compiled kernels (engine/kernels.py) against its numpy forms: the same
results to the bit and the same draws, on the built-ins that load containers and on generated
capacity scenarios; numpy's reduction order reproduced; when a run loads the kernels."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probesim.engine import capacity, distributions, kernel_choice, simulate
from probesim.engine.loop import Simulation
from probesim.engine.series_names import P50_AT, ROUTE_SERIES
from probesim.engine.state_memo import StateMemo
from probesim.engine.traffic import Traffic
from probesim.model.scenario import Scenario
from tests.builders import builtin, scenario

numba = pytest.importorskip("numba")
kernels = pytest.importorskip("probesim.engine.kernels")
kernels_base = pytest.importorskip("probesim.engine.kernels_base")
kernels_states = pytest.importorskip("probesim.engine.kernels_states")


@contextlib.contextmanager
def forced(mode: str) -> Iterator[None]:
    """Runs with PROBESIM_KERNELS=``mode`` (numpy, numba)."""
    before = os.environ.get("PROBESIM_KERNELS")
    os.environ["PROBESIM_KERNELS"] = mode
    try:
        yield
    finally:
        if before is None:
            del os.environ["PROBESIM_KERNELS"]
        else:
            os.environ["PROBESIM_KERNELS"] = before


@contextlib.contextmanager
def numpy_forms() -> Iterator[None]:
    """distributions.py's functions by their numpy forms, whatever run came before."""
    before = kernel_choice._active
    kernel_choice._active = None
    try:
        yield
    finally:
        kernel_choice._active = before


def both(sc: Scenario) -> tuple[str, str]:
    """The full JSON (series, events) of ``sc`` by the numpy forms and by the kernels."""
    out = []
    for mode in ("numpy", "numba"):
        with forced(mode):
            out.append(json.dumps(simulate(sc).to_json(series=True)))
    return out[0], out[1]


LOADING = [
    "gke-surge-defaults",
    "gke-surge-tuned",
    "patient-all-ok",
    "patient-delays-liveness",
    "patient-delays-readiness",
    "patient-timeout-retry-3",
    "patient-delays-no-probes",
    "rollout-max-unavailable-under-load",
]


@pytest.mark.parametrize("name", LOADING)
def test_the_built_ins_give_the_same_json_by_both(name: str) -> None:
    sc = builtin(name)
    with forced("numba"):
        assert simulate(sc) is not None
    numpys, kernels_ = both(sc)
    assert numpys == kernels_


@settings(max_examples=25, deadline=None)
@given(
    replicas=st.integers(1, 4),
    cpu=st.sampled_from(["0.5ms", "5ms", "12ms", "40ms"]),
    wall=st.sampled_from(["0ms", "3ms", "30ms"]),
    second=st.booleans(),
    workers=st.sampled_from([None, 1, 4, 32]),
    queue=st.sampled_from([None, 0, 10]),
    limit=st.sampled_from([None, "100m", "500m", "2"]),
    probes=st.sampled_from(["shared", "separate"]),
    warmup=st.booleans(),
    variability=st.sampled_from([0.0, 0.3]),
    rate=st.sampled_from([5, 40, 150, 600]),
    timeout=st.sampled_from([None, "50ms", "1s"]),
    calls=st.booleans(),
    trouble=st.booleans(),
    keep_alive=st.booleans(),
    idle=st.sampled_from([None, "30m"]),
    seed=st.integers(0, 1000),
)
def test_generated_capacity_runs_give_the_same_json_and_draws(
    replicas: int,
    cpu: str,
    wall: str,
    second: bool,
    workers: int | None,
    queue: int | None,
    limit: str | None,
    probes: str,
    warmup: bool,
    variability: float,
    rate: int,
    timeout: str | None,
    calls: bool,
    trouble: bool,
    keep_alive: bool,
    idle: str | None,
    seed: int,
) -> None:
    route: dict[str, Any] = {"cpu": cpu, "wall": wall}
    if calls:
        route["calls"] = [{"dependency": "db", "timeout": "80ms", "retries": {"attempts": 2}}]
        if trouble:  # a breaker, and the dependency down for a while
            route["calls"][0]["circuitBreaker"] = {"failures": 3, "open": "4s"}
    routes: dict[str, Any] = {"/": route, "/healthz": {"cpu": "1ms"}}
    if second:
        routes["/b"] = {"cpu": "2ms"}
    cap: dict[str, Any] = {"probes": probes}
    if workers is not None:
        cap["workers"] = workers
    if queue is not None:
        cap["queue"] = queue
    behavior: dict[str, Any] = {"routes": routes, "capacity": cap, "variability": variability}
    if warmup:
        behavior["warmup"] = {"for": "20s", "factor": 3}
    if idle is not None:  # the app's own CPU, while it runs
        behavior["idleCpu"] = idle
    traffic: list[dict[str, Any]] = [{"name": "a", "rate": rate, "keepAlive": keep_alive}]
    if timeout is not None:
        traffic[0]["timeout"] = timeout
    if second:
        traffic.append({"name": "b", "path": "/b", "rate": rate // 2 + 1})
    resources: dict[str, Any] = {"requests": {"cpu": "100m"}}
    if limit is not None:
        resources["limits"] = {"cpu": limit}
    container = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"containerPort": 8080}],
        "resources": resources,
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080},
            "periodSeconds": 2,
            "timeoutSeconds": 1,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080},
            "periodSeconds": 5,
            "failureThreshold": 2,
        },
    }
    spec: dict[str, Any] = {"seed": seed}
    if calls:
        spec["dependencies"] = {"db": {"latency": "20ms", "faults": [{"delay": "1s", "percent": 30}]}}
        if trouble:
            spec["dependencies"]["db"] |= {"capacity": 5, "outages": [{"at": "10s", "for": "6s"}]}
    sc = scenario(
        containers=[container],
        behavior=behavior,
        replicas=replicas,
        duration="40s",
        traffic=traffic,
        spec=spec,
    )
    numpys, kernels_ = both(sc)
    assert numpys == kernels_


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 300),
    cols=st.integers(1, 5),
    seed=st.integers(0, 2**31),
    signed=st.booleans(),
)
def test_column_sums_add_in_numpys_order(rows: int, cols: int, seed: int, signed: bool) -> None:
    """Row after row, except one column: pairwise (blocks of 128, eight partial sums each)."""
    rng = np.random.default_rng(seed)
    x = rng.random((rows, cols)) * 10.0 ** rng.integers(-6, 6, (rows, cols))
    if signed:
        x -= x.mean()
    got = kernels_base.column_sums(x)
    assert got.tobytes() == x.sum(axis=0).tobytes()


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 127, 128, 129, 130, 255, 256, 1000, 4097])
def test_pairwise_sums_are_numpys(n: int) -> None:
    a = np.random.default_rng(n).random(n) * 1e3 - 400
    assert kernels_base.pairwise(a, 0, n) == a.sum()
    if n > 3:
        assert kernels_base.pairwise(a, 3, n - 3) == a[3:].sum()


def test_nan_propagates_as_numpys_minimum_and_maximum() -> None:
    nan = float("nan")
    for a, b in ((nan, 1.0), (1.0, nan), (2.0, 1.0), (np.inf, 3.0)):
        assert str(kernels_base.minimum(a, b)) == str(np.minimum(a, b))
        assert str(kernels_base.maximum(a, b)) == str(np.maximum(a, b))


def test_runs_take_the_kernels_once_long_enough_and_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_choice, "_kernels", None)
    monkeypatch.setattr(kernel_choice, "_steps_run", 0)
    monkeypatch.setattr(kernel_choice, "_numpy_only", False)
    monkeypatch.setenv("PROBESIM_KERNELS", "numpy")
    assert kernel_choice.kernels(10**9) is None  # forced off
    monkeypatch.setenv("PROBESIM_KERNELS", "auto")
    # A short run stays with numpy and counts its steps; with those before, a long one loads them.
    assert kernel_choice.kernels(kernel_choice.KERNEL_STEPS // 2) is None
    assert kernel_choice._steps_run == kernel_choice.KERNEL_STEPS // 2
    assert kernel_choice.kernels(kernel_choice.KERNEL_STEPS // 2) is kernels
    assert kernel_choice.kernels(1) is kernels  # taken once, every run after


def test_the_current_run_says_which_forms_serve_it() -> None:
    sc = builtin("rollout-max-unavailable-under-load")
    for mode, expected in (("numpy", None), ("numba", kernels), ("numpy", None)):
        with forced(mode):
            simulate(sc)
            assert kernel_choice.loaded_kernels() is expected


def test_a_cold_cache_keeps_the_numpy_forms_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_choice, "_kernels", None)
    monkeypatch.setattr(kernel_choice, "_numpy_only", False)
    monkeypatch.setattr(kernels, "cached", lambda: False)
    monkeypatch.setenv("PROBESIM_KERNELS", "auto")
    assert kernel_choice.kernels(10**9) is None  # compiling would take seconds of the user's run
    assert kernel_choice.kernels(10**9) is None  # and is not tried again
    monkeypatch.setenv("PROBESIM_KERNELS", "numba")
    assert kernel_choice.kernels(1) is kernels


def test_the_warm_up_leaves_every_kernel_in_the_cache(tmp_path: Path) -> None:
    # From a cold cache, as on a fresh machine: a kernel no warm-up run calls (pend_later, once
    # no warm-up built-in had answers due after their step) left cached() false, and every run
    # took the numpy forms, a warm cache beside it hiding it.
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "probesim.kernel_cache"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and "kernels: cached" in done.stdout, done.stdout + done.stderr


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 60),
    states=st.integers(1, 40),
    seed=st.integers(0, 2**31),
)
def test_state_groups_are_the_numpy_forms(n: int, states: int, seed: int) -> None:
    """The same keys (0.1 ms, sigma to 0.001, ties rounded to even), order, firsts and inverse,
    with few states (the numpy form's shortcut) and many."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, states, n)
    d = (rng.integers(0, 5000, states) / 20.0)[pick]  # .05 steps: ties at the rounding
    s = (rng.random(states) * 300.0)[pick]
    sigma = rng.choice([0.0, 0.3, 0.0005, 0.0015], states)[pick]
    with numpy_forms():
        first, inv = distributions.state_groups(d, s, sigma)
    got_first, got_inv = kernels.state_groups(d, s, sigma)
    assert got_first.tolist() == first.tolist()
    assert got_inv.tolist() == inv.tolist()


def test_state_bits_tell_minus_zero_and_nan_apart_as_the_bit_compare_does() -> None:
    first, inv = np.array([0]), np.array([0, 0])
    ones = np.ones(2)
    same, rep = kernels.state_bits(np.array([1.5, 1.5]), ones, ones, first, inv)
    assert same and rep.tolist() == np.stack([[1.5], [1.0], [1.0]]).view(np.int64).tolist()
    assert not kernels.state_bits(np.array([0.0, -0.0]), ones, ones, first, inv)[0]  # == says equal
    nan = np.array([np.nan, np.nan])
    assert kernels.state_bits(nan, ones, ones, first, inv)[0]  # == says different


def test_states_spread_their_chance_of_a_timeout_as_the_numpy_form() -> None:
    inv = np.array([0, 1, 1, 2, 0])
    p, draw, which = kernels.spread_states(np.array([0.0, 0.5, 1.5]), inv)
    assert which == 2 and p.tolist() == [0.0, 0.5, 0.5, 1.0, 0.0] and draw.tolist() == [1, 2, 3]
    p, _, which = kernels.spread_states(np.array([0.2, 0.5, 1.0]), inv)
    assert which == 1 and p.tolist() == [0.2, 0.5, 0.5, 1.0, 0.2]
    assert kernels.spread_states(np.array([0.0, -0.1, 0.0]), inv)[2] == 0


def test_without_numba_the_numpy_forms_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import probesim.engine

    monkeypatch.setattr(kernel_choice, "_kernels", None)
    monkeypatch.setattr(kernel_choice, "_numpy_only", False)
    monkeypatch.delitem(sys.modules, "probesim.engine.kernels")
    monkeypatch.delattr(probesim.engine, "kernels")
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba: ImportError
    sc = builtin("rollout-max-unavailable-under-load")
    with forced("numba"):
        assert kernel_choice.kernels(10**9) is None
        result = json.dumps(simulate(sc).to_json(series=True))
        assert kernel_choice.loaded_kernels() is None
    with forced("numpy"):
        assert result == json.dumps(simulate(sc).to_json(series=True))


@settings(max_examples=300, deadline=None)
@given(
    a=st.lists(
        st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from([0.0, 0.5, 1.0]),
        max_size=40,
    ),
    keys=st.lists(
        st.floats(allow_nan=True, width=64) | st.sampled_from([0.0, 0.5, 0.99, 1.0]), min_size=1, max_size=6
    ),
    ordered=st.booleans(),
)
def test_searchsorted_is_numpys_even_on_unsorted_input(
    a: list[float], keys: list[float], ordered: bool
) -> None:
    """The same index as numpy's binary search, which keeps its bounds from the key before:
    on a CDF a rounding error may leave out of order."""
    arr = np.array(sorted(a) if ordered else a, np.float64)
    k = np.array(keys, np.float64)
    assert kernels_states.searchsorted(arr, k).tolist() == np.searchsorted(arr, k).tolist()


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31), jitter=st.booleans())
def test_grid_quantiles_are_the_numpy_forms(seed: int, jitter: bool) -> None:
    rng = np.random.default_rng(seed)
    mix = np.cumsum(rng.random(distributions.GRID.size) * (rng.random(distributions.GRID.size) < 0.2))
    mix /= max(mix[-1], 1e-300)
    if jitter:  # a CDF a few ulps out of order, as sums of rows leave it
        mix[rng.integers(0, mix.size, 5)] -= 1e-16
    qs = (0.5, 0.95, 0.99, 1 - 0.5 / int(rng.integers(1, 10_000)))
    with numpy_forms():
        want = distributions.grid_quantiles(mix, qs)
    assert kernels.grid_quantiles(mix, np.array(qs), distributions.GRID).tolist() == want


HANDLERS: dict[str, dict[str, Any]] = {
    "http": {"httpGet": {"path": "/healthz", "port": 8080}},
    "http-named": {"httpGet": {"path": "/healthz", "port": "http"}},
    "http-undeclared": {"httpGet": {"path": "/healthz", "port": "admin"}},  # the handler errors
    "http-closed": {"httpGet": {"path": "/healthz", "port": 9090}},  # nothing listens: refused
    "http-redirect": {"httpGet": {"path": "/moved", "port": 8080}},
    "tcp": {"tcpSocket": {"port": 8080}},
    "exec": {"exec": {"command": ["cat", "/tmp/ok"]}},
    "grpc": {"grpc": {"port": 8080}},
}


@settings(max_examples=30, deadline=None)
@given(
    replicas=st.integers(1, 3),
    readiness=st.sampled_from(sorted(HANDLERS)),
    liveness=st.sampled_from(sorted(HANDLERS)),
    startup=st.sampled_from([None, "http", "tcp", "exec"]),
    timeout_s=st.integers(1, 2),
    period_s=st.integers(1, 3),
    delay_s=st.sampled_from([0, 3]),
    thresholds=st.sampled_from([(1, 1), (1, 3), (2, 2)]),
    step=st.sampled_from(["1s", "250ms", "100ms"]),
    cpu=st.sampled_from(["5ms", "40ms", "150ms"]),
    probe_cpu=st.sampled_from(["1ms", "300ms", "1500ms"]),
    probes=st.sampled_from(["shared", "separate"]),
    rate=st.sampled_from([5, 60, 400]),
    episode=st.sampled_from([None, "hang", "hang-no-tcp", "deadlock", "errors", "crash"]),
    variability=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 1000),
)
def test_generated_probe_workers_give_the_same_json_and_draws(
    replicas: int,
    readiness: str,
    liveness: str,
    startup: str | None,
    timeout_s: int,
    period_s: int,
    delay_s: int,
    thresholds: tuple[int, int],
    step: str,
    cpu: str,
    probe_cpu: str,
    probes: str,
    rate: int,
    episode: str | None,
    variability: float,
    seed: int,
) -> None:
    """The probe workers' kernels (engine/kernels_probes.py) against their numpy forms on
    loaded containers: every handler, port errors and refusals, redirects off the host, hung and
    failing apps, probes slower than a step (in flight across steps) and than their timeout,
    restarts, initial delays and thresholds."""

    def probe(handler: str) -> dict[str, Any]:
        success, failure = thresholds
        return HANDLERS[handler] | {
            "timeoutSeconds": timeout_s,
            "periodSeconds": period_s,
            "initialDelaySeconds": delay_s,
            "successThreshold": success,
            "failureThreshold": failure,
        }

    container: dict[str, Any] = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m"}},
        "readinessProbe": probe(readiness),
        "livenessProbe": probe(liveness) | {"successThreshold": 1},
    }
    if startup is not None:
        container["startupProbe"] = probe(startup) | {"successThreshold": 1, "failureThreshold": 4}
    episodes = {
        None: [],
        "hang": [{"kind": "hang", "after": "12s", "for": "5s"}],
        "hang-no-tcp": [{"kind": "hang", "after": "12s", "for": "5s", "acceptsTcp": False}],
        "deadlock": [{"kind": "deadlock", "after": "15s"}],
        "errors": [{"kind": "errors", "after": "10s", "for": "6s", "status": 503}],
        "crash": [{"kind": "crash", "after": "14s"}],
    }[episode]
    behavior: dict[str, Any] = {
        "start": "2s",
        "routes": {"/": {"cpu": cpu}, "/healthz": {"cpu": probe_cpu}, "exec": {"cpu": probe_cpu}},
        "capacity": {"probes": probes, "workers": 4, "queue": 20},
        "variability": variability,
        "redirects": {"/moved": "http://elsewhere.example.com/"},
        "episodes": episodes,
        "warmup": {"for": "8s", "factor": 2},
    }
    sc = scenario(
        containers=[container],
        behavior=behavior,
        replicas=replicas,
        duration="40s",
        step=step,
        traffic=[{"name": "a", "rate": rate, "timeout": "2s"}],
        spec={"seed": seed},
    )
    numpys, kernels_ = both(sc)
    assert numpys == kernels_


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 50),
    kk=st.integers(1, 7),
    cursor=st.integers(0, 6),
    seed=st.integers(0, 2**31),
    rows=st.integers(1, 3),
)
def test_arrivals_take_the_round_robin_and_room_of_the_numpy_form(
    n: int, kk: int, cursor: int, seed: int, rows: int
) -> None:
    """kernels_capacity.arrive against engine/traffic.py's numpy form of a route's arrivals:
    the round robin from the cursor, the count per Outcome, and what each loaded container has
    room for joining its backlog row and the client's queue."""
    from probesim.kube.outcomes import OK, REQUEST_CODES

    rng = np.random.default_rng(seed)
    cursor %= kk
    n_containers = kk + 2
    eps = np.sort(rng.choice(n_containers, kk, replace=False)).astype(np.int64)
    target = np.arange(n_containers, dtype=np.int64)
    cat = np.where(rng.random(kk) < 0.7, OK, rng.integers(0, REQUEST_CODES, kk)).astype(np.int64)
    loaded = rng.random(n_containers) < 0.8
    backlog = rng.integers(0, 5, (rows, n_containers)).astype(np.int64)
    room = np.where(rng.random(n_containers) < 0.2, np.inf, rng.integers(0, 8, n_containers)).astype(
        np.float64
    )
    step_capacity = rng.integers(0, 4, n_containers).astype(np.float64)
    row = int(rng.integers(0, rows))
    instance = rng.integers(0, 9, n_containers).astype(np.int64)

    # The numpy form (Traffic.send and CapacityModel.accept for one outcome class).
    b0, i0, t0, q0 = (
        backlog.copy(),
        np.full(n_containers, -1),
        np.zeros(n_containers, bool),
        np.zeros((2, n_containers), np.int64),
    )
    per_ep = np.full(kk, n // kk, np.int64)
    per_ep[(cursor + np.arange(n % kk)) % kk] += 1
    counts = np.bincount(cat, weights=per_ep, minlength=REQUEST_CODES).astype(np.int64)
    tc = target[eps]
    queued = (cat == OK) & loaded[tc] & (per_ep > 0)
    qc, offered = tc[queued], per_ep[queued]
    free = room[qc] + step_capacity[qc] - b0[:, qc].sum(axis=0)
    took = np.minimum(offered, np.maximum(free, 0)).astype(np.int64)
    b0[row, qc] += took
    i0[qc] = instance[qc]
    t0[qc] = True
    q0[1, qc] += took

    # ... and counted as Traffic._count_sent counts them, into the route's series at step 2.
    before = rng.integers(0, 5, (len(ROUTE_SERIES), 4)).astype(np.int64)
    sent = SimpleNamespace(
        cols=[dict(zip(ROUTE_SERIES, before.copy(), strict=True))],
        queued_n=[3],
        queued_rows=[np.array([4, 1], np.int64)],
        answered_at_once=[0],
    )
    Traffic._count_sent(sent, 0, 2, counts, int(took.sum()), int(offered.sum()), 1)  # type: ignore[arg-type]

    b1, i1, t1, q1 = (
        backlog.copy(),
        np.full(n_containers, -1),
        np.zeros(n_containers, bool),
        np.zeros((2, n_containers), np.int64),
    )
    series, rows_held = before.copy(), np.array([4, 1], np.int64)
    n_took, n_offered, hi, ok_now = kernels.arrive(
        n, cursor, eps, cat, target, loaded, b1, room, step_capacity, row, i1, instance, t1, q1, rows_held, 1,
        series, 2,
    )  # fmt: skip
    assert (n_took, n_offered) == (int(took.sum()), int(offered.sum()))
    assert hi == (int(qc[-1]) + 1 if qc.size else -1)
    assert b1.tolist() == b0.tolist() and q1.tolist() == q0.tolist()
    assert i1.tolist() == i0.tolist() and t1.tolist() == t0.tolist()
    assert series.tolist() == [sent.cols[0][name].tolist() for name in ROUTE_SERIES]
    assert rows_held.tolist() == sent.queued_rows[0].tolist() and ok_now == sent.answered_at_once[0]
    assert sent.queued_n[0] == 3 + (n_took if n_offered else 0)


def test_a_state_memo_mirrors_its_entries_for_the_kernels() -> None:
    """engine/state_memo.py: what the numpy forms remember, the kernels find by the same bits
    (negative words, a timeout's bits), and nothing once cleared or past its capacity."""
    memo = StateMemo(1, 4)
    neg = int(np.float64(-2.5).view(np.int64))
    memo.entries[(neg, 7, 0, 1000.0)] = 0.25
    memo.entries[(neg, 7, 0, 50.0)] = 0.5
    memo.entries[(1, 2, 3, 1000.0)] = 0.75
    keys, values, index = memo.arrays(kernels)
    tmo = int(np.float64(1000.0).view(np.int64))
    find = kernels_states.find
    assert values[find(keys, index, neg, 7, 0, tmo), 0] == 0.25
    assert values[find(keys, index, neg, 7, 0, int(np.float64(50.0).view(np.int64))), 0] == 0.5
    assert values[find(keys, index, 1, 2, 3, tmo), 0] == 0.75
    assert find(keys, index, 1, 2, 4, tmo) == -1
    for i in range(4, 7):  # past capacity: kept in the dict, not mirrored
        memo.entries[(i, 0, 0, 1.0)] = float(i)
    keys, values, index = memo.arrays(kernels)
    one = int(np.float64(1.0).view(np.int64))
    assert values[find(keys, index, 4, 0, 0, one), 0] == 4.0
    assert find(keys, index, 5, 0, 0, one) == -1 and len(memo) == 6
    memo.clear()
    keys, values, index = memo.arrays(kernels)
    assert find(keys, index, 1, 2, 3, tmo) == -1


@pytest.mark.parametrize("case", ["usual", "timeout", "two-states"])
def test_one_class_routes_are_served_in_one_kernel_call_in_the_usual_case(
    monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """engine/traffic.py's serve takes serve_route's whole path (DONE) when every answer comes
    within the step in one latency state that cannot time out, and goes on with its parts
    otherwise (PARTS: a timeout that can be drawn, two latency states); the same
    JSON, and the same latency CDFs to the bit, either way."""
    seen: list[int] = []

    def counted(kernel: Any) -> Any:
        def call(*args: Any) -> Any:
            out = kernel(*args)
            seen.append(out[0])
            return out

        return call

    # (A run of one route takes serve_step, which calls serve_route within.)
    monkeypatch.setattr(kernels, "serve_route", counted(kernels.serve_route))
    monkeypatch.setattr(kernels, "serve_step", counted(kernels.serve_step))
    traffic: dict[str, Any] = {"name": "a", "rate": 200}
    if case == "timeout":
        traffic["timeout"] = "40ms"
    container = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"containerPort": 8080}],
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m"}},
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 2},
    }
    behavior: dict[str, Any] = {
        "routes": {"/": {"cpu": "4ms", "wall": "20ms"}, "/healthz": {"cpu": "1ms"}},
        "variability": 0.3,
    }
    overrides = None
    if case == "two-states":  # pod 1's requests cost more: two latency states
        slower = behavior | {"routes": {"/": {"cpu": "6ms", "wall": "20ms"}, "/healthz": {"cpu": "1ms"}}}
        overrides = [{"ordinals": [1], "containers": {"app": slower}}]
    sc = scenario(
        containers=[container],
        behavior=behavior,
        overrides=overrides,
        replicas=2,
        duration="30s",
        traffic=[traffic],
    )
    numpys, kernels_ = both(sc)
    assert numpys == kernels_
    # The latency CDFs behind the quantiles (rounded to the ms in the JSON), to the bit.
    cdfs = []
    for mode in ("numpy", "numba"):
        with forced(mode):
            run = Simulation(sc)
            run.run()
            cdfs.append(np.stack(run.traffic.latency_cdf).view(np.int64))
    assert np.array_equal(cdfs[0], cdfs[1])
    done, parts = seen.count(kernels.kernels_serving.DONE), seen.count(kernels.PARTS)
    if case == "usual":  # 200 req/s on 2 pods at 500m: within the step, no timeout to draw
        assert done > 0.9 * len(seen) and parts == 0
    elif case == "timeout":  # 40 ms is within the tail of 20 ms + 4 ms·X: every step draws
        assert done == 0 and parts > 0.9 * len(seen)
    else:
        assert done == 0 and parts > 0.9 * len(seen)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31), routes=st.integers(1, 4), half=st.booleans())
def test_step_quantiles_are_the_numpy_forms(seed: int, routes: int, half: bool) -> None:
    """The kernel's step quantiles (and the run's CDFs they add to) against Traffic._quantiles:
    routes that saw nothing, a ramp open or not, a timeout below the quantiles, totals at .5."""
    rng = np.random.default_rng(seed)
    g = distributions.GRID.size
    step = np.cumsum(rng.integers(0, 3, (routes, g)), axis=1).astype(float)
    step[0] = 0.0  # saw nothing this step
    if half:
        step *= 0.5  # totals at .5: rounded to even
    ramp_open = rng.random(routes) < 0.5
    limits = rng.choice([30.0, 1000.0, float("inf")], routes)
    states = []
    for form in ("numpy", "kernel"):
        state = SimpleNamespace(
            fleet=SimpleNamespace(routes=[None] * routes),
            step_cdf=step.copy(),
            latency_cdf=np.full((routes, g), 2.0),
            ramp_cdf=np.ones((routes, g)),
            ramp_open=ramp_open,
            limits=limits,
            route_block=np.full((routes, len(ROUTE_SERIES), 3), -1, np.int64),
        )
        if form == "numpy":
            with numpy_forms():
                Traffic._quantiles(state, 1)  # type: ignore[arg-type]
        else:
            kernels.step_quantiles(
                state.step_cdf,
                state.latency_cdf,
                state.ramp_cdf,
                ramp_open,
                limits,
                distributions.GRID,
                state.route_block,
                1,
            )
        states.append(state)
    a, b = states
    assert np.array_equal(a.route_block, b.route_block)
    quantiles = a.route_block[:, P50_AT : P50_AT + 4]
    assert (quantiles[1:, :, 1] >= 0).all() and (quantiles[0] == -1).all()
    assert (np.delete(a.route_block, np.s_[P50_AT : P50_AT + 4], axis=1) == -1).all()  # no other series
    assert np.array_equal(a.latency_cdf.view(np.int64), b.latency_cdf.view(np.int64))
    assert np.array_equal(a.ramp_cdf.view(np.int64), b.ramp_cdf.view(np.int64))


def test_a_probe_slower_than_its_period_keeps_one_tick_waiting_in_both_forms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kernels_probes.probe_tick against ProbeWorkers.step's numpy form where its branches
    differ: readiness every 2 s taking about 3 s on a loaded container (its next tick fires while
    it runs and waits, buffered, for it to finish), steady liveness passes counted as runs."""
    buffered: list[bool] = []
    tick = kernels.probe_tick

    def seen(*args: Any) -> Any:
        buffered.append(bool(args[10]))  # buffered_any as the tick began
        return tick(*args)

    monkeypatch.setattr(kernels, "probe_tick", seen)
    container = {
        "name": "app",
        "image": "example.com/app:1",
        "ports": [{"containerPort": 8080, "name": "http"}],
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m"}},
        "readinessProbe": {
            "httpGet": {"path": "/slow", "port": 8080},
            "periodSeconds": 2,
            "timeoutSeconds": 5,
        },
        "livenessProbe": {
            "httpGet": {"path": "/live", "port": 8080},
            "periodSeconds": 1,
            "failureThreshold": 3,
        },
    }
    behavior = {
        "routes": {"/": {"cpu": "5ms"}, "/slow": {"cpu": "1500ms"}, "/live": {"cpu": "1ms"}},
        "capacity": {"probes": "shared", "workers": 4, "queue": 20},
    }
    sc = scenario(
        containers=[container],
        behavior=behavior,
        replicas=2,
        duration="40s",
        traffic=[{"name": "a", "rate": 5, "timeout": "2s"}],
    )
    numpys, kernels_ = both(sc)
    assert numpys == kernels_
    assert any(buffered) and not all(buffered)


@settings(max_examples=150, deadline=None)
@given(
    kk=st.integers(2, 5),
    n=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([3, 40, 1_000, 10**6]),
    skew=st.floats(0.0, 1.0),
)
def test_the_class_split_draws_numpys_binomials_in_numpys_order(
    kk: int, n: int, seed: int, scale: int, skew: float
) -> None:
    # Counts small and large (the inversion and BTPE algorithms), shares below and above a half
    # (numpy draws 1 - p and flips), zero counts and zero shares (no draw), containers skipped.
    g = np.random.default_rng(seed)
    containers = np.flatnonzero(g.random(n) < 0.8).astype(np.int64)
    take = g.integers(0, scale, containers.size).astype(np.int64)
    take[g.random(containers.size) < 0.2] = 0
    raw = g.random((kk, n)) ** (1 + 4 * skew)
    raw[:, g.random(n) < 0.2] *= np.eye(kk)[:, :1]  # all to the first class on some
    prob = np.ascontiguousarray(raw / raw.sum(axis=0), np.float64)
    backlog_np = g.integers(0, 5, (kk + 3, n)).astype(np.int64)
    backlog_nb = backlog_np.copy()
    a, b = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    capacity.split_classes(a, backlog_np, prob, containers, take, 2)  # the numpy form accept runs
    kernels.split_classes(b, backlog_nb, prob, containers, take, 2)
    assert (backlog_np == backlog_nb).all()
    assert a.bit_generator.state == b.bit_generator.state  # the same draws made, no more
