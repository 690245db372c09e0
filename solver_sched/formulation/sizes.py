"""Which concrete pods a job keeps, evicts and binds at a given size.

One deterministic rule shared by the model builder and the planner: running pods are kept in keep
order (scale-in evicts the highest replica index first) and pending pods are bound in keep order.
Callers pass the problem's order of the running pods where it has one (``Problem.running_order``):
the same first pod, the others reordered so that scale-ins empty the room a large pod needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver_sched.domain.cluster import Job, Pod
from solver_sched.domain.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class SizeChange:
    keep: tuple[Pod, ...]
    evict: tuple[Pod, ...]
    bind: tuple[Pod, ...]


def change_to(
    snapshot: ClusterSnapshot, job: Job, size: int, running: tuple[Pod, ...] | None = None
) -> SizeChange:
    """``running``: the job's running pods in the order they are kept (default: keep order)."""
    if running is None:
        running = snapshot.running_pods(job)
    if size <= len(running):
        return SizeChange(keep=running[:size], evict=running[size:], bind=())
    waiting = snapshot.waiting_pods(job)
    need = size - len(running)
    if need > len(waiting):
        raise ValueError(
            f"job {job.name} has {len(running) + len(waiting)} pods, cannot run {size}"
        )
    return SizeChange(keep=running, evict=(), bind=waiting[:need])
