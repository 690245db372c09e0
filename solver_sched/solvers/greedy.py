"""Greedy backend: queue/priority-ordered, gang at a time (the shape of Volcano's allocate action).

1. Jobs at a size their policy no longer allows shrink to the largest allowed size below that
   holds (a shrink may not leave a required gang split), else to 0.
2. Gangs to start -- partial gangs first (completed or released), then those of queues below
   their min (reclaim: first the gangs that fit in what is left of the min, then any), then the
   rest -- highest priority first, then longest waiting: place the guaranteed part best-fit; if it
   does not fit, take victims one at a time (elastic surplus of any job first, then whole gangs its
   start may preempt, lowest priority first) until it fits, or roll everything back. A partial
   gang that cannot be completed is evicted. Victims keep every queue at its floor; failing that,
   a start may take its own queues below their floors if pending gangs of those queues then start
   in the room and bring them back (the model's replacement). Then the gangs that found no room
   are tried again without victims: later starts' victims may have freed more than they used.
3. Elastic growth, highest priority first: each job grows to the largest allowed size that fits.
Every step respects the queue rows, so the result maps onto the model as a complete CP-SAT hint; it
is also always a candidate plan, so the emitted plan is never worse than greedy's.
"""

from __future__ import annotations

from collections.abc import Mapping

from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.problem import JobModel, Problem
from solver_sched.formulation.start_bonus import start_units
from solver_sched.placement.state import PlanState
from solver_sched.solvers.result import Assignment
from solver_sched.solvers.victims import Victims


def solve_greedy(snapshot: ClusterSnapshot, problem: Problem) -> Assignment:
    return assignment_of(greedy_plan(snapshot, problem))


def assignment_of(st: PlanState) -> Assignment:
    """The sizes and per-class counts of a plan state."""
    return Assignment(sizes=dict(st.size), counts=counts_of(st.snapshot, st.problem, st.placed))


def greedy_plan(
    snapshot: ClusterSnapshot,
    problem: Problem,
    starts: list[int] | None = None,
    value_aware: bool = False,
    order: list[int] | None = None,
    deadline: float | None = None,
) -> PlanState:
    """The greedy decision as a concrete plan state (nodes chosen, queue rows kept). ``starts``:
    the order gangs to start are tried in (``start_order``: the LP relaxation's, or smallest
    first for the start bonus); by default queue order (``order``, computed when not given).
    ``value_aware``: a start takes no victim that alone gives up as much guaranteed value as the
    start brings (worth.take_loss, start_gain). ``deadline`` (a perf_counter time): past it no
    start takes victims, so the pass ends soon after with what fits (a cycle's extra candidates
    keep its budget; the victim search is where a pass's time goes)."""
    st = PlanState(snapshot, problem)
    jobs = problem.jobs
    fired: dict[int, set[str]] = {}
    for key, starters in problem.triggers.items():
        for h in starters:
            fired.setdefault(h, set()).add(key)
    order = order if order is not None else queue_order(problem)
    victims = Victims(st, order, value_aware, deadline)
    starts = starts if starts is not None else order
    for j in order:  # 1. irregular sizes
        jm = jobs[j]
        if not jm.running_ok and not jm.starting:
            below = sorted({o.size for o in jm.options if 0 < o.size <= jm.current}, reverse=True)
            # the largest that holds (a required gang's kept pods may stay split), else 0
            next((s for s in (*below, 0) if st.resize(j, s)), None)
    leaf_row = {row.queue: r for r, row in enumerate(problem.quotas) if row.min_gpus}
    decided: set[int] = set()
    # 2. Gangs to start. First, partial gangs are completed (taking victims as any start may) or
    # released: a partial gang goes whatever the queue floors say, so it is settled before any
    # other start counts on a floor's slack. Then the gangs of queues below their min (reclaim):
    # first those that fit in what is left of their queue's min ("within-min"), then any. A gang
    # that would overshoot its queue's min waits for the second pass only if its tier weighs less
    # per GPU than quotaMin (then the min other queues still lack is worth more than the
    # overshoot), and with it the rest of its queue, which keeps its own priority order. Then the
    # rest.
    for phase in ("partial", "within-min", "reclaim", "rest"):
        held: set[str] = set()  # within-min: queues whose next gang overshoots their min
        for j in starts:
            jm = jobs[j]
            if not jm.starting or j in decided or (phase == "partial" and not jm.current):
                continue
            r = leaf_row.get(jm.queue)
            if phase in ("within-min", "reclaim") and (r is None or _min_gpus_left(st, r) <= 0):
                continue
            target = _target(jm)
            if phase == "within-min" and (
                jm.queue in held
                or (
                    target is not None
                    and r is not None
                    and jm.guaranteed_gpus_at(target) > _min_gpus_left(st, r)
                    and jm.tier_weight < problem.quota_min_weight
                )
            ):
                held.add(jm.queue)
                continue
            decided.add(j)  # tried once with victims (again without them below)
            debt = phase != "partial"  # refills start gangs: not before every partial one settled
            if target is None or not _start(
                st, victims, j, target, fired.get(j, set()), order, decided, debt
            ):
                st.resize(j, 0, check_quota=False)  # a partial gang goes whatever floors say
    # A gang that found no room may fit in what later starts freed and left: a break frees the
    # victim's whole room, and the start that took it may need part of it. Those gangs start now,
    # in the same order and without victims, before elastic growth takes that room.
    for j in starts:
        jm = jobs[j]
        if jm.starting and not jm.current and not st.size[jm.name]:
            target = _target(jm)
            if target is not None:
                st.resize(j, target)
    for j in order:  # 3. elastic growth
        jm = jobs[j]
        size = st.size[jm.name]
        if size == 0 and not jm.running_ok:
            continue
        for o in sorted(jm.options, key=lambda o: -o.size):
            if o.size <= size or st.resize(j, o.size):
                break
    return st


