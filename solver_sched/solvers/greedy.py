"""Greedy backend: queue/priority-ordered, gang at a time (the shape of Volcano's allocate action).

1. Jobs at a size their policy no longer allows shrink to the largest allowed size below.
2. Gangs to start (pending or partial), highest priority first, then longest waiting: place the
   guaranteed part best-fit; if it does not fit, take victims one at a time (elastic surplus of any
   job first, then whole gangs its start may preempt, lowest priority first) until it fits, or roll
   everything back. A partial gang that cannot be completed is evicted.
3. Elastic growth, highest priority first: each job grows to the largest allowed size that fits.
Every step respects the queue rows, so the result maps onto the model as a complete CP-SAT hint; it
is also always a candidate plan, so the emitted plan is never worse than greedy's.
"""

from __future__ import annotations

from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.state import PlanState
from solver_sched.solvers.result import Assignment


def solve_greedy(snapshot: ClusterSnapshot, problem: Problem) -> Assignment:
    st = PlanState(snapshot, problem)
    jobs = problem.jobs
    fired: dict[int, set[str]] = {}
    for key, starters in problem.triggers.items():
        for h in starters:
            fired.setdefault(h, set()).add(key)
    order = sorted(
        range(len(jobs)), key=lambda j: (-jobs[j].priority, -jobs[j].waiting_hours, jobs[j].name)
    )
    for j in order:  # 1. irregular sizes
        jm = jobs[j]
        if not jm.running_ok and not jm.starting:
            below = [o.size for o in jm.options if 0 < o.size <= jm.current]
            st.resize(j, max(below, default=0))
    for j in order:  # 2. gangs to start
        jm = jobs[j]
        if not jm.starting:
            continue
        target = min(
            (o.size for o in jm.options if o.size >= jm.current and o.size > 0), default=None
        )
        if target is None or not _start_with_victims(st, j, target, fired.get(j, set()), order):
            st.resize(j, 0)
    for j in order:  # 3. elastic growth
        jm = jobs[j]
        size = st.size[jm.name]
        if size == 0 and not jm.running_ok:
            continue
        for o in sorted(jm.options, key=lambda o: -o.size):
            if o.size <= size or st.resize(j, o.size):
                break
    return Assignment(
        sizes=dict(st.size), counts=counts_of(snapshot, problem, st.placed), nodes=dict(st.placed)
    )


def _start_with_victims(
    st: PlanState, j: int, target: int, fired: set[str], order: list[int]
) -> bool:
    if st.resize(j, target):
        return True
    jobs = st.problem.jobs
    mark = st.mark()
    shrinkable = [
        v
        for v in reversed(order)
        if v != j
        and jobs[v].running_ok
        and len(jobs[v].options) > 1
        and st.size[jobs[v].name] > jobs[v].options[1].size
    ]
    breakable = [
        v
        for v in reversed(order)
        if v != j
        and jobs[v].running_ok
        and st.size[jobs[v].name] > 0
        and fired.intersection(jobs[v].break_needs)
    ]
    for v in shrinkable:  # one allowed size at a time: take back no more than needed
        for o in sorted(jobs[v].options[1:], key=lambda o: -o.size):
            if o.size < st.size[jobs[v].name] and st.resize(v, o.size) and st.resize(j, target):
                return True
    for v in breakable:
        if st.resize(v, 0) and st.resize(j, target):
            return True
    st.rollback(mark)
    return False


def counts_of(
    snapshot: ClusterSnapshot, problem: Problem, placed: dict[str, str]
) -> dict[tuple[str, int, int], int]:
    """Per (job, shape, class) pod counts of a concrete placement."""
    out: dict[tuple[str, int, int], int] = {}
    for pod, node in placed.items():
        key = (snapshot.pods[pod].job, problem.shape_of[pod], problem.class_of[node])
        out[key] = out.get(key, 0) + 1
    return out
