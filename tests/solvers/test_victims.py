"""Greedy's victim search: which take-backs it tries, alone or grouped on one node, and which cost
nothing of its step budget."""

from typing import Any

import pytest

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import run_cycle
from solver_sched.formulation.prepare import prepare
from solver_sched.io import manifests as m
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.placement.state import PlanState
from solver_sched.solvers import cpsat, greedy, victims, walk, worth
from solver_sched.solvers.result import SolveStatus
from solver_sched.synthetic import PRESETS, SIZES, preset_objects
from tests.placement.test_topology import RACK, REQ, domains_of
from tests.placement.test_topology import cfg as rack_cfg
from tests.placement.test_topology import racks as rack_nodes
from tests.support.builders import (
    NOW,
    config,
    gang,
    leaf_queues,
    node,
    on_node_only,
    plan,
    pod,
    pod_group,
    quota_tree,
    snapshot,
    workers_after,
)


def _elastic(gpus: int, most: int) -> dict[str, Any]:
    """Gang keywords: elastic from 1 pod up to ``most``, power-of-two sizes, ``gpus`` per pod."""
    return {"gpus": gpus, "min_member": 1, "max_member": most, "size_policy": "power-of-two"}


def test_victims_in_a_queue_at_its_min_do_not_use_up_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Queue a borrows (6 GPUs in use, min 4): two of its three elastic jobs may shrink, then it sits
    # at its min. Its jobs have the lowest priority, so they are tried first; the room the new gang
    # needs comes from the third take-back, in queue b.
    monkeypatch.setattr(walk, "MAX_VICTIM_STEPS", 3)
    tree = leaf_queues(("a", "team-a"), ("b", "team-b"), gpus={"a": {"min": 4}})
    elastic = _elastic(1, 2)
    snap = snapshot(
        node("n", gpus=8),
        tree,
        *(gang(f"a{i}", 2, namespace="team-a", running_on=["n"] * 2, **elastic) for i in (1, 2, 3)),
        gang("b1", 2, namespace="team-b", running_on=["n"] * 2, priority=10, **elastic),
        gang("new", 3, namespace="team-b", priority=100),
    )
    result = plan(snap, "greedy")
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert after["team-b/new"] == 3
    assert sum(after[f"team-a/a{i}"] for i in (1, 2, 3)) == 4  # queue a keeps its min
    assert after["team-b/b1"] == 1


def test_once_the_quota_allows_a_start_only_take_backs_that_open_a_node_slot_are_taken() -> None:
    # root (max 22 GPUs) holds 18; big needs one 8-GPU pod, so the quota asks for 4 GPUs back and
    # a node for 8 GPUs. Shrinking a and b clears the quota; then breaking c or d would leave
    # their nodes at 7 free GPUs, and only breaking g opens a slot (on n3). Before, every
    # take-back counted while the quota had blocked the start at first: c, d and g were broken.
    tree = quota_tree({"name": "root", "namespaces": ["default"], "max": {"nvidia.com/gpu": "22"}})
    elastic = _elastic(1, 4)
    snap = snapshot(
        node("n1", gpus=8),
        node("n2", gpus=8),
        node("n3", gpus=8),
        tree,
        gang("a", 4, running_on=["n1"] * 4, priority=0, **elastic),
        gang("b", 4, running_on=["n2"] * 4, priority=1, **elastic),
        gang("c", 4, running_on=["n1"] * 4, priority=5),
        gang("d", 4, running_on=["n2"] * 4, priority=5),
        gang("g", 2, running_on=["n3"] * 2, priority=5),
        gang("big", 1, gpus=8, priority=100),
    )
    problem = prepare(snap, config().weights, config().settings, NOW)
    st = greedy.greedy_plan(snap, problem)
    assert st.size["default/big"] == 1
    assert (st.size["default/c"], st.size["default/d"], st.size["default/g"]) == (4, 4, 0)
    result = plan(snap, "greedy")
    assert result.violations == []
    assert workers_after(snap, result.plan)["default/big"] == 1


@pytest.mark.parametrize("backend", ["greedy", "cpsat"])
def test_take_backs_that_open_a_node_only_together_are_taken_together(backend: str) -> None:
    # e1 and e2 (two 4-GPU pods each, sizes 1 or 2) both have worker 1 on a. Shrinking either
    # frees 4 GPUs on a, too few for big's 8-GPU pod, so neither is taken alone; together they
    # empty a.
    elastic = _elastic(4, 2)
    snap = snapshot(
        *(node(n, gpus=8) for n in "abc"),
        gang("e1", 2, running_on=["b", "a"], **elastic),
        gang("e2", 2, running_on=["c", "a"], **elastic),
        gang("big", 1, gpus=8),
    )
    result = plan(snap, backend)
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert (after["default/big"], after["default/e1"], after["default/e2"]) == (1, 1, 1)
    assert [b.node for b in result.plan.binds] == ["a"]


def _pairs(*names: str, **extra: Any) -> list[dict[str, Any]]:
    """Elastic jobs of two 4-GPU pods (sizes 1 or 2); job i has worker 0 on fillers[i] and
    worker 1 on the shared node. Fillers are half taken by a 4-GPU priority-1000 gang."""
    elastic = _elastic(4, 2)
    objs: list[dict[str, Any]] = []
    for name, (filler, shared) in zip(names, extra["layout"], strict=True):
        objs += gang(f"f{name}", 1, gpus=4, running_on=[filler], priority=1000)
        objs += gang(name, 2, running_on=[filler, shared], **elastic, **extra.get("job", {}))
    return objs


def test_a_group_takes_shrinks_where_breaks_would_free_no_more() -> None:
    # e1 and e2 are also breakable (big has priority 10), but shrinking them frees as much on a.
    snap = snapshot(
        *(node(n, gpus=8) for n in "abc"),
        *_pairs("e1", "e2", layout=[("b", "a"), ("c", "a")]),
        gang("big", 1, gpus=8, priority=10),
        gang("p0", 1, gpus=4),
    )
    st = greedy.greedy_plan(snap, prepare(snap, config().weights, config().settings, NOW))
    assert (st.size["default/big"], st.size["default/e1"], st.size["default/e2"]) == (1, 1, 1)


def test_a_group_opens_a_node_the_gang_may_use() -> None:
    # Groups can open a (zone x) or d (zone y); big must run in zone y.
    snap = snapshot(
        node("a", gpus=8, labels={"zone": "x"}),
        node("d", gpus=8, labels={"zone": "y"}),
        *(node(n, gpus=8) for n in "bcfg"),
        *_pairs("e1", "e2", "e3", "e4", layout=[("b", "a"), ("c", "a"), ("f", "d"), ("g", "d")]),
        pod_group("big", min_member=1),
        pod("big-worker-0", group="big", gpus=8, node_selector={"zone": "y"}),
    )
    result = plan(snap, "greedy")
    assert result.violations == []
    assert [b.node for b in result.plan.binds] == ["d"]


def test_groups_open_as_many_nodes_as_the_gang_needs() -> None:
    # big has two 8-GPU pods: a and d are each opened only by a group of two victims.
    snap = snapshot(
        *(node(n, gpus=8) for n in "adbcfg"),
        *_pairs("e1", "e2", "e3", "e4", layout=[("b", "a"), ("c", "a"), ("f", "d"), ("g", "d")]),
        gang("big", 2, gpus=8),
    )
    result = plan(snap, "greedy")
    assert result.violations == []
    assert sorted(b.node for b in result.plan.binds) == ["a", "d"]


def test_a_victim_of_one_group_can_shrink_further_for_the_next() -> None:
    # big's two 8-GPU pods need x and y. v (3 x 4 GPUs) helps open x at size 2, then must go to
    # size 1 to open y with u; its smaller deferred sizes are kept after the first group.
    el: dict[str, Any] = {"gpus": 4, "min_member": 1}
    snap = snapshot(
        node("x", gpus=8),
        node("y", gpus=16),
        *(node(n, gpus=8) for n in "fgh"),
        gang("pin", 1, gpus=8, running_on=["y"], priority=1000),
        *(gang(f"fill_{n}", 1, gpus=4, running_on=[n], priority=1000) for n in "fgh"),
        gang("v", 3, max_member=3, running_on=["f", "y", "x"], **el),
        gang("w", 2, max_member=2, running_on=["g", "x"], **el),
        gang("u", 2, max_member=2, running_on=["h", "y"], **el),
        gang("big", 2, gpus=8, priority=10),
    )
    result = plan(snap, "greedy")
    assert result.violations == []
    assert sorted(b.node for b in result.plan.binds) == ["x", "y"]


def _one_floored_group() -> Any:
    """Nodes a and d each hold worker 1 of two elastic jobs (e1, e2 on a; e3, e4 on d), which
    no shrink alone opens for big's 8-GPU pod; shrinking e1 would leave its queue (min 6 GPUs,
    running 8) under its min."""
    return snapshot(
        *(node(n, gpus=8) for n in "adbcfg"),
        leaf_queues(("a", "team-a"), ("o", "default"), gpus={"a": {"min": 6}}),
        *_pairs("e1", layout=[("b", "a")], job={"namespace": "team-a"}),
        *_pairs("e2", "e3", "e4", layout=[("c", "a"), ("f", "d"), ("g", "d")]),
        gang("big", 1, gpus=8),
    )


