"""The model builder's size options agree with the planner's keep/evict/bind rule (``change_to``):
both must describe the same pods, or the solver plans something the packer cannot carry out."""

from datetime import UTC, datetime

import pytest

from solver_sched.config.schema import ObjectiveWeights, Settings
from solver_sched.domain import resources as res
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.sizes import change_to
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.synthetic import synthetic_objects

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_options_match_change_to(seed: int) -> None:
    snap = snapshot_from_objects(synthetic_objects(16, 40, 24, seed, NOW))
    problem = prepare(snap, ObjectiveWeights(), Settings(), NOW)
    checked = 0
    for jm in problem.jobs:
        job = snap.jobs[jm.name]
        for o in jm.options:
            change = change_to(snap, job, o.size, problem.running_order.get(jm.name))
            kept = change.keep + change.bind
            assert o.usage == res.total(p.requests for p in kept), (jm.name, o.size)
            assert o.evicted == len(change.evict)
            new: dict[int, int] = {}
            for pod in change.bind:
                new[problem.shape_of[pod.name]] = new.get(problem.shape_of[pod.name], 0) + 1
            assert dict(o.new) == new
            released: dict[int, dict[str, int]] = {}
            for pod in change.evict:
                cid = problem.class_of[pod.node_name or ""]
                released[cid] = res.add(released.get(cid, {}), pod.requests)
            assert dict(o.released) == released
            units = [res.value_units(p.requests) for p in kept]
            full = o.size >= job.min_pods
            assert o.guaranteed_units == (sum(units[: job.min_pods]) if full else 0)
            assert o.elastic_units == sum(units[job.min_pods :])
            gpus = sum(p.requests.get(res.GPU, 0) for p in kept[: job.min_pods])
            assert o.guaranteed_gpus == (gpus if full else 0)
            checked += 1
    assert checked > 50  # the instance has jobs with several sizes, running and pending


def test_a_minimum_that_is_not_among_the_sizes_still_sets_the_guaranteed_part() -> None:
    """size_options asked for sizes 4 and 8 of a job whose minimum is 3 (no loader makes one:
    the prefix sums are kept at the minimum too, whatever the sizes asked)."""
    from dataclasses import replace

    from solver_sched.formulation.options import size_options
    from tests.support.builders import gang, node, snapshot

    snap = snapshot(
        node("a", gpus=8), gang("g", 8, gpus=1, min_member=2, size_policy="power-of-two")
    )
    problem = prepare(snap, ObjectiveWeights(), Settings(), NOW)
    job = replace(snap.jobs["default/g"], min_pods=3)
    waiting = snap.waiting_pods(job)
    options = size_options(job, (), waiting, (0, 4, 8), problem.shape_of, problem.class_of)
    by_size = {o.size: o for o in options}
    assert (by_size[4].guaranteed_units, by_size[4].elastic_units) == (3, 1)
    assert (by_size[8].guaranteed_units, by_size[8].elastic_units) == (3, 5)
    assert by_size[4].guaranteed_gpus == 3 and by_size[0].guaranteed_units == 0
