"""run_cycle on awkward inputs: every backend still emits a checked plan for the rest of the
cluster (regressions found in review)."""

import gc
import threading
import time
from typing import Any, ClassVar

import pytest

from solver_sched import cycle as cycle_module
from solver_sched.config.schema import SchedulerConfig
from solver_sched.formulation.aggregate import aggregate, oldest_first
from solver_sched.formulation.build import build
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.values import to_values
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.planning import candidates, clock
from solver_sched.planning import passes as passes_module
from solver_sched.planning.beside import Beside
from solver_sched.planning.candidates import (
    DENSE,
    DENSE_VALUE,
    GREEDY,
    GUIDED,
    GUIDED_VALUE,
    VALUE_AWARE,
)
from solver_sched.planning.history import PROBE_EVERY, SearchHistory
from solver_sched.planning.pack import minimize_evictions
from solver_sched.solvers import cpsat
from solver_sched.solvers.greedy import assignment_of
from solver_sched.solvers.result import SolveStatus
from solver_sched.solvers.solving import Solving
from solver_sched.synthetic import synthetic_objects
from tests.support.builders import (
    NOW,
    config,
    gang,
    hi_breaks_low,
    node,
    plan,
    pod,
    quota_tree,
    snapshot,
    tried_variants,
    variant_deadlines,
    workers_after,
)
from tests.support.processes import gone
from tests.support.searches import finds_nothing

BACKENDS = ["cpsat", "milp", "greedy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_gang_with_a_pod_of_another_scheduler(backend: str) -> None:
    theirs = pod("g-worker-3", group="g", scheduler="default-scheduler")
    snap = snapshot(node("a", gpus=8), gang("g", 3, min_member=3), theirs)
    result = plan(snap, backend)
    assert result.violations == []
    assert "default/g-worker-3" not in {b.pod for b in result.plan.binds}


@pytest.mark.parametrize("backend", BACKENDS)
def test_partial_gang_in_an_invalid_queue_does_not_block_the_cluster(backend: str) -> None:
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {
                    "name": "bad",
                    "namespaces": ["team-a"],
                    "min": {"nvidia.com/gpu": "8"},
                    "max": {"nvidia.com/gpu": "2"},
                }
            ],
        }
    )
    snap = snapshot(
        node("a", gpus=8),
        tree,
        gang("part", 4, namespace="team-a", running_on=["a"] * 3),
        gang("ok", 2),
    )
    result = plan(snap, backend)
    assert result.violations == []
    assert workers_after(snap, result.plan)["default/ok"] == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_running_job_stays_in_the_cluster_of_its_nodes(backend: str) -> None:
    snap = snapshot(
        node("a1", gpus=8),
        node("b1", gpus=4, labels={"solver-sched.io/cluster": "b"}),
        gang("j", 4, min_member=2, max_member=4, running_on=["b1", "b1"]),
    )
    result = plan(snap, backend)
    assert result.violations == []
    assert {b.node for b in result.plan.binds} == {"b1"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_queue_min_floor_never_keeps_a_broken_partial_gang(backend: str) -> None:
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": "4"}},
                {"name": "b", "namespaces": ["team-b"], "min": {"nvidia.com/gpu": "4"}},
            ],
        }
    )
    snap = snapshot(
        node("n1", gpus=5),
        tree,
        gang("part", 8, namespace="team-a", running_on=["n1"] * 5),
        gang("pend", 1, namespace="team-b"),
    )
    result = plan(snap, backend)
    assert result.violations == []
    assert workers_after(snap, result.plan) == {"team-a/part": 0, "team-b/pend": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_many_distinct_priorities_do_not_overflow(backend: str) -> None:
    objs = [node(f"n{i}", gpus=8) for i in range(4)]
    for p in range(30):
        objs += gang(f"j{p}", 2, priority=p * 10, min_member=1, max_member=2)
    result = plan(snapshot(objs), backend)
    assert result.violations == []
    placed = workers_after(snapshot(objs), result.plan)
    assert sum(placed.values()) == 32
    assert all(placed[f"default/j{p}"] >= 1 for p in range(30))  # every guaranteed part runs


def test_the_garbage_collector_is_back_on_after_a_cycle_even_one_that_raises() -> None:
    snap = snapshot(node("n1", gpus=8), gang("g", 2))
    assert gc.isenabled()
    plan(snap, "cpsat")
    assert gc.isenabled()
    with pytest.raises(ValueError, match="unknown backend"):
        plan(snap, "no-such-backend")
    assert gc.isenabled()


def _solver_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "solver" and t.is_alive()]


