"""The simulator's racks (issue 15): a gang over k racks runs 1 + s (k - 1) times slower, the
snapshot carries the racks and the gangs' rack preference, and the topology baselines run as
policies."""

from __future__ import annotations

import pytest

from solver_sched.sim.engine import simulate
from solver_sched.sim.metrics import summarize
from solver_sched.sim.model import SimParams, TraceJob
from solver_sched.sim.policies import RACK_LABEL, SnapshotBuilder, make_policy, parse_policies
from solver_sched.sim.state import SimState

JOB = TraceJob("g", arrival=0.0, duration=1000.0, gpus=16, gpus_per_pod=8)


def _finish(rack_nodes: int, nodes: tuple[str, str], slowdown: float = 0.1) -> float:
    params = SimParams(gpus=32, gpus_per_node=8, rack_nodes=rack_nodes, spread_slowdown=slowdown)
    state = SimState([JOB], params, elastic=False)
    run = state.jobs["g"]
    run.visible = True
    state.apply([(run.pods[0], nodes[0]), (run.pods[1], nodes[1])], [], 0.0)
    t = 0.0
    while run.finish is None:
        state.advance(t, t + 60.0)
        t += 60.0
    assert run.max_racks == (1 if rack_nodes == 0 else len({state.rack[n] for n in nodes}))
    return run.finish


def test_a_gang_over_two_racks_takes_ten_percent_longer() -> None:
    assert _finish(2, ("node-000", "node-001")) == pytest.approx(1000.0)  # one rack
    assert _finish(2, ("node-000", "node-002")) == pytest.approx(1100.0)  # two racks
    assert _finish(1, ("node-000", "node-001"), slowdown=0.25) == pytest.approx(1250.0)


def test_without_racks_nothing_slows_down() -> None:
    state = SimState([JOB], SimParams(gpus=32, gpus_per_node=8), elastic=False)
    assert not state.rack
    assert SimParams().slowdown(3) == 1.0


def test_the_snapshot_carries_racks_and_the_gangs_preference() -> None:
    params = SimParams(gpus=32, gpus_per_node=8, rack_nodes=2)
    single = TraceJob("one", arrival=0.0, duration=10.0, gpus=8, gpus_per_pod=8)
    state = SimState([JOB, single], params, elastic=False)
    for j in state.jobs.values():
        j.visible = True
    snap = SnapshotBuilder(state).snapshot(state)
    assert [snap.nodes[n].labels[RACK_LABEL] for n in sorted(snap.nodes)] == [
        "r00",
        "r00",
        "r01",
        "r01",
    ]
    assert "default" in snap.topologies
    jobs = {j.name.split("/")[-1]: j for j in snap.jobs.values()}
    assert jobs["g"].topology is not None and jobs["one"].topology is None


@pytest.mark.parametrize("name", ["kueue-bestfit", "volcano-tiers", "solver-sched"])
def test_topology_policies_keep_a_gang_in_the_rack_that_holds_it(name: str) -> None:
    # racks of 2 nodes; a 1-node job first takes node-000, then a 2-node gang arrives: in one rack
    # it is r01 (node-002, node-003); a placement that ignored racks could take node-001 + one
    # of r01 and pay the slowdown
    first = TraceJob("first", arrival=0.0, duration=10_000.0, gpus=8, gpus_per_pod=8)
    gang = TraceJob("gang", arrival=30.0, duration=1000.0, gpus=16, gpus_per_pod=8)
    assert parse_policies(name) == [name]
    params = SimParams(gpus=32, gpus_per_node=8, rack_nodes=2)
    run = simulate([first, gang], make_policy(name, time_limit=1.0), params)
    jobs = {j.name: j for j in run.jobs}
    assert jobs["gang"].max_racks == 1
    assert jobs["gang"].finish == pytest.approx(60.0 + 1000.0)
    assert summarize(run)["spread_jobs"] == 0