def test_a_victim_its_queues_floor_refuses_joins_no_group() -> None:
    """The floor refuses shrinking e1. Were e1 deferred with the others, a's group (e1, e2; a
    comes before d) would shrink e2 for nothing before d's (e3, e4) opened room: the floor is
    tested before the node room."""
    snap = _one_floored_group()
    st, v, index = _search(snap)
    assert v.start(index["big"], 1, set())
    assert st.placed["default/big-worker-0"] == "d"
    assert st.size["team-a/e1"] == 2
    assert [st.size[f"default/{e}"] for e in ("e2", "e3", "e4")] == [2, 1, 1]


def test_the_rebuilt_deferred_list_holds_no_take_back_a_floor_refuses() -> None:
    """The first pass skips the shrinks known to open no room and, if the gang has not started,
    rebuilds the list the full walk would have deferred (``Walk.replay``). The full walk tests
    the floor first, so the rebuilt list leaves out e1, whose queue's floor refuses it (nothing
    visited yet)."""
    snap = _one_floored_group()
    _, v, index = _search(snap)
    rebuilt = walk.Walk(victims.Start(v, index["big"], 1, set(), False), None).replay()
    assert sorted(rebuilt) == sorted((index[e], 1) for e in ("e2", "e3", "e4"))


def test_a_failed_start_is_searched_again_once_the_plan_changed() -> None:
    """Two pending gangs of one demand (an 8-GPU pod, nothing to take back): the first fails on a
    full node; once the running gang there is gone, the second is searched again and fits. With
    the plan unchanged it fails without a search, and says again whether its queues' floors
    refused victims."""
    snap = snapshot(
        node("n", gpus=8),
        gang("r", 1, gpus=8, running_on=["n"]),
        gang("p1", 1, gpus=8, priority=100),  # r could be broken for it; no trigger fired here
        gang("p2", 1, gpus=8, priority=100),
    )
    st, v, index = _search(snap, queue_ordered=False)
    searches = _counting(v)
    p1, p2, r = index["p1"], index["p2"], index["r"]
    assert not v.start(p1, 1, set())
    assert not v.start(p2, 1, set())  # same demand, same plan: no second search
    assert searches == [p1]
    assert st.resize(r, 0, check_quota=False)  # the plan changed: room on n
    assert v.start(p2, 1, set())
    assert searches == [p1, p2]
    assert st.placed == {"default/p2-worker-0": "n"}


def test_a_search_no_victim_could_help_is_not_walked_again_until_a_node_gets_room_back() -> None:
    """p1, p2, p3 (one 8-GPU pod each) may only shrink e1, which frees 4 GPUs on a beside pin's 4:
    p1's search fails with nothing to take. After q binds on b (the plan changed, no node got
    room back) p2 fails without walking its victims again; so does p3 after q leaves b again (b
    got room back, but no victim of theirs is there). Once pin is gone from a, a got room back,
    and p2 is searched again and starts there, shrinking e1. (hi's trigger, which lets pin be
    broken, is not fired for them.)"""
    el = _elastic(4, 2)
    snap = snapshot(
        *(node(n, gpus=8) for n in "abf"),
        gang("pin", 1, gpus=4, running_on=["a"], priority=1000),
        gang("fb", 1, gpus=4, running_on=["b"], priority=1000),
        gang("ff", 1, gpus=4, running_on=["f"], priority=1000),
        gang("e1", 2, running_on=["f", "a"], **el),
        gang("p1", 1, gpus=8),
        gang("p2", 1, gpus=8),
        gang("p3", 1, gpus=8),
        gang("q", 1, gpus=2),
        gang("hi", 1, gpus=16, priority=2000),  # may break pin (so pin may go); never fits
    )
    st, v, index = _search(snap, queue_ordered=False)
    walked: list[int] = []
    released = v.released_all

    def released_all(*a: Any) -> Any:
        walked.append(a[0])
        return released(*a)

    v.released_all = released_all
    p1, p2, e1 = index["p1"], index["p2"], index["e1"]
    assert not v.start(p1, 1, set())
    assert set(walked) == {e1}
    seen = len(walked)
    assert st.resize(index["q"], 1)
    assert st.placed == {"default/q-worker-0": "b"}
    assert not v.start(p2, 1, set())
    assert len(walked) == seen  # out of reach still: not walked
    assert st.resize(index["q"], 0)  # b gets room back; none of e1 is there
    assert not v.start(index["p3"], 1, set())
    assert not v.start(p2, 1, set())
    assert len(walked) == seen
    assert st.resize(index["pin"], 0, check_quota=False)  # a gets room back
    assert v.start(p2, 1, set())
    assert st.placed["default/p2-worker-0"] == "a"
    assert st.size["default/e1"] == 1


def test_a_remembered_search_counts_every_victim_on_a_node_given_room_back() -> None:
    """p (one 8-GPU pod) may only shrink e1 and e2, which free 2 GPUs each on a, beside pin's 4:
    its search fails and is remembered. Once pin is gone, a has 4 free and the two victims free
    4 more there together (either alone: 6), so p is searched again and starts on a. (hi's
    trigger, which lets pin be broken, is not fired for p.)"""
    el = _elastic(2, 2)
    snap = snapshot(
        *(node(n, gpus=8) for n in "af"),
        gang("pin", 1, gpus=4, running_on=["a"], priority=1000),
        gang("e1", 2, running_on=["f", "a"], **el),
        gang("e2", 2, running_on=["f", "a"], **el),
        gang("p", 1, gpus=8),
        gang("hi", 1, gpus=16, priority=2000),  # may break pin (so pin may go); never fits
    )
    st, v, index = _search(snap, queue_ordered=False)
    p = index["p"]
    assert not v.start(p, 1, set())
    assert v.unreachable  # remembered
    assert st.resize(index["pin"], 0, check_quota=False)  # a gets room back
    assert v.start(p, 1, set())
    assert st.placed["default/p-worker-0"] == "a"
    assert st.size["default/e1"] == st.size["default/e2"] == 1


