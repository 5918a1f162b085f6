"""What each container's process does, as arrays: started or not, hung, answering which status.

A scenario's ``ContainerBehavior`` objects are compiled into a few profiles; every container
has one. State is re-evaluated only at the next time any container's state can change (start
completes, an episode begins or ends), so steady ticks cost nothing here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from probesim.engine.arrays import distinct
from probesim.model.scenario import ContainerBehavior, Crash, Deadlock, Errors, Hang, generic

INF = np.int64(2**62)
I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class _Window:
    by_age: bool  # anchored to container age (recurs per instance) or to the scenario clock
    begin: int
    end: int  # INF: never ends
    accepts_tcp: bool = True
    status: int = 0
    paths: tuple[str, ...] | None = None  # None: every target
    # A deadlock at a scenario time holds the process running then; an instance started at or
    # after it (its restart) is a fresh process that answers.
    older_only: bool = False


@dataclass
class Profile:
    start: int
    starting_status: int  # 0: connections refused while starting
    shutdown: int
    ignores_sigterm: bool
    paths: dict[str, int]
    redirects: dict[str, str] = field(default_factory=dict)
    hangs: list[_Window] = field(default_factory=list)
    errors: list[_Window] = field(default_factory=list)
    crashes: list[tuple[bool, int, int]] = field(default_factory=list)  # (by_age, at, exit code)

    @classmethod
    def compile(cls, b: ContainerBehavior) -> Profile:
        paths = {**dict.fromkeys(b.redirects, 302), **b.paths}
        p = cls(b.start, b.starting_status or 0, b.shutdown, b.ignores_sigterm, paths, dict(b.redirects))
        for ep in b.episodes:
            by_age = ep.after is not None
            begin = ep.after if ep.after is not None else ep.at
            assert begin is not None
            if isinstance(ep, Hang | Deadlock):
                end = begin + ep.for_ if isinstance(ep, Hang) else int(INF)
                once = isinstance(ep, Deadlock) and not by_age
                p.hangs.append(_Window(by_age, begin, end, accepts_tcp=ep.accepts_tcp, older_only=once))
            elif isinstance(ep, Errors):
                end = begin + ep.for_ if ep.for_ is not None else int(INF)
                p.errors.append(_Window(by_age, begin, end, status=ep.status, paths=ep.paths))
            elif isinstance(ep, Crash):
                p.crashes.append((by_age, begin, ep.exit_code))
        return p

    def boundaries(self) -> tuple[list[int], list[int]]:
        """Ages and scenario times at which this profile's state can change."""
        ages = [self.start] + [x for w in (*self.hangs, *self.errors) if w.by_age for x in (w.begin, w.end)]
        times = [x for w in (*self.hangs, *self.errors) if not w.by_age for x in (w.begin, w.end)]
        return ages, times


