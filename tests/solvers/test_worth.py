"""What value-aware greedy counts a start and a take-back worth (solvers/worth.py) against the
model's own guaranteed band (rule 9), read from the model's terms on the plan states before and
after, on synthetic clusters with queues, mins, priorities, waiting gangs and elastic jobs.

Starts are checked in a plan that breaks nothing and take-backs in one that starts nothing, so
no start bonus is withheld (formulation/start_bonus.py): worth leaves that out, as the model
charges it only where gangs of the broken gang's tier start in the same plan."""

from collections.abc import Iterator

import pytest

from solver_sched.config.schema import SchedulerConfig
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.aggregate import aggregate, oldest_first
from solver_sched.formulation.build import Built, build
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.values import to_values
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.placement.state import PlanState
from solver_sched.solvers.greedy import assignment_of, queue_order
from solver_sched.solvers.worth import start_gain, take_loss
from solver_sched.synthetic import SIZES, preset_objects
from tests.support.builders import NOW, gang, node, quota_tree, snapshot

# full: no pending gang fits without victims, so it has no start to check
STARTS = [(p, s) for p in ("hard", "light", "fragmented", "elastic", "hetero") for s in (1, 2)]
TAKE_BACKS = [(p, s) for p in ("hard", "full", "fragmented", "elastic") for s in (1, 2)]


class _Band:
    """The guaranteed band of the model's objective for a plan state: the model (jobs
    aggregated, as the solver sees them) values the state's sizes and placements."""

    def __init__(self, snap: ClusterSnapshot) -> None:
        cfg = SchedulerConfig()
        self.problem = prepare(snap, cfg.weights, cfg.settings, NOW)
        self.model = aggregate(self.problem, oldest_first(snap))
        self.built: Built = build(self.model)

    def __call__(self, st: PlanState) -> int:
        a = assignment_of(st)
        values = to_values(self.model, self.built, a.sizes, a.counts)
        assert values is not None  # every size an option
        terms = self.built.model.evaluate(values)
        return sum(terms[name] for name in self.built.model.guaranteed)


def _case(preset: str, seed: int) -> tuple[ClusterSnapshot, _Band]:
    snap = snapshot_from_objects(preset_objects(preset, seed, NOW, SIZES["S"]))
    return snap, _Band(snap)


def _starts(problem: Problem) -> Iterator[tuple[int, int]]:
    """Pending gangs at their smallest size, in queue order."""
    for j in queue_order(problem):
        jm = problem.jobs[j]
        if jm.starting and not jm.current:
            sizes = [o.size for o in jm.options if o.size > 0]
            if sizes:
                yield j, min(sizes)


@pytest.mark.parametrize(("preset", "seed"), STARTS)
def test_a_start_is_worth_what_the_model_adds_for_it(preset: str, seed: int) -> None:
    snap, band = _case(preset, seed)
    st = PlanState(snap, band.problem)
    checked = waited = covering = 0
    for j, target in _starts(band.problem):
        before, mark = band(st), st.mark()
        gain = start_gain(st, j, target)
        rows = st.rows_of.get(j, ())
        below = any(band.problem.quotas[r].min_gpus > st.covered[r] for r in rows)
        if not st.resize(j, target):
            st.rollback(mark)
            continue
        assert gain == band(st) - before, band.problem.jobs[j].name
        checked += 1
        waited += band.problem.jobs[j].waiting_hours > 0
        covering += below
    # the starts checked paid every part of the gain: units, bonus, waiting, queue mins
    assert checked >= 5 and waited and covering


@pytest.mark.parametrize(("preset", "seed"), TAKE_BACKS)
def test_a_take_back_gives_up_what_the_model_loses_by_it(preset: str, seed: int) -> None:
    snap, band = _case(preset, seed)
    problem = band.problem
    st = PlanState(snap, problem)
    base = band(st)
    breaks = shrinks = uncovering = 0
    for v, jm in enumerate(problem.jobs):
        now = jm.option(jm.current) if jm.running_ok else None
        if now is None or not now.size:
            continue
        for o in jm.options:
            if o.size >= jm.current:
                continue
            mark = st.mark()
            loss = take_loss(st, v, o.size)
            units = jm.tier_weight * (now.guaranteed_units - o.guaranteed_units)
            assert st.resize(v, o.size, check_quota=False)
            assert loss == base - band(st), (jm.name, o.size)
            breaks += o.size == 0
            shrinks += o.size > 0
            # more than its units and the break: a queue's min it covered
            uncovering += loss > units + (problem.gang_break if o.size == 0 else 0)
            st.rollback(mark)
    assert breaks and uncovering
    assert shrinks or preset != "elastic"


def test_an_elastic_shrink_above_the_min_gives_up_nothing_guaranteed() -> None:
    snap, band = _case("elastic", 1)
    st = PlanState(snap, band.problem)
    seen = 0
    for v, jm in enumerate(band.problem.jobs):
        now = jm.option(jm.current) if jm.running_ok else None
        if now is None:
            continue
        for o in jm.options:
            if 0 < o.size < jm.current and o.guaranteed_units == now.guaranteed_units:
                assert take_loss(st, v, o.size) == 0
                seen += 1
    assert seen


def test_completing_a_partial_gang_is_worth_what_the_model_adds_over_releasing_it() -> None:
    # p runs 2 of its 4 workers (a crash mid-bind); the model's choice is 4 or 0, and both
    # bonuses (start, waiting) and the queue's min count for 4 against 0
    tree = quota_tree(
        {
            "name": "root",
            "children": [{"name": "a", "namespaces": ["default"], "min": {"nvidia.com/gpu": "8"}}],
        }
    )
    snap = snapshot(
        node("n", gpus=8), tree, gang("p", 4, running_on=["n", "n"], created="2026-01-01T09:00:00Z")
    )
    band = _Band(snap)
    (j,) = [j for j, jm in enumerate(band.problem.jobs) if jm.name == "default/p"]
    jm = band.problem.jobs[j]
    assert jm.starting and jm.current == 2 and jm.option(2) is None and jm.waiting_hours == 3
    st = PlanState(snap, band.problem)
    gain = start_gain(st, j, 4)
    assert st.resize(j, 0, check_quota=False)
    released = band(st)
    assert st.resize(j, 4)
    assert gain == band(st) - released
