"""Greedy's victim search: which take-backs it tries, alone or grouped on one node, and which cost
nothing of its step budget."""

from typing import Any

import pytest

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import run_cycle
from solver_sched.formulation.prepare import prepare
from solver_sched.io import manifests as m
from solver_sched.io.kube_snapshot import snapshot_from_objects
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
    node,
    plan,
    pod,
    pod_group,
    quota_tree,
    snapshot,
    workers_after,
)


def test_victims_in_a_queue_at_its_min_do_not_use_up_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Queue a borrows (6 GPUs in use, min 4): two of its three elastic jobs may shrink, then it sits
    # at its min. Its jobs have the lowest priority, so they are tried first; the room the new gang
    # needs comes from the third take-back, in queue b.
    monkeypatch.setattr(walk, "MAX_VICTIM_STEPS", 3)
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": "4"}},
                {"name": "b", "namespaces": ["team-b"]},
            ],
        }
    )
    elastic = {"min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
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
    elastic = {"min_member": 1, "max_member": 4, "size_policy": "power-of-two"}
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
    elastic = {"gpus": 4, "min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
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
    elastic = {"gpus": 4, "min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
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
    el = {"gpus": 4, "min_member": 1}
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
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = greedy.PlanState(snap, problem)
    index = {jm.name: j for j, jm in enumerate(problem.jobs)}
    v = victims.Victims(st, list(range(len(problem.jobs))))
    searches = []
    search = v._search
    v._search = lambda *a: searches.append(a[0]) or search(*a)  # type: ignore[method-assign]
    p1, p2, r = index["default/p1"], index["default/p2"], index["default/r"]
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
    el = {"gpus": 4, "min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
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
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = greedy.PlanState(snap, problem)
    index = {jm.name: j for j, jm in enumerate(problem.jobs)}
    v = victims.Victims(st, list(range(len(problem.jobs))))
    walked: list[int] = []
    released = v.released_all
    v.released_all = lambda *a: walked.append(a[0]) or released(*a)  # type: ignore[method-assign]
    p1, p2, e1 = index["default/p1"], index["default/p2"], index["default/e1"]
    assert not v.start(p1, 1, set())
    assert set(walked) == {e1}
    seen = len(walked)
    assert st.resize(index["default/q"], 1)
    assert st.placed == {"default/q-worker-0": "b"}
    assert not v.start(p2, 1, set())
    assert len(walked) == seen  # out of reach still: not walked
    assert st.resize(index["default/q"], 0)  # b gets room back; none of e1 is there
    assert not v.start(index["default/p3"], 1, set())
    assert not v.start(p2, 1, set())
    assert len(walked) == seen
    assert st.resize(index["default/pin"], 0, check_quota=False)  # a gets room back
    assert v.start(p2, 1, set())
    assert st.placed["default/p2-worker-0"] == "a"
    assert st.size["default/e1"] == 1


def _walks(snap: Any) -> tuple[Any, Any, dict[str, int], list[int]]:
    """A plan state, its Victims and job index, and the victims whose room a search reads."""
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = greedy.PlanState(snap, problem)
    index = {jm.name.split("/")[1]: j for j, jm in enumerate(problem.jobs)}
    v = victims.Victims(st, list(range(len(problem.jobs))))
    walked: list[int] = []
    released = v.released_all
    v.released_all = lambda *a: walked.append(a[0]) or released(*a)  # type: ignore[method-assign]
    return st, v, index, walked


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
    st, v, index, _ = _walks(snap)
    fired = {key for key, starters in st.problem.triggers.items() if index["p"] in starters}
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
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "q", "namespaces": ["team-q"], "max": {"nvidia.com/gpu": "12"}},
                {"name": "o", "namespaces": ["team-o"]},
            ],
        }
    )
    el = {"gpus": 4, "min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
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
    st, v, index, _ = _walks(snap)
    taken: list[int] = []  # the take-backs the searches tried
    resize = st.resize
    st.resize = lambda j, *a, **k: taken.append(j) or resize(j, *a, **k)  # type: ignore[method-assign]
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
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": str(min_gpus)}},
                {"name": "o", "namespaces": ["team-o"]},
            ],
        }
    )
    el = {"gpus": 8, "min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
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
    plan changed by o2's bind) fails without walking its victims while a's usage has not grown.
    Once a2 (2 GPUs, queue a) starts, shrinking e1 leaves a at its min, and p2 is searched again
    and starts on b."""
    pending = {"gpus": 8, "namespace": "team-o"}
    snap = _floor_cluster(10, pending, gang("a2", 1, gpus=2, namespace="team-a"))
    st, v, index, walked = _walks(snap)
    assert not v.start(index["p1"], 1, set())
    assert set(walked) == {index["e1"]}
    seen = len(walked)
    assert st.resize(index["o2"], 1)  # the plan changed; no node got room back
    assert not v.start(index["p2"], 1, set())
    assert len(walked) == seen  # the floor still refuses: not walked
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
    st, v, index, _ = _walks(snap)
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


def test_a_shrink_that_opened_no_room_is_tried_again_once_its_node_gets_room_back() -> None:
    """p1's search finds that shrinking e1 opens no room on a (pin holds the rest of a) and starts
    p1 by shrinking e2 on c. Once pin is gone from a, p2 (the same pod shape, allowed to break g)
    shrinks e1 and starts on a rather than break g: a shrink is known to open no room only until
    one of its nodes gets room back."""
    el = {"gpus": 4, "min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
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
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = greedy.PlanState(snap, problem)
    index = {jm.name: j for j, jm in enumerate(problem.jobs)}
    v = victims.Victims(st, greedy.queue_order(problem))
    assert v.start(index["default/p1"], 1, set())
    assert st.placed == {"default/p1-worker-0": "c"}
    assert (st.size["default/e1"], st.size["default/e2"]) == (2, 1)
    assert st.resize(index["default/pin"], 0, check_quota=False)  # a gets room back
    assert v.start(index["default/p2"], 1, set(problem.jobs[index["default/g"]].break_needs))
    assert st.placed["default/p2-worker-0"] == "a"
    assert (st.size["default/e1"], st.size["default/g"]) == (1, 1)


def test_a_take_back_frees_no_room_where_other_pods_hold_the_cpu() -> None:
    """Shrinking e1 frees 8 GPUs on a, but another scheduler's pod holds 62 of a's 64 CPUs, so
    p's pod (4 CPUs) still cannot run there: e1 is not taken, e2 (next in the search, freeing d)
    is, and p starts on d."""
    el = {"gpus": 8, "min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
    snap = snapshot(
        *(node(n, gpus=8) for n in "abcd"),
        pod("hog", gpus=0, cpu="62", node_name="a", scheduler="default-scheduler"),
        gang("e1", 2, running_on=["b", "a"], **el),
        gang("e2", 2, running_on=["c", "d"], priority=10, **el),
        gang("p", 1, gpus=8, priority=100),
    )
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    st = greedy.PlanState(snap, problem)
    index = {jm.name: j for j, jm in enumerate(problem.jobs)}
    order = greedy.queue_order(problem)
    # e2 (priority 10) is ahead in queue order: the search, lowest priority first, tries e1 first
    assert order.index(index["default/e2"]) < order.index(index["default/e1"])
    assert victims.Victims(st, order).start(index["default/p"], 1, set())
    assert st.placed == {"default/p-worker-0": "d"}
    assert (st.size["default/e1"], st.size["default/e2"]) == (2, 1)


def _reclaim_for_a_little() -> list[Any]:
    """Queue a is below its min (8 GPUs, none used); queue b borrows: its priority-1000 gang b
    holds the one node. a's pending 1-GPU gang may reclaim, which breaks b: one GPU of priority
    0 and of a's min (1,000 + 20,000) for 8 of priority 1000 (8 x 4,000 + 500 for the break)."""
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": "8"}},
                {"name": "b", "namespaces": ["team-b"], "min": {"nvidia.com/gpu": "0"}},
            ],
        }
    )
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
    el = {"min_member": 1, "max_member": 2, "size_policy": "power-of-two"}
    snap = snapshot(
        node("a", gpus=8),
        tree,
        *(gang(e, 2, namespace="team-q", running_on=["a", "a"], **el) for e in ("e1", "e2")),
        gang("p", 1, namespace="team-q", priority=priority),
    )
    st, v, index, _ = _walks(snap)
    fired = {key for key, starters in st.problem.triggers.items() if index["p"] in starters}
    resized: list[int] = []
    resize = st.resize
    st.resize = lambda j, *a, **k: resized.append(j) or resize(j, *a, **k)  # type: ignore[method-assign]
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
            toggles = ((True, True, True), (False, True, True))
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
    st = greedy.PlanState(snap, problem)
    assert worth.take_loss(st, low, 0) == worth.start_gain(st, hi, 1) == 8000
    aware = greedy.greedy_plan(snap, problem, value_aware=True)
    assert (aware.size["default/low"], aware.size["default/hi"]) == (1, 0)
    assert greedy.greedy_plan(snap, problem).size["default/hi"] == 1  # queue order breaks it
