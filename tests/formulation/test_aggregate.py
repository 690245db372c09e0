"""Counted job types (formulation/aggregate.py): the model of interchangeable pending gangs is as
small as their number of types, with the same optimum as one variable set per job."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from solver_sched.formulation.aggregate import aggregate, member_sizes
from solver_sched.formulation.build import build
from solver_sched.formulation.prepare import prepare
from solver_sched.solvers.cpsat import Search
from solver_sched.solvers.result import SolveStatus
from tests.support.builders import NOW, config, gang, node, quota_tree, snapshot

B = {"solver-sched.io/cluster": "b"}


def _stamp(minutes: int) -> str:
    return (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _optimum(problem) -> float:
    search = Search(build(problem).model, None, 30.0, 1, 0, 1)
    status, _, obj, _, _, _ = search.run()
    assert status == SolveStatus.OPTIMAL
    assert obj is not None
    return obj


def test_identical_pending_gangs_become_one_counted_type() -> None:
    snap = snapshot(
        node("a1", gpus=8),
        node("b1", gpus=8, labels=B),
        *(gang(f"g{i}", 2, gpus=4, created=_stamp(10 + i)) for i in range(5)),
        gang("other", 1, gpus=2),
    )
    c = config()
    problem = prepare(snap, c.weights, c.settings, NOW)
    model = aggregate(problem, lambda name: snap.jobs[name].created)  # oldest first
    assert len(problem.jobs) == 6 and len(model.jobs) == 2
    t = next(jm for jm in model.jobs if jm.count > 1)
    assert t.count == 5 and t.members == tuple(f"default/g{i}" for i in range(4, -1, -1))
    built = build(model)
    j = model.jobs.index(t)
    assert [built.model.ub[y] for y in built.vars.y[j]] == [5, 5]
    assert {built.model.ub[w] for (jj, _), w in built.vars.w.items() if jj == j} == {5}


def test_jobs_that_differ_stay_apart() -> None:
    """Queue, priority, shape or a running pod: not interchangeable."""
    snap = snapshot(
        node("a1", gpus=8),
        gang("p0", 1, gpus=1, priority=0),
        gang("p9", 1, gpus=1, priority=9),
        gang("big", 1, gpus=2),
        gang("ns", 1, gpus=1, namespace="team-b"),
        gang("runs", 2, gpus=1, min_member=1, max_member=2, running_on=["a1"]),
        quota_tree({"name": "root", "children": [{"name": "qb", "namespaces": ["team-b"]}]}),
    )
    c = config()
    problem = prepare(snap, c.weights, c.settings, NOW)
    assert len(problem.jobs) == 5
    assert aggregate(problem) is problem


@pytest.mark.parametrize("seed", range(6))
def test_the_counted_model_has_the_per_job_optimum(seed: int) -> None:
    """Random pending queues over two clusters, with max-jobs and GPU quotas and jobs of many
    ages: CP-SAT's optimum is the same on both models (waiting, priorities and quotas all
    count), while the counted one has fewer jobs."""
    rng = random.Random(seed)
    objs: list = [  # type: ignore[type-arg]
        node("a1", gpus=8),
        node("a2", gpus=4),
        node("b1", gpus=8, labels=B),
        quota_tree(
            {
                "name": "root",
                "max": {"nvidia.com/gpu": 18},
                "children": [
                    {"name": "qa", "namespaces": ["default"], "max": {"kube-queue/max-jobs": 4}},
                    {"name": "qb", "namespaces": ["team-b"], "max": {"nvidia.com/gpu": 8}},
                ],
            }
        ),
    ]
    for i in range(14):
        objs.append(
            gang(
                f"j{i}",
                rng.choice((1, 2)),
                gpus=rng.choice((2, 4)),
                namespace=rng.choice(("default", "team-b")),
                priority=rng.choice((0, 100)),
                created=_stamp(rng.randint(1, 300)),
            )
        )
    snap = snapshot(*objs)
    c = config()
    problem = prepare(snap, c.weights, c.settings, NOW)
    model = aggregate(problem)
    assert len(model.jobs) < len(problem.jobs)
    assert _optimum(model) == _optimum(problem)


@pytest.mark.parametrize("seed", range(4))
def test_the_solution_given_back_to_jobs_is_worth_what_the_solver_found(seed: int) -> None:
    """Counts -> members (the longest waiting first) -> the model's value of that per-job plan:
    the solver's objective, so the packer gets the jobs the model valued."""
    from solver_sched.formulation.values import to_values
    from solver_sched.solvers.solving import solution_assignment

    rng = random.Random(seed)
    snap = snapshot(
        node("a1", gpus=8),
        node("b1", gpus=8, labels=B),
        *(
            gang(f"g{i}", rng.choice((1, 2)), gpus=4, created=_stamp(rng.randint(1, 400)))
            for i in range(9)
        ),
    )
    c = config()
    model = aggregate(prepare(snap, c.weights, c.settings, NOW))
    built = build(model)
    status, values, _, _, _, _ = Search(built.model, None, 30.0, 1, 0, 1).run()
    assert status == SolveStatus.OPTIMAL and values is not None
    a = solution_assignment(model, built, values)
    back = to_values(model, built, a.sizes, {})  # sizes only: the terms compared need no pods
    assert back is not None
    terms = built.model.evaluate(back)
    assert terms["waiting"] == built.model.evaluate(values)["waiting"]
    assert terms["guaranteed[priority=0]"] == built.model.evaluate(values)["guaranteed[priority=0]"]


def test_member_sizes_follow_the_waiting_counts() -> None:
    snap = snapshot(
        node("a1", gpus=8),
        *(gang(f"g{i}", 1, gpus=1, created=_stamp(m)) for i, m in enumerate((200, 190, 70, 5))),
    )
    c = config()
    t = aggregate(prepare(snap, c.weights, c.settings, NOW)).jobs[0]
    assert t.waiting_buckets == ((3, 2), (1, 1))
    # two run: one of the 3-hour members and the 1-hour one (as a solver may count them)
    sizes = member_sizes(t, {0: 2, 1: 2}, {3: 1, 1: 1})
    assert sizes == {"default/g0": 1, "default/g2": 1}
