"""The fleet controller (`solver-sched fleet`): a hub API server and its member API servers.

Kubernetes I/O only; what goes where is decided by the unchanged core on the fleet snapshot of
``io.fleet_snapshot``."""
