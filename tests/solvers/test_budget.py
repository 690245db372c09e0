"""solvers/budget.py: the cycle's budget by cluster size and the search's deadline within it."""

import itertools

import pytest

from solver_sched.solvers.budget import (
    AFTER_FACTOR,
    AUTO_BUDGET,
    MARGIN,
    auto_budget,
    search_deadline,
)


def test_budget_by_cluster_size_goes_through_the_targets() -> None:
    assert [auto_budget(n) for n in (1, 64, 512, 2000, 10000)] == [0.5, 0.5, 1.0, 3.0, 8.0]
    assert auto_budget(288) == pytest.approx(0.75)  # halfway from 64 to 512 nodes
    assert auto_budget(1256) == pytest.approx(2.0)  # halfway from 512 to 2,000
    assert auto_budget(6000) == pytest.approx(5.5)  # halfway from 2,000 to 10,000
    assert auto_budget(18000) == pytest.approx(13.0)  # past the last target, the last slope


def test_budget_grows_with_the_cluster_without_a_jump() -> None:
    sizes = range(1, 20001, 37)
    budgets = [auto_budget(n) for n in sizes]
    assert all(b0 <= b1 for b0, b1 in itertools.pairwise(budgets))
    for n, _ in AUTO_BUDGET:  # continuous at each target
        assert auto_budget(n + 1) - auto_budget(n) < 0.01


def test_the_search_stops_where_the_solvers_plan_can_still_be_packed_and_checked() -> None:
    start, budget = 100.0, 3.0
    end = start + MARGIN * budget  # where a cycle's work ends
    for after in (0.0, 0.2, 0.5):
        deadline = search_deadline(start, budget, after)
        # the solver's plan may take longer to pack and check than greedy's: more is kept
        assert end - deadline > AFTER_FACTOR * after
        assert end - deadline < AFTER_FACTOR * after + 0.1
    assert search_deadline(start, budget, 0.5) < search_deadline(start, budget, 0.2)
    assert search_deadline(start, 2 * budget, 0.2) > search_deadline(start, budget, 0.2)
