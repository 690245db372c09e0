"""CP-SAT parameters by search length and model size (their measurements: docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from solver_sched.formulation.linear import LinearModel
from solver_sched.solvers.cpsat import LIGHT_BELOW, SHORT_SEARCH_PARAMETERS, Search


def _model(variables: int) -> LinearModel:
    m = LinearModel()
    for i in range(variables):
        m.var(f"v{i}", 0, 1)
    m.add("one", [(0, 1), (1, 1)], None, 1)
    m.term("guaranteed", "value", [(0, 2), (1, 1)])
    return m


def test_a_short_search_on_a_large_model_detects_no_symmetry() -> None:
    """CP-SAT does not stop inside symmetry detection, which held a large model's short search
    seconds past its limit: short searches skip it at every size; long ones keep the default."""
    large = _model(5000)
    short = Search(large, None, 1.0, 1, 0).parameters
    long = Search(large, None, LIGHT_BELOW, 1, 0).parameters
    assert short.symmetry_level == 0
    assert long.symmetry_level == Search(_model(3), None, 60.0, 1, 0).parameters.symmetry_level
    assert long.symmetry_level != 0
    assert short.max_presolve_iterations == 1


@pytest.mark.parametrize("variables", [3, 5000])
def test_a_short_search_has_every_row_in_its_lp_at_any_size(
    variables: int,
) -> None:
    """Every row in the LP from the start and a one-conflict hint phase bring CP-SAT's first
    LP-guided dive forward, at S and at M alike (measured in docs/benchmarks.md); a long search
    keeps CP-SAT's defaults."""
    short = Search(_model(variables), None, 1.0, 1, 0).parameters
    long = Search(_model(variables), None, LIGHT_BELOW, 1, 0).parameters
    assert not short.add_lp_constraints_lazily and long.add_lp_constraints_lazily
    assert short.hint_conflict_limit == 1 != long.hint_conflict_limit
    assert set(SHORT_SEARCH_PARAMETERS) == {"add_lp_constraints_lazily", "hint_conflict_limit"}


def test_the_search_finds_the_optimum_of_a_tiny_model() -> None:
    status, values, objective, _, _, _ = Search(_model(3), None, 1.0, 1, 0).run()
    assert status.name == "OPTIMAL" and values is not None and values[:2] == [1, 0]
    assert objective == 2


def test_rows_open_on_one_side_bind_on_the_other() -> None:
    """An at-least row (no upper side) forces a variable the objective values negatively; an
    at-most row caps one it values."""
    m = LinearModel()
    a, b, c = (m.var(n, 0, 5) for n in "abc")
    m.add("at_least", [(a, 1)], 2, None)
    m.add("at_most", [(b, 1), (c, 1)], None, 3)
    m.term("guaranteed", "value", [(a, -1), (b, 2), (c, 1)])
    status, values, objective, bound, _, _ = Search(m, None, 1.0, 1, 0).run()
    assert status.name == "OPTIMAL" and values == [2, 3, 0]
    assert objective == bound == 4


def test_an_infeasible_model_has_no_solution() -> None:
    m = _model(3)
    m.add("none", [(0, 1), (1, 1)], 2, None)  # with "one": at most 1
    status, values, objective, _, _, _ = Search(m, None, 1.0, 1, 0).run()
    assert status.name == "INFEASIBLE" and values is None and objective is None


def test_a_hint_must_give_every_variable_a_value() -> None:
    with pytest.raises(ValueError, match="hint has 2 values for 3 variables"):
        Search(_model(3), [1, 0], 1.0, 1, 0)


def test_the_settings_reach_the_search() -> None:
    p = Search(_model(3), [1, 0, 0], 0.0, 3, 7, linearization_level=1).parameters
    assert (p.num_workers, p.random_seed, p.linearization_level) == (3, 7, 1)
    assert p.max_time_in_seconds == 0.01  # never an instant stop
    assert (p.cp_model_probing_level, p.log_search_progress) == (0, False)
    long = Search(_model(3), None, 60.0, 1, 0).parameters
    assert long.max_time_in_seconds == 60.0
    assert long.max_presolve_iterations > 1 and long.cp_model_probing_level > 0
