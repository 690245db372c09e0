"""What a backend returns: an Assignment (sizes and per-class counts) and its statistics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class SolveStatus(StrEnum):
    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    INFEASIBLE = "INFEASIBLE"
    NO_SOLUTION = "NO_SOLUTION"  # none found within the time limit
    HEURISTIC = "HEURISTIC"  # greedy: feasible, no optimality claim


@dataclass(frozen=True)
class Assignment:
    """Job sizes and pods per (job, shape, class); solvers leave the job empty ("")."""

    sizes: Mapping[str, int]
    counts: Mapping[tuple[str, int, int], int] = field(default_factory=dict)
    # job -> the topology domains the solver put its new pods in, most pods first
    domains: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SolveStats:
    backend: str
    status: SolveStatus
    objective: float | None = None
    bound: float | None = None
    seconds: float = 0.0
    detail: str = ""
    solver_objective: float | None = None  # the solver's own optimum, before packing onto nodes
    search_seconds: float = 0.0  # the search alone (CP-SAT), without translation or start-up

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.bound is None:
            return None
        return abs(self.bound - self.objective) / max(1.0, abs(self.bound))


@dataclass(frozen=True)
class SolveResult:
    assignment: Assignment | None
    stats: SolveStats
