"""Quota rows: per queue of the tree with member jobs in the model, the caps, floors and max-jobs
left for them once the usage of pods outside the model is fixed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace

from solver_sched.domain import resources as res
from solver_sched.domain.quota import IMPLICIT_QUEUE, MAX_JOBS
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.jobs import JobState
from solver_sched.formulation.problem import JobModel, QuotaRow


def borrowing_and_below(
    snapshot: ClusterSnapshot, usage: Mapping[str, Mapping[str, int]]
) -> tuple[set[str], set[str]]:
    """Leaves using more than their min of some guaranteed resource, and leaves below min of some
    resource. A guaranteed resource is one that some queue has a min for; a queue that lists no
    min for it is guaranteed 0 of it (as in Kueue and ElasticQuota), so all it uses is borrowed:
    otherwise a queue without a min would hold, beyond reclaim, the room another queue is
    guaranteed."""
    queues = snapshot.quota.queues.values()
    guaranteed = {r for q in queues for r, m in q.min.items() if m > 0}
    borrowing, below = set(), set()
    for q in queues:
        used = usage.get(q.name, {})
        if any(used.get(r, 0) > q.min.get(r, 0) for r in guaranteed):
            borrowing.add(q.name)
        if any(used.get(r, 0) < m for r, m in q.min.items()):
            below.add(q.name)
    return borrowing, below


def quota_rows(
    snapshot: ClusterSnapshot,
    jobs: tuple[JobModel, ...],
    active: Mapping[str, JobState],
    usage_now: Mapping[str, Mapping[str, int]],
    borrowing: set[str],
) -> tuple[QuotaRow, ...]:
    members: dict[str, list[int]] = defaultdict(list)
    for i, jm in enumerate(jobs):
        for q in jm.queue_chain:
            members[q].append(i)
    active_usage = snapshot.queue_usage(p for st in active.values() for p in st.running)
    forced = snapshot.queue_usage(  # partial or irregular gangs go whatever the floor says
        p for st in active.values() if not st.running_ok for p in st.running
    )
    rows = []
    for name in sorted(snapshot.quota.queues):
        if name == IMPLICIT_QUEUE or not members.get(name):
            continue
        queue = snapshot.quota.queues[name]
        now_total = usage_now.get(name, {})
        fixed = res.sub(now_total, active_usage.get(name, {}))
        cap = {r: max(m, now_total.get(r, 0)) - fixed.get(r, 0) for r, m in queue.max.items()}
        floor = {}
        if name in borrowing:
            floor = {
                r: min(m, now_total.get(r, 0) - forced.get(name, {}).get(r, 0)) - fixed.get(r, 0)
                for r, m in queue.min.items()
                if now_total.get(r, 0) > m
            }
        jobs_cap = None
        if queue.max_jobs is not None:
            jobs_cap = max(queue.max_jobs, now_total.get(MAX_JOBS, 0)) - fixed.get(MAX_JOBS, 0)
        min_gpus = 0
        if queue.namespaces:  # no more than its jobs can hold: a valid min of 1e15 GPUs is too
            reach = sum(max(o.guaranteed_gpus for o in jobs[i].options) for i in members[name])
            min_gpus = min(reach, max(0, queue.min.get(res.GPU, 0) - fixed.get(res.GPU, 0)))
        rows.append(QuotaRow(name, tuple(members[name]), cap, floor, jobs_cap, fixed, min_gpus))
    return tuple(rows)


def licences(
    rows: tuple[QuotaRow, ...],
    jobs: tuple[JobModel, ...],
    triggers: Mapping[str, tuple[int, ...]],
) -> tuple[QuotaRow, ...]:
    """Each row with the gangs a start may break among its members and the member starts that
    may break one of them (rule 3b), where some other member could grow into what a break frees;
    without such a member the row's own caps already say it all."""
    fired: dict[int, set[str]] = defaultdict(set)
    for key, starts in triggers.items():
        for j in starts:
            fired[j].add(key)
    out = []
    for row in rows:
        breakable = tuple(j for j in row.jobs if jobs[j].running_ok and jobs[j].break_needs)
        held = {k for j in breakable for k in jobs[j].break_needs}
        licensed = frozenset(j for j in row.jobs if jobs[j].starting and fired[j] & held)
        grows = any(  # a pending gang comes first in most rows: the scan stops there
            jobs[j].starting or any(o.size > jobs[j].current for o in jobs[j].options)
            for j in row.jobs
            if j not in licensed
        )
        if breakable and grows and (row.cap or row.jobs_cap is not None):
            row = replace(row, breakable=breakable, licensed=licensed)
        out.append(row)
    return tuple(out)