class Behaviors:
    """Per-container behaviour state over all containers of the run."""

    def __init__(self, profiles: list[Profile], profile_of: I64, targets: list[str]) -> None:
        self.profiles = profiles
        self.members = [np.flatnonzero(profile_of == k) for k in range(len(profiles))]
        self.targets = {t: i for i, t in enumerate(targets)}
        n = len(profile_of)
        self.profile_of = profile_of
        self.ignores_sigterm = np.array([profiles[k].ignores_sigterm for k in profile_of], bool)
        self.shutdown = np.array([p.shutdown for p in profiles], np.int64)  # per profile
        self.listening = np.zeros(n, bool)
        self.hung = np.zeros(n, bool)
        self.hang_end = np.zeros(n, np.int64)
        self.status = np.full((len(targets), n), 200, np.int64)  # answer per target when not hung
        # A redirect to another host ended the chain: a probe passes with a ProbeWarning.
        self.offhost = np.zeros((len(targets), n), bool)
        self.wakeup = np.int64(0)
        self.any_crashes = any(p.crashes for p in profiles)
        self.epoch = 0  # bumps at every evaluation (what probes find may have changed)
        self.evaluated: tuple[int, B, I64] | None = None  # the last evaluation's time, running, started_at

    def target(self, name: str) -> int:
        return self.targets[name]

    def evaluate(self, t: int, running: B, started_at: I64) -> None:
        """Recompute every container's state at time ``t`` and the next time it can change.
        ``running``: the process is up and serving (not exited, not shutting down)."""
        wake = INF
        for k, prof in enumerate(self.profiles):
            m = self.members[k]
            if m.size == 0:
                continue
            age = t - started_at[m]
            run = running[m]
            starting = age < prof.start
            hung = np.zeros(m.size, bool)
            hang_end = np.zeros(m.size, np.int64)
            refuses = np.zeros(m.size, bool)
            for w in prof.hangs:
                cov = _covers(w, age, t)
                if w.older_only:
                    cov &= started_at[m] < w.begin
                hung |= cov
                hang_end = np.where(cov, np.maximum(hang_end, _end(w, started_at[m])), hang_end)
                if not w.accepts_tcp:
                    refuses |= cov
            hung &= run & ~starting
            listening = run & (~starting | (prof.starting_status > 0)) & ~(hung & refuses)
            self.listening[m] = listening
            self.hung[m] = hung
            self.hang_end[m] = hang_end
            for name, i in self.targets.items():
                st = np.full(m.size, prof.paths.get(name, prof.paths.get(generic(name), 200)), np.int64)
                for w in prof.errors:
                    if w.paths is None or name in w.paths or generic(name) in w.paths:
                        st = np.where(_covers(w, age, t), w.status, st)
                if prof.starting_status:
                    st = np.where(starting, prof.starting_status, st)
                self.status[i, m] = st
            if prof.redirects:
                self._follow(prof, m)
            wake = min(wake, _next_change(prof, t, age, run, started_at[m]))
        self.wakeup = wake
        self.epoch += 1
        self.evaluated = (t, running.copy(), started_at.copy())

    def taking_over(self, state: Behaviors) -> Behaviors:
        """These profiles with ``state``'s containers as they are now (what they answer, hung
        or not, how many evaluations): a run gone on as a scenario whose episodes differ from
        its own only from now on (engine/warm.py). The next change is these profiles' own, as
        their last evaluation would have found it."""
        for name in ("listening", "hung", "hang_end", "status", "offhost", "epoch", "evaluated"):
            setattr(self, name, getattr(state, name))
        self.wakeup = np.int64(0)  # (never evaluated: the first step does)
        if self.evaluated is not None:
            t, running, started_at = self.evaluated
            wake = INF
            for k, prof in enumerate(self.profiles):
                m = self.members[k]
                if m.size:
                    wake = min(wake, _next_change(prof, t, t - started_at[m], running[m], started_at[m]))
            self.wakeup = wake
        return self

    def _follow(self, prof: Profile, m: I64) -> None:
        """Answers of redirecting paths as a client following them sees them (the kubelet's
        prober, k6): a same-host Location is followed, up to 10 hops (the 11th is an error, -1);
        an absolute URL is another host, not followed (reference/kubelet.md §1.3.12-13)."""
        raw = self.status[:, m].copy()
        for name, i in self.targets.items():
            if name not in prof.redirects:
                continue
            final = raw[i].copy()
            active = (final >= 300) & (final < 400)
            offhost = np.zeros(m.size, bool)
            cur = name
            for _hop in range(11):
                loc = prof.redirects.get(cur)
                if loc is None or not active.any():
                    break
                if _HOST.match(loc):
                    offhost |= active
                    break
                if _hop == 10:
                    final = np.where(active, -1, final)  # "stopped after 10 redirects"
                    break
                cur = loc.split("?")[0]
                nxt = raw[self.targets[cur]]
                final = np.where(active, nxt, final)
                active &= (nxt >= 300) & (nxt < 400)
            self.status[i, m] = final
            self.offhost[i, m] = offhost

    def crash_at(self, idx: I64, started_at: I64) -> tuple[I64, I64]:
        """For containers ``idx`` that just started: when their process exits by itself, and the
        exit code. A clock-anchored crash hits only an instance started before it."""
        when = np.full(idx.size, INF, np.int64)
        code = np.zeros(idx.size, np.int64)
        if not self.any_crashes:  # no profile crashes by itself
            return when, code
        prof_ids = self.profile_of[idx]
        for k in distinct(prof_ids):
            sel = prof_ids == k
            st = started_at[idx[sel]]
            w = np.full(st.size, INF, np.int64)
            c = np.zeros(st.size, np.int64)
            for by_age, at, exit_code in self.profiles[k].crashes:
                cand = st + at if by_age else np.where(st < at, at, INF)
                c = np.where(cand < w, exit_code, c)
                w = np.minimum(w, cand)
            when[sel], code[sel] = w, c
        return when, code

    def stop_time(self, idx: I64, grace: I64) -> I64:
        """How long containers ``idx`` take to exit once killed with grace period ``grace``."""
        shutdown = self.shutdown[self.profile_of[idx]]
        return np.where(self.ignores_sigterm[idx], grace, np.minimum(shutdown, grace))


_HOST = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def redirect_targets(b: ContainerBehavior) -> list[str]:
    """The same-host paths ``b``'s redirects lead to (they are answered like any path)."""
    return [loc.split("?")[0] for loc in b.redirects.values() if not _HOST.match(loc)]


def _next_change(prof: Profile, t: int, age: I64, running: B, started_at: I64) -> np.int64:
    """The next time after ``t`` at which ``prof``'s containers (their ages at ``t``, whether
    they run, when they started) can change state: its start or an episode's boundary."""
    wake = INF
    ages, times = prof.boundaries()
    for a in ages:
        later = running & (age < a)
        if later.any():
            wake = min(wake, np.int64((started_at[later] + a).min()))
    for x in times:
        if x > t:
            wake = min(wake, np.int64(x))
    return wake


def _covers(w: _Window, age: I64, t: int) -> B:
    if w.by_age:
        return (age >= w.begin) & (age < w.end)
    return np.full(age.shape, w.begin <= t < w.end)


def _end(w: _Window, started_at: I64) -> I64:
    if w.end >= INF:
        return np.full(started_at.shape, INF, np.int64)
    return started_at + w.end if w.by_age else np.full(started_at.shape, w.end, np.int64)
