"""Greedy's main loop: the phases of starts (partial gangs, within-min, reclaim), refills of a queue
taken below its min, and the scale-in order it follows."""

from typing import Any

import pytest

from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.prepare import prepare
from solver_sched.solvers import greedy
from tests.support.builders import (
    NOW,
    config,
    gang,
    hi_breaks_low,
    leaf_queues,
    node,
    plan,
    quota_tree,
    snapshot,
    workers_after,
)


def test_a_gang_may_replace_a_lower_priority_one_in_a_queue_at_its_min() -> None:
    # Queue a borrows (6 GPUs, min 4). Breaking "low" alone would take it to 2, below its min, but
    # the higher-priority gang of the same queue starting in its place brings it back to 6.
    tree = leaf_queues(("a", "team-a"), ("b", "team-b"), gpus={"a": {"min": 4}})
    snap = snapshot(
        node("n", gpus=8),
        tree,
        gang("low", 4, namespace="team-a", running_on=["n"] * 4, priority=0),
        gang("z-side", 2, namespace="team-a", running_on=["n"] * 2, priority=0),
        gang("b1", 2, namespace="team-b", running_on=["n"] * 2, priority=0),
        gang("hi", 4, namespace="team-a", priority=100),
    )
    for backend in ("greedy", "cpsat"):
        result = plan(snap, backend)
        assert result.violations == []
        after = workers_after(snap, result.plan)
        assert after == {"team-a/low": 0, "team-a/z-side": 2, "team-b/b1": 2, "team-a/hi": 4}


def test_a_partial_gang_that_cannot_complete_is_released_before_other_starts() -> None:
    # Queue b borrows (4 GPUs, min 2), 2 of them held by g2, a partial gang that cannot complete.
    # It goes whatever the floor says, so no other start may count on its GPUs: breaking g1 for
    # g0 would leave b at 1 GPU once g2 is released. Found by the property tests (600 examples).
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {
                    "name": "b",
                    "namespaces": ["team-b"],
                    "min": {"nvidia.com/gpu": "2"},
                    "max": {"nvidia.com/gpu": "2"},
                },
            ],
        }
    )
    snap = snapshot(
        node("n0", gpus=4),
        tree,
        gang("g0", 1, namespace="team-b", priority=100),
        gang("g1", 1, namespace="team-b", gpus=2, running_on=["n0"]),
        gang("g2", 2, namespace="team-b", gpus=2, running_on=["n0", None]),
        gang("g3", 1, gpus=1),
    )
    result = plan(snap, "greedy")
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert after == {"team-b/g0": 1, "team-b/g1": 1, "team-b/g2": 0, "default/g3": 1}


def test_a_partial_gang_is_settled_before_a_reclaim_counts_on_its_gpus() -> None:
    # Queue y borrows (min 6) and holds 2 of its GPUs in p, a partial gang that fits if completed
    # now. Deciding p after x's reclaim took a victim would leave y below its min with p stuck at
    # 2 pods: the checker rejected that plan every cycle (found in review).
    tree = leaf_queues(("y", "team-y"), ("x", "team-x"), gpus={"y": {"min": 6}, "x": {"min": 4}})
    snap = snapshot(
        node("n0", gpus=8),
        node("n1", gpus=2),
        tree,
        gang("l", 4, namespace="team-y", running_on=["n0"] * 4),
        gang("k", 2, namespace="team-y", running_on=["n0"] * 2),
        gang("p", 4, namespace="team-y", running_on=["n1", "n1", None, None]),
        gang("a", 4, namespace="team-x"),
    )
    result = plan(snap, "greedy")
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert after["team-y/p"] in (0, 4)


def test_a_high_priority_partial_gang_completes_by_preemption() -> None:
    # hi runs 2 of its 4 pods; the other 2 GPUs are held by a lower-priority gang. Its running
    # pods count as held, so the take-back it needs is 2 GPUs, not 4.
    snap = snapshot(
        node("n", gpus=4),
        gang("low", 2, running_on=["n"] * 2, priority=0),
        gang("hi", 4, running_on=["n"] * 2, priority=100),
    )
    result = plan(snap, "greedy")
    assert result.violations == []
    assert workers_after(snap, result.plan) == {"default/hi": 4, "default/low": 0}


def _refill_case(fill_gpus: int, ahead: bool = False) -> ClusterSnapshot:
    """Queue a borrows (low: 4 GPUs, min 3) on a full 8-GPU node; hi (1 GPU) and fill (low's
    priority: it may not break low itself) wait in a; ``ahead``: b2 waits in queue b, 2 hours
    longer than fill, so it comes between them in queue order."""
    tree = leaf_queues(("a", "team-a"), ("b", "team-b"), gpus={"a": {"min": 3}})
    return snapshot(
        node("n", gpus=8),
        tree,
        gang("low", 4, namespace="team-a", running_on=["n"] * 4, priority=0),
        gang("b1", 4, namespace="team-b", running_on=["n"] * 4, priority=0),
        gang("hi", 1, namespace="team-a", priority=100),
        gang("fill", fill_gpus, namespace="team-a", priority=0),
        *([gang("b2", 1, namespace="team-b", created="2026-01-01T10:00:00Z")] if ahead else []),
    )


