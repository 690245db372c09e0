"""solvers/solving.py: a backend's search on its worker thread. A solver library's failure ends
the search without a solution and the cycle emits greedy's plan; any other exception is raised
on the cycle's thread."""

from __future__ import annotations

import pytest

from solver_sched.solvers import cpsat
from solver_sched.solvers.result import SolveStatus
from tests.support.builders import gang, node, plan, snapshot, workers_after


def _snap():  # type: ignore[no-untyped-def]
    return snapshot(node("n", gpus=8), gang("a", 2, gpus=2), gang("b", 1, gpus=4, priority=10))


def _fail(exc: BaseException):  # type: ignore[no-untyped-def]
    def raising(*args: object, **kwargs: object) -> None:
        raise exc

    return raising


@pytest.mark.parametrize("where", ["run", "__init__"])
def test_a_solver_library_error_leaves_greedys_plan(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setattr(cpsat.Search, where, _fail(RuntimeError("CP-SAT broke")))
    snap = _snap()
    result = plan(snap, "cpsat")
    assert result.stats.status is SolveStatus.NO_SOLUTION
    assert result.stats.detail == "solver error: CP-SAT broke"
    assert result.violations == []
    assert workers_after(snap, result.plan) == {"default/a": 2, "default/b": 1}


def test_any_other_error_in_the_search_is_raised_on_the_cycles_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cpsat.Search, "run", _fail(KeyError("a bug")))
    with pytest.raises(KeyError, match="a bug"):
        plan(_snap(), "cpsat")
