"""The real training-operator v1.8.1 (`kube/training_operator.py`) and what solver-sched's
job-level eviction of an elastic PyTorchJob's worker means to it, as `docs/operators-guide.md`
states it: evicted with grace 0, an OnFailure job's worker is recreated and the job runs on;
evicted with a grace period, the terminating Running pod counts as a failed replica
(`Restarting`, or with `restartPolicy: Never` the whole job `Failed`). The test plays the
scheduler (binds, evictions) and the kubelet (Running)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from solver_sched.io import manifests as m
from solver_sched.kube.api import KubeApi, load_client
from solver_sched.kube.sandbox import Kube, install_crds, sandbox, wait_for
from solver_sched.kube.training_operator import TrainingOperator
from tests.integration.conftest import BINARY
from tests.integration.kube import ROOT

pytestmark = pytest.mark.integration
OPERATOR = ROOT / ".cache" / "bin" / "training-operator"
JOBS = "/apis/kubeflow.org/v1/namespaces/default/pytorchjobs"


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    if not OPERATOR.exists():
        pytest.fail(f"{OPERATOR} is missing: run `make operator`")
    work: Path = tmp_path_factory.mktemp("operator")
    with sandbox(BINARY, work / "env", work / "apiserver.log") as env:
        k = Kube(KubeApi(load_client(env.kubeconfig)))
        install_crds(k, sorted((ROOT / ".cache" / "crds").glob("*.yaml")))
        k.create(m.node("gpu-0", gpus=8))
        operator = TrainingOperator(OPERATOR, env, work / "training-operator.log")
        operator.prepare()
        operator.start()
        try:
            yield k
        finally:
            operator.stop()


def _running_job(kube: Kube, name: str, restart_policy: str) -> dict[str, str]:
    """An elastic PyTorchJob of 4 workers (cleanPodPolicy Running, as in `make run`), all bound
    and Running; returns pod name -> UID."""
    job = m.pytorch_job(name, 4, min_replicas=2, max_replicas=4, clean_pod_policy="Running")
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = restart_policy
    kube.create(job)
    pods = _created_pods(kube, name)
    for pod in pods:
        kube.api.request(
            "POST",
            f"/api/v1/namespaces/default/pods/{pod}/binding",
            body={
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod},
                "target": {"kind": "Node", "name": "gpu-0"},
            },
        )
    assert kube.kubelet("default", f"{name}-") == 4
    wait_for(f"{name} running", lambda: _active(kube, name) == 4)
    return {p: uid for p, (uid, _) in _pods(kube, name).items()}


def _created_pods(kube: Kube, name: str) -> dict[str, tuple[str, bool]]:
    """The job's 4 pods, once the operator made them. v1.8.1 drops a job reconciled before its
    PodGroup informer has synced (a fresh clone's first job, created as the operator started:
    "unable to get PodGroup after success creation", then "already exists", and no pod for 30 s)
    until the job changes again; so an annotation is touched each 20 s without its pods, as
    any later update of the job would."""

    def four() -> dict[str, tuple[str, bool]] | None:
        return pods if len(pods := _pods(kube, name)) == 4 else None

    for nudge in range(2):
        try:
            return wait_for(f"{name}'s 4 pods", four, timeout=20)
        except AssertionError:
            kube.api.request(
                "PATCH",
                f"{JOBS}/{name}",
                body={"metadata": {"annotations": {"solver-sched-tests/nudge": str(nudge)}}},
                content_type="application/merge-patch+json",
            )
    return wait_for(f"{name}'s 4 pods (nudged twice)", four, timeout=20)


def _pods(kube: Kube, job: str) -> dict[str, tuple[str, bool]]:
    """The job's pods: name -> (UID, terminating)."""
    items = kube.api.get("/api/v1/namespaces/default/pods")["items"]
    return {
        p["metadata"]["name"]: (p["metadata"]["uid"], bool(p["metadata"].get("deletionTimestamp")))
        for p in items
        if p["metadata"]["name"].startswith(f"{job}-worker-")
    }


def _status(kube: Kube, job: str) -> dict[str, Any]:
    return kube.api.get(f"{JOBS}/{job}").get("status") or {}


def _active(kube: Kube, job: str) -> int:
    worker = (_status(kube, job).get("replicaStatuses") or {}).get("Worker") or {}
    return int(worker.get("active", 0))


def _true(kube: Kube, job: str) -> set[str]:
    return {c["type"] for c in _status(kube, job).get("conditions") or [] if c["status"] == "True"}


def _evict(kube: Kube, pod: str, grace: int) -> None:
    """What solver-sched's actuator sends for a job-level eviction."""
    kube.api.request(
        "POST",
        f"/api/v1/namespaces/default/pods/{pod}/eviction",
        body={
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": "default"},
            "deleteOptions": {"gracePeriodSeconds": grace},
        },
    )


def test_a_worker_evicted_with_grace_0_is_recreated_and_the_job_runs_on(kube: Kube) -> None:
    """With `restartPolicy: OnFailure`. The operator usually recreates the pod without counting a
    failure, but its reconcile can see the evicted pod once with its deletionTimestamp while
    Running and count a failed replica (seen in a full run: a `Never` job was then Failed and
    all its pods deleted), so only OnFailure (or ExitCode) is safe, and that is what is pinned:
    the worker comes back under a new UID and the job is not Failed."""
    uids = _running_job(kube, "zero", "OnFailure")
    _evict(kube, "zero-worker-3", grace=0)
    new = wait_for(
        "worker-3 recreated",
        lambda: (p := _pods(kube, "zero").get("zero-worker-3")) and p[0] != uids["zero-worker-3"],
    )
    assert new
    wait_for("3 active", lambda: _active(kube, "zero") == 3)
    assert "Failed" not in _true(kube, "zero")


def test_a_worker_evicted_with_a_grace_period_restarts_an_on_failure_job(kube: Kube) -> None:
    _running_job(kube, "onfail", "OnFailure")
    _evict(kube, "onfail-worker-3", grace=30)  # no kubelet: it stays terminating
    wait_for("Restarting", lambda: "Restarting" in _true(kube, "onfail"))
    assert "Failed" not in _true(kube, "onfail")
    assert len(_pods(kube, "onfail")) == 4


def test_a_worker_evicted_with_a_grace_period_fails_a_never_job(kube: Kube) -> None:
    _running_job(kube, "never", "Never")
    _evict(kube, "never-worker-3", grace=30)
    wait_for("Failed", lambda: "Failed" in _true(kube, "never"))
    # and, the job being finished, cleanPodPolicy Running has it delete all its pods
    wait_for("all pods terminating", lambda: all(t for _, t in _pods(kube, "never").values()))