def test_a_gang_may_break_below_its_queues_min_when_other_gangs_of_the_queue_refill_it() -> None:
    # hi may break low, which takes a to 1 GPU, below its min; fill (3 GPUs) then starts in the
    # room, and a is back at 4. Before, greedy refused the break and started nothing; the model
    # did the replacement.
    snap = _refill_case(fill_gpus=3)
    for backend in ("greedy", "cpsat"):
        result = plan(snap, backend)
        assert result.violations == []
        after = workers_after(snap, result.plan)
        assert after == {"team-a/low": 0, "team-b/b1": 4, "team-a/hi": 1, "team-a/fill": 3}, backend


def test_a_pending_gang_of_another_queue_does_not_stop_the_refill() -> None:
    # b2 (queue b, waiting 2 h) comes before fill in queue order; it cannot refill a, so the
    # refill passes over it to fill, and b2 waits (no room is left for it)
    snap = _refill_case(fill_gpus=3, ahead=True)
    result = plan(snap, "greedy")
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert after == {
        "team-a/low": 0,
        "team-b/b1": 4,
        "team-a/hi": 1,
        "team-a/fill": 3,
        "team-b/b2": 0,
    }


def test_a_break_below_the_queues_min_is_undone_when_nothing_refills_it() -> None:
    # fill needs 4 GPUs: after hi and its break only 3 are free, so a would stay below its min.
    # hi's start is rolled back with its break, and low keeps running.
    snap = _refill_case(fill_gpus=4)
    for backend in ("greedy", "cpsat"):
        result = plan(snap, backend)
        assert result.violations == []
        after = workers_after(snap, result.plan)
        assert after == {"team-a/low": 4, "team-b/b1": 4, "team-a/hi": 0, "team-a/fill": 0}, backend


def _two_queues_race(
    mins: dict[str, int], gpus: int, a: tuple[str, int, int], b: tuple[str, int, int]
) -> ClusterSnapshot:
    """Queues a and b (a min where ``mins`` gives one) on one node of ``gpus``; one pending gang
    in each, (name, workers of one GPU, priority)."""
    children: list[dict[str, Any]] = []
    for q in ("a", "b"):
        child: dict[str, Any] = {"name": q, "namespaces": [f"team-{q}"]}
        if q in mins:
            child["min"] = {"nvidia.com/gpu": str(mins[q])}
        children.append(child)
    return snapshot(
        node("n", gpus=gpus),
        quota_tree({"name": "root", "children": children}),
        *(
            gang(name, workers, namespace=f"team-{q}", priority=prio)
            for q, (name, workers, prio) in (("a", a), ("b", b))
        ),
    )


def _both_backends_run(snap: ClusterSnapshot, expected: dict[str, int]) -> None:
    for backend in ("greedy", "cpsat"):
        result = plan(snap, backend)
        assert result.violations == []
        assert workers_after(snap, result.plan) == expected, backend


def test_gangs_that_fit_in_their_queues_min_start_before_gangs_that_overshoot_it() -> None:
    # Both queues are below their min. big (priority 100) would cover 2 GPUs of a's min and use 4
    # more; small covers 6 GPUs of b's min. Covering mins outweighs priority across queues (the
    # quotaMin weight), so small goes first; big no longer fits. Before, big went first (priority
    # order) and small waited.
    snap = _two_queues_race({"a": 2, "b": 6}, 8, ("big", 6, 100), ("small", 6, 0))
    _both_backends_run(snap, {"team-a/big": 0, "team-b/small": 6})


def test_a_gang_of_a_queue_below_its_min_starts_before_a_queue_without_one() -> None:
    # Queue b is below its min (4, nothing running); queue a has none. hi (priority 100, a) and
    # lo (priority 0, b) each need the node's 4 GPUs: lo covers b's min, which outweighs
    # priority across queues, so it starts first and hi, which may not break it (b at its
    # min), waits. Greedy starting hi first in priority order could not undo that: hi is not
    # running, so no reclaim breaks it.
    snap = _two_queues_race({"b": 4}, 4, ("hi", 4, 100), ("lo", 4, 0))
    _both_backends_run(snap, {"team-a/hi": 0, "team-b/lo": 4})


