"""PodDisruptionBudgets -> how many running pods each job may lose at once (``Job.disruptions``),
so the plan never picks a victim the Eviction API would refuse (the actuator, which checks the
live budgets before each job-level eviction, would hold it back every cycle, and the gang the
room was for would wait behind it).

The count is what the API lets go whichever pods a scale-in takes: a budget that charges more
of the job's running pods than its ``disruptionsAllowed`` limits the job to that many. A pod the
API charges is Running and Ready, or Running and not Ready where the budget's
``unhealthyPodEvictionPolicy`` does not let it go (``kube/budgets.py`` holds the same rules for
the live check). The API refuses any eviction of a pod two budgets select, and of a pod whose
budget's status lags its spec: such a job may lose none."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from solver_sched.domain.cluster import Job, Pod, PodPhase
from solver_sched.io.context import LoadContext, parse_or_why, raw_key
from solver_sched.io.objects import PodDisruptionBudgetObj


def with_disruptions(
    b: LoadContext,
    raws: list[dict[str, Any]],
    pod_labels: Mapping[str, Mapping[str, str]],
    pods: Mapping[str, Pod],
    jobs: dict[str, Job],
) -> dict[str, Job]:
    """``jobs`` with the disruptions their budgets allow; ``pod_labels``: by pod name. A budget
    that fails validation is reported and left out (the live check still reads it)."""
    budgets: dict[str, list[PodDisruptionBudgetObj]] = defaultdict(list)
    for raw in raws:
        pdb = parse_or_why(b, PodDisruptionBudgetObj, raw)
        if isinstance(pdb, PodDisruptionBudgetObj) and raw_key(raw) is not None:
            budgets[pdb.metadata.namespace or "default"].append(pdb)
    if not budgets:
        return jobs
    out = dict(jobs)
    for name, job in jobs.items():
        running = [
            p
            for n in job.pods
            if (p := pods[n]).phase is PodPhase.RUNNING and not p.terminating  # as the actuator
        ]
        limit = _limit(budgets.get(job.namespace, ()), running, pod_labels)
        if limit is not None:
            out[name] = replace(job, disruptions=limit)
    return out


def _limit(
    budgets: list[PodDisruptionBudgetObj] | tuple[()],
    running: list[Pod],
    pod_labels: Mapping[str, Mapping[str, str]],
) -> int | None:
    limit: int | None = None
    selected = dict.fromkeys((p.name for p in running), 0)
    for pdb in budgets:
        selector, status = pdb.spec.selector, pdb.status
        if selector is None:
            continue
        covered = [p for p in running if selector.matches(pod_labels.get(p.name, {}))]
        if not covered:
            continue
        for p in covered:
            selected[p.name] += 1
        if status.observed_generation < pdb.metadata.generation:
            return 0
        desired = status.desired_healthy
        free = pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow" or (
            status.current_healthy >= desired > 0
        )
        charged = sum(1 for p in covered if p.ready or not free)
        if charged > status.disruptions_allowed:
            allowed = status.disruptions_allowed
            limit = allowed if limit is None else min(limit, allowed)
    if any(n > 1 for n in selected.values()):
        return 0
    return limit
