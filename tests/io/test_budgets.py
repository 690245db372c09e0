"""PodDisruptionBudgets -> Job.disruptions: how many running pods the Eviction API lets a job
lose at once, whichever pods a scale-in takes."""

from __future__ import annotations

from typing import Any

import pytest

from solver_sched.domain.cluster import Pod
from solver_sched.io import manifests as m
from solver_sched.io.budgets import _candidates, _index
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.io.objects import LabelSelectorModel

GROUP = {"scheduling.x-k8s.io/pod-group": "g"}


def _job(
    *budgets: dict[str, Any], ready: int = 0, pending: int = 0, terminating: int = 0
) -> int | None:
    """Disruptions of gang g: 4 running pods (the first ``ready`` of them Ready, the last
    ``terminating`` of them terminating) and ``pending`` more not yet bound. Pod i has the label
    ``half: a`` (i < 2) or ``half: b``."""
    objs = [m.node("n1"), *m.gang("g", 4 + pending, running_on=["n1"] * 4)]
    for i, p in enumerate(objs[2:]):
        p["metadata"]["labels"]["half"] = "a" if i < 2 else "b"
        if i < ready:
            p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        if 4 - terminating <= i < 4:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    snap = snapshot_from_objects([*objs, *budgets])
    assert not snap.errors, snap.errors
    return snap.jobs["default/g"].disruptions


def test_no_budget_limits_nothing() -> None:
    assert _job() is None


def test_a_budget_that_lets_all_go_limits_nothing() -> None:
    assert _job(m.pod_disruption_budget("pdb", GROUP, 4)) is None


def test_a_budget_charging_more_than_it_allows_limits_the_job_to_what_it_allows() -> None:
    assert _job(m.pod_disruption_budget("pdb", GROUP, 1)) == 1
    assert _job(m.pod_disruption_budget("pdb", GROUP, 0)) == 0


def test_a_pod_two_budgets_select_cannot_be_evicted_at_all() -> None:
    every = m.pod_disruption_budget("b", {}, 4)
    every["spec"]["selector"] = {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}
    assert _job(every) is None
    assert _job(m.pod_disruption_budget("a", GROUP, 4), every) == 0


def test_a_budget_of_another_namespace_or_selecting_other_pods_is_ignored() -> None:
    assert _job(m.pod_disruption_budget("pdb", GROUP, 0, namespace="other")) is None
    assert _job(m.pod_disruption_budget("pdb", {"app": "web"}, 0)) is None
    unselecting = m.pod_disruption_budget("pdb", GROUP, 0)
    unselecting["spec"]["selector"] = None  # policy/v1: null selects no pod
    assert _job(unselecting) is None


def test_a_budget_whose_status_lags_its_spec_lets_nothing_go() -> None:
    assert _job(m.pod_disruption_budget("pdb", GROUP, 4, observed_generation=0)) == 0


@pytest.mark.parametrize(
    ("policy", "current", "desired", "ready", "want"),
    [
        pytest.param("AlwaysAllow", 0, 3, 0, None, id="always-allow-unready-free"),
        pytest.param("AlwaysAllow", 2, 3, 2, 1, id="always-allow-ready-charged"),
        pytest.param(None, 3, 3, 0, None, id="if-healthy-budget-met"),
        pytest.param(None, 2, 3, 0, 1, id="if-healthy-budget-short"),
        pytest.param(None, 0, 0, 0, 1, id="nothing-desired-charges-all"),
    ],
)
def test_unready_pods_are_charged_as_the_eviction_api_charges_them(
    policy: str | None, current: int, desired: int, ready: int, want: int | None
) -> None:
    pdb = m.pod_disruption_budget(
        "pdb",
        GROUP,
        1,
        current_healthy=current,
        desired_healthy=desired,
        unhealthy_policy=policy,
    )
    assert _job(pdb, ready=ready) == want


def test_pods_not_yet_bound_are_not_counted() -> None:
    assert _job(m.pod_disruption_budget("pdb", GROUP, 4), pending=4) is None


