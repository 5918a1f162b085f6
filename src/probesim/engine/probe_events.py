"""The events a probe type's runs give, worded as the kubelet's prober words them (reference/
kubelet.md): handler errors and redirect warnings, and an Unhealthy event per failed run, each
distinct message made once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from probesim.engine.events import EventLog
from probesim.engine.fleet import EXEC, GRPC, HTTP, TCP, Fleet, ProbeSpecArrays
from probesim.kube.outcomes import Outcome

I64 = npt.NDArray[np.int64]


class ProbeEvents:
    """The events of one probe type's workers (``title``: Startup, Readiness, Liveness)."""

    def __init__(self, title: str, fleet: Fleet, spec: ProbeSpecArrays) -> None:
        self.title, self.fleet, self.spec = title, fleet, spec
        self._said: dict[tuple[str, int, int, int, int], str] = {}  # Unhealthy messages made
        self._said_by: dict[tuple[int, int, int], str] = {}  # the same, by (container, why, status)
        self._objects: tuple[EventLog | None, list[str]] = (None, [])  # per pod: "pod/<name>"

    def events(
        self, errored: I64, warned: I64, failed: I64, why: I64, status: I64, t: int, log: EventLog
    ) -> None:
        """The events of finished runs: handler errors, redirect warnings, then failures (each
        failed run's Outcome and HTTP status in ``why`` and ``status``, per worker)."""
        for c in errored.tolist():
            pod, _ = self.fleet.container_label(c)
            msg = f"{self.title} probe errored and resulted in unknown state: {self.spec.error[c]}"
            log.add(t, "Warning", "Unhealthy", f"pod/{pod}", msg)
        for c in warned.tolist():
            pod, _ = self.fleet.container_label(c)
            msg = f"{self.title} probe warning: Probe terminated redirects, Response body: "
            log.add(t, "Warning", "ProbeWarning", f"pod/{pod}", msg)
        if failed.size:
            self._unhealthy(failed, why, status, t, log)

    def _unhealthy(self, idx: I64, why_of: I64, status_of: I64, t: int, log: EventLog) -> None:
        """An Unhealthy event for each failed run of ``idx``, worded as the kubelet's prober."""
        s = self.spec
        f = self.fleet
        add, text = log.rows.append, log.text  # EventLog.add inlined: thousands a step when overloaded
        if self._objects[0] is not log:
            # Each pod's object name, made once (one copy in the log's text).
            self._objects = (log, [text.setdefault(o, o) for o in ["pod/" + name for name in f.pod_names]])
        objects = self._objects[1]
        said_by = self._said_by
        for c, pod, why, status in zip(
            idx.tolist(),
            f.container_pod[idx].tolist(),
            why_of[idx].tolist(),
            status_of[idx].tolist(),
            strict=True,
        ):
            said = said_by.get((c, why, status))
            if said is None:
                # The wording is a function of these alone: each distinct message is made once.
                where, h, tmo = s.describe[c], int(s.handler[c]), int(s.timeout[c] // 1000)
                key = (where, h, why, status, tmo)
                said = self._said.get(key)
                if said is None:
                    said = self._message(where, h, why, status, tmo)
                    said = self._said[key] = text.setdefault(said, said)
                said_by[(c, why, status)] = said
            add((t, "Warning", "Unhealthy", objects[pod], said, "kubelet"))

    def _message(self, where: str, h: int, why: int, status: int, tmo: int) -> str:
        """An Unhealthy event's message, as the kubelet's prober words it."""
        if h == HTTP:
            if why == Outcome.REFUSED:
                msg = f'Get "{where}": dial tcp {where.split("/")[2]}: connect: connection refused'
            elif why == Outcome.NO_ANSWER:
                msg = (
                    f'Get "{where}": context deadline exceeded '
                    "(Client.Timeout exceeded while awaiting headers)"
                )
            elif status >= 0:
                msg = f"HTTP probe failed with statuscode: {status}"
            else:
                msg = f'Get "{where}": stopped after 10 redirects'
        elif h == TCP:
            msg = f"dial tcp {where}: connect: connection refused"
        elif h == GRPC:
            msg = {
                Outcome.REFUSED: f'timeout: failed to connect service "{where}" within {tmo}s',
                Outcome.NO_ANSWER: f"timeout: health rpc did not complete within {tmo}s",
                Outcome.ERROR_STATUS: 'service unhealthy (responded with "NOT_SERVING")',
            }[Outcome(why)]
        else:
            assert h == EXEC
            msg = {
                Outcome.REFUSED: f'command "{where}" exited with code 1',
                Outcome.NO_ANSWER: f'command timed out: "{where}" timed out after {tmo}s',
                Outcome.ERROR_STATUS: f'command "{where}" exited with code 1',
            }[Outcome(why)]
        return f"{self.title} probe failed: {msg}"
