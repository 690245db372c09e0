"""Keyword builders of Kubernetes manifests (plain dicts), for scenario files, the synthetic
generator and tests. They write what kubectl would show, so everything built here goes through the
same loader as a real cluster dump."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SCHEDULER = "solver-sched"


def node(
    name: str,
    *,
    gpus: int = 8,
    cpu: str = "64",
    memory: str = "512Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    gpus: int = 1,
    cpu: str = "4",
    memory: str = "16Gi",
    group: str | None = None,
    group_api: str = "scheduling.x-k8s.io",
    node_name: str | None = None,
    phase: str | None = None,
    priority: int | None = None,
    scheduler: str = SCHEDULER,
    labels: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
    created: str | None = None,
    priority_class: str | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": cpu, "memory": memory}
    limits: dict[str, Any] = {}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "worker",
                "image": "pytorch/pytorch:2.4.0-cuda12.1",
                "resources": {"requests": requests, "limits": limits},
            }
        ],
    }
    if annotations:
        meta["annotations"] = dict(annotations)
    if group and group_api == "scheduling.volcano.sh":
        meta.setdefault("annotations", {})["scheduling.k8s.io/group-name"] = group
    elif group and group_api == "scheduling.k8s.io":
        spec["schedulingGroup"] = {"podGroupName": group}
    elif group and group_api == "scheduling.x-k8s.io":
        meta["labels"]["scheduling.x-k8s.io/pod-group"] = group
    if created:
        meta["creationTimestamp"] = created
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class  # what a real cluster admits
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    status_phase = phase or ("Running" if node_name else "Pending")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": status_phase},
    }


def pod_group(
    name: str,
    *,
    namespace: str = "default",
    min_member: int = 1,
    max_member: int | None = None,
    size_policy: str | None = None,
    cooldown: str | None = None,
    last_scale_time: str | None = None,
    api: str = "scheduling.x-k8s.io",
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``spec``: more fields of the PodGroup's spec (e.g. ``schedulingConstraints`` of the 1.37
    API, Volcano's ``networkTopology``)."""
    anns: dict[str, str] = {}
    if max_member is not None:
        anns["solver-sched.io/max-member"] = str(max_member)
    if size_policy:
        anns["solver-sched.io/size-policy"] = size_policy
    if cooldown:
        anns["solver-sched.io/cooldown"] = cooldown
    if last_scale_time:
        anns["solver-sched.io/last-scale-time"] = last_scale_time
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if anns:
        meta["annotations"] = anns
    if api == "scheduling.k8s.io":
        return {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": meta,
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_member}}, **(spec or {})},
        }
    version = "v1beta1" if api == "scheduling.volcano.sh" else "v1alpha1"
    return {
        "apiVersion": f"{api}/{version}",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": min_member, **(spec or {})},
    }


def gang(
    name: str,
    workers: int,
    *,
    namespace: str = "default",
    gpus: int = 1,
    min_member: int | None = None,
    max_member: int | None = None,
    size_policy: str | None = None,
    running_on: Sequence[str | None] | None = None,
    priority: int | None = None,
    cooldown: str | None = None,
    last_scale_time: str | None = None,
    cpu: str = "4",
    memory: str = "16Gi",
    created: str | None = None,
    priority_class: str | None = None,
    api: str = "scheduling.x-k8s.io",
    group_spec: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A PodGroup (of ``api``) and its worker pods; ``running_on[i]`` binds worker i to that
    node; ``annotations`` go on every pod (e.g. Kueue's pod-set topology)."""
    objs = [
        pod_group(
            name,
            namespace=namespace,
            min_member=min_member or workers,
            max_member=max_member,
            size_policy=size_policy,
            cooldown=cooldown,
            last_scale_time=last_scale_time,
            api=api,
            spec=group_spec,
        )
    ]
    for i in range(workers):
        where = running_on[i] if running_on and i < len(running_on) else None
        objs.append(
            pod(
                f"{name}-worker-{i}",
                namespace=namespace,
                gpus=gpus,
                group=name,
                node_name=where,
                priority=priority,
                cpu=cpu,
                memory=memory,
                created=created,
                priority_class=priority_class,
                group_api=api,
                annotations=annotations,
            )
        )
    return objs


def pytorch_job(
    name: str,
    workers: int,
    *,
    namespace: str = "default",
    gpus: int = 1,
    cpu: str = "4",
    memory: str = "16Gi",
    min_replicas: int | None = None,
    max_replicas: int | None = None,
    annotations: dict[str, str] | None = None,
    clean_pod_policy: str | None = None,
) -> dict[str, Any]:
    """A Kubeflow PyTorchJob of ``workers`` Worker replicas and no Master (torchrun's elastic
    rendezvous), elastic from ``min_replicas`` to ``max_replicas`` when they are given. The
    training-operator creates its pods and its PodGroup, onto which it copies ``annotations``."""
    container = {
        "name": "pytorch",  # the operator's default container: its port and exit code
        "image": "pytorch/pytorch:2.4.0-cuda12.1",
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"nvidia.com/gpu": str(gpus)} if gpus else {},
        },
    }
    worker = {
        "replicas": workers,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [container]}},
    }
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {"Worker": worker}}
    if min_replicas is not None or max_replicas is not None:
        spec["elasticPolicy"] = {
            "rdzvBackend": "c10d",
            "minReplicas": min_replicas if min_replicas is not None else max_replicas,
            "maxReplicas": max_replicas if max_replicas is not None else min_replicas,
        }
    if clean_pod_policy:
        spec["runPolicy"] = {"cleanPodPolicy": clean_pod_policy}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": spec}


def kueue_topology(name: str, levels: list[str], version: str = "v1beta2") -> dict[str, Any]:
    """Kueue's Topology: node-label levels, broadest first."""
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": key} for key in levels]},
    }


def quota_tree(root: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1beta1",
        "kind": "ElasticQuotaTree",
        "metadata": {"name": "elasticquotatree", "namespace": "kube-system"},
        "spec": {"root": root},
    }


def pod_disruption_budget(
    name: str,
    match_labels: dict[str, str],
    disruptions_allowed: int,
    *,
    namespace: str = "default",
    current_healthy: int = 0,
    desired_healthy: int = 0,
    unhealthy_policy: str | None = None,
    observed_generation: int = 1,
) -> dict[str, Any]:
    """A policy/v1 PodDisruptionBudget with the status its disruption controller would write."""
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(match_labels)}, "maxUnavailable": 0}
    if unhealthy_policy:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_policy
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": spec,
        "status": {
            "disruptionsAllowed": disruptions_allowed,
            "currentHealthy": current_healthy,
            "desiredHealthy": desired_healthy,
            "expectedPods": current_healthy,
            "observedGeneration": observed_generation,
        },
    }