def test_a_cycle_no_plan_passes_changes_nothing_and_its_rows_say_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fail closed: nothing bound or evicted, and no row says a job goes where it does not
    (the rows were the best candidate's: g reported 0 -> 2 while nothing was bound)."""
    monkeypatch.setattr(candidates, "check", lambda *a, **k: ["rejected for the test"])
    snap = snapshot(node("n1", gpus=8), gang("g", 2), gang("r", 1, running_on=["n1"]))
    result = plan(snap, "cpsat")
    assert result.violations and result.plan.binds == () and result.plan.evictions == ()
    rows = {j.name: j for j in result.plan.jobs}
    assert (
        rows["default/g"].planned == 0 and "no plan passed the checker" in rows["default/g"].reason
    )
    assert rows["default/r"].planned == 1 and rows["default/r"].reason == ""


def test_greedy_plan_is_checked_while_the_solver_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search waits (up to 10 s) for the first check() call: a cycle that checked greedy's
    plan only after the solve would make it time out."""
    snap = snapshot(node("n1", gpus=8), gang("g", 2), gang("h", 4))
    first_check = threading.Event()
    waited: list[bool] = []
    real_run = cpsat.Search.run
    real_check = candidates.check  # type: ignore[attr-defined]  # patched below

    def run_after_check(self: cpsat.Search) -> cpsat.Outcome:
        waited.append(first_check.wait(timeout=10))
        return real_run(self)

    def check(*args: Any, **kwargs: Any) -> list[str]:
        first_check.set()
        return real_check(*args, **kwargs)

    monkeypatch.setattr(cpsat.Search, "run", run_after_check)
    monkeypatch.setattr(candidates, "check", check)
    result = plan(snap, "cpsat")
    assert waited == [True, True]  # the search and, on a model this small, the hinted one
    assert result.violations == []
    assert result.stats.status.value == "OPTIMAL"
    assert workers_after(snap, result.plan) == {"default/g": 2, "default/h": 4}


@pytest.mark.parametrize("broken", ["check", "relaxation"])
def test_a_cycle_that_fails_while_the_solver_searches_stops_the_search(
    monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """Greedy's check, or the LP relaxation made beside the budgeted search, raises once the
    search of a cluster whose optimum CP-SAT proves only after seconds is under way: the cycle
    raises, and the search was stopped unproven. The failing step waits on an event the search
    sets, not on a sleep: whichever thread runs first, the stop must reach the search (a stop
    sent before CP-SAT's solve began used to be lost, and the cycle then waited out the full
    60 s)."""
    snap = snapshot_from_objects(synthetic_objects(512, 1000, 500, 1, NOW))
    searches: list[cpsat.Outcome] = []
    real_run = cpsat.Search.run
    started = threading.Event()

    def run(self: cpsat.Search) -> cpsat.Outcome:
        started.set()
        out = real_run(self)
        searches.append(out)
        return out

    def crash(*args: Any, **kwargs: Any) -> Any:
        assert started.wait(timeout=30)
        raise RuntimeError(f"{broken} crashed")

    monkeypatch.setattr(cpsat.Search, "run", run)
    monkeypatch.setattr(candidates if broken == "check" else cycle_module, broken, crash)
    cfg = config(time_limit_seconds=60.0, cycle_seconds=60.0)
    with pytest.raises(RuntimeError, match=f"{broken} crashed"):
        cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert _solver_threads() == []
    assert len(searches) == 1  # the search ended before the cycle returned
    assert searches[0][0] != SolveStatus.OPTIMAL  # stopped unproven, not run to the end
    assert gc.isenabled()


def _packed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The arguments of every pack() the cycle makes (recorded while patched)."""
    packed: list[object] = []
    real_pack = cycle_module.pack  # type: ignore[attr-defined]  # patched below

    def pack(*args: Any, **kwargs: Any) -> Any:
        packed.append(args)
        return real_pack(*args, **kwargs)

    monkeypatch.setattr(cycle_module, "pack", pack)
    return packed


@pytest.mark.parametrize("explicit", [None, 5.0])
def test_a_solution_equal_to_the_best_candidates_is_not_packed_and_checked_again(
    monkeypatch: pytest.MonkeyPatch, explicit: float | None
) -> None:
    """Greedy's plan is the only optimum here (one gang, room for it): CP-SAT returns its values
    (an explicit search gives its hint back; the budgeted one, unhinted, finds them), and the
    cycle emits greedy's checked plan without packing the same solution onto nodes again."""
    snap = snapshot(node("n1", gpus=8), gang("g", 4))
    packed = _packed(monkeypatch)
    result = cycle_module.run_cycle(snap, config(), NOW, "cpsat", explicit)
    assert result.stats.status == SolveStatus.OPTIMAL
    assert (packed, result.chosen, result.violations) == ([], "greedy", [])
    assert workers_after(snap, result.plan) == {"default/g": 4}


def test_a_solution_the_model_values_below_the_best_candidate_is_not_packed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unhinted search stopped early can return a plan below greedy's (here: the search is
    made to return the plan that starts nothing); packing keeps a plan's value or loses some, so
    it could not rank first: it is not packed or checked, and greedy's plan is emitted."""
    snap = snapshot(node("n1", gpus=8), gang("g", 4))
    packed = _packed(monkeypatch)
    seen: dict[str, Any] = {}
    real_init, real_result = Solving.__init__, Solving.result

    def init(self: Any, backend: str, model: Any, built: Any, *a: Any) -> None:
        seen.update(model=model, built=built)
        real_init(self, backend, model, built, *a)

    def nothing_started(self: Any) -> Any:
        stats, _ = real_result(self)
        return stats, to_values(seen["model"], seen["built"], {}, {})

    monkeypatch.setattr(Solving, "__init__", init)
    monkeypatch.setattr(Solving, "result", nothing_started)
    result = plan(snap, "cpsat")
    assert (packed, result.chosen, result.violations) == ([], "greedy", [])
    assert workers_after(snap, result.plan) == {"default/g": 4}


def _limits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The time limits the cycle gives CP-SAT."""
    seen: list[float] = []
    real_init = cpsat.Search.__init__

    def init(self: cpsat.Search, model: Any, hint: Any, time_limit: float, *a: Any) -> None:
        seen.append(time_limit)
        real_init(self, model, hint, time_limit, *a)

    monkeypatch.setattr(cpsat.Search, "__init__", init)
    return seen


@pytest.mark.parametrize(
    ("settings", "explicit", "most"),
    [
        ({}, None, 0.5),  # by cluster size: 16 nodes, the smallest budget
        ({"cycleSeconds": 0.3}, None, 0.3),
        ({"cycleSeconds": 5.0, "timeLimitSeconds": 2.0}, None, 2.0),
        ({}, 7.0, 7.0),  # an explicit limit is the search's own (what-if --time-limit)
    ],
)
def test_the_default_cycle_gives_the_search_what_its_budget_leaves(
    monkeypatch: pytest.MonkeyPatch,
    settings: dict[str, float],
    explicit: float | None,
    most: float,
) -> None:
    """The controller's cycle used to give CP-SAT timeLimitSeconds (10 s) whatever the cluster;
    its budget now bounds the whole cycle."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    seen = _limits(monkeypatch)
    cfg = SchedulerConfig.model_validate({"settings": settings})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", explicit)
    assert result.violations == []
    if explicit:
        assert seen == [most]
    else:  # the budgeted search and, on a model this small, the hinted one beside it
        assert len(seen) == 2 and all(0 < limit <= most for limit in seen)


