"""Rule 1: a gang ends the cycle with 0 pods or an allowed size; rule 8 for partial gangs."""

import pytest

from solver_sched.config.schema import ObjectiveWeights
from solver_sched.formulation.rules import gang as gang_rule
from tests.support.builders import (
    assert_solver_decided,
    config,
    gang,
    node,
    other,
    plan,
    snapshot,
    workers_after,
)
from tests.support.rule_model import RuleModel, rule_model

BACKENDS = ["cpsat", "milp", "greedy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_eight_workers_on_five_free_gpus_get_nothing(backend: str) -> None:
    snap = snapshot(node("a", gpus=4), node("b", gpus=4), other("x", "a", 3), gang("big", 8))
    result = plan(snap, backend)
    assert result.plan.binds == ()
    assert workers_after(snap, result.plan)["default/big"] == 0
    row = next(j for j in result.plan.jobs if j.name == "default/big")
    assert row.reason == (
        "needs 8 x nvidia.com/gpu=1 at once; "
        "5 GPUs free on schedulable nodes, before and after this plan"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reason_says_which_counts_are_before_and_after_the_plan(backend: str) -> None:
    """The 8-on-5 scenario: 5 GPUs free when the cycle starts, 1 once `small` is bound."""
    snap = snapshot(
        node("a", gpus=4),
        node("b", gpus=4),
        other("x", "a", 3),
        gang("big", 8),
        gang("small", 4, created="2026-01-01T11:00:00Z"),
    )
    rows = {j.name: j for j in plan(snap, backend).plan.jobs}
    assert rows["default/small"].planned == 4
    assert rows["default/big"].reason == (
        "needs 8 x nvidia.com/gpu=1 at once; "
        "5 GPUs free on schedulable nodes before this plan; 1 after it"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_pods_beyond_the_largest_allowed_size_say_so(backend: str) -> None:
    """12 pods, power-of-two sizes: 8 run, and the reason says why 4 wait, in operator words."""
    snap = snapshot(
        node("a", gpus=16), gang("el", 12, min_member=2, max_member=12, size_policy="power-of-two")
    )
    (row,) = plan(snap, backend).plan.jobs
    assert row.planned == 8
    assert row.reason == (
        "not scheduled: after this plan the job runs 8 of its 12 pods, the largest size it "
        "allows (sizes 2, 4, 8); its other 4 pods stay pending (no allowed size uses them)"
    )


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


# -- the rows alone (rules/gang.py on a LinearModel, values fixed) ---------------------------


def _gangs() -> RuleModel:
    return rule_model(
        snapshot(node("n", gpus=8), gang("a", 1, gpus=4), gang("b", 3, gpus=1, min_member=2)),
        gang_rule.add,
    )


@pytest.mark.parametrize(
    ("sizes", "ok"),
    [
        pytest.param({"y[default/a,1]": 1, "y[default/b,0]": 1}, True, id="one-option-each"),
        pytest.param({"y[default/a,1]": 1}, False, id="a-job-without-an-option"),
        pytest.param(
            {"y[default/a,0]": 1, "y[default/a,1]": 1, "y[default/b,0]": 1}, False, id="two-options"
        ),
    ],
)
def test_each_job_ends_at_exactly_one_option(sizes: dict[str, int], ok: bool) -> None:
    rm = _gangs()
    x = {rm.x("default/a-worker-0", "n"): sizes.get("y[default/a,1]", 0)}
    bad = [r for r in rm.violated({**sizes, **x}) if r.startswith("gang[")]
    assert (bad == []) is ok


@pytest.mark.parametrize(("bound", "ok"), [(1, False), (2, True), (3, False)])
def test_every_pod_of_the_chosen_size_is_placed_and_no_more(bound: int, ok: bool) -> None:
    rm = _gangs()
    sizes = {"y[default/a,0]": 1, "y[default/b,2]": 1}
    bad = rm.violated({**sizes, rm.x("default/b-worker-0", "n"): bound})
    assert (bad == []) is ok
    assert ok or f"place[{rm.problem.shape_of['default/b-worker-0']}]" in bad


def test_the_pods_of_a_size_between_options_cannot_be_placed() -> None:
    """Power-of-two sizes 2 and 4 (min 2): a plan placing 3 of the pods meets no option."""
    rm = rule_model(
        snapshot(
            node("n", gpus=8),
            gang("p", 4, min_member=2, max_member=4, size_policy="power-of-two"),
        ),
        gang_rule.add,
    )
    assert [o.size for o in rm.problem.jobs[0].options] == [0, 2, 4]
    x = rm.x("default/p-worker-0", "n")
    for y in ("y[default/p,2]", "y[default/p,4]"):
        assert rm.violated({y: 1, x: 3}) != []
    assert rm.violated({"y[default/p,4]": 1, x: 4}) == []


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_the_solver_packs_two_gangs_where_greedy_places_one(backend: str) -> None:
    """Two 4-GPU nodes. Greedy takes gang a first (two 3-GPU pods, one per node) and then has no
    room for b (two 2-GPU pods) or c (one 4-GPU pod); the optimum starts b and c instead.
    Without the start bonus: with it, greedy's smallest-first candidate finds the optimum."""
    snap = snapshot(
        node("n1", gpus=4),
        node("n2", gpus=4),
        gang("a", 2, gpus=3),
        gang("b", 2, gpus=2),
        gang("c", 1, gpus=4),
    )
    cfg = config(lp_guide=False).model_copy(update={"weights": ObjectiveWeights(gang_start=0)})
    result = plan(snap, backend, cfg=cfg)  # the solver alone
    assert (result.violations, result.chosen) == ([], backend)
    assert_solver_decided(result)
    assert workers_after(snap, result.plan) == {"default/a": 0, "default/b": 2, "default/c": 1}
    assert workers_after(snap, plan(snap, "greedy", cfg=cfg).plan)["default/a"] == 2  # greedy's own


def _gated(objs: list[dict[str, object]], *indices: int) -> list[dict[str, object]]:
    """The gang's worker pods ``indices`` carry Kueue's admission gate."""
    for o in objs:
        name = str(o["metadata"]["name"])  # type: ignore[index]
        if o["kind"] == "Pod" and int(name.rsplit("-", 1)[1]) in indices:
            o["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]  # type: ignore[index]
    return objs


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gang_with_a_gated_pod_binds_nothing(backend: str) -> None:
    """The API server refuses to bind a pod with scheduling gates: the other three were bound
    and rolled back at every timeout."""
    snap = snapshot(node("a", gpus=8), _gated(gang("g", 4), 3))
    result = plan(snap, backend)
    assert result.plan.binds == ()
    (row,) = result.plan.jobs
    assert row.reason == (
        "1 of its pods wait behind scheduling gates (kueue.x-k8s.io/admission): "
        "3 of the 4 it needs may be scheduled"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_elastic_job_runs_at_an_allowed_size_without_its_gated_pods(backend: str) -> None:
    """min 2, max 4, powers of two, one of four pods gated: 2 pods, never the gated one (it ran
    at 3 with a failed bind every cycle)."""
    objs = _gated(gang("e", 4, min_member=2, max_member=4, size_policy="power-of-two"), 1)
    snap = snapshot(node("a", gpus=8), objs)
    result = plan(snap, backend)
    assert sorted(b.pod for b in result.plan.binds) == ["default/e-worker-0", "default/e-worker-2"]
    (row,) = result.plan.jobs
    assert row.reason == (  # it said nothing, and ran at 2 of its 4 pods for no stated reason
        "1 of its pods wait behind scheduling gates (kueue.x-k8s.io/admission): "
        "no scale-out past 2 until they may be scheduled"
    )


def test_a_gang_with_a_pod_of_another_scheduler_says_so() -> None:
    """It bound nothing, rightly, but said only "no allowed size can run"."""
    objs = gang("g", 2)
    for o in objs:
        if o["kind"] == "Pod" and str(o["metadata"]["name"]).endswith("-1"):
            o["spec"]["schedulerName"] = "default-scheduler"
    result = plan(snapshot(node("a", gpus=8), objs), "greedy")
    assert result.plan.binds == ()
    assert result.plan.jobs[0].reason == (
        "1 of its pods name another scheduler (default-scheduler): 1 of the 2 it needs may be "
        "scheduled"
    )


NEVER_PREEMPTS = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "high-no-preempt"},
    "value": 1000,
    "preemptionPolicy": "Never",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", ["pod", "class"])
def test_a_gang_that_never_preempts_waits_for_room(backend: str, where: str) -> None:
    """preemptionPolicy Never (on the pods, as admission sets it, or on the PriorityClass) was
    ignored: the gang broke a running one of lower priority."""
    high = gang("high", 4, priority=1000)
    for o in high:
        if o["kind"] == "Pod":
            if where == "pod":
                o["spec"]["preemptionPolicy"] = "Never"
            else:
                o["spec"]["priorityClassName"] = "high-no-preempt"
    snap = snapshot(NEVER_PREEMPTS, node("a", gpus=4), gang("low", 4, running_on=["a"] * 4), high)
    result = plan(snap, backend)
    assert result.plan.evictions == () and result.plan.binds == ()
    assert workers_after(snap, result.plan) == {"default/low": 4, "default/high": 0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_gang_that_may_preempt_does(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=4), gang("low", 4, running_on=["a"] * 4), gang("high", 4, priority=1000)
    )
    assert workers_after(snap, plan(snap, backend).plan) == {"default/low": 0, "default/high": 4}
