"""Rules 5 and 6: priority preemption of whole gangs, elastic pods first, minimal job-level
evictions, highest replica index first, never evicting for a job the plan does not place."""

from dataclasses import replace
from typing import Any

import pytest

from solver_sched.formulation.rules import preemption
from solver_sched.io import manifests as m
from tests.support.builders import (
    config,
    gang,
    hi_breaks_low,
    leaf_queues,
    node,
    plan,
    snapshot,
    workers_after,
)
from tests.support.rule_model import RuleModel, rule_model

BACKENDS = ["cpsat", "milp", "greedy"]
SP_LABEL = "scheduling.x-k8s.io/pod-group"


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
    tree = leaf_queues(("team-a", "team-a"), ("team-b", "team-b"))
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


def _budget(group: str, allowed: int) -> dict[str, Any]:
    return m.pod_disruption_budget(f"{group}-pdb", {SP_LABEL: group}, allowed)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gang_its_budget_protects_is_not_the_victim(backend: str) -> None:
    """Rule 6b: low0 is the cheaper victim, but its budget lets none of its pods go: the plan
    breaks low5 instead (the Eviction API would refuse low0's pods, every cycle)."""
    snap = snapshot(
        node("a", gpus=4),
        node("b", gpus=4),
        gang("low0", 4, running_on=["a"] * 4, priority=0),
        gang("low5", 4, running_on=["b"] * 4, priority=5),
        gang("high", 4, priority=1000),
        _budget("low0", 0),
    )
    result = plan(snap, backend)
    after = workers_after(snap, result.plan)
    assert after == {"default/low0": 4, "default/low5": 0, "default/high": 4}


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_elastic_job_is_not_shrunk_past_its_budget(backend: str) -> None:
    """el would give back its 4 elastic pods, but its budget lets only 2 go at once: the rigid
    gang is broken instead; with nothing else to take, the high gang waits."""
    el = gang("el", 8, min_member=4, max_member=8, size_policy="power-of-two", running_on=["a"] * 8)
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=4),
        gang("rigid", 4, running_on=["b"] * 4, priority=0),
        el,
        gang("high", 4, priority=1000),
        _budget("el", 2),
    )
    after = workers_after(snap, plan(snap, backend).plan)
    assert after == {"default/rigid": 0, "default/el": 8, "default/high": 4}
    snap = snapshot(node("a", gpus=8), el, gang("high", 4, priority=1000), _budget("el", 2))
    result = plan(snap, backend)
    assert result.plan.evictions == ()
    assert workers_after(snap, result.plan) == {"default/el": 8, "default/high": 0}
    row = next(j for j in result.plan.jobs if j.name == "default/high")
    assert row.reason.endswith(
        "; PodDisruptionBudgets keep lower-priority gangs of its queue from being preempted: "
        "default/el (2 pod(s) at most)"
    ), row.reason
    snap = snapshot(node("a", gpus=8), el, gang("high", 4, priority=1000), _budget("el", 4))
    assert workers_after(snap, plan(snap, backend).plan) == {"default/el": 4, "default/high": 4}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_at_an_irregular_size_its_budget_protects_stays(backend: str) -> None:
    """el runs 6 pods (powers of two only, after a worker was lost, say) under a budget that
    allows 1: the plan may not take it to 0, which it did (6 pods is no allowed size), the
    eviction refused every cycle; rigid, which no budget protects, makes high's room."""
    snap = snapshot(
        node("a", gpus=6),
        node("b", gpus=4),
        gang("el", 6, min_member=2, max_member=8, size_policy="power-of-two", running_on=["a"] * 6),
        gang("rigid", 4, running_on=["b"] * 4),
        gang("high", 4, priority=1000),
        _budget("el", 1),
    )
    after = workers_after(snap, plan(snap, backend).plan)
    assert after == {"default/el": 6, "default/rigid": 0, "default/high": 4}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_partial_gang_its_budget_protects_is_completed_not_evicted(backend: str) -> None:
    """p runs 2 of its 4 pods under a budget that allows none to go (minAvailable 4); its other
    two fit. high could start only in p's room: the plan evicted p, refused every cycle, and
    neither gang ever ran. p is completed instead."""
    snap = snapshot(
        node("a", gpus=4),
        gang("p", 4, running_on=["a", "a"]),
        gang("high", 4, priority=1000),
        _budget("p", 0),
    )
    result = plan(snap, backend)
    assert result.plan.evictions == ()
    assert workers_after(snap, result.plan) == {"default/p": 4, "default/high": 0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_whose_budgets_let_all_its_pods_go_may_be_broken(backend: str) -> None:
    """The loader leaves such a job without a limit; a limit equal to its size (a snapshot
    made elsewhere) must not protect it either."""
    snap = hi_breaks_low()
    low = snap.jobs["default/low"]
    running = len(snap.running_pods(low))
    snap = replace(snap, jobs={**snap.jobs, low.name: replace(low, disruptions=running)})
    assert workers_after(snap, plan(snap, backend).plan)["default/low"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("high", "broken"), [(8, set()), (4, {"default/a"})])
def test_a_budget_over_two_gangs_lets_them_go_together_only_as_far_as_it_allows(
    backend: str, high: int, broken: set[str]
) -> None:
    """a and b (4 pods each) share one budget that allows 4 disruptions: high (8 GPUs) needs
    both broken and gets nothing (the API would refuse the second after the first had gone);
    high of 4 breaks a, the lower priority."""
    objs: list[dict[str, Any]] = [node("n", gpus=8), *gang("high", high, priority=1000)]
    for name, prio in (("a", 0), ("b", 5)):
        group = gang(name, 4, running_on=["n"] * 4, priority=prio)
        for o in group[1:]:
            o["metadata"]["labels"]["app"] = "train"
        objs += group
    snap = snapshot(*objs, m.pod_disruption_budget("all", {"app": "train"}, 4))
    after = workers_after(snap, plan(snap, backend).plan)
    assert {j for j in ("default/a", "default/b") if after[j] == 0} == broken
    assert after["default/high"] == (high if broken else 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_preemptor_kept_waiting_by_a_budget_says_which(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=4),
        gang("low", 2, running_on=["a"] * 2, priority=0),
        gang("high", 4, priority=1000),
        _budget("low", 1),
    )
    result = plan(snap, backend)
    assert result.plan.evictions == ()
    row = next(j for j in result.plan.jobs if j.name == "default/high")
    assert row.reason == (
        "needs 4 x nvidia.com/gpu=1 at once; 2 GPUs free on schedulable nodes, before and after "
        "this plan; PodDisruptionBudgets keep lower-priority gangs of its queue from being "
        "preempted: default/low (1 pod(s) at most)"
    )


def test_a_waiting_preemptor_names_only_lower_priority_gangs_budgets_keep() -> None:
    """high fits no node (8 GPUs a pod); its reason names the gangs below it that budgets keep
    whole (three, then how many more), not eq (a budget keeps it, but high may not preempt an
    equal) nor free (no budget: nothing keeps it)."""
    for kept, more in (("abcd", " and 1 more"), ("abc", "")):
        objs: list[Any] = [node(n, gpus=4) for n in "abcdef"]
        for i, n in enumerate(kept):
            objs += [gang(f"p{i}", 4, running_on=[n] * 4, priority=0), _budget(f"p{i}", i // 3)]
        objs += [gang("eq", 4, running_on=["e"] * 4, priority=1000), _budget("eq", 0)]
        objs += [
            gang("free", 4, running_on=["f"] * 4, priority=0),
            gang("high", 1, gpus=8, priority=1000),
        ]
        result = plan(snapshot(*objs), "greedy")
        row = next(j for j in result.plan.jobs if j.name == "default/high")
        assert row.reason.endswith(
            "; PodDisruptionBudgets keep lower-priority gangs of its queue from being preempted: "
            f"default/p0, default/p1, default/p2{more}"
        ), row.reason


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


# -- the rows alone (rules/preemption.py on a LinearModel, values fixed) ---------------------

HIGH, LOW, E = "y[default/high,4]", "y[default/low,0]", "y[default/e,2]"


def _contested(high_priority: int = 1000) -> RuleModel:
    """Node a runs a rigid gang (low) and an elastic one (e, 2..4); a gang (high) waits."""
    return rule_model(
        snapshot(
            node("a", gpus=8),
            gang("low", 4, running_on=["a"] * 4, priority=0),
            gang("e", 4, min_member=2, max_member=4, running_on=["a"] * 4, priority=0),
            gang("high", 4, priority=high_priority),
        ),
        preemption.add,
    )


@pytest.mark.parametrize(
    ("assign", "ok"),
    [
        pytest.param({LOW: 1}, False, id="break-without-a-start"),
        pytest.param({LOW: 1, "fires[prio:(none):0]": 1}, False, id="trigger-without-its-start"),
        pytest.param({LOW: 1, HIGH: 1, "fires[prio:(none):0]": 1}, True, id="break-for-a-start"),
        pytest.param({HIGH: 1}, True, id="start-without-a-break"),
    ],
)
def test_a_running_gang_breaks_only_for_a_higher_priority_start(
    assign: dict[str, int], ok: bool
) -> None:
    assert (_contested().violated(assign) == []) is ok


def test_no_trigger_means_no_break() -> None:
    """An elastic job that may grow is in the model, but with no gang waiting nothing licenses
    breaking it or scaling it in: its rows are y[e,0] <= 0 and y[e,2] + y[e,3] <= 0."""
    rm = rule_model(
        snapshot(
            node("a", gpus=8),
            gang("e", 6, min_member=2, max_member=6, running_on=["a"] * 4, priority=0),
        ),
        preemption.add,
    )
    assert [n for n in rm.model.names if n.startswith("fires")] == []
    assert rm.violated({"y[default/e,0]": 1}) == ["break[default/e]"]
    assert rm.violated({"y[default/e,2]": 1}) == ["shrink[default/e]"]
    assert rm.violated({"y[default/e,6]": 1}) == []


def test_an_equal_priority_gang_licenses_no_break() -> None:
    rm = _contested(high_priority=0)
    assert "fires[prio:(none):0]" not in rm.model.names
    assert "y[default/low,0]" not in rm.model.names  # unbreakable: left out, its pods fixed


@pytest.mark.parametrize(
    ("assign", "ok"),
    [
        pytest.param({E: 1}, False, id="scale-in-without-a-start"),
        pytest.param({E: 1, "fires[any]": 1}, False, id="any-trigger-without-a-start"),
        pytest.param({E: 1, HIGH: 1, "fires[any]": 1}, True, id="scale-in-for-a-start"),
        pytest.param({"y[default/e,3]": 1, HIGH: 1, "fires[any]": 1}, True, id="to-three"),
    ],
)
def test_an_elastic_job_scales_in_only_for_a_starting_gang(
    assign: dict[str, int], ok: bool
) -> None:
    assert (_contested(high_priority=0).violated(assign) == []) is ok


def test_a_higher_priority_gang_of_another_queue_licenses_no_break() -> None:
    tree = leaf_queues(("qa", "team-a"), ("qb", "team-b"))
    rm = rule_model(
        snapshot(
            node("a", gpus=4),
            tree,
            gang("low", 4, namespace="team-a", running_on=["a"] * 4, priority=0),
            gang("high", 4, namespace="team-b", priority=1000),
        ),
        preemption.add,
    )
    assert not any(n.startswith("fires[prio:") for n in rm.model.names)
    assert "y[team-a/low,0]" not in rm.model.names  # no trigger reaches it: left out


def test_a_partial_gang_is_free_to_change() -> None:
    """Rule 8: a partial gang (2 of min 4 running) has no break or shrink row."""
    rm = rule_model(
        snapshot(node("a", gpus=8), gang("part", 4, running_on=["a"] * 2)), preemption.add
    )
    assert rm.model.constraints == []
    assert rm.violated({"y[default/part,0]": 1}) == []


def test_a_trigger_fires_or_not() -> None:
    rm = _contested()
    fires = rm.model.names.index("fires[prio:(none):0]")
    assert (rm.model.lb[fires], rm.model.ub[fires]) == (0, 1)


@pytest.mark.parametrize(("size", "ok"), [(1, False), (2, True)])
def test_scaling_in_to_one_pod_needs_a_start_too(size: int, ok: bool) -> None:
    """min 1, running 2, room to grow to 4: keeping 2 needs nothing, going to 1 needs a start."""
    rm = rule_model(
        snapshot(
            node("a", gpus=8),
            gang("e", 4, min_member=1, max_member=4, running_on=["a"] * 2),
        ),
        preemption.add,
    )
    assert (rm.violated({f"y[default/e,{size}]": 1}) == []) is ok


def _violated_at(rm: RuleModel, point: dict[str, float]) -> list[str]:
    """Rows a fractional point breaks: what the LP relaxation sees (lp-greedy's shares, solvers/
    lp.py, and CP-SAT's LP bound), where a looser coefficient gives a whole break for half a
    start."""
    index = {n: i for i, n in enumerate(rm.model.names)}
    values = [0.0] * len(index)
    for name, value in point.items():
        values[index[name]] = value
    bad = []
    for con in rm.model.constraints:
        act = sum(c * values[v] for v, c in con.terms)
        if (con.lo is not None and act < con.lo - 1e-9) or (
            con.hi is not None and act > con.hi + 1e-9
        ):
            bad.append(con.name)
    return bad


@pytest.mark.parametrize(
    ("point", "row"),
    [
        pytest.param({HIGH: 0.5, "fires[prio:(none):0]": 1}, "trigger[", id="trigger"),
        pytest.param({LOW: 1, "fires[prio:(none):0]": 0.5}, "break[", id="break"),
    ],
)
def test_the_rows_are_tight_in_the_relaxation(point: dict[str, float], row: str) -> None:
    """A trigger fires no more than its starts sum to, a gang breaks no more than its triggers
    fire, also in fractions: half a start licenses half a break, never a whole one."""
    assert [n for n in _violated_at(_contested(), point) if n.startswith(row)] != []


def test_a_scale_in_is_tight_in_the_relaxation() -> None:
    rm = _contested(high_priority=0)
    bad = _violated_at(rm, {E: 1, "fires[any]": 0.5})
    assert [n for n in bad if n.startswith("shrink[")] == ["shrink[default/e]"]
