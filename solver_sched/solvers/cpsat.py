"""OR-Tools CP-SAT backend: translates the LinearModel, hints it, solves within the time limit.

Through OR-Tools' own pybind11 layer (``cp_model_helper``: the model proto, the parameters, the
solve wrapper), not ``cp_model``: that module imports pandas and numpy for its modelling API,
0.4 s of every process start (the what-if CLI, the controller), and the model is written straight
into the proto anyway.
"""

from __future__ import annotations

import threading
import time

from ortools.sat.python import cp_model_helper as cmh

from solver_sched.formulation.linear import LinearModel
from solver_sched.solvers.result import SolveStatus

# Measured on the synthetic S and M instances with a greedy hint (docs/benchmarks.md): one presolve
# pass and no probing leave the short budgets of a cycle to the search, which then improves on the
# hint (S: optimal in 0.12 s instead of 0.14 s; M in 0.6 s: 0.0-0.2% from the best known instead of
# no gain over the hint). From LIGHT_BELOW seconds on, full presolve: in 60 s one-worker solves it
# proved the M and L optima sooner with the scheduler's default seed 0 (M 3-4 s against 5-7 s, L
# 13-14 s against 40 s), though not with every seed (docs/benchmarks.md).
PRESOLVE_ITERATIONS = 1
PROBING_LEVEL = 0
LIGHT_BELOW = 5.0
# Nor symmetry detection under LIGHT_BELOW, at any size: CP-SAT does not stop inside it, and on a
# rackXL model (88k variables) it held a search asked for 2 s for 4.4 s (2.1 s without it), past
# the cycle's budget; in the windows a cycle gives M and L searches (0.6-1.5 s, greedy's hint)
# CP-SAT's objective was the same with and without it on 14 instances (docs/benchmarks.md).
SYMMETRY_LEVEL = 0

# Short searches spend their window in the root LP's cut loop before the first LP-guided dive
# finds a better plan. All rows in the LP from the start (CP-SAT adds them lazily by default), no
# symmetry detection (off in every short search) and a one-conflict hint phase bring that dive
# forward. Time to the proven S optimum: 0.25 -> 0.08-0.10 s on seed 1, 0.10-0.16 -> 0.10-0.15 s
# on seeds 2-4. At M (5,000 variables, fragmented dev seeds) CP-SAT's first solution better than
# greedy's came at 1.2 s with CP-SAT's defaults, at 0.97 s with these, and within 0.5 s with these
# and no hint (the cycle's budgeted search, which starts before greedy's other candidates): M
# fragmented's gap to the best known over 10 dev seeds, median 1.28 -> 0.55%, worst 2.72 -> 1.31%
# (docs/benchmarks.md section 1). One cut round at level zero, set here before, is the default.
SHORT_SEARCH_PARAMETERS = {
    "add_lp_constraints_lazily": False,
    "hint_conflict_limit": 1,
}

_MIN, _MAX = -(2**63) + 1, 2**63 - 1  # an open side of a row (CP-SAT's int64 domain)

_STATUS = {
    cmh.CpSolverStatus.OPTIMAL: SolveStatus.OPTIMAL,
    cmh.CpSolverStatus.FEASIBLE: SolveStatus.FEASIBLE,
    cmh.CpSolverStatus.INFEASIBLE: SolveStatus.INFEASIBLE,
    cmh.CpSolverStatus.MODEL_INVALID: SolveStatus.NO_SOLUTION,
    cmh.CpSolverStatus.UNKNOWN: SolveStatus.NO_SOLUTION,
}


Outcome = tuple[SolveStatus, list[int] | None, float | None, float | None, float, str]


def solve_cpsat(
    model: LinearModel,
    hint: list[int] | None,
    time_limit: float,
    workers: int,
    seed: int,
    linearization_level: int = 2,
) -> Outcome:
    """Returns status, values, objective, bound, wall seconds and a detail line."""
    return Search(model, hint, time_limit, workers, seed, linearization_level).run()