@pytest.mark.parametrize("bounded", [False, True])
def test_an_explicit_limit_is_the_searchs_and_bounded_keeps_the_budget_for_the_rest(
    monkeypatch: pytest.MonkeyPatch, bounded: bool
) -> None:
    """An explicit time limit (what-if's --time-limit) is the search's whatever the budget, even
    one already spent. Unbounded (the simulator, best-known solves) every greedy candidate runs;
    bounded (what-if), the spent budget leaves greedy's first plan alone, so a 3 s search at
    10,000 nodes is not preceded by 13-18 s of value-greedy."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    seen = _limits(monkeypatch)
    tried = tried_variants(monkeypatch)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 1e-6}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", 3.0, bounded=bounded)
    assert seen == [3.0]
    assert not result.stats.detail.startswith("no search")
    assert result.violations == []
    if bounded:
        assert (tried, "lp" in result.phases) == ([], False)
    else:
        assert VALUE_AWARE in tried and "lp" in result.phases


def test_bounded_changes_nothing_without_an_explicit_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a time limit the budget bounds the search too, bounded or not: a spent budget
    leaves no search."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    seen = _limits(monkeypatch)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 1e-6}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", bounded=True)
    assert seen == [] and result.stats.detail.startswith("no search:")


def test_a_search_past_its_deadline_is_stopped() -> None:
    """The cycle stops the search at the budget's deadline, before CP-SAT's own limit: a cluster
    whose optimum CP-SAT proves only after seconds, a 60 s limit, a deadline now."""
    snap = snapshot_from_objects(synthetic_objects(512, 1000, 500, 1, NOW))
    problem = prepare(snap, config().weights, config().settings, NOW)
    built = build(problem)
    solving = Solving("cpsat", problem, built, None, 60.0, config().settings)
    solving.stop_at(0.0)  # long past
    stats, _ = solving.result()
    assert stats.status != SolveStatus.OPTIMAL
    assert stats.search_seconds < 30  # stopped, not run to its limit


def test_a_spent_budget_leaves_greedys_plan_without_a_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no time left after greedy the model is not translated nor searched, and greedy's
    own candidates are not tried again: queue-order greedy's checked plan is emitted."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    seen = _limits(monkeypatch)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 1e-6}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert seen == []
    assert result.stats.status == SolveStatus.NO_SOLUTION
    assert result.stats.detail.startswith("no search:")
    assert result.chosen == "greedy" and result.violations == []
    assert "lp" not in result.phases  # no LP relaxation, no other greedy pass


def test_a_search_an_earlier_cycle_says_finds_nothing_is_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The controller keeps a search history between cycles: a budgeted search that found no
    solution is not run again for a model at least as large in a window no longer; on a small
    model the hinted one still runs in its place, and with the candidates it makes the plan.
    After PROBE_EVERY cycles ruled out one searches anyway; it finds a solution, every failure
    is forgotten and the next cycle searches again."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    longer = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 2.0}})
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 1.0}})
    history = SearchHistory()
    seen = _limits(monkeypatch)
    with monkeypatch.context() as m:
        finds_nothing(m)  # in a window twice as long as the later cycles'
        first = cycle_module.run_cycle(snap, longer, NOW, "cpsat", history=history)
        assert first.violations == [] and len(seen) == 2  # unhinted, and hinted beside it
        assert len(history.failed) == 1
        for _ in range(PROBE_EVERY):
            seen.clear()
            later = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", history=history)
            assert len(seen) == 1  # the hinted search alone
            assert "earlier cycle" in later.stats.detail or "hinted" in later.stats.detail
            assert later.violations == [] and later.chosen
    seen.clear()
    probe = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", history=history)
    assert len(seen) == 2 and probe.violations == [] and history.failed == []
    seen.clear()
    cycle_module.run_cycle(snap, cfg, NOW, "cpsat", history=history)
    assert len(seen) == 2


def test_a_search_stopped_by_the_hinted_ones_proof_is_no_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The unhinted search finds nothing, but the hinted one beside it proves the optimum and
    stops both long before the deadline: what the unhinted one found in that time says nothing
    of its window, so the history keeps no failure."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    history = SearchHistory()
    finds_nothing(monkeypatch, hinted_too=False)
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", history=history)
    assert result.stats.status == SolveStatus.OPTIMAL and result.violations == []
    assert history.failed == []


def test_with_the_search_ruled_out_and_none_to_follow_the_candidates_may_use_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the history rules the search out and no hinted one follows (a large model), no
    search runs at all: value-greedy may then run past the candidates' share of the budget, as
    where the window is too short for any search. With the search to come, it keeps to it."""
    monkeypatch.setattr(cycle_module, "SMALL_MODEL", 0)  # every model large: no hinted search
    monkeypatch.setattr(cycle_module, "BESIDE", False)  # value-greedy made on this process
    given = variant_deadlines(monkeypatch)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 4.0}})
    context = cycle_module.search_context("cpsat", cfg.settings)
    share = {}
    for ruled in (False, True):
        history = SearchHistory(failed=[(0, 1e9)] if ruled else [], context=context)
        given.clear()
        start = time.perf_counter()
        result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", history=history)
        assert result.violations == []
        assert ("earlier cycle" in result.stats.detail) == ruled
        deadline = given[VALUE_AWARE]
        assert deadline is not None
        share[ruled] = deadline > start + cycle_module.VARIANTS * 4.0
    assert share == {False: False, True: True}


