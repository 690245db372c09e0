"""The fleet snapshot: hub jobs as gangs over the members' nodes, planned by the unchanged core
and checked by the independent checker."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.io.fleet_hub import (
    ANN_CLUSTER,
    ANN_FAILED,
    ANN_GENERATION,
    ANN_NODES,
    LABEL_GENERATION,
    LABEL_UID,
)
from solver_sched.io.fleet_members import MemberState
from solver_sched.io.fleet_plan import read_plan
from solver_sched.io.fleet_snapshot import FleetSnapshot, build_fleet, copy_name
from solver_sched.planning.check import check
from tests.fleet.objects import node, pod, policy, priority_class, pytorchjob, quota_tree

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def plan(
    hub: list[dict[str, Any]], *members: MemberState
) -> tuple[FleetSnapshot, CycleResult, dict[str, str | None], dict[str, str]]:
    fleet = build_fleet(hub, list(members))
    config = SchedulerConfig()
    result = run_cycle(fleet.snapshot, config, NOW, "cpsat")
    assert result.violations == []
    assert check(fleet.snapshot, result.plan, NOW, True, True) == []
    reading = read_plan(fleet, result.plan.binds, result.plan.jobs, result.plan.evictions)
    where = {p["job"]: p["cluster"] for p in reading.placements}
    why = {p["job"]: p["reason"] for p in reading.placements}
    return fleet, result, where, why


def placed(job: dict[str, Any], cluster: str, nodes: dict[str, str], gen: int = 1) -> None:
    job["metadata"]["annotations"] = {
        ANN_CLUSTER: cluster,
        ANN_GENERATION: str(gen),
        ANN_NODES: json.dumps(nodes),
    }


def test_every_pod_must_fit_a_real_node() -> None:
    """12 free GPUs in sum on 4 nodes of 3 do not hold 2 pods of 4: the job goes to the member
    with one 8-GPU node (summed free resources would pick the first)."""
    crowded = [node(f"n{i}", gpus=4) for i in range(4)]
    crowded += [pod(f"x{i}", f"n{i}", gpus=1) for i in range(4)]
    hub = [policy(), pytorchjob("fit", masters=0, workers=2, gpus=4)]
    fleet, result, where, _ = plan(hub, MemberState("m1", crowded), MemberState("m2", [node("b")]))
    assert where == {"default/fit": "m2"}
    assert {fleet.node_member[b.node] for b in result.plan.binds} == {("m2", "b")}


def test_inter_pod_terms_are_left_to_the_member_and_host_ports_are_held() -> None:
    """The member's scheduler applies a template's pod (anti-)affinity and spread constraints
    (the hub does not model them, and held such jobs once pods learned to); a host port keeps
    two workers off one node in the hub's fit too: m1's one node cannot take both."""
    hub = [policy(), pytorchjob("terms", masters=0, workers=2), pytorchjob("ports", masters=0)]
    spec = hub[1]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    term = {"labelSelector": {}, "topologyKey": "topology.kubernetes.io/zone"}
    spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "x"}]
    spec = hub[2]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["hostNetwork"] = True
    spec["containers"][0]["ports"] = [{"containerPort": 23456}]
    one = MemberState("m1", [node("a")])
    two = MemberState("m2", [node("b"), node("c")])
    fleet, _, where, _ = plan(hub, one, two)
    assert fleet.snapshot.errors == ()
    assert where["default/ports"] == "m2"
    assert where["default/terms"] in ("m1", "m2")


def test_no_member_fits_the_job_keeps_it_queued_with_a_reason() -> None:
    hub = [policy(), pytorchjob("huge", masters=0, workers=2, gpus=16)]
    _, _, where, why = plan(hub, MemberState("m1", [node("a")]))
    assert where == {"default/huge": None}
    assert "no node can hold" in why["default/huge"]


def test_a_burst_never_exceeds_max_jobs_or_quota_in_one_cycle() -> None:
    hub = [policy(), quota_tree(max_jobs=3, gpus=5)]
    hub += [pytorchjob(f"j{i:03d}", masters=1, workers=1, gpus=1) for i in range(100)]
    members = [MemberState(f"m{k}", [node(f"n{i}") for i in range(8)]) for k in range(2)]
    _, _, where, why = plan(hub, *members)
    out = [j for j, c in where.items() if c]
    assert len(out) == 2  # 3 jobs allowed, but 3 x 2 GPUs > 5
    assert sum("kube-queue/max-jobs" in r or "nvidia.com/gpu max 5" in r for r in why.values())


def test_placed_jobs_count_where_they_run_even_before_their_pods_exist() -> None:
    """A job placed in m1 whose copy has no pods yet holds its reserved nodes and its quota:
    the next job neither takes that room nor a second max-jobs slot."""
    first = pytorchjob("first", masters=0, workers=2, gpus=8)
    placed(first, "m1", {"worker-0": "a", "worker-1": "b"})
    hub = [policy(), first, pytorchjob("second", masters=0, workers=1, gpus=8)]
    m1 = MemberState("m1", [node("a"), node("b")])
    _, _, where, why = plan(hub, m1)
    assert where == {"default/first": "m1", "default/second": None}
    assert "no node can hold" in why["default/second"] or "needs" in why["default/second"]
    _, _, where, why = plan([*hub, quota_tree(max_jobs=1)], m1, MemberState("m2", [node("c")]))
    assert where["default/second"] is None
    assert "kube-queue/max-jobs 1" in why["default/second"]


def test_a_placed_job_in_an_unreachable_member_still_counts_for_quota() -> None:
    first = pytorchjob("first", masters=0, workers=1, gpus=2)
    placed(first, "gone", {"worker-0": "a"})
    hub = [policy(), quota_tree(gpus=3), first, pytorchjob("next", masters=0, workers=1, gpus=2)]
    fleet, _, where, why = plan(
        hub, MemberState("gone", reachable=False), MemberState("m2", [node("z")])
    )
    assert fleet.unreachable == ("gone",)
    assert where["default/next"] is None
    assert "nvidia.com/gpu max 3" in why["default/next"]


def test_priority_chooses_which_job_goes_out() -> None:
    hub = [policy(), priority_class("high", 1000), priority_class("low", 0)]
    hub.append(
        pytorchjob(
            "low",
            masters=0,
            workers=1,
            gpus=8,
            priority_class="low",
            created="2026-01-01T00:00:00Z",
        )
    )
    hub.append(pytorchjob("high", masters=0, workers=1, gpus=8, priority_class="high"))
    _, _, where, _ = plan(hub, MemberState("m1", [node("a")]))
    assert where == {"default/high": "m1", "default/low": None}


def test_cluster_affinity_and_members_failed_over_from_are_avoided() -> None:
    job = pytorchjob("j", masters=0, workers=1, gpus=1)
    job["metadata"]["annotations"] = {ANN_FAILED: "m1"}
    members = [MemberState(m, [node("a")]) for m in ("m1", "m2", "m3")]
    _, _, where, _ = plan([policy(clusters=["m1", "m2"]), job], *members)
    assert where == {"default/j": "m2"}


def test_a_policy_with_an_unknown_scheduling_type_is_named_and_its_job_not_placed() -> None:
    hub = [policy(custom="Spread"), pytorchjob("j", masters=0, workers=1)]
    fleet, _, where, why = plan(hub, MemberState("m1", [node("a")]))
    assert where == {"default/j": None}
    field = "spec.placement.replicaScheduling.customSchedulingType"
    assert [(e.obj, e.field) for e in fleet.snapshot.errors] == [
        ("PropagationPolicy default/gang", field)
    ]
    assert field in why["default/j"]


def test_bad_purge_mode_and_karmada_policies() -> None:
    bad = policy(api="policy.karmada.io/v1alpha1", purge="Sometimes")
    fleet = build_fleet([bad, pytorchjob("j")], [MemberState("m1", [node("a")])])
    assert [e.field for e in fleet.errors] == ["spec.failover.application.purgeMode"]
    good = policy(api="policy.karmada.io/v1alpha1")
    _, _, where, _ = plan([good, pytorchjob("j")], MemberState("m1", [node("a")]))
    assert where == {"default/j": "m1"}


def test_the_most_specific_policy_wins() -> None:
    by_name = policy("by-name", job="j", custom="Spread")
    by_kind = policy("by-kind")
    fleet = build_fleet([by_kind, by_name, pytorchjob("j"), pytorchjob("k")], [])
    assert fleet.jobs["default/j"].policy and fleet.jobs["default/j"].policy.invalid
    assert fleet.jobs["default/k"].policy and not fleet.jobs["default/k"].policy.invalid


@pytest.mark.parametrize(
    ("expression", "selects"),
    [
        ({"key": "team", "operator": "In", "values": ["x"]}, {"x"}),
        ({"key": "team", "operator": "NotIn", "values": ["x"]}, {"y", "none"}),
        ({"key": "team", "operator": "Exists"}, {"x", "y"}),
        ({"key": "team", "operator": "DoesNotExist"}, {"none"}),
    ],
)
def test_a_label_selectors_expressions_select_as_kubernetes_does(
    expression: dict[str, Any], selects: set[str]
) -> None:
    """matchExpressions were read as no requirement: the policy took every PyTorchJob."""
    p = policy()
    p["spec"]["resourceSelectors"][0]["labelSelector"] = {"matchExpressions": [expression]}
    jobs = []
    for team in ("x", "y", "none"):
        j = pytorchjob(team, masters=0, workers=1)
        j["metadata"]["labels"] = {"team": team} if team != "none" else {}
        jobs.append(j)
    fleet = build_fleet([p, *jobs], [])
    assert {k.removeprefix("default/") for k in fleet.jobs} == selects


def test_a_selector_for_another_namespace_selects_nothing_here() -> None:
    p = policy()
    p["spec"]["resourceSelectors"][0]["namespace"] = "team-b"
    assert build_fleet([p, pytorchjob("j")], []).jobs == {}


@pytest.mark.parametrize(
    ("placement", "field"),
    [
        (
            {"clusterAffinity": {"labelSelector": {"matchLabels": {"region": "eu"}}}},
            "labelSelector",
        ),
        ({"clusterAffinity": {"fieldSelector": {"matchExpressions": []}}}, "fieldSelector"),
        ({"clusterAffinities": [{"affinityName": "a", "clusterNames": ["m2"]}]}, "Affinities"),
    ],
)
def test_cluster_affinity_the_fleet_cannot_honour_holds_the_job(
    placement: dict[str, Any], field: str
) -> None:
    """Silently dropped, these sent the job to any member, one the policy may exclude."""
    p = policy()
    p["spec"]["placement"].update(placement)
    hub = [p, pytorchjob("j", masters=0, workers=1)]
    _, _, where, why = plan(hub, MemberState("m1", [node("a")]))
    assert where == {"default/j": None}
    assert field in why["default/j"] and "not supported" in why["default/j"]


def test_a_policy_that_fails_validation_still_holds_the_jobs_it_selects() -> None:
    """A narrow policy (this job, member m2) with a bad priority is reported; the catch-all one
    (member m1) must not place the job it was not written for."""
    narrow = policy("narrow", job="j", clusters=["m2"])
    narrow["spec"]["priority"] = "high"
    hub = [narrow, policy("wide", clusters=["m1"]), pytorchjob("j", masters=0, workers=1)]
    fleet, _, where, why = plan(hub, MemberState("m1", [node("a")]), MemberState("m2", [node("b")]))
    assert where == {"default/j": None}
    assert why["default/j"].startswith("PropagationPolicy default/narrow: spec.priority: ")
    assert [e.field for e in fleet.errors if "narrow" in e.obj] == ["spec.priority"]


def test_jobs_without_a_policy_are_left_alone() -> None:
    fleet = build_fleet([pytorchjob("j")], [MemberState("m1", [node("a")])])
    assert fleet.jobs == {} and fleet.snapshot.jobs == {}


def test_jobs_not_suspended_for_scheduling_skip_the_queue() -> None:
    hub = [policy(queued=False), quota_tree(max_jobs=0), pytorchjob("j", masters=0, workers=1)]
    _, _, where, _ = plan(hub, MemberState("m1", [node("a")]))
    assert where == {"default/j": "m1"}
    _, _, where, _ = plan([policy(), *hub[1:]], MemberState("m1", [node("a")]))
    assert where == {"default/j": None}


def test_a_bad_replica_template_names_the_hub_field() -> None:
    job = pytorchjob("j", masters=0, workers=1)
    container = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["cpu"] = "lots"
    fleet, _, where, _ = plan([policy(), job], MemberState("m1", [node("a")]))
    assert where == {"default/j": None}
    assert any(
        e.obj == "PyTorchJob default/j"
        and e.field.startswith("spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]")
        for e in fleet.snapshot.errors
    )


def _copy(job: dict[str, Any], gen: int) -> dict[str, Any]:
    fleet = build_fleet([policy(), job], [])
    hub = fleet.jobs["default/" + job["metadata"]["name"]]
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": copy_name(hub, gen),
            "namespace": "default",
            "labels": {LABEL_UID: hub.uid, LABEL_GENERATION: str(gen)},
        },
        "spec": {},
    }


def test_a_stale_copy_is_found_and_its_member_takes_nothing_until_it_is_gone() -> None:
    job = pytorchjob("j", masters=0, workers=1, gpus=1)
    placed(job, "m2", {"worker-0": "a"}, gen=2)
    stale = _copy(job, 1)
    other = pytorchjob("k", masters=0, workers=1, gpus=1)
    m1 = MemberState("m1", [node("a"), stale])
    fleet, _, where, _ = plan([policy(), job, other], m1, MemberState("m2", [node("a")]))
    assert [c.name for c in fleet.stale["m1"]] == [stale["metadata"]["name"]]
    assert where["default/k"] == "m2"  # m1 is blocked while its stale copy exists
    fleet, _, where, _ = plan([policy(), job, other], MemberState("m1", [node("a")]))
    assert fleet.stale["m1"] == ()


@pytest.mark.parametrize("replicas", ["3", 3.0, True, 2**31])
def test_hub_job_integers_are_int32_as_the_api_server_has_them(replicas: object) -> None:
    """Strings, floats and booleans were coerced; beyond int32, built one pod per replica."""
    j = pytorchjob("j", masters=0, workers=1)
    j["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = replicas
    fleet = build_fleet([policy(), j], [])
    assert (fleet.jobs["default/j"].invalid or "").endswith("could not be read (see its error)")
    assert [e.field for e in fleet.errors] == ["spec.pytorchReplicaSpecs.Worker.replicas"]


def test_a_job_larger_than_any_member_is_held_without_building_its_pods() -> None:
    """2^31 - 1 replicas are valid int32: built one pod each, the fleet's cycle never ended."""
    big = pytorchjob("big", masters=0, workers=1)
    big["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2**31 - 1
    hub = [policy(), big, pytorchjob("small", masters=0, workers=1)]
    fleet, _, where, why = plan(hub, MemberState("m1", [node("a")]))
    assert len(fleet.snapshot.pods) == 1
    assert where == {"default/big": None, "default/small": "m1"}
    assert "2147483647 pods: more than any member holds" in why["default/big"]


def test_a_policy_switch_that_is_not_a_boolean_is_an_error() -> None:
    """suspension.scheduling: "off" read as true took the job out of the quota tree."""
    p = policy()
    p["spec"]["suspension"] = {"scheduling": "off"}
    fleet = build_fleet([p, pytorchjob("j")], [])
    assert [e.field for e in fleet.errors] == ["spec.suspension.scheduling"]
    assert fleet.jobs["default/j"].invalid


def test_the_copy_of_a_hub_job_that_cannot_be_read_is_kept() -> None:
    """Its hub job still exists: deleting the copy would lose the work it runs."""
    job = pytorchjob("j", masters=0, workers=1, gpus=1)
    placed(job, "m1", {"worker-0": "a"})
    copy = _copy(job, 1)
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "one"
    fleet = build_fleet([policy(), job], [MemberState("m1", [node("a"), copy])])
    assert fleet.stale["m1"] == ()
    assert [e.field for e in fleet.errors] == ["spec.pytorchReplicaSpecs.Worker.replicas"]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({"kind": "Node", "metadata": {"name": "z"}, "spec": "x"}, id="node-spec"),
        pytest.param({"kind": "Node", "metadata": ["z"]}, id="node-metadata"),
        pytest.param({"kind": "Node", "status": {}}, id="node-nameless"),
        pytest.param({"kind": "Node", "metadata": {"name": "z", "labels": ["a"]}}, id="labels"),
        pytest.param({"kind": "Pod", "metadata": {"name": "p"}, "spec": ["x"]}, id="pod-spec"),
        pytest.param(
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "a"}, "status": "Up"},
            id="pod-status",
        ),
        pytest.param({"kind": "PyTorchJob", "metadata": {"name": "j", "labels": 3}}, id="job"),
        pytest.param("garbage", id="not-an-object"),
    ],
)
def test_a_member_object_of_the_wrong_shape_is_reported_and_the_rest_placed(obj: Any) -> None:
    """What-if files meet no API server: each of these raised out of the fleet's cycle."""
    hub = [policy(), pytorchjob("ok", masters=0, workers=1)]
    fleet, _, where, _ = plan(hub, MemberState("m1", [node("a"), node("b"), obj]))
    assert len(fleet.errors) == 1 and fleet.errors[0].obj.startswith(
        ("Node m1/", "Pod m1/", "PyTorchJob m1/", "object m1/")
    )
    assert where == {"default/ok": "m1"}
    assert {n for n in fleet.snapshot.nodes} == {"m1/a", "m1/b"}


