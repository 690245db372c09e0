"""The workload of the live study: one batch/v1 Job per trace job, the same for every stack but
for how each stack is told about it.

Why Jobs and not PyTorchJobs: the native gang stack needs the 1.37 in-tree Workload/PodGroup, and
the only controller that makes them is kube-controller-manager's Job controller (WorkloadWithJob,
from ``spec.scheduling.schedulingPolicy.gang``). The training-operator v1.8.1 knows neither that
PodGroup nor ``spec.schedulingGroup`` (its pod template is k8s.io/api v0.29, which drops the
field), so PyTorchJobs could not reach that stack at all. With Jobs all four stacks schedule the
same pods made by the same controller:

- ``kube-scheduler``: a plain indexed Job (no gang);
- ``kube-gang`` and ``solver-sched``: ``spec.scheduling`` asks for a gang of ``parallelism``; the
  Job controller creates the Workload and PodGroup and joins the pods through
  ``spec.schedulingGroup``; pods name kube-scheduler's default profile or ``solver-sched``;
- ``kueue``: created suspended with the ``kueue.x-k8s.io/queue-name`` label; Kueue admits it
  (unsuspends it) when the ClusterQueue has quota, and kube-scheduler places the pods.

Elastic jobs (``--elastic``, solver-sched only: none of the peers resizes a Job) are a standalone
``scheduling.k8s.io`` PodGroup made by the study, as a user would (minCount = the trace job's
min pods; ``solver-sched.io/max-member``, ``size-policy: power-of-two`` and ``cooldown``
annotations), and an indexed Job of max pods whose pods join it by ``spec.schedulingGroup`` (the
Job controller then leaves gang objects alone) with a success policy of one succeeded pod: the
pods solver-sched leaves unbound are removed by the Job controller when the job is done.

Every pod of job ``j`` is labelled ``live.solver-sched.io/job=j`` for the study's watch.
"""

from __future__ import annotations

from typing import Any

JOB_LABEL = "live.solver-sched.io/job"
GPU = "nvidia.com/gpu"
PODGROUP_API = "scheduling.k8s.io/v1beta1"
ANN = "solver-sched.io/"


def job_manifest(
    stack: str,
    name: str,
    namespace: str,
    pods: int,
    gpus_per_pod: int,
    priority_class: str,
) -> dict[str, Any]:
    """The Job of one trace job for ``stack``."""
    pod_labels = {JOB_LABEL: name}
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "priorityClassName": priority_class,
        "schedulerName": "solver-sched" if stack == "solver-sched" else "default-scheduler",
        "nodeSelector": {"type": "kwok"},
        "containers": [
            {
                "name": "worker",
                "image": "pytorch/pytorch:2.4.0-cuda12.1",
                "resources": {
                    "requests": {"cpu": "4", "memory": "16Gi", GPU: str(gpus_per_pod)},
                    "limits": {GPU: str(gpus_per_pod)},
                },
            }
        ],
    }
    spec: dict[str, Any] = {
        "parallelism": pods,
        "completions": pods,
        "completionMode": "Indexed",
        "backoffLimit": 10000,  # preempted or timed-out pods are replaced, never fail the Job
        "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
    }
    labels = {JOB_LABEL: name}
    if stack in ("kube-gang", "solver-sched"):
        spec["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": pods}}}
    if stack == "kueue":
        spec["suspend"] = True
        labels["kueue.x-k8s.io/queue-name"] = namespace
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def elastic_manifests(
    name: str,
    namespace: str,
    min_pods: int,
    max_pods: int,
    gpus_per_pod: int,
    priority_class: str,
    cooldown: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PodGroup and the Job of one elastic trace job for solver-sched (see the module)."""
    group = {
        "apiVersion": PODGROUP_API,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {
                f"{ANN}max-member": str(max_pods),
                f"{ANN}size-policy": "power-of-two",
                f"{ANN}cooldown": cooldown,
            },
        },
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_pods}}},
    }
    job = job_manifest("solver-sched", name, namespace, max_pods, gpus_per_pod, priority_class)
    del job["spec"]["scheduling"]
    job["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": name}
    job["spec"]["successPolicy"] = {"rules": [{"succeededCount": 1}]}
    return group, job
