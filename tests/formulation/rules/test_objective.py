"""Rule 9: named objective terms, their values, and weight validation."""

from typing import Any

import pytest

from solver_sched.config.schema import (
    ConfigError,
    ObjectiveWeights,
    SchedulerConfig,
    config_from_mapping,
)
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.problem import JobModel
from solver_sched.formulation.rules import objective
from tests.support.builders import (
    NOW,
    config,
    gang,
    node,
    other,
    plan,
    quota_tree,
    snapshot,
    workers_after,
)
from tests.support.rule_model import RuleModel, rule_model


def test_terms_are_named_and_valued() -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        other("x", "a", 3),
        gang("el", 16, min_member=2, max_member=16, size_policy="power-of-two"),
    )
    result = plan(snap)
    terms = result.terms
    # 8 workers of 1 GPU: guaranteed part 2 units at weight 1000, elastic 6 units at 100.
    assert terms["guaranteed[priority=0]"] == 2 * 1000
    assert terms["elastic"] == 6 * 100
    assert terms["elastic_eviction"] == 0
    assert terms["packing"] < 0


def test_objective_is_band_times_guaranteed_plus_elastic() -> None:
    snap = snapshot(node("a", gpus=8), gang("el", 8, min_member=2, max_member=8))
    result = plan(snap)
    guaranteed = sum(
        v
        for k, v in result.terms.items()
        if k.startswith(("guaranteed", "waiting", "gang_break", "gang_start", "quota_min"))
    )
    elastic = sum(
        v for k, v in result.terms.items() if k in ("elastic", "elastic_eviction", "packing")
    )
    problem = prepare(snap, config().weights, config().settings, NOW)
    assert problem.tie_band == 1  # nothing nominated: the tie band is empty
    assert result.stats.objective is not None
    band = (result.stats.objective - elastic) / guaranteed
    assert band == int(band) == problem.band > abs(elastic)


@pytest.mark.parametrize(("gang_start", "started"), [(0, {"big"}), (2, {"a", "b", "c"})])
@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_gang_start_prefers_more_gangs_on_the_same_gpus(
    backend: str, gang_start: int, started: set[str]
) -> None:
    # 4 free GPUs: one 4-GPU gang, or three 1-GPU gangs (one GPU left idle). Without the bonus the
    # model keeps the GPU count (4 > 3); with it, three starts are worth 3 x (1 + 2) > 1 x (4 + 2).
    snap = snapshot(
        node("n", gpus=4),
        gang("big", 4),
        gang("a", 1),
        gang("b", 1),
        gang("c", 1),
    )
    base = config()
    cfg = SchedulerConfig(weights=ObjectiveWeights(gang_start=gang_start), settings=base.settings)
    result = plan(snap, backend, cfg=cfg)
    after = workers_after(snap, result.plan)
    assert {name.split("/")[1] for name, n in after.items() if n} == started
    assert result.terms.get("gang_start", 0) == gang_start * 1000 * len(started)


@pytest.mark.parametrize(("gang_start", "started"), [(0, {"big"}), (2, {"a", "b", "c"})])
def test_greedy_honours_the_start_bonus(gang_start: int, started: set[str]) -> None:
    # big has waited longest, so queue order tries it first; with the bonus greedy starts the
    # gangs of one priority smallest first, as the model values them, and finds the model's plan.
    snap = snapshot(
        node("n", gpus=4),
        gang("big", 4, created="2026-01-01T06:00:00Z"),
        gang("a", 1),
        gang("b", 1),
        gang("c", 1),
    )
    result = plan(snap, "greedy", cfg=_with_start_bonus(gang_start))
    after = workers_after(snap, result.plan)
    assert {name.split("/")[1] for name, n in after.items() if n} == started


def _with_start_bonus(gang_start: int) -> SchedulerConfig:
    return SchedulerConfig(
        weights=ObjectiveWeights(gang_start=gang_start), settings=config().settings
    )


def _l1_l2_hi(*more: Any) -> ClusterSnapshot:
    """l1 and l2 (4 GPUs each, priority 0) fill node n; hi (4 GPUs, priority 10) waits."""
    return snapshot(
        node("n", gpus=8),
        gang("l1", 4, running_on=["n"] * 4, priority=0),
        gang("l2", 4, running_on=["n"] * 4, priority=0),
        gang("hi", 4, priority=10),
        *more,
    )