class Search:
    """One CP-SAT solve split in two: the translation (Python) happens when the search is built,
    on the caller's thread; ``run`` is the search itself, which holds no GIL, so a cycle runs it on
    a worker thread while it checks greedy's plan on the other core."""

    def __init__(
        self,
        model: LinearModel,
        hint: list[int] | None,
        time_limit: float,
        workers: int,
        seed: int,
        linearization_level: int = 2,
    ) -> None:
        start = time.perf_counter()
        self.cp = _translate(model, hint)
        self.translation = time.perf_counter() - start
        self.size = f"{len(model.names)} vars, {len(model.constraints)} constraints"
        parameters = cmh.SatParameters()
        parameters.max_time_in_seconds = max(0.01, time_limit)
        parameters.num_workers = workers
        parameters.random_seed = seed
        parameters.linearization_level = linearization_level
        if time_limit < LIGHT_BELOW:
            parameters.max_presolve_iterations = PRESOLVE_ITERATIONS
            parameters.cp_model_probing_level = PROBING_LEVEL
            parameters.symmetry_level = SYMMETRY_LEVEL
            for name, value in SHORT_SEARCH_PARAMETERS.items():
                setattr(parameters, name, value)
        parameters.log_search_progress = False
        self.parameters = parameters
        self.search_seconds = 0.0  # CP-SAT's own wall time, once run
        self._lock = threading.Lock()
        self._wrapper: cmh.SolveWrapper | None = None

    def run(self) -> Outcome:
        start = time.perf_counter()
        wrapper = cmh.SolveWrapper()
        wrapper.set_parameters(self.parameters)
        with self._lock:
            self._wrapper = wrapper
        try:
            response: cmh.CpSolverResponse = wrapper.solve(self.cp)  # type: ignore[no-untyped-call]
        finally:
            with self._lock:
                self._wrapper = None
        status = _STATUS.get(response.status, SolveStatus.NO_SOLUTION)
        seconds = self.translation + time.perf_counter() - start
        self.search_seconds = response.wall_time
        detail = f"{self.size}, {response.wall_time:.3f}s in search"
        if status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
            values = [int(x) for x in response.solution]
            objective, bound = response.objective_value, response.best_objective_bound
            return status, values, objective, bound, seconds, detail
        return status, None, None, None, seconds, detail

    def stop(self) -> None:
        """Stops the search if it is under way (from another thread). A stop before the solve
        has begun is dropped (the caller repeats it: _Solving.cancel)."""
        with self._lock:
            if self._wrapper is not None:
                self._wrapper.stop_search()


def _translate(model: LinearModel, hint: list[int] | None) -> cmh.CpModelProto:
    """The LinearModel written straight into the CP-SAT proto: one message per row, no expression
    objects (the operator-overloading API costs 0.3 s per cycle at 10,000 rows)."""
    proto = cmh.CpModelProto()
    for name, lb, ub in zip(model.names, model.lb, model.ub, strict=True):
        var = proto.variables.add()
        var.name = name
        var.domain.extend((lb, ub))
    for con in model.constraints:
        row = proto.constraints.add()
        row.name = con.name
        row.linear.vars.extend([v for v, _ in con.terms])  # lists: 10% faster than generators
        row.linear.coeffs.extend([c for _, c in con.terms])
        lo = _MIN if con.lo is None else con.lo
        hi = _MAX if con.hi is None else con.hi
        row.linear.domain.extend((lo, hi))
    obj = model.objective()  # maximised: the proto minimises, so negate and scale by -1
    proto.objective.vars.extend(v for v, _ in obj)
    proto.objective.coeffs.extend(-c for _, c in obj)
    proto.objective.scaling_factor = -1
    if hint is not None:
        if len(hint) != len(model.names):
            raise ValueError(f"hint has {len(hint)} values for {len(model.names)} variables")
        proto.solution_hint.vars.extend(range(len(hint)))
        proto.solution_hint.values.extend(hint)
    return proto
