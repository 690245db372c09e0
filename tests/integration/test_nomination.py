"""Issue 17, point 1, live: the jobs a preemption names are the jobs that get the room.

Two queues as in the issue: q1 (team-a) runs above its min, q2 (team-b) is below its min with
several identical waiting gangs. The reclaim cycle evicts q1 gangs; the pods of the q2 gangs it
makes room for are nominated (status.nominatedNodeName, as kube-scheduler writes it), and the
jobs named in the Preempted events are the ones bound in the next cycle, not other identical
ones."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from solver_sched.io import manifests as m
from solver_sched.kube.controller import Controller
from tests.integration.kube import Kube, wait_for

pytestmark = pytest.mark.integration


def test_preempted_events_name_the_jobs_that_are_bound_next(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    kube.create(m.node("n1", gpus=4))
    kube.create(
        m.quota_tree(
            {
                "name": "root",
                "max": {"nvidia.com/gpu": "4"},
                "children": [
                    {
                        "name": "q1",
                        "namespaces": ["team-a"],
                        "min": {"nvidia.com/gpu": "1"},
                        "max": {"nvidia.com/gpu": "4"},
                    },
                    {
                        "name": "q2",
                        "namespaces": ["team-b"],
                        "min": {"nvidia.com/gpu": "3"},
                        "max": {"nvidia.com/gpu": "4"},
                    },
                ],
            }
        )
    )
    for i in range(4):  # q1 holds all 4 GPUs: 3 above its min
        kube.create_all(m.gang(f"a{i}", 1, namespace="team-a", running_on=["n1"]))
        kube.set_running(f"team-a/a{i}-worker-0")
    for i in range(1, 8):  # identical waiting gangs in q2
        kube.create_all(m.gang(f"b{i}", 1, namespace="team-b"))
    since = kube.api.get("/api/v1/namespaces/team-b/pods")["metadata"]["resourceVersion"]
    controller = start_controller()

    def preempted() -> list[str]:
        return [e["message"] for e in kube.events("team-a") if e["reason"] == "Preempted"]

    wait_for("the reclaim's evictions", lambda: len(preempted()) >= 3)
    named = set()
    for message in preempted():
        named |= set(re.findall(r"team-b/(b\d+)", message))
    assert len(named) == 3, preempted()

    def nominated() -> set[str]:
        """The q2 jobs whose pods carried nominatedNodeName n1 at any revision since the start
        (the API server clears the field when the pod is bound): replayed by a watch."""
        seen = set()
        query = {"resourceVersion": since, "timeoutSeconds": 1}
        for event in kube.api.watch("/api/v1/namespaces/team-b/pods", query, timeout=10):
            pod = event.get("object") or {}
            if (pod.get("status") or {}).get("nominatedNodeName") == "n1":
                seen.add(pod["metadata"]["name"].split("-")[0])
        return seen

    def bound() -> set[str]:
        return {n.split("-")[0] for n, node in kube.pods("team-b").items() if node}

    wait_for("q2 bound up to its min", lambda: len(bound()) == 3)
    assert bound() == named
    later = controller.cycles + 3
    wait_for("three more cycles", lambda: controller.cycles >= later)
    assert bound() == named
    assert nominated() == named  # the room was nominated for the jobs it was made for
