"""Topology through the whole cycle: a required gang lands in one domain on every backend (or
waits with the topology reason), a preferred one spans the fewest domains, and a required gang is
never grown or shrunk into a split."""

from __future__ import annotations

from typing import Any

import pytest

from solver_sched.config.schema import SchedulerConfig, Settings, TopologyConfig
from solver_sched.cycle import run_cycle
from solver_sched.domain.topology import HOSTNAME, Topology
from solver_sched.formulation.prepare import prepare
from solver_sched.io import manifests as m
from solver_sched.placement.state import PlanState
from solver_sched.planning.pack import minimize_evictions
from solver_sched.solvers.greedy import greedy_plan
from tests.support.builders import NOW, other, snapshot, workers_after

RACK, BLOCK = "example.com/rack", "example.com/block"
LEVELS = (BLOCK, RACK, HOSTNAME)
REQ = {"kueue.x-k8s.io/podset-required-topology": RACK}
PREF = {"kueue.x-k8s.io/podset-preferred-topology": RACK}
BACKENDS = ("cpsat", "milp", "greedy")


def cfg(**weights: Any) -> SchedulerConfig:
    return SchedulerConfig.model_validate(
        {
            "settings": Settings(time_limit_seconds=10, workers=1, random_seed=0).model_dump(),
            "weights": weights,
            "topology": TopologyConfig(levels=LEVELS).model_dump(by_alias=True),
        }
    )


def racks(layout: dict[str, tuple[str, str]], gpus: int = 4) -> list[dict[str, Any]]:
    return [m.node(n, gpus=gpus, labels={BLOCK: b, RACK: r}) for n, (b, r) in layout.items()]


def domains_of(snap: Any, plan: Any, job: str, key: str = RACK) -> set[tuple[str, str]]:
    nodes = {b.node for b in plan.binds if b.job == job}
    return {(snap.nodes[n].labels[BLOCK], snap.nodes[n].labels[key]) for n in nodes}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_required_gang_goes_to_the_one_rack_that_holds_it(backend: str) -> None:
    # r1 has 2 + 4 free GPUs (one node half used), r2 4 + 4: best fit per node would split
    layout = {"a": ("b1", "r1"), "b": ("b1", "r1"), "c": ("b1", "r2"), "d": ("b1", "r2")}
    snap = snapshot(racks(layout), other("sys", "a", 2), m.gang("g", 4, gpus=2, annotations=REQ))
    result = run_cycle(snap, cfg(), NOW, backend)
    assert not result.violations
    assert workers_after(snap, result.plan)["default/g"] == 4
    assert domains_of(snap, result.plan, "default/g") == {("b1", "r2")}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_required_gang_no_rack_holds_waits_with_the_topology_reason(backend: str) -> None:
    layout = {"a": ("b1", "r1"), "b": ("b1", "r1"), "c": ("b1", "r2")}
    snap = snapshot(racks(layout), m.gang("g", 3, gpus=4, annotations=REQ))
    result = run_cycle(snap, cfg(), NOW, backend)
    assert not result.plan.binds
    row = next(j for j in result.plan.jobs if j.name == "default/g")
    assert row.reason == "needs 12 GPUs in one rack: largest free rack has 8"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_preferred_gang_that_fits_no_rack_stays_in_one_block(backend: str) -> None:
    layout = {
        "a": ("b1", "r1"),
        "b": ("b1", "r2"),
        "c": ("b2", "r3"),
        "d": ("b2", "r4"),
        "e": ("b2", "r4"),
    }
    snap = snapshot(racks(layout), m.gang("g", 3, gpus=4, annotations=PREF))
    result = run_cycle(snap, cfg(), NOW, backend)
    assert not result.violations
    assert workers_after(snap, result.plan)["default/g"] == 3
    used = domains_of(snap, result.plan, "default/g")
    assert {b for b, _ in used} == {"b2"} and len(used) == 2  # 3 pods: r3 + r4, not across blocks


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_required_elastic_gang_grows_only_inside_its_rack(backend: str) -> None:
    layout = {"a": ("b1", "r1"), "b": ("b1", "r2"), "c": ("b1", "r2")}
    snap = snapshot(
        racks(layout),
        m.gang(
            "e",
            3,
            gpus=4,
            min_member=1,
            max_member=3,
            running_on=["a"],
            annotations=REQ,
        ),
    )
    result = run_cycle(snap, cfg(), NOW, backend)
    assert not result.violations
    assert workers_after(snap, result.plan)["default/e"] == 1  # r1 is full: no growth into r2
    why = next(j.reason for j in result.plan.jobs if j.name == "default/e")
    assert why == "needs 4 GPUs in its rack b1/r1 (its pods run there): 0 free"  # not r2's room


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pod_on_a_cordoned_node_keeps_its_gang_in_its_rack(backend: str) -> None:
    """Rack r1: a (cordoned, one pod of e running) and b (free); r2: c. e (required rack, 1-2
    pods) grows to 2 on b, beside its pod on a; placement read a's pod as in no rack, so the
    growth could not be packed (an irregular gang there could not even shrink: every plan
    rejected), and the model's bound cut off plans that keep the pod."""
    layout = {"a": ("b1", "r1"), "b": ("b1", "r1"), "c": ("b1", "r2")}
    nodes = racks(layout)
    nodes[0]["spec"]["unschedulable"] = True
    e = m.gang("e", 2, gpus=4, min_member=1, max_member=2, running_on=["a"], annotations=REQ)
    snap = snapshot(nodes, e)
    result = run_cycle(snap, cfg(), NOW, backend)
    assert not result.violations
    assert workers_after(snap, result.plan) == {"default/e": 2}
    assert {b.node for b in result.plan.binds if b.job == "default/e"} == {"b"}
    bound = result.stats.bound
    assert bound is None or result.stats.objective is None or result.stats.objective <= bound


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_required_gang_started_short_of_its_max_is_told_of_its_whole_size(backend: str) -> None:
    """g (1-4 pods of 4 GPUs, required rack) starts at 2 in r1 (8 GPUs); size 4 needs 16 in one
    rack. It was told its 2 missing pods' 8 GPUs against r2's 8: "the largest free rack has 8,
    but not in nodes its pods fit", true of neither."""
    nodes = racks({"a": ("b1", "r1"), "b": ("b1", "r2")}, gpus=8)
    g = m.gang(
        "g", 4, gpus=4, min_member=1, max_member=4, size_policy="power-of-two", annotations=REQ
    )
    snap = snapshot(nodes, g)
    result = run_cycle(snap, cfg(), NOW, backend)
    (row,) = result.plan.jobs
    assert (row.planned, row.reason) == (2, "needs 16 GPUs in one rack: largest free rack has 8")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_irregular_required_gang_split_before_its_request_goes_to_0(backend: str) -> None:
    """e (powers of two, 2-4) runs 3 pods over r1 and r2, placed before its request: 2 of them
    would stay split (its first pod is kept), so it goes to 0. Greedy tried 2 only, kept e at 3,
    and every greedy candidate failed the checker: no plan at all, p waited with e."""
    nodes = racks({"a": ("b1", "r1"), "b": ("b1", "r2")}, gpus=8)
    e = m.gang(
        "e",
        4,
        min_member=2,
        max_member=4,
        size_policy="power-of-two",
        running_on=["a", "b", "b"],
        annotations=REQ,
    )
    snap = snapshot(nodes, e, m.gang("p", 2))
    result = run_cycle(snap, cfg(), NOW, backend)
    assert not result.violations and result.chosen
    assert workers_after(snap, result.plan) == {"default/e": 0, "default/p": 2}


