"""Analysis built on the model and the engine: static rules (``rules``) and the stress suite."""