@pytest.mark.parametrize("gang_start", [0, 2])
@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_a_higher_priority_start_breaks_only_what_it_needs(backend: str, gang_start: int) -> None:
    # hi (priority 10) may break one priority-0 gang. Breaking the second one as well would only
    # make room for four 1-GPU priority-0 gangs: equal priority never preempts. Their four start
    # bonuses would outweigh the second break, but breaking l2 withholds four bonuses of its tier.
    snap = _l1_l2_hi(
        *(gang(f"s{i}", 1, priority=0) for i in range(4)),
    )
    result = plan(snap, backend, cfg=_with_start_bonus(gang_start))
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert after["default/hi"] == 4
    assert after["default/l1"] + after["default/l2"] == 4  # exactly one broken
    assert all(after[f"default/s{i}"] == 0 for i in range(4))


@pytest.mark.parametrize("gang_start", [0, 2])
@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_start_bonus_never_stops_a_preemption(backend: str, gang_start: int) -> None:
    # hi and s0, s1 (priority 10) do not all fit in m's 4 free GPUs: hi breaks l1 or l2, with or
    # without the bonus. Priority-0 gangs z start in what is left, their bonuses withheld for the
    # break (two of them start, fewer than the four l's room could hold): the preemption still
    # pays (24000 + 3 x 8000 - 4500 against 2 x 12000 + 2 x 3000 without it).
    snap = _l1_l2_hi(
        node("m", gpus=4),
        *(gang(f"s{i}", 1, priority=10) for i in range(2)),
        *(gang(f"z{i}", 1, priority=0) for i in range(6)),
    )
    result = plan(snap, backend, cfg=_with_start_bonus(gang_start))
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert (after["default/hi"], after["default/s0"], after["default/s1"]) == (4, 1, 1)
    assert after["default/l1"] + after["default/l2"] == 4
    assert sum(after[f"default/z{i}"] for i in range(6)) == 2


def test_a_fitting_start_does_not_break_to_free_room_for_its_tier() -> None:
    # hi fits in m's free GPUs. Moving it onto l2's room instead (breaking l2) would leave m to
    # four priority-0 gangs: a swap of l2 for gangs of its own tier, which the withheld bonuses
    # make a loss, as it is without the bonus (the gang_break penalty).
    snap = _l1_l2_hi(
        node("m", gpus=4),
        *(gang(f"z{i}", 1, priority=0) for i in range(4)),
    )
    after = workers_after(snap, plan(snap, cfg=_with_start_bonus(2)).plan)
    assert (after["default/hi"], after["default/l1"], after["default/l2"]) == (4, 4, 4)


def _caveat() -> RuleModel:
    """l2 (4 GPUs, priority 0) runs on n beside l1; four 1-GPU priority-0 gangs wait."""
    return rule_model(
        _l1_l2_hi(
            *(gang(f"s{i}", 1, priority=0) for i in range(4)),
        ),
        objective.add,
        cfg=config_from_mapping({"weights": {"gangStart": 2}}, "test"),
    )


def test_breaking_a_gang_withholds_the_bonuses_its_room_could_pay() -> None:
    """The start-bonus rows alone, values fixed: breaking l2 for four priority-0 starts pays
    no bonus for them; the same four starts with l2 kept would be paid in full."""
    rm = _caveat()
    assert _job(rm, "default/l2").withholds == 4  # four 1-GPU gangs fit in its 4 GPUs
    tier = _job(rm, "default/s0").tier_weight
    starts = {f"y[default/s{i},1]": 1 for i in range(4)}
    hi = {"y[default/hi,4]": 1}
    broken = {"y[default/l1,0]": 1, "y[default/l2,0]": 1, **hi, **starts}
    assert rm.violated({**broken, f"s[{tier}]": 1, f"sb[{tier}]": 1}) != []  # none left to pay
    assert rm.violated({**broken, f"s[{tier}]": 0, f"sb[{tier}]": 0}) == []
    one_broken = {"y[default/l1,0]": 1, "y[default/l2,4]": 1, **hi, **starts}
    assert rm.violated({**one_broken, f"s[{tier}]": 0, f"sb[{tier}]": 1}) == []
    kept = {"y[default/l1,4]": 1, "y[default/l2,4]": 1, **starts}
    paid = {**kept, f"s[{tier}]": 4, f"sb[{tier}]": 1}
    assert rm.violated(paid) == []
    assert rm.terms(paid)["gang_start"] == 4 * 2 * tier
    # the second break costs its units and the penalty, and buys no bonus
    alone = {"y[default/l1,0]": 1, "y[default/l2,4]": 1, **hi}
    alone |= {f"y[default/s{i},0]": 1 for i in range(4)}
    assert rm.violated(alone) == []
    assert rm.objective({**broken, f"s[{tier}]": 0}) < rm.objective(alone)


