"""NodeState's picks: a request no node held is not searched again until a node gets room
back, nor is a node it did not fit (taking only shrinks room), which returns to its place in
best fit's order when it does."""

from dataclasses import replace

import pytest

from solver_sched.domain import resources as res
from solver_sched.placement.nodes import NodeState
from tests.support.builders import gang, node, snapshot


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    fits = res.fits

    def counted(req: res.Resources, free: res.Resources) -> bool:
        calls[0] += 1
        return fits(req, free)

    monkeypatch.setattr(res, "fits", counted)
    return calls


def test_a_failed_pick_is_not_searched_again_until_a_node_gives_room_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three nodes with GPUs free but CPU taken by a running gang: the 8-CPU pod fits none."""
    snap = snapshot(
        [node(f"n{i}", gpus=8, cpu="8") for i in range(3)],
        gang("busy", 3, gpus=1, cpu="6", running_on=["n0", "n1", "n2"]),
        gang("wants", 1, gpus=1, cpu="8"),
    )
    state = NodeState(snap)
    want = snap.pods["default/wants-worker-0"]
    busy = snap.pods["default/busy-worker-1"]
    state.feasible(want)  # the nodes that could hold it empty, computed once
    calls = _counting(monkeypatch)
    assert state.pick(want, "default") is None
    assert calls[0] == 3  # every node tested once
    assert state.pick(want, "default") is None
    assert calls[0] == 3  # nothing grew: not searched again
    state.take(busy, "n1")  # taking room changes nothing
    assert state.pick(want, "default") is None
    assert calls[0] == 3
    state.give_back(busy, "n1")
    state.give_back(busy, "n1")  # n1 now has all 8 CPUs
    assert state.pick(want, "default") == "n1"


def test_a_node_a_pick_did_not_fit_is_not_tested_again_until_it_gets_room_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """n0 and n1 have GPUs free but their CPU is taken; n2 holds the 8-CPU pod twice."""
    snap = snapshot(
        [node(f"n{i}", gpus=8, cpu="8") for i in range(2)],
        node("n2", gpus=16, cpu="16"),
        gang("busy", 2, gpus=1, cpu="6", running_on=["n0", "n1"]),
        gang("wants", 2, gpus=1, cpu="8"),
    )
    state = NodeState(snap)
    first, second = (snap.pods[f"default/wants-worker-{i}"] for i in range(2))
    busy = snap.pods["default/busy-worker-0"]
    state.feasible(first)
    calls = _counting(monkeypatch)
    assert state.pick(first, "default") == "n2"  # best fit tests n0 and n1 first
    assert calls[0] == 3
    state.take(first, "n2")
    assert state.pick(second, "default") == "n2"
    assert calls[0] == 4  # n0 and n1 not tested again
    state.give_back(busy, "n0")  # n0 has its 8 CPUs back
    assert state.pick(second, "default") == "n0"
    assert calls[0] == 5


def test_a_node_that_gets_room_back_is_picked_in_its_place_in_best_fits_order() -> None:
    """Nodes a pick did not fit leave their bucket; one that gets room back without its free
    GPUs changing (a CPU-only pod given back) returns where it was: before n2, as if it had never
    left. Appended at the bucket's end instead, the next pick would be n2."""
    snap = snapshot(
        [node(f"n{i}", gpus=8, cpu="8") for i in range(3)],
        gang("busy", 2, gpus=0, cpu="6", running_on=["n0", "n1"]),
        gang("wants", 1, gpus=1, cpu="8"),
    )
    state = NodeState(snap)
    want = snap.pods["default/wants-worker-0"]
    assert state.pick(want, "default") == "n2"  # n0 and n1 hold no 8 CPUs
    state.give_back(snap.pods["default/busy-worker-0"], "n0")
    assert state.free["n0"].get(res.GPU) == state.free["n2"].get(res.GPU)  # the same bucket
    assert state.pick(want, "default") == "n0"
    state.give_back(snap.pods["default/busy-worker-1"], "n1")
    assert state.pick(want, "default") == "n0"


def test_a_pools_nodes_are_the_feasible_ones_of_its_cluster_and_class() -> None:
    """Pools take their nodes from feasible's, grouped once per pod shape by cluster and class
    (the packer asks a pool per shape, cluster and class): the same nodes, in the same order,
    as filtering feasible's for each."""
    base = snapshot(
        [node(f"n{i}", gpus=8 if i % 4 else 4) for i in range(12)], gang("wants", 1, gpus=4)
    )
    nodes = {
        n: replace(v, cluster="a" if i % 3 else "b") for i, (n, v) in enumerate(base.nodes.items())
    }
    snap = replace(base, nodes=nodes)
    class_of = {n: i % 4 for i, n in enumerate(nodes) if i != 5}  # n5 in no class
    state = NodeState(snap, class_of)
    want = snap.pods["default/wants-worker-0"]
    feasible = state.feasible(want)
    for cluster in ("a", "b", "c"):
        for cls in (None, 0, 1, 2, 3):
            expected = [
                n
                for n in feasible
                if nodes[n].cluster == cluster and (cls is None or class_of.get(n) == cls)
            ]
            assert list(state._members(want, cluster, cls)) == expected
            assert list(state._pool(want, cluster, cls).level) == expected
