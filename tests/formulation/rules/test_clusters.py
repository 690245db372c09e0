"""Fleets (rules/clusters.py): a gang runs in one cluster; a running job stays in its own."""

from __future__ import annotations

import pytest

from solver_sched.formulation.rules import clusters
from solver_sched.formulation.rules import gang as gang_rule
from tests.support.builders import gang, node, plan, snapshot, workers_after
from tests.support.rule_model import RuleModel, rule_model

B = {"solver-sched.io/cluster": "b"}


def _fleet() -> RuleModel:
    """Node a1 (cluster default) and b1 (cluster b); g waits (2 x 4 GPUs); r runs 2 of 4 on b1."""
    return rule_model(
        snapshot(
            node("a1", gpus=8),
            node("b1", gpus=8, labels=B),
            gang("g", 2, gpus=4),
            gang("r", 4, min_member=2, max_member=4, running_on=["b1", "b1"]),
        ),
        gang_rule.add,
        clusters.add,
    )


def _start_g(rm: RuleModel, in_a: int, in_b: int) -> dict[str, int]:
    assign = {"y[default/g,2]": 1, "y[default/r,2]": 1, "w[default/r,b]": 1}
    for k, n in (("default", in_a), ("b", in_b)):
        node_name = "a1" if k == "default" else "b1"
        if n:
            assign |= {f"w[default/g,{k}]": 1}  # g has one size: its pods in k are 2 * w
            assign[rm.x("default/g-worker-0", node_name)] = n
    return assign


@pytest.mark.parametrize(("in_a", "in_b", "ok"), [(2, 0, True), (0, 2, True), (1, 1, False)])
def test_a_gang_runs_in_one_cluster(in_a: int, in_b: int, ok: bool) -> None:
    rm = _fleet()
    bad = rm.violated(_start_g(rm, in_a, in_b))
    assert (bad == []) is ok
    assert ok or "cluster[default/g]" in bad


def test_per_cluster_supply_replaces_the_single_cluster_rows() -> None:
    rm = _fleet()
    assert rm.rows("place[") == ["place[default/r,1]"]  # per job, not shape (none for rigid g)
    assert rm.rows("supply[") == [
        "supply[0,b]",
        "supply[0,default]",
        "supply[1,b]",
        "supply[1,default]",
    ]


def test_a_gang_needs_a_cluster_to_run_in() -> None:
    rm = _fleet()
    assign = _start_g(rm, 2, 0)
    del assign["w[default/g,default]"]
    assert {"cluster[default/g]", "supply[0,default]"} <= set(rm.violated(assign))


def test_pods_counted_in_a_cluster_are_bound_there() -> None:
    rm = _fleet()
    assign = _start_g(rm, 2, 0)
    assign[rm.x("default/g-worker-0", "a1")] = 0
    assign[rm.x("default/g-worker-0", "b1")] = 2  # z says cluster default, x says b
    bad = rm.violated(assign)
    assert {"supply[0,default]", "supply[0,b]"} <= set(bad)


def test_a_running_job_grows_only_in_its_own_cluster() -> None:
    rm = _fleet()
    assert "w[default/r,default]" not in rm.model.names  # pinned by its running pods
    x_a = rm.x("default/r-worker-2", "a1")
    grow_in_a = {"y[default/g,0]": 1, "y[default/r,4]": 1, x_a: 2}
    assert "supply[1,default]" in rm.violated(grow_in_a)
    x_b = rm.x("default/r-worker-2", "b1")
    grow_in_b = {"y[default/g,0]": 1, "y[default/r,4]": 1, "w[default/r,b]": 1}
    assert rm.violated({**grow_in_b, "z[default/r,1,b]": 2, x_b: 2}) == []


def test_one_cluster_has_no_cluster_rows() -> None:
    rm = rule_model(snapshot(node("a1", gpus=8), gang("g", 2)), gang_rule.add, clusters.add)
    assert not any(n.startswith(("w[", "z[")) for n in rm.model.names)
    assert rm.rows("cluster[") == rm.rows("supply[") == []


@pytest.mark.parametrize("backend", ["cpsat", "milp", "greedy"])
def test_a_gang_too_large_for_either_cluster_waits(backend: str) -> None:
    """8 GPUs free in all, 4 per cluster: a gang of 2 x 4 GPUs cannot start anywhere."""
    snap = snapshot(node("a1", gpus=4), node("b1", gpus=4, labels=B), gang("g", 2, gpus=4))
    result = plan(snap, backend)
    assert result.violations == []
    assert workers_after(snap, result.plan) == {"default/g": 0}


def test_a_running_job_is_in_a_cluster() -> None:
    rm = _fleet()
    assign = _start_g(rm, 2, 0)
    assert rm.violated(assign) == []
    del assign["w[default/r,b]"]
    assert rm.violated(assign) == ["cluster[default/r]"]


def test_new_pods_go_only_to_the_cluster_the_gang_runs_in() -> None:
    """Elastic r (sizes 2-4, so z carries its pods): z counts a pod in cluster b while r is in
    no cluster."""
    rm = _fleet()
    assign = {"y[default/g,0]": 1, "y[default/r,3]": 1, "z[default/r,1,b]": 1}
    assign[rm.x("default/r-worker-2", "b1")] = 1
    assert rm.violated(assign) == ["cluster[default/r]", "in_cluster[1,1,b]"]


def test_a_gang_of_one_size_takes_its_pods_in_a_cluster_from_w() -> None:
    """g (2 pods, rigid) has no z: w[g,k] = 1 asks supply for exactly its 2 pods in k."""
    rm = _fleet()
    assert not any(n.startswith("z[default/g") for n in rm.model.names)
    assign = _start_g(rm, 2, 0)
    assign[rm.x("default/g-worker-0", "a1")] = 1  # one pod short
    assert rm.violated(assign) == ["supply[0,default]"]


@pytest.mark.parametrize(
    ("z", "x", "bad"),
    [
        (1, 1, []),
        (2, 2, ["place[default/r,1]"]),
        (0, 0, ["place[default/r,1]"]),
        (1, 2, ["supply[1,b]"]),
    ],
)
def test_a_job_places_exactly_the_pods_of_its_size_in_its_cluster(
    z: int, x: int, bad: list[str]
) -> None:
    """r grows from 2 to 3 in cluster b: one new pod, counted (z) and bound there (x)."""
    rm = _fleet()
    assign = {"y[default/g,0]": 1, "y[default/r,3]": 1, "w[default/r,b]": 1}
    assign |= {"z[default/r,1,b]": z, rm.x("default/r-worker-2", "b1"): x}
    assert rm.violated(assign) == bad


@pytest.mark.parametrize("backend", ["cpsat", "milp", "greedy"])
def test_a_job_running_in_two_clusters_stays_as_it_is_and_the_rest_is_planned(
    backend: str,
) -> None:
    """old (2-4 pods) runs on a1 and b1, as after a node was relabelled: it does not grow, and
    new is placed. The planners grew old, the checker refused every plan for it (even the ones
    leaving old alone), and nothing was bound, every cycle."""
    snap = snapshot(
        node("a1", gpus=8),
        node("b1", gpus=8, labels=B),
        node("a2", gpus=8),
        gang("old", 4, min_member=2, max_member=4, running_on=["a1", "b1"]),
        gang("new", 2),
    )
    result = plan(snap, backend)
    assert result.violations == []
    assert workers_after(snap, result.plan) == {"default/old": 2, "default/new": 2}
    row = next(j for j in result.plan.jobs if j.name == "default/old")
    assert row.reason == "its pods run in clusters b, default: it does not grow"
