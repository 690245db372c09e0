"""Rule 7: inside its cooldown a job does not scale out; it scales in only for a guaranteed gang."""

from datetime import timedelta
from typing import Any

import pytest

from tests.support.builders import NOW, gang, node, plan, snapshot, workers_after

BACKENDS = ["cpsat", "milp", "greedy"]
RESIZED = "2026-01-01T11:58:00Z"  # two minutes before NOW


def elastic(**kw: Any) -> list[dict[str, Any]]:
    return gang(
        "el",
        16,
        min_member=2,
        max_member=16,
        size_policy="power-of-two",
        cooldown="10m",
        last_scale_time=RESIZED,
        **kw,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_scale_out_inside_cooldown(backend: str) -> None:
    snap = snapshot(node("a", gpus=16), elastic(running_on=["a"] * 4))
    result = plan(snap, backend)
    assert result.plan.binds == ()
    (row,) = result.plan.jobs
    assert row.reason == (
        "cooldown until 2026-01-01T12:08:00Z: resized at 2026-01-01T11:58:00Z, "
        "no scale-out before then"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_that_starts_inside_its_cooldown_is_not_told_of_it(backend: str) -> None:
    """Cooldown holds a job running at least its min (rule 7): one that starts (0 -> 8 of 12
    pods, 8 the largest size its 12 pods allow) was told "cooldown until ...: no scale-out
    before then" instead of why its other 4 pods wait."""
    snap = snapshot(node("a", gpus=16), elastic()[: 1 + 12])
    result = plan(snap, backend)
    (row,) = result.plan.jobs
    assert (row.current, row.planned) == (0, 8)
    assert row.reason.startswith("not scheduled: after this plan the job runs 8 of its 12 pods")


@pytest.mark.parametrize("backend", BACKENDS)
def test_scale_out_after_cooldown(backend: str) -> None:
    snap = snapshot(node("a", gpus=16), elastic(running_on=["a"] * 4))
    result = plan(snap, backend, now=NOW + timedelta(minutes=9))
    assert workers_after(snap, result.plan)["default/el"] == 16


@pytest.mark.parametrize("backend", BACKENDS)
def test_scale_in_inside_cooldown_for_a_guaranteed_gang(backend: str) -> None:
    snap = snapshot(node("a", gpus=8), elastic(running_on=["a"] * 8), gang("t", 4))
    result = plan(snap, backend)
    assert workers_after(snap, result.plan) == {"default/el": 4, "default/t": 4}


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_scale_in_without_a_guaranteed_gang(backend: str) -> None:
    # Another running elastic job wants to grow: elastic never takes from elastic.
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=1),
        elastic(running_on=["a"] * 8),
        gang("other", 8, min_member=1, max_member=8, running_on=["b"]),
    )
    result = plan(snap, backend)
    assert result.plan.evictions == ()


def test_a_resize_stamped_at_the_end_of_year_9999_stops_only_its_job() -> None:
    """9999-12-31T20:00:00-05:00 is valid RFC 3339 and in year 10000 in UTC: writing the
    reason raised OverflowError in every cycle, and no other gang was ever bound."""
    far = gang(
        "el",
        4,
        min_member=2,
        max_member=4,
        size_policy="power-of-two",
        last_scale_time="9999-12-31T20:00:00-05:00",
        running_on=["a"] * 2,
    )
    snap = snapshot(node("a", gpus=8), far, gang("other", 2))
    result = plan(snap, "greedy")
    assert workers_after(snap, result.plan) == {
        "default/el": 2,
        "default/other": 2,
    }
    row = next(j for j in result.plan.jobs if j.name == "default/el")
    assert row.reason.startswith("cooldown until 9999-12-31")
