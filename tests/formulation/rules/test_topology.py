"""The topology rule's rows and terms alone (rules/topology.py): each test fails when the row or
term it names is removed."""

from __future__ import annotations

from typing import Any

from solver_sched.domain.topology import HOSTNAME
from solver_sched.formulation.rules import gang, topology
from solver_sched.io import manifests as m
from tests.support.builders import snapshot
from tests.support.rule_model import RuleModel, rule_model

RACK, BLOCK = "example.com/rack", "example.com/block"
REQ = {"kueue.x-k8s.io/podset-required-topology": RACK}
PREF = {"kueue.x-k8s.io/podset-preferred-topology": RACK}


def _cluster(*objs: Any) -> RuleModel:
    """Block b1: rack r1 (node a), rack r2 (node b); block b2: rack r3 (node c); 4 GPUs each."""
    where = {"a": ("b1", "r1"), "b": ("b1", "r2"), "c": ("b2", "r3")}
    nodes = [m.node(n, gpus=4, labels={BLOCK: b, RACK: r}) for n, (b, r) in where.items()]
    snap = snapshot(nodes, m.kueue_topology("dc", [BLOCK, RACK, HOSTNAME]), *objs)
    return rule_model(snap, gang.add, topology.add)


def _split(rm: RuleModel, job: str, racks: dict[str, str]) -> dict[str, int]:
    """The gang's two pods in the classes of nodes ``racks`` (domain -> node), domain vars set."""
    sid = rm.problem.shape_of[f"default/{job}-worker-0"]
    out = {f"y[default/{job},2]": 1}
    for d, n in racks.items():
        out[rm.x(f"default/{job}-worker-0", n)] = 1
        out[f"zt[default/{job},{sid},{d}]"] = 1
        out[f"d[default/{job},{d}]"] = 1
    return out


def test_a_required_gang_in_two_racks_breaks_one_domain() -> None:
    rm = _cluster(m.gang("g", 2, gpus=4, annotations=REQ))
    split = _split(rm, "g", {"b1/r1": "a", "b1/r2": "b"})
    assert "one_domain[default/g]" in rm.violated(split)
    one = {k: v for k, v in split.items() if "b1/r2" not in k and "x[" not in k}
    sid = rm.problem.shape_of["default/g-worker-0"]
    one[f"zt[default/g,{sid},b1/r1]"] = 2
    one[rm.x("default/g-worker-0", "a")] = 2
    assert "one_domain[default/g]" not in rm.violated(one)


def test_pods_counted_in_a_domain_need_its_choice_and_its_classes() -> None:
    rm = _cluster(m.gang("g", 2, gpus=4, annotations=REQ))
    sid = rm.problem.shape_of["default/g-worker-0"]
    no_choice = {"y[default/g,2]": 1, f"zt[default/g,{sid},b1/r1]": 2, "d[default/g,b1/r2]": 1}
    no_choice[rm.x("default/g-worker-0", "a")] = 2
    assert f"in_domain[default/g,{sid},b1/r1]" in rm.violated(no_choice)
    elsewhere = {"y[default/g,2]": 1, f"zt[default/g,{sid},b1/r1]": 2, "d[default/g,b1/r1]": 1}
    elsewhere[rm.x("default/g-worker-0", "c")] = 2  # the pods sit in r3's class
    assert f"domain_supply[{sid},b1/r1]" in rm.violated(elsewhere)
    missing = {"y[default/g,2]": 1, "d[default/g,b1/r1]": 1}
    missing[rm.x("default/g-worker-0", "a")] = 2
    assert f"place_domain[default/g,{sid}]" in rm.violated(missing)


def test_a_preferred_gang_pays_per_rack_and_per_block() -> None:
    rm = _cluster(m.gang("p", 2, gpus=4, annotations=PREF))
    w = rm.problem.spread_weight
    assert w > 0
    same_block = _split(rm, "p", {"b1/r1": "a", "b1/r2": "b"}) | {"b[default/p,b1]": 1}
    two_blocks = _split(rm, "p", {"b1/r1": "a", "b2/r3": "c"})
    two_blocks |= {"b[default/p,b1]": 1, "b[default/p,b2]": 1}
    assert rm.violated(same_block) == [] and rm.violated(two_blocks) == []
    assert rm.terms(same_block)["topology_spread"] == -(2 * w * 2 + w)
    assert rm.terms(two_blocks)["topology_spread"] == -(2 * w * 2 + 2 * w)
    one = {k: v for k, v in same_block.items() if "b1/r2" not in k}
    assert rm.terms(one)["topology_spread"] == -(2 * w + w)
    lying = {k: v for k, v in two_blocks.items() if k != "b[default/p,b2]"}
    assert "above[default/p,b2/r3]" in rm.violated(lying)