def test_a_break_known_to_open_no_room_is_not_tested_again_until_its_node_got_room_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Node a (12 GPUs) runs low's 4-GPU pod beside pin's (priority 1000), and the plan starts
    q's 4-GPU pod in the rest: breaking low frees 4 GPUs where p's 8-GPU pod needs 8, so p's
    walk fails. The next walk of that pod shape, with a's room unchanged, defers the break
    without testing it again (searches out of reach are not skipped here, so the walk runs).
    Once q is taken out of the plan, a got room back: the break is tested again, opens the
    slot, and p starts."""
    monkeypatch.setattr(victims.Victims, "remember_out_of_reach", False)
    snap = snapshot(
        node("a", gpus=12),
        gang("low", 1, gpus=4, running_on=["a"]),
        gang("pin", 1, gpus=4, running_on=["a"], priority=1000),
        gang("q", 1, gpus=4, priority=1000),
        gang("p", 1, gpus=8, priority=100),
    )
    st, v, index = _search(snap, queue_ordered=False)
    fired = _fired(st, index["p"])
    tested: list[tuple[int, int]] = []
    frees_a_slot = walk.Walk.frees_a_slot

    def counted(self: walk.Walk, u: int, size: int) -> bool:
        tested.append((u, size))
        return frees_a_slot(self, u, size)

    monkeypatch.setattr(walk.Walk, "frees_a_slot", counted)

    def run() -> bool:
        return walk.Walk(victims.Start(v, index["p"], 1, fired, False), None).run()

    low = index["low"]
    assert st.resize(index["q"], 1)
    assert not run()
    assert tested == [(low, 0)]
    tested.clear()
    assert not run()
    assert tested == []
    assert st.resize(index["q"], 0)
    assert run()
    assert tested == [(low, 0)]
    assert st.size["default/p"] == 1 and st.size["default/low"] == 0


def test_a_search_a_queue_blocked_is_not_walked_again_while_no_victim_could_open_room() -> None:
    """Queue q (max 12 GPUs) runs e1 (two 4-GPU pods, on a and b beside 4-GPU pins): an 8-GPU
    start in q is over q's max, so its first take-back (e1 down to one pod) goes to the queue,
    and then no node has room: p1 fails. All its victims together open no room on any node, so
    p2 (the same demand; the plan changed by q2's bind, no node got room back) fails without
    walking them. Once the pins are gone, p2 is searched again and starts, shrinking e1."""
    tree = leaf_queues(("q", "team-q"), ("o", "team-o"), gpus={"q": {"max": 12}})
    el = _elastic(4, 2)
    snap = snapshot(
        *(node(n, gpus=8) for n in "abc"),
        node("s", gpus=2),
        tree,
        gang("pa", 1, gpus=4, namespace="team-o", running_on=["a"], priority=1000),
        gang("pb", 1, gpus=4, namespace="team-o", running_on=["b"], priority=1000),
        gang("pc", 1, gpus=8, namespace="team-o", running_on=["c"], priority=1000),
        gang("e1", 2, namespace="team-q", running_on=["a", "b"], **el),
        gang("p1", 1, gpus=8, namespace="team-q"),
        gang("p2", 1, gpus=8, namespace="team-q"),
        gang("o2", 1, gpus=2, namespace="team-o"),
        # may break the pins (so they are in the model); never fits, its trigger not fired here
        gang("hi", 1, gpus=16, namespace="team-o", priority=2000),
    )
    st, v, index = _search(snap, queue_ordered=False)
    taken: list[int] = []  # the take-backs the searches tried
    resize = st.resize

    def taking(j: int, *a: Any, **k: Any) -> Any:
        taken.append(j)
        return resize(j, *a, **k)

    st.resize = taking
    assert st.quota_blocks(index["p1"], 1)  # over q's max
    assert not v.start(index["p1"], 1, set())
    assert index["e1"] in taken
    assert st.resize(index["o2"], 1)  # the plan changed; no node got room back
    taken.clear()
    assert not v.start(index["p2"], 1, set())
    assert taken == [index["p2"]]  # out of reach still: only the start without victims
    for pin in ("pa", "pb"):
        assert st.resize(index[pin], 0, check_quota=False)
    assert v.start(index["p2"], 1, set())
    assert st.size["team-q/e1"] == 1
    assert st.placed["team-q/p2-worker-0"] in ("a", "b")


def _floor_cluster(min_gpus: int, pending: dict[str, Any], *objects: Any) -> Any:
    """Queue a (min ``min_gpus``) runs e1, two 8-GPU pods on a and b; queue o's pin fills c; s
    has 3 GPUs, too few for p1 and p2 (one pod each, ``pending``); o2 (1 GPU, queue o) changes
    the plan without giving any node room back."""
    tree = leaf_queues(("a", "team-a"), ("o", "team-o"), gpus={"a": {"min": min_gpus}})
    el = _elastic(8, 2)
    return snapshot(
        *(node(n, gpus=8) for n in "abc"),
        tree,
        gang("pc", 1, gpus=8, namespace="team-o", running_on=["c"], priority=1000),
        gang("e1", 2, namespace="team-a", running_on=["a", "b"], **el),
        node("s", gpus=3),
        gang("p1", 1, **pending),
        gang("p2", 1, **pending),
        gang("o2", 1, gpus=1, namespace="team-o"),
        *objects,
    )


def test_a_search_a_floor_refused_is_walked_again_once_the_floors_queue_grows() -> None:
    """Shrinking e1 (queue a, min 10 GPUs, running 16) would open room on b for p1's 8-GPU pod,
    but leave a at 8 GPUs, under its min: the floor refuses it and p1 fails. p2 (same demand, the
    plan changed by o2's bind) fails without walking its victims (e1 is not tested again) while
    a's usage has not grown. Once a2 (2 GPUs, queue a) starts, shrinking e1 leaves a at its min,
    and p2 is searched again and starts on b."""
    pending = {"gpus": 8, "namespace": "team-o"}
    snap = _floor_cluster(10, pending, gang("a2", 1, gpus=2, namespace="team-a"))
    st, v, index = _search(snap, queue_ordered=False)
    tested: list[int] = []  # the jobs whose take-backs the floors are asked about
    floors = st.floor_blocks

    def floor_blocks(j: int, *a: Any) -> Any:
        tested.append(j)
        return floors(j, *a)

    st.floor_blocks = floor_blocks
    assert not v.start(index["p1"], 1, set())
    seen = tested.count(index["e1"])
    assert seen
    assert st.resize(index["o2"], 1)  # the plan changed; no node got room back
    assert not v.start(index["p2"], 1, set())
    assert tested.count(index["e1"]) == seen  # the floor still refuses: not walked
    assert st.resize(index["a2"], 1)  # a grows to 18 GPUs
    assert v.start(index["p2"], 1, set())
    assert st.size["team-a/e1"] == 1
    assert st.placed["team-o/p2-worker-0"] in ("a", "b")


def test_a_search_its_own_queues_floor_refused_says_so_each_time() -> None:
    """p1 and p2 (4-GPU pods, queue a, min 14 GPUs, e1 running 16) could start by shrinking e1,
    but that leaves a at 8 + 4 GPUs, under its min: the floor refuses it, and since it is their
    own queue's, the search says so (greedy then tries again with debt and refills a). p2's
    search (same demand, the plan changed) says so too: a search whose refusals tell greedy
    something is not skipped as out of reach."""
    snap = _floor_cluster(14, {"gpus": 4, "namespace": "team-a"})
    st, v, index = _search(snap, queue_ordered=False)
    assert not v.start(index["p1"], 1, set())
    assert v.own_floor_refused
    assert st.resize(index["o2"], 1)  # the plan changed; no node got room back
    v.own_floor_refused = False
    assert not v.start(index["p2"], 1, set())
    assert v.own_floor_refused
    result = plan(snap, "greedy")  # with debt: p1 starts, shrinking e1, and p2 refills a
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert (after["team-a/p1"], after["team-a/p2"], after["team-a/e1"]) == (1, 1, 1)


def test_a_start_its_own_floor_refuses_a_take_back_that_could_not_help_asks_no_debt() -> None:
    """p (queue a, one 4-GPU pod) may only use s, which o's pin fills. Shrinking e1 (queue a,
    min 14 GPUs, running 16) would leave a under its min even with p, but would free room only
    on b, which p may not use: the refusal tells greedy nothing, so the search does not send it
    to try p again with debt (it would take e1 back for nothing)."""
    el = _elastic(8, 2)
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        node("s", gpus=8, labels={"pool": "s"}),
        leaf_queues(("a", "team-a"), ("o", "team-o"), gpus={"a": {"min": 14}}),
        gang("e1", 2, namespace="team-a", running_on=["a", "b"], **el),
        gang("pin", 1, gpus=8, namespace="team-o", running_on=["s"], priority=1000),
        pod_group("p", namespace="team-a"),
        pod("p-worker-0", group="p", gpus=4, namespace="team-a", node_selector={"pool": "s"}),
    )
    st, v, index = _search(snap)
    assert not v.start(index["p"], 1, set())
    assert not v.own_floor_refused
    assert st.size["team-a/e1"] == 2


def test_a_shrink_that_opened_no_room_is_tried_again_once_its_node_gets_room_back() -> None:
    """p1's search finds that shrinking e1 opens no room on a (pin holds the rest of a) and starts
    p1 by shrinking e2 on c. Once pin is gone from a, p2 (the same pod shape, allowed to break g)
    shrinks e1 and starts on a rather than break g: a shrink is known to open no room only until
    one of its nodes gets room back."""
    el = _elastic(4, 2)
    snap = snapshot(
        *(node(n, gpus=8) for n in "abcde"),
        gang("g", 1, gpus=8, running_on=["e"], priority=50),
        gang("pin", 1, gpus=4, running_on=["a"], priority=1000),
        gang("fb", 1, gpus=4, running_on=["b"], priority=1000),
        gang("fd", 1, gpus=4, running_on=["d"], priority=1000),
        gang("e1", 2, running_on=["b", "a"], **el),
        gang("e2", 2, running_on=["d", "c"], priority=10, **el),
        gang("p1", 1, gpus=8, priority=100),
        gang("p2", 1, gpus=8, priority=100),
        gang("hi", 1, gpus=16, priority=2000),  # may break pin (so pin may go); never fits
    )
    st, v, index = _search(snap)
    assert v.start(index["p1"], 1, set())
    assert st.placed == {"default/p1-worker-0": "c"}
    assert (st.size["default/e1"], st.size["default/e2"]) == (2, 1)
    assert st.resize(index["pin"], 0, check_quota=False)  # a gets room back
    assert v.start(index["p2"], 1, set(st.problem.jobs[index["g"]].break_needs))
    assert st.placed["default/p2-worker-0"] == "a"
    assert (st.size["default/e1"], st.size["default/g"]) == (1, 1)


def test_a_take_back_frees_no_room_where_other_pods_hold_the_cpu() -> None:
    """Shrinking e1 frees 8 GPUs on a, but another scheduler's pod holds 62 of a's 64 CPUs, so
    p's pod (4 CPUs) still cannot run there: e1 is not taken, e2 (next in the search, freeing d)
    is, and p starts on d."""
    el = _elastic(8, 2)
    snap = snapshot(
        *(node(n, gpus=8) for n in "abcd"),
        pod("hog", gpus=0, cpu="62", node_name="a", scheduler="default-scheduler"),
        gang("e1", 2, running_on=["b", "a"], **el),
        gang("e2", 2, running_on=["c", "d"], priority=10, **el),
        gang("p", 1, gpus=8, priority=100),
    )
    st, v, index = _search(snap)
    # e2 (priority 10) is ahead in queue order: the search, lowest priority first, tries e1 first
    order = greedy.queue_order(st.problem)
    assert order.index(index["e2"]) < order.index(index["e1"])
    assert v.start(index["p"], 1, set())
    assert st.placed == {"default/p-worker-0": "d"}
    assert (st.size["default/e1"], st.size["default/e2"]) == (2, 1)


def _reclaim_for_a_little() -> list[Any]:
    """Queue a is below its min (8 GPUs, none used); queue b borrows: its priority-1000 gang b
    holds the one node. a's pending 1-GPU gang may reclaim, which breaks b: one GPU of priority
    0 and of a's min (1,000 + 20,000) for 8 of priority 1000 (8 x 4,000 + 500 for the break)."""
    tree = leaf_queues(("a", "team-a"), ("b", "team-b"), gpus={"a": {"min": 8}, "b": {"min": 0}})
    return [
        node("n", gpus=8),
        tree,
        gang("b", 1, gpus=8, namespace="team-b", running_on=["n"], priority=1000),
        gang("a", 1, gpus=1, namespace="team-a", priority=0),
    ]


@pytest.mark.parametrize(("value_aware", "b_after"), [(False, 0), (True, 1)])
def test_value_aware_greedy_takes_no_victim_worth_more_than_the_start(
    value_aware: bool, b_after: int
) -> None:
    snap = snapshot(*_reclaim_for_a_little())
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = greedy.greedy_plan(snap, problem, value_aware=value_aware)
    assert st.size["team-b/b"] == b_after
    assert st.size["team-a/a"] == 1 - b_after


def test_the_cycle_emits_the_value_aware_plan_when_it_is_the_best(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no solver solution the best greedy candidate is emitted: here the value-aware one,
    which keeps b (queue-order greedy breaks it, and the checker allows both)."""
    snap = snapshot(*_reclaim_for_a_little())
    monkeypatch.setattr(
        cpsat.Search, "run", lambda self: (SolveStatus.NO_SOLUTION, None, None, None, 0.0, "")
    )
    result = plan(snap, "cpsat")
    assert result.violations == []
    assert result.chosen == "value-greedy"
    assert workers_after(snap, result.plan)["team-b/b"] == 1
    assert plan(snap, "greedy").chosen == "greedy"  # the greedy backend: queue order alone


def _rack_cluster(racks: int, per_rack: int, priorities: dict[str, int] | None = None) -> Any:
    """``racks`` racks of ``per_rack`` 8-GPU nodes, each node held by a one-pod 8-GPU gang (its
    priority 0 unless ``priorities`` names its node), and a priority-1000 gang of ``per_rack``
    8-GPU pods that requires one rack. The gangs are named so that the search's order (priority,
    then name) visits the racks in turn: one node of each rack, then the next node of each."""
    layout = {f"n{r:02d}-{i}": ("b1", f"r{r:02d}") for r in range(racks) for i in range(per_rack)}
    objs: list[Any] = [rack_nodes(layout, gpus=8)]
    for i in range(per_rack):
        for r in range(racks):
            where = f"n{r:02d}-{i}"
            prio = (priorities or {}).get(where, 0)
            objs.append(m.gang(f"low{i}-{r:02d}", 1, gpus=8, running_on=[where], priority=prio))
    objs.append(m.gang("big", per_rack, gpus=8, priority=1000, annotations=REQ))
    return snapshot(*objs)


def _racks_of_jobs(snap: Any, jobs: set[str]) -> set[str]:
    return {
        snap.nodes[snap.pods[p].node_name].labels[RACK] for j in jobs for p in snap.jobs[j].pods
    }


def test_a_required_gang_empties_one_rack_instead_of_freeing_room_in_every_rack() -> None:
    """30 racks of 4 busy nodes: freeing room in the search's order (one node per rack in turn)
    reaches a free rack only after 91 take-backs, past MAX_VICTIM_STEPS, so the gang waited. Its
    victims are now sought one rack at a time: 4 gangs of one rack go, and only those."""
    snap = _rack_cluster(30, 4)
    result = run_cycle(snap, rack_cfg(), NOW, "greedy")
    assert result.violations == []
    assert workers_after(snap, result.plan)["default/big"] == 4
    ((_, rack),) = domains_of(snap, result.plan, "default/big", RACK)
    evicted = {e.job for e in result.plan.evictions}
    assert len(evicted) == 4
    assert _racks_of_jobs(snap, evicted) == {rack}


def test_the_rack_whose_victims_are_cheapest_is_emptied() -> None:
    """Rack r00, first in the search's order, holds a priority-50 gang; r01 only priority-0
    ones: the gang goes to r01 and breaks nothing of priority 50."""
    snap = _rack_cluster(2, 2, priorities={"n00-1": 50})
    result = run_cycle(snap, rack_cfg(), NOW, "greedy")
    assert result.violations == []
    assert workers_after(snap, result.plan)["default/big"] == 2
    assert domains_of(snap, result.plan, "default/big", RACK) == {("b1", "r01")}
    assert {e.job for e in result.plan.evictions} == {"default/low0-01", "default/low1-01"}


def test_a_partial_required_gang_takes_its_victims_in_its_own_rack() -> None:
    """A gang of 4 whole-node pods requiring a rack runs 2 pods in r05 (partial); 30 racks of 4
    nodes, every other node held by a priority-0 gang named so the search visits one node per
    rack in turn. Searching anywhere runs out of steps before r05's two nodes are free; in its
    own rack the search takes exactly those two."""
    layout = {f"n{r:02d}-{i}": ("b1", f"r{r:02d}") for r in range(30) for i in range(4)}
    objs: list[Any] = [rack_nodes(layout, gpus=8)]
    for i in range(4):
        for r in range(30):
            if r == 5 and i < 2:
                continue
            where = f"n{r:02d}-{i}"
            objs.append(m.gang(f"low{i}-{r:02d}", 1, gpus=8, running_on=[where], priority=0))
    objs.append(
        m.gang("big", 4, gpus=8, priority=1000, annotations=REQ, running_on=["n05-0", "n05-1"])
    )
    snap = snapshot(*objs)
    result = run_cycle(snap, rack_cfg(), NOW, "greedy")
    assert result.violations == []
    assert workers_after(snap, result.plan)["default/big"] == 4
    assert {e.job for e in result.plan.evictions} == {"default/low2-05", "default/low3-05"}


def test_a_required_gang_seeks_its_victims_in_the_racks_they_can_free_enough_in() -> None:
    """The racks tried are those the victims can free enough in, not the first they touch."""
    # The last node of racks r00-r02, first in the search's order, runs a gang of big's priority,
    # which big may not break: r03 is the first rack its victims can empty.
    snap = _rack_cluster(30, 4, priorities={f"n{r:02d}-3": 1000 for r in range(3)})
    result = run_cycle(snap, rack_cfg(), NOW, "greedy")
    assert result.violations == []
    assert workers_after(snap, result.plan)["default/big"] == 4
    assert domains_of(snap, result.plan, "default/big", RACK) == {("b1", "r03")}


def _jobs_capped(priority: int) -> tuple[Any, Any, Any, dict[str, int], list[int]]:
    """Queue q may run two jobs and runs two elastic ones (e1, e2: two 1-GPU pods each, on a)
    beside room for more; p, pending in q, is over q's max number of running jobs. A plan state,
    its Victims, p's fired triggers, the job index and the jobs the searches resized."""
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "q", "namespaces": ["team-q"], "max": {"kube-queue/max-jobs": "2"}},
            ],
        }
    )
    el = _elastic(1, 2)
    snap = snapshot(
        node("a", gpus=8),
        tree,
        *(gang(e, 2, namespace="team-q", running_on=["a", "a"], **el) for e in ("e1", "e2")),
        gang("p", 1, namespace="team-q", priority=priority),
    )
    st, v, index = _search(snap, queue_ordered=False)
    fired = _fired(st, index["p"])
    resized: list[int] = []
    resize = st.resize

    def resizing(j: int, *a: Any, **k: Any) -> Any:
        resized.append(j)
        return resize(j, *a, **k)

    st.resize = resizing
    return st, v, fired, index, resized


