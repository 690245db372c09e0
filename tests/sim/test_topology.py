"""Over random topology presets, the properties every plan keeps:
the independent checker accepts it, no gang that requires a rack is split, and no started gang is
split while one rack could have held it."""

from __future__ import annotations

import pytest

from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.cycle import run_cycle
from solver_sched.planning.check import check
from solver_sched.sim.topology import metrics
from solver_sched.solvers.topology_baselines import BASELINES
from solver_sched.synthetic.topology import RACK_LABEL, topology_objects
from tests.support.builders import NOW, snapshot

CFG = SchedulerConfig(
    settings=Settings(time_limit_seconds=10, workers=1, random_seed=0, priority_preemption=False)
)


@pytest.mark.parametrize("seed", range(8))
def test_every_plan_keeps_topology_on_random_presets(seed: int) -> None:
    snap = snapshot(topology_objects("rack8", 500 + seed, NOW))
    topo = snap.topologies["default"]
    plans = {name: f(snap, topo) for name, f in BASELINES.items()}
    for backend in ("cpsat", "milp", "greedy"):
        result = run_cycle(snap, CFG, NOW, backend)
        assert not result.violations, result.violations
        plans[backend] = result.plan
    for name, plan in plans.items():
        assert check(snap, plan, NOW, topology=topo) == [], name
        got = metrics(snap, plan, topo, RACK_LABEL)
        assert got.required_split == 0, name
        if name in ("cpsat", "milp", "greedy"):
            assert got.split_but_fit == 0, name


@pytest.mark.parametrize("seed", range(4))
def test_greedy_is_a_complete_hint_of_the_topology_model(seed: int) -> None:
    from solver_sched.formulation.build import build
    from solver_sched.formulation.prepare import prepare
    from solver_sched.formulation.values import to_values
    from solver_sched.solvers.greedy import assignment_of, greedy_plan

    snap = snapshot(topology_objects("rack16", 700 + seed, NOW))
    problem = prepare(snap, CFG.weights, CFG.settings, NOW, snap.topologies["default"])
    built = build(problem)
    assert built.vars.d and built.vars.zt  # the topology rows are there
    greedy = assignment_of(greedy_plan(snap, problem))
    values = to_values(problem, built, greedy.sizes, greedy.counts)
    assert values is not None and built.model.violated(values) == []
