"""The workload controllers of kube-controller-manager, as pure reconcile rules over small typed
state objects: the Deployment controller (``deployment``), the ReplicaSet controller's choice of
pods to delete (``replicaset``), the StatefulSet controller's order of creation, deletion and
update (``statefulset``) and which ReplicaSets a Deployment adopts (``adoption``). They read no
arrays and keep no clock: the engine's loop fills their state from its pods each step, calls
them in the order of its phases and acts on what they decide (pods to create or delete,
ReplicaSets to scale, events and conditions to record).
"""
