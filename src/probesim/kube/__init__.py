"""Kubernetes semantics shared by the engine, the lab and the check rules: the rules of the
real system that are not the simulation's own (how a named port resolves, ...). It imports only
the model; everything that reasons about Kubernetes objects may import it."""
