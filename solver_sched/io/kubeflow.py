"""Kubeflow training jobs: a PyTorchJob's replica specs and elastic policy give its gang's min and
max; its pods are found by the training.kubeflow.org/job-name label."""

from __future__ import annotations

from typing import Any

from solver_sched.domain.cluster import Job
from solver_sched.io.context import TWICE, LoadContext, parse_or_why, raw_key
from solver_sched.io.job_annotations import job_scaling
from solver_sched.io.objects import PyTorchJobObj

KUBEFLOW_JOB_LABEL = "training.kubeflow.org/job-name"


def pytorch_jobs(
    b: LoadContext, raws: list[dict[str, Any]]
) -> dict[tuple[str, str], PyTorchJobObj | str]:
    """PyTorchJobs by (namespace, name); one that failed validation as why, so its gang is held
    with that reason rather than planned as if it had no PyTorchJob."""
    pytorch: dict[tuple[str, str], PyTorchJobObj | str] = {}
    for raw in raws:
        key = raw_key(raw)
        pj = parse_or_why(b, PyTorchJobObj, raw)
        if key is not None:
            if key in pytorch:
                b.error(f"PyTorchJob {'/'.join(key)}", "metadata.name", TWICE)
            pytorch[key] = pj
    return pytorch


def kubeflow_job(
    b: LoadContext, name: str, pj: PyTorchJobObj | None, pods: int, base: dict[str, Any]
) -> Job:
    """A Kubeflow job without a PodGroup: the PyTorchJob carries the annotations, if there is one;
    without one, the job is its pods."""
    lo, hi, src = pytorch_range(pj, pods)
    invalid = None
    if pj is not None:
        # min counts the non-Worker replicas too: the field is the policy, not minReplicas
        fld = "spec.elasticPolicy" if pj.spec.elastic_policy else "spec.pytorchReplicaSpecs"
        invalid = no_guaranteed_pod(b, pj, src, lo)
        invalid = invalid or inverted_range(b, pj, src)
        scaling, invalid = job_scaling(b, src, pj.metadata.annotations, lo, fld, invalid)
        base = {**base, **scaling}
    return Job(name=name, min_pods=lo, max_pods=hi, source=src, invalid=invalid, **base)


def pytorch_range(pj: PyTorchJobObj | None, pods: int) -> tuple[int, int, str]:
    if pj is None:
        return pods, pods, "pods with training.kubeflow.org/job-name"
    src = f"PyTorchJob {pj.metadata.namespace}/{pj.metadata.name}"
    others = sum(
        r.replicas for t, r in pj.spec.pytorch_replica_specs.items() if t.lower() != "worker"
    )
    workers = sum(
        r.replicas for t, r in pj.spec.pytorch_replica_specs.items() if t.lower() == "worker"
    )
    ep = pj.spec.elastic_policy
    # the training-operator's defaults: a bound left unset is the other one
    if ep and ep.min_replicas is not None:
        hi = ep.max_replicas if ep.max_replicas is not None else ep.min_replicas
        return others + ep.min_replicas, others + hi, src
    if ep and ep.max_replicas is not None:
        return others + ep.max_replicas, others + ep.max_replicas, src
    return others + workers, others + workers, src


def no_guaranteed_pod(b: LoadContext, pj: PyTorchJobObj, src: str, lo: int) -> str | None:
    """The error for a PyTorchJob whose min leaves the gang without a pod (workers only with
    minReplicas below 1, or no replicas at all): it is reported, not planned with a min of 0."""
    if lo >= 1:
        return None
    ep = pj.spec.elastic_policy
    if ep is not None and ep.min_replicas is not None:
        return b.error(
            src, "spec.elasticPolicy.minReplicas", f"leaves the gang no pod: {ep.min_replicas}"
        )
    return b.error(src, "spec.pytorchReplicaSpecs", "no replicas: the gang has no pod")


def inverted_range(b: LoadContext, pj: PyTorchJobObj, src: str) -> str | None:
    """The error for an elasticPolicy whose max is below its min, in the fields' own numbers
    (the gang's min and max also count the non-Worker replicas)."""
    ep = pj.spec.elastic_policy
    if ep is None or ep.min_replicas is None or ep.max_replicas is None:
        return None  # a bound left unset is the other one (the operator's default)
    if ep.max_replicas >= ep.min_replicas:
        return None
    why = f"maxReplicas {ep.max_replicas} < minReplicas {ep.min_replicas}"
    return b.error(src, "spec.elasticPolicy", why)
