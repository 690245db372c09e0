"""The topology baselines as cycle candidates: a baseline's plan replays onto the cycle's plan state
node for node, and the plan a cycle emits is never worse by the model's objective than either
baseline's (the structural "never below greedy" of issue 15), even when the search has no time."""

from __future__ import annotations

from functools import partial

import pytest

from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.cycle import _created, _score, run_cycle
from solver_sched.domain.topology import choose
from solver_sched.formulation.aggregate import aggregate
from solver_sched.formulation.build import build
from solver_sched.formulation.prepare import prepare
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.solvers.topology_baselines import BASELINES, replay
from solver_sched.synthetic.topology import topology_objects
from tests.support.builders import NOW

CFG = SchedulerConfig(
    settings=Settings(
        time_limit_seconds=0.01, workers=1, priority_preemption=False, queue_reclaim=False
    )
)


@pytest.mark.parametrize("seed", range(4))
def test_a_baseline_plan_replays_node_for_node(seed: int) -> None:
    snap = snapshot_from_objects(topology_objects("rack8", seed, NOW))
    topology, _ = choose((), None, snap.topologies)
    problem = prepare(snap, CFG.weights, CFG.settings, NOW, topology)
    for baseline in BASELINES.values():
        plan = baseline(snap, topology)
        st = replay(snap, problem, plan)
        jobs = {b.job for b in plan.binds}
        assert {p: n for p, n in st.placed.items() if snap.pods[p].job in jobs} == {
            b.pod: b.node for b in plan.binds
        }


@pytest.mark.parametrize("preset", ["rack8", "rack16"])
@pytest.mark.parametrize("seed", [5, 8, 9])  # below a baseline without the rule
def test_the_cycle_is_never_below_a_topology_baseline(preset: str, seed: int) -> None:
    snap = snapshot_from_objects(topology_objects(preset, seed, NOW))
    result = run_cycle(snap, CFG, NOW)
    assert not result.violations
    topology, _ = choose((), None, snap.topologies)
    problem = prepare(snap, CFG.weights, CFG.settings, NOW, topology)
    model = aggregate(problem, partial(_created, snap))
    built = build(model)
    assert result.stats.objective is not None
    for name, baseline in BASELINES.items():
        c = _score(model, built, name, replay(snap, problem, baseline(snap, topology)), [], None)
        assert c.value is not None
        assert result.stats.objective >= c.value, name
