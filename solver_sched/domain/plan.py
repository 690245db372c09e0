"""Plan: what we will do. Binds of pending pods and job-level evictions, each with a reason."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class BindPod:
    pod: str  # namespace/name
    node: str
    job: str


@dataclass(frozen=True, slots=True)
class EvictJob:
    """Evict these pods of one job (all of it, or its surplus above a smaller allowed size)."""

    job: str
    pods: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """One row of the plan's report: where a job stands before and after."""

    name: str
    queue: str
    priority: int
    min_workers: int
    max_workers: int
    allowed_sizes: tuple[int, ...]
    current: int
    planned: int
    reason: str = ""


@dataclass(frozen=True)
class Plan:
    binds: tuple[BindPod, ...] = ()
    evictions: tuple[EvictJob, ...] = ()
    jobs: tuple[JobOutcome, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return not self.binds and not self.evictions
