"""compact: a plan's sizes packed again best-fit decreasing keep their value and split fewer
preferred gangs than the order that placed them."""

from __future__ import annotations

from solver_sched.config.schema import SchedulerConfig
from solver_sched.domain.topology import choose
from solver_sched.formulation.prepare import prepare
from solver_sched.io import manifests as m
from solver_sched.planning.pack import compact
from solver_sched.solvers.greedy import greedy_plan
from tests.placement.test_topology import PREF, cfg, racks
from tests.support.builders import NOW, snapshot


def _racks_of(st, job: str) -> set[str]:
    pods = [p for p in st.placed if st.snapshot.pods[p].job == job]
    return {st.snapshot.nodes[st.placed[p]].labels["example.com/rack"] for p in pods}


def test_compact_packs_the_largest_gang_first_and_splits_none() -> None:
    # r1: 12 free GPUs, r2: 8. Queue order a (4), b (8), c (8): BestFit puts a in r2, b in r1,
    # and c fits no rack any more. Largest first: b in r2, c in r1, a in what r1 has left.
    layout = {f"n{k}": ("b1", "r1") for k in range(3)} | {"m0": ("b1", "r2"), "m1": ("b1", "r2")}
    objs = [*racks(layout)]
    for name, pods in (("a", 1), ("b", 2), ("c", 2)):
        objs += m.gang(name, pods, gpus=4, annotations=PREF)
    snap = snapshot(*objs)
    config: SchedulerConfig = cfg()
    topo, _ = choose(config.topology.levels, config.topology.kueue_topology, snap.topologies)
    problem = prepare(snap, config.weights, config.settings, NOW, topo)
    st = greedy_plan(snap, problem)
    assert [len(_racks_of(st, f"default/{g}")) for g in "abc"] == [1, 1, 2]  # the premise
    packed, notes, failed = compact(snap, problem, st)
    assert not failed and not notes
    assert packed.size == st.size  # the same sizes: the same placement value
    assert [len(_racks_of(packed, f"default/{g}")) for g in "abc"] == [1, 1, 1]