def test_a_free_rack_kept_whole_is_rewarded_and_cannot_be_claimed_while_used() -> None:
    rm = _cluster(m.gang("g", 1, gpus=4, annotations=REQ))
    f = rm.problem.fragmentation_weight
    sid = rm.problem.shape_of["default/g-worker-0"]
    in_r1 = {
        "y[default/g,1]": 1,
        rm.x("default/g-worker-0", "a"): 1,
        f"zt[default/g,{sid},b1/r1]": 1,
        "d[default/g,b1/r1]": 1,
    }
    keep = in_r1 | {"e[b1/r2]": 1, "e[b2/r3]": 1, "e[b2]": 1}
    assert rm.violated(keep) == []
    assert rm.terms(keep)["fragmentation"] == f * (4 + 4 + 4)
    assert "whole[b1/r1]" in rm.violated(in_r1 | {"e[b1/r1]": 1})
    assert "whole[b1]" in rm.violated(in_r1 | {"e[b1]": 1})


def _bounds(rm: RuleModel, prefix: str) -> set[tuple[int, int]]:
    names = rm.model.names
    return {(rm.model.lb[i], rm.model.ub[i]) for i, n in enumerate(names) if n.startswith(prefix)}


def test_domain_choices_are_binary_and_pods_per_domain_at_most_the_gangs_need() -> None:
    rm = _cluster(m.gang("p", 2, gpus=2, annotations=PREF), m.gang("g", 1, gpus=4, annotations=REQ))
    assert _bounds(rm, "d[") == {(0, 1)} and _bounds(rm, "b[") == {(0, 1)}
    assert _bounds(rm, "e[") == {(0, 1)}
    sid = rm.problem.shape_of["default/p-worker-0"]
    assert _bounds(rm, f"zt[default/p,{sid},") == {(0, 2)}  # its two pods, in any one rack
    one = {"y[default/p,2]": 1, f"zt[default/p,{sid},b1/r1]": 2, "d[default/p,b1/r1]": 1}
    one |= {rm.x("default/p-worker-0", "a"): 2, "b[default/p,b1]": 1, "y[default/g,0]": 1}
    assert rm.violated(one) == []  # all its pods in one rack: the row allows need x d exactly


def test_a_running_preferred_gang_grows_for_free_where_it_runs_and_pays_for_a_new_rack() -> None:
    rm = _cluster(
        m.gang("e", 3, gpus=2, min_member=1, max_member=3, running_on=["a"], annotations=PREF)
    )  # worker 0 runs in r1 (block b1); two more may join
    w = rm.problem.spread_weight
    sid = rm.problem.shape_of["default/e-worker-1"]

    def grow(d: str, node: str) -> dict[str, int]:
        out = {"y[default/e,3]": 1, f"zt[default/e,{sid},{d}]": 2, f"d[default/e,{d}]": 1}
        out[rm.x("default/e-worker-1", node)] = 2
        return out | {f"b[default/e,{d.split('/')[0]}]": 1}

    for plan, cost in ((grow("b1/r1", "a"), 0), (grow("b1/r2", "b"), 2 * w)):
        assert rm.violated(plan) == [], plan
        assert rm.terms(plan)["topology_spread"] == -cost  # the held block costs nothing
    far = grow("b2/r3", "c")
    assert rm.violated(far) == []
    assert rm.terms(far)["topology_spread"] == -(2 * w + w)  # a new rack in a new block


def test_a_running_required_gang_may_grow_only_in_its_one_rack() -> None:
    one = _cluster(
        m.gang("r", 2, gpus=2, min_member=1, max_member=2, running_on=["a"], annotations=REQ)
    )
    assert [n for n in one.model.names if n.startswith("d[")] == ["d[default/r,b1/r1]"]
    split = _cluster(
        m.gang("s", 3, gpus=2, min_member=1, max_member=3, running_on=["a", "b"], annotations=REQ)
    )  # already over two racks: no domain to grow in, so it cannot grow
    assert not [n for n in split.model.names if n.startswith("d[")]
    grown = {"y[default/s,3]": 1, split.x("default/s-worker-2", "c"): 1}
    assert split.violated(grown) == ["split[default/s]"]
    assert split.violated({"y[default/s,2]": 1}) == []  # as it is: left alone
    assert split.violated({"y[default/s,1]": 1}) == []  # the pod kept longest, in one rack


