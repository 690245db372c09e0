"""solvers/solving.py: a backend's search on its worker thread. A solver library's failure ends
the search without a solution and the cycle emits greedy's plan; any other exception is raised
on the cycle's thread."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from solver_sched.formulation.aggregate import aggregate
from solver_sched.formulation.build import build
from solver_sched.formulation.prepare import prepare
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.solvers import cpsat
from solver_sched.solvers import solving as solving_module
from solver_sched.solvers.result import SolveStats, SolveStatus
from solver_sched.solvers.solving import Solving
from solver_sched.synthetic import SIZES, preset_objects
from tests.support.builders import NOW, config, gang, node, plan, snapshot, workers_after


def _snap():
    return snapshot(node("n", gpus=8), gang("a", 2, gpus=2), gang("b", 1, gpus=4, priority=10))


def _fail(exc: BaseException):
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


def _built(snap=None):
    snap = snap or _snap()
    c = config()
    model = aggregate(prepare(snap, c.weights, c.settings, NOW))
    return model, build(model), c.settings


def test_the_greedy_backend_runs_no_search() -> None:
    model, built, s = _built()
    solving = Solving("greedy", model, built, None, 1.0, s)
    assert solving.thread is None and not solving.proved()
    assert solving.result() == (SolveStats("greedy", SolveStatus.HEURISTIC), None)


def test_an_unknown_backend_is_named_with_the_choices() -> None:
    model, built, s = _built()
    with pytest.raises(ValueError, match="unknown backend 'gurobi'; choose one of cpsat, milp"):
        Solving("gurobi", model, built, None, 1.0, s)


def test_a_search_not_run_says_why() -> None:
    model, built, s = _built()
    stats, values = Solving("milp", model, built, None, 1.0, s, "no search: budget spent").result()
    assert stats == SolveStats("milp", SolveStatus.NO_SOLUTION, detail="no search: budget spent")
    assert values is None
    large = replace(model, too_large="too large: 9 of 8 variables")
    stats, _ = Solving("cpsat", large, built, None, 1.0, s).result()
    assert (stats.backend, stats.status, stats.detail) == (
        "cpsat",
        SolveStatus.NO_SOLUTION,
        "too large: 9 of 8 variables",
    )


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_each_backend_searches_on_its_worker_to_the_optimum(backend: str) -> None:
    model, built, s = _built()
    solving = Solving(backend, model, built, None, 10.0, s)
    assert solving.thread is not None and solving.thread.name == "solver" and solving.thread.daemon
    stats, values = solving.result()
    assert (stats.backend, stats.status) == (backend, SolveStatus.OPTIMAL)
    assert values is not None and not built.model.violated(values)
    assert solving.proved()


def test_cpsat_gets_the_hint_and_the_settings() -> None:
    model, built, s = _built()
    hint = [0] * len(built.model.names)
    s = s.model_copy(update={"workers": 2, "random_seed": 5, "linearization_level": 1})
    solving = Solving("cpsat", model, built, hint, 3.0, s)
    solving.result()
    assert solving.search is not None
    assert list(solving.search.cp.solution_hint.values) == hint
    p = solving.search.parameters
    assert (p.num_workers, p.random_seed, p.linearization_level) == (2, 5, 1)
    assert p.max_time_in_seconds == 3.0


def test_milp_gets_the_limit_and_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[float, int]] = []

    def fake(model: object, limit: float, workers: int) -> tuple[object, ...]:
        seen.append((limit, workers))
        return (SolveStatus.NO_SOLUTION, None, None, None, 0.0, "")

    monkeypatch.setattr(solving_module, "solve_milp", fake)
    model, built, s = _built()
    Solving("milp", model, built, None, 2.5, s.model_copy(update={"workers": 3})).result()
    assert seen == [(2.5, 3)]


def test_two_searches_stop_together_once_either_proves_its_optimum() -> None:
    """The hinted search beside the unhinted one (S): both stop at the deadline, or as soon as
    one of them has proved its optimum, which the other cannot beat. Here one proves a tiny
    model's at once while the other works on an M cluster's for up to 60 s: both are over long
    before the deadline."""
    model, built, s = _built()
    m_model, m_built, _ = _built(snapshot_from_objects(preset_objects("hard", 1, NOW, SIZES["M"])))
    one = Solving("cpsat", model, built, None, 60.0, s)
    two = Solving("cpsat", m_model, m_built, None, 60.0, s)
    start = time.perf_counter()
    one.stop_at(start + 60.0, beside=two)
    assert time.perf_counter() - start < 30.0
    assert one.thread is not None and two.thread is not None
    assert not one.thread.is_alive() and not two.thread.is_alive()
    assert one.proved() and not two.proved()
