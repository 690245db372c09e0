"""LinearModel: rows past what the backends hold exactly are rescaled, and the rescaled row keeps
what the checker verifies (upper sides never loosen, lower sides never cut off a plan)."""

from __future__ import annotations

import itertools

import pytest

from solver_sched.formulation.linear import LIMIT, LinearModel

EXA = 2**60  # a quantity Kubernetes accepts: 1Ei of memory


def _model(ubs: list[int]) -> LinearModel:
    m = LinearModel()
    for i, ub in enumerate(ubs):
        m.var(f"v{i}", 0, ub)
    return m


def _span(m: LinearModel) -> int:
    con = m.constraints[-1]
    reach = sum(abs(c) * m.ub[v] for v, c in con.terms)
    return max(reach, abs(con.lo or 0), abs(con.hi or 0))


def _points(m: LinearModel) -> list[list[int]]:
    return [list(p) for p in itertools.product(*(range(ub + 1) for ub in m.ub))]


def _meets(terms: list[tuple[int, int]], point: list[int], lo: int | None, hi: int | None) -> bool:
    act = sum(c * point[v] for v, c in terms)
    return (lo is None or act >= lo) and (hi is None or act <= hi)


def test_rows_written_later_take_their_place_and_are_fitted_when_read() -> None:
    """``later``'s rows are written when ``constraints`` is first read, among the others in the
    order they were added; rows added after a read are fitted at the next read."""
    m = _model([3, 3])
    calls: list[str] = []

    def write() -> None:
        calls.append("write")
        m.add("b", [(1, 2)], None, 4)
        m.add("zero", [(0, 0)], None, 1)  # no term left: dropped, as when added directly

    m.add("a", [(0, 1)], None, 2)
    m.later(write)
    m.add("c", [(0, 1), (1, 1)], 1, None)
    assert calls == []
    assert [c.name for c in m.constraints] == ["a", "b", "c"]
    assert [c.name for c in m.constraints] == ["a", "b", "c"] and calls == ["write"]
    m.add("d", [(0, EXA)], None, EXA)
    assert [c.name for c in m.constraints] == ["a", "b", "c", "d"]
    assert _span(m) <= LIMIT


def test_a_row_within_the_limit_is_kept_as_written() -> None:
    m = _model([3, 3])
    m.add("r", [(0, 6), (1, 4)], None, 10)
    assert (m.constraints[0].terms, m.constraints[0].hi) == ([(0, 6), (1, 4)], 10)


def test_a_bound_no_plan_can_reach_is_clamped_to_what_the_terms_reach() -> None:
    """A quota max of 100000000Gi over jobs that use at most 3 x 1Gi + 2 x 2Gi."""
    m = _model([3, 2])
    m.add("quota", [(0, 2**30), (1, 2**31)], None, 100_000_000 * 2**30)
    assert _span(m) <= LIMIT
    assert m.violated([3, 2]) == []  # the most the jobs can use still fits


def test_a_common_factor_divides_out_exactly() -> None:
    """Pods of 1Ei and 2Ei on a node with 5Ei free (bound 5.x Ei): the same integer points."""
    m = _model([3, 2])
    free = 5 * EXA + 12345
    m.add("cap", [(0, EXA), (1, 2 * EXA)], None, free)
    assert _span(m) <= LIMIT
    con = m.constraints[0]
    for p in _points(m):
        assert _meets(con.terms, p, con.lo, con.hi) == (p[0] + 2 * p[1] <= 5)


@pytest.mark.parametrize("hi", [7 * EXA + 1, 2**62])
def test_coarser_units_never_let_a_plan_past_an_upper_bound(hi: int) -> None:
    coefficients = [EXA + 1, 3 * EXA // 2 - 7, EXA // 3]  # no common factor
    m = _model([4, 4, 4])
    m.add("cap", list(enumerate(coefficients)), None, hi)
    assert _span(m) <= LIMIT
    con = m.constraints[0]
    original = list(enumerate(coefficients))
    kept = [p for p in _points(m) if _meets(con.terms, p, con.lo, con.hi)]
    assert kept  # something still fits
    assert all(_meets(original, p, None, hi) for p in kept)


def test_coarser_units_never_cut_off_a_plan_that_meets_a_lower_bound() -> None:
    """A queue's floor over jobs of exabyte usage: today's usage must stay feasible."""
    coefficients = [EXA + 1, 3 * EXA // 2 - 7, EXA // 3]
    m = _model([4, 4, 4])
    lo = 5 * EXA
    m.add("quota_min", list(enumerate(coefficients)), lo, None)
    assert _span(m) <= LIMIT
    con = m.constraints[0]
    original = list(enumerate(coefficients))
    for p in _points(m):
        if _meets(original, p, lo, None):
            assert _meets(con.terms, p, con.lo, con.hi)


def test_negative_coefficients_round_towards_the_original_upper_bound() -> None:
    """A class's capacity row: pods bound minus what evictions release."""
    m = _model([4, 1, 1])
    terms = [(0, EXA + 3), (1, -(2 * EXA + 5)), (2, -(EXA // 7))]
    hi = 3 * EXA
    m.add("cap", terms, None, hi)
    assert _span(m) <= LIMIT
    con = m.constraints[0]
    kept = [p for p in _points(m) if _meets(con.terms, p, con.lo, con.hi)]
    assert kept and all(_meets(terms, p, None, hi) for p in kept)


def test_an_objective_term_names_one_of_the_two_bands() -> None:
    m = _model([1])
    m.term("guaranteed", "g", [(0, 2)])
    m.term("elastic", "e", [(0, 1)])
    with pytest.raises(ValueError, match="no band 'elastik'"):
        m.term("elastik", "e", [(0, 1)])
    assert (list(m.guaranteed), list(m.elastic)) == (["g"], ["e"])


def test_a_model_made_from_anothers_variables_rescales_its_rows_too() -> None:
    """``reach`` (what each variable's coefficient can reach) is rebuilt when a model is made
    from another's variable lists (solvers/lexicographic.py does)."""
    base = _model([3, 2])
    m = LinearModel(names=base.names, lb=base.lb, ub=base.ub)
    m.add("cap", [(0, EXA), (1, 2 * EXA)], None, 5 * EXA + 12345)
    assert _span(m) <= LIMIT
