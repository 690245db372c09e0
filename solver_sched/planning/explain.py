"""Why a job is not (fully) placed: a reason a user can act on, from the final plan state.

A reason says what blocks the job now, and every count in it says which moment it is of:
"5 GPUs free before this plan, 1 after it" (the plan's own binds and evictions in between)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from solver_sched.domain import resources as res
from solver_sched.domain.claims import is_claim
from solver_sched.domain.cluster import Job, Pod
from solver_sched.domain.quota import MAX_JOBS
from solver_sched.domain.topology import DomainId, Mode, short
from solver_sched.formulation.classes import no_node_reason
from solver_sched.formulation.jobs import out_of_reach
from solver_sched.formulation.problem import JobModel
from solver_sched.formulation.sizes import change_to
from solver_sched.placement.state import PlanState

# pod shape -> (pods of it that fit, GPUs free) before the plan and after it, per plan
Room = dict[object, tuple[tuple[int, int], tuple[int, int]]]


def rfc3339(t: datetime) -> str:
    """UTC with its zone, as Kubernetes writes times (a naive time is taken as UTC)."""
    try:
        t = t.astimezone(UTC) if t.tzinfo is not None else t
    except OverflowError:  # 9999-12-31T20:00:00-05:00 is in year 10000 in UTC
        return t.isoformat()
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def beyond_largest_size(planned: int, pods: int, allowed: tuple[int, ...]) -> str:
    """The reason on pods a running job cannot use: its policy allows no size that takes them
    (e.g. 12 pods, power-of-two sizes: 8 run, 4 wait)."""
    sizes = ", ".join(map(str, allowed))
    return (
        f"not scheduled: after this plan the job runs {planned} of its {pods} pods, the "
        f"largest size it allows (sizes {sizes}); its other {pods - planned} pods stay pending "
        f"(no allowed size uses them)"
    )


def explain(
    st: PlanState,
    job: Job,
    jm: JobModel | None,
    planned: int,
    now: datetime,
    rooms: Room | None = None,
) -> str:
    """``rooms`` caches the free room per pod shape across the jobs of one plan (the final
    state is the same for all of them): thousands of short jobs on a fleet share a few shapes."""
    static = st.problem.reasons.get(job.name)
    if jm is None and static:  # left out of the model: invalid, completing, bad queue
        return static
    reachable = min(job.max_pods, len(job.pods))
    if planned >= reachable and planned > 0:
        return ""
    if static:
        return static
    until = job.cooldown_until()
    running = st.snapshot.running_pods(job)
    locked = until is not None and now < until and len(running) >= job.min_pods  # (rule 7)
    if jm is None or not any(o.size > planned for o in jm.options):
        if len(clusters := sorted({p.cluster for p in running})) > 1 and planned < reachable:
            return f"its pods run in clusters {', '.join(clusters)}: it does not grow"
        if locked and planned > 0:
            return (
                f"cooldown until {rfc3339(until)}: resized at {rfc3339(job.last_scale_time)}, "
                f"no scale-out before then"
                if until and job.last_scale_time
                else ""
            )
        if planned == 0:
            return "no allowed size can run"
        if planned < reachable and planned == max(job.allowed_sizes(), default=0):
            return beyond_largest_size(planned, len(job.pods), job.allowed_sizes())
        if planned < reachable and (why := out_of_reach(st.snapshot, job)):
            return f"{why}: no scale-out past {planned} until they may be scheduled"
        return ""
    target = min(o.size for o in jm.options if o.size > planned)
    j = st.index[jm.name]
    quota = _quota_reason(st, j, target)
    if quota:
        return quota
    need = change_to(st.snapshot, job, target).bind
    missing = [p for p in need if p.name not in st.placed]
    topo = _topology_reason(st, job.name, missing)
    if topo:
        return topo
    if missing:
        shapes = {(p.constraints, id(p.requests)): p for p in missing}  # a gang has few
        stuck = next((p for p in shapes.values() if not st.nodes.feasible(p)), None)
        if stuck is not None:  # no node could hold it even empty: the room is not the reason
            return no_node_reason(st.snapshot, stuck)
        pod = missing[0]
        (room0, free0), (room, free) = _room(st, pod, rooms if rooms is not None else {})
        n = len(missing)
        head = f"needs {n} x " if planned == 0 else f"size {target} needs {n} more x "
        gpus = pod.requests.get(res.GPU, 0)
        if gpus:
            what = f"{res.GPU}={gpus}"
            tail = _moments(free0, free, "GPUs free on schedulable nodes")
            if room * gpus != free:
                tail += f" (room for {room} such pods after it)"
        else:
            what = res.fmt(pod.requests)
            tail = _moments(room0, room, "such pods fit on schedulable nodes")
        if claims := sorted(r for r in pod.requests if is_claim(r)):
            tail += f"; kept apart on nodes by {', '.join(claims)}"
        if room >= n:
            return (
                f"{head}{what} at once: room for {room} after this plan in total, but not for "
                f"the whole gang together (one cluster, quotas, or running work it may not "
                f"preempt){st.problem.shielded.get(job.name, '')}"
            )
        return f"{head}{what} at once; {tail}{st.problem.shielded.get(job.name, '')}"
    return "held back by the objective (capacity kept for higher-priority or guaranteed work)"


def _topology_reason(st: PlanState, name: str, missing: list[Pod]) -> str:
    """For a gang that requires a level: how many GPUs it needs in one domain, and the most
    any domain has free."""
    ask = st.problem.asks.get(name)
    if ask is None or ask.mode is not Mode.REQUIRED or not missing:
        return ""
    gpus = sum(p.requests.get(res.GPU, 0) for p in missing)
    level = short(ask.key)
    domains = st.domains.domains(ask.key)
    if not domains:
        return f"needs {gpus} GPUs in one {level}: no node has the label {ask.key}"
    held = st.problem.held.get(name, frozenset())
    if len(held) > 1 or None in held:
        return f"its pods run outside one {level} (split before its request): it does not grow"
    if held:  # a running gang grows only where its pods are
        (d,) = held
        free = st.nodes.domain_gpus((ask.key, d)) if d in domains else 0
        where = "/".join(d or ())
        return f"needs {gpus} GPUs in its {level} {where} (its pods run there): {free} free"
    # pods the plan starts it with count where they go: the whole gang needs one domain (a
    # gang started at 2 of 4 was told of its 2 missing pods against another rack's room)
    own: dict[DomainId | None, int] = defaultdict(int)
    for pod_name in st.snapshot.jobs[name].pods:
        if (node := st.placed.get(pod_name)) is not None:
            (d,) = st.domains.domains_of(ask.key, (node,))
            own[d] += st.snapshot.pods[pod_name].requests.get(res.GPU, 0)
    gpus += sum(own.values())
    best = max(st.nodes.domain_gpus((ask.key, d)) + own.get(d, 0) for d in domains)
    if best >= gpus:
        return (
            f"needs {gpus} GPUs in one {level}: the largest free {level} has {best}, but not "
            f"in nodes its pods fit, or the room is kept for other work"
        )
    return f"needs {gpus} GPUs in one {level}: largest free {level} has {best}"


def _moments(before: int, after: int, what: str) -> str:
    """ "5 GPUs free ... before this plan; 1 after it", or the one count when the plan changed
    nothing there."""
    if before == after:
        return f"{after} {what}, before and after this plan"
    return f"{before} {what} before this plan; {after} after it"


def _room(st: PlanState, pod: Pod, rooms: Room) -> tuple[tuple[int, int], tuple[int, int]]:
    key = (res.key(pod.requests), pod.constraints)
    if key not in rooms:
        start, after = st.snapshot.free_per_node, st.nodes.free
        feasible = st.nodes.feasible(pod)
        changed = [n for n in feasible if after[n] is not start[n]]  # the plan's nodes

        def room(free: Mapping[str, Mapping[str, int]], nodes: Iterable[str]) -> tuple[int, int]:
            return (
                sum(res.how_many_fit(pod.requests, free[n]) for n in nodes),
                sum(max(0, free[n].get(res.GPU, 0)) for n in nodes),
            )

        # the nodes the plan left alone count the same before and after it (NodeState shares
        # their vectors with the snapshot): summed once, not twice over 10,000 nodes
        (fit0, gpus0), (fit_old, gpus_old) = room(start, feasible), room(start, changed)
        fit_new, gpus_new = room(after, changed)
        rooms[key] = (fit0, gpus0), (fit0 - fit_old + fit_new, gpus0 - gpus_old + gpus_new)
    return rooms[key]


def _quota_reason(st: PlanState, j: int, size: int) -> str:
    blocked = st.quota_blocks(j, size)
    if not blocked:
        return ""
    r, what = blocked[0]
    row = st.problem.quotas[r]
    queue = st.snapshot.quota.queues[row.queue]
    if what == MAX_JOBS:
        running = st.running_jobs[r] + row.fixed.get(MAX_JOBS, 0)
        return f"queue {row.queue}: {MAX_JOBS} {queue.max_jobs}, running {running}"
    if what in row.cap:
        used = st.usage[r].get(what, 0) + row.fixed.get(what, 0)
        option = st.problem.jobs[j].option(size)
        need = option.usage.get(what, 0) if option is not None else 0
        return (
            f"queue {row.queue}: {what} max {queue.max.get(what)}, in use {used}, job needs {need}"
        )
    return f"queue {row.queue}: {what}"
