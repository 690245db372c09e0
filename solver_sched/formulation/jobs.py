"""Which jobs the model holds, and each one's ``JobModel``.

A job is left out with a reason when it, its queue or an ancestor queue is invalid, or while it
completes. A valid job whose size cannot change this cycle is left out too: its pods are fixed
usage (``quota_rows``), which keeps the model small on large, mostly settled clusters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from solver_sched.config.schema import ObjectiveWeights
from solver_sched.domain.cluster import Job, Pod
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.options import size_options
from solver_sched.formulation.problem import JobModel


@dataclass(frozen=True, slots=True)
class JobState:
    """A job's pods and reachable sizes this cycle, before it becomes a ``JobModel``. What
    follows from them is set once (read tens of times per job while the problem is prepared)."""

    job: Job
    running: tuple[Pod, ...]
    waiting: tuple[Pod, ...]
    sizes: tuple[int, ...]  # allowed sizes reachable this cycle (cooldown applied)
    locked: bool
    allowed: tuple[int, ...]  # the job's allowed sizes, cooldown aside
    current: int = field(init=False)  # pods running
    running_ok: bool = field(init=False)  # at a size it may keep
    starting: bool = field(init=False)  # not at such a size, and short of its minimum

    def __post_init__(self) -> None:
        current = len(self.running)
        running_ok = current in self.allowed
        object.__setattr__(self, "current", current)
        object.__setattr__(self, "running_ok", running_ok)
        object.__setattr__(self, "starting", not running_ok and current < self.job.min_pods)


def job_states(
    snapshot: ClusterSnapshot, now: datetime, reasons: dict[str, str]
) -> dict[str, JobState]:
    """The state of every job that may be planned; ``reasons`` gets why the others may not."""
    out: dict[str, JobState] = {}
    for name, job in snapshot.jobs.items():
        if job.invalid:
            reasons[name] = job.invalid
            continue
        bad = snapshot.quota.first_invalid(snapshot.queue_of(job))
        if bad is not None:
            reasons[name] = f"queue {bad.name} is invalid: {bad.invalid}"
            continue
        if job.succeeded:  # members finish one by one: never break a completing gang
            reasons[name] = f"completing: {job.succeeded} pod(s) succeeded"
            continue
        running = snapshot.running_pods(job)
        waiting = snapshot.waiting_pods(job)
        until = job.cooldown_until()
        locked = until is not None and now < until
        reachable = len(running) + len(waiting)
        top = len(running) if locked and len(running) >= job.min_pods else reachable
        if len({p.cluster for p in running}) > 1:  # (a node relabelled under it): may not grow
            top = min(top, len(running))
        allowed = job.allowed_sizes()
        sizes = tuple(s for s in allowed if s <= top)
        if job.disruptions is not None:  # its budgets let no more pods go at once (rule 6b)
            current = len(running)
            sizes = tuple(s for s in sizes if s >= current - job.disruptions)
            if current not in allowed and job.kept_whole(current):
                # partial or irregular, and its budgets refuse evicting it whole: it may stay
                # (the plan took it to 0, the eviction refused every cycle, and a partial gang
                # that could complete never did)
                allowed = tuple(sorted({*allowed, current}))
                sizes = tuple(sorted({*sizes, current}))
        if not allowed:
            reasons[name] = (
                f"{job.source or 'job ' + name}: needs at least {job.min_pods} pods, "
                f"{len(job.pods)} exist"
            )
        elif reachable < job.min_pods and (why := out_of_reach(snapshot, job)):
            reasons[name] = f"{why}: {reachable} of the {job.min_pods} it needs may be scheduled"
        out[name] = JobState(job, running, waiting, sizes, locked, allowed)
    return out


def out_of_reach(snapshot: ClusterSnapshot, job: Job) -> str:
    """Why some of a job's pending pods are not this scheduler's to bind (they keep a gang
    that needs them waiting): scheduling gates, another schedulerName."""
    pending = [p for n in job.pods if (p := snapshot.pods[n]).waiting]
    gated = [p for p in pending if p.gated]
    others = [p for p in pending if p.scheduler_name != snapshot.scheduler_name]
    out = []
    if gated:
        gates = ", ".join(sorted({g for p in gated for g in p.gated}))
        out.append(f"{len(gated)} of its pods wait behind scheduling gates ({gates})")
    if others:
        names = ", ".join(sorted({p.scheduler_name for p in others}))
        out.append(f"{len(others)} of its pods name another scheduler ({names})")
    return "; ".join(out)


def active_jobs(
    states: Mapping[str, JobState], triggers_of: Mapping[str, tuple[str, ...]]
) -> dict[str, JobState]:
    """The jobs whose size may change this cycle: the model's jobs."""
    any_start = any(st.starting and st.sizes for st in states.values())
    return {
        name: st
        for name, st in states.items()
        if _can_change(st, any_start, bool(triggers_of.get(name)))
    }


def _can_change(st: JobState, any_start: bool, breakable: bool) -> bool:
    if not st.running_ok and (st.running or st.sizes):
        return True  # pending gang, partial gang or irregular size: must be decided
    if st.running_ok and any(s > st.current for s in st.sizes):
        return True  # may scale out
    shrinkable = any_start and any(s < st.current for s in st.sizes)
    return shrinkable or (st.running_ok and breakable and any_start)


def job_model(
    snapshot: ClusterSnapshot,
    st: JobState,
    queue: str,
    tier: Mapping[int, int],
    weights: ObjectiveWeights,
    now: datetime,
    shapes_of: Mapping[str, int],
    class_of: Mapping[str, int],
    break_needs: tuple[str, ...],
    tie: int = 0,
) -> JobModel:
    job = st.job
    options = size_options(job, st.running, st.waiting, (0, *st.sizes), shapes_of, class_of)
    wait_h = 0
    if st.starting and job.created is not None:
        wait_h = min(int((now - job.created).total_seconds() // 3600), weights.waiting_cap_hours)
    clusters = tuple(sorted({p.cluster for p in st.running})) or (
        (job.cluster,) if job.cluster else ()
    )
    return JobModel(
        name=job.name,
        queue=queue,
        queue_chain=snapshot.quota.chain(queue),
        priority=job.priority,
        tier_weight=tier[job.priority],
        waiting_hours=max(0, wait_h),
        current=st.current,
        options=tuple(options),
        starting=st.starting,
        running_ok=st.running_ok,
        clusters=clusters,
        break_needs=break_needs,
        shrink_needs_start=st.running_ok,
        tie=tie,
        created=job.created.timestamp() if job.created is not None else None,
        preempts=job.preempts,
    )