def test_an_eviction_of_a_split_required_gang_is_given_back_when_not_needed() -> None:
    """e (required rack) runs split over r0 and r1, placed before its request; a shrink to 2
    keeps r0's pods. Given back, its pods go back where they run: that was re-placed through
    the kept pods' rack, which is full, so the give-back failed and the eviction stayed."""
    layout = {"a0": ("b1", "r0"), "a1": ("b1", "r0"), "b0": ("b1", "r1"), "b1": ("b1", "r1")}
    nodes = racks({**layout, "c": ("b1", "r2")})
    e = m.gang(
        "e",
        4,
        gpus=4,
        min_member=2,
        max_member=4,
        size_policy="any",
        running_on=["a0", "a1", "b0", "b1"],
        annotations=REQ,
    )
    snap = snapshot(nodes, e, m.gang("p", 1))  # (something to plan: p fits on c)
    st = PlanState(snap, prepare(snap, cfg().weights, cfg().settings, NOW, Topology(LEVELS)))
    j = st.index["default/e"]
    assert st.resize(j, 2, check_quota=False)
    assert minimize_evictions(st) == ["kept default/e at 4 pods: its eviction was not needed"]
    assert st.size["default/e"] == 4 and not st.evicted


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_partial_gang_in_a_rack_of_cordoned_nodes_only_is_rolled_back(backend: str) -> None:
    """r1 is one cordoned node a with one of p's two pods (minimum 2): p can only complete in r1,
    where nothing new goes. The victim search looked for room inside r1 and raised KeyError
    (no schedulable node indexes it); p is given up and the room of b stays for q."""
    layout = {"a": ("b1", "r1"), "b": ("b1", "r2")}
    nodes = racks(layout)
    nodes[0]["spec"]["unschedulable"] = True
    p = m.gang("p", 2, gpus=4, running_on=["a"], annotations=REQ, priority=100)
    low = m.gang("low", 1, gpus=4, running_on=["b"])
    result = run_cycle(snapshot(nodes, p, low), cfg(), NOW, backend)
    assert not result.violations
    assert workers_after(snapshot(nodes, p, low), result.plan) == {"default/p": 0, "default/low": 1}
    (ev,) = result.plan.evictions
    assert ev.reason == "gang incomplete (1 of 2 pods), not completed by this plan"