def test_withholding_stops_at_zero() -> None:
    """A break that starts nothing of its tier costs no bonus: s may not go negative, and the
    other tiers' bonuses are untouched."""
    rm = _caveat()
    hi = _job(rm, "default/hi")
    assign = {"y[default/l1,0]": 1, "y[default/l2,4]": 1, "y[default/hi,4]": 1}
    assign |= {f"y[default/s{i},0]": 1 for i in range(4)}
    assert rm.violated(assign) == []
    assert rm.terms(assign)["gang_start"] == 2 * hi.tier_weight


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_start_bonus_never_stops_a_reclaim(backend: str) -> None:
    # Queue a is below its min; its 2-GPU pod fits only where b's borrowing gang runs. Many 1-GPU
    # gangs of b's tier start on other nodes: withholding their bonus for the break (as a tried
    # fix of the caveat above did) would cost more than the reclaim gains.
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": "2"}},
                {"name": "b", "namespaces": ["team-b"], "min": {"nvidia.com/gpu": "1"}},
            ],
        }
    )
    snap = snapshot(
        node("n", gpus=2),
        *(node(f"m{i}", gpus=1) for i in range(25)),
        tree,
        gang("borrow", 2, namespace="team-b", running_on=["n"] * 2),
        gang("keep", 1, namespace="team-b", running_on=["m0"]),
        gang("claim", 1, gpus=2, namespace="team-a"),  # only n can hold its pod
        *(gang(f"z{i}", 1, namespace="team-b") for i in range(24)),
    )
    result = plan(snap, backend, cfg=_with_start_bonus(2))
    assert result.violations == []
    after = workers_after(snap, result.plan)
    assert (after["team-a/claim"], after["team-b/borrow"], after["team-b/keep"]) == (1, 0, 1)


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_start_bonus_keeps_preemption_and_reclaim(backend: str) -> None:
    # With the bonus on, a higher-priority gang still preempts a larger lower-priority one, and a
    # queue below its min still reclaims from a borrowing queue.
    preempt = snapshot(
        node("n", gpus=8), gang("low", 8, running_on=["n"] * 8), gang("hi", 4, priority=100)
    )
    after = workers_after(preempt, plan(preempt, backend, cfg=_with_start_bonus(2)).plan)
    assert after == {"default/low": 0, "default/hi": 4}
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "x", "namespaces": ["team-x"], "min": {"nvidia.com/gpu": "1"}},
                {"name": "y", "namespaces": ["team-y"], "min": {"nvidia.com/gpu": "1"}},
            ],
        }
    )
    reclaim = snapshot(
        node("n", gpus=8),
        tree,
        gang("big", 7, namespace="team-y", running_on=["n"] * 7),
        gang("keep", 1, namespace="team-y", running_on=["n"]),
        gang("small", 1, namespace="team-x"),
    )
    after = workers_after(reclaim, plan(reclaim, backend, cfg=_with_start_bonus(2)).plan)
    assert after["team-x/small"] == 1  # reclaimed: the 1-GPU gang of y is the cheaper victim
    assert after == {"team-y/big": 7, "team-y/keep": 0, "team-x/small": 1}


def test_start_bonus_is_left_out_when_capped_tiers_cannot_carry_it() -> None:
    # Seven distinct priorities: past MAX_TIER_WEIGHT the top tiers weigh almost the same, so the
    # bonus would let eight 1-GPU priority-500 gangs outrank one 8-GPU priority-600 gang.
    fillers = [gang(f"f{p}", 1, gpus=9, priority=p) for p in (0, 100, 200, 300, 400)]
    snap = snapshot(
        node("n", gpus=8),
        *fillers,
        gang("big", 8, priority=600),
        *(gang(f"s{i}", 1, priority=500) for i in range(8)),
    )
    after = workers_after(snap, plan(snap, cfg=_with_start_bonus(2)).plan)
    assert after["default/big"] == 8