def test_a_malformed_budget_is_reported_and_left_out() -> None:
    bad = m.pod_disruption_budget("pdb", GROUP, 0)
    bad["status"]["disruptionsAllowed"] = "none"
    objs = [m.node("n1"), *m.gang("g", 4, running_on=["n1"] * 4), bad]
    snap = snapshot_from_objects(objs)
    assert snap.jobs["default/g"].disruptions is None
    assert any(
        e.obj == "PodDisruptionBudget default/pdb" and "disruptionsAllowed" in e.field
        for e in snap.errors
    ), snap.errors


def test_the_tightest_of_budgets_over_different_pods_limits() -> None:
    a = m.pod_disruption_budget("a", {"half": "a"}, 1)
    b = m.pod_disruption_budget("b", {"half": "b"}, 0)
    assert _job(a) == 1 and _job(b) == 0
    assert _job(a, b) == 0 and _job(b, a) == 0


def test_terminating_pods_are_not_counted() -> None:
    """They hold their node but are no longer members: the API has nothing left to charge."""
    assert _job(m.pod_disruption_budget("pdb", GROUP, 2), terminating=2) is None
    assert _job(m.pod_disruption_budget("pdb", GROUP, 1), terminating=2) == 1


def test_a_budget_without_a_namespace_is_of_the_default_namespace() -> None:
    pdb = m.pod_disruption_budget("pdb", GROUP, 0)
    del pdb["metadata"]["namespace"]
    assert _job(pdb) == 0


def test_a_budget_that_wants_one_healthy_pod_and_has_it_lets_unready_pods_go() -> None:
    pdb = m.pod_disruption_budget("pdb", GROUP, 0, current_healthy=1, desired_healthy=1)
    assert _job(pdb) is None


def test_a_budget_that_selects_none_of_the_job_does_not_hide_the_next_one() -> None:
    unselecting = m.pod_disruption_budget("a", GROUP, 0)
    unselecting["spec"]["selector"] = None
    protecting = m.pod_disruption_budget("c", GROUP, 1)
    assert _job(unselecting, protecting) == 1
    assert _job(m.pod_disruption_budget("b", {"app": "web"}, 0), protecting) == 1