def queue_order(problem: Problem) -> list[int]:
    """Highest priority, longest waiting, nominated, earliest created, then by name: the order
    the model's terms and its counted types (formulation/aggregate.py) give identical jobs."""
    jobs = problem.jobs

    def key(j: int) -> tuple[int, int, int, bool, float, str]:
        jm = jobs[j]
        created = jm.created if jm.created is not None else 0.0
        return (-jm.priority, -jm.waiting_hours, -jm.tie, jm.created is None, created, jm.name)

    return sorted(range(len(jobs)), key=key)


def start_order(
    problem: Problem, order: list[int], first: Mapping[str, float] | None, dense: bool = False
) -> list[int]:
    """Queue order, or ``first``'s. ``dense``: gangs of one priority smallest first. With a
    start bonus a start of u units is worth (u + gangStart) units of its tier, so per GPU the
    smaller gang is worth more (a knapsack's density order); like that greedy it can also leave
    GPUs idle, so the cycle keeps it only as another candidate, valued by the model."""
    if dense:
        jobs = problem.jobs
        return sorted(order, key=lambda j: (-jobs[j].priority, start_units(jobs[j]) or 0))
    if first is None:
        return order
    return sorted(order, key=lambda j: -round(first.get(problem.jobs[j].name, 0.0), 3))


def _target(jm: JobModel) -> int | None:
    """The smallest allowed size a gang starts at (a partial gang: at least what it runs)."""
    return min((o.size for o in jm.options if o.size >= jm.current and o.size > 0), default=None)


def _start(
    st: PlanState,
    victims: Victims,
    j: int,
    target: int,
    fired: set[str],
    order: list[int],
    decided: set[int],
    debt: bool = True,
) -> bool:
    """Start j, taking victims that keep every queue at its floor; failing that, and if the
    floors of j's own queues were what stopped it, taking victims below them and refilling."""
    if victims.start(j, target, fired):
        return True
    if not debt or not victims.own_floor_refused:
        return False
    mark = st.mark()
    if victims.start(j, target, fired, debt=True) and _refill(st, j, order, decided):
        return True
    st.rollback(mark)
    return False


def _refill(st: PlanState, j: int, order: list[int], decided: set[int]) -> bool:
    """A start may break lower-priority gangs of its own queue below the queue's floor, as the
    model allows, when other pending gangs of that queue start in their place: those are started
    here, in order and without victims, skipping those that do not fit, until every floor holds
    again. False when they cannot: the caller rolls back."""
    debt = st.floor_debt(st.rows_of.get(j, ()))
    if not debt:
        return True
    jobs = st.problem.jobs
    started: list[int] = []
    for h in order:
        if h in decided or not jobs[h].starting or jobs[h].current:  # pending gangs only
            continue
        if not debt <= set(st.rows_of.get(h, ())):
            continue
        size = _target(jobs[h])
        if size is not None and st.resize(h, size):
            started.append(h)
            debt = st.floor_debt(debt)
            if not debt:
                decided.update(started)
                return True
    return False


def _min_gpus_left(st: PlanState, r: int) -> int:
    """GPUs of a leaf queue's min that its guaranteed parts do not cover yet."""
    return st.problem.quotas[r].min_gpus - st.covered[r]


def counts_of(
    snapshot: ClusterSnapshot, problem: Problem, placed: dict[str, str]
) -> dict[tuple[str, int, int], int]:
    """Per (job, shape, class) pod counts of a concrete placement."""
    out: dict[tuple[str, int, int], int] = {}
    for pod, node in placed.items():
        key = (snapshot.pods[pod].job, problem.shape_of[pod], problem.class_of[node])
        out[key] = out.get(key, 0) + 1
    return out
