"""One scheduling cycle: snapshot -> problem -> solve -> plan -> check.

Pure: no I/O, and the clock only through ``now`` (perf_counter measures phase durations). The
one process-wide effect is that the cyclic garbage collector is paused while a cycle runs.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime

from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.build import Built, build
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.state import PlanState
from solver_sched.formulation.values import to_values
from solver_sched.planning.check import check
from solver_sched.planning.diff import diff
from solver_sched.planning.pack import minimize_evictions, pack
from solver_sched.solvers.cpsat import solve_cpsat
from solver_sched.solvers.greedy import assignment_of, counts_of, greedy_plan
from solver_sched.solvers.milp import solve_milp
from solver_sched.solvers.result import Assignment, SolveStats, SolveStatus

BACKENDS = ("cpsat", "milp", "greedy")


@dataclass
class CycleResult:
    plan: Plan
    stats: SolveStats
    terms: dict[str, int] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    chosen: str = ""  # which candidate became the plan: the solver's or greedy's


class _Timer:
    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - start


def run_cycle(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    now: datetime,
    backend: str | None = None,
    time_limit: float | None = None,
) -> CycleResult:
    """One global decision. Candidates (the solver's plan and greedy's) are packed onto nodes and
    ranked by the model objective; the best one the independent checker accepts is emitted.

    Python's cyclic garbage collector is paused for the cycle: its full passes over a large
    snapshot cost 15% of a cycle at M (measured in docs/benchmarks.md). The cycle's own garbage is
    freed by reference counting, or by the next automatic collection. The switch is process-wide:
    other threads (metrics, probes) run without cyclic collection while a cycle runs."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _cycle(snapshot, config, now, backend, time_limit)
    finally:
        if was_enabled:
            gc.enable()


def _cycle(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    now: datetime,
    backend: str | None,
    time_limit: float | None,
) -> CycleResult:
    s = config.settings
    backend = backend or s.solver
    limit = time_limit if time_limit is not None else s.time_limit_seconds
    timer = _Timer()
    with timer("model"):
        problem = prepare(snapshot, config.weights, s, now)
        built = build(problem)
    with timer("greedy"):
        greedy_state = greedy_plan(snapshot, problem)  # concrete already: it needs no packing
        greedy = assignment_of(greedy_state)
        hint = to_values(problem, built, greedy.sizes, greedy.counts)
    with timer("solve"):
        stats, solved = _solve(backend, problem, built, hint, limit, s)
    with timer("plan"):
        ranked = []
        Candidate = tuple[str, PlanState, list[str], list[int] | None]  # values, when known
        candidates: list[Candidate] = [("greedy", greedy_state, [], hint)]
        if solved:
            candidates.append((backend, *pack(snapshot, problem, solved), None))
        for label, st, notes, values in candidates:
            undone = minimize_evictions(st)  # a note per eviction undone: none, st unchanged
            notes += undone
            if undone or values is None:
                values = to_values(problem, built, st.size, counts_of(snapshot, problem, st.placed))
            terms = built.model.evaluate(values) if values is not None else {}
            value = built.model.objective_of(terms) if values is not None else None
            rank = (value is not None, value or 0, label != "greedy")
            ranked.append((rank, label, st, notes, terms))
        ranked.sort(key=lambda c: c[0], reverse=True)
    with timer("check"):
        rejected: list[str] = []
        for (known, value, _), label, st, notes, terms in ranked:
            plan = diff(snapshot, st, now, notes)
            violations = check(snapshot, plan, now, s.priority_preemption, s.queue_reclaim)
            if violations:  # fail closed: a plan the checker rejects is never emitted
                rejected += [f"{label}: {v}" for v in violations]
                continue
            objective = float(value) if known else None
            stats = replace(stats, objective=objective, solver_objective=stats.objective)
            return CycleResult(plan, stats, terms, timer.phases, [], label)
    jobs = diff(snapshot, ranked[0][2], now, []).jobs
    plan = Plan(jobs=jobs, notes=("no plan passed the checker", *rejected))
    return CycleResult(plan, stats, {}, timer.phases, rejected or ["no plan"], "")


def _solve(
    backend: str,
    problem: Problem,
    built: Built,
    hint: list[int] | None,
    limit: float,
    s: Settings,
) -> tuple[SolveStats, Assignment | None]:
    if backend == "greedy":
        return SolveStats("greedy", SolveStatus.HEURISTIC), None
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if problem.too_large:
        return SolveStats(backend, SolveStatus.NO_SOLUTION, detail=problem.too_large), None
    try:
        if backend == "cpsat":
            status, values, obj, bound, secs, detail = solve_cpsat(
                built.model, hint, limit, s.workers, s.random_seed, s.linearization_level
            )
        else:
            status, values, obj, bound, secs, detail = solve_milp(built.model, limit, s.workers)
    except (RuntimeError, ValueError, OverflowError, IndexError) as exc:  # solver library failure
        return SolveStats(backend, SolveStatus.NO_SOLUTION, detail=f"solver error: {exc}"), None
    stats = SolveStats(backend, status, obj, bound, secs, detail)
    if values is None:
        return stats, None
    return stats, _assignment(problem, built, values)


def _assignment(problem: Problem, built: Built, values: list[int]) -> Assignment:
    sizes = {}
    for j, jm in enumerate(problem.jobs):
        for k, o in enumerate(jm.options):
            if values[built.vars.y[j][k]]:
                sizes[jm.name] = o.size
    counts = {
        ("", sid, cid): values[var] for (sid, cid), var in built.vars.x.items() if values[var]
    }
    return Assignment(sizes, counts)
