"""room.py: the shrinks known to open no room (NoRoom) and take-backs grouped on one node."""

from __future__ import annotations

import random
from typing import Any

import pytest

from solver_sched.formulation.prepare import prepare
from solver_sched.placement.state import PlanState
from solver_sched.solvers.room import NoRoom, grouped, most_freed, summed
from tests.support.builders import NOW, config, gang, node, snapshot


def test_a_node_given_room_back_during_the_walk_reopens_the_shrinks_ahead_of_it() -> None:
    """The first pass walks only the shrinks not known to open no room. When a take-back of the
    walk gives node a room back, the known shrinks on a that come after it are walked too; one
    before it is not (the full walk met it before the take-back) but is open for the next."""
    given: list[str] = []
    no_room = NoRoom({0: [1], 1: [2, 1], 2: [2, 1]}, given, [])
    no_room.add((0, 1), ["a"])
    no_room.add((1, 1), ["a"])
    no_room.add((2, 1), ["a", "c"])
    no_room.add((2, 2), ["b"])
    walked = []
    for v, size in no_room.walk({"j": 3}, ["j"] * 3, lambda v, s: True):
        walked.append((v, size))
        if (v, size) == (1, 2):
            given.append("a")  # the take-back of (1, 2) gives a room back
    assert walked == [(1, 2), (1, 1), (2, 1)]
    assert set(no_room.open) == {(0, 1), (1, 1), (1, 2), (2, 1)}  # (2, 2): b got nothing back


def test_the_walk_passes_over_sizes_a_job_is_not_above_and_those_visit_refuses() -> None:
    """Jobs in ``smaller``'s order, each one's sizes largest first, only those below the job's
    size now, and only where ``visit`` lets them through."""
    no_room = NoRoom({5: [4, 2, 1], 3: [2, 1], 7: [1]}, [], [])
    size, names = {"e5": 2, "e3": 4, "e7": 1}, [f"e{v}" for v in range(8)]
    walked = list(no_room.walk(size, names, lambda v, s: (v, s) != (3, 1)))
    assert walked == [(5, 1), (3, 2)]


def test_a_break_stays_known_until_one_of_its_nodes_gets_room_back_or_its_job_grows() -> None:
    """Breaks (size 0) are remembered beside the shrinks: known once added, no longer once a
    node they free gets room back or their job grows; a break on other nodes stays known, and
    the walk of the shrinks never yields a break."""
    given: list[str] = []
    grown: list[int] = []
    no_room = NoRoom({1: [1]}, given, grown)
    assert not no_room.known(3, 0)
    no_room.add((3, 0), ["a"])
    no_room.add((4, 0), ["b"])
    no_room.add((5, 0), ["c"])
    assert no_room.known(3, 0) and no_room.known(4, 0) and no_room.known(5, 0)
    assert list(no_room.walk({"j": 2}, ["j"] * 6, lambda v, s: True)) == [(1, 1)]
    given.append("a")
    assert not no_room.known(3, 0)
    assert no_room.known(4, 0)
    grown.append(4)
    assert not no_room.known(4, 0)
    assert no_room.known(5, 0)
    no_room.add((3, 0), ["a"])  # tested again and still no room: known again
    assert no_room.known(3, 0)


def test_a_shrink_stays_known_until_one_of_its_nodes_gets_room_back() -> None:
    """A shrink is known once added (it leaves ``open``), and no longer once a node it frees gets
    room back; one on other nodes stays known. A take-back added twice (a shrink, a break) is
    recorded once."""
    given: list[str] = []
    no_room = NoRoom({1: [2, 1], 2: [1]}, given, [])
    assert not no_room.known(1, 1)
    for pair, nodes in (((1, 1), ["a"]), ((1, 1), ["a"]), ((2, 1), ["b"]), ((3, 0), ["b"])):
        no_room.add(pair, nodes)
    no_room.add((3, 0), ["b"])
    assert no_room.known(1, 1) and no_room.known(2, 1) and not no_room.known(1, 2)
    assert no_room.by_node == {"a": [(1, 1)], "b": [(2, 1), (3, 0)]}
    assert no_room.by_job == {1: [(1, 1)], 2: [(2, 1)], 3: [(3, 0)]}
    given.append("a")
    assert not no_room.known(1, 1)
    assert no_room.known(2, 1)


