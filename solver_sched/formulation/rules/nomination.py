"""Rule 10, nominations: the lowest band of the objective (formulation/ties.py).

  nomination  tie[j] * run_j   (tie[j] = 1 for a nominated job, else 0; run_j = sum_{s>0} y[j,s])

The whole objective above it is multiplied by ``tie_band`` (1 + the number of nominated jobs),
so the band never trades real value for a nomination: it only picks, among plans of equal
value, the one that runs the nominated jobs.
"""

from __future__ import annotations

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    model.tie_band = problem.tie_band
    if problem.tie_band <= 1:
        return
    for j, jm in enumerate(problem.jobs):
        if jm.tie:
            model.term("tie", "nomination", [(y, jm.tie) for y in v.y[j][1:]])
