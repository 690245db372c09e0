"""The Kubernetes 1.37 gang API, live: a Workload with its PodGroup template, the PodGroup made
from it and pods joined through spec.schedulingGroup, as kube-apiserver 1.37 ships them (the
GenericWorkload gate on), scheduled as gangs with the release's own PodGroup conditions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solver_sched.io import manifests as m
from solver_sched.kube.controller import Controller
from tests.integration.kube import Kube, priority_classes, wait_for

pytestmark = pytest.mark.integration
API = "scheduling.k8s.io/v1beta1"
GROUP = {"apiVersion": API, "kind": "PodGroup", "metadata": {"namespace": "default"}}


def _workload_gang(
    kube: Kube,
    name: str,
    pods: int,
    priority_class: str = "low",
    topology_key: str = "",
    gpus: int = 1,
    policy: str = "gang",
) -> None:
    """What a workload controller makes: the Workload, a PodGroup from its template, the pods."""
    gang = {"gang": {"minCount": pods}} if policy == "gang" else {"basic": {}}
    constraints = (
        {"schedulingConstraints": {"topology": [{"key": topology_key}]}} if topology_key else {}
    )
    kube.create(
        {
            "apiVersion": API,
            "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "podGroupTemplates": [{"name": "workers", "schedulingPolicy": gang, **constraints}]
            },
        }
    )
    kube.create(
        {
            "apiVersion": API,
            "kind": "PodGroup",
            "metadata": {"name": f"{name}-workers", "namespace": "default"},
            "spec": {
                "workloadRef": {"workloadName": name, "templateName": "workers"},
                "schedulingPolicy": gang,
                **constraints,
            },
        }
    )
    for i in range(pods):
        kube.create(
            m.pod(
                f"{name}-{i}",
                group=f"{name}-workers",
                group_api="scheduling.k8s.io",
                priority_class=priority_class,
                gpus=gpus,
            )
        )


def _condition(kube: Kube, group: str, kind: str) -> dict[str, Any]:
    obj = kube.get(GROUP, group)
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c["type"] == kind), {})


def test_a_1_37_gang_is_all_or_nothing_with_its_own_conditions(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    priority_classes(kube)
    kube.create(m.node("n1", gpus=6))
    _workload_gang(kube, "small", 4)
    _workload_gang(kube, "big", 8)
    pod = kube.get({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, "big-0")
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": "big-workers"}  # kept by 1.37
    start_controller()
    wait_for("small bound", lambda: kube.bound("default", "small-") == 4)
    scheduled = wait_for(
        "small's PodGroupInitiallyScheduled",
        lambda: _condition(kube, "small-workers", "PodGroupInitiallyScheduled"),
    )
    assert scheduled["status"] == "True"
    waiting = wait_for(
        "big's PodGroupInitiallyScheduled",
        lambda: _condition(kube, "big-workers", "PodGroupInitiallyScheduled"),
    )
    assert waiting["status"] == "False" and waiting["reason"] == "Unschedulable"
    assert "needs 8" in waiting["message"]
    assert kube.bound("default", "big-") == 0  # 6 GPUs, a gang of 8: nothing


def test_a_preempted_1_37_gang_gets_its_disruption_target(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    priority_classes(kube)
    kube.create(m.node("n1", gpus=4))
    _workload_gang(kube, "low", 4)
    start_controller()
    wait_for("low bound", lambda: kube.bound("default", "low-") == 4)
    _workload_gang(kube, "high", 4, priority_class="high")
    wait_for("high bound", lambda: kube.bound("default", "high-") == 4)
    disrupted = wait_for(
        "low's DisruptionTarget", lambda: _condition(kube, "low-workers", "DisruptionTarget")
    )
    assert disrupted["status"] == "True" and disrupted["reason"] == "PreemptionByScheduler"
    assert "default/high-workers" in disrupted["message"]


def test_a_1_37_topology_constraint_keeps_the_gang_in_one_rack(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """schedulingConstraints.topology as the 1.37 API server stores it: the gang of two 4-GPU pods
    goes to the rack that holds both, not to the best-fit nodes of two racks."""
    priority_classes(kube)
    rack = "example.com/rack"
    kube.create(m.node("r1-a", gpus=4, labels={rack: "r1"}))
    kube.create(m.node("r2-a", gpus=4, labels={rack: "r2"}))
    kube.create(m.node("r2-b", gpus=8, labels={rack: "r2"}))
    _workload_gang(kube, "wide", 2, topology_key=rack, gpus=4)
    stored = kube.get(GROUP, "wide-workers")["spec"]["schedulingConstraints"]
    assert stored == {"topology": [{"key": rack}]}  # kept by 1.37 with the gate on
    _workload_gang(kube, "huge", 2, topology_key=rack, gpus=8)
    start_controller()
    wait_for("wide bound", lambda: kube.bound("default", "wide-") == 2)
    nodes = {n for p, n in kube.pods("default").items() if p.startswith("wide-") and n}
    assert nodes <= {"r2-a", "r2-b"}, nodes
    waiting = wait_for(
        "huge's PodGroupInitiallyScheduled",
        lambda: _condition(kube, "huge-workers", "PodGroupInitiallyScheduled"),
    )
    assert waiting["status"] == "False"
    assert "needs 16 GPUs in one rack" in waiting["message"], waiting["message"]


def test_a_1_37_basic_policy_group_is_scheduled_pod_by_pod(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """schedulingPolicy basic, as the 1.37 API server stores it: the group is no gang, so three
    pods on two free GPUs get two binds (a gang of three would get none)."""
    priority_classes(kube)
    kube.create(m.node("n1", gpus=2))
    _workload_gang(kube, "loose", 3, policy="basic")
    assert kube.get(GROUP, "loose-workers")["spec"]["schedulingPolicy"] == {"basic": {}}
    start_controller()
    wait_for("two of loose bound", lambda: kube.bound("default", "loose-") == 2)
