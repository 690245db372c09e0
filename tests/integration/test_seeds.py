"""Each seed scenario of models/ end to end: applied to a real API server, scheduled by the
controller, checked from the API server's point of view."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from solver_sched.io import manifests as m
from solver_sched.kube.controller import Controller
from tests.integration.kube import ROOT, Kube, wait_for

pytestmark = pytest.mark.integration
MODELS = ROOT / "models"
PG = {
    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": {"namespace": "default"},
}


def test_gang_8_on_5(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    kube.create_all(kube.load(MODELS / "gang-8-on-5.yaml"))
    start_controller()
    wait_for("small bound", lambda: kube.bound("default", "small-") == 4)
    assert kube.bound("default", "big-") == 0
    msg = wait_for("big's condition", lambda: kube.waiting_reason("big-worker-0"))
    assert "needs 8" in msg
    reasons = {e["reason"] for e in kube.events("default", "big")}
    assert "Unschedulable" in reasons
    wait_for(  # posted once the binds are done: may lag the pods
        "small's Scheduled event",
        lambda: any(e["reason"] == "Scheduled" for e in kube.events("default", "small")),
    )


def test_elastic_fill(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    kube.create_all(kube.load(MODELS / "elastic-fill.yaml"))
    start_controller()
    wait_for("8 workers", lambda: kube.bound("default", "elastic-") == 8)
    group = kube.get(PG, "elastic")
    wait_for("PodGroup status", lambda: kube.get(PG, "elastic").get("status", {}).get("running"))
    assert kube.get(PG, "elastic")["status"]["phase"] == "Running"
    assert group["metadata"]["name"] == "elastic"


def test_guaranteed_gang_shrinks_elastic(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    kube.create_all(kube.load(MODELS / "guaranteed-preempts-elastic.yaml"))
    before = datetime.now(UTC) - timedelta(seconds=2)
    start_controller()
    wait_for("trainer bound", lambda: kube.bound("default", "trainer-") == 8)
    pods = kube.pods("default")
    elastic = sorted(n for n, node in pods.items() if n.startswith("elastic-") and node)
    assert elastic == [f"elastic-worker-{i}" for i in range(4)]  # highest indexes went
    annotations = kube.get(PG, "elastic")["metadata"].get("annotations", {})
    stamp = datetime.fromisoformat(annotations["solver-sched.io/last-scale-time"])
    assert stamp >= before.replace(microsecond=0)
    reasons = {e["reason"] for e in kube.events("default", "elastic")}
    assert "Resized" in reasons


def test_cooldown_holds_scale_out(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    objs = kube.load(MODELS / "cooldown.yaml")
    recent = (datetime.now(UTC) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for o in objs:
        if o["kind"] == "PodGroup":
            o["metadata"]["annotations"]["solver-sched.io/last-scale-time"] = recent
    kube.create_all(objs)
    controller = start_controller()
    wait_for("a few cycles", lambda: controller.cycles >= 3)
    assert kube.bound("default", "elastic-") == 4
    msg = wait_for("reason on a waiting pod", lambda: kube.waiting_reason("elastic-worker-8"))
    assert msg.startswith("cooldown until")
    old = (datetime.now(UTC) - timedelta(minutes=11)).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.patch(
        PG, "elastic", {"metadata": {"annotations": {"solver-sched.io/last-scale-time": old}}}
    )
    wait_for("scale out to 16", lambda: kube.bound("default", "elastic-") == 16)


def test_pytorchjob_without_podgroup_keeps_its_cooldown_on_the_pytorchjob(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    # An elastic PyTorchJob (1..4 workers) whose pods name no PodGroup runs 2 workers; 2 more wait
    # and the node has room. Its recent last-scale-time holds the scale-out; an old one lets it
    # happen, and the scheduler then stamps the PyTorchJob itself. A PodGroup of the same name
    # exists but is not the job's (no pod names it): the stamp must not go there.
    recent = (datetime.now(UTC) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pj = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "ptj",
            "namespace": "default",
            "annotations": {
                "solver-sched.io/size-policy": "power-of-two",
                "solver-sched.io/last-scale-time": recent,
            },
        },
        "spec": {
            "elasticPolicy": {"minReplicas": 1, "maxReplicas": 4},
            "pytorchReplicaSpecs": {"Worker": {"replicas": 4}},
        },
    }
    labels = {"training.kubeflow.org/job-name": "ptj"}
    pods = [
        m.pod(f"ptj-worker-{i}", labels={**labels, "training.kubeflow.org/replica-index": str(i)})
        for i in range(4)
    ]
    pods[0]["spec"]["nodeName"] = pods[1]["spec"]["nodeName"] = "n1"
    kube.create(m.node("n1", gpus=8))
    kube.create(m.pod_group("ptj", min_member=4))
    kube.create(pj)
    try:
        kube.create_all(pods)
        kube.set_running("default/ptj-worker-0")
        kube.set_running("default/ptj-worker-1")
        controller = start_controller()
        wait_for("a few cycles", lambda: controller.cycles >= 3)
        assert kube.bound("default", "ptj-") == 2
        msg = wait_for("reason on a waiting pod", lambda: kube.waiting_reason("ptj-worker-3"))
        assert msg.startswith("cooldown until")
        old = (datetime.now(UTC) - timedelta(minutes=11)).strftime("%Y-%m-%dT%H:%M:%SZ")
        before = datetime.now(UTC).replace(microsecond=0)
        kube.patch(
            pj, "ptj", {"metadata": {"annotations": {"solver-sched.io/last-scale-time": old}}}
        )
        wait_for("scale out to 4", lambda: kube.bound("default", "ptj-") == 4)

        def stamped() -> bool:
            anns = kube.get(pj, "ptj")["metadata"].get("annotations", {})
            return datetime.fromisoformat(anns["solver-sched.io/last-scale-time"]) >= before

        wait_for("last-scale-time on the PyTorchJob", stamped)
    finally:
        kube.delete(pj, "ptj")


def test_quota_and_max_jobs(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    kube.create_all(kube.load(MODELS / "quota-max-jobs.yaml"))
    start_controller()
    wait_for("team-a first", lambda: kube.bound("team-a", "first-") == 4)
    wait_for("team-b b-big", lambda: kube.bound("team-b", "b-big-") == 4)
    assert kube.bound("team-a", "second-") == 0
    assert kube.bound("team-b", "b-small-") == 0
    assert "kube-queue/max-jobs 1" in wait_for(
        "reason", lambda: kube.waiting_reason("second-worker-0", "team-a")
    )
