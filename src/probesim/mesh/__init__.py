"""The mesh: Istio DestinationRule / VirtualService as probesim reads them, and their Envoy
configuration (``probesim envoy-config``)."""
