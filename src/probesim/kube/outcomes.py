"""What a probe or a request meets at a container, as one code (Outcome): the kubelet's probe
workers say why a run failed with it, the traffic step files each endpoint's requests under it
(``np.bincount`` over the codes: the values are array indices), and the client sidecars read it
per host.

The request codes are 1-4 (0 is no code: a pod that is no endpoint); a probe's handler error
has no request counterpart, so it comes after them, and so does the sidecars' view of a host on
a failed node.
"""

from __future__ import annotations

from enum import IntEnum


class Outcome(IntEnum):
    REFUSED = 1  # nothing listening: the connection is refused (a probe's exec exits 1)
    NO_ANSWER = 2  # connected, no answer in time: a hung app, or a probe slower than its timeout
    ERROR_STATUS = 3  # answered with an error status (HTTP outside 200-399, gRPC NOT_SERVING)
    OK = 4  # answered well
    HANDLER_ERROR = 5  # probes only: the handler could not run (a named port not found)
    # Client sidecars only: a host nothing reaches (its node failed): no answer and no reset, so
    # a new connection times out (a request is NO_ANSWER to the traffic's books).
    UNREACHABLE = 6


# The length of a per-outcome count of requests (index = code, 0 unused).
REQUEST_CODES = Outcome.OK + 1

# The codes as plain ints, for the engine's array work: numpy looks an IntEnum member's class
# up for its array protocols, each miss through EnumType.__getattr__ (about 3 µs a comparison
# or np.where, several a step).
REFUSED, NO_ANSWER, ERROR_STATUS, OK, HANDLER_ERROR, UNREACHABLE = (int(o) for o in Outcome)