def test_a_required_gang_on_a_cordoned_node_keeps_its_rack() -> None:
    """Its one pod runs on cordoned node a, its rack r1's only node: no class of r1 takes new
    pods, yet the gang stays there (d for r1 still exists); it was forced to 0, so the model's
    bound cut off plans that keep it (an OPTIMAL bound below the plan)."""
    where = {"a": ("b1", "r1"), "b": ("b1", "r2")}
    nodes = [m.node(n, gpus=4, labels={BLOCK: b, RACK: r}) for n, (b, r) in where.items()]
    nodes[0]["spec"]["unschedulable"] = True
    r = m.gang("r", 2, gpus=2, min_member=1, max_member=2, running_on=["a"], annotations=REQ)
    snap = snapshot(nodes, m.kueue_topology("dc", [BLOCK, RACK, HOSTNAME]), r)
    rm = rule_model(snap, gang.add, topology.add)
    assert [n for n in rm.model.names if n.startswith("d[")] == ["d[default/r,b1/r1]"]
    assert rm.violated({"y[default/r,1]": 1, "d[default/r,b1/r1]": 1}) == []


def test_a_preferred_gang_may_use_a_node_its_level_does_not_label() -> None:
    """Node x has a block but no rack label: placement puts a preferred-rack gang's pods there
    when no rack has room, so the model must allow it too (it did not: plans that did so were
    worth more than the OPTIMAL bound); the pods counted there come from such classes."""
    nodes = [m.node("a", gpus=4, labels={BLOCK: "b1", RACK: "r1"})]
    nodes.append(m.node("x", gpus=4, labels={BLOCK: "b1"}))
    p = m.gang("p", 4, gpus=1, annotations=PREF)
    snap = snapshot(nodes, m.kueue_topology("dc", [BLOCK, RACK, HOSTNAME]), p)
    rm = rule_model(snap, gang.add, topology.add)
    sid = rm.problem.shape_of["default/p-worker-0"]
    on_x = {"y[default/p,4]": 1, rm.x("default/p-worker-0", "x"): 4, f"zo[default/p,{sid}]": 4}
    assert rm.violated(on_x) == []
    in_a = {**on_x, rm.x("default/p-worker-0", "x"): 0, rm.x("default/p-worker-0", "a"): 4}
    assert rm.violated(in_a) == [f"outside_supply[{sid},{RACK}]"]  # r1's pods, not outside
    three = {**on_x, rm.x("default/p-worker-0", "x"): 3, rm.x("default/p-worker-0", "a"): 1}
    assert rm.violated(three) == [f"outside_supply[{sid},{RACK}]"]  # one pod each, not two
    # each pod outside costs what a new rack does (2 W of topologySpread)
    assert rm.terms(on_x)["topology_spread"] == -2 * rm.problem.spread_weight * 4


def test_a_broader_domain_is_the_prefix_of_its_levels() -> None:
    rm = _cluster(m.gang("p", 2, gpus=4, annotations=PREF))
    assert topology._within(rm.problem, BLOCK, RACK, ("b2", "r3")) == ("b2",)
    assert topology._within(rm.problem, "example.com/row", RACK, ("b2", "r3")) is None
    assert topology._within(rm.problem, BLOCK, "example.com/row", ("b2", "r3")) is None


def test_not_even_one_pod_in_a_domain_the_gang_did_not_choose() -> None:
    rm = _cluster(m.gang("p", 2, gpus=2, annotations=PREF))
    sid = rm.problem.shape_of["default/p-worker-0"]
    one_pod = {"y[default/p,2]": 1, f"zt[default/p,{sid},b1/r1]": 1, "d[default/p,b1/r2]": 1}
    one_pod |= {f"zt[default/p,{sid},b1/r2]": 1, "b[default/p,b1]": 1}
    one_pod |= {rm.x("default/p-worker-0", "a"): 1, rm.x("default/p-worker-0", "b"): 1}
    assert rm.violated(one_pod) == [f"in_domain[default/p,{sid},b1/r1]"]
