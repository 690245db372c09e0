"""PodDisruptionBudgets -> how many running pods each job may lose at once (``Job.disruptions``),
so the plan never picks a victim the Eviction API would refuse (the actuator, which checks the
live budgets before each job-level eviction, would hold it back every cycle, and the gang the
room was for would wait behind it).

The count is what the API lets go whichever pods a scale-in takes: a budget that charges more
of the job's running pods than its ``disruptionsAllowed`` limits the job to that many. A pod the
API charges is Running and Ready, or Running and not Ready where the budget's
``unhealthyPodEvictionPolicy`` does not let it go (``charges``, which the live check in
``kube/budgets.py`` uses too). The API refuses any eviction of a pod two budgets select, and
of a pod whose budget's status lags its spec (``stale``): such a job may lose none."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from solver_sched.domain.cluster import Job, Pod, PodPhase
from solver_sched.io.context import LoadContext, parse_or_why, raw_key
from solver_sched.io.objects import LabelSelectorModel, PodDisruptionBudgetObj


def with_disruptions(
    b: LoadContext,
    raws: list[dict[str, Any]],
    pod_labels: Mapping[str, Mapping[str, str]],
    pods: Mapping[str, Pod],
    jobs: dict[str, Job],
) -> dict[str, Job]:
    """``jobs`` with the disruptions their budgets allow; ``pod_labels``: by pod name. A budget
    that fails validation is reported and left out (the live check still reads it).

    A budget over several jobs is shared: its ``disruptionsAllowed`` goes to them in turn,
    lowest priority first (the likeliest victims). A job takes what the API would charge for
    all of it while that fits; otherwise it may lose what is left, which it takes only if some
    allowed size is within it (a rigid gang, which could never use it, leaves it to the next).
    Jobs no plan changes (invalid, completing) take nothing. So no plan evicts more under one
    budget than it allows: the API would refuse the job evicted last, after the first had gone
    for nothing."""
    budgets: dict[str, list[PodDisruptionBudgetObj]] = defaultdict(list)
    for raw in raws:
        pdb = parse_or_why(b, PodDisruptionBudgetObj, raw)
        if isinstance(pdb, PodDisruptionBudgetObj) and raw_key(raw) is not None:
            budgets[pdb.metadata.namespace or "default"].append(pdb)
    if not budgets:
        return jobs
    # namespace -> (job, pod) of the running pods the API charges, lowest priority first
    running: dict[str, list[tuple[str, Pod]]] = defaultdict(list)
    for job in sorted(jobs.values(), key=lambda j: (j.priority, j.name)):
        if job.namespace in budgets:
            running[job.namespace] += [
                (job.name, p)
                for n in job.pods
                if (p := pods[n]).phase is PodPhase.RUNNING and not p.terminating  # as the actuator
            ]
    job_of = {p.name: name for pairs in running.values() for name, p in pairs}
    current = Counter(job_of.values())
    limits: dict[str, int] = {}
    for ns, pdbs in budgets.items():
        selected: dict[str, int] = defaultdict(int)
        index = _index(running[ns], pod_labels)
        for pdb in pdbs:
            if pdb.spec.selector is None:  # policy/v1: selects no pod
                continue
            some = _candidates(pdb.spec.selector, running[ns], index)
            covered = [
                (j, p) for j, p in some if pdb.spec.selector.matches(pod_labels.get(p.name, {}))
            ]
            for name, limit in _shares(pdb, covered, jobs, current, selected).items():
                limits[name] = min(limit, limits.get(name, limit))
        for pod_name, n in selected.items():
            if n > 1:  # the API refuses to evict a pod two budgets select
                limits[job_of[pod_name]] = 0
    return {
        name: replace(job, disruptions=limits[name]) if name in limits else job
        for name, job in jobs.items()
    }


def _index(
    running: list[tuple[str, Pod]], pod_labels: Mapping[str, Mapping[str, str]]
) -> dict[tuple[str, str], list[int]]:
    """Label pair -> the positions in ``running`` of the pods that carry it."""
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (_, p) in enumerate(running):
        for pair in pod_labels.get(p.name, {}).items():
            out[pair].append(i)
    return out


def _candidates(
    selector: LabelSelectorModel,
    running: list[tuple[str, Pod]],
    index: Mapping[tuple[str, str], list[int]],
) -> list[tuple[str, Pod]]:
    """The pods of the selector's rarest matchLabels pair or ``In`` requirement, in
    ``running``'s order; all of them when it has neither (a budget per job in a namespace of
    thousands of pods: every budget read every pod)."""
    lists = [index.get(pair, []) for pair in selector.match_labels.items()]
    for r in selector.match_expressions:
        if r.operator == "In":
            lists.append(sorted({i for v in r.values for i in index.get((r.key, v), ())}))
    if not lists:
        return running
    return [running[i] for i in min(lists, key=len)]


def _shares(
    pdb: PodDisruptionBudgetObj,
    covered: list[tuple[str, Pod]],
    jobs: Mapping[str, Job],
    current: Mapping[str, int],
    selected: dict[str, int],
) -> dict[str, int]:
    """Job -> the running pods it may lose under this budget, for the jobs it limits;
    ``covered``: the running pods it selects, lowest priority first."""
    for _, p in covered:
        selected[p.name] += 1
    if stale(pdb):  # the API refuses them all
        return {j: 0 for j, _ in covered}
    charged: dict[str, int] = {}
    for j, p in covered:
        if not jobs[j].invalid and not jobs[j].succeeded:  # (no plan changes those)
            charged[j] = charged.get(j, 0) + charges(pdb, p.ready)
    left, out = pdb.status.disruptions_allowed, {}
    for job, n in charged.items():
        if n <= left:
            left -= n
            continue
        out[job] = left
        cur = current[job]
        if any(s < cur and cur - s <= left for s in jobs[job].allowed_sizes()):
            left = 0  # it may shrink by what is left: nothing more for the next
    return out


def stale(pdb: PodDisruptionBudgetObj) -> bool:
    """Its status lags its spec: the Eviction API refuses every pod it selects."""
    return pdb.status.observed_generation < pdb.metadata.generation


def charges(pdb: PodDisruptionBudgetObj, ready: bool) -> bool:
    """Whether the Eviction API charges a running pod it selects to it: a Ready one always; one
    that is not Ready unless ``unhealthyPodEvictionPolicy`` lets it go (AlwaysAllow; the
    default IfHealthyBudget while the budget has its desired healthy pods, and wants some)."""
    status = pdb.status
    free = pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow" or (
        status.current_healthy >= status.desired_healthy > 0
    )
    return ready or not free
