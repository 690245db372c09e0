"""Rule 3: queue max per resource at every level, max running jobs, min and reclaim."""

from typing import Any

import pytest

from solver_sched.config.schema import ObjectiveWeights
from solver_sched.formulation.rules import quota as quota_rule
from solver_sched.io import manifests as m
from tests.support.builders import (
    assert_solver_decided,
    config,
    gang,
    node,
    other,
    plan,
    quota_tree,
    reclaim_swap,
    snapshot,
    workers_after,
)
from tests.support.rule_model import RuleModel, rule_model

BACKENDS = ["cpsat", "milp", "greedy"]


def tree(a: dict[str, Any], b: dict[str, Any], root_max: str = "64") -> dict[str, Any]:
    return quota_tree(
        {
            "name": "root",
            "max": {"nvidia.com/gpu": root_max},
            "children": [
                {
                    "name": "org",
                    "max": {"nvidia.com/gpu": root_max},
                    "children": [
                        {"name": "team-a", "namespaces": ["team-a"], **a},
                        {"name": "team-b", "namespaces": ["team-b"], **b},
                    ],
                },
            ],
        }
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_leaf_max_caps_gpus(backend: str) -> None:
    snap = snapshot(
        node("n", gpus=16),
        tree({"max": {"nvidia.com/gpu": "4"}}, {}),
        gang("g1", 4, namespace="team-a"),
        gang("g2", 2, namespace="team-a"),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after["team-a/g1"] + after["team-a/g2"] in (4, 2)
    assert after["team-a/g1"] == 4
    row = next(j for j in result.plan.jobs if j.name == "team-a/g2")
    assert "queue team-a: nvidia.com/gpu max 4, in use 4" in row.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_parent_max_binds_even_when_leaves_have_room(backend: str) -> None:
    snap = snapshot(
        node("n", gpus=16),
        tree({}, {}, root_max="6"),
        gang("a", 4, namespace="team-a"),
        gang("b", 4, namespace="team-b"),
    )
    after = workers_after(snap, plan(snap, backend).plan)
    assert sorted(after.values()) == [0, 4]


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_jobs(backend: str) -> None:
    snap = snapshot(
        node("n", gpus=16),
        tree({"max": {"kube-queue/max-jobs": "1"}}, {}),
        gang("g1", 2, namespace="team-a"),
        gang("g2", 2, namespace="team-a"),
        gang("g3", 2, namespace="team-b"),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after["team-a/g1"] + after["team-a/g2"] == 2
    assert after["team-b/g3"] == 2
    blocked = next(j for j in result.plan.jobs if j.planned == 0)
    assert "kube-queue/max-jobs 1, running 1" in blocked.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_jobs_counts_the_queues_own_jobs_not_other_pods(backend: str) -> None:
    """A notebook of the default scheduler and another scheduler's gang run in team-a: they take
    its GPUs (max 6: 4 left), not its one running-job slot, which a gang of ours still gets."""
    theirs = gang("theirs", 1, namespace="team-a", running_on=["n"])
    theirs[1]["spec"]["schedulerName"] = "volcano"
    snap = snapshot(
        node("n", gpus=16),
        tree({"max": {"kube-queue/max-jobs": "1", "nvidia.com/gpu": "6"}}, {}),
        other("notebook", "n", gpus=1, namespace="team-a"),
        theirs,
        gang("g1", 2, namespace="team-a"),
        gang("g2", 2, namespace="team-a"),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after["team-a/g1"] + after["team-a/g2"] == 2
    blocked = next(j for j in result.plan.jobs if j.planned == 0)
    assert "kube-queue/max-jobs 1, running 1" in blocked.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_namespaces_in_no_queue_share_an_unlimited_queue(backend: str) -> None:
    snap = snapshot(
        node("n", gpus=16),
        tree({"max": {"nvidia.com/gpu": "1"}}, {}),
        gang("g", 8, namespace="elsewhere"),
    )
    assert workers_after(snap, plan(snap, backend).plan)["elsewhere/g"] == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_queue_below_min_reclaims_borrowed_capacity(backend: str) -> None:
    # team-b borrows: min 4, running 8 (two 4-GPU gangs). team-a (min 8) is idle and submits 4.
    snap = snapshot(
        node("n", gpus=8),
        tree({"min": {"nvidia.com/gpu": "8"}}, {"min": {"nvidia.com/gpu": "4"}}),
        gang("b1", 4, namespace="team-b", running_on=["n"] * 4, priority=100),
        gang("b2", 4, namespace="team-b", running_on=["n"] * 4, priority=100),
        gang("a1", 4, namespace="team-a", priority=0),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after["team-a/a1"] == 4
    assert after["team-b/b1"] + after["team-b/b2"] == 4  # reclaimed down to its min, not below
    assert len(result.plan.evictions) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_queue_without_a_min_borrows_all_it_uses(backend: str) -> None:
    # team-b lists no min: it is guaranteed nothing, so its 8 running GPUs are all borrowed and
    # team-a (min 8, idle) reclaims room for its gang, against team-b's higher priority.
    snap = snapshot(
        node("n", gpus=8),
        tree({"min": {"nvidia.com/gpu": "8"}}, {}),
        gang("b1", 8, namespace="team-b", running_on=["n"] * 8, priority=100),
        gang("a1", 4, namespace="team-a", priority=0),
    )
    result = plan(snap, backend)
    assert workers_after(snap, result.plan)["team-a/a1"] == 4
    assert [e.job for e in result.plan.evictions] == ["team-b/b1"]


def _borrower_under_budget(b_quota: dict[str, Any]) -> Any:
    """team-b runs b1 (8 GPUs) under a budget that lets no pod go; team-a (min 8) waits."""
    budget = m.pod_disruption_budget(
        "b1", {"scheduling.x-k8s.io/pod-group": "b1"}, 0, namespace="team-b"
    )
    return snapshot(
        node("n", gpus=8),
        tree({"min": {"nvidia.com/gpu": "8"}}, b_quota),
        gang("b1", 8, namespace="team-b", running_on=["n"] * 8, priority=100),
        gang("a1", 4, namespace="team-a", priority=0),
        budget,
    )


def _a1_reason(result: Any) -> str:
    assert result.plan.evictions == ()
    row = next(j for j in result.plan.jobs if j.name == "team-a/a1")
    assert row.planned == 0
    return str(row.reason)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reclaim_its_victims_budget_refuses_waits_and_says_why(backend: str) -> None:
    """team-b borrows all it runs, but b1's PodDisruptionBudget lets no pod go (rule 6b): a1
    waits, and its reason names b1 (it gave only the room, which reads as if a1 could not
    reclaim at all). Where a1 could not reclaim anyway, b1 is not named."""
    snap = _borrower_under_budget({})
    reason = _a1_reason(plan(snap, backend))
    assert reason.endswith(
        "; PodDisruptionBudgets keep gangs of queues that borrow from being reclaimed: team-b/b1"
    ), reason
    no_reclaim = plan(snap, backend, cfg=config(queue_reclaim=False))
    within_min = plan(_borrower_under_budget({"min": {"nvidia.com/gpu": "8"}}), backend)
    for result in (no_reclaim, within_min):
        assert "PodDisruptionBudgets" not in _a1_reason(result)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reclaim_never_pushes_a_queue_below_its_min(backend: str) -> None:
    # team-b runs exactly its min: team-a's pending gang may not take it.
    snap = snapshot(
        node("n", gpus=8),
        tree({"min": {"nvidia.com/gpu": "4"}}, {"min": {"nvidia.com/gpu": "8"}}),
        gang("b1", 8, namespace="team-b", running_on=["n"] * 8),
        gang("a1", 4, namespace="team-a", priority=1000),
    )
    result = plan(snap, backend)
    assert result.plan.evictions == ()
    assert workers_after(snap, result.plan)["team-a/a1"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_invalid_queue_makes_its_jobs_unusable_and_others_still_plan(backend: str) -> None:
    bad = {"min": {"nvidia.com/gpu": "8"}, "max": {"nvidia.com/gpu": "4"}}
    snap = snapshot(
        node("n", gpus=16),
        tree(bad, {}),
        gang("a", 2, namespace="team-a"),
        gang("b", 2, namespace="team-b"),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after == {"team-a/a": 0, "team-b/b": 2}
    row = next(j for j in result.plan.jobs if j.name == "team-a/a")
    assert "ElasticQuotaTree" in row.reason and "min.nvidia.com/gpu" in row.reason


# -- quantities of any size (issue 14): the solvers still plan, and their plan is the one chosen

SOLVERS = ["cpsat", "milp"]


@pytest.mark.parametrize("backend", SOLVERS)
def test_a_quota_of_any_valid_size_still_plans(backend: str) -> None:
    """memory 100000000Gi (1.1e17 bytes) is a valid quantity: it is read, the queue stays valid,
    and the row it makes does not overflow either solver."""
    huge = {"memory": "100000000Gi", "nvidia.com/gpu": "8"}
    snap = snapshot(
        node("n", gpus=16),
        tree({"min": huge, "max": {**huge, "nvidia.com/gpu": "12"}}, {}),
        gang("a1", 8, namespace="team-a"),
        gang("a2", 8, namespace="team-a"),
        gang("b1", 2, namespace="team-b"),
    )
    assert snap.errors == ()
    result = plan(snap, backend)
    assert result.violations == []
    assert_solver_decided(result)
    after = workers_after(snap, result.plan)
    assert (after["team-a/a1"] + after["team-a/a2"], after["team-b/b1"]) == (8, 2)


@pytest.mark.parametrize("backend", SOLVERS)
def test_a_min_of_more_gpus_than_any_cluster_has_keeps_the_solver(backend: str) -> None:
    """A min of 10^15 GPUs is valid; the objective counts only the GPUs member jobs can hold, so
    it stays inside the solvers' integers and they still decide (no greedy-only cycle)."""
    snap = snapshot(
        node("n", gpus=8),
        tree({"min": {"nvidia.com/gpu": "1e15"}}, {}),
        gang("a1", 4, namespace="team-a"),
        gang("b1", 4, namespace="team-b"),
    )
    result = plan(snap, backend)
    assert result.violations == []
    assert_solver_decided(result)
    assert workers_after(snap, result.plan) == {"team-a/a1": 4, "team-b/b1": 4}


# -- an invalid queue holds only the jobs that depend on it


def _with(queues: list[Any]) -> dict[str, Any]:
    return quota_tree({"name": "root", "children": queues})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("bad", "field"),
    [
        pytest.param(
            {"name": "team-a", "namespaces": ["team-a"], "max": {"nvidia.com/gpu": ["4"]}},
            "spec.root.children[0].max.nvidia.com/gpu",
            id="max-not-a-quantity",
        ),
        pytest.param(
            {"name": "team-a", "namespaces": ["team-a"], "children": "none"},
            "spec.root.children[0].children",
            id="children-not-a-list",
        ),
        pytest.param(
            {"namespaces": ["team-a"], "max": {"nvidia.com/gpu": "4"}},
            "spec.root.children[0].name",
            id="no-name",
        ),
    ],
)
def test_an_unreadable_queue_holds_only_its_jobs_and_the_tree_keeps_its_limits(
    backend: str, bad: dict[str, Any], field: str
) -> None:
    """Before, one queue that failed validation dropped the whole tree: team-b's max stopped
    binding and team-a's jobs ran with no quota at all."""
    good = {"name": "team-b", "namespaces": ["team-b"], "max": {"nvidia.com/gpu": "4"}}
    snap = snapshot(
        node("n", gpus=16),
        _with([bad, good]),
        gang("a", 2, namespace="team-a"),
        gang("b", 8, namespace="team-b"),
        gang("c", 2, namespace="team-b"),
        gang("free", 2, namespace="elsewhere"),
    )
    assert snap.errors and all(e.field.startswith(field) for e in snap.errors)
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after == {"team-a/a": 0, "team-b/b": 0, "team-b/c": 2, "elsewhere/free": 2}
    held = next(j for j in result.plan.jobs if j.name == "team-a/a")
    assert held.reason.startswith("queue ") and field in held.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_duplicate_queue_name_leaves_the_first_queue_its_limits(backend: str) -> None:
    """Before, the duplicate replaced the first queue of that name, so the first queue's jobs
    were held as if they were the duplicate's."""
    first = {"name": "team", "namespaces": ["team-a"], "max": {"nvidia.com/gpu": "4"}}
    second = {"name": "team", "namespaces": ["team-b"]}
    snap = snapshot(
        node("n", gpus=16),
        _with([first, second]),
        gang("a1", 4, namespace="team-a"),
        gang("a2", 4, namespace="team-a"),
        gang("b", 2, namespace="team-b"),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert (after["team-a/a1"] + after["team-a/a2"], after["team-b/b"]) == (4, 0)
    held = next(j for j in result.plan.jobs if j.name == "team-b/b")
    assert "duplicate queue name 'team'" in held.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_invalid_parent_holds_its_subtree_and_nothing_else(backend: str) -> None:
    bad_parent = {
        "name": "org-a",
        "min": {"nvidia.com/gpu": "8"},
        "max": {"nvidia.com/gpu": "4"},
        "children": [{"name": "team-a", "namespaces": ["team-a"]}],
    }
    org_b = {"name": "org-b", "children": [{"name": "team-b", "namespaces": ["team-b"]}]}
    snap = snapshot(
        node("n", gpus=16),
        _with([bad_parent, org_b]),
        gang("a", 2, namespace="team-a"),
        gang("b", 2, namespace="team-b"),
    )
    result = plan(snap, backend)
    assert workers_after(snap, result.plan) == {"team-a/a": 0, "team-b/b": 2}
    held = next(j for j in result.plan.jobs if j.name == "team-a/a")
    assert held.reason.startswith("queue org-a is invalid:") and "8 > max 4" in held.reason


# -- the rows alone (rules/quota.py on a LinearModel, values fixed) --------------------------


def _queued(a: dict[str, Any], *objs: Any) -> RuleModel:
    return rule_model(snapshot(node("n", gpus=16), tree(a, {}), *objs), quota_rule.add)


@pytest.mark.parametrize(("sizes", "ok"), [((4, 0), True), ((4, 2), False), ((0, 2), True)])
def test_a_queue_max_caps_the_usage_of_its_jobs(sizes: tuple[int, int], ok: bool) -> None:
    rm = _queued(
        {"max": {"nvidia.com/gpu": "5"}},
        gang("g1", 4, namespace="team-a"),
        gang("g2", 2, namespace="team-a"),
    )
    assign = {f"y[team-a/g1,{sizes[0]}]": 1, f"y[team-a/g2,{sizes[1]}]": 1}
    bad = rm.violated(assign)
    assert ("quota[team-a,nvidia.com/gpu]" not in bad) is ok
    assert "quota[org,nvidia.com/gpu]" not in bad  # the parent's max (64) has room


def test_a_parent_max_caps_its_leaves_together() -> None:
    rm = rule_model(
        snapshot(
            node("n", gpus=16),
            tree({}, {}, root_max="6"),
            gang("a", 4, namespace="team-a"),
            gang("b", 4, namespace="team-b"),
        ),
        quota_rule.add,
    )
    both = rm.violated({"y[team-a/a,4]": 1, "y[team-b/b,4]": 1})
    assert {"quota[org,nvidia.com/gpu]", "quota[root,nvidia.com/gpu]"} <= set(both)
    assert rm.violated({"y[team-a/a,4]": 1, "y[team-b/b,0]": 1}) == []


@pytest.mark.parametrize(("running", "ok"), [(1, True), (2, False)])
def test_max_jobs_counts_running_jobs(running: int, ok: bool) -> None:
    rm = _queued(
        {"max": {"kube-queue/max-jobs": "1"}},
        gang("g1", 2, namespace="team-a"),
        gang("g2", 2, namespace="team-a"),
    )
    assign = {"y[team-a/g1,2]": 1, f"y[team-a/g2,{2 if running == 2 else 0}]": 1}
    assert ("quota[team-a,kube-queue/max-jobs]" not in rm.violated(assign)) is ok


def _borrowing() -> RuleModel:
    """team-b borrows (min 4, running 8 in two gangs); team-a (min 8) is idle and submits 4."""
    return rule_model(
        snapshot(
            node("n", gpus=8),
            tree({"min": {"nvidia.com/gpu": "8"}}, {"min": {"nvidia.com/gpu": "4"}}),
            gang("b1", 4, namespace="team-b", running_on=["n"] * 4),
            gang("b2", 4, namespace="team-b", running_on=["n"] * 4),
            gang("a1", 4, namespace="team-a"),
        ),
        quota_rule.add,
    )


@pytest.mark.parametrize(
    ("b1", "b2", "ok"), [(4, 4, True), (0, 4, True), (4, 0, True), (0, 0, False)]
)
def test_a_borrowing_queue_keeps_its_min(b1: int, b2: int, ok: bool) -> None:
    rm = _borrowing()
    assign = {f"y[team-b/b1,{b1}]": 1, f"y[team-b/b2,{b2}]": 1, "y[team-a/a1,4]": 1}
    assert ("quota_min[team-b,nvidia.com/gpu]" not in rm.violated(assign)) is ok


@pytest.mark.parametrize(("used", "ok"), [(4, True), (5, False)])
def test_the_min_in_use_counts_only_guaranteed_gpus_placed(used: int, ok: bool) -> None:
    rm = _borrowing()
    assign = {"y[team-a/a1,4]": 1, "y[team-b/b1,4]": 1, "y[team-b/b2,4]": 1, "u[team-a]": used}
    assert ("quota_min_used[team-a]" not in rm.violated(assign)) is ok
    assert rm.model.ub[rm.model.names.index("u[team-a]")] == 4  # what team-a's jobs can hold
    assert rm.terms(assign)["quota_min"] == rm.problem.quota_min_weight * used


@pytest.mark.parametrize("backend", SOLVERS)
def test_the_solver_fills_a_queue_max_greedy_fragments(backend: str) -> None:
    """team-a may use 8 GPUs: greedy starts a (5 GPUs) first and then neither b nor c fits
    under the max; the optimum starts b and c (8 GPUs). Without the quota rows the solver
    would start all three (13 GPUs) and the checker would reject its plan. Without the
    start bonus: with it, greedy's smallest-first candidate finds the optimum itself."""
    snap = snapshot(
        node("n", gpus=16),
        tree({"max": {"nvidia.com/gpu": "8"}}, {}),
        gang("a", 1, gpus=5, namespace="team-a"),
        gang("b", 1, gpus=4, namespace="team-a"),
        gang("c", 1, gpus=4, namespace="team-a"),
    )
    cfg = config(lp_guide=False).model_copy(update={"weights": ObjectiveWeights(gang_start=0)})
    result = plan(snap, backend, cfg=cfg)  # the solver alone
    assert (result.violations, result.chosen) == ([], backend)
    assert_solver_decided(result)
    assert workers_after(snap, result.plan) == {"team-a/a": 0, "team-a/b": 1, "team-a/c": 1}


@pytest.mark.parametrize(
    ("min_b", "rows"),
    [
        pytest.param("1", ["quota_min[team-b,nvidia.com/gpu]"], id="floor-of-one"),
        pytest.param("4", ["quota_min[team-b,nvidia.com/gpu]"], id="floor-of-four"),
        pytest.param("0", [], id="no-min-no-floor"),
    ],
)
def test_a_floor_row_only_where_a_borrowing_queue_has_min_to_keep(
    min_b: str, rows: list[str]
) -> None:
    """team-b runs 8 GPUs (two gangs); its floor is its min, kept against team-a's reclaim."""
    rm = rule_model(
        snapshot(
            node("n", gpus=8),
            tree({"min": {"nvidia.com/gpu": "8"}}, {"min": {"nvidia.com/gpu": min_b, "cpu": "0"}}),
            gang("b1", 4, namespace="team-b", running_on=["n"] * 4),
            gang("b2", 4, namespace="team-b", running_on=["n"] * 4),
            gang("a1", 4, namespace="team-a"),
        ),
        quota_rule.add,
    )
    assert rm.rows("quota_min[") == rows
    both_broken = {"y[team-b/b1,0]": 1, "y[team-b/b2,0]": 1, "y[team-a/a1,4]": 1}
    assert (rm.violated(both_broken) == []) is (rows == [])


@pytest.mark.parametrize(
    ("assign", "violated"),
    [
        pytest.param({"a1": 0, "z": 0, "c": 4}, True, id="c-takes-the-second-slot"),
        pytest.param({"a1": 0, "z": 1, "c": 0}, False, id="one-broken-for-bnew"),
        pytest.param({"a1": 1, "z": 0, "c": 0}, False, id="the-other-one"),
    ],
)
def test_a_reclaim_frees_a_slot_only_for_the_starts_that_may_break(
    assign: dict[str, int], violated: bool
) -> None:
    rm = rule_model(snapshot(*reclaim_swap()), quota_rule.add)
    sizes = {"y[qb/bnew,1]": 1, **{f"y[qc/{j},{s}]": 1 for j, s in assign.items()}}
    bad = rm.violated(sizes)
    assert ("quota_licensed[root,kube-queue/max-jobs]" in bad) is violated
    assert "quota[root,kube-queue/max-jobs]" not in bad  # the plain row cannot see it


def test_a_break_frees_a_cap_only_for_the_starts_that_may_break() -> None:
    # qc's cpu max 8: a1 and z hold 4 each; c needs 4. Breaking z for bnew frees 4 cpu of qc,
    # which c, of z's priority, may not take.
    rm = rule_model(snapshot(*reclaim_swap(qc_cpu="8")), quota_rule.add)
    sizes = {"y[qb/bnew,1]": 1, "y[qc/a1,1]": 1, "y[qc/z,0]": 1, "y[qc/c,4]": 1}
    bad = rm.violated(sizes)
    assert "quota_licensed[qc,cpu]" in bad and "quota[qc,cpu]" not in bad


def test_a_start_that_may_break_uses_what_its_break_frees() -> None:
    rm = rule_model(snapshot(*reclaim_swap(z_priority=0)), quota_rule.add)  # c outranks z
    sizes = {"y[qb/bnew,1]": 1, "y[qc/a1,0]": 1, "y[qc/z,0]": 1, "y[qc/c,4]": 1}
    assert rm.violated(sizes) == []


def test_no_licence_row_where_nothing_could_grow_into_a_break() -> None:
    # bnew may break, a1 and z run at their only size: the plain rows say it all
    rm = rule_model(snapshot(*reclaim_swap(with_c=False)), quota_rule.add)
    assert rm.rows("quota_licensed[") == []
    assert rule_model(snapshot(*reclaim_swap()), quota_rule.add).rows("quota_licensed[") == [
        "quota_licensed[root,kube-queue/max-jobs]"
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_equal_priority_never_takes_what_a_reclaim_frees(backend: str) -> None:
    snap = snapshot(*reclaim_swap())
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after["qb/bnew"] == 1 and after["qc/c"] == 0
    assert after["qc/a1"] + after["qc/z"] == 1  # one gang broken, for bnew's slot


@pytest.mark.parametrize("backend", SOLVERS)
def test_a_higher_priority_start_takes_the_slot_it_may_break_for(backend: str) -> None:
    """Greedy starts bnew first and breaks z for it, the one gang c could break: c waits. The
    solvers give bnew a1 and c z."""
    snap = snapshot(*reclaim_swap(z_priority=0))
    after = workers_after(snap, plan(snap, backend).plan)
    assert after == {"qb/bnew": 1, "qc/a1": 0, "qc/z": 0, "qc/c": 4}
