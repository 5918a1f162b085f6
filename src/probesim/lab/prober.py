"""The lab's prober: a worker per probe of each pod, as the kubelet runs them (reference/kubelet.md
§2): a ticker from pod admission, the initial results, on-hold, the initial delay from the
container's start, startup gating, consecutive thresholds, readiness triggered at a container
start or a result change. A probe's result that changes is reported: to the status manager
(Ready, endpoints) and, for a failed liveness or startup probe, to the runtime, which kills."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from probesim.consecutive import next_run, reaches_threshold
from probesim.kube.ports import container_port
from probesim.lab.clock import Clock
from probesim.lab.pods import Pod, Worker
from probesim.lab.probes import Outcome, exec_check, grpc_check, http_check, tcp_check
from probesim.lab.runtime import Runtime
from probesim.lab.status import StatusManager, started

INITIAL = {"startup": None, "readiness": False, "liveness": True}  # Unknown, Failure, Success


async def execute(pod: Pod, w: Worker) -> Outcome:
    """The probe's handler against the pod's ports."""
    p = w.probe
    timeout = p.timeout_seconds
    if p.http_get is not None:
        if container_port(pod.container, p.http_get.port) is None:
            return "error", f"unknown port {p.http_get.port}"
        return await http_check(pod.port, p.http_get, timeout)
    if p.tcp_socket is not None:
        return await tcp_check(pod.port, timeout)
    if p.grpc is not None and pod.grpc_port is not None:
        return await grpc_check(pod.grpc_port, p.grpc.service or "", timeout)
    if p.exec is not None:
        return await exec_check(p.exec, timeout)
    return "error", "no handler"


class Prober:
    def __init__(self, clock: Clock, status: StatusManager, runtime: Runtime) -> None:
        self.clock = clock
        self.status = status
        self.runtime = runtime
        # Told every probe's result (lab --prometheus's prober metrics): the pod, the probe's
        # kind, True/False (success, warning / failure) and how long it took.
        self.on_result: Callable[[Pod, str, bool, float], None] | None = None

    async def worker(self, pod: Pod, w: Worker, resumed: bool = False) -> None:
        """One probe's worker: a run at creation, then one per tick of a ticker anchored at the
        creation; readiness also runs on a manual trigger — a pod sync while the container is
        started and not Ready — which resets the ticker; a trigger that comes while its probe
        is in flight runs when it returns, keeping the ticker (§2.1). ``resumed``: the worker
        of a pod whose node is back (its kubelet running again), its ticker anchored now."""
        if resumed:
            admitted = time.monotonic()
        else:
            await self.probe(pod, w)  # at admission: no container yet, no result
            await pod.first_start.wait()
            admitted = pod.run.started_at  # the simulation admits and starts in the same instant
        k = 1
        while True:
            tick = admitted + k * w.probe.period_seconds
            if w.kind == "readiness":
                try:
                    await asyncio.wait_for(pod.wake.wait(), max(0.0, tick - time.monotonic()))
                    pod.wake.clear()
                    if not self.wants_trigger(pod, w):
                        continue
                    admitted, k = time.monotonic(), 1  # a triggered run restarts the ticker
                except TimeoutError:
                    k += 1
            else:
                await asyncio.sleep(max(0.0, tick - time.monotonic()))
                k += 1
            await self.probe(pod, w)
            if w.kind == "readiness" and pod.wake.is_set():  # buffered while in flight
                pod.wake.clear()
                if self.wants_trigger(pod, w):
                    await self.probe(pod, w)

    def wants_trigger(self, pod: Pod, w: Worker) -> bool:
        killed = pod.run.killing and not pod.run.in_hook
        return started(pod) and not killed and not (w.seen == pod.run.instance and w.cached is True)

    async def probe(self, pod: Pod, w: Worker) -> None:
        """One run of the worker; a result that reaches its threshold is reported."""
        if pod.run.instance < 0:
            return
        if w.seen != pod.run.instance:
            w.seen, w.cached, w.on_hold = pod.run.instance, INITIAL[w.kind], False
        if w.on_hold:
            return
        if pod.run.proc is None or (pod.run.killing and not pod.run.in_hook):
            w.cached = False  # (probed as it serves through its preStop hook, as simulated)
            return
        if int(time.monotonic() - pod.run.started_at) < w.probe.initial_delay_seconds:
            return
        if (w.kind == "startup") == started(pod):
            return
        instance = pod.run.instance
        began = time.monotonic()
        result, why = await execute(pod, w)
        if result == "error":
            return  # a handler error is thrown away (and counted nowhere, as doProbe's)
        ok = result != "failure"
        if self.on_result is not None:
            self.on_result(pod, w.kind, ok, time.monotonic() - began)
        if result == "warning":
            self.clock.event("Warning", "ProbeWarning", pod, f"{w.kind.capitalize()} probe warning: {why}")
        if not ok:
            self.clock.event("Warning", "Unhealthy", pod, f"{w.kind.capitalize()} probe failed: {why}")
        w.run = int(next_run(w.last, w.run, ok)) if w.run else 1
        w.last = ok
        if not bool(reaches_threshold(ok, w.run, w.probe.success_threshold, w.probe.failure_threshold)):
            return
        if pod.run.instance == instance:
            if w.cached != ok:  # a result change is a pod sync, which triggers readiness just
                asyncio.get_running_loop().call_soon(pod.wake.set)  # after this probe is done
            w.cached = ok
            self.status.update()
        if (w.kind == "liveness" and not ok) or w.kind == "startup":
            w.on_hold, w.run = True, 0
        if not ok and w.kind in ("liveness", "startup") and pod.run.instance == instance:
            self.runtime.kill(pod, w.kind)
        if w.kind == "startup" and ok:
            pod.wake.set()  # the sync after startup success triggers readiness