@pytest.mark.parametrize("bound", [True, False])
def test_a_start_no_victim_could_bring_under_its_queues_max_takes_none(
    monkeypatch: pytest.MonkeyPatch, bound: bool
) -> None:
    """p may not break e1 or e2 (same priority) and their shrinks free no running job: however
    many it takes back, q stays at its max. It fails without taking any; the walk, where the
    bound is off, takes the shrinks back and fails the same."""
    monkeypatch.setattr(victims.Victims, "bound_by_quota", bound)
    st, v, fired, index, resized = _jobs_capped(priority=0)
    assert st.quota_blocks(index["p"], 1) == [(0, "kube-queue/max-jobs")]
    assert not v.start(index["p"], 1, fired)
    assert (set(resized) == {index["p"]}) is bound
    assert st.size == {"team-q/e1": 2, "team-q/e2": 2, "team-q/p": 0}


def test_a_start_breaking_a_victim_brings_its_queue_under_its_max() -> None:
    """p outranks e1 and e2 in q: breaking one of them frees a running job, so the bound lets
    the walk run and p starts."""
    st, v, fired, index, _ = _jobs_capped(priority=100)
    assert fired
    assert v.start(index["p"], 1, fired)
    assert st.size["team-q/p"] == 1
    assert 0 in (st.size["team-q/e1"], st.size["team-q/e2"])  # a break freed the running job


