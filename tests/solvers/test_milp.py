"""solvers/milp.py: the same LinearModel through PuLP (HiGHS, installed with the project)."""

from __future__ import annotations

from solver_sched.formulation.linear import LinearModel
from solver_sched.solvers.milp import _solver, solve_milp


def _rows() -> LinearModel:
    """At least 2 of a (valued -1), b + c at most 3 (b worth 2, c 1), d equal to 4 (worth 0),
    e within its own bounds 1..2 (worth 1)."""
    m = LinearModel()
    a, b, c, d = (m.var(n, 0, 5) for n in "abcd")
    e = m.var("e", 1, 2)
    m.add("at_least", [(a, 1)], 2, None)
    m.add("at_most", [(b, 1), (c, 1)], None, 3)
    m.add("exactly", [(d, 1)], 4, 4)
    m.term("guaranteed", "value", [(a, -1), (b, 2), (c, 1), (e, 1)])
    return m


def test_every_kind_of_row_binds_and_the_objective_is_maximised() -> None:
    status, values, objective, bound, _, detail = solve_milp(_rows(), 10.0, 1)
    assert status.name == "OPTIMAL" and values == [2, 3, 0, 4, 2]
    assert objective == bound == 6.0
    assert detail.startswith("HiGHS, 5 vars, 3 constraints")


def test_an_infeasible_model_has_no_solution() -> None:
    m = _rows()
    m.add("none", [(0, 1)], None, 1)  # with at_least: a >= 2
    status, values, objective, bound, _, _ = solve_milp(m, 10.0, 1)
    assert status.name == "INFEASIBLE" and values is None and objective is None and bound is None


def test_highs_is_asked_for_the_proven_optimum_within_the_limit_on_the_workers() -> None:
    solver, name = _solver(2.5, 3)
    assert name == "HiGHS"
    assert (solver.timeLimit, solver.threads, solver.gapRel, solver.msg) == (2.5, 3, 0.0, False)
