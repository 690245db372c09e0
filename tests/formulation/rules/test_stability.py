"""Rule 8: running pods never move; irregular sizes are brought back to an allowed size."""

import pytest

from tests.support.builders import gang, node, plan, pod, snapshot, workers_after

BACKENDS = ["cpsat", "milp", "greedy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_running_pods_never_move(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=8), node("b", gpus=8), pod("r", gpus=1, node_name="a"), gang("g", 1, gpus=8)
    )
    result = plan(snap, backend)
    assert all(b.pod != "default/r" for b in result.plan.binds)
    assert result.plan.evictions == ()
    assert [b.node for b in result.plan.binds] == ["b"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_irregular_power_of_two_size_is_fixed(backend: str) -> None:
    # 6 running under power-of-two: 8 fits, so the job completes to 8 (no eviction).
    snap = snapshot(
        node("a", gpus=8),
        gang("el", 8, min_member=2, max_member=8, size_policy="power-of-two", running_on=["a"] * 6),
    )
    result = plan(snap, backend)
    assert workers_after(snap, result.plan)["default/el"] == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_irregular_size_that_cannot_grow_shrinks(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=6),
        gang("el", 8, min_member=2, max_member=8, size_policy="power-of-two", running_on=["a"] * 6),
    )
    result = plan(snap, backend)
    assert workers_after(snap, result.plan)["default/el"] == 4
    (ev,) = result.plan.evictions
    assert ev.pods == ("default/el-worker-4", "default/el-worker-5")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gang_whose_members_finish_one_by_one_is_left_alone(backend: str) -> None:
    objs = gang("g", 4, running_on=["a"] * 4)
    objs[1]["status"]["phase"] = "Succeeded"  # worker 0 finished first
    snap = snapshot(node("a", gpus=8), objs)
    result = plan(snap, backend)
    assert result.violations == []
    assert result.plan.evictions == ()
    (row,) = result.plan.jobs
    assert row.reason.startswith("completing")
