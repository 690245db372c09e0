"""fences.py: the domains a required gang's victims are sought in, one at a time."""

from __future__ import annotations

from typing import Any

import pytest

from solver_sched.domain.topology import Topology
from solver_sched.formulation.prepare import prepare
from solver_sched.io import manifests as m
from solver_sched.placement.state import PlanState
from solver_sched.solvers import greedy, victims
from solver_sched.solvers.fences import domains_to_try, fences
from tests.placement.test_topology import LEVELS, RACK, REQ
from tests.placement.test_topology import cfg as rack_cfg
from tests.placement.test_topology import racks as rack_nodes
from tests.solvers.test_victims import _rack_cluster
from tests.support.builders import NOW, other, snapshot


def test_domains_to_try_names_racks_in_the_order_their_victims_free_enough() -> None:
    """Walking the victims in the search's order (priority, then name), r01's two priority-0
    gangs free 16 GPUs before r00's priority-50 one is reached, then r02's and r03's: at most
    DOMAINS_TRIED racks are named, r00 not among them."""
    snap = _rack_cluster(5, 2, priorities={"n00-1": 50})
    c = rack_cfg()
    problem = prepare(snap, c.weights, c.settings, NOW, Topology(LEVELS))
    st = PlanState(snap, problem)
    v = victims.Victims(st, greedy.queue_order(problem))
    running = [j for j, jm in enumerate(problem.jobs) if jm.current]
    steps = [
        (j, 0)
        for j in sorted(running, key=lambda j: (problem.jobs[j].priority, problem.jobs[j].name))
    ]
    found = domains_to_try(st, v.released, RACK, 16, steps)
    assert found == [(RACK, ("b1", r)) for r in ("r01", "r02", "r03")]
    assert domains_to_try(st, v.released, RACK, 24, steps) == []  # no rack holds 24


def _three_racks() -> PlanState:
    """Racks r00 (a0, a1), r01 (b0, b1), r02 (c0, c1) of 8-GPU nodes, all taken by another
    scheduler's pods but for 4 GPUs of c1; one pending gang that requires a rack."""
    layout = {
        n: ("b1", r)
        for r, ns in (("r00", "a"), ("r01", "b"), ("r02", "c"))
        for n in (ns + "0", ns + "1")
    }
    held = [other(f"sys-{n}", n, 4 if n == "c1" else 8) for n in layout]
    snap = snapshot(rack_nodes(layout, gpus=8), *held, m.gang("g", 1, gpus=8, annotations=REQ))
    c = rack_cfg()
    return PlanState(snap, prepare(snap, c.weights, c.settings, NOW, Topology(LEVELS)))


def test_domains_to_try_sums_each_victims_nodes_and_counts_a_smaller_size_once() -> None:
    """A hand-made ``released`` (victim, size) -> GPUs per node: victim 1 frees 4 + 4 in r00,
    victim 2 4 then 8 in r01 as it goes down from size 4 to 0 (8 in all, not 12), victim 3 8 in
    r02, which had 4 free: r02 reaches 12 first, then r00 (victim 5), then r01 (victim 6)."""
    st = _three_racks()
    freed = {
        (1, 0): {"a0": 4, "a1": 4},
        (2, 4): {"b0": 4},
        (3, 0): {"c0": 8},
        (2, 0): {"b0": 8},
        (5, 0): {"a1": 4},
        (6, 0): {"b1": 4},
    }
    steps = list(freed)

    def released(v: int, size: int) -> dict[str, int]:
        return freed[(v, size)]

    rack = [(RACK, ("b1", r)) for r in ("r00", "r01", "r02")]
    assert domains_to_try(st, released, RACK, 12, steps) == [rack[2], rack[0], rack[1]]
    # a victim freeing more in r02 once r02 was named changes nothing
    freed[(7, 0)] = {"c1": 4}
    later = [*steps[:3], (7, 0), *steps[3:]]
    assert domains_to_try(st, released, RACK, 12, later) == [rack[2], rack[0], rack[1]]
    assert domains_to_try(st, released, RACK, 8, steps[:1]) == [rack[0]]  # 4 + 4
    assert domains_to_try(st, released, RACK, 9, steps[:1]) == []  # not 9
    # r01 by victim 2 alone: 8 GPUs at size 0, not the 4 + 8 of both sizes
    assert domains_to_try(st, released, RACK, 12, [steps[1], steps[3]]) == []
    assert domains_to_try(st, released, RACK, 8, [steps[1], steps[3]]) == [rack[1]]


@pytest.mark.parametrize(
    ("running_on", "expected"),
    [
        (["a0", "a1"], [None, (RACK, ("b1", "r00"))]),  # its rack, after anywhere
        (["a0", "b0"], []),  # split over two racks: it grows nowhere
        (["a0", "x"], []),  # one pod outside every rack: likewise
    ],
)
def test_a_running_required_gang_grows_only_inside_the_rack_its_pods_are_in(
    running_on: list[str], expected: list[object]
) -> None:
    layout = {n: ("b1", r) for r, ns in (("r00", "a"), ("r01", "b")) for n in (ns + "0", ns + "1")}
    el: dict[str, Any] = {"min_member": 2, "max_member": 4, "size_policy": "power-of-two"}
    snap = snapshot(
        rack_nodes(layout, gpus=8),
        m.node("x", gpus=8),
        m.gang("g", 4, gpus=4, running_on=running_on, annotations=REQ, **el),
    )
    c = rack_cfg()
    st = PlanState(snap, prepare(snap, c.weights, c.settings, NOW, Topology(LEVELS)))
    (j,) = range(len(st.problem.jobs))

    def nothing(v: int, size: int) -> dict[str, int]:
        return {}

    assert list(fences(st, j, 4, 8, nothing, list)) == expected
