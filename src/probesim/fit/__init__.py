"""probesim fit: a workload's behaviour fitted to its own telemetry, written as a scenario.

- queries.py: the PromQL queries fit runs (from the metric names users have, or a mapping file)
- prometheus.py: their answers, from a live server's HTTP API or from saved API responses
- kubectl.py: container starts, Ready times and restarts from ``kubectl get pods -o json``
- k6.py: the traffic k6 sent, from its ``--out json`` lines or its ``--summary-export``
- estimate.py: each value fitted, with where it came from and how well it fits
- command.py: the fitted scenario written (and with --compare simulated beside the telemetry)
"""