@pytest.mark.parametrize(
    ("size", "seeds"),
    [("S", range(1, 7)), pytest.param("M", range(1, 3), marks=pytest.mark.slow)],
    ids=["S", "M"],
)
def test_take_backs_known_to_open_no_room_are_skipped_without_changing_a_plan(
    monkeypatch: pytest.MonkeyPatch, size: str, seeds: range
) -> None:
    """The search skips take-backs known to open no room alone for a pod shape until one of
    their nodes gets room back, and rebuilds what the full walk would have deferred: greedy's
    plans in all three orders are the full walk's, on every preset (a take-back skipped while it
    would open room, or a deferred list rebuilt wrong, changes some). Searches
    remembered as out of reach, and starts no victim could bring under their queue's max, are
    skipped with the same sizes: only where best fit's ties go may differ, since the walk
    skipped would have put the nodes it took from and gave back at their buckets' ends."""
    cfg = config()
    for preset in PRESETS:
        for seed in seeds:
            snap = snapshot_from_objects(preset_objects(preset, seed, NOW, SIZES[size]))
            problem = prepare(snap, cfg.weights, cfg.settings, NOW, None)
            order = greedy.queue_order(problem)
            dense = greedy.start_order(problem, order, None, dense=True)
            plans = []
            toggles: tuple[tuple[bool, bool, bool], ...] = ((True, True, True), (False, True, True))
            toggles += ((True, False, True), (True, True, False))
            for no_room, out_of_reach, bound in toggles:
                monkeypatch.setattr(victims.Victims, "remember_no_room", no_room)
                monkeypatch.setattr(victims.Victims, "remember_out_of_reach", out_of_reach)
                monkeypatch.setattr(victims.Victims, "bound_by_quota", bound)
                plans.append(
                    [
                        (st.placed, st.size)
                        for st in (
                            greedy.greedy_plan(snap, problem),
                            greedy.greedy_plan(snap, problem, dense, order=order),
                            greedy.greedy_plan(snap, problem, None, True),
                        )
                    ]
                )
            assert plans[0] == plans[1], (preset, seed)
            sizes = [[after for _, after in plan] for plan in plans]
            assert sizes[0] == sizes[2] == sizes[3], (preset, seed)


@pytest.mark.parametrize(("steps", "started"), [(3, 1), (2, 0)])
def test_a_start_takes_at_most_max_victim_steps_take_backs(
    monkeypatch: pytest.MonkeyPatch, steps: int, started: int
) -> None:
    """A full 8-GPU node of one-GPU priority-0 gangs; a priority-100 gang of three one-GPU pods
    needs three take-backs: it starts within three steps, and waits within two."""
    monkeypatch.setattr(walk, "MAX_VICTIM_STEPS", steps)
    snap = snapshot(
        node("n", gpus=8),
        *(gang(f"low{i}", 1, running_on=["n"], priority=0) for i in range(8)),
        gang("hi", 3, priority=100),
    )
    c = config()
    problem = prepare(snap, c.weights, c.settings, NOW)
    st = greedy.greedy_plan(snap, problem)
    assert st.size["default/hi"] == 3 * started
    assert sum(st.size[f"default/low{i}"] for i in range(8)) == 8 - 3 * started


def test_a_victim_too_dear_alone_is_passed_over_for_a_cheaper_one_after_it() -> None:
    """Value-aware: the priority-0 gang of 32 GPUs comes first in the search's order but gives
    up more than the one-GPU priority-100 start brings; the priority-10 one-GPU gang after it
    does not, and goes instead (queue-order greedy breaks the first)."""
    snap = snapshot(
        node("n1", gpus=9),
        *(node(f"n{i}", gpus=8) for i in (2, 3, 4)),
        gang("big", 4, gpus=8, running_on=["n1", "n2", "n3", "n4"], priority=0),
        gang("small", 1, running_on=["n1"], priority=10),
        gang("hi", 1, priority=100),
    )
    c = config()
    problem = prepare(snap, c.weights, c.settings, NOW)
    aware = greedy.greedy_plan(snap, problem, value_aware=True)
    assert (aware.size["default/big"], aware.size["default/small"], aware.size["default/hi"]) == (
        4,
        0,
        1,
    )
    plain = greedy.greedy_plan(snap, problem)
    assert (plain.size["default/big"], plain.size["default/hi"]) == (0, 1)


def test_value_aware_greedy_takes_no_victim_worth_exactly_what_the_start_brings() -> None:
    """Without the break penalty (gangBreak 0) an 8-GPU priority-0 gang gives up 8 units of its
    tier, 8,000: exactly what a one-GPU priority-100 start brings (its unit and its bonus in a
    tier four times higher). An even swap is not worth a break: value-aware greedy keeps it."""
    snap = snapshot(
        node("n", gpus=8),
        gang("low", 1, gpus=8, running_on=["n"], priority=0),
        gang("hi", 1, priority=100),
    )
    cfg = SchedulerConfig.model_validate({"weights": {"gangBreak": 0}})
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    names = [jm.name for jm in problem.jobs]
    low, hi = names.index("default/low"), names.index("default/hi")
    st = PlanState(snap, problem)
    assert worth.take_loss(st, low, 0) == worth.start_gain(st, hi, 1) == 8000
    aware = greedy.greedy_plan(snap, problem, value_aware=True)
    assert (aware.size["default/low"], aware.size["default/hi"]) == (1, 0)
    assert greedy.greedy_plan(snap, problem).size["default/hi"] == 1  # queue order breaks it


def _search(
    snap: Any, value_aware: bool = False, queue_ordered: bool = True
) -> tuple[Any, Any, dict[str, int]]:
    """A plan state, its Victims (jobs in queue order, else index order), and the job index by
    short name."""
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = PlanState(snap, problem)
    index = {jm.name.split("/")[1]: j for j, jm in enumerate(problem.jobs)}
    order = greedy.queue_order(problem) if queue_ordered else list(range(len(problem.jobs)))
    return st, victims.Victims(st, order, value_aware), index


def _fired(st: Any, j: int) -> set[str]:
    """The trigger keys j's start fires."""
    return {key for key, starters in st.problem.triggers.items() if j in starters}


def _row(st: Any, queue: str) -> int:
    return next(r for r, row in enumerate(st.problem.quotas) if row.queue == queue)


def _counting(v: Any) -> list[int]:
    """The starts v searches victims for from now on (a start its caches answer is not)."""
    searches: list[int] = []
    search = v._search

    def counted(*a: Any) -> Any:
        searches.append(a[0])
        return search(*a)

    v._search = counted
    return searches


def test_a_shrink_frees_the_pods_the_plans_scale_in_order_evicts() -> None:
    """What a shrink frees follows the plan's scale-in order, not the pods' last-first order."""
    # pin holds half of x, so the scale-in order keeps e's worker on x and gives back the one on
    # y (worker 1, not worker 2): shrinking e to 2 opens y for p.
    el: dict[str, Any] = {"gpus": 4, "min_member": 1, "max_member": 3}
    snap = snapshot(
        *(node(n, gpus=8) for n in "fxy"),
        gang("pin", 1, gpus=4, running_on=["x"], priority=1000),
        gang("e", 3, running_on=["f", "y", "x"], **el),
        gang("p", 1, gpus=8, priority=100),
    )
    st, v, index = _search(snap)
    assert set(v.released_all(index["e"], 2)) == {"y"}
    assert v.start(index["p"], 1, set())
    assert st.placed == {"default/p-worker-0": "y"}
    assert st.size["default/e"] == 2


def test_a_shrink_frees_only_pods_the_plan_has_not_evicted_yet() -> None:
    """A job the plan already shrank frees, going smaller, only the pods it still runs."""
    # e (three 4-GPU workers on x, y, z), shrunk to 2 in the plan, gave z back: going on to 1
    # frees y alone. (p, pending, puts e in the model.)
    snap = snapshot(
        *(node(n, gpus=8) for n in "xyz"),
        gang("e", 3, gpus=4, min_member=1, max_member=3, running_on=["x", "y", "z"]),
        gang("p", 1, gpus=8),
    )
    st, v, index = _search(snap)
    e = index["e"]
    assert v.released(e, 2) == {"z": 4}
    assert st.resize(e, 2)
    assert v.released(e, 1) == {"y": 4}


def test_a_take_back_of_pods_without_gpus_frees_no_gpus_and_opens_no_room() -> None:
    """A victim without GPUs, on a node without GPUs, frees none: a GPU gang breaks another."""
    # cc comes first in p's search; g, after it, is broken instead and cc keeps running.
    snap = snapshot(
        node("n", gpus=8),
        node("c", gpus=0),
        gang("cc", 1, gpus=0, running_on=["c"], priority=0),
        gang("g", 1, gpus=8, running_on=["n"], priority=1),
        gang("p", 1, gpus=8, priority=100),
    )
    st, v, index = _search(snap)
    assert v.released(index["cc"], 0) == {"c": 0}
    assert v.start(index["p"], 1, _fired(st, index["p"]))
    assert (st.size["default/cc"], st.size["default/g"]) == (1, 0)
    assert st.placed == {"default/p-worker-0": "n"}


