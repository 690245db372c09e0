"""Rules 5 and 6: priority preemption of whole gangs, elastic pods first, minimal job-level
evictions, highest replica index first, never evicting for a job the plan does not place."""

import pytest

from tests.support.builders import (
    config,
    gang,
    node,
    plan,
    quota_tree,
    snapshot,
    workers_after,
)

BACKENDS = ["cpsat", "milp", "greedy"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("pending_priority", "want_preempted"),
    [(1000, True), (0, False), (-5, False)],
    ids=["higher-preempts", "equal-never", "lower-never"],
)
def test_priority_preemption(backend: str, pending_priority: int, want_preempted: bool) -> None:
    snap = snapshot(
        node("a", gpus=4),
        gang("low", 4, running_on=["a"] * 4, priority=0),
        gang("high", 4, priority=pending_priority),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert (after["default/high"] == 4) is want_preempted
    assert (after["default/low"] == 0) is want_preempted
    if want_preempted:
        (ev,) = result.plan.evictions
        assert ev.job == "default/low" and "preempted by default/high" in ev.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_priority_preemption_can_be_switched_off(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=4),
        gang("low", 4, running_on=["a"] * 4, priority=0),
        gang("high", 4, priority=1000),
    )
    result = plan(snap, backend, cfg=config(priority_preemption=False))
    assert result.plan.evictions == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_priority_never_preempts_across_queues(backend: str) -> None:
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "team-a", "namespaces": ["team-a"]},
                {"name": "team-b", "namespaces": ["team-b"]},
            ],
        }
    )
    snap = snapshot(
        node("a", gpus=4),
        tree,
        gang("low", 4, namespace="team-b", running_on=["a"] * 4, priority=0),
        gang("high", 4, namespace="team-a", priority=1000),
    )
    result = plan(snap, backend)
    assert result.plan.evictions == ()
    assert workers_after(snap, result.plan)["team-a/high"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_elastic_surplus_is_taken_before_any_gang_is_broken(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=4),
        gang("rigid", 4, running_on=["b"] * 4, priority=0),
        gang(
            "el",
            8,
            min_member=4,
            max_member=8,
            size_policy="power-of-two",
            running_on=["a"] * 8,
            priority=0,
        ),
        gang("high", 4, priority=1000),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after == {"default/rigid": 4, "default/el": 4, "default/high": 4}
    (ev,) = result.plan.evictions
    assert ev.job == "default/el"
    assert ev.pods == tuple(f"default/el-worker-{i}" for i in range(4, 8))


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_break_as_few_gangs_as_possible(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        gang("l1", 4, running_on=["a"] * 4),
        gang("l2", 4, running_on=["a"] * 4),
        gang("l3", 8, running_on=["b"] * 8),
        gang("high", 8, priority=1000),
    )
    result = plan(snap, backend)
    assert len(result.plan.evictions) == 1
    assert workers_after(snap, result.plan)["default/high"] == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_eviction_unless_the_plan_places_the_job(backend: str) -> None:
    # Even evicting everything leaves 8 GPUs: the 12-GPU gang cannot start, so nothing is evicted.
    snap = snapshot(
        node("a", gpus=8), gang("low", 4, running_on=["a"] * 4), gang("high", 12, priority=1000)
    )
    result = plan(snap, backend)
    assert result.plan.evictions == ()
    assert result.plan.binds == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_evictions_are_minimal(backend: str) -> None:
    # high needs 2 GPUs; 1 is free. Shrinking el 8 -> 4 frees 4 (needed); breaking rigid is not.
    snap = snapshot(
        node("a", gpus=12),
        gang("rigid", 3, running_on=["a"] * 3),
        gang("el", 8, min_member=1, max_member=8, size_policy="power-of-two", running_on=["a"] * 8),
        gang("high", 2, priority=1000),
    )
    result = plan(snap, backend)
    assert [e.job for e in result.plan.evictions] == ["default/el"]
    assert workers_after(snap, result.plan) == {
        "default/rigid": 3,
        "default/el": 4,
        "default/high": 2,
    }