def test_start_bonus_never_outranks_priority() -> None:
    # Eight 1-GPU priority-0 gangs or one 8-GPU priority-10 gang: the priority wins whatever the
    # bonus the validation allows (tierFactor 4 admits gangStart up to 3).
    snap = snapshot(
        node("n", gpus=8), gang("big", 8, priority=10), *(gang(f"s{i}", 1) for i in range(8))
    )
    after = workers_after(snap, plan(snap, cfg=_with_start_bonus(3)).plan)
    assert after["default/big"] == 8


@pytest.mark.parametrize(
    ("weights", "field"),
    [
        ({"elastic": -1}, "weights.elastic"),
        (
            {"tiers": [{"minPriority": 0, "weight": 10}, {"minPriority": 100, "weight": 5}]},
            "weights.tiers",
        ),
        ({"waiting": 100, "waitingCapHours": 48}, "weights"),
        ({"unknownWeight": 1}, "weights.unknownWeight"),
        ({"tierFactor": 2, "gangStart": 2}, "gangStart"),
        (
            {
                "gangStart": 2,
                "tiers": [{"minPriority": 0, "weight": 10}, {"minPriority": 100, "weight": 20}],
            },
            "gangStart",
        ),
    ],
    ids=[
        "negative",
        "tier-order",
        "waiting-outweighs-placement",
        "unknown-field",
        "start-bonus-over-tier-factor",
        "start-bonus-over-tier-step",
    ],
)
def test_bad_weights_are_rejected_naming_the_field(weights: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_mapping({"weights": weights}, "ConfigMap solver-sched/solver-sched-config")
    assert field in str(err.value)
    assert "ConfigMap solver-sched/solver-sched-config" in str(err.value)


def test_explicit_priority_tiers_apply() -> None:
    cfg = config_from_mapping(
        {
            "weights": {
                "tiers": [{"minPriority": 0, "weight": 10}, {"minPriority": 500, "weight": 10000}]
            }
        },
        "x",
    )
    snap = snapshot(node("a", gpus=4), gang("low", 4, priority=0), gang("high", 2, priority=600))
    result = plan(snap, cfg=cfg)
    assert result.terms["guaranteed[priority=600]"] == 2 * 10000


# -- the terms alone (rules/objective.py on a LinearModel, values fixed) ---------------------


def _mixed(cfg: SchedulerConfig | None = None) -> RuleModel:
    """Node a runs a rigid gang (r, 2 x 2 GPUs) and an elastic one (e, 1 GPU, 2..4 running 4);
    on node b a 2-GPU pod of another scheduler; g (2 x 4 GPUs, priority 100) waits."""
    return rule_model(
        snapshot(
            node("a", gpus=8),
            node("b", gpus=8),
            other("x", "b", 2),
            gang("r", 2, gpus=2, running_on=["a"] * 2),
            gang("e", 4, min_member=2, max_member=4, running_on=["a"] * 4),
            gang("g", 2, gpus=4, priority=100, created="2026-01-01T09:30:00Z"),
        ),
        objective.add,
        cfg=cfg,
    )


def _job(rm: RuleModel, name: str) -> JobModel:
    return next(jm for jm in rm.problem.jobs if jm.name == name)


KEEP = {"y[default/r,2]": 1, "y[default/e,4]": 1}


def test_guaranteed_work_is_worth_its_tier_per_unit() -> None:
    rm = _mixed()
    g = _job(rm, "default/g")
    terms = rm.terms({**KEEP, "y[default/g,2]": 1})
    assert terms["guaranteed[priority=100]"] == g.tier_weight * 8  # 2 pods x 4 GPUs
    assert terms["guaranteed[priority=0]"] == _job(rm, "default/r").tier_weight * (2 * 2 + 2)
    assert g.tier_weight > _job(rm, "default/r").tier_weight  # the higher priority weighs more
    assert rm.terms(KEEP)["guaranteed[priority=100]"] == 0


def test_elastic_pods_and_their_evictions() -> None:
    rm = _mixed()
    w = config().weights
    assert rm.terms(KEEP)["elastic"] == w.elastic * 2  # e's pods 3 and 4
    shrunk = rm.terms({"y[default/r,2]": 1, "y[default/e,2]": 1})
    assert (shrunk["elastic"], shrunk["elastic_eviction"]) == (0, -w.elastic_eviction * 2)


def test_breaking_a_running_gang_costs_its_penalty() -> None:
    rm = _mixed()
    terms = rm.terms({"y[default/r,0]": 1, "y[default/e,4]": 1})
    assert terms["gang_break"] == -config().weights.gang_break
    assert rm.terms(KEEP)["gang_break"] == 0


def test_a_starting_gang_is_worth_the_hours_it_waited() -> None:
    rm = _mixed()
    assert _job(rm, "default/g").waiting_hours == 2  # created 09:30, now 12:00
    assert rm.terms({**KEEP, "y[default/g,2]": 1})["waiting"] == config().weights.waiting * 2
    assert rm.terms(KEEP)["waiting"] == 0


def test_the_start_bonus_is_worth_its_weight_in_the_gangs_tier() -> None:
    rm = _mixed(config_from_mapping({"weights": {"gangStart": 2, "tierFactor": 4}}, "test"))
    tier = _job(rm, "default/g").tier_weight
    assert rm.terms({**KEEP, "y[default/g,2]": 1})["gang_start"] == 2 * tier


def test_packing_prefers_the_fuller_node() -> None:
    """g's pods on node b (6 GPUs free) or on a class with all 8 free: the fuller one scores."""
    rm = rule_model(
        snapshot(node("a", gpus=8), node("b", gpus=8), other("x", "b", 2), gang("g", 1, gpus=4)),
        objective.add,
    )
    on_b = rm.terms({"y[default/g,1]": 1, rm.x("default/g-worker-0", "b"): 1})["packing"]
    on_a = rm.terms({"y[default/g,1]": 1, rm.x("default/g-worker-0", "a"): 1})["packing"]
    w = config().weights.packing
    assert (on_b, on_a) == (-w * 4 * 6, -w * 4 * 8)


def test_one_guaranteed_unit_outweighs_any_elastic_band() -> None:
    """band * G + E: starting g (guaranteed) beats keeping e's elastic pods, whatever E."""
    rm = _mixed()
    start = {"y[default/r,2]": 1, "y[default/e,2]": 1, "y[default/g,2]": 1}
    assert rm.objective(start) > rm.objective(KEEP)
    terms = rm.terms(start)
    g = sum(terms[n] for n in rm.model.guaranteed)
    e = sum(terms[n] for n in rm.model.elastic)
    assert rm.objective(start) == rm.problem.band * g + e
    assert rm.model.band == rm.problem.band > abs(e)


def test_each_term_is_in_its_band() -> None:
    rm = _mixed(config_from_mapping({"weights": {"gangStart": 2, "tierFactor": 4}}, "test"))
    guaranteed = {"guaranteed[priority=0]", "guaranteed[priority=100]", "gang_start", "waiting"}
    assert set(rm.model.guaranteed) == guaranteed | {"gang_break"}
    assert set(rm.model.elastic) == {"elastic", "elastic_eviction", "packing"}


def test_a_pod_without_gpus_adds_nothing_to_packing() -> None:
    rm = rule_model(
        snapshot(node("a", gpus=8), gang("c", 1, gpus=0), gang("g", 1, gpus=1)), objective.add
    )
    assign = {"y[default/c,1]": 1, rm.x("default/c-worker-0", "a"): 1}
    assert rm.terms(assign)["packing"] == 0
    assign |= {"y[default/g,1]": 1, rm.x("default/g-worker-0", "a"): 1}
    assert rm.terms(assign)["packing"] == -config().weights.packing * 1 * 8


@pytest.mark.parametrize(
    "weights",
    [
        {"tierFactor": 2},
        {"tiers": [{"minPriority": 0, "weight": 10}, {"minPriority": 100, "weight": 20}]},
    ],
    ids=["tier-factor", "tiers"],
)
def test_the_default_start_bonus_never_rejects_tiers_set_alone(weights: dict[str, object]) -> None:
    # The bonus is on by default; a config that sets only close tiers stays valid, and a cycle
    # whose tiers cannot carry the bonus leaves it out (eight small gangs never outrank big).
    cfg = config_from_mapping({"weights": weights}, "test")
    assert cfg.weights.gang_start > 0
    snap = snapshot(
        node("n", gpus=8), gang("big", 8, priority=100), *(gang(f"s{i}", 1) for i in range(8))
    )
    after = workers_after(
        snap, plan(snap, cfg=SchedulerConfig(weights=cfg.weights, settings=config().settings)).plan
    )
    assert after["default/big"] == 8
