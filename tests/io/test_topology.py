"""Topology at the edge: Kueue Topology objects, the 1.37 PodGroup's schedulingConstraints,
Volcano's networkTopology and Kueue's pod-set annotations, each read into the gang's request, and
bad input reported with the object and field."""

from __future__ import annotations

import pytest

from solver_sched.config.schema import ConfigError, config_from_mapping
from solver_sched.domain.topology import HOSTNAME, Mode, Topology, choose
from solver_sched.io import manifests as m
from tests.support.builders import snapshot

RACK, BLOCK = "example.com/rack", "example.com/block"


def test_a_kueue_topology_is_read_and_a_bad_one_is_reported() -> None:
    snap = snapshot(
        m.kueue_topology("dc", [BLOCK, RACK, HOSTNAME]),
        m.kueue_topology("old", [RACK], version="v1beta1"),
        m.kueue_topology("bad", [HOSTNAME, RACK]),
        {"apiVersion": "other.io/v1", "kind": "Topology", "metadata": {"name": "x"}},
    )
    assert snap.topologies["dc"].levels == (BLOCK, RACK, HOSTNAME)
    assert snap.topologies["old"].levels == (RACK,)
    assert "bad" not in snap.topologies and "x" not in snap.topologies
    assert any(e.obj == "Topology bad" and e.field == "spec.levels" for e in snap.errors)


def test_the_config_levels_win_then_the_named_or_only_kueue_topology() -> None:
    dc = Topology((RACK,), "Topology dc")
    assert choose([BLOCK], None, {"dc": dc})[0].levels == (BLOCK,)
    assert choose([], None, {"dc": dc}) == (dc, None)
    two = {"dc": dc, "lab": Topology((BLOCK,), "Topology lab")}
    off, note = choose([], None, two)
    assert not off and note is not None and "kueueTopology" in note
    assert choose([], "lab", two)[0].levels == (BLOCK,)
    assert "no Topology named" in (choose([], "nope", two)[1] or "")


def test_the_1_37_podgroup_constraint_is_required() -> None:
    constraint = {"schedulingConstraints": {"topology": [{"key": RACK}]}}
    snap = snapshot(m.gang("g", 2, api="scheduling.k8s.io", group_spec=constraint))
    req = snap.jobs["default/g"].topology
    assert req is not None and req.mode is Mode.REQUIRED and req.key == RACK
    assert "spec.schedulingConstraints.topology" in req.source


def test_two_1_37_constraints_make_the_gang_invalid() -> None:
    constraint = {"schedulingConstraints": {"topology": [{"key": RACK}, {"key": BLOCK}]}}
    snap = snapshot(m.gang("g", 2, api="scheduling.k8s.io", group_spec=constraint))
    assert snap.jobs["default/g"].invalid
    assert any(e.field == "spec.schedulingConstraints.topology" for e in snap.errors)


def test_volcano_hard_and_soft_map_to_tiers() -> None:
    hard = {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}
    soft = {"networkTopology": {"mode": "soft"}}
    snap = snapshot(
        m.gang("h", 2, api="scheduling.volcano.sh", group_spec=hard),
        m.gang("s", 2, api="scheduling.volcano.sh", group_spec=soft),
    )
    topo = Topology((BLOCK, RACK, HOSTNAME))
    h, s = snap.jobs["default/h"].topology, snap.jobs["default/s"].topology
    assert h is not None and h.mode is Mode.REQUIRED and h.level(topo) == BLOCK
    assert s is not None and s.mode is Mode.PREFERRED and s.level(topo) == RACK
    assert h.level(Topology((RACK,))) is None  # above every level: the whole cluster


def test_volcano_bad_mode_and_tier_are_reported() -> None:
    snap = snapshot(
        m.gang("a", 1, api="scheduling.volcano.sh", group_spec={"networkTopology": {"mode": "x"}}),
        m.gang(
            "b",
            1,
            api="scheduling.volcano.sh",
            group_spec={"networkTopology": {"mode": "hard", "highestTierAllowed": 0}},
        ),
    )
    assert snap.jobs["default/a"].invalid and snap.jobs["default/b"].invalid
    fields = {e.field for e in snap.errors}
    assert "spec.networkTopology.mode" in fields
    assert "spec.networkTopology.highestTierAllowed" in fields


def test_kueue_annotations_on_the_pods() -> None:
    req = {"kueue.x-k8s.io/podset-required-topology": RACK}
    pref = {"kueue.x-k8s.io/podset-preferred-topology": BLOCK}
    snap = snapshot(m.gang("r", 2, annotations=req), m.gang("p", 2, annotations=pref))
    r, p = snap.jobs["default/r"].topology, snap.jobs["default/p"].topology
    assert r is not None and (r.mode, r.key) == (Mode.REQUIRED, RACK)
    assert p is not None and (p.mode, p.key) == (Mode.PREFERRED, BLOCK)


def test_pods_of_one_gang_asking_for_different_levels_make_it_invalid() -> None:
    objs = m.gang("g", 2)
    objs[1]["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": RACK}
    objs[2]["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": BLOCK}
    snap = snapshot(objs)
    assert snap.jobs["default/g"].invalid and "ask for" in snap.jobs["default/g"].invalid


def test_an_empty_annotation_is_reported() -> None:
    snap = snapshot(m.gang("g", 1, annotations={"kueue.x-k8s.io/podset-required-topology": " "}))
    assert snap.jobs["default/g"].invalid
    assert any("podset-required-topology" in e.field for e in snap.errors)


def test_domains_are_nested_and_a_missing_label_is_no_domain() -> None:
    topo = Topology((BLOCK, RACK, HOSTNAME))
    labels = {BLOCK: "a", RACK: "r1", HOSTNAME: "n1"}
    assert topo.domain_of(labels, RACK) == ("a", "r1")
    assert topo.domain_of({BLOCK: "b", RACK: "r1"}, RACK) == ("b", "r1")  # another rack r1
    assert topo.domain_of({RACK: "r1"}, RACK) is None
    assert topo.domain_of({"zone": "z"}, "zone") == ("z",)  # a key that is no level
    assert topo.broader(RACK) == (BLOCK,) and topo.tiers() == (RACK, BLOCK)


def test_config_levels_are_validated_with_the_field_named() -> None:
    ok = config_from_mapping({"topology": {"levels": [BLOCK, RACK, HOSTNAME]}}, "cm")
    assert ok.topology.levels == (BLOCK, RACK, HOSTNAME)
    for bad in ([RACK, RACK], [HOSTNAME, RACK], [""]):
        with pytest.raises(ConfigError, match=r"cm: topology\.levels"):
            config_from_mapping({"topology": {"levels": bad}}, "cm")
    with pytest.raises(ConfigError, match="fragmentation"):
        config_from_mapping({"weights": {"fragmentation": -1}}, "cm")