def test_pods_without_labels_are_selected_by_what_selects_no_label() -> None:
    pdb = m.pod_disruption_budget("pdb", {}, 1)
    pdb["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}
    objs = [m.node("n1"), *m.gang("g", 4, running_on=["n1"] * 4), pdb]
    for o in objs:
        if o["kind"] == "Pod":
            del o["metadata"]["labels"]
            o["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "g"}
    objs[1]["apiVersion"] = "scheduling.volcano.sh/v1beta1"
    snap = snapshot_from_objects(objs)
    assert not snap.errors, snap.errors
    assert snap.jobs["default/g"].disruptions == 1


def test_bound_pods_not_yet_running_are_not_charged() -> None:
    """The API evicts a pod that is not Running whatever the budgets say (as the actuator)."""
    objs = [m.node("n1"), *m.gang("g", 4, running_on=["n1"] * 4)]
    for o in objs[4:]:
        o["status"]["phase"] = "Pending"
    snap = snapshot_from_objects([*objs, m.pod_disruption_budget("pdb", GROUP, 2)])
    assert snap.jobs["default/g"].disruptions is None


def _two_jobs(allowed: int) -> dict[str, int | None]:
    """Gangs a (priority 0) and b (priority 5), 4 running pods each, under one budget."""
    objs: list[dict[str, Any]] = [m.node("n1", gpus=8)]
    for name, prio in (("b", 5), ("a", 0)):  # b first: the order of the objects is no rule
        group = m.gang(name, 4, running_on=["n1"] * 4, priority=prio)
        for o in group[1:]:
            o["metadata"]["labels"]["app"] = "train"
        objs += group
    snap = snapshot_from_objects([*objs, m.pod_disruption_budget("all", {"app": "train"}, allowed)])
    assert not snap.errors, snap.errors
    return {n: snap.jobs[f"default/{n}"].disruptions for n in ("a", "b")}


def test_a_budget_over_two_jobs_is_shared_lowest_priority_first() -> None:
    """Each job alone fits the budget's 4, both together do not: a plan that broke both saw the
    second refused after the first was evicted for nothing."""
    assert _two_jobs(8) == {"a": None, "b": None}
    assert _two_jobs(6) == {"a": None, "b": 2}
    assert _two_jobs(4) == {"a": None, "b": 0}
    assert _two_jobs(3) == {"a": 3, "b": 3}  # rigid gangs of 4: neither may go, nor use 3


def _shared(*groups: list[dict[str, Any]], allowed: int) -> dict[str, int | None]:
    objs: list[dict[str, Any]] = [m.node("n1", gpus=16)]
    for group in groups:
        for o in group[1:]:
            o["metadata"]["labels"]["app"] = "train"
        objs += group
    snap = snapshot_from_objects([*objs, m.pod_disruption_budget("all", {"app": "train"}, allowed)])
    assert not snap.errors, snap.errors
    return {n.split("/")[1]: j.disruptions for n, j in snap.jobs.items()}


def test_a_shared_budget_is_left_to_the_jobs_that_can_use_it() -> None:
    """big (rigid, 4 pods, the lower priority) can never go under a budget of 2: its share
    went to it all the same, and small, which could, got none (its preemptor waited)."""
    big = m.gang("big", 4, running_on=["n1"] * 4, priority=0)
    small = m.gang("small", 2, running_on=["n1"] * 2, priority=5)
    assert _shared(big, small, allowed=2) == {"big": 2, "small": None}
    elastic = m.gang("el", 4, min_member=2, max_member=4, running_on=["n1"] * 4, priority=0)
    assert _shared(elastic, small, allowed=2) == {"el": 2, "small": 0}  # el may use the 2
    done = m.gang("done", 4, running_on=["n1"] * 3, priority=0)
    done[-1]["status"]["phase"] = "Succeeded"
    assert _shared(done, small, allowed=2) == {"done": None, "small": None}  # completing


def test_the_jobs_budgets_keep_from_being_broken() -> None:
    budget = m.pod_disruption_budget("pdb", GROUP, 0)
    whole = snapshot_from_objects([m.node("n1"), *m.gang("g", 4, running_on=["n1"] * 4), budget])
    partial = snapshot_from_objects([m.node("n1"), *m.gang("g", 4, running_on=["n1"] * 2), budget])
    pending = snapshot_from_objects([m.node("n1"), *m.gang("g", 4), budget])
    for snap, kept in ((whole, True), (partial, True), (pending, False)):
        job = snap.jobs["default/g"]
        assert job.kept_whole(len(snap.running_pods(job))) is kept


def test_an_elastic_job_takes_the_share_it_can_just_use() -> None:
    """el (min 1, max 2) runs 2 and may go to 1 within the 1 disruption left: it takes it."""
    el = m.gang("el", 2, min_member=1, max_member=2, running_on=["n1"] * 2, priority=0)
    small = m.gang("small", 1, running_on=["n1"], priority=5)
    assert _shared(el, small, allowed=1) == {"el": 1, "small": 0}


def test_a_budget_reads_the_pods_of_its_rarest_label_or_in_requirement() -> None:
    """Only where the answer is the same as reading every pod, and faster."""
    running = [
        (f"j{i}", Pod(name=f"ns/p{i}", namespace="ns", requests={}, job=f"j{i}")) for i in range(4)
    ]
    labels = {
        "ns/p0": {"app": "a", "rank": "0"},
        "ns/p1": {"app": "a", "rank": "1"},
        "ns/p2": {"app": "b", "rank": "0"},
        "ns/p3": {},
    }
    index = _index(running, labels)

    def names(selector: dict[str, Any]) -> list[str]:
        chosen = _candidates(LabelSelectorModel.model_validate(selector), running, index)
        return [p.name for _, p in chosen]

    assert names({"matchLabels": {"app": "a"}}) == ["ns/p0", "ns/p1"]
    assert names({"matchLabels": {"app": "a", "rank": "1"}}) == ["ns/p1"]
    rank = {"key": "rank", "operator": "In", "values": ["1", "0"]}
    assert names({"matchExpressions": [rank]}) == ["ns/p0", "ns/p1", "ns/p2"]
    assert names({"matchLabels": {"app": "b"}, "matchExpressions": [rank]}) == ["ns/p2"]
    assert names({"matchExpressions": [{**rank, "values": ["9"]}]}) == []
    absent = {"key": "rank", "operator": "DoesNotExist"}
    assert names({"matchExpressions": [absent]}) == [f"ns/p{i}" for i in range(4)]
    assert names({}) == [f"ns/p{i}" for i in range(4)]