def test_without_a_history_every_cycle_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    """What-if and the benchmarks run one cycle with no history: a search that found nothing
    in one cycle is still run in the next."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 1.0}})
    seen = _limits(monkeypatch)
    finds_nothing(monkeypatch)
    for _ in range(2):
        seen.clear()
        cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
        assert seen


def _greedy_is(monkeypatch: pytest.MonkeyPatch, greedy: Any) -> None:
    """Every greedy pass, the cycle's first and the others (planning/passes.py), is ``greedy``."""
    monkeypatch.setattr(cycle_module, "greedy_plan", greedy)
    monkeypatch.setattr(passes_module, "greedy_plan", greedy)


def _slowed(
    monkeypatch: pytest.MonkeyPatch, build: float, greedy: float = 0.0, rows: float = 0.0
) -> None:
    """The model build, every greedy pass and the first writing of the model's rows take at
    least these seconds longer: they stand for a larger model and cluster, since what the
    budget rules read is how long those took."""
    real_build = cycle_module.build  # type: ignore[attr-defined]  # patched below
    real_greedy = cycle_module.greedy_plan  # type: ignore[attr-defined]  # patched below

    def slow_build(problem: Any) -> Any:
        built = real_build(problem)
        time.sleep(build)
        write = built.model.write_rows
        slept: list[float] = []

        def slow_write() -> None:
            if not slept:
                slept.append(rows)
                time.sleep(rows)
            write()

        built.model.write_rows = slow_write  # type: ignore[method-assign]
        return built

    def slow_greedy(*a: Any, **k: Any) -> Any:
        st = real_greedy(*a, **k)
        time.sleep(greedy)
        return st

    monkeypatch.setattr(cycle_module, "build", slow_build)
    _greedy_is(monkeypatch, slow_greedy)


def test_no_search_when_its_window_is_shorter_than_the_model_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Plenty of the budget is left after greedy, but less than the search of a model this slow
    to build needs (SEARCH_NEEDS builds): the model is not translated, greedy's plan goes out.
    The build is slowed down to stand for a large model: what the rule reads is its duration."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    seen = _limits(monkeypatch)
    _slowed(monkeypatch, build=0.5)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 2.0}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert seen == []
    assert result.stats.detail.startswith("no search: a window of")
    assert result.violations == []


def test_the_models_rows_are_written_only_where_a_search_may_follow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Valuing plans needs the model's variables and terms alone: the rows (two thirds of the
    build at 10,000 nodes) are written for a search, never when its window is already too short."""
    from solver_sched.formulation.rules import capacity

    written: list[int] = []
    real = capacity.add

    def counted(*a: Any) -> None:
        written.append(1)
        real(*a)

    monkeypatch.setattr(capacity, "add", counted)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    # (the LP relaxation reads them too: off)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 2.0, "lpGuide": False}})
    seen = _limits(monkeypatch)
    assert cycle_module.run_cycle(snap, cfg, NOW, "cpsat").violations == []
    assert seen and written == [1]
    written.clear()
    seen.clear()
    _slowed(monkeypatch, build=0.5)
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert result.stats.detail.startswith("no search: a window of")
    assert seen == [] and written == []
    assert result.violations == []


@pytest.mark.parametrize(
    ("budget", "build", "greedy"), [(4.0, 0.5, 0.9), (8.0, 0.8, 1.65)], ids=["fits", "skipped"]
)
def test_when_no_search_could_follow_the_candidates_may_use_the_budget(
    monkeypatch: pytest.MonkeyPatch, budget: float, build: float, greedy: float
) -> None:
    """A model slow to build (0.5 s) and greedy passes of 0.9 s in a 4 s budget: a second pass
    would end past the small model's half of the budget, but after it no search could run
    anyway (its window shorter than SEARCH_NEEDS builds), so the next candidate gets its pass
    up to the check's estimate, and the search is not started. That candidate is the dense pass,
    the greedy backend's second pass and its plan here: its end is never earlier than that
    backend's, so a cycle slower than the greedy backend's (the machine) still runs it and
    emits no less (M full 1019 came out x0.9995 of the greedy-only cycle when the dense pass kept
    to the backend's share: skipped, value-greedy's plan emitted; docs/benchmarks.md, twelfth
    pass): the last two assertions.

    "skipped": an 8 s budget, a build of 0.8 s, passes of 1.65 s. After the first pass a second
    would end past the share while a search could still follow it, so the dense pass keeps to the
    share and is skipped; the window is then too short for the model's rows, no search starts,
    and the dense pass goes first among the later candidates (L full 1002 came out x0.9986 of the
    greedy-only cycle: value-greedy run, the dense pass not; docs/benchmarks.md section 1)."""
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": budget}})
    objects = synthetic_objects(16, 40, 20, 1, NOW)
    backend = cycle_module.run_cycle(snapshot_from_objects(objects), cfg, NOW, "greedy")
    assert backend.chosen == cycle_module.SECOND
    seen = _limits(monkeypatch)
    tried = tried_variants(monkeypatch)
    _slowed(monkeypatch, build=build, greedy=greedy)
    result = cycle_module.run_cycle(snapshot_from_objects(objects), cfg, NOW, "cpsat")
    assert seen == []
    assert result.violations == []
    assert tried[:1] == [cycle_module.SECOND]
    assert result.stats.objective is not None and backend.stats.objective is not None
    assert result.stats.objective >= backend.stats.objective


def test_the_dense_pass_skipped_while_a_search_runs_beside_leaves_the_slot_to_value_greedy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As "skipped" above (a 10 s budget, passes of 3.4 s), but the window is long enough for the
    model's rows (0.6 s to write), and not even the part of a pass after its victim search (TAIL
    of one) fits in the share: a search is started beside the candidates, so the dense pass,
    skipped in its share, is not tried again, and the one pass that still fits (the check's
    estimate now counts the rows) is value-greedy's: it paid up to 1.1% more than the dense pass
    there (M dev seeds; docs/benchmarks.md section 1, fifteenth pass)."""
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 10.0, "lpGuide": False}})
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    seen = _limits(monkeypatch)
    tried = tried_variants(monkeypatch)
    _slowed(monkeypatch, build=0.4, greedy=3.4, rows=0.6)
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert len(seen) == 1  # the search was started
    assert result.violations == []
    assert tried == [VALUE_AWARE]


