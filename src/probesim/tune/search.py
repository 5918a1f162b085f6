"""How the study chooses its next trial, besides Optuna's sampler: the seeded first trials and a
local search around the best setting found so far.

The first trials are seeded: the current setting and the setting ``probesim check``'s own fixes
make (each repaired onto what the probe rules accept, and put on the space's bounds). Up to
``STARTUP_TRIALS`` the sampler draws at random; from then on each trial is a *move* from the
incumbent — the best eligible setting so far, by the recommendation's own order (:func:`ranked`)
— to a neighbour not yet simulated: one parameter one step up or down (a period or the startup
probe's threshold by a fifth of its value, at least 1; an initialDelaySeconds by its step of 5),
a startup probe or outlier detection added or removed. A move that improved is tried again
twice as far first (a pattern move), and the parameters are tried on from the one that improved
(cyclic coordinate search). Once no such move is left untried, a probe's failureThreshold
moves with its timeout or its period (:func:`pairs`: the fields the timing model couples). When
every one of those has been simulated too the incumbent is a local optimum, and the trial is
the sampler's (TPE), to look elsewhere; so is every ``EXPLORE_EVERY``-th trial. A better setting
found there starts the moves again from it. What the next trial is depends only on the trials already in
the study, as the sampler's draws do: a study grown in two runs equals one grown in one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna

from probesim.tune.figures import Figures, budget_cost
from probesim.tune.space import OUTLIER_BOUNDS, PROBE_BOUNDS, Bound, Setting, Space

STARTUP_TRIALS = 10  # seeded trials, then random ones, before the moves start
EXPLORE_EVERY = 4  # every 4th trial after them is the sampler's, wherever the moves are
FAILURE_TOLERANCE = 0.01  # failures within 1 % (or 5, or chance: slack_of) of the fewest count as equal
FAILURE_SLACK = 5
# What an outlier detection added by a move starts from (the rules' fix: maxEjectionPercent 50).
OUTLIER_START = {"consecutive5xxErrors": 5, "interval": 10, "baseEjectionTime": 30, "maxEjectionPercent": 50}


# The API's defaults for a probe's timings, with no initial delay: a seeded trial.
API_DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3,
                "successThreshold": 1}  # fmt: skip


def api_defaults(current: Setting) -> Setting:
    """``current`` with its readiness and liveness probes at the API's default timings (a
    startup probe it has kept as it is)."""
    probes = {
        c: {f: t if f == "startupProbe" else {**t, **API_DEFAULTS} for f, t in ps.items()}
        for c, ps in current.probes.items()
    }
    return Setting(probes, current.outlier)


def setting_key(s: Setting) -> str:
    """A setting as one string: two trials with the same key simulate the same manifests."""
    return json.dumps([s.probes, s.outlier], sort_keys=True)


def slack_of(fewest: int) -> int:
    """How many more failed requests than the fewest still count as as few: 1 %, 5, or what
    two counts of chance failures differ by at random — twice the spread of the difference of
    two Poisson counts near the fewest, 2·√(2·fewest) (22 against 32 failed requests are the
    same setting's luck: other seeds give 26 against 29, 29 against 30)."""
    return max(FAILURE_SLACK, int(FAILURE_TOLERANCE * fewest), int(2 * math.sqrt(2 * fewest)))


@dataclass(frozen=True)
class Ranked:
    """What the recommendation orders settings by, for one set of them."""

    fewest: int  # the fewest failed requests among them
    slack: int
    fewest_own: int = 0  # the fewest failed requests in the user's own scenario
    slack_own: int = 0

    def key(self, f: Figures, tie: tuple[Any, ...] = ()) -> tuple[Any, ...]:
        """The user's own scenario first: its failed requests within the slack of the fewest;
        then failed requests over every run within the slack of the fewest, the fewest needless
        restarts and readiness flaps, the least spent of the budgets, the hung pod out soonest,
        the fewest failed; then ``tie``."""
        cost = round(budget_cost(f), 6)
        needless = f.restarts + f.flaps
        own = f.scenario_failed > self.fewest_own + self.slack_own
        return (own, f.failed > self.fewest + self.slack, needless, cost, f.detection_s, f.failed, *tie)


def ranked(figures: Sequence[Figures]) -> Ranked:
    fewest = min((f.failed for f in figures), default=0)
    own = min((f.scenario_failed for f in figures), default=0)
    return Ranked(fewest, slack_of(fewest), own, slack_of(own))


def _bound(name: str) -> Bound | None:
    parts = name.split(".")
    if parts[0] == "outlier" and len(parts) == 2:
        return OUTLIER_BOUNDS.get(parts[1])
    if len(parts) == 3 and parts[1] in PROBE_BOUNDS:
        return PROBE_BOUNDS[parts[1]].get(parts[2])
    return None


def _step(b: Bound, v: int) -> int:
    """A fifth of the value, on the bound's steps, at least one step."""
    return max(b.step, round(v / 5 / b.step) * b.step)


def neighbours(
    space: Space, params: dict[str, Any], first: tuple[str, int] | None
) -> list[tuple[str, int, dict[str, Any]]]:
    """The moves from ``params``, in a fixed order: ``first`` (the move that led to them, as
    (name, delta)) again twice as far, then each parameter one step down and one up, in sampling
    order from ``first``'s parameter on (cyclic coordinate search: the parameters before it were
    tried last). A move is (parameter, delta — 0 for a toggle —, the parameters it leads to)."""
    out: list[tuple[str, int, dict[str, Any]]] = []
    if first is not None and first[0] in params and first[1] != 0:
        name, delta = first
        b = _bound(name)
        if b is not None:
            v = b.nearest(params[name] + 2 * delta)
            if v != params[name]:
                out.append((name, 2 * delta, {**params, name: v}))
    names = list(params)
    if first is not None and first[0] in params:  # on from the parameter that last improved
        at = names.index(first[0])
        names = names[at:] + names[:at]
    for name in names:
        v = params[name]
        if isinstance(v, bool):
            out.append((name, 0, _toggled(space, params, name)))
            continue
        b = _bound(name)
        if b is None:
            continue
        for sign in (-1, 1):
            delta = sign * _step(b, v)
            w = b.nearest(v + delta)
            if w != v:
                out.append((name, delta, {**params, name: w}))
    return out


# The pairs a probe's timing model couples (analysis/rules/timing.py: it acts after period ×
# failureThreshold + timeout): the threshold traded against the timeout, then against the period.
PAIRS = (("failureThreshold", "timeoutSeconds"), ("failureThreshold", "periodSeconds"))


def pairs(params: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """The wider moves, tried once no single move improves: a probe's failureThreshold one step
    with its timeout, then with its period, one step each in every direction — a threshold of 1
    may pay only with a longer timeout (a 2 s pause no longer fails it), which neither move alone
    shows."""
    out: list[tuple[str, int, dict[str, Any]]] = []
    for x, y in PAIRS:
        for a in [n for n in params if n.endswith("." + x) and _bound(n) is not None]:
            b = a.removesuffix(x) + y
            ba, bb = _bound(a), _bound(b)
            if b not in params or ba is None or bb is None:
                continue
            for sa in (-1, 1):
                for sb in (-1, 1):
                    va = ba.nearest(params[a] + sa * _step(ba, params[a]))
                    vb = bb.nearest(params[b] + sb * _step(bb, params[b]))
                    if va != params[a] and vb != params[b]:
                        out.append((f"{a}+{y}", 0, {**params, a: va, b: vb}))
    return out


def _toggled(space: Space, params: dict[str, Any], name: str) -> dict[str, Any]:
    """``params`` with the startup probe (``C.startup.add``) or the outlier detection
    (``outlier.add``) added or removed; one added starts from the liveness probe's timings (a
    startup probe) or from ``OUTLIER_START``."""
    prefix = name.removesuffix(".add")
    out = {k: v for k, v in params.items() if not k.startswith(prefix + ".")}
    out[name] = not params[name]
    if not out[name]:
        return out
    if prefix == "outlier":
        bounds = {k: b for k, b in OUTLIER_BOUNDS.items() if k != "consecutiveGatewayErrors"}
        return {**out, **{f"outlier.{k}": b.nearest(OUTLIER_START[k]) for k, b in bounds.items()}}
    container = prefix.removesuffix(".startup")
    live = {k.rsplit(".", 1)[1]: v for k, v in params.items() if k.startswith(f"{container}.liveness.")}
    added = {f"{prefix}.{k}": b.nearest(live.get(k, b.low)) for k, b in PROBE_BOUNDS["startup"].items()}
    return {**out, **added}


@dataclass(frozen=True)
class Done:
    """A completed trial as the search reads it."""

    number: int
    params: dict[str, Any]
    setting: Setting
    figures: Figures
    eligible: bool
    move: tuple[str, int] | None


def incumbent(done: Sequence[Done]) -> Done | None:
    """The best eligible trial by the recommendation's order (ties: the earlier trial)."""
    ok = [d for d in done if d.eligible]
    if not ok:
        return None
    order = ranked([d.figures for d in ok])
    return min(ok, key=lambda d: order.key(d.figures, (d.number,)))


def next_trial(
    space: Space,
    done: Sequence[Done],
    number: int,
    seeds: Sequence[Setting],
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The parameters (and user attributes) to enqueue as trial ``number``, or None to let the
    sampler draw it: a seed, then (after STARTUP_TRIALS) the incumbent's first neighbour not yet
    simulated."""
    if number < len(seeds):
        return space.params_of(seeds[number]), {"origin": "seed"}
    if number < STARTUP_TRIALS or number % EXPLORE_EVERY == EXPLORE_EVERY - 1:
        return None
    best = incumbent(done)
    if best is None:
        return None
    seen = {setting_key(d.setting) for d in done}
    now = space.params_of(best.setting)
    for name, delta, params in [*neighbours(space, now, best.move), *pairs(now)]:
        s = space.sample(optuna.trial.FixedTrial(params))
        if setting_key(s) not in seen:
            return params, {"origin": "move", "move": [name, delta], "from": best.number}
    return None


def read(t: optuna.trial.FrozenTrial, eligible: Callable[[Setting], bool]) -> Done:
    s = t.user_attrs["setting"]
    setting = Setting(s["probes"], s["outlier"])
    ok = t.user_attrs.get("eligible")
    move = t.user_attrs.get("move")
    return Done(
        t.number,
        dict(t.params),
        setting,
        Figures.from_json(t.user_attrs["figures"]),
        eligible(setting) if ok is None else bool(ok),
        (str(move[0]), int(move[1])) if move else None,
    )
