"""The checker's required-topology rule: a gang that requires a level and that the plan changes
ends in one domain of it; an untouched gang split before is left alone."""

from __future__ import annotations

from solver_sched.domain.plan import BindPod, EvictJob, Plan
from solver_sched.domain.topology import HOSTNAME, Topology
from solver_sched.io import manifests as m
from solver_sched.planning.check import check
from tests.support.builders import NOW, snapshot

RACK, BLOCK = "example.com/rack", "example.com/block"
TOPO = Topology((BLOCK, RACK, HOSTNAME))
REQUIRED = {"kueue.x-k8s.io/podset-required-topology": RACK}


def _nodes() -> list[dict[str, object]]:
    """Block a: racks r1 (n1, n2) and r2 (n3); block b: rack r1 (n4), a second rack named r1."""
    where = {"n1": ("a", "r1"), "n2": ("a", "r1"), "n3": ("a", "r2"), "n4": ("b", "r1")}
    return [m.node(n, gpus=4, labels={BLOCK: b, RACK: r}) for n, (b, r) in where.items()]


def _binds(job: str, *nodes: str) -> tuple[BindPod, ...]:
    return tuple(
        BindPod(f"default/{job}-worker-{i}", n, f"default/{job}") for i, n in enumerate(nodes)
    )


def test_a_required_gang_in_one_rack_passes_and_across_racks_fails() -> None:
    snap = snapshot(_nodes(), m.gang("g", 2, gpus=4, annotations=REQUIRED))
    assert check(snap, Plan(binds=_binds("g", "n1", "n2")), NOW, topology=TOPO) == []
    bad = check(snap, Plan(binds=_binds("g", "n1", "n3")), NOW, topology=TOPO)
    assert any("requires one example.com/rack domain" in v for v in bad), bad


def test_two_racks_of_the_same_name_in_two_blocks_are_two_domains() -> None:
    snap = snapshot(_nodes(), m.gang("g", 2, gpus=4, annotations=REQUIRED))
    bad = check(snap, Plan(binds=_binds("g", "n1", "n4")), NOW, topology=TOPO)
    assert any("requires one" in v for v in bad), bad
    # without the levels, the key alone names the domain: the two r1 racks are one
    assert check(snap, Plan(binds=_binds("g", "n1", "n4")), NOW, topology=Topology()) == []


def test_a_node_without_the_label_is_in_no_domain() -> None:
    snap = snapshot(m.node("bare", gpus=4), m.gang("g", 1, gpus=4, annotations=REQUIRED))
    bad = check(snap, Plan(binds=_binds("g", "bare")), NOW, topology=TOPO)
    assert any("without it" in v for v in bad), bad


def test_preferred_gangs_may_span_domains() -> None:
    pref = {"kueue.x-k8s.io/podset-preferred-topology": RACK}
    snap = snapshot(_nodes(), m.gang("g", 2, gpus=4, annotations=pref))
    assert check(snap, Plan(binds=_binds("g", "n1", "n3")), NOW, topology=TOPO) == []


def test_growing_a_required_gang_into_another_rack_fails() -> None:
    snap = snapshot(
        _nodes(),
        m.gang("e", 2, gpus=4, min_member=1, max_member=2, running_on=["n1"], annotations=REQUIRED),
    )
    grow = (BindPod("default/e-worker-1", "n3", "default/e"),)
    assert any("requires one" in v for v in check(snap, Plan(binds=grow), NOW, topology=TOPO))
    inside = (BindPod("default/e-worker-1", "n2", "default/e"),)
    assert check(snap, Plan(binds=inside), NOW, topology=TOPO) == []


def test_a_split_gang_left_alone_passes_and_a_shrink_that_leaves_it_split_fails() -> None:
    snap = snapshot(
        _nodes(),
        m.gang(
            "s",
            3,
            gpus=2,
            min_member=1,
            max_member=3,
            running_on=["n1", "n3", "n3"],
            annotations=REQUIRED,
        ),
        m.gang("t", 1, gpus=4),
    )
    assert check(snap, Plan(), NOW, topology=TOPO) == []
    start = (BindPod("default/t-worker-0", "n4", "default/t"),)
    still_split = EvictJob("default/s", ("default/s-worker-2",), "make room")
    bad = check(snap, Plan(binds=start, evictions=(still_split,)), NOW, topology=TOPO)
    assert any("requires one" in v for v in bad), bad
    into_one = EvictJob("default/s", ("default/s-worker-1", "default/s-worker-2"), "make room")
    assert check(snap, Plan(binds=start, evictions=(into_one,)), NOW, topology=TOPO) == []


def test_the_snapshot_s_only_kueue_topology_is_the_default() -> None:
    snap = snapshot(
        _nodes(),
        m.kueue_topology("dc", [BLOCK, RACK, HOSTNAME]),
        m.gang("g", 2, gpus=4, annotations=REQUIRED),
    )
    assert any("requires one" in v for v in check(snap, Plan(binds=_binds("g", "n1", "n4")), NOW))


def test_the_violation_names_each_domain_the_gang_is_in() -> None:
    snap = snapshot(_nodes(), m.gang("g", 2, gpus=4, annotations=REQUIRED))
    bad = check(snap, Plan(binds=_binds("g", "n1", "n3")), NOW, topology=TOPO)
    assert any("its pods are in ['a/r1', 'a/r2']" in v for v in bad), bad


def test_a_pod_left_pending_does_not_hide_the_split_of_the_others() -> None:
    """An elastic gang of 3 (sizes 2-3) that requires a rack runs at 2: its first pod stays
    pending, the two bound go to two racks."""
    snap = snapshot(
        _nodes(), m.gang("e", 3, gpus=4, min_member=2, max_member=3, annotations=REQUIRED)
    )
    binds = (
        BindPod("default/e-worker-1", "n1", "default/e"),
        BindPod("default/e-worker-2", "n3", "default/e"),
    )
    bad = check(snap, Plan(binds=binds), NOW, topology=TOPO)
    assert any("requires one" in v for v in bad), bad


def test_a_volcano_tier_is_read_against_the_cycle_s_levels() -> None:
    """highestTierAllowed 1 is the narrowest level that groups nodes: the rack."""
    hard = {"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}
    snap = snapshot(_nodes(), m.gang("g", 2, gpus=4, api="scheduling.volcano.sh", group_spec=hard))
    bad = check(snap, Plan(binds=_binds("g", "n1", "n3")), NOW, topology=TOPO)
    assert any("requires one example.com/rack domain" in v for v in bad), bad
    assert check(snap, Plan(binds=_binds("g", "n1", "n2")), NOW, topology=TOPO) == []