@pytest.mark.parametrize("cut", [True, False], ids=["cut-to-fit", "whole-only"])
def test_the_dense_pass_runs_cut_where_only_its_tail_fits(
    monkeypatch: pytest.MonkeyPatch, cut: bool
) -> None:
    """Passes of 2.2 s after a 0.4 s build in an 8 s budget: a whole second pass would end past
    the small model's half of the budget, TAIL of one would not. The dense pass, the greedy
    backend's second plan, still runs first, its victim search cut TAIL of a pass before that
    end, rather than leaving the time to a search (at L a whole pass missed its end in some
    cycles and not others, and the search that ran instead never made a plan: below the
    greedy-only cycle by up to 3.1%; docs/benchmarks.md section 1, twenty-third pass). Without
    the rule (whole-only) it is skipped."""
    monkeypatch.setattr(cycle_module, "SECOND_CUT_TO_FIT", cut)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 8.0, "lpGuide": False}})
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    given = variant_deadlines(monkeypatch)
    _slowed(monkeypatch, build=0.4, greedy=2.2, rows=0.6)
    start = time.perf_counter()
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert result.violations == []
    if not cut:
        assert cycle_module.SECOND not in given
        return
    assert list(given)[:1] == [cycle_module.SECOND]
    deadline = given[cycle_module.SECOND]
    share_end = start + cycle_module.VARIANTS_SMALL * 8.0
    assert deadline is not None and deadline <= share_end - clock.TAIL * 2.2


def test_greedys_other_passes_stop_taking_victims_before_the_budget_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pass may cost more than the first one the budget rule measures (value-greedy up to
    twice at L): the other passes get a deadline for their victim search, inside the budget.
    The first pass (the hint, the greedy backend's plan) gets the latest: where the rest of it
    and its check still fit (Clock.first_cutoff); the dense pass, the greedy backend's other
    pass, comes next with that backend's deadline (inside its share of the budget, where a
    search may still follow), so the plan is not below that backend's. No pass of a cycle
    without a budget gets one."""
    first: list[float | None] = []
    real = cycle_module.greedy_plan  # type: ignore[attr-defined]  # patched below

    def recorded(*a: Any, **k: Any) -> Any:
        if not first:
            first.append(k.get("deadline"))
        return real(*a, **k)

    _greedy_is(monkeypatch, recorded)
    given = variant_deadlines(monkeypatch)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 4.0}})
    start = time.perf_counter()
    assert cycle_module.run_cycle(snap, cfg, NOW, "cpsat").violations == []
    assert len(first) == 1 and first[0] is not None
    assert start < first[0] < start + 4.0
    assert list(given)[:2] == [cycle_module.SECOND, VALUE_AWARE]
    dense = given[cycle_module.SECOND]
    assert dense is not None and dense < start + cycle_module.VARIANTS * 4.0
    assert all(d is not None and start < d < start + 4.0 for d in given.values())
    given.clear()
    first.clear()
    cycle_module.run_cycle(snap, SchedulerConfig(), NOW, "cpsat", time_limit=1.0)
    assert len(given) > 1 and set(given.values()) == {None}
    assert first == [None]


@pytest.mark.parametrize("backend", ["greedy", "cpsat"])
def test_a_first_pass_that_would_overrun_the_budget_takes_no_more_victims(backend: str) -> None:
    """hi starts only by breaking low; small fits as it is. With time to spare the cycle emits
    that; where the budget is already spent when greedy's first pass begins (a slow machine at
    XL: the pass, its check and the model would overrun it), the pass takes no victims: low
    keeps running, small still starts, and the plan is checked. Without a budget (an explicit,
    unbounded search: the simulator's cycles) there is no such cut."""
    snap = hi_breaks_low()
    spent = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 1e-6}})
    spare = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    cut = cycle_module.run_cycle(snap, spent, NOW, backend)
    assert cut.violations == [] and workers_after(snap, cut.plan) == {
        "default/low": 4,
        "default/hi": 0,
        "default/small": 1,
    }
    for result in (
        cycle_module.run_cycle(snap, spare, NOW, backend),
        cycle_module.run_cycle(snap, spent, NOW, backend, time_limit=1.0),
    ):
        assert result.violations == [] and workers_after(snap, result.plan) == {
            "default/low": 0,
            "default/hi": 4,
            "default/small": 1,
        }


def test_the_lp_relaxation_keeps_to_its_share_when_no_search_could_follow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As above with greedy passes of 0.6 s: value-greedy's pass ends past half the budget, where
    the LP relaxation's own window (its share, LP_SHARE) is gone: it is not built, although a
    greedy pass could still run up to the check's estimate."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    _slowed(monkeypatch, build=0.5, greedy=0.6)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 4.0}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert "lp" not in result.phases
    assert result.violations == []


def test_a_window_the_model_fits_is_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same cluster with its own (fast) build and the same budget is searched."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    seen = _limits(monkeypatch)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 2.0}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert seen
    assert not result.stats.detail.startswith("no search")


def test_with_time_to_spare_the_other_greedy_candidates_are_tried() -> None:
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert "lp" in result.phases
    assert result.violations == []


