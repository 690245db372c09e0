"""A plan's value held as a row, another objective: what the study's crossing bounds and the
equal-value property stand on."""

from __future__ import annotations

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.variables import Vars
from solver_sched.solvers.cpsat import solve_cpsat
from solver_sched.solvers.lexicographic import crossings, held_value, value_terms


def _model() -> LinearModel:
    # a: a placement worth 10 that costs 1 of topology; t: a free topology gain; a + t <= 2
    lm = LinearModel(band=5, tie_band=3)
    a, t = lm.var("a", 0, 1), lm.var("t", 0, 1)
    lm.add("cap", [(a, 1), (t, 1)], None, 2)
    lm.term("guaranteed", "place", [(a, 10)])
    lm.term("elastic", "topology_spread", [(a, -1), (t, 1)])
    return lm


def test_value_terms_are_the_objective_without_topology() -> None:
    assert value_terms(_model()) == [(0, 3 * 5 * 10)]


def test_the_held_value_keeps_the_placement_the_objective_would_give_up() -> None:
    lm = _model()
    stage = held_value(lm, [1, 0], [(0, -1), (1, 1)])  # topology alone: a costs, t gains
    floor = next(c for c in stage.constraints if c.name == "value_floor")
    assert floor.lo == 150 and floor.terms == [(0, 150)]
    assert stage.violated([0, 1]) == ["value_floor"]  # the better topology alone: not allowed
    status, found, *_ = solve_cpsat(stage, [1, 0], 5.0, 1, 0)
    assert found == [1, 1], status


def test_crossings_are_domains_used_less_one_per_gang_that_runs() -> None:
    lm = LinearModel()
    y0, y1 = lm.var("y0", 0, 1), lm.var("y1", 0, 1)  # gang 0: size 0 or 1
    d1, d2 = lm.var("d1", 0, 1), lm.var("d2", 0, 1)
    v = Vars(y=[[y0, y1]], d={(0, ("r1",)): d1, (0, ("r2",)): d2})
    terms = dict(crossings(v))
    assert terms == {y1: 1, d1: -1, d2: -1}
    spread = {y0: 0, y1: 1, d1: 1, d2: 1}
    assert -sum(c * spread[x] for x, c in terms.items()) == 1  # two racks: one crossing
