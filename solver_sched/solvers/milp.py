"""PuLP MILP backend: the same LinearModel, solved by HiGHS when installed, else CBC."""

from __future__ import annotations

import time

import pulp

from solver_sched.formulation.linear import LinearModel
from solver_sched.solvers.result import SolveStatus


def _solver(time_limit: float, workers: int) -> tuple[pulp.LpSolver, str]:
    if "HiGHS" in pulp.listSolvers(onlyAvailable=True):
        return pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=0.0, threads=workers), "HiGHS"
    return pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=0.0, threads=workers), "CBC"


def solve_milp(
    model: LinearModel, time_limit: float, workers: int
) -> tuple[SolveStatus, list[int] | None, float | None, float | None, float, str]:
    start = time.perf_counter()
    lp = pulp.LpProblem("solver_sched", pulp.LpMaximize)
    xs = [
        pulp.LpVariable(f"v{i}", lowBound=lb, upBound=ub, cat=pulp.LpInteger)
        for i, (lb, ub) in enumerate(zip(model.lb, model.ub, strict=True))
    ]
    lp += pulp.lpSum(c * xs[v] for v, c in model.objective())
    for i, con in enumerate(model.constraints):
        expr = pulp.lpSum(c * xs[v] for v, c in con.terms)
        if con.lo is not None and con.lo == con.hi:
            lp += (expr == con.lo, f"c{i}")
        else:
            if con.lo is not None:
                lp += (expr >= con.lo, f"c{i}_lo")
            if con.hi is not None:
                lp += (expr <= con.hi, f"c{i}_hi")
    solver, name = _solver(time_limit, workers)
    lp.solve(solver)
    seconds = time.perf_counter() - start
    detail = f"{name}, {len(xs)} vars, {len(model.constraints)} constraints"
    has_solution = lp.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    if not has_solution:
        status = (
            SolveStatus.INFEASIBLE
            if lp.status == pulp.LpStatusInfeasible
            else SolveStatus.NO_SOLUTION
        )
        return status, None, None, None, seconds, detail
    values = [round(x.value() or 0) for x in xs]
    objective = float(model.objective_value(values))
    optimal = lp.sol_status == pulp.LpSolutionOptimal
    bound = objective if optimal else _highs_bound(solver)
    status = SolveStatus.OPTIMAL if optimal else SolveStatus.FEASIBLE
    return status, values, objective, bound, seconds, detail


def _highs_bound(solver: pulp.LpSolver) -> float | None:
    """HiGHS reports its dual bound on the underlying model; CBC through PuLP does not."""
    try:
        return float(solver.solverModel.getInfo().mip_dual_bound)
    except AttributeError:
        return None
