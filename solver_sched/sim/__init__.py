"""Discrete-event simulation of the scheduler over job traces (issue 4: `solver-sched simulate`).

The same core (``cycle.run_cycle``) plans each simulated cycle on a ``ClusterSnapshot`` built
straight from domain objects; baselines (per-pod, gang FIFO, greedy elastic) run in the same loop.
"""