def test_a_member_pod_that_cannot_be_read_keeps_new_pods_off_its_node() -> None:
    """Its requests are unknown, so is its node's room: the job goes to the other node."""
    bad = pod("x", "a", gpus=8)
    bad["status"] = "Running"
    hub = [policy(), pytorchjob("ok", masters=0, workers=1, gpus=8)]
    fleet, result, where, _ = plan(hub, MemberState("m1", [node("a"), node("b"), bad]))
    assert where == {"default/ok": "m1"}
    assert {fleet.node_member[b.node] for b in result.plan.binds} == {("m1", "b")}


@pytest.mark.parametrize("edit", ["template-spec", "conditions"])
def test_a_hub_job_of_the_wrong_shape_is_reported_and_the_rest_placed(edit: str) -> None:
    bad = pytorchjob("bad", masters=0, workers=1)
    if edit == "template-spec":
        bad["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"] = "x"
    else:
        bad["status"] = {"conditions": 5}
    hub = [policy(), bad, pytorchjob("ok", masters=0, workers=1)]
    _, _, where, _ = plan(hub, MemberState("m1", [node("a"), node("b")]))
    assert where["default/ok"] == "m1"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ("master-only elastic", "spec.pytorchReplicaSpecs.Worker"),
        ("no containers", "spec.pytorchReplicaSpecs.Worker.template.spec.containers"),
        ("min above max", "spec.elasticPolicy"),
    ],
)
def test_a_job_the_operator_could_not_run_as_placed_is_held_naming_the_field(
    edit: str, field: str
) -> None:
    """A Master-only elastic job went out with Worker pods invented (requesting nothing) that
    its copy would not have; a template without containers went out; min > max was read as
    a size that is no power of two."""
    j = pytorchjob("j", masters=1, workers=2)
    if edit == "master-only elastic":
        del j["spec"]["pytorchReplicaSpecs"]["Worker"]
        j["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 3}
    elif edit == "no containers":
        j["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"] = {}
    else:
        j["spec"]["elasticPolicy"] = {"minReplicas": 6, "maxReplicas": 2}
    hub = [policy(), j, pytorchjob("ok", masters=0, workers=1)]
    fleet, _, where, why = plan(hub, MemberState("m1", [node("a"), node("b")]))
    assert [e.field for e in fleet.errors] == [field]
    assert where == {"default/j": None, "default/ok": "m1"}
    assert field in why["default/j"]


def test_a_copy_of_a_deleted_hub_job_is_stale() -> None:
    job = pytorchjob("j", masters=0, workers=1, gpus=1)
    fleet = build_fleet([policy()], [MemberState("m1", [_copy(job, 1)])])
    assert len(fleet.stale["m1"]) == 1


def test_pods_of_the_current_copy_join_the_hub_job() -> None:
    job = pytorchjob("j", masters=1, workers=1, gpus=2)
    placed(job, "m1", {"master-0": "a", "worker-0": "a"})
    c = _copy(job, 1)
    name = c["metadata"]["name"]
    running = pod(f"{name}-worker-0", "b", gpus=2, **{"training.kubeflow.org/job-name": name})
    fleet = build_fleet([policy(), job], [MemberState("m1", [node("a"), node("b"), c, running])])
    gang = fleet.snapshot.jobs["default/j"]
    pods = [fleet.snapshot.pods[p] for p in gang.pods]
    assert sorted(p.node_name or "" for p in pods) == ["m1/a", "m1/b"]  # real + reserved
    assert fleet.snapshot.free_per_node["m1/b"]["nvidia.com/gpu"] == 6
    assert fleet.snapshot.free_per_node["m1/a"]["nvidia.com/gpu"] == 6
    assert fleet.snapshot.errors == ()  # the real pod once (it was "given twice")


def test_a_hub_job_named_like_a_copy_in_a_member_takes_none_of_its_pods() -> None:
    """Dots are legal in names: a queued job "m1.<a's copy>" derives a pod named as a's copy pod
    would be in m1 with "." between them. a's pod stays, its node stays full, c waits."""
    a = pytorchjob("a", masters=0, workers=1, gpus=8)
    placed(a, "m1", {"worker-0": "n1"})
    c = _copy(a, 1)
    name = c["metadata"]["name"]
    running = pod(f"{name}-worker-0", "n1", gpus=8, **{"training.kubeflow.org/job-name": name})
    hub = [policy(), a, pytorchjob(f"m1.{name}", masters=0, workers=1, gpus=100)]
    hub.append(pytorchjob("c", masters=0, workers=1, gpus=8))
    fleet, _, where, _ = plan(hub, MemberState("m1", [node("n1"), c, running]))
    assert fleet.snapshot.errors == ()
    assert fleet.snapshot.free_per_node["m1/n1"]["nvidia.com/gpu"] == 0
    assert where["default/c"] is None


@pytest.mark.parametrize("breaks", ["nothing", "policy", "placement", "job"])
def test_a_running_job_holds_its_queue_slot_even_when_the_fleet_cannot_judge_it(
    breaks: str,
) -> None:
    """Job a runs in m1, every pod bound there (by the member's default scheduler), and holds
    its leaf's one job slot; then its policy, or its placement annotation, may be edited into
    something unreadable. Its copy stays, and so does its slot: b waits (with a broken policy
    or placement, b was placed beside it: 2 jobs under max-jobs 1)."""
    a = pytorchjob("a", masters=0, workers=1, gpus=4)
    placed(a, "m1", {"worker-0": "n1"})
    c = _copy(a, 1)
    name = c["metadata"]["name"]
    running = pod(f"{name}-worker-0", "n1", gpus=4, **{"training.kubeflow.org/job-name": name})
    pa = policy("pa", job="a", custom="Gangg" if breaks == "policy" else "Gang")
    if breaks == "placement":
        a["metadata"]["annotations"][ANN_NODES] = "{not json"
    if breaks == "job":  # fails validation: held by its metadata
        a["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = "1"
    hub = [pa, policy("pb", job="b"), quota_tree(max_jobs=1, gpus=16), a]
    hub.append(pytorchjob("b", masters=0, workers=1, gpus=4))
    fleet, _, where, why = plan(hub, MemberState("m1", [node("n1"), node("n2"), c, running]))
    assert fleet.stale["m1"] == ()  # the copy is kept
    assert bool(fleet.snapshot.jobs["default/a"].invalid) == (breaks != "nothing")
    assert where["default/b"] is None
    assert "kube-queue/max-jobs 1, running 1" in why["default/b"]


def test_a_placed_job_that_turns_invalid_keeps_the_nodes_reserved_for_its_unbound_pods() -> None:
    """worker-0 runs on n1, worker-1 is reserved on n2 (the operator is about to create it);
    then the policy breaks. n2 stays taken: b was bound there."""
    a = pytorchjob("a", masters=0, workers=2, gpus=8)
    placed(a, "m1", {"worker-0": "n1", "worker-1": "n2"})
    c = _copy(a, 1)
    name = c["metadata"]["name"]
    running = pod(f"{name}-worker-0", "n1", gpus=8, **{"training.kubeflow.org/job-name": name})
    hub = [policy("pa", job="a", custom="Gangg"), policy("pb", job="b"), a]
    hub.append(pytorchjob("b", masters=0, workers=1, gpus=8))
    fleet, _, where, _ = plan(hub, MemberState("m1", [node("n1"), node("n2"), c, running]))
    assert fleet.snapshot.free_per_node["m1/n2"]["nvidia.com/gpu"] == 0
    assert where["default/b"] is None


def test_a_kept_cache_gives_the_same_snapshot_and_sees_every_change() -> None:
    """The controller keeps one FleetCache across cycles: a build from it equals a fresh build,
    a changed object (a new dict, as a watch delivers it) is read again, a changed policy
    re-derives the queued pods, and objects gone are forgotten."""
    from solver_sched.io.fleet_members import FleetCache

    m1 = [node("a", gpus=8), node("b", gpus=8), pod("other", "a", gpus=3)]
    hub = [policy(), pytorchjob("j", masters=1, workers=1, gpus=2)]
    cache = FleetCache()

    def build(hub_objects: list[dict[str, Any]], members: list[MemberState]) -> FleetSnapshot:
        kept = build_fleet(hub_objects, members, cache=cache)
        fresh = build_fleet(hub_objects, members)
        assert kept.snapshot.nodes == fresh.snapshot.nodes
        assert kept.snapshot.pods == fresh.snapshot.pods
        assert kept.snapshot.jobs == fresh.snapshot.jobs
        assert kept.synthetic == fresh.synthetic
        return kept

    first = build(hub, [MemberState("m1", m1)])
    again = build(hub, [MemberState("m1", m1)])
    assert again.snapshot.nodes["m1/a"] is first.snapshot.nodes["m1/a"]  # not parsed again
    bigger = node("a", gpus=16)
    second = build(hub, [MemberState("m1", [bigger, *m1[1:]])])
    assert second.snapshot.nodes["m1/a"].allocatable["nvidia.com/gpu"] == 16
    pinned = policy(clusters=["m2"])
    third = build([pinned, hub[1]], [MemberState("m1", m1)])
    pod_affinity = third.snapshot.pods["default/j-master-0"].constraints
    assert pod_affinity != first.snapshot.pods["default/j-master-0"].constraints
    build(hub, [])
    assert all(key[1] != "m1" for key in cache.entries if key[0] in ("node", "pod"))


def _reading(hub: list[dict[str, Any]], *members: MemberState, **settings: Any):
    from solver_sched.config.schema import Settings

    fleet = build_fleet(hub, list(members))
    config = SchedulerConfig(settings=Settings(**settings))
    result = run_cycle(fleet.snapshot, config, NOW, "cpsat")
    s = config.settings
    assert check(fleet.snapshot, result.plan, NOW, s.priority_preemption, s.queue_reclaim) == []
    p = result.plan
    return read_plan(fleet, p.binds, p.jobs, p.evictions)


def _low_placed_high_queued(high_ns: str = "default") -> list[dict[str, Any]]:
    low = pytorchjob("low", masters=1, workers=1, gpus=4, priority_class="low")
    placed(low, "m1", {"master-0": "a", "worker-0": "a"})
    high = pytorchjob("high", high_ns, masters=1, workers=1, gpus=4, priority_class="high")
    return [
        policy(),
        policy(namespace="team-b"),
        priority_class("high", 1000),
        priority_class("low", 0),
        low,
        high,
    ]


def test_a_high_priority_job_that_fits_nowhere_withdraws_a_lower_one_of_its_queue() -> None:
    reading = _reading(_low_placed_high_queued(), MemberState("m1", [node("a")]))
    assert set(reading.withdrawals) == {"default/low"}
    assert reading.dispatches["default/high"].cluster == "m1"
    rows = {p["job"]: p["reason"] for p in reading.placements}
    assert rows["default/low"] == "withdrawing (preempted)"


def test_priority_alone_never_withdraws_across_queues_nor_with_preemption_off() -> None:
    tree = quota_tree()
    tree["spec"]["root"]["children"].append(
        {"name": "team-b", "namespaces": ["team-b"], "max": {}, "min": {}}
    )
    across = _reading([*_low_placed_high_queued("team-b"), tree], MemberState("m1", [node("a")]))
    assert across.withdrawals == {} and across.dispatches == {}
    off = _reading(
        _low_placed_high_queued(), MemberState("m1", [node("a")]), priority_preemption=False
    )
    assert off.withdrawals == {} and off.dispatches == {}


def test_a_queue_under_its_guarantee_reclaims_from_a_borrower_across_queues() -> None:
    """team-b is guaranteed 8 GPUs and uses none; default (no guarantee) borrows them with a
    placed job. team-b's job, of a LOWER priority, reclaims the room: the borrower is withdrawn
    and team-b's job placed. With queueReclaim off the borrower keeps running."""
    borrower = pytorchjob("borrower", masters=1, workers=1, gpus=4, priority_class="high")
    placed(borrower, "m1", {"master-0": "a", "worker-0": "a"})
    owner = pytorchjob("owner", "team-b", masters=1, workers=1, gpus=4, priority_class="low")
    hub = [policy(), policy(namespace="team-b"), priority_class("high", 1000)]
    hub += [priority_class("low", 0), borrower, owner]
    tree = quota_tree()
    tree["spec"]["root"]["children"].append(
        {"name": "team-b", "namespaces": ["team-b"], "max": {}, "min": {"nvidia.com/gpu": 8}}
    )
    members = MemberState("m1", [node("a")])
    reclaim = _reading([*hub, tree], members)
    assert set(reclaim.withdrawals) == {"default/borrower"}
    assert reclaim.dispatches["team-b/owner"].cluster == "m1"
    off = _reading([*hub, tree], members, queue_reclaim=False)
    assert off.withdrawals == {} and off.dispatches == {}


def test_a_job_being_withdrawn_is_not_withdrawn_twice_and_frees_its_room() -> None:
    """Its copy is being deleted: the plan may count on its room (it is going), and places the
    next job there, with no second withdrawal."""
    from solver_sched.io.fleet_hub import ANN_FAILOVER, PREEMPTED

    hub = _low_placed_high_queued()
    hub[4]["metadata"]["annotations"][ANN_FAILOVER] = PREEMPTED
    reading = _reading(hub, MemberState("m1", [node("a")]))
    assert reading.withdrawals == {}
    assert reading.dispatches["default/high"].cluster == "m1"


def _elastic(name: str, lo: int, hi: int, **kw: Any) -> dict[str, Any]:
    job = pytorchjob(name, masters=1, workers=hi, gpus=1, **kw)
    job["spec"]["elasticPolicy"] = {"minReplicas": lo, "maxReplicas": hi}
    return job


def test_an_elastic_hub_job_goes_out_at_a_power_of_two_size() -> None:
    """Master + 1..6 workers (2..7 pods), 5 GPUs free: placed at 4 pods (master + 3 workers),
    the largest power of two that fits, not held back for 7 and not at 5."""
    m1 = MemberState("m1", [node("a", gpus=5)])
    reading = _reading([policy(), _elastic("e", 1, 6)], m1)
    d = reading.dispatches["default/e"]
    assert d.replicas == (("Master", 1), ("Worker", 3))
    assert sorted(d.nodes) == ["master-0", "worker-0", "worker-1", "worker-2"]
    any_size = _elastic("any", 1, 6, annotations={"solver-sched.io/size-policy": "any"})
    assert _reading([policy(), any_size], m1).dispatches["default/any"].replicas == (
        ("Master", 1),
        ("Worker", 4),
    )
    too_small = MemberState("m1", [node("a", gpus=1)])
    assert _reading([policy(), _elastic("e", 1, 6)], too_small).dispatches == {}


def test_a_placed_elastic_job_keeps_the_size_it_was_placed_at() -> None:
    """Its replicas are those its reserved nodes name: the copy is made at that size and the
    binding result says so."""
    from solver_sched.fleet.dispatch import copy_body

    job = _elastic("e", 1, 6)
    placed(job, "m1", {"master-0": "a", "worker-0": "a", "worker-1": "a", "worker-2": "a"})
    fleet = build_fleet([policy(), job], [MemberState("m1", [node("a")])])
    hub = fleet.jobs["default/e"]
    assert hub.replicas == (("Master", 1), ("Worker", 3)) and hub.elastic is None
    assert fleet.snapshot.jobs["default/e"].min_pods == fleet.snapshot.jobs["default/e"].max_pods
    body = copy_body(hub, 1)
    assert body["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
    assert body["spec"]["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 6}
    assert hub.result_text("m1") == "{m1:0,[{master 1} {worker 3}]}"