def test_a_start_its_queues_max_blocks_takes_back_only_in_that_queue() -> None:
    """Over its queue's max, a start takes back only in that queue: nothing else brings it under."""
    # eo (queue o) is first in the search's order; eq, in p's queue q, shrinks instead.
    tree = leaf_queues(("q", "team-q"), ("o", "team-o"), gpus={"q": {"max": 8}})
    el = _elastic(4, 2)
    snap = snapshot(
        *(node(n, gpus=8) for n in "abf"),
        tree,
        gang("eo", 2, namespace="team-o", running_on=["a", "a"], priority=0, **el),
        gang("eq", 2, namespace="team-q", running_on=["b", "b"], priority=5, **el),
        gang("p", 1, gpus=4, namespace="team-q", priority=100),
    )
    st, v, index = _search(snap)
    assert st.quota_blocks(index["p"], 1)
    assert v.start(index["p"], 1, set())
    assert (st.size["team-o/eo"], st.size["team-q/eq"]) == (2, 1)


def test_a_queue_at_its_min_keeps_only_its_own_jobs_from_shrinking() -> None:
    """A queue at its min gives no victims, but other queues' jobs may still shrink."""
    # a (min 4) is at its min once ea shrank in the plan (on cordoned k: no room for p there);
    # eb, in queue b, shrinks and p starts on y.
    tree = leaf_queues(("a", "team-a"), ("b", "team-b"), ("o", "team-o"), gpus={"a": {"min": 4}})
    el = _elastic(4, 2)
    snap = snapshot(
        node("k", gpus=8, unschedulable=True),
        *(node(n, gpus=8) for n in "xy"),
        tree,
        gang("ea", 2, namespace="team-a", running_on=["k", "k"], **el),
        gang("fill", 1, gpus=4, namespace="team-o", running_on=["x"], priority=1000),
        gang("eb", 2, namespace="team-b", running_on=["x", "y"], **el),
        gang("p", 1, gpus=8, namespace="team-b", priority=100),
    )
    st, v, index = _search(snap)
    assert st.resize(index["ea"], 1, check_quota=False)
    assert st.below_floor(_row(st, "a"))
    assert v.start(index["p"], 1, set())
    assert st.size["team-b/eb"] == 1
    assert st.placed == {"team-b/p-worker-0": "y"}


def _unusable(where: str) -> list[Any]:
    """lo (first in p's search) runs on u, which p may not use (``where``: u is cordoned, in
    another cluster, or not the node p's affinity names); mid runs on w, which p may use."""
    cluster = "solver-sched.io/cluster"
    objs: list[Any] = [
        node("u", gpus=8, labels={cluster: "y"}, unschedulable=where == "cordoned"),
        node("w", gpus=8, labels={cluster: "x"}),
        node("v", gpus=8, labels={cluster: "x"}),
        gang("lo", 1, gpus=8, running_on=["u"], priority=0),
        gang("mid", 1, gpus=8, running_on=["w"], priority=1),
    ]
    if where == "cluster":  # p runs a pod on v (cluster x): it may only grow in cluster x
        return [*objs, gang("p", 2, gpus=8, running_on=["v"], priority=100)]
    objs.append(gang("hold", 1, gpus=8, running_on=["v"], priority=1000))
    p = pod("p-worker-0", group="p", gpus=8, priority=100)
    if where == "affinity":
        p = on_node_only(p, "w")
    return [*objs, pod_group("p", min_member=1), p]


@pytest.mark.parametrize("where", ["cordoned", "cluster", "affinity"])
def test_a_take_back_on_a_node_the_gang_may_not_use_is_not_taken(where: str) -> None:
    """Room freed on a node the gang may not use is no room: that victim keeps running."""
    snap = snapshot(*_unusable(where))
    st, v, index = _search(snap)
    p = index["p"]
    target = 2 if where == "cluster" else 1
    assert v.start(p, target, _fired(st, p))
    assert (st.size["default/lo"], st.size["default/mid"]) == (1, 0)
    assert st.placed[f"default/p-worker-{target - 1}"] == "w"


def test_breaks_in_different_queues_go_lowest_priority_first() -> None:
    """Breakable gangs of several queues are tried lowest priority first across the queues."""
    # a, below its min, may reclaim from b and c: c's priority-0 gang goes, not b's priority-50.
    tree = leaf_queues(("a", "team-a"), ("b", "team-b"), ("c", "team-c"), gpus={"a": {"min": 8}})
    snap = snapshot(
        node("n1", gpus=8),
        node("n2", gpus=8),
        tree,
        gang("b-hi", 1, gpus=8, namespace="team-b", running_on=["n1"], priority=50),
        gang("c-lo", 1, gpus=8, namespace="team-c", running_on=["n2"], priority=0),
        gang("p", 1, gpus=8, namespace="team-a"),
    )
    st, v, index = _search(snap)
    p = index["p"]
    assert v.start(p, 1, _fired(st, p))
    assert (st.size["team-b/b-hi"], st.size["team-c/c-lo"]) == (1, 0)


def _cpu_victim() -> Any:
    """Queue q (max 8 GPUs, 12 CPUs) runs r (8 GPUs, 4 CPUs, not a victim) and cc (two CPU-only
    4-CPU pods, may shrink to one); p1 (1 GPU, 4 CPUs) and p2 (4 CPUs, no GPU) are pending."""
    q = {"name": "q", "namespaces": ["team-q"], "max": {"nvidia.com/gpu": "8", "cpu": "12"}}
    ns: dict[str, Any] = {"namespace": "team-q"}
    return snapshot(
        node("n", gpus=8),
        node("c", gpus=0),
        quota_tree({"name": "root", "children": [q]}),
        gang("r", 1, gpus=8, running_on=["n"], priority=1000, **ns),
        gang("cc", 2, gpus=0, min_member=1, max_member=2, running_on=["c", "c"], **ns),
        gang("p1", 1, gpus=1, **ns),
        gang("p2", 1, gpus=0, **ns),
    )


@pytest.mark.parametrize(("start", "over"), [("p1", True), ("p2", False)])
def test_a_queues_max_is_out_of_reach_when_no_victim_frees_what_it_lacks(
    start: str, over: bool
) -> None:
    """A queue's max stays out of reach when its victims free none of what the start is over."""
    # Shrinking cc frees 4 CPUs and no GPU: enough for p2 (4 CPUs over q's max), not for p1
    # (also 1 GPU over it).
    st, v, index = _search(_cpu_victim())
    j = index[start]
    assert _row(st, "q") in {r for r, _ in st.quota_blocks(j, 1, first_only=False)}
    assert victims.Start(v, j, 1, set(), False).over_quota_at_best() is over


def _capped_q() -> Any:
    """Queue q (max 12 GPUs) runs e (two 4-GPU pods, may shrink to one) and r2 (4 GPUs, not a
    victim); p8 (an 8-GPU pod) and p12 (two 6-GPU pods) are pending in q, with priority over e."""
    tree = quota_tree({"name": "root", "namespaces": ["team-q"], "max": {"nvidia.com/gpu": "12"}})
    el = _elastic(4, 2)
    q: dict[str, Any] = {"namespace": "team-q"}
    return snapshot(
        *(node(n, gpus=8) for n in "abc"),
        tree,
        gang("e", 2, running_on=["a", "b"], priority=0, **el, **q),
        gang("r2", 1, gpus=4, running_on=["c"], priority=1000, **q),
        gang("p8", 1, gpus=8, priority=100, **q),
        gang("p12", 2, gpus=6, priority=100, **q),
    )


@pytest.mark.parametrize(
    ("start", "breaks", "over"),
    [("p8", False, True), ("p8", True, False), ("p12", True, True)],
    ids=["shrink-short", "break-enough", "break-and-shrink-short"],
)
def test_a_queues_max_is_out_of_reach_counting_each_victim_once_at_its_smallest(
    start: str, breaks: bool, over: bool
) -> None:
    """Toward a queue's max each victim counts once, at its smallest size (a break: 0)."""
    # q would be 8 GPUs over its max with p8, 12 with p12. Shrinking e frees 4 GPUs, breaking
    # it 8 (not 8 + 4): short of p8's 8 without the break, enough with it, short of p12's 12.
    st, v, index = _search(_capped_q())
    j = index[start]
    fired = _fired(st, j) if breaks else set()
    assert (index["e"] in v._breakable(frozenset(fired)).get(v.rows[index["e"]], [])) is breaks
    assert index["e"] in v.shrinkable
    assert victims.Start(v, j, 1 if start == "p8" else 2, fired, False).over_quota_at_best() is over


