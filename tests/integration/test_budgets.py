"""PodDisruptionBudgets against a real API server: the plan picks no victim a budget protects
(the controller watches them), and the actuator's own check before a job-level eviction still
keeps a job whole where the Eviction API would refuse part of it (a budget that changed after
the snapshot, a partial gang)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solver_sched.domain.plan import BindPod, EvictJob, Plan
from solver_sched.io import manifests as m
from solver_sched.kube.actuator import Actuator, Outcome
from solver_sched.kube.api import KubeApi, RateLimiter
from solver_sched.kube.assume import Assumed
from solver_sched.kube.controller import Controller
from tests.integration.kube import Kube, priority_classes, real_snapshot, wait_for

pytestmark = pytest.mark.integration
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default"}}
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"


def _running_gang(kube: Kube, name: str, n: int, node: str, labels: dict[str, str]) -> None:
    priority_classes(kube)
    objs = m.gang(name, n, running_on=[node] * n, priority_class="low")
    for o in objs:
        if o["kind"] == "Pod":
            o["metadata"]["labels"].update(labels)
    kube.create_all(objs)
    for i in range(n):
        kube.set_running(f"default/{name}-worker-{i}")


def _budget(kube: Kube, name: str, spec: dict[str, Any], allowed: int, pods: int = 4) -> None:
    """A PodDisruptionBudget with the status the disruption controller would give it (the test
    API server runs no controller manager)."""
    created = kube.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )
    _status(kube, name, created["metadata"]["generation"], allowed, pods, pods - allowed)


def _status(
    kube: Kube, name: str, generation: int, allowed: int, healthy: int, desired: int
) -> None:
    status = {
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": healthy,
    }
    kube.api.request(
        "PATCH",
        f"{PDBS}/{name}/status",
        body={"status": status},
        content_type="application/merge-patch+json",
    )


def _evict_whole(admin_api: KubeApi, job: str, pods: int) -> Outcome:
    """The actuator alone, handed a plan that evicts all of ``job`` (as a plan made before the
    budget changed would)."""
    names = tuple(f"default/{job}-worker-{i}" for i in range(pods))
    plan = Plan(evictions=(EvictJob(f"default/{job}", names, "preempted"),))
    actuator = Actuator(admin_api, Assumed(), lambda: True, grace_seconds=0)
    try:
        return actuator.apply(plan, real_snapshot(admin_api))
    finally:
        actuator.close()


# -- the plan --------------------------------------------------------------------------------


def test_the_plan_breaks_the_gang_no_budget_protects(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """small (2 pods) is the cheaper victim for high, but its budget lets none go: big is
    broken instead. Planned blind to budgets, small's eviction was refused every cycle and high
    waited for good."""
    kube.create(m.node("n1", gpus=4))
    kube.create(m.node("n2", gpus=4))
    _running_gang(kube, "big", 4, "n1", {"app": "big"})
    _running_gang(kube, "small", 2, "n2", {"app": "small"})
    _budget(kube, "small", {"minAvailable": 2, "selector": {"matchLabels": {"app": "small"}}}, 0, 2)
    kube.create_all(m.gang("high", 4, priority_class="high"))
    controller = start_controller()
    wait_for("high bound", lambda: kube.bound("default", "high-") == 4)
    assert kube.bound("default", "small-") == 2 and kube.bound("default", "big-") == 0
    assert controller.metrics.evictions_blocked._value.get() == 0


def test_a_gang_waits_while_the_only_victim_is_protected_then_starts(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """A budget whose status is not yet current (its disruption controller is behind) lets
    nothing go: high waits, nothing is evicted; once the budget allows it, high starts."""
    kube.create(m.node("n1", gpus=4))
    _running_gang(kube, "low", 4, "n1", {"app": "low"})
    created = kube.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "low", "namespace": "default"},
            "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "low"}}},
        }
    )
    kube.create_all(m.gang("high", 4, priority_class="high"))
    controller = start_controller()
    wait_for("cycles", lambda: controller.cycles >= 3)
    assert kube.bound("default", "low-") == 4 and kube.bound("default", "high-") == 0
    assert controller.metrics.evictions._value.get() == 0
    _status(kube, "low", created["metadata"]["generation"], 4, 4, 0)
    wait_for("high bound after the PDB allows it", lambda: kube.bound("default", "high-") == 4)
    assert kube.bound("default", "low-") == 0


@pytest.mark.parametrize("policy", ["AlwaysAllow", "IfHealthyBudget"])
def test_running_pods_that_are_not_ready_go_as_the_budgets_policy_says(
    kube: Kube, start_controller: Callable[..., Controller], policy: str
) -> None:
    """The API does not charge a running pod that is not Ready: AlwaysAllow evicts it, and
    IfHealthyBudget while the budget has its desired healthy pods. The check charged them all
    and refused the preemption for good."""
    kube.create(m.node("n1", gpus=4))
    priority_classes(kube)
    kube.create_all(m.gang("low", 4, running_on=["n1"] * 4, priority_class="low"))
    for i in range(4):
        kube.api.request(
            "PATCH",
            f"/api/v1/namespaces/default/pods/low-worker-{i}/status",
            body={
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
            },
            content_type="application/strategic-merge-patch+json",
        )
        kube.patch(POD, f"low-worker-{i}", {"metadata": {"labels": {"app": "low"}}})
    desired = 4 if policy == "AlwaysAllow" else 2
    spec = {
        "minAvailable": desired,
        "unhealthyPodEvictionPolicy": policy,
        "selector": {"matchLabels": {"app": "low"}},
    }
    created = kube.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "low", "namespace": "default"},
            "spec": spec,
        }
    )
    # IfHealthyBudget: healthy (as if two other pods it selects were Ready elsewhere)
    healthy = 0 if policy == "AlwaysAllow" else 2
    _status(kube, "low", created["metadata"]["generation"], 0, healthy, desired)
    kube.create_all(m.gang("high", 4, priority_class="high"))
    start_controller()
    wait_for("high bound", lambda: kube.bound("default", "high-") == 4)
    assert kube.bound("default", "low-") == 0


# -- the actuator's check, the last line ---------------------------------------------------------


def test_a_budget_that_allows_part_of_a_job_keeps_all_of_it(kube: Kube, admin_api: KubeApi) -> None:
    """maxUnavailable 1 over a 4-pod gang: every dry run passes (a dry run charges nothing), so
    the job went pod by pod until the budget ran out, one pod evicted and three refused. The
    whole job stays until the budget allows all four; the refusal is not counted as done."""
    kube.create(m.node("n1", gpus=4))
    _running_gang(kube, "low", 4, "n1", {"app": "low"})
    _budget(kube, "low", {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "low"}}}, 1)
    out = _evict_whole(admin_api, "low", 4)
    why = out.evict_blocked["default/low"]
    assert "PodDisruptionBudget default/low allows 1 disruption(s)" in why
    assert "takes 4 of its pods at once" in why
    assert not out.evicted and kube.bound("default", "low-") == 4
    _status(kube, "low", 1, 4, 4, 0)
    out = _evict_whole(admin_api, "low", 4)
    assert not out.evict_blocked and len(out.evicted) == 4


def test_a_pod_two_budgets_select_keeps_its_job_whole(kube: Kube, admin_api: KubeApi) -> None:
    """The Eviction API refuses (500) a pod that two budgets select, even in a dry run that the
    actuator took for a pass: three pods went, the fourth stayed for good."""
    kube.create(m.node("n1", gpus=4))
    _running_gang(kube, "low", 4, "n1", {"app": "low"})
    kube.patch(POD, "low-worker-2", {"metadata": {"labels": {"rank": "zero"}}})
    _budget(kube, "low", {"maxUnavailable": 4, "selector": {"matchLabels": {"app": "low"}}}, 4)
    selector = {"matchExpressions": [{"key": "rank", "operator": "In", "values": ["zero"]}]}
    _budget(kube, "rank-zero", {"maxUnavailable": 1, "selector": selector}, 1)
    out = _evict_whole(admin_api, "low", 4)
    why = out.evict_blocked["default/low"]
    assert "default/low-worker-2 is selected by more than one PodDisruptionBudget" in why
    assert not out.evicted and kube.bound("default", "low-") == 4


def test_a_refused_eviction_leaves_the_jobs_queued_binds_alone(
    kube: Kube, admin_api: KubeApi
) -> None:
    """low's last two binds are queued behind one bind a second, its first two pods running
    under a budget that allows no disruption, when an eviction of low (a plan made before the
    budget) comes. Its queued binds were taken back before the budget refused the eviction: low
    stayed at 2 of 4 pods bound for good."""
    kube.create(m.node("n1", gpus=4))
    priority_classes(kube)
    objs = m.gang("low", 4, running_on=["n1", "n1"], priority_class="low")
    for o in objs:
        if o["kind"] == "Pod":
            o["metadata"]["labels"]["app"] = "low"
    kube.create_all(objs)
    for i in range(2):
        kube.set_running(f"default/low-worker-{i}")
    _budget(kube, "low", {"minAvailable": 4, "selector": {"matchLabels": {"app": "low"}}}, 0)
    real = real_snapshot(admin_api)
    slow = admin_api.with_budget(RateLimiter(0.5, 1))
    actuator = Actuator(slow, Assumed(), lambda: True, grace_seconds=0)
    try:
        binds = tuple(BindPod(f"default/low-worker-{i}", "n1", "default/low") for i in (2, 3))
        actuator.apply(Plan(binds=binds), real)
        running = ("default/low-worker-0", "default/low-worker-1")
        out = actuator.apply(Plan(evictions=(EvictJob("default/low", running, "t"),)), real)
        assert "default/low" in out.evict_blocked and not out.cancelled and not out.evicted
        assert actuator.binder.wait_idle(20)
    finally:
        actuator.close()
    assert kube.bound("default", "low-") == 4


def test_a_rollback_a_budget_refuses_says_so(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """A partial gang past its timeout whose budget lets none of its pods go: the rollback is
    refused, and its RolledBack Event said the bound pods were evicted."""
    kube.create(m.node("n1", gpus=8))
    priority_classes(kube)
    objs = m.gang("g", 4, running_on=["n1", "n1"], priority_class="low")
    objs[0]["spec"]["scheduleTimeoutSeconds"] = 2
    for o in objs[1:]:
        o["metadata"]["labels"]["app"] = "g"
    kube.create_all(objs)
    for i in range(2):
        kube.set_running(f"default/g-worker-{i}")
    _budget(kube, "g", {"minAvailable": 2, "selector": {"matchLabels": {"app": "g"}}}, 0, 2)

    def fault(action: str) -> None:
        if action.startswith("bind default/g-"):
            raise RuntimeError("API server refuses the bind")

    start_controller(fault=fault)
    rolled_back = wait_for(
        "the RolledBack event",
        lambda: [e["message"] for e in kube.events("default", "g") if e["reason"] == "RolledBack"],
    )
    assert "0 of 2 bound pods evicted" in rolled_back[0], rolled_back
    assert "PodDisruptionBudget default/g allows 0 disruption(s)" in rolled_back[0]
    assert kube.bound("default", "g-") == 2
