"""The lab: real processes and sockets on 127.0.0.1 acting out a scenario (the test app first)."""