def test_value_greedy_is_tried_before_the_lp_relaxation(monkeypatch: pytest.MonkeyPatch) -> None:
    """From 512 nodes on only one more greedy pass fits the candidates' share of the budget, and
    value-greedy's is the one that pays there (docs/benchmarks.md section 1): it goes first."""
    tried = tried_variants(monkeypatch)
    relaxation = cycle_module.relaxation  # type: ignore[attr-defined]  # patched below

    def recorded_relaxation(*a: Any, **k: Any) -> Any:
        tried.append("lp")
        return relaxation(*a, **k)

    monkeypatch.setattr(cycle_module, "relaxation", recorded_relaxation)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    assert cycle_module.run_cycle(snap, cfg, NOW, "cpsat").violations == []
    assert [t for t in tried if t != cycle_module.SECOND][:2] == [VALUE_AWARE, "lp"]


@pytest.mark.parametrize("explicit", [None, 5.0])
def test_a_budgeted_search_starts_before_greedys_other_candidates_and_unhinted(
    monkeypatch: pytest.MonkeyPatch, explicit: float | None
) -> None:
    """Greedy's plans are candidates of their own, so the cycle's budgeted search needs no hint
    from them: it starts once the model's rows are written and runs while value-greedy and the
    LP relaxation's pass are made (following a complete hint cost CP-SAT's short windows at M
    0.3 s). An explicit search (what-if's --time-limit, best-known solves) starts after them,
    hinted with the best of them."""
    tried = tried_variants(monkeypatch)
    real_init = cpsat.Search.__init__

    def init(self: cpsat.Search, model: Any, hint: Any, *a: Any) -> None:
        tried.append("search" if hint is None else "hinted search")
        real_init(self, model, hint, *a)

    monkeypatch.setattr(cpsat.Search, "__init__", init)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat", explicit)
    assert result.violations == []
    others = [t for t in tried if t != cycle_module.SECOND]
    candidates = [
        VALUE_AWARE,
        GUIDED,
        DENSE,
        GUIDED_VALUE,
    ]
    if explicit is None:  # on a small model a hinted one joins it after them (below)
        assert others == ["search", *candidates, "hinted search"]
    else:
        assert others == [*candidates, "hinted search"]


@pytest.mark.parametrize("beside", [True, False])
def test_a_small_models_search_has_a_hinted_one_beside_it_whose_plan_counts(
    monkeypatch: pytest.MonkeyPatch, beside: bool
) -> None:
    """Greedy leaves one 3-GPU gang out where the model's optimum starts all three gangs
    (_packing_loses_a_gang). The budgeted, unhinted search finds nothing in its window; the
    second search, hinted with the best candidate on the core the candidates left, finds the
    optimum, and its plan is emitted. Without it the cycle emits greedy's plan."""
    hinted = finds_nothing(monkeypatch, hinted_too=False, waits=False)
    monkeypatch.setattr(cycle_module, "HINTED_BESIDE", beside)
    snap = _packing_loses_a_gang()
    result = plan(snap, "cpsat")
    assert result.violations == []
    assert hinted == ([False, True] if beside else [False])
    started = sorted(n for n, k in workers_after(snap, result.plan).items() if k)
    if beside:
        assert result.chosen == "cpsat" and "hinted" in result.stats.detail
        assert started == ["default/big-a", "default/big-b", "default/urgent"]
    else:
        assert result.chosen != "cpsat" and result.stats.status == SolveStatus.NO_SOLUTION
        assert started == ["default/big-a", "default/urgent"]


def test_no_hinted_search_beside_a_model_past_the_small_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past SMALL_MODEL variables greedy's candidates fill the budget and a child may run their
    passes beside them: no core is left for a second search."""
    hinted = finds_nothing(monkeypatch, hinted_too=False, waits=False)
    monkeypatch.setattr(cycle_module, "SMALL_MODEL", 0)
    assert plan(_packing_loses_a_gang(), "cpsat").violations == []
    assert hinted == [False]


def test_two_searches_stop_once_either_proves_its_optimum() -> None:
    """Solving.stop_at with a search beside: one search proves a tiny model's optimum at once;
    the other, on a model whose optimum takes CP-SAT seconds to prove, is stopped then,
    unproven, long before the deadline it was given (the test waits on the searches, not on a
    clock)."""
    big = snapshot_from_objects(synthetic_objects(512, 1000, 500, 1, NOW))
    cfg = config(time_limit_seconds=60.0)
    small = snapshot(node("n1", gpus=8), gang("g", 4))
    searches = []
    for snap in (small, big):
        problem = prepare(snap, cfg.weights, cfg.settings, NOW)
        model = aggregate(problem, oldest_first(snap))
        built = build(model)
        built.model.write_rows()
        searches.append(Solving("cpsat", model, built, None, 60.0, cfg.settings))
    searches[0].thread.join()  # type: ignore[union-attr]
    searches[1].stop_at(time.perf_counter() + 60.0, searches[0])
    (proved, _), (stopped, _) = searches[0].result(), searches[1].result()
    assert proved.status == SolveStatus.OPTIMAL
    assert stopped.status != SolveStatus.OPTIMAL


def _passes(monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[Any, bool]]:
    """Each pass's start order and victim rule, by label (recorded while patched)."""
    passes: dict[str, tuple[Any, bool]] = {}
    label = [""]
    real = cycle_module.greedy_plan  # type: ignore[attr-defined]  # patched below
    variant = cycle_module.variant  # type: ignore[attr-defined]  # patched below

    def recorded(*a: Any, **k: Any) -> Any:
        passes[label[0]] = (a[2] if len(a) > 2 else None, a[3] if len(a) > 3 else False)
        return real(*a, **k)

    def recorded_variant(*a: Any, **k: Any) -> Any:
        label[0] = a[5]
        return variant(*a, **k)

    _greedy_is(monkeypatch, recorded)
    monkeypatch.setattr(cycle_module, "variant", recorded_variant)
    return passes