@pytest.mark.parametrize(("e2_size", "over"), [(1, True), (0, False)], ids=["shrunk", "broken"])
def test_a_queues_max_is_out_of_reach_counting_victims_from_their_size_in_the_plan(
    e2_size: int, over: bool
) -> None:
    """A victim the plan already shrank or broke frees toward a queue's max only what it holds."""
    # q (16 GPUs, all held by e and e2, two 4-GPU pods each) and p, two 6-GPU pods. With e2 at
    # its smallest in the plan, q is 8 over its max with p: only e's 4 come back. With e2
    # broken, q is 4 over: e's 4 are enough (e2 at one pod would take 4 more).
    el = _elastic(4, 2)
    q: dict[str, Any] = {"namespace": "team-q"}
    snap = snapshot(
        *(node(n, gpus=8) for n in "ab"),
        quota_tree({"name": "root", "namespaces": ["team-q"], "max": {"nvidia.com/gpu": "16"}}),
        gang("e", 2, running_on=["a", "b"], **el, **q),
        gang("e2", 2, running_on=["a", "b"], **el, **q),
        gang("p", 2, gpus=6, **q),
    )
    st, v, index = _search(snap)
    assert st.resize(index["e2"], e2_size, check_quota=False)
    assert st.quota_blocks(index["p"], 2)
    assert victims.Start(v, index["p"], 2, set(), False).over_quota_at_best() is over


def test_a_queues_max_is_out_of_reach_when_one_of_its_rows_stays_over() -> None:
    """Each queue row that blocks the start counts only its own victims, and any one short is."""
    # p is over its queue q's max (all 4 GPUs held by r, no victim) and over the max of pa, q's
    # parent: w and w2, in q's sibling q2, cover pa's excess but not q's.
    q = {"name": "q", "namespaces": ["team-q"], "max": {"nvidia.com/gpu": "4"}}
    q2 = {"name": "q2", "namespaces": ["team-q2"]}
    pa = {"name": "pa", "max": {"nvidia.com/gpu": "12"}, "children": [q, q2]}
    in_q2: dict[str, Any] = {"namespace": "team-q2", "min_member": 1}
    snap = snapshot(
        *(node(n, gpus=8) for n in "abf"),
        quota_tree({"name": "root", "children": [pa]}),
        gang("r", 1, gpus=4, namespace="team-q", running_on=["a"], priority=1000),
        gang("w", 3, gpus=4, max_member=3, running_on=["a", "b", "b"], **in_q2),
        gang("w2", 2, gpus=2, max_member=2, running_on=["f", "f"], priority=5, **in_q2),
        gang("p", 1, gpus=4, namespace="team-q", priority=100),
    )
    st, v, index = _search(snap)
    blocked = {r for r, _ in st.quota_blocks(index["p"], 1, first_only=False)}
    assert blocked == {_row(st, "pa"), _row(st, "q")}
    assert victims.Start(v, index["p"], 1, set(), False).over_quota_at_best()


def test_a_start_two_queue_rows_block_takes_victims_under_either() -> None:
    """A start over the max of its queue and of its parent may take victims under either."""
    # p (8 GPUs) is over aq's max (8; e holds 4) and over zp's, aq's parent (16, all held):
    # breaking e brings aq under but frees only 4 of zp's; w, in aq's sibling q2, shrinks too.
    aq = {"name": "aq", "namespaces": ["team-q"], "max": {"nvidia.com/gpu": "8"}}
    q2 = {"name": "q2", "namespaces": ["team-q2"]}
    zp = {"name": "zp", "max": {"nvidia.com/gpu": "16"}, "children": [aq, q2]}
    snap = snapshot(
        *(node(n, gpus=8) for n in "ab"),
        quota_tree({"name": "root", "children": [zp]}),
        gang("e", 1, gpus=4, namespace="team-q", running_on=["a"], priority=0),
        gang(
            "w",
            3,
            gpus=4,
            namespace="team-q2",
            min_member=1,
            max_member=3,
            running_on=["a", "b", "b"],
        ),
        gang("p", 1, gpus=8, namespace="team-q", priority=100),
    )
    st, v, index = _search(snap)
    p = index["p"]
    assert {r for r, _ in st.quota_blocks(p, 1, first_only=False)} == {
        _row(st, "aq"),
        _row(st, "zp"),
    }
    assert v.start(p, 1, _fired(st, p))
    assert st.size["team-q/e"] == 0
    assert st.size["team-q2/w"] < 3


def _own_floor(min_gpus: int) -> Any:
    """Queue a (min ``min_gpus`` GPUs, below the 12 it holds) runs e (three 4-GPU pods, may
    shrink to one) and cc (two CPU-only pods, may shrink to one); p, pending in a, brings 4 GPUs,
    p0 none."""
    tree = quota_tree(
        {"name": "root", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": str(min_gpus)}},
    )
    a: dict[str, Any] = {"namespace": "team-a"}
    return snapshot(
        *(node(n, gpus=8) for n in "xyz"),
        node("c", gpus=0),
        tree,
        gang("e", 3, gpus=4, min_member=1, max_member=3, running_on=["x", "y", "z"], **a),
        gang("cc", 2, gpus=0, min_member=1, max_member=2, running_on=["c", "c"], **a),
        gang("p", 1, gpus=4, **a),
        gang("p0", 1, gpus=0, **a),
    )


@pytest.mark.parametrize(
    ("start", "min_gpus", "shrunk", "quiet"),
    [("p", 8, False, True), ("p", 9, False, False), ("p", 8, True, True), ("p0", 5, False, False)],
    ids=["at-min", "under-min", "at-min-from-the-plan", "no-gpu-start-under-min"],
)
def test_a_start_is_quiet_when_its_queue_keeps_its_min_with_every_victim_at_its_smallest(
    start: str, min_gpus: int, shrunk: bool, quiet: bool
) -> None:
    """No own-floor refusal is possible when the queue keeps its min with all victims smallest."""
    # a holds 12 GPUs and p brings 4; e at one pod leaves a at 8 (cc frees no GPU), its min or
    # not, whether e shrinks from 3 pods or from the 2 the plan already left it. p0 brings no
    # GPU: a is left at 4, under a min of 5.
    st, v, index = _search(_own_floor(min_gpus))
    if shrunk:
        assert st.resize(index["e"], 2, check_quota=False)
    assert victims.Start(v, index[start], 1, set(), False).quiet() is quiet


def _own_queue(min_gpus: int) -> Any:
    """Queue a (min ``min_gpus``) holds 20 GPUs: e1 (four 1-GPU pods, three on n, one on m) and
    e2 (four 4-GPU pods on cordoned k). Fillers of queue o leave 3 GPUs free on m; p (4 GPUs,
    queue a) fits nowhere until e1 gives back its pod on m."""
    tree = leaf_queues(("a", "team-a"), ("o", "team-o"), gpus={"a": {"min": min_gpus}})
    a: dict[str, Any] = {"namespace": "team-a"}
    o: dict[str, Any] = {"namespace": "team-o", "priority": 1000}
    return snapshot(
        node("n", gpus=8),
        node("m", gpus=8),
        node("k", gpus=16, unschedulable=True),
        tree,
        gang("fn", 1, gpus=5, running_on=["n"], **o),
        gang("fm", 1, gpus=4, running_on=["m"], **o),
        gang("e1", 4, gpus=1, min_member=1, max_member=4, running_on=["n", "n", "n", "m"], **a),
        gang("e2", 4, gpus=4, min_member=1, max_member=4, running_on=["k"] * 4, **a),
        gang("p", 1, gpus=4, **a),
    )


def test_a_take_back_in_the_starts_own_queue_counts_the_start_toward_its_min() -> None:
    """A take-back in the start's own queue may go where the start keeps the queue at its min."""
    # With e2 shrunk to 2, a settles at 12 GPUs, under its min of 14, but p brings 4: e1 giving
    # back one GPU leaves a at 15, so e1 shrinks and p starts on m.
    st, v, index = _search(_own_queue(14))
    assert st.resize(index["e2"], 2, check_quota=False)
    assert v.start(index["p"], 1, set())
    assert st.size["team-a/e1"] == 3
    assert st.placed == {"team-a/p-worker-0": "m"}


def test_a_start_in_debt_takes_back_in_its_own_queue_at_its_min() -> None:
    """With debt, the start's own queue at its min still gives victims (greedy refills it)."""
    # With e2 at 2, a (min 16) settles at 12 GPUs, at its min with p's 4: without debt none of
    # a's jobs may shrink and the search says its own queue's floor refused it.
    st, v, index = _search(_own_queue(16))
    assert st.resize(index["e2"], 2, check_quota=False)
    assert not v.start(index["p"], 1, set())
    assert v.own_floor_refused
    assert st.size["team-a/e1"] == 4
    assert v.start(index["p"], 1, set(), debt=True)
    assert st.size["team-a/e1"] == 3


def test_a_failed_start_in_a_queue_with_a_floor_is_not_searched_again_in_the_same_plan() -> None:
    """The same demand in the same plan fails without a search, and says again what refused it."""
    # p1 and p2 are alike; a's floor refuses the shrink of e1 that would make room.
    snap = _floor_cluster(14, {"gpus": 4, "namespace": "team-a"})
    _, v, index = _search(snap)
    searches = _counting(v)
    assert not v.start(index["p1"], 1, set())
    assert v.own_floor_refused
    v.own_floor_refused = False
    assert not v.start(index["p2"], 1, set())
    assert v.own_floor_refused
    assert searches == [index["p1"]]


def test_a_start_larger_than_one_that_failed_in_the_same_plan_is_not_searched() -> None:
    """More pods of a shape that failed in this plan fail without a search (no floor refused)."""
    # p1, p2, p3: 1, 2 and 3 pods of one 8-GPU shape, nothing to take back. Once the plan
    # changed (q's bind), p2 is searched again; p3, larger, is then not.
    snap = snapshot(
        node("n", gpus=8),
        node("m", gpus=2),
        gang("r", 1, gpus=8, running_on=["n"], priority=1000),
        *(gang(f"p{i}", i, gpus=8) for i in (1, 2, 3)),
        gang("q", 1, gpus=1),
    )
    st, v, index = _search(snap)
    searches = _counting(v)
    p1, p2, p3 = index["p1"], index["p2"], index["p3"]
    assert not v.start(p1, 1, set())
    v.own_floor_refused = True
    assert not v.start(p2, 2, set())
    assert not v.own_floor_refused
    assert searches == [p1]
    assert st.resize(index["q"], 1)
    assert not v.start(p2, 2, set())
    assert not v.start(p3, 3, set())
    assert searches == [p1, p2]


def test_a_larger_start_in_a_queue_with_a_floor_is_searched_after_a_smaller_one_failed() -> None:
    """A larger start brings its queue more usage, so its floor may let more victims go."""
    # a (min 14) holds 16 in e1: shrinking e1 leaves 8 + p1's 4 GPUs, under the min, but 8 +
    # p2's 8, over it.
    tree = leaf_queues(("a", "team-a"), ("o", "team-o"), gpus={"a": {"min": 14}})
    el = _elastic(8, 2)
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        tree,
        gang("e1", 2, namespace="team-a", running_on=["a", "b"], **el),
        gang("p1", 1, gpus=4, namespace="team-a"),
        gang("p2", 2, gpus=4, namespace="team-a"),
    )
    st, v, index = _search(snap)
    assert not v.start(index["p1"], 1, set())
    assert v.start(index["p2"], 2, set())
    assert st.size["team-a/e1"] == 1


