"""Hub jobs as the loader's objects: the gang (rigid as placed, or elastic at the sizes its
size-policy allows) and its pods (pending while queued, restricted to the members it may use;
once placed, the copy's bound pods and the nodes reserved at dispatch)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from solver_sched.io.fleet_hub import (
    ANN_SIZE_POLICY,
    IN_MEMBER,
    KUBEFLOW_API,
    REPLICA_INDEX,
    REPLICA_TYPE,
    HubJob,
)
from solver_sched.io.kubeflow import KUBEFLOW_JOB_LABEL
from solver_sched.io.nodes import CLUSTER_LABEL


def fleet_pytorchjob(job: HubJob) -> dict[str, Any]:
    """The job as the loader's gang: rigid at its replicas (placed: as placed), or, elastic and
    not placed yet, from min to max pods at the sizes its ``size-policy`` allows (power-of-two
    unless the hub job says otherwise)."""
    meta = job.raw.get("metadata") or {}
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {t: {"replicas": n} for t, n in job.replicas}}
    anns: dict[str, str] = {}
    if job.elastic is not None:
        lo, hi = job.elastic
        others = sum(n for t, n in job.replicas if t.lower() != "worker")
        spec["elasticPolicy"] = {"minReplicas": lo - others, "maxReplicas": hi - others}
        given = (meta.get("annotations") or {}).get(ANN_SIZE_POLICY)
        anns[ANN_SIZE_POLICY] = str(given or "power-of-two")
    return {
        "apiVersion": KUBEFLOW_API,
        "kind": "PyTorchJob",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "uid": job.uid,
            "creationTimestamp": meta.get("creationTimestamp"),
            "annotations": anns,
        },
        "spec": spec,
    }


def _allowed_clusters(job: HubJob) -> list[dict[str, Any]]:
    """Node-affinity expressions that keep the job on the members it may use."""
    assert job.policy is not None
    exprs: list[dict[str, Any]] = []
    if job.policy.clusters:
        exprs.append({"key": CLUSTER_LABEL, "operator": "In", "values": list(job.policy.clusters)})
    avoid = sorted({*job.policy.exclude, *job.failed_clusters})
    if avoid:
        exprs.append({"key": CLUSTER_LABEL, "operator": "NotIn", "values": avoid})
    return exprs


def allowed_key(job: HubJob) -> str:
    return json.dumps(_allowed_clusters(job), sort_keys=True)


def queued_pods(
    job: HubJob, scheduler_name: str
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]]]:
    synthetic: dict[str, tuple[str, str]] = {}
    return job_pods(job, scheduler_name, {}, synthetic), synthetic


def job_pods(
    job: HubJob,
    scheduler_name: str,
    real: Mapping[str, dict[str, Any]],
    synthetic: dict[str, tuple[str, str]],
) -> list[dict[str, Any]]:
    """Pods of the job in the fleet view: pending ones while queued; once placed, the reserved
    node for each replica not bound yet (``real``: the copy's bound pods, by replica suffix,
    which the member's objects hold already)."""
    specs = (job.raw.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    meta = job.raw.get("metadata") or {}
    p = job.placement
    out = []
    for rtype, count in job.replicas:
        template = (specs.get(rtype) or {}).get("template") or {}
        for i in range(count):
            suffix = f"{rtype.lower()}-{i}"
            if p is not None and suffix in real:
                continue
            spec = dict(template.get("spec") or {})  # shallow: only top-level keys change
            spec["schedulerName"] = scheduler_name
            spec.pop("nodeName", None)
            spec.pop("priority", None)
            _without_pod_terms(spec)
            name = f"{job.name}-{suffix}"
            if p is None:
                _add_affinity(spec, _allowed_clusters(job))
                synthetic[f"{job.namespace}/{name}"] = (job.key, suffix)
            else:  # reserved where it was dispatched: counts for quota, and for capacity
                name = f"{p.cluster}{IN_MEMBER}{name}"
                spec["nodeName"] = f"{p.cluster}/{p.nodes.get(suffix, '(unknown)')}"
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": job.namespace,
                        "uid": f"{job.uid}/{suffix}",
                        "creationTimestamp": meta.get("creationTimestamp"),
                        "labels": {
                            KUBEFLOW_JOB_LABEL: job.name,
                            REPLICA_TYPE: rtype.lower(),
                            REPLICA_INDEX: str(i),
                        },
                    },
                    "spec": spec,
                    "status": {"phase": "Pending"},
                }
            )
    return out


def _without_pod_terms(spec: dict[str, Any]) -> None:
    """Inter-pod terms are the member scheduler's to apply (it sees the pods they select): the
    fleet view leaves them out, rather than hold the job on terms it does not model."""
    spec.pop("topologySpreadConstraints", None)
    if isinstance(aff := spec.get("affinity"), dict) and (
        {"podAffinity", "podAntiAffinity"} & aff.keys()
    ):
        spec["affinity"] = {
            k: v for k, v in aff.items() if k not in ("podAffinity", "podAntiAffinity")
        }


def _add_affinity(spec: dict[str, Any], exprs: list[dict[str, Any]]) -> None:
    """ANDs the expressions into every required nodeSelectorTerm (terms are ORed). The
    template's own objects are copied on the way, never changed."""
    if not exprs:
        return
    aff = dict(spec.get("affinity") or {})
    node_aff = dict(aff.get("nodeAffinity") or {})
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    req = dict(node_aff.get(key) or {})
    terms = req.get("nodeSelectorTerms") or [{}]
    req["nodeSelectorTerms"] = [
        {**t, "matchExpressions": [*(t.get("matchExpressions") or []), *exprs]} for t in terms
    ]
    node_aff[key] = req
    aff["nodeAffinity"] = node_aff
    spec["affinity"] = aff
