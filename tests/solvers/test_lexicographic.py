"""The second, lexicographic stage: placement value held at the first solution's, topology alone
optimised."""

from __future__ import annotations

import time

from solver_sched.config.schema import Settings
from solver_sched.formulation.linear import LinearModel
from solver_sched.solvers.lexicographic import improve_topology, topology_stage, value_terms


def _model() -> LinearModel:
    # a: a placement worth 10 that costs 1 of topology; t: a free topology gain; a + t <= 2
    lm = LinearModel(band=5, tie_band=3)
    a, t = lm.var("a", 0, 1), lm.var("t", 0, 1)
    lm.add("cap", [(a, 1), (t, 1)], None, 2)
    lm.term("guaranteed", "place", [(a, 10)])
    lm.term("elastic", "topology_spread", [(a, -1), (t, 1)])
    return lm


def test_value_terms_are_the_objective_without_topology() -> None:
    lm = _model()
    assert value_terms(lm) == [(0, 3 * 5 * 10)]


def test_the_second_stage_keeps_the_value_and_improves_topology() -> None:
    lm = _model()
    first = [1, 0]  # the first stage's solution: placed, topology not improved
    found, note = improve_topology(lm, first, time.perf_counter() + 5, Settings(workers=1))
    assert found == [1, 1], note
    assert lm.objective_value(found) > lm.objective_value(first)


def test_without_the_value_row_topology_would_take_the_placement_back() -> None:
    stage = topology_stage(_model(), [1, 0])
    floor = next(c for c in stage.constraints if c.name == "value_floor")
    assert floor.lo == 150 and floor.terms == [(0, 150)]
    assert stage.violated([0, 1]) == ["value_floor"]  # the better topology alone: not allowed
    assert stage.objective_value([0, 1]) > stage.objective_value([1, 1])