def test_a_start_failed_in_one_queue_is_searched_in_another() -> None:
    """A start that failed is remembered with its queues: the same pod in another queue may fit."""
    # p1 is over q's max; p2, the same pod in queue o, fits on n.
    tree = leaf_queues(("q", "team-q"), ("o", "team-o"), gpus={"q": {"max": 4}})
    snap = snapshot(
        node("n", gpus=8),
        tree,
        gang("p1", 1, gpus=8, namespace="team-q"),
        gang("p2", 1, gpus=8, namespace="team-o"),
    )
    st, v, index = _search(snap)
    assert not v.start(index["p1"], 1, set())
    assert v.start(index["p2"], 1, set())
    assert st.placed == {"team-o/p2-worker-0": "n"}


def test_a_start_past_the_deadline_says_no_floor_refused_it() -> None:
    """Past the deadline a start takes no victims, so no floor refused it one."""
    snap = snapshot(
        node("n", gpus=8),
        gang("low", 1, gpus=8, running_on=["n"]),
        gang("p", 1, gpus=8, priority=100),
    )
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = PlanState(snap, problem)
    p = next(j for j, jm in enumerate(problem.jobs) if jm.name == "default/p")
    v = victims.Victims(st, greedy.queue_order(problem), deadline=float("-inf"))
    v.own_floor_refused = True  # what the start before said
    assert not v.start(p, 1, _fired(st, p))
    assert not v.own_floor_refused
    assert st.size["default/low"] == 1


def test_a_failed_value_aware_search_is_searched_again_for_a_start_that_brings_more() -> None:
    """A value-aware search is not remembered as hopeless: a start that brings more may win."""
    # Breaking big (40 GPUs of priority 0) gives up more than p1 (an 8-GPU pod of priority 10)
    # brings, less than p2 (the same pod, priority 1000). After q's bind (no node got room
    # back) p2 is searched, and breaks big.
    nodes = [f"n{i}" for i in range(5)]
    snap = snapshot(
        *(node(n, gpus=8) for n in nodes),
        node("m", gpus=2),
        gang("big", 5, gpus=8, running_on=nodes, priority=0),
        gang("p1", 1, gpus=8, priority=10),
        gang("p2", 1, gpus=8, priority=1000),
        gang("q", 1, gpus=1),
    )
    st, v, index = _search(snap, value_aware=True)
    p1, p2 = index["p1"], index["p2"]
    loss = worth.take_loss(st, index["big"], 0)
    assert worth.start_gain(st, p1, 1) <= loss < worth.start_gain(st, p2, 1)
    assert _fired(st, p1) == _fired(st, p2)
    assert not v.start(p1, 1, _fired(st, p1))
    assert st.resize(index["q"], 1)
    assert v.start(p2, 1, _fired(st, p2))
    assert st.size["default/big"] == 0


def test_a_take_back_that_opened_no_room_in_one_cluster_is_tried_for_a_gang_of_another() -> None:
    """What opened no room for a gang held to one cluster may open room for a gang that is not."""
    # p1 runs a pod in cluster x: breaking lo (on u, cluster y) opens it no room, mid (on w,
    # cluster x) goes. p2 may run anywhere: lo, first in its search, goes, and hi keeps running.
    cluster = "solver-sched.io/cluster"
    snap = snapshot(
        node("u", gpus=8, labels={cluster: "y"}),
        node("w", gpus=8, labels={cluster: "x"}),
        node("v", gpus=8, labels={cluster: "x"}),
        node("z", gpus=8, labels={cluster: "y"}),
        gang("lo", 1, gpus=8, running_on=["u"], priority=0),
        gang("mid", 1, gpus=8, running_on=["w"], priority=1),
        gang("hi", 1, gpus=8, running_on=["z"], priority=2),
        gang("p1", 2, gpus=8, running_on=["v"], priority=100),
        gang("p2", 1, gpus=8, priority=100),
    )
    st, v, index = _search(snap)
    p1, p2 = index["p1"], index["p2"]
    assert v.start(p1, 2, _fired(st, p1))
    assert (st.size["default/lo"], st.size["default/mid"]) == (1, 0)
    assert v.start(p2, 1, _fired(st, p2))
    assert (st.size["default/lo"], st.size["default/hi"]) == (0, 1)
    assert st.placed["default/p2-worker-0"] == "u"


def test_a_gangs_search_makes_room_for_its_largest_pod() -> None:
    """A gang's victims must make room for its largest pod, not its first."""
    # mw's pods need 1 and 8 GPUs: breaking lo frees 4 on n1, room for the first only, so lo
    # keeps running and g (8 GPUs on n2) goes.
    snap = snapshot(
        *(node(n, gpus=8) for n in ("n1", "n2", "n3")),
        gang("pin1", 1, gpus=4, running_on=["n1"], priority=1000),
        gang("pin3", 1, gpus=7, running_on=["n3"], priority=1000),
        gang("lo", 1, gpus=4, running_on=["n1"], priority=0),
        gang("g", 1, gpus=8, running_on=["n2"], priority=1),
        pod_group("mw", min_member=2),
        pod("mw-a", group="mw", gpus=1, priority=100),
        pod("mw-b", group="mw", gpus=8, priority=100),
    )
    st, v, index = _search(snap)
    mw = index["mw"]
    assert v.start(mw, 2, _fired(st, mw))
    assert (st.size["default/lo"], st.size["default/g"]) == (1, 0)
    assert st.placed == {"default/mw-a": "n3", "default/mw-b": "n2"}


def test_a_start_without_gpus_takes_victims_where_no_gpu_is_free() -> None:
    """A start that needs no GPU is tried once its victims free CPUs, with no GPU free."""
    # The only node has no GPU and cc holds its CPUs: p starts once cc is broken.
    snap = snapshot(
        node("c", gpus=0, cpu="8"),
        gang("cc", 1, gpus=0, cpu="8", running_on=["c"], priority=0),
        gang("p", 1, gpus=0, cpu="8", priority=100),
    )
    st, v, index = _search(snap)
    assert v.start(index["p"], 1, _fired(st, index["p"]))
    assert (st.size["default/cc"], st.size["default/p"]) == (0, 1)


def test_a_value_aware_start_larger_than_one_that_failed_is_searched() -> None:
    """Value-aware: a larger start brings more, so a victim too dear for a smaller one may go."""
    # Breaking big (40 GPUs of priority 0) gives up more than p1's one 8-GPU pod brings, less
    # than p2's two.
    nodes = [f"n{i}" for i in range(5)]
    snap = snapshot(
        *(node(n, gpus=8) for n in nodes),
        gang("big", 5, gpus=8, running_on=nodes, priority=0),
        gang("p1", 1, gpus=8, priority=10),
        gang("p2", 2, gpus=8, priority=10),
    )
    st, v, index = _search(snap, value_aware=True)
    p1, p2 = index["p1"], index["p2"]
    loss = worth.take_loss(st, index["big"], 0)
    assert worth.start_gain(st, p1, 1) <= loss < worth.start_gain(st, p2, 2)
    assert not v.start(p1, 1, _fired(st, p1))
    assert v.start(p2, 2, _fired(st, p2))
    assert st.size["default/big"] == 0
