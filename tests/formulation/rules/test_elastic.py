"""Rule 4: guaranteed before elastic; power-of-two sizes; elastic taken back, never below min."""

from typing import Any

import pytest

from solver_sched.config.schema import ObjectiveWeights, SchedulerConfig, Settings
from tests.support.builders import gang, node, other, plan, snapshot, workers_after

BACKENDS = ["cpsat", "milp", "greedy"]


def elastic(running_on: list[str] | None = None, **kw: Any) -> list[dict[str, Any]]:
    return gang(
        "el",
        16,
        min_member=2,
        max_member=256,
        size_policy="power-of-two",
        running_on=running_on,
        **kw,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_thirteen_idle_gpus_give_eight_workers(backend: str) -> None:
    snap = snapshot(node("a", gpus=8), node("b", gpus=8), other("x", "a", 3), elastic())
    assert workers_after(snap, plan(snap, backend).plan)["default/el"] == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_any_size_policy_uses_every_gpu(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        other("x", "a", 3),
        gang("el", 16, min_member=2, max_member=16),
    )
    assert workers_after(snap, plan(snap, backend).plan)["default/el"] == 13


@pytest.mark.parametrize("backend", BACKENDS)
def test_guaranteed_gang_shrinks_elastic_job_keeping_power_of_two(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        other("x", "a", 3),
        elastic(running_on=["a"] * 5 + ["b"] * 3),
        gang("t", 8),
    )
    result = plan(snap, backend)
    assert workers_after(snap, result.plan) == {"default/el": 4, "default/t": 8}
    (ev,) = result.plan.evictions
    assert ev.pods == tuple(f"default/el-worker-{i}" for i in range(4, 8))


@pytest.mark.parametrize("backend", BACKENDS)
def test_elastic_is_never_shrunk_below_its_min(backend: str) -> None:
    snap = snapshot(node("a", gpus=4), elastic(running_on=["a"] * 4), gang("t", 4))
    result = plan(snap, backend)
    # Shrinking to min (2) does not make room for 4: nothing changes, equal priority never breaks.
    assert result.plan.evictions == ()
    assert workers_after(snap, result.plan) == {"default/el": 4, "default/t": 0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_guaranteed_outweighs_any_amount_of_elastic(backend: str) -> None:
    # 16 GPUs: rigid 10 + elastic min 2 fit; elastic may only grow into what is left (4).
    snap = snapshot(node("a", gpus=8), node("b", gpus=8), gang("rigid", 10), elastic())
    after = workers_after(snap, plan(snap, backend).plan)
    assert after == {"default/rigid": 10, "default/el": 4}


def test_band_keeps_guaranteed_first_even_with_a_huge_elastic_weight() -> None:
    weights = ObjectiveWeights(guaranteed=1, elastic=10**6, waiting=0)
    cfg = SchedulerConfig(weights=weights, settings=Settings(workers=1))
    snap = snapshot(node("a", gpus=8), elastic(running_on=["a"] * 8), gang("t", 4))
    result = plan(snap, "cpsat", cfg=cfg)
    assert workers_after(snap, result.plan) == {"default/el": 4, "default/t": 4}
