"""One scheduling cycle: snapshot -> problem -> solve -> plan -> check. Pure: no I/O, no clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from solver_sched.config.schema import SchedulerConfig
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.build import Built, build
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.values import to_values
from solver_sched.planning.check import check
from solver_sched.planning.diff import diff
from solver_sched.planning.pack import minimize_evictions, pack
from solver_sched.solvers.cpsat import solve_cpsat
from solver_sched.solvers.greedy import counts_of, solve_greedy
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
    """One global decision. The best of the solver's plan and greedy's plan is emitted, and only
    after the independent checker accepts it."""
    s = config.settings
    backend = backend or s.solver
    limit = time_limit if time_limit is not None else s.time_limit_seconds
    timer = _Timer()
    with timer("model"):
        problem = prepare(snapshot, config.weights, s, now)
        built = build(problem)
    with timer("greedy"):
        greedy = solve_greedy(snapshot, problem)
        hint = to_values(problem, built, greedy.sizes, greedy.counts)
    with timer("solve"):
        stats, solved = _solve(
            backend, problem, built, hint, limit, s.workers, s.random_seed, s.linearization_level
        )
    with timer("plan"):
        candidates = [("greedy", greedy)] + ([(backend, solved)] if solved else [])
        best = None
        for label, assignment in candidates:
            st, notes = pack(snapshot, problem, assignment)
            notes += minimize_evictions(st)
            final = Assignment(dict(st.size), counts_of(snapshot, problem, st.placed))
            values = to_values(problem, built, final.sizes, final.counts)
            if values is None:
                continue
            value = built.model.objective_value(values)
            if best is None or value > best[0] or (value == best[0] and label != "greedy"):
                best = (value, label, st, notes, values)
    violations: list[str] = []
    with timer("check"):
        plan = Plan(notes=("no feasible plan",))
        terms: dict[str, int] = {}
        chosen = ""
        if best is not None:
            value, chosen, st, notes, values = best
            plan = diff(snapshot, st, now, notes)
            violations = check(snapshot, plan, now, s.priority_preemption, s.queue_reclaim)
            terms = built.model.evaluate(values)
            if violations:  # fail closed: never emit a plan the checker rejects
                plan = Plan(jobs=plan.jobs, notes=("plan rejected by the checker", *violations))
            stats = SolveStats(
                stats.backend, stats.status, float(value), stats.bound, stats.seconds, stats.detail
            )
    return CycleResult(plan, stats, terms, timer.phases, violations, chosen)


def _solve(
    backend: str,
    problem: Problem,
    built: Built,
    hint: list[int] | None,
    limit: float,
    workers: int,
    seed: int,
    linearization_level: int,
) -> tuple[SolveStats, Assignment | None]:
    if backend == "greedy":
        return SolveStats("greedy", SolveStatus.HEURISTIC), None
    if backend == "cpsat":
        status, values, obj, bound, secs, detail = solve_cpsat(
            built.model, hint, limit, workers, seed, linearization_level
        )
    elif backend == "milp":
        status, values, obj, bound, secs, detail = solve_milp(built.model, limit, workers)
    else:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
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
        (problem.jobs[j].name, sid, cid): values[var]
        for (j, sid, cid), var in built.vars.x.items()
        if values[var]
    }
    return Assignment(sizes, counts)
