"""Kubernetes objects -> ClusterSnapshot, validated at the edge.

Bad objects do not stop the cycle: a node, job or queue that fails validation is kept out of
planning (or marked invalid) with an InputError naming the object and the field; the rest of the
cluster is still planned. One module per object family: ``priority_classes``, ``nodes``,
``pods``, ``quota_tree``, ``gangs`` (PodGroup APIs), ``kubeflow`` (PyTorchJob) and
``job_annotations``; ``context`` holds what a load shares.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.context import LoadContext
from solver_sched.io.gangs import jobs_from, pod_groups
from solver_sched.io.kubeflow import pytorch_jobs
from solver_sched.io.nodes import node_from
from solver_sched.io.pods import pod_from
from solver_sched.io.priority_classes import read_priority_classes
from solver_sched.io.quota_tree import quota_tree


def snapshot_from_objects(
    objects: Iterable[dict[str, Any]],
    scheduler_name: str = "solver-sched",
    default_cooldown: timedelta = timedelta(minutes=10),
) -> ClusterSnapshot:
    b = LoadContext(scheduler_name, default_cooldown)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in objects:
        by_kind[str(obj.get("kind", ""))].append(obj)
    read_priority_classes(b, by_kind["PriorityClass"])
    nodes = {n.name: n for raw in by_kind["Node"] if (n := node_from(b, raw)) is not None}
    pods = {p.name: p for raw in by_kind["Pod"] if (p := pod_from(b, raw, nodes)) is not None}
    quota = quota_tree(b, by_kind["ElasticQuotaTree"])
    groups = pod_groups(b, by_kind["PodGroup"])
    pytorch = pytorch_jobs(b, by_kind["PyTorchJob"])
    jobs = jobs_from(b, pods, groups, pytorch)
    job_of = {p: name for name, job in jobs.items() for p in job.pods}
    pods = {
        n: replace(p, job=job_of[n]) if job_of.get(n, p.job) != p.job else p
        for n, p in pods.items()
    }
    return ClusterSnapshot(
        nodes=nodes,
        pods=pods,
        jobs=jobs,
        quota=quota,
        scheduler_name=scheduler_name,
        errors=tuple(b.errors),
    )
