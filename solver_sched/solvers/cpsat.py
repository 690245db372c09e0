"""OR-Tools CP-SAT backend: translates the LinearModel, hints it, solves within the time limit."""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from solver_sched.formulation.linear import LinearModel
from solver_sched.solvers.result import SolveStatus

# Measured on the synthetic S and M instances with a greedy hint (docs/benchmarks.md): one presolve
# pass and no probing leave the short budgets of a cycle to the search, which then improves on the
# hint (S: optimal in 0.12 s instead of 0.14 s; M in 0.6 s: 0.0-0.2% from the best known instead of
# no gain over the hint). Full presolve pays off only in long offline solves (LIGHT_BELOW seconds).
PRESOLVE_ITERATIONS = 1
PROBING_LEVEL = 0
LIGHT_BELOW = 5.0

_STATUS = {
    cp_model.OPTIMAL: SolveStatus.OPTIMAL,
    cp_model.FEASIBLE: SolveStatus.FEASIBLE,
    cp_model.INFEASIBLE: SolveStatus.INFEASIBLE,
    cp_model.MODEL_INVALID: SolveStatus.NO_SOLUTION,
    cp_model.UNKNOWN: SolveStatus.NO_SOLUTION,
}


def solve_cpsat(
    model: LinearModel,
    hint: list[int] | None,
    time_limit: float,
    workers: int,
    seed: int,
    linearization_level: int = 2,
) -> tuple[SolveStatus, list[int] | None, float | None, float | None, float, str]:
    """Returns status, values, objective, bound, wall seconds and a detail line."""
    start = time.perf_counter()
    cp = cp_model.CpModel()
    xs = [
        cp.new_int_var(lb, ub, name)
        for name, lb, ub in zip(model.names, model.lb, model.ub, strict=True)
    ]
    for con in model.constraints:
        expr = cp_model.LinearExpr.weighted_sum(
            [xs[v] for v, _ in con.terms], [c for _, c in con.terms]
        )
        if con.lo is not None and con.hi is not None and con.lo == con.hi:
            cp.add(expr == con.lo).with_name(con.name)
        else:
            if con.lo is not None:
                cp.add(expr >= con.lo).with_name(con.name)
            if con.hi is not None:
                cp.add(expr <= con.hi).with_name(con.name)
    obj = model.objective()
    cp.maximize(cp_model.LinearExpr.weighted_sum([xs[v] for v, _ in obj], [c for _, c in obj]))
    if hint is not None:
        for var, val in zip(xs, hint, strict=True):
            cp.add_hint(var, val)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.linearization_level = linearization_level
    if time_limit < LIGHT_BELOW:
        solver.parameters.max_presolve_iterations = PRESOLVE_ITERATIONS
        solver.parameters.cp_model_probing_level = PROBING_LEVEL
    solver.parameters.log_search_progress = False
    code = solver.solve(cp)
    status = _STATUS.get(code, SolveStatus.NO_SOLUTION)
    seconds = time.perf_counter() - start
    detail = (
        f"{len(xs)} vars, {len(model.constraints)} constraints, {solver.wall_time:.3f}s in search"
    )
    if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
        values = [int(solver.value(x)) for x in xs]
        return status, values, solver.objective_value, solver.best_objective_bound, seconds, detail
    return status, None, None, None, seconds, detail
