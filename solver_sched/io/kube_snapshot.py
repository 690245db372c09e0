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
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import cache, partial
from typing import Any

from pydantic import ValidationError

from solver_sched.domain.cluster import Node, Pod
from solver_sched.domain.snapshot import ClusterSnapshot, InputError
from solver_sched.io.budgets import with_disruptions
from solver_sched.io.claims import with_claims
from solver_sched.io.context import TWICE, LoadContext, raw_key
from solver_sched.io.gangs import group_key, jobs_from, pod_groups
from solver_sched.io.gcpause import gc_paused
from solver_sched.io.kubeflow import pytorch_jobs
from solver_sched.io.nodes import node_from
from solver_sched.io.objects import PodObj
from solver_sched.io.pods import pod_from
from solver_sched.io.priority_classes import read_priority_classes
from solver_sched.io.quota_tree import quota_tree
from solver_sched.io.topology import kueue_topologies

READ_KINDS = frozenset(
    {
        "Node",
        "Pod",
        "PriorityClass",
        "PodGroup",
        "ElasticQuotaTree",
        "PyTorchJob",
        "PodDisruptionBudget",
        "Topology",
    }
)  # what a snapshot reads; other kinds are left alone
FLEET_KINDS = frozenset({"PropagationPolicy", "ClusterPropagationPolicy", "Cluster"})


@dataclass
class Parsed:
    """Nodes and pods parsed by one load, for the next load of mostly the same dicts (the
    controller's two snapshots of a cycle, which differ in a few in-flight pods): by the dict's
    identity, each entry keeps its dict alive (so the identity stays its own) with the result
    and the InputErrors its parse reported. A pod's entry also holds the node it ran on and the
    priority classes it was read with, so a changed node or class is read afresh."""

    entries: dict[tuple[Any, ...], tuple[Any, Any, tuple[InputError, ...]]] = field(
        default_factory=dict
    )
    used: set[tuple[Any, ...]] = field(default_factory=set)

    def get(self, b: LoadContext, raw: Any, key: tuple[Any, ...], read: Any) -> Any:
        self.used.add(key)
        hit = self.entries.get(key)
        if hit is not None and hit[0] is raw:
            b.errors.extend(hit[2])
            return hit[1]
        found = len(b.errors)
        value = read()
        self.entries[key] = (raw, value, tuple(b.errors[found:]))
        return value

    def prune(self) -> None:
        """Forget what the loads since the last prune did not use (kept across cycles, the
        cache holds only what the cluster still has)."""
        self.entries = {k: v for k, v in self.entries.items() if k in self.used}
        self.used = set()


def snapshot_from_objects(
    objects: Iterable[dict[str, Any]],
    scheduler_name: str = "solver-sched",
    default_cooldown: timedelta = timedelta(minutes=10),
    parsed: Parsed | None = None,
) -> ClusterSnapshot:
    """``parsed``: reuse what an earlier load of the same dicts parsed (see ``Parsed``)."""
    with gc_paused():
        return _snapshot(objects, scheduler_name, default_cooldown, parsed or Parsed())


def _snapshot(
    objects: Iterable[dict[str, Any]],
    scheduler_name: str,
    default_cooldown: timedelta,
    parsed: Parsed,
) -> ClusterSnapshot:
    b = LoadContext(scheduler_name, default_cooldown)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in objects:
        by_kind[str(obj.get("kind") or "")].append(obj)
    for raw in by_kind[""]:  # a file's object without a kind (informers set it)
        meta = raw.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        b.error(f"object {name if isinstance(name, str) else '(unnamed)'}", "kind", "missing")
    read_priority_classes(b, by_kind["PriorityClass"])
    classes = (b.default_priority, tuple(sorted(b.priority_classes.items())))
    nodes: dict[str, Node] = {}
    for raw in by_kind["Node"]:
        n = parsed.get(b, raw, ("node", id(raw)), partial(node_from, b, raw))
        if n is not None:
            if n.name in nodes:
                b.error(f"Node {n.name}", "metadata.name", TWICE)
            nodes[n.name] = n
    pods: dict[str, Pod] = {}
    unknown_room: dict[str, str] = {}  # node -> the pod on it whose requests are unknown
    unread: dict[str, str] = {}  # gang key -> why: a member pod that failed validation
    for raw in by_kind["Pod"]:
        spec = raw.get("spec")
        on = nodes.get(str(spec.get("nodeName") or "")) if isinstance(spec, dict) else None
        key = ("pod", id(raw), id(on), classes)
        p = parsed.get(b, raw, key, partial(pod_from, b, raw, nodes))
        if p is not None:
            if p.name in pods:
                b.error(f"Pod {p.name}", "metadata.name", TWICE)
            pods[p.name] = p
            if p.unread and p.bound and on is not None:
                unknown_room.setdefault(on.name, f"pod {p.name}")
        else:
            name = "/".join(raw_key(raw) or ("(unnamed)",))
            if on is not None and _holds_node(raw):
                unknown_room.setdefault(on.name, f"pod {name}")
            if _holds_node(raw) and (gang := _raw_group(raw)) is not None:  # a live member
                unread[gang] = f"Pod {name}: could not be read (see its error): its gang is held"
    for name, pod in unknown_room.items():  # nothing more is bound there until it reads again
        if nodes[name].invalid is None:
            why = f"{pod} on it could not be read (see its error): its free room is unknown"
            nodes[name] = replace(nodes[name], invalid=why)
    labels = cache(partial(_labels, by_kind["Pod"]))  # read once, if a term or budget needs them
    pods, nodes = with_claims(by_kind["Pod"], pods, nodes, scheduler_name, labels)
    quota = quota_tree(b, by_kind["ElasticQuotaTree"])
    groups = pod_groups(b, by_kind["PodGroup"])
    pytorch = pytorch_jobs(b, by_kind["PyTorchJob"])
    jobs = jobs_from(b, pods, groups, pytorch, unread)
    if budgets := by_kind["PodDisruptionBudget"]:
        jobs = with_disruptions(b, budgets, labels(), pods, jobs)
    topologies = kueue_topologies(b, by_kind["Topology"])
    job_of = {p: name for name, job in jobs.items() for p in job.pods}
    for n, p in pods.items():
        job = job_of.get(n, p.job)
        if job != p.job:
            pods[n] = parsed.get(b, p, ("job of", id(p), job), partial(replace, p, job=job))
    return ClusterSnapshot(
        nodes=nodes,
        pods=pods,
        jobs=jobs,
        quota=quota,
        scheduler_name=scheduler_name,
        errors=tuple(b.errors),
        topologies=topologies,
    )


def _labels(raws: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Pod labels by pod name, read only where a PodDisruptionBudget may select them."""
    out = {}
    for raw in raws:
        key, meta = raw_key(raw), raw.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        if key is not None and isinstance(labels, dict):
            out["/".join(key)] = {str(k): str(v) for k, v in labels.items()}
    return out


def _holds_node(raw: dict[str, Any]) -> bool:
    """A pod that failed validation still holds its node unless its phase says it ended."""
    status = raw.get("status")
    phase = status.get("phase") if isinstance(status, dict) else None
    return phase not in ("Succeeded", "Failed")


def _raw_group(raw: dict[str, Any]) -> str | None:
    """The gang a pod that failed validation names, if its metadata can still say."""
    spec = raw.get("spec")
    group = spec.get("schedulingGroup") if isinstance(spec, dict) else None
    try:
        p = PodObj.model_validate(
            {"metadata": raw.get("metadata"), "spec": {"schedulingGroup": group}}
        )
    except ValidationError:
        return None
    return group_key(p)