def test_each_start_order_is_tried_with_both_victim_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dense-greedy's and lp-greedy's start orders run with both victim rules: where the search
    finds nothing better in its window, these plans decide (M dev seeds, worst gap to the best
    known: fragmented 1.31 -> 0.92%; docs/benchmarks.md section 1)."""
    passes = _passes(monkeypatch)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    assert cycle_module.run_cycle(snap, cfg, NOW, "cpsat").violations == []
    dense, guided = passes[DENSE], passes[GUIDED]
    assert dense[1] is False and guided[1] is False and dense[0] != guided[0]
    assert passes[DENSE_VALUE] == (dense[0], True)
    assert passes[GUIDED_VALUE] == (guided[0], True)


def test_the_greedy_backends_second_pass_takes_value_aware_victims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The greedy backend's plans: queue order with greedy's victims, then the dense order with
    value-aware ones. With greedy's victims the dense pass's late take-backs lost value, so its
    plan depended on where its deadline cut it, and the default cycle came out below the
    greedy-only one (M hard dev seed 2, x0.9854; docs/benchmarks.md, seventeenth pass)."""
    passes = _passes(monkeypatch)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    assert cycle_module.run_cycle(snap, cfg, NOW, "greedy").violations == []
    queue = passes.pop("")  # greedy's own pass, before any other
    assert queue == (None, False)
    assert list(passes) == [cycle_module.SECOND]
    order, value_aware = passes[cycle_module.SECOND]
    assert order is not None and value_aware


def _packing_loses_a_gang() -> Any:
    """Two 4-GPU, 30-CPU nodes; an urgent gang of 2 x (1 GPU, 15 CPUs) and two 1 x (3 GPUs,
    15 CPUs): all three fit, but packed in priority order (best fit) the last one does not."""
    return snapshot(
        node("n1", gpus=4, cpu="30"),
        node("n2", gpus=4, cpu="30"),
        gang("urgent", 2, gpus=1, cpu="15", priority=1000),
        gang("big-a", 1, gpus=3, cpu="15", priority=0),
        gang("big-b", 1, gpus=3, cpu="15", priority=0),
    )


def test_the_models_optimum_survives_packing_when_an_earlier_job_takes_the_nodes() -> None:
    """Two nodes of one class (4 GPUs, 30 CPUs each). The model starts all three gangs (GPUs
    4 + 4, CPUs 30 + 30 summed over the class); packing in priority order puts both of the
    urgent gang's pods on the first node (best fit), the first 3-GPU gang on the second, and the
    other 3-GPU gang finds no node. Packed again with that gang first, all three fit (node 1:
    3 + 1 GPUs, node 2: 1 + 3), so the cycle emits the model's optimum, not greedy's two gangs."""
    snap = _packing_loses_a_gang()
    greedy = plan(snap, "greedy")
    assert sorted(n for n, k in workers_after(snap, greedy.plan).items() if k) == [
        "default/big-a",
        "default/urgent",
    ]  # the scenario: greedy (and the first packing) leave one 3-GPU gang out
    result = plan(snap, "cpsat")
    assert result.violations == []
    assert result.chosen == "cpsat"
    assert result.stats.objective == result.stats.solver_objective
    assert workers_after(snap, result.plan) == {
        "default/urgent": 2,
        "default/big-a": 1,
        "default/big-b": 1,
    }


def test_no_repack_unless_the_emitted_plans_check_still_fits_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cluster above, with a 0.9 s budget and checks of 0.5 s (standing for a large
    cluster's): once greedy's plan is checked, a repack of the model's optimum would end where
    the check of its plan no longer fits in the budget (MARGIN of it, less a check as long as
    greedy's), so the cycle does not repack: it emits the first packing's plan, greedy's two
    gangs, within its budget instead of the optimum past it (M hetero-resource 1011: 1.005 s
    of a 1 s budget when repacks could run to its end)."""
    snap = _packing_loses_a_gang()
    packed = _packed(monkeypatch)
    real_check = candidates.check  # type: ignore[attr-defined]  # patched below

    def slow_check(*a: Any, **k: Any) -> Any:
        time.sleep(0.5)
        return real_check(*a, **k)

    monkeypatch.setattr(candidates, "check", slow_check)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 0.9}})
    result = cycle_module.run_cycle(snap, cfg, NOW, "cpsat")
    assert result.stats.status == SolveStatus.OPTIMAL  # the optimum starts all three
    assert len(packed) == 1
    assert result.violations == []
    assert sorted(n for n, k in workers_after(snap, result.plan).items() if k) == [
        "default/big-a",
        "default/urgent",
    ]


class _Waiting(Beside):
    """The child beside, read to its end: where the cycle would read what has arrived, a test
    waits for everything (the child's passes end well within the test's minutes)."""

    pids: ClassVar[list[int]] = []
    events: ClassVar[list[str]] = []

    def __init__(self, work: Any) -> None:
        super().__init__(work)
        assert self.pid is not None
        _Waiting.pids.append(self.pid)

    def arrived(self, wait: float = 0.0) -> list[Any]:
        out = []
        while more := super().arrived(wait=60.0):
            out += more
        return out

    def stop(self) -> None:
        _Waiting.events.append("stop")
        super().stop()


def _beside_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model counts as large, no search runs, the cycle waits for the child beside, and
    the parent makes none of greedy's other passes itself (as when it has no time left)."""
    _Waiting.pids, _Waiting.events = [], []
    monkeypatch.setattr(cycle_module, "SMALL_MODEL", 0)
    monkeypatch.setattr(clock, "SEARCH_NEEDS", 1e9)
    monkeypatch.setattr(cycle_module, "Beside", _Waiting)
    monkeypatch.setattr(cycle_module, "variant", lambda *a, **k: None)


def test_greedys_pass_made_beside_in_a_child_is_a_candidate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Value-greedy's pass, run in the forked child beside greedy's first pass, comes back as a
    candidate: here its plan is worth more than greedy's (the parent made no other), so it is
    emitted, checked, at the value the same pass has in this process. Without the child the
    cycle emits greedy's plan. The child is reaped at the end of the cycle."""
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 5, NOW))
    cfg = SchedulerConfig()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    model = aggregate(problem, oldest_first(snap))
    built = build(model)
    st = passes_module.greedy_pass(snap, problem, VALUE_AWARE, None)
    assert st is not None
    minimize_evictions(st)
    a = assignment_of(st)
    values = to_values(model, built, a.sizes, a.counts)
    assert values is not None
    _beside_only(monkeypatch)
    result = cycle_module.run_cycle(
        snapshot_from_objects(synthetic_objects(16, 40, 20, 5, NOW)), cfg, NOW, "cpsat"
    )
    assert result.chosen == VALUE_AWARE and result.violations == []
    assert result.stats.objective == built.model.objective_value(values)
    assert len(_Waiting.pids) == 1 and gone(_Waiting.pids[0])
    monkeypatch.setattr(cycle_module, "BESIDE", False)
    without = cycle_module.run_cycle(
        snapshot_from_objects(synthetic_objects(16, 40, 20, 5, NOW)), cfg, NOW, "cpsat"
    )
    assert without.chosen == GREEDY
    assert without.stats.objective is not None and result.stats.objective > without.stats.objective


