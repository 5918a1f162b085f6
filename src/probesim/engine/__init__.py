"""The simulator: a fixed-step loop over vectorized state. ``simulate(scenario)`` → Result.

Never reads files, never prints; same scenario and seed give the same Result, bit for bit.
"""

from probesim.engine.loop import simulate

__all__ = ["simulate"]