def test_within_a_queue_gangs_keep_their_priority_order_while_mins_are_covered() -> None:
    # Queue a (min 8) is below its min. big (priority 100) overshoots the min, small (priority 0)
    # fits in it: small may not jump ahead of big in big's own queue, where the min is covered
    # either way and priority decides.
    tree = quota_tree(
        {
            "name": "root",
            "children": [{"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": "8"}}],
        }
    )
    snap = snapshot(
        node("n", gpus=16),
        tree,
        gang("big", 16, namespace="team-a", priority=100),
        gang("small", 4, namespace="team-a", priority=0),
    )
    for backend in ("greedy", "cpsat"):
        result = plan(snap, backend)
        assert result.violations == []
        assert workers_after(snap, result.plan) == {"team-a/big": 16, "team-a/small": 0}, backend


def test_a_tier_that_outweighs_quota_min_is_not_held_back_for_other_queues_mins() -> None:
    # As in the test above, big would overshoot a's min, but with four priorities its tier weighs
    # 64,000 per GPU, more than quotaMin's 20,000: it goes first, as the objective says.
    tree = leaf_queues(
        ("a", "team-a"), ("b", "team-b"), ("c", "team-c"), gpus={"a": {"min": 2}, "b": {"min": 6}}
    )
    snap = snapshot(
        node("n", gpus=8),
        tree,
        gang("big", 6, namespace="team-a", priority=100),
        gang("small", 6, namespace="team-b", priority=0),
        gang("p10", 3, namespace="team-c", priority=10),
        gang("p50", 3, namespace="team-c", priority=50),
    )
    for backend in ("greedy", "cpsat"):
        result = plan(snap, backend)
        assert result.violations == []
        after = workers_after(snap, result.plan)
        assert (after["team-a/big"], after["team-b/small"]) == (6, 0), backend


def _spread_elastic() -> ClusterSnapshot:
    # Two elastic jobs (1-GPU pods, sizes 4 or 8) spread over four nodes, 16 GPUs free but at most
    # 6 on a node; "big" needs two whole nodes. Shrinking both to 4 frees 8 more GPUs, but their
    # highest-index pods are spread: only evictions chosen by node open two nodes. e2 is tried
    # first and opens nothing alone; e1 empties node a and most of b, after which e2 can finish b.
    layout = {
        "e1": ["c", "a", "a", "b", "b", "c", "d", "d"],
        "e2": ["c", "b", "c", "c", "c", "c", "d", "d"],
    }
    elastic: dict[str, Any] = {"min_member": 4, "max_member": 8, "size_policy": "power-of-two"}
    return snapshot(
        *(node(n, gpus=8) for n in "abcd"),
        *(gang(name, 8, running_on=where, **elastic) for name, where in layout.items()),
        gang("big", 2, gpus=8),
    )


@pytest.mark.parametrize("backend", ["greedy", "cpsat"])
def test_a_scale_in_takes_the_pods_that_open_a_node_for_a_large_pod(backend: str) -> None:
    snap = _spread_elastic()
    result = plan(snap, backend)
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert (after["default/big"], after["default/e1"], after["default/e2"]) == (2, 4, 4)
    evicted = {p for e in result.plan.evictions for p in e.pods}
    assert {f"default/e1-worker-{i}" for i in (1, 2, 3, 4)} <= evicted
    assert "default/e2-worker-1" in evicted
    assert not evicted & {"default/e1-worker-0", "default/e2-worker-0"}  # the first pods stay
    assert sorted(b.node for b in result.plan.binds) == ["a", "b"]


def test_past_its_deadline_a_pass_starts_what_fits_and_takes_no_victims() -> None:
    # A pass past its deadline (a cycle's extra candidate out of time) keeps low and still
    # starts small.
    snap = hi_breaks_low()
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW, None)
    for value_aware in (False, True):
        searched = greedy.greedy_plan(snap, problem, value_aware=value_aware)
        assert searched.size == {"default/low": 0, "default/hi": 4, "default/small": 1}
        late = greedy.greedy_plan(snap, problem, value_aware=value_aware, deadline=0.0)
        assert late.size == {"default/low": 4, "default/hi": 0, "default/small": 1}


@pytest.mark.parametrize("backend", ["greedy", "cpsat"])
def test_a_gang_that_found_no_room_starts_in_what_a_later_start_freed_and_left(
    backend: str,
) -> None:
    # top (queue b) is tried first and finds no room: the only node is held by low, which only a
    # higher-priority start of queue a may break. hi (queue a) breaks it and uses half its node;
    # top starts in the other half, not a cycle later.
    tree = leaf_queues(("a", "team-a"), ("b", "team-b"))
    snap = snapshot(
        node("n", gpus=8),
        tree,
        gang("low", 1, namespace="team-a", gpus=8, running_on=["n"], priority=0),
        gang("hi", 1, namespace="team-a", gpus=4, priority=100),
        gang("top", 1, namespace="team-b", gpus=4, priority=1000),
    )
    result = plan(snap, backend)
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert after == {"team-a/low": 0, "team-a/hi": 1, "team-b/top": 1}
