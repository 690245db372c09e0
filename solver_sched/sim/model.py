"""What the simulator simulates: trace jobs, the speedup model and the run parameters.

**Speedup model.** A job asks for ``R`` GPUs (the trace's GPU count) and would run for
``duration`` seconds at that size. Its work is ``W = duration x R`` GPU-speed units. On ``g``
GPUs, while its gang is complete, it progresses at ``T(g)`` units per second:

- ``T(g) = g`` for ``g <= R`` (linear up to the requested size);
- ``T(g) = R x (g / R) ** alpha`` beyond it (diminishing returns; ``alpha = 0.5`` by default,
  i.e. sqrt; ``alpha = 1`` is linear, ``alpha = 0`` no gain at all beyond ``R``).

A job at its requested size therefore finishes in exactly ``duration``; at half the size it takes
twice as long; at twice the size (``alpha = 0.5``) it takes ``duration / sqrt(2)``.

**Spread slowdown** (issue 15; only with racks, ``rack_nodes > 0``). Consecutive nodes form racks
of ``rack_nodes``. A gang whose pods sit in ``k`` racks progresses at ``T(g) / (1 + s (k - 1))``
(``s = spread_slowdown``, 0.1 by default: each extra rack adds 10% to the time a step takes, the
cross-rack all-reduce being the slow part), decided on the pods' placement over each interval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace, already mapped: sizes are in pods, each pod has ``gpus_per_pod``."""

    name: str
    arrival: float  # seconds from the start of the simulation
    duration: float  # seconds at the requested size
    gpus: int  # requested GPUs (R): the rigid gang size
    gpus_per_pod: int = 1
    min_pods: int = 0  # elastic bounds in pods; 0 = rigid at the requested size
    max_pods: int = 0
    queue: str = "default"
    priority: int = 0

    @property
    def pods(self) -> int:
        """Pods of the rigid gang (the requested size)."""
        return max(1, self.gpus // self.gpus_per_pod)

    @property
    def elastic(self) -> bool:
        return self.max_pods > self.min_pods > 0

    @property
    def work(self) -> float:
        return self.duration * self.gpus


@dataclass(frozen=True, slots=True)
class Speedup:
    """Throughput of a job on ``g`` GPUs in GPU-speed units (see the module docstring)."""

    alpha: float = 0.5

    def rate(self, gpus: int, requested: int) -> float:
        if gpus <= 0:
            return 0.0
        if gpus <= requested:
            return float(gpus)
        return float(requested * (gpus / requested) ** self.alpha)


@dataclass(frozen=True, slots=True)
class SimParams:
    """Knobs of the simulated world (not of any policy)."""

    gpus: int = 64
    gpus_per_node: int = 8
    interval: float = 60.0  # seconds between scheduling cycles
    checkpoint_interval: float = 900.0  # a job checkpoints every this many seconds of progress
    restart_overhead: float = 30.0  # seconds of no progress after a resize or a resume
    cooldown: timedelta = timedelta(minutes=10)  # per job, after a resize of a running gang
    partial_timeout: float = 600.0  # per-pod policy: a partial gang's pods give up after this
    horizon: float = 60 * 86400.0  # stop simulating after this (unfinished jobs are reported)
    recheck_cycles: int = 0  # call the policy at least every N cycles while jobs wait (0: never)
    speedup: Speedup = field(default_factory=Speedup)
    rack_nodes: int = 0  # nodes per rack; 0: no racks (no topology, no spread slowdown)
    spread_slowdown: float = 0.1  # per extra rack a gang spans (the module docstring)

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    def slowdown(self, racks: int) -> float:
        """The factor a gang over ``racks`` racks divides its rate by."""
        return 1.0 + self.spread_slowdown * max(0, racks - 1) if self.rack_nodes else 1.0
