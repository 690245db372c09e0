"""snapshot + weights + settings + now -> Problem.

Everything the rules need is computed here once: which jobs can change at all, their size options
(power-of-two ladders, cooldown locks), node classes, pod shapes, quota rows and the triggers that
allow preemption. Jobs that cannot change this cycle are folded into fixed usage, which keeps the
model small on large, mostly-settled clusters.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from solver_sched.config.schema import ObjectiveWeights, Settings
from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Job, Node, Pod
from solver_sched.domain.quota import IMPLICIT_QUEUE, MAX_JOBS
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.problem import (
    JobModel,
    NodeClass,
    Problem,
    QuotaRow,
    Shape,
    SizeOption,
)

ANY_START = "any"  # trigger fired by any guaranteed gang starting
MAX_TIER_WEIGHT = 2**20  # many distinct priorities share the top weight instead of overflowing
MAX_OBJECTIVE = 2**62  # CP-SAT works in int64


@dataclass(frozen=True, slots=True)
class _JobState:
    job: Job
    running: tuple[Pod, ...]
    waiting: tuple[Pod, ...]
    sizes: tuple[int, ...]  # allowed sizes reachable this cycle (cooldown applied)
    locked: bool
    allowed: tuple[int, ...]  # the job's allowed sizes, cooldown aside

    @property
    def current(self) -> int:
        return len(self.running)

    @property
    def running_ok(self) -> bool:
        return self.current in self.allowed

    @property
    def starting(self) -> bool:
        return not self.running_ok and self.current < self.job.min_pods


def prepare(
    snapshot: ClusterSnapshot, weights: ObjectiveWeights, settings: Settings, now: datetime
) -> Problem:
    reasons: dict[str, str] = {}
    states = _job_states(snapshot, now, reasons)
    queue_of = {name: snapshot.queue_of(st.job) for name, st in states.items()}
    usage_now = snapshot.queue_usage(p for p in snapshot.pods.values() if p.bound)
    borrowing, below_min = _borrowing(snapshot, usage_now)
    triggers_of = _break_triggers(states, queue_of, borrowing, below_min, settings)
    any_start = any(st.starting and st.sizes for st in states.values())
    active = {
        name: st
        for name, st in states.items()
        if _can_change(st, any_start, bool(triggers_of.get(name)))
    }
    free = snapshot.free_per_node
    orders = _scale_in_orders(snapshot, active, free)
    active.update({n: replace(active[n], running=order) for n, order in orders.items()})
    shapes_of, shape_reqs = _shapes(active)
    relevant = tuple(sorted({r for req, _ in shape_reqs for r in req} | {res.PODS}))
    classes, class_of = _classes(snapshot, free, shape_reqs, relevant)
    shapes = _fit(snapshot, classes, shape_reqs, free, active)
    for name, st in active.items():
        if st.waiting and not any(shapes[shapes_of[p.name]].fit for p in st.waiting):
            reasons.setdefault(name, _no_node_reason(snapshot, st.waiting[0]))
    tier = _tier_weights(weights, [st.job.priority for st in active.values()])
    names = sorted(active)
    index = {n: i for i, n in enumerate(names)}
    jobs = tuple(
        _job_model(
            snapshot,
            active[n],
            queue_of[n],
            tier,
            weights,
            now,
            shapes_of,
            class_of,
            triggers_of.get(n, ()),
        )
        for n in names
    )
    needed = sorted({k for jm in jobs for k in jm.break_needs})
    by_queue: dict[str, list[tuple[int, str]]] = defaultdict(list)  # prio keys: (priority, key)
    reclaim: list[tuple[str, str]] = []  # reclaim keys: (borrowing queue, key)
    for k in needed:
        kind, _, rest = k.partition(":")
        if kind == "prio":
            queue, _, prio = rest.rpartition(":")
            by_queue[queue].append((int(prio), k))
        elif kind == "reclaim":
            reclaim.append((rest, k))
    triggers: dict[str, list[int]] = defaultdict(list)
    for i, jm in enumerate(jobs):
        if jm.starting:
            triggers[ANY_START].append(i)
            fired = [k for prio, k in by_queue.get(jm.queue, ()) if jm.priority > prio]
            if jm.queue in below_min:
                fired += [k for queue, k in reclaim if queue != jm.queue]
            for k in sorted(fired):  # the keys' order, as the model's fires[] variables take it
                triggers[k].append(i)
    quotas = _quota_rows(snapshot, jobs, index, active, usage_now, borrowing)
    capacity = {c.id: {r: q * len(c.nodes) for r, q in c.free.items()} for c in classes}
    band = _band(jobs, shapes, classes, weights)
    too_large = _too_large(jobs, quotas, band, weights)
    return Problem(
        classes=classes,
        shapes=shapes,
        jobs=jobs,
        quotas=quotas,
        resources=relevant,
        class_capacity=capacity,
        triggers={k: tuple(v) for k, v in triggers.items()},
        clusters=tuple(sorted({n.cluster for n in snapshot.nodes.values()})),
        band=band,
        gang_break=weights.gang_break,
        gang_start=weights.gang_start if _bonus_keeps_tiers(tier, weights.gang_start) else 0,
        elastic_weight=weights.elastic,
        eviction_weight=weights.elastic_eviction,
        packing_weight=weights.packing,
        waiting_weight=weights.waiting,
        quota_min_weight=weights.quota_min,
        shape_of=shapes_of,
        class_of=class_of,
        reasons=reasons,
        too_large=too_large,
        running_order=orders,
    )


# -- jobs ------------------------------------------------------------------------------------


def _job_states(
    snapshot: ClusterSnapshot, now: datetime, reasons: dict[str, str]
) -> dict[str, _JobState]:
    out: dict[str, _JobState] = {}
    for name, job in snapshot.jobs.items():
        if job.invalid:
            reasons[name] = job.invalid
            continue
        invalid_queue = snapshot.quota.invalid_in_chain(snapshot.queue_of(job))
        if invalid_queue:
            reasons[name] = invalid_queue
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
        allowed = job.allowed_sizes()
        sizes = tuple(s for s in allowed if s <= top)
        if not allowed:
            reasons[name] = (
                f"{job.source or 'job ' + name}: needs {job.min_pods} pods (minMember), "
                f"{len(job.pods)} exist"
            )
        out[name] = _JobState(job, running, waiting, sizes, locked, allowed)
    return out


def _scale_in_orders(
    snapshot: ClusterSnapshot, active: Mapping[str, _JobState], free: Mapping[str, res.Resources]
) -> dict[str, tuple[Pod, ...]]:
    """Running pods of shrinkable jobs in the order they are kept, when a waiting pod needs more
    GPUs than any node has free ("room").

    Highest index first can spread a scale-in over many nodes, so that such a pod finds no node
    although enough GPUs are freed. Here the pods evicted first are those on the nodes that
    scale-ins could empty: nodes that can hold the room, with the fewest GPUs held by pods no
    scale-in frees ("pinned"), then the most free GPUs. The first pod (a master, or worker 0
    hosting the rendezvous) stays first, and only jobs whose other pods have equal requests are
    reordered, so usage at each size is unchanged. The model, greedy, the packer and the plan
    all use this one order."""
    nodes = snapshot.nodes
    gpus = {n: f.get(res.GPU, 0) for n, f in free.items() if nodes[n].schedulable}
    largest_free = max(gpus.values(), default=0)
    room = max(
        (
            p.requests.get(res.GPU, 0)
            for st in active.values()
            if st.starting
            for p in st.waiting
            if p.requests.get(res.GPU, 0) > max(1, largest_free)
        ),
        default=0,
    )
    if not room:
        return {}
    shrinkable = [
        st for st in active.values() if st.running_ok and any(0 < s < st.current for s in st.sizes)
    ]
    movable: dict[str, int] = defaultdict(int)
    for st in shrinkable:
        for p in st.running[1:]:
            movable[p.node_name or ""] += p.requests.get(res.GPU, 0)

    def keep_first(item: tuple[int, Pod]) -> tuple[bool, int, int, str, int]:
        i, p = item
        n = p.node_name or ""
        alloc = nodes[n].allocatable.get(res.GPU, 0) if n in nodes else 0
        pinned = alloc - gpus.get(n, 0) - movable[n]
        return alloc >= room and n in gpus, -pinned, gpus.get(n, 0), n, i

    out: dict[str, tuple[Pod, ...]] = {}
    for st in shrinkable:
        rest = st.running[1:]
        if len(rest) < 2 or any(p.requests != rest[0].requests for p in rest):
            continue
        order = (st.running[0], *(p for _, p in sorted(enumerate(rest), key=keep_first)))
        if order != st.running:
            out[st.job.name] = order
    return out


def _can_change(st: _JobState, any_start: bool, breakable: bool) -> bool:
    if not st.running_ok and (st.running or st.sizes):
        return True  # pending gang, partial gang or irregular size: must be decided
    if st.running_ok and any(s > st.current for s in st.sizes):
        return True  # may scale out
    shrinkable = any_start and any(s < st.current for s in st.sizes)
    return shrinkable or (st.running_ok and breakable and any_start)


def _break_triggers(
    states: Mapping[str, _JobState],
    queue_of: Mapping[str, str],
    borrowing: set[str],
    below_min: set[str],
    settings: Settings,
) -> dict[str, tuple[str, ...]]:
    """For each running gang: trigger keys of which one must fire before it may be broken."""
    pending_prio: dict[str, set[int]] = defaultdict(set)
    for name, st in states.items():
        if st.starting and st.sizes:
            pending_prio[queue_of[name]].add(st.job.priority)
    out: dict[str, tuple[str, ...]] = {}
    for name, st in states.items():
        if not st.running_ok:
            continue
        keys: list[str] = []
        q = queue_of[name]
        if settings.priority_preemption and any(p > st.job.priority for p in pending_prio[q]):
            keys.append(f"prio:{q}:{st.job.priority}")
        if settings.queue_reclaim and q in borrowing and below_min - {q}:
            keys.append(f"reclaim:{q}")
        out[name] = tuple(keys)
    return out


def _job_model(
    snapshot: ClusterSnapshot,
    st: _JobState,
    queue: str,
    tier: Mapping[int, int],
    weights: ObjectiveWeights,
    now: datetime,
    shapes_of: Mapping[str, int],
    class_of: Mapping[str, int],
    break_needs: tuple[str, ...],
) -> JobModel:
    job = st.job
    options = _options(st, (0, *st.sizes), shapes_of, class_of)
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
    )


def _options(
    st: _JobState,
    sizes: tuple[int, ...],
    shapes_of: Mapping[str, int],
    class_of: Mapping[str, int],
) -> list[SizeOption]:
    """One SizeOption per size, in one pass over the job's pods.

    At size s the job keeps a prefix of (running + waiting) in keep order (see ``change_to``): the
    first s running pods, or all running plus the first s - len(running) waiting ones. Usage and
    value are prefix sums; evicted pods are the running suffix past s."""
    job, running = st.job, st.running
    seq = running + st.waiting
    cur = len(running)
    if sizes and max(sizes) > len(seq):
        raise ValueError(f"job {job.name} has {len(seq)} pods, cannot run {max(sizes)}")
    units = [0]
    usage: list[dict[str, int]] = [{}]
    for pod in seq[: max(sizes, default=0)]:
        units.append(units[-1] + res.value_units(pod.requests))
        usage.append(res.add(usage[-1], pod.requests))
    # released at size s: requests of running[s:] per class, summed from the tail
    released_at: dict[int, dict[int, dict[str, int]]] = {}
    acc: dict[int, dict[str, int]] = {}
    wanted = set(sizes)
    for k in range(cur - 1, -1, -1):
        pod = running[k]
        cid = class_of.get(pod.node_name or "")
        if cid is not None:
            res.add_into(acc.setdefault(cid, {}), pod.requests)
        if k in wanted:
            released_at[k] = {c: dict(v) for c, v in acc.items()}
    m = job.min_pods
    out = []
    for size in sizes:
        new: dict[int, int] = defaultdict(int)
        for pod in seq[cur:size]:
            new[shapes_of[pod.name]] += 1
        released = released_at.get(size, {})  # sizes at or above cur evict nothing
        guaranteed = size >= m
        out.append(
            SizeOption(
                size=size,
                new=dict(new),
                released=released,
                usage=usage[size],
                guaranteed_units=units[m] if guaranteed else 0,
                guaranteed_gpus=usage[m].get(res.GPU, 0) if guaranteed else 0,
                elastic_units=units[size] - units[m] if size > m else 0,
                evicted=max(0, cur - size),
            )
        )
    return out


def _bonus_keeps_tiers(tier: Mapping[int, int], gang_start: int) -> bool:
    """Whether every step between the tiers present covers the start bonus. Validation ensures it
    for the configured factor; past MAX_TIER_WEIGHT the top tiers are squeezed together, and then
    the bonus is left out for the cycle rather than let small gangs outrank higher priorities."""
    weights = sorted(set(tier.values()))
    return all(high >= (1 + gang_start) * low for low, high in itertools.pairwise(weights))


def _tier_weights(weights: ObjectiveWeights, priorities: Iterable[int]) -> dict[int, int]:
    distinct = sorted(set(priorities))
    if weights.tiers:
        out = {}
        for p in distinct:
            eligible = [t.weight for t in weights.tiers if t.min_priority <= p]
            out[p] = eligible[-1] if eligible else weights.tiers[0].weight
        return out
    return {
        p: min(MAX_TIER_WEIGHT, weights.guaranteed * weights.tier_factor**rank)
        for rank, p in enumerate(distinct)
    }


# -- nodes and shapes ------------------------------------------------------------------------


def _shapes(
    active: Mapping[str, _JobState],
) -> tuple[dict[str, int], list[tuple[dict[str, int], Pod]]]:
    """Group pending pods by (requests, node constraints); returns pod -> shape id and examples."""
    ids: dict[object, int] = {}
    shapes_of: dict[str, int] = {}
    examples: list[tuple[dict[str, int], Pod]] = []
    for name in sorted(active):
        for pod in active[name].waiting:
            key = (res.key(pod.requests), pod.constraints)
            if key not in ids:
                ids[key] = len(examples)
                examples.append((dict(pod.requests), pod))
            shapes_of[pod.name] = ids[key]
    return shapes_of, examples


def _classes(
    snapshot: ClusterSnapshot,
    free: Mapping[str, Mapping[str, int]],
    shape_reqs: list[tuple[dict[str, int], Pod]],
    relevant: tuple[str, ...],
) -> tuple[tuple[NodeClass, ...], dict[str, int]]:
    label_keys: set[str] = set()
    by_name = False
    for _, pod in shape_reqs:
        c = pod.constraints
        label_keys.update(k for k, _ in c.node_selector)
        for term in c.required_terms:
            for req in term:
                if req.field:
                    by_name = True
                else:
                    label_keys.add(req.key)
    groups: dict[object, list[Node]] = defaultdict(list)
    for name in sorted(snapshot.nodes):
        node = snapshot.nodes[name]
        if not node.schedulable:
            continue
        labels = tuple(sorted((k, node.labels[k]) for k in label_keys if k in node.labels))
        taints = tuple(
            sorted(
                (t.key, t.value, t.effect)
                for t in node.taints
                if t.effect in ("NoSchedule", "NoExecute")
            )
        )
        vec = tuple(max(0, free[name].get(r, 0)) for r in relevant)
        groups[(node.cluster, labels, taints, vec, name if by_name else "")].append(node)
    classes = []
    class_of: dict[str, int] = {}
    for cid, key in enumerate(sorted(groups, key=repr)):
        nodes = groups[key]
        vec = key[3]  # type: ignore[index]
        free_vec = dict(zip(relevant, vec, strict=True))
        classes.append(
            NodeClass(
                cid,
                nodes[0].cluster,
                tuple(n.name for n in nodes),
                free_vec,
                free_vec.get(res.GPU, 0),
            )
        )
        for n in nodes:
            class_of[n.name] = cid
    return tuple(classes), class_of


def _fit(
    snapshot: ClusterSnapshot,
    classes: tuple[NodeClass, ...],
    shape_reqs: list[tuple[dict[str, int], Pod]],
    free: Mapping[str, Mapping[str, int]],
    active: Mapping[str, _JobState],
) -> tuple[Shape, ...]:
    """Per shape and class: how many pods could fit if every evictable pod were gone (a bound)."""
    evictable: dict[str, dict[str, int]] = defaultdict(dict)
    for st in active.values():
        for pod in st.running:
            if pod.node_name:
                evictable[pod.node_name] = res.add(evictable[pod.node_name], pod.requests)
    shapes = []
    for sid, (req, pod) in enumerate(shape_reqs):
        fit: dict[int, int] = {}
        for c in classes:
            rep = snapshot.nodes[c.nodes[0]]
            if not pod.constraints.allows(rep.labels, rep.taints, rep.name):
                continue
            total_fit = 0
            for n in c.nodes:
                room = res.add(free[n], evictable[n]) if n in evictable else free[n]
                total_fit += res.how_many_fit(req, room)
            if total_fit > 0:
                fit[c.id] = total_fit
        shapes.append(Shape(sid, req, pod.constraints, fit))
    return tuple(shapes)


def _no_node_reason(snapshot: ClusterSnapshot, pod: Pod) -> str:
    why: dict[str, int] = defaultdict(int)
    for node in snapshot.nodes.values():
        if node.unschedulable:
            why["cordoned"] += 1
        elif node.invalid:
            why["invalid"] += 1
        elif (unmet := pod.constraints.unmet(node.labels, node.taints, node.name)) is not None:
            why[unmet] += 1
        elif not res.fits(pod.requests, node.allocatable):
            why["too small"] += 1
        else:
            why["full"] += 1
    detail = ", ".join(f"{n} {w}" for w, n in sorted(why.items()))
    return f"no node can hold {pod.name} ({res.fmt(pod.requests)}): {detail or 'no nodes'}"


# -- queues ----------------------------------------------------------------------------------


def _borrowing(
    snapshot: ClusterSnapshot, usage: Mapping[str, Mapping[str, int]]
) -> tuple[set[str], set[str]]:
    """Leaves using more than their min of some resource, and leaves below min of some resource."""
    borrowing, below = set(), set()
    for q in snapshot.quota.queues.values():
        if q.min:
            used = usage.get(q.name, {})
            if any(used.get(r, 0) > m for r, m in q.min.items()):
                borrowing.add(q.name)
            if any(used.get(r, 0) < m for r, m in q.min.items()):
                below.add(q.name)
    return borrowing, below


def _quota_rows(
    snapshot: ClusterSnapshot,
    jobs: tuple[JobModel, ...],
    index: Mapping[str, int],
    active: Mapping[str, _JobState],
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
        if queue.namespaces:
            min_gpus = max(0, queue.min.get(res.GPU, 0) - fixed.get(res.GPU, 0))
        rows.append(QuotaRow(name, tuple(members[name]), cap, floor, jobs_cap, fixed, min_gpus))
    return tuple(rows)


# -- objective scale -------------------------------------------------------------------------


def _band(
    jobs: tuple[JobModel, ...],
    shapes: tuple[Shape, ...],
    classes: tuple[NodeClass, ...],
    weights: ObjectiveWeights,
) -> int:
    """1 + the largest magnitude the elastic band can reach: guaranteed work then always wins."""
    max_gpu_free = max((c.gpus_free for c in classes), default=0)
    total = 0
    for jm in jobs:
        total += weights.elastic * max(o.elastic_units for o in jm.options)
        total += weights.elastic_eviction * max(o.evicted for o in jm.options)
        gpus = max(
            (
                sum(n * shapes[s].requests.get(res.GPU, 0) for s, n in o.new.items())
                for o in jm.options
            ),
            default=0,
        )
        total += weights.packing * gpus * max_gpu_free
    return total + 1


def _too_large(
    jobs: tuple[JobModel, ...], quotas: tuple[QuotaRow, ...], band: int, weights: ObjectiveWeights
) -> str | None:
    """Why the objective would overflow the solvers' integers, or None when it fits."""
    top = 0
    for jm in jobs:
        top += jm.tier_weight * max(o.guaranteed_units for o in jm.options)
        top += weights.waiting * jm.waiting_hours + weights.gang_break
        top += jm.tier_weight * weights.gang_start
    top += weights.quota_min * sum(row.min_gpus for row in quotas)
    if (top + 1) * band >= MAX_OBJECTIVE:
        return (
            f"objective range {top} x {band} exceeds the solvers' integers; "
            f"lower the weights or the number of priority tiers"
        )
    return None