def test_a_shrink_is_no_longer_known_once_its_job_grew_back() -> None:
    """A shrink of job 1 recorded while job 1 was smaller frees more once a rollback restores
    job 1's pods (nodes the record does not list): job 1's growth reopens it, and a plan state
    records the growth when a rollback undoes a shrink."""
    grown: list[int] = []
    no_room = NoRoom({1: [2, 1], 2: [1]}, [], grown)
    no_room.add((1, 1), ["a"])
    no_room.add((2, 1), ["b"])
    grown.append(1)
    assert no_room.stale()
    assert no_room.sync() == [(1, 1)]
    assert set(no_room.open) == {(1, 2), (1, 1)}
    el: dict[str, Any] = {
        "gpus": 4,
        "min_member": 1,
        "max_member": 2,
        "size_policy": "power-of-two",
    }
    snap = snapshot(node("a", gpus=8), gang("e", 2, running_on=["a", "a"], **el), gang("p", 1))
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = PlanState(snap, problem)
    e = next(j for j, jm in enumerate(problem.jobs) if jm.name == "default/e")
    mark = st.mark()
    assert st.resize(e, 1, check_quota=False)
    assert st.grown == []
    st.rollback(mark)
    assert st.grown == [e]


def _grouped_per_node(
    steps: list[tuple[int, int]], released: Any, room: Any, most: Any
) -> list[tuple[int, int]]:
    """grouped as first written, node by node over every victim: the reference."""
    sizes: dict[int, list[int]] = {}
    for v, size in steps:
        sizes.setdefault(v, []).append(size)
    best = None
    for n in room(most):
        group = []
        for v, ss in sizes.items():
            top = released(v, min(ss)).get(n, 0)
            if top:
                group.append((v, max(s for s in ss if released(v, s).get(n, 0) == top)))
        cost = (sum(size == 0 for _, size in group), len(group), n)
        if best is None or cost < best[0]:
            best = (cost, group)
    return best[1] if best else []


@pytest.mark.parametrize("seed", range(40))
def test_grouped_by_victim_is_grouped_node_by_node(seed: int) -> None:
    """grouped walks each victim's nodes instead of every victim on every node with room (at M
    on a what-if dump: 1.3 M lookups, 70% of greedy): the same group, on random take-backs."""
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(rng.randint(1, 12))]
    freed: dict[tuple[int, int], dict[str, int]] = {}
    steps = []
    for v in range(rng.randint(1, 8)):
        sizes = sorted(rng.sample(range(0, 9), rng.randint(1, 4)), reverse=True)
        on = rng.sample(nodes, rng.randint(1, len(nodes)))
        per = {n: rng.randint(0, 4) for n in on}
        for size in sizes:  # a smaller size frees at least as much, on the same nodes
            per = {n: g + rng.randint(0, 2) * (size < max(sizes)) for n, g in per.items()}
            freed[(v, size)] = dict(per)
            steps.append((v, size))
    rng.shuffle(steps)
    with_room = [n for n in nodes if rng.random() < 0.6]

    def released(v: int, size: int) -> dict[str, int]:
        return freed[(v, size)]

    def room(most: Any) -> list[str]:
        return with_room

    assert grouped(steps, released, room, {}) == _grouped_per_node(steps, released, room, {})


def test_what_victims_free_is_summed_per_node_on_the_nodes_asked_for_only() -> None:
    """most_freed sums each victim's release (at its size in ``least``) node by node; asked for
    some nodes (the walk's near nodes, the memo's nodes given room back) it sums nothing else."""
    freed = {
        (0, 1): {"a": {"gpu": 2, "cpu": 4}, "b": {"gpu": 1}},
        (1, 0): {"a": {"gpu": 1}, "c": {"gpu": 8}},
    }
    least = {0: 1, 1: 0}
    released = lambda v, size: freed[(v, size)]  # noqa: E731
    every = {"a": {"gpu": 3, "cpu": 4}, "b": {"gpu": 1}, "c": {"gpu": 8}}
    assert most_freed(least, released) == every
    assert most_freed(least, released, {"a", "d"}) == {"a": {"gpu": 3, "cpu": 4}}
    assert summed(freed.values(), {"c"}) == {"c": {"gpu": 8}}
    assert summed(freed.values(), set()) == {}