def test_the_child_beside_is_stopped_when_a_search_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search takes the second core: the child is killed before it starts (and is reaped)."""
    _beside_only(monkeypatch)
    monkeypatch.setattr(clock, "SEARCH_NEEDS", 0.0)
    real_init = cpsat.Search.__init__

    def init(self: cpsat.Search, *a: Any) -> None:
        _Waiting.events.append("search")
        real_init(self, *a)

    monkeypatch.setattr(cpsat.Search, "__init__", init)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 2.0}})
    assert cycle_module.run_cycle(snap, cfg, NOW, "cpsat").violations == []
    assert _Waiting.events[:2] == ["stop", "search"]
    assert gone(_Waiting.pids[0])


def test_a_cycle_that_fails_leaves_no_child_beside(monkeypatch: pytest.MonkeyPatch) -> None:
    _beside_only(monkeypatch)

    def failing(*a: Any) -> None:
        raise RuntimeError("checker crashed")

    monkeypatch.setattr(candidates, "check", failing)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 1, NOW))
    with pytest.raises(RuntimeError, match="checker crashed"):
        cycle_module.run_cycle(snap, SchedulerConfig(), NOW, "cpsat")
    assert len(_Waiting.pids) == 1 and gone(_Waiting.pids[0])


def test_no_child_beside_past_its_cluster_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past BESIDE_NODES schedulable nodes the child's copy-on-write costs the parent's passes
    more than its pass brings (docs/benchmarks.md section 1): greedy's passes stay in the cycle."""
    _beside_only(monkeypatch)
    tried = tried_variants(monkeypatch)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 5, NOW))
    monkeypatch.setattr(cycle_module, "BESIDE_NODES", 15)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}})
    assert cycle_module.run_cycle(snap, cfg, NOW, "cpsat").violations == []
    assert _Waiting.pids == [] and VALUE_AWARE in tried
    monkeypatch.setattr(cycle_module, "BESIDE_NODES", 16)
    tried.clear()
    assert cycle_module.run_cycle(snap, cfg, NOW, "cpsat").violations == []
    assert len(_Waiting.pids) == 1 and VALUE_AWARE not in tried


def test_a_pass_from_the_child_that_does_not_restore_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The child's pass is another candidate, never a reason for the cycle to fail: one whose
    state cannot be restored in the parent is left out and the cycle emits greedy's plan."""
    _beside_only(monkeypatch)

    def unrestorable(*a: Any) -> Any:
        raise ValueError("job default/x: size 2 does not fit where it was placed")

    monkeypatch.setattr(passes_module, "restore", unrestorable)
    snap = snapshot_from_objects(synthetic_objects(16, 40, 20, 5, NOW))
    result = cycle_module.run_cycle(snap, SchedulerConfig(), NOW, "cpsat")
    assert result.violations == [] and result.chosen == GREEDY


def test_with_nothing_left_to_run_the_cycle_waits_for_the_childs_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The child's value-greedy (0.5 s slower here) ends after the parent made its candidates:
    with nothing left to run, the parent waits for it, up to the child's end within the budget,
    and emits it (worth more than greedy's plan here, as above). A pass that would end past
    that (60 s slower, a 2 s budget) is not waited for: greedy's plan is emitted, long before
    the pass would have ended."""
    _Waiting.pids, _Waiting.events = [], []
    monkeypatch.setattr(cycle_module, "SMALL_MODEL", 0)
    monkeypatch.setattr(clock, "SEARCH_NEEDS", 1e9)
    monkeypatch.setattr(cycle_module, "variant", lambda *a, **k: None)
    real, delay = passes_module.greedy_pass, [0.5]

    def slowed(*a: Any, **k: Any) -> Any:
        time.sleep(delay[0])  # in the child: the parent's passes are variant's (none)
        return real(*a, **k)

    monkeypatch.setattr(passes_module, "greedy_pass", slowed)
    objects = synthetic_objects(16, 40, 20, 5, NOW)
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 10.0}})
    result = cycle_module.run_cycle(snapshot_from_objects(objects), cfg, NOW, "cpsat")
    assert result.chosen == VALUE_AWARE and result.violations == []
    delay[0] = 60.0
    cfg = SchedulerConfig.model_validate({"settings": {"cycleSeconds": 2.0}})
    began = time.perf_counter()
    result = cycle_module.run_cycle(snapshot_from_objects(objects), cfg, NOW, "cpsat")
    assert result.chosen == GREEDY and result.violations == []
    assert time.perf_counter() - began < 30.0
