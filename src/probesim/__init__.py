"""probesim: see what Kubernetes probes and mesh outlier detection will do, before production does."""

__version__ = "0.1.0"
