"""Rule 1: a gang ends the cycle with 0 pods or an allowed size; rule 8 for partial gangs."""

import pytest

from tests.support.builders import gang, node, other, plan, snapshot, workers_after

BACKENDS = ["cpsat", "milp", "greedy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_workers_on_five_free_gpus_get_nothing(backend: str) -> None:
    snap = snapshot(node("a", gpus=4), node("b", gpus=4), other("x", "a", 3), gang("big", 8))
    result = plan(snap, backend)
    assert result.plan.binds == ()
    assert workers_after(snap, result.plan)["default/big"] == 0
    row = next(j for j in result.plan.jobs if j.name == "default/big")
    assert "needs 8" in row.reason and "5 free" in row.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_free_gpus_stay_for_a_smaller_gang(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=4), node("b", gpus=4), other("x", "a", 3), gang("big", 8), gang("small", 4)
    )
    after = workers_after(snap, plan(snap, backend).plan)
    assert after == {"default/big": 0, "default/small": 4}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gang_may_span_nodes(backend: str) -> None:
    snap = snapshot(node("a", gpus=2), node("b", gpus=2), gang("g", 4))
    result = plan(snap, backend)
    assert {b.node for b in result.plan.binds} == {"a", "b"}
    assert workers_after(snap, result.plan)["default/g"] == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_partial_gang_is_completed_when_it_fits(backend: str) -> None:
    snap = snapshot(node("a", gpus=4), gang("g", 4, running_on=["a", "a"]))
    result = plan(snap, backend)
    assert sorted(b.pod for b in result.plan.binds) == ["default/g-worker-2", "default/g-worker-3"]
    assert result.plan.evictions == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_partial_gang_that_cannot_complete_is_evicted(backend: str) -> None:
    snap = snapshot(node("a", gpus=2), gang("g", 4, running_on=["a", "a"]))
    result = plan(snap, backend)
    assert result.plan.binds == ()
    (ev,) = result.plan.evictions
    assert set(ev.pods) == {"default/g-worker-0", "default/g-worker-1"}
    assert "incomplete" in ev.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_gang_never_spans_clusters(backend: str) -> None:
    east = {"solver-sched.io/cluster": "east"}
    west = {"solver-sched.io/cluster": "west"}
    snap = snapshot(
        node("e1", gpus=2, labels=east), node("w1", gpus=2, labels=west), gang("g", 4), gang("h", 2)
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after["default/g"] == 0  # 2 + 2 GPUs exist, but never on one cluster
    assert after["default/h"] == 2
    assert len({b.node for b in result.plan.binds}) == 1