def test_a_required_gang_started_and_grown_in_one_plan_stays_in_one_rack() -> None:
    """r1 holds 2 GPUs, r2 4. Greedy starts g (1-GPU pods, 2 to 4, power of two) at 2 in r1, the
    tightest fit, then grows it: the growth chose a rack for all 4 pods as if none were placed
    (r2) and put the 2 new ones there, beside 2 in r1, a split the checker rejects (where every
    candidate did so, the whole cycle was rejected). g ends in one rack."""
    layout = {"a": ("b1", "r1"), "b": ("b1", "r2")}
    snap = snapshot(
        racks(layout, gpus=4),
        other("sys", "a", 2),
        m.gang("g", 4, gpus=1, min_member=2, max_member=4, annotations=REQ),
    )
    problem = prepare(snap, cfg().weights, cfg().settings, NOW, Topology(LEVELS))
    st = greedy_plan(snap, problem)
    nodes = {st.placed[p] for p in snap.jobs["default/g"].pods if p in st.placed}
    assert nodes and len({snap.nodes[n].labels[RACK] for n in nodes}) == 1


def test_a_preferred_gang_started_and_grown_in_one_plan_moves_whole_to_a_rack_that_holds_it() -> (
    None
):
    """As above, g preferring a rack: started at 2 in r1 (tightest), its growth spilled 2 pods
    into r2, which holds all 4. The pods this plan placed move with the new ones."""
    layout = {"a": ("b1", "r1"), "b": ("b1", "r2")}
    snap = snapshot(
        racks(layout, gpus=4),
        other("sys", "a", 2),
        m.gang("g", 4, gpus=1, min_member=2, max_member=4, annotations=PREF),
    )
    problem = prepare(snap, cfg().weights, cfg().settings, NOW, Topology(LEVELS))
    st = PlanState(snap, problem)
    j = st.index["default/g"]
    assert st.resize(j, 2) and st.resize(j, 4)
    nodes = {st.placed[p] for p in snap.jobs["default/g"].pods}
    assert {snap.nodes[n].labels[RACK] for n in nodes} == {"r2"}


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_a_preferred_gang_goes_outside_every_rack_where_the_solver_put_it(backend: str) -> None:
    """Rack r1 is node a; node x has no rack label; 4 GPUs each. p prefers a rack, q requires
    one: the solver runs both (p on x, q in r1) and the packer follows it (it put p into r1
    first, and q then fit nowhere). Alone, p goes into r1: a pod outside every rack costs what
    a new rack does."""
    nodes = [m.node("a", gpus=4, labels={BLOCK: "b1", RACK: "r1"})]
    nodes.append(m.node("x", gpus=4, labels={BLOCK: "b1"}))
    p = m.gang("p", 4, gpus=1, annotations=PREF)
    snap = snapshot(nodes, p, m.gang("q", 4, gpus=1, annotations=REQ))
    result = run_cycle(snap, cfg(), NOW, backend)
    assert not result.violations
    assert {(b.job, b.node) for b in result.plan.binds} == {("default/p", "x"), ("default/q", "a")}
    alone = snapshot(nodes, p)
    assert {b.node for b in run_cycle(alone, cfg(), NOW, backend).plan.binds} == {"a"}


def test_a_preferred_gang_the_solver_spread_goes_whole_into_a_rack_that_holds_it() -> None:
    """The packer follows the solver's domains, but a spread it chose over aggregated classes (or
    in a plan short of optimal) never splits a gang one rack holds whole at packing time."""
    layout = {"a": ("b1", "r1"), "b": ("b1", "r2"), "c": ("b1", "r3"), "d": ("b1", "r3")}
    snap = snapshot(racks(layout), m.gang("g", 2, gpus=4, annotations=PREF))
    c = cfg()
    problem = prepare(snap, c.weights, c.settings, NOW, Topology(LEVELS))
    st = PlanState(snap, problem)
    st.prefer["default/g"] = (("b1", "r1"), ("b1", "r2"))
    assert st.resize(st.index["default/g"], 2)
    assert {snap.nodes[n].labels[RACK] for n in st.placed.values()} == {"r3"}
