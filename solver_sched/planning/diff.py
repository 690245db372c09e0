"""Final plan state -> Plan: binds, job-level evictions with who they make room for, job rows."""

from __future__ import annotations

from datetime import datetime

from solver_sched.domain.plan import BindPod, EvictJob, JobOutcome, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.sizes import change_to
from solver_sched.placement.state import PlanState
from solver_sched.planning.explain import Room, explain


def diff(snapshot: ClusterSnapshot, st: PlanState, now: datetime, notes: list[str]) -> Plan:
    problem = st.problem
    models = {jm.name: jm for jm in problem.jobs}
    binds = tuple(
        BindPod(pod=p, node=n, job=snapshot.pods[p].job) for p, n in sorted(st.placed.items())
    )
    bound_on: dict[str, set[str]] = {}
    for b in binds:
        bound_on.setdefault(b.node, set()).add(b.job)
    evictions = []
    outcomes = []
    rooms: Room = {}
    for name in sorted(snapshot.jobs):
        job = snapshot.jobs[name]
        jm = models.get(name)
        current = len(snapshot.running_pods(job))
        planned = st.size.get(name, current)
        reason = ""
        if planned < current:
            pods = change_to(snapshot, job, planned, st.order_of(name)).evict
            beneficiaries = sorted({j for p in pods for j in bound_on.get(p.node_name or "", ())})
            if planned == 0 and jm is not None and jm.running_ok and jm.break_needs:
                beneficiaries = _licensed(st, jm.break_needs, beneficiaries)
            reason = _evict_reason(
                snapshot,
                name,
                current,
                planned,
                beneficiaries,
                jm is not None and not jm.running_ok,
            )
            evictions.append(EvictJob(job=name, pods=tuple(p.name for p in pods), reason=reason))
        queue = snapshot.queue_of(job)
        outcomes.append(
            JobOutcome(
                name=name,
                queue=queue,
                priority=job.priority,
                min_workers=job.min_pods,
                max_workers=job.max_pods,
                allowed_sizes=job.allowed_sizes() if not job.invalid else (),
                current=current,
                planned=planned,
                reason=reason or explain(st, job, jm, planned, now, rooms),
            )
        )
    return Plan(binds=binds, evictions=tuple(evictions), jobs=tuple(outcomes), notes=tuple(notes))


def _licensed(st: PlanState, needs: tuple[str, ...], on_its_nodes: list[str]) -> list[str]:
    """Of the gangs a break makes room for, those whose start may break it (rules 4-6: higher
    priority in its queue, or a reclaim), else every such start of the plan, highest priority
    first: a gang of equal priority that took the room was named as the preemptor."""
    jobs, snapshot = st.problem.jobs, st.snapshot
    may = {
        jobs[i].name
        for key in needs
        for i in st.problem.triggers.get(key, ())
        if jobs[i].starting and st.size.get(jobs[i].name, 0) > jobs[i].current  # started
    }
    named = [j for j in on_its_nodes if j in may]
    return named or sorted(may, key=lambda j: (-snapshot.jobs[j].priority, j))


def _evict_reason(
    snapshot: ClusterSnapshot,
    name: str,
    current: int,
    planned: int,
    beneficiaries: list[str],
    irregular: bool,
) -> str:
    if irregular:
        job = snapshot.jobs[name]
        if current < job.min_pods:
            # (the room may be there, given to work of more value: "cannot" was not always so)
            return f"gang incomplete ({current} of {job.min_pods} pods), not completed by this plan"
        return f"{current} pods is not an allowed size; resized to {planned}"
    for_whom = (
        ", ".join(f"{b} (priority {snapshot.jobs[b].priority})" for b in beneficiaries[:3])
        or "guaranteed gangs of this plan"
    )
    if planned == 0:
        return f"preempted by {for_whom}"
    return f"scaled in {current} -> {planned} to make room for {for_whom}"
