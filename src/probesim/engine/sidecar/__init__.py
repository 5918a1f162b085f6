"""Client sidecars (Envoy as Istio configures it) in front of a Service's endpoints: the
engine's simulation of the mesh's data plane (the Istio objects and their Envoy configuration
are ``probesim.mesh``'s). Each client population decides alone. Per client and step, counts only:

- load balancing over the endpoints that are not ejected (round robin continuing from its index,
  least request and random as an even or drawn split), with the panic threshold (§3.2-3.3);
- outlier detection: consecutive 5xx, gateway and (split mode) local-origin errors counted per
  host as results arrive, detection at the Nth (immediate, §2.3) within the cap that counts the
  host being ejected (§2.4), ejection time base × multiplier capped at max, unejection, success
  rate, failure percentage and multiplier decay only on interval ticks (§2.5-2.8);
- host health reaching the load balancer through the cluster manager's merge window: a change
  within a window of the last one waits for the window's end;
- hosts that leave the cluster (out of the endpoints) lose their monitor and ejection;
- a timed-out request reaching its host's monitor when the route's timer fires (the request's
  time + the timeout), not when it was sent;
- fault injection before sending: delays hold the request before the router (hold.py), outside
  the route's timeout and inside the client's; aborts never reach a host (no outlier update,
  no retry, §5.1);
- retries of what the route's retry_on names (Istio's default: connect failures), each retry's
  host picked through the load balancer (round robin: retry.py), their failed tries and
  back-offs in the retried requests' latency;
- mirroring as counted copies;
- traffic splits (a VirtualService route's weighted destinations: subsets of a DestinationRule,
  other hosts): a cluster per destination, each with its sidecars' own load balancer and
  detector (SplitRoute), the requests of a step shared out by weight deterministically.

A client's requests in a step are spread evenly over it (the route's k-th request of the step at
``t + k × step / n``, client ``k mod clients``), and the step is cut at each change a request can
see (an ejection, a tick, a delivered health update), so a host gets exactly the errors it
returns before its ejection reaches the load balancer, and ejections carry the time of the
request that caused them whatever the step.

The modules, by what they own:

- outlier.py: the outlier detection settings (Detector), each client's per-host state (Client),
  the route's Envoy counters (SidecarStats);
- ejection.py: the detection over those states (OutlierMonitor): counters, the interval timer,
  the cap and enforcement, the merge window, the event log;
- policy.py: what the VirtualService route asks (RoutePolicy): faults, retries, timeouts,
  mirroring;
- route.py: one cluster's sidecars (MeshRoute), the per-step driver: load balancing, panic, and
  each step's requests through the policy and the monitor;
- retry.py: retries through round robin (RetryWalk, WalkRun);
- hold.py: requests a fault delay holds (SidecarHold);
- pool.py: kept-alive connections to a dead host: the request that hangs on one, least
  request's odds while it does;
- split.py: weighted destinations (SplitRoute, weighted_counts);
- build.py: the sidecars of a scenario's routes from its Istio objects (build_mesh, istio_for).

Nothing is imported here, so that importing one module loads only what it needs.
"""
