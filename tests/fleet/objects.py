"""Keyword builders of hub and member objects for the fleet tests."""

from __future__ import annotations

from typing import Any

POLICY_API = "policy.one.alibabacloud.com/v1alpha1"


def policy(
    name: str = "gang",
    namespace: str = "default",
    *,
    custom: str | None = "Gang",
    queued: bool = True,
    purge: str | None = "Immediately",
    toleration: int = 30,
    clusters: list[str] | None = None,
    job: str | None = None,
    api: str = POLICY_API,
) -> dict[str, Any]:
    selector: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}
    if job:
        selector["name"] = job
    rs: dict[str, Any] = {"replicaSchedulingType": "Divided"}
    if custom is not None:
        rs["customSchedulingType"] = custom
    placement: dict[str, Any] = {"replicaScheduling": rs}
    if clusters:
        placement["clusterAffinity"] = {"clusterNames": clusters}
    spec: dict[str, Any] = {"resourceSelectors": [selector], "placement": placement}
    if queued:
        spec["suspension"] = {"scheduling": True}
    if purge is not None:
        spec["failover"] = {
            "application": {
                "decisionConditions": {"tolerationSeconds": toleration},
                "purgeMode": purge,
            }
        }
    return {
        "apiVersion": api,
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def pytorchjob(
    name: str,
    namespace: str = "default",
    *,
    masters: int = 1,
    workers: int = 2,
    gpus: int = 1,
    cpu: str = "1",
    priority_class: str | None = None,
    uid: str | None = None,
    created: str = "2026-01-01T11:00:00Z",
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    def replica(n: int) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": "pytorch",
            "image": "pytorch/pytorch:2.4",
            "resources": {
                "requests": {"cpu": cpu, "nvidia.com/gpu": str(gpus)},
                "limits": {"nvidia.com/gpu": str(gpus)},
            },
        }
        spec: dict[str, Any] = {"containers": [container]}
        if priority_class:
            spec["priorityClassName"] = priority_class
        if node_selector:
            spec["nodeSelector"] = node_selector
        return {"replicas": n, "restartPolicy": "OnFailure", "template": {"spec": spec}}

    specs = {"Master": replica(masters)} if masters else {}
    if workers:
        specs["Worker"] = replica(workers)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "creationTimestamp": created}
    meta["uid"] = uid or f"{abs(hash((namespace, name))):032x}"[:32]
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": meta,
        "spec": {"pytorchReplicaSpecs": specs},
    }


def quota_tree(max_jobs: int | None = None, gpus: int | None = None) -> dict[str, Any]:
    leaf_max: dict[str, Any] = {}
    if max_jobs is not None:
        leaf_max["kube-queue/max-jobs"] = max_jobs
    if gpus is not None:
        leaf_max["nvidia.com/gpu"] = gpus
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1beta1",
        "kind": "ElasticQuotaTree",
        "metadata": {"name": "elasticquotatree", "namespace": "kube-system"},
        "spec": {
            "root": {
                "name": "root",
                "max": {"nvidia.com/gpu": 10000},
                "min": {},
                "children": [
                    {"name": "team-a", "namespaces": ["default"], "max": leaf_max, "min": {}}
                ],
            }
        },
    }


def node(name: str, gpus: int = 8, cpu: str = "64", labels: dict[str, str] | None = None):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "status": {
            "allocatable": {
                "cpu": cpu,
                "memory": "512Gi",
                "nvidia.com/gpu": str(gpus),
                "pods": "110",
            },
            "capacity": {"cpu": cpu, "memory": "512Gi", "nvidia.com/gpu": str(gpus), "pods": "110"},
        },
    }


def pod(name: str, node_name: str | None, gpus: int = 1, namespace: str = "default", **labels: str):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels},
        "spec": {
            "nodeName": node_name,
            "schedulerName": "default-scheduler",
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "resources": {
                        "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
                        "limits": {"nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
